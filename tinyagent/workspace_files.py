"""The second seed's `writeFile` tool, kept inside one workspace folder.

The seed's version opens whatever `file_path` the model writes: `/etc/passwd`, `../../.bashrc`, a file that
already holds a week of work. A model's text is not a trusted user, so this one writes only inside the folder
given when the tool is made, and every refusal is an error Observation the model can read:

    absolute paths      /etc/passwd, ~/x, C:/x, //server/x       refused: paths are relative to the workspace
    going up            ../x, notes/../../x                       refused: no ".." at all, even one that
                                                                  would come back inside
    symbolic links      a link (file or folder) on the way        refused: links are never followed, so one
                                                                  that leads out cannot be used to get out
    odd names           a NUL or a control character, "\\", ":",
                        a name over 255 bytes, a path over 1024   refused: not portable, or not a plain name
    too much content    over `max_chars` characters               refused, with the limit
    an existing file    replaced only with "overwrite": true; the Observation then says it replaced one and
                        how big it was. Without it: refused, with the file's size, so nothing is lost silently
    not a file          a folder, a device, a pipe of that name   refused

How it writes, on POSIX systems: every folder on the way is opened relative to the one before it
(`dir_fd`) with `O_NOFOLLOW`, so a link swapped in while the tool runs is refused too, not followed. A new
file is created with `O_EXCL` (it must not exist yet); a replaced file is written to a temporary name in
the same folder first and then renamed over the old one (`os.replace`): a reader never sees half a file,
and a hard link to a file elsewhere keeps that file's content. Where `dir_fd` is not supported (Windows),
each folder on the way is checked for links before the write instead.

Paths in Observations are always the model's own, relative to the workspace: the workspace's location on
the disk is never shown to it.
"""

# No `from __future__ import annotations` here: the type hints of `write_file` below must be real objects,
# because one of them holds `max_chars`, a local name that `typing.get_type_hints` could not find later.
import errno
import os
import stat
from pathlib import Path
from typing import Annotated

from .registry import error_observation
from .typed_tool import TypedTool, as_observation, tool

MAX_CONTENT_CHARS = 100_000  # about 30 pages of text: more than a file the agent should write in one step
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255  # the longest file name most file systems allow

# dir_fd and O_NOFOLLOW on every step: POSIX (Linux, macOS). Tests switch it off to run the other path.
USE_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


class Refused(Exception):
    """A write the workspace does not allow; the message says why, for the model."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def check_relative_path(file_path: str) -> list[str]:
    """The path's parts if it is a plain relative path inside the workspace, else `Refused` saying why.

    "./notes//todo.txt" -> ["notes", "todo.txt"]. Nothing here touches the disk.
    """
    if not isinstance(file_path, str) or not file_path.strip():
        raise Refused("file_path is empty", "give a file name, e.g. notes.txt")
    if file_path != file_path.strip():
        raise Refused(f"file_path {file_path!r} starts or ends with spaces", "write the name without them")
    if any(ord(char) < 32 or ord(char) == 127 for char in file_path):
        raise Refused("file_path contains a control character (a line break, a tab, a NUL, ...)")
    if len(file_path) > MAX_PATH_CHARS:
        raise Refused(f"file_path is {len(file_path)} characters long; the limit is {MAX_PATH_CHARS}")
    if file_path.startswith(("/", "\\", "~")):
        raise Refused(f"{file_path} is an absolute path; paths are relative to the workspace",
                      "e.g. notes/todo.txt")
    if "\\" in file_path:
        raise Refused(f"{file_path} contains a backslash", "separate folders with /, e.g. notes/todo.txt")
    if ":" in file_path:
        raise Refused(f"{file_path} contains ':' (a drive letter or a stream name)", "e.g. notes/todo.txt")
    parts = [part for part in file_path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise Refused(f"{file_path} goes up with '..'; only the workspace can be written",
                      "name a file inside the workspace, e.g. notes/todo.txt")
    if not parts or file_path.endswith("/"):
        raise Refused(f"{file_path} names a folder, not a file", "e.g. notes/todo.txt")
    long = next((part for part in parts if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES), None)
    if long is not None:
        raise Refused(f"a name in file_path is longer than {MAX_NAME_BYTES} bytes: {long[:40]}…")
    return parts


def write_in_workspace(root: Path, parts: list[str], data: bytes, overwrite: bool) -> dict:
    """Write `data` to root/parts, following no link. What happened, as the Observation's fields."""
    return (_write_with_dir_fd if USE_DIR_FD else _write_portably)(root, parts, data, overwrite)


def _write_with_dir_fd(root: Path, parts: list[str], data: bytes, overwrite: bool) -> dict:
    nofollow, directory = os.O_NOFOLLOW, getattr(os, "O_DIRECTORY", 0)
    fd = os.open(root, os.O_RDONLY | directory)
    try:
        for depth, part in enumerate(parts[:-1]):
            shown = "/".join(parts[: depth + 1])
            try:
                try:
                    next_fd = os.open(part, os.O_RDONLY | directory | nofollow, dir_fd=fd)
                except FileNotFoundError:
                    os.mkdir(part, dir_fd=fd)
                    # Opened again with O_NOFOLLOW: a link swapped in since mkdir is refused, not followed.
                    next_fd = os.open(part, os.O_RDONLY | directory | nofollow, dir_fd=fd)
            except OSError as exc:
                raise _refusal_for_folder(shown, exc, fd, part) from None
            os.close(fd)
            fd = next_fd
        return _write_file(fd, parts, data, overwrite)
    finally:
        os.close(fd)


def _refusal_for_folder(shown: str, exc: OSError, fd: int, part: str) -> Refused:
    try:
        info = os.lstat(part, dir_fd=fd)
    except OSError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        return Refused(f"{shown} is a symbolic link; links are not followed")
    if exc.errno in (errno.ENOTDIR, errno.ELOOP) or (info is not None and not stat.S_ISDIR(info.st_mode)):
        return Refused(f"{shown} is a file, not a folder")
    return Refused(f"cannot open the folder {shown}: {exc.strerror}")


def _write_file(fd: int, parts: list[str], data: bytes, overwrite: bool) -> dict:
    name, shown = parts[-1], "/".join(parts)
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        info = None
    if info is None:
        _write_new(name, data, fd)
        return {"written": shown, "bytes": len(data), "created": True}
    previous = _check_replaceable(info, shown, overwrite)
    temporary = f".{name[:200]}.{os.urandom(4).hex()}.tmp"
    _write_new(temporary, data, fd)
    try:
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError:
        os.unlink(temporary, dir_fd=fd)
        raise
    return {"written": shown, "bytes": len(data), "replaced": True, "previous_bytes": previous}


def _check_replaceable(info: os.stat_result, shown: str, overwrite: bool) -> int:
    """The old file's size if it may be replaced; otherwise `Refused` saying why not."""
    if stat.S_ISLNK(info.st_mode):
        raise Refused(f"{shown} is a symbolic link; links are not followed")
    if stat.S_ISDIR(info.st_mode):
        raise Refused(f"{shown} is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{shown} is not a regular file")
    if not overwrite:
        raise Refused(f"{shown} already exists ({info.st_size} bytes); it was not changed",
                      'to replace it, call again with "overwrite": true; or choose another file name')
    return info.st_size


def _write_new(name: str, data: bytes, fd: int | None) -> None:
    """Create `name` (it must not exist: O_EXCL, and O_NOFOLLOW where there is one) and write `data`."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    handle = os.open(name, flags, 0o644, dir_fd=fd) if fd is not None else os.open(name, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view):]
    finally:
        os.close(handle)


def _write_portably(root: Path, parts: list[str], data: bytes, overwrite: bool) -> dict:
    """The same rules without dir_fd: each folder on the way checked for a link, then made if missing."""
    folder = root
    for depth, part in enumerate(parts[:-1]):
        folder = folder / part
        shown = "/".join(parts[: depth + 1])
        if folder.is_symlink():
            raise Refused(f"{shown} is a symbolic link; links are not followed")
        if folder.exists() and not folder.is_dir():
            raise Refused(f"{shown} is a file, not a folder")
        folder.mkdir(exist_ok=True)
    target, shown = folder / parts[-1], "/".join(parts)
    if target.is_symlink():
        raise Refused(f"{shown} is a symbolic link; links are not followed")
    if not target.resolve().is_relative_to(root):  # a last line of defence: never outside the root
        raise Refused(f"{shown} leads out of the workspace")
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        _write_new(str(target), data, None)
        return {"written": shown, "bytes": len(data), "created": True}
    previous = _check_replaceable(info, shown, overwrite)
    temporary = folder / f".{parts[-1][:200]}.{os.urandom(4).hex()}.tmp"
    _write_new(str(temporary), data, None)
    try:
        os.replace(temporary, target)
    except OSError:
        temporary.unlink()
        raise
    return {"written": shown, "bytes": len(data), "replaced": True, "previous_bytes": previous}


def write_file_tool(workspace: str | os.PathLike, *, max_chars: int = MAX_CONTENT_CHARS) -> TypedTool:
    """The `writeFile` tool, writing only inside the folder `workspace` (which must exist)."""
    root = Path(workspace).resolve(strict=True)  # the folder's own location may be a link (/tmp on macOS)
    if not root.is_dir():
        raise NotADirectoryError(f"the workspace must be a folder: {workspace}")
    if not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be a positive whole number, got {max_chars!r}")

    @tool(
        name="writeFile",
        description=f"Write a text file in the workspace (at most {max_chars} characters). Paths are relative "
        "to the workspace; an existing file is replaced only when overwrite is true.",
        descriptions={"zh": f"在工作区里写一个文本文件（最多 {max_chars} 个字符）。路径相对于工作区；"
                            "已有的文件只有 overwrite 为 true 时才会被替换。"},
        param_descriptions={"zh": {
            "file_path": "文件路径，相对于工作区，如 notes/todo.txt",
            "content": "要写入的全部文本",
            "overwrite": "文件已存在时是否替换它",
        }},
    )
    def write_file(
        file_path: str,
        content: Annotated[str, {"maxLength": max_chars}],
        overwrite: bool = False,
    ) -> str:
        """Write a text file in the workspace.

        Args:
            file_path: where to write, relative to the workspace, e.g. notes/todo.txt
            content: the whole text of the file
            overwrite: replace the file if it already exists
        """
        try:
            parts = check_relative_path(file_path)
            if len(content) > max_chars:  # the schema says so too; this guards direct Python calls
                raise Refused(f"content is {len(content)} characters long; the limit is {max_chars}",
                              "split it into several files")
            try:
                data = content.encode("utf-8")
            except UnicodeEncodeError:
                raise Refused("content holds a character that cannot be written as UTF-8") from None
            result = write_in_workspace(root, parts, data, overwrite)
        except Refused as refusal:
            details = {"hint": refusal.hint} if refusal.hint else {}
            return error_observation(f"writeFile refused: {refusal}", **details)
        except OSError as exc:  # the disk's own complaint (full, read-only): its words, never the root's path
            return error_observation(f"writeFile failed: {exc.strerror or type(exc).__name__}",
                                     file_path=file_path)
        return as_observation({"written": result.pop("written"), "characters": len(content), **result})

    return write_file
