"""The second article's `writeFile` tool, and lesson 15's `readFile` and `listFiles`, kept inside one workspace folder.

The second article's version opens whatever `file_path` the model writes: `/etc/passwd`, `../../.bashrc`, a file that
already holds a week of work. A model's text is not a trusted user, so this one writes only inside the folder
given when the tool is made, and every refusal is an error Observation the model can read:

    absolute paths      /etc/passwd, ~/x, C:/x, //server/x       refused: paths are relative to the workspace
    going up            ../x, notes/../../x                       refused: no ".." at all, even one that
                                                                  would come back inside
    symbolic links      a link (file or folder) on the way        refused: links are never followed, so one
                                                                  that leads out cannot be used to get out
    odd names           a NUL or a control character, a hidden    refused: not portable, not a plain name, or
                        one (a bidi override), "\\", ":", a name   not shown as it is
                        over 255 bytes, a path over 1024
    too much content    over `max_chars` characters               refused, with the limit
    an existing file    replaced only with "overwrite": true; the Observation then says it replaced one and
                        how big it was. Without it: refused, with the file's size, so nothing is lost silently
    not a file          a folder, a device, a pipe of that name   refused

How it writes, on POSIX systems: every folder on the way is opened relative to the one before it
(`dir_fd`) with `O_NOFOLLOW`, so a link swapped in while the tool runs is refused too, not followed. The content is
always written to a temporary name in the same folder first (`.NAME.1a2b3c4d.tmp`, created with `O_EXCL`), so that a
name only ever holds a whole file, even when the process is killed half way. A new file then gets its name by a hard
link (`os.link`, which refuses a name that exists: a file made there meanwhile is refused, never replaced), and the
temporary name is removed; a replaced file's temporary is renamed over the old one (`os.replace`), and a hard link to
a file elsewhere keeps that file's content. A write that fails half way (a full disk) removes its temporary file; one
killed leaves it, and `listFiles` does not show such names (nor may `writeFile` choose one). Where `dir_fd` is not
supported (Windows), each folder on the way is checked for links before the write instead; a link put there between
that check and the write is not caught. On a file system without hard links (FAT) a new file cannot be made: writeFile
says the system's reason in its error Observation.

Lesson 15 adds `readFile` and `listFiles`, on the same path rules (`check_relative_path`) and the same walk
(`open_folder`): the file is opened with `O_NOFOLLOW` (and `O_NONBLOCK`, so a pipe swapped in cannot hang the
read) relative to its folder, and what was opened is checked to be a regular file. There is no moment between
a check and the open for a link to slip into: the check is the open. A file over `max_bytes`, or not UTF-8
text, is refused. `listFiles` lists links as links and never looks behind them. `workspace_tools(folder)`
gives all three tools.

Paths in Observations are always the model's own, relative to the workspace: the workspace's location on
the disk is never shown to it.
"""

# No `from __future__ import annotations` here: the type hints of `write_file` below must be real objects,
# because one of them holds `max_chars`, a local name that `typing.get_type_hints` could not find later.
import errno
import os
import re
import stat
from pathlib import Path
from typing import Annotated

from tinyagent.number_checks import check_whole
from tinyagent.registry import error_observation
from tinyagent.safe_text import holds_surrogate, one_line, terminal_text
from tinyagent.toolkit.typed_tool import TypedTool, as_observation, tool

MAX_CONTENT_CHARS = 100_000  # about 30 pages of text: more than a file the agent should write in one step
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255  # the longest file name most file systems allow
# readFile reads any file writeFile may write: MAX_CONTENT_CHARS characters are at most 4 UTF-8 bytes each
# (Chinese text, 3), so a limit of as many bytes as characters refused what writeFile had just written.
MAX_READ_BYTES = 4 * MAX_CONTENT_CHARS
MAX_LIST_ENTRIES = 200  # listFiles: more would drown the model's context

# dir_fd and O_NOFOLLOW on every step: POSIX (Linux, macOS). Tests switch it off to run the other path.
USE_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
# os.link can be told not to follow a symbolic link it is given: POSIX, not Windows.
LINK_NOFOLLOW = os.link in os.supports_follow_symlinks


class Refused(Exception):
    """A write the workspace does not allow; the message says why, for the model."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def check_relative_path(file_path: str, *, folder: bool = False, use: str = "written",
                        field: str = "file_path") -> list[str]:
    """The path's parts if it is a plain relative path inside the workspace, else `Refused` saying why.

    "./notes//todo.txt" -> ["notes", "todo.txt"]. Nothing here touches the disk. With `folder`, the path
    names a folder: "" and "." are the workspace itself ([]), and a trailing "/" is fine. `use` and `field`
    only change the words of a refusal: "only the workspace can be read", "folder is empty".
    """
    if folder and isinstance(file_path, str) and file_path.strip() in ("", ".", "./"):
        return []
    if not isinstance(file_path, str) or not file_path.strip():
        raise Refused(f"{field} is empty", "give a file name, e.g. notes.txt")
    if file_path != file_path.strip():
        raise Refused(f"{field} {file_path!r} starts or ends with spaces", "write the name without them")
    if any(ord(char) < 32 or ord(char) == 127 for char in file_path):
        raise Refused(f"{field} contains a control character (a line break, a tab, a NUL, ...)")
    if holds_surrogate(file_path):  # no file system can name a file with one
        raise Refused(f"{field} contains a lone surrogate (\\ud800-\\udfff), which is not a character")
    # Any other character safe_text would escape before showing it: a C1 control (\x9b starts a terminal's escape
    # sequence), a line separator, a bidi override ("rtl\u202etxt.exe" is listed as "rtlexe.txt").
    hidden = next((char for char in file_path if terminal_text(char) != char), None)
    if hidden is not None:
        raise Refused(f"{field} contains a hidden character, {one_line(hidden)} (a control, a line separator, "
                      "a bidi override, ...)", "write the name without it")
    if len(file_path) > MAX_PATH_CHARS:
        raise Refused(f"{field} is {len(file_path)} characters long; the limit is {MAX_PATH_CHARS}")
    if file_path.startswith(("/", "\\", "~")):
        raise Refused(f"{file_path} is an absolute path; paths are relative to the workspace",
                      "e.g. notes/todo.txt")
    if "\\" in file_path:
        raise Refused(f"{file_path} contains a backslash", "separate folders with /, e.g. notes/todo.txt")
    if ":" in file_path:
        raise Refused(f"{file_path} contains ':' (a drive letter or a stream name)", "e.g. notes/todo.txt")
    parts = [part for part in file_path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise Refused(f"{file_path} goes up with '..'; only the workspace can be {use}",
                      "name a file inside the workspace, e.g. notes/todo.txt")
    if not folder and (not parts or file_path.endswith("/")):
        raise Refused(f"{file_path} names a folder, not a file", "e.g. notes/todo.txt")
    long = next((part for part in parts if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES), None)
    if long is not None:
        raise Refused(f"a name in {field} is longer than {MAX_NAME_BYTES} bytes: {long[:40]}…")
    return parts


def write_in_workspace(root: Path, parts: list[str], data: bytes, overwrite: bool) -> dict:
    """Write `data` to root/parts, following no link. What happened, as the Observation's fields."""
    if is_temporary(parts[-1]):  # listFiles would not show it
        raise Refused(f"{'/'.join(parts)} has the form of writeFile's temporary files (.NAME.1a2b3c4d.tmp), which "
                      "listFiles does not show", "choose another file name")
    return (_write_with_dir_fd if USE_DIR_FD else _write_portably)(root, parts, data, overwrite)


def _write_with_dir_fd(root: Path, parts: list[str], data: bytes, overwrite: bool) -> dict:
    fd = open_folder(root, parts[:-1], create=True)
    try:
        return _write_file(fd, parts, data, overwrite)
    finally:
        os.close(fd)


def open_folder(root: Path, folders: list[str], *, create: bool = False) -> int:
    """A descriptor of root/folders..., every folder opened relative to the one before it with O_NOFOLLOW,
    so no link on the way is followed, even one swapped in while this runs. `create`: make missing
    folders (writeFile); otherwise a missing one is `Refused`. The caller closes the descriptor."""
    nofollow, directory = os.O_NOFOLLOW, getattr(os, "O_DIRECTORY", 0)
    fd = os.open(root, os.O_RDONLY | directory)
    try:
        for depth, part in enumerate(folders):
            shown = "/".join(folders[: depth + 1])
            try:
                try:
                    next_fd = os.open(part, os.O_RDONLY | directory | nofollow, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise Refused(f"there is no folder {shown} in the workspace") from None
                    os.mkdir(part, dir_fd=fd)
                    # Opened again with O_NOFOLLOW: a link swapped in since mkdir is refused, not followed.
                    next_fd = os.open(part, os.O_RDONLY | directory | nofollow, dir_fd=fd)
            except OSError as exc:
                raise _refusal_for_folder(shown, exc, fd, part) from None
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


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
        _create_whole(name, _temporary_name(name), data, fd, shown)
        return {"written": shown, "bytes": len(data), "created": True}
    previous = _check_replaceable(info, shown, overwrite)
    temporary = _temporary_name(name)
    _write_new(temporary, data, fd)
    try:
        # The new content keeps the old file's permissions: a private file (0600) must not come back readable by all.
        if fd is not None:
            os.chmod(temporary, stat.S_IMODE(info.st_mode), dir_fd=fd)
        else:
            os.chmod(temporary, stat.S_IMODE(info.st_mode))
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError:
        os.unlink(temporary, dir_fd=fd)
        raise
    return {"written": shown, "bytes": len(data), "replaced": True, "previous_bytes": previous}


def _create_whole(name: str, temporary: str, data: bytes, fd: int | None, shown: str) -> None:
    """Create `name` holding `data`, so that it appears only whole: written under `temporary`, then linked to `name`
    (link, unlike rename, refuses a name that exists, so nothing is replaced), then `temporary` removed. Written
    straight under its name, a process killed half way left half a file there, which a retry found "already exists"."""
    _write_new(temporary, data, fd)
    try:
        # A symbolic link swapped in for the temporary name is linked as itself, never what it points to (Windows
        # cannot be asked, and its link never follows one).
        os.link(temporary, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=not LINK_NOFOLLOW)
    except FileExistsError:  # made by another writer since this one looked
        raise Refused(f"{shown} was created by someone else while this was written; it was not changed",
                      'to replace it, call again with "overwrite": true; or choose another file name') from None
    finally:
        os.unlink(temporary, dir_fd=fd)


_TEMPORARY = re.compile(r"\..+\.[0-9a-f]{8}\.tmp", re.DOTALL)  # what _temporary_name makes


def _temporary_name(name: str) -> str:
    """A fresh name beside `name` for the new content: its first 200 bytes (not characters: a name of 255 bytes
    in Chinese or accented letters must leave room for the rest) and a random part."""
    start = name.encode("utf-8")[:200].decode("utf-8", "ignore")  # a character cut in two is left out
    return f".{start}.{os.urandom(4).hex()}.tmp"


def is_temporary(name: str) -> bool:
    """Whether `name` has the form of writeFile's temporary files. listFiles hides them rather than removing them:
    one may be a write still running in another thread or process (nothing tells it from one a killed process left),
    and removing it would fail that write; hidden, a leftover one is harmless (no name holds part of it), and the
    workspace's owner still sees it (`ls -a`) and may delete it."""
    return _TEMPORARY.fullmatch(name) is not None


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
    """Create `name` (it must not exist: O_EXCL, and O_NOFOLLOW where there is one) and write `data`. A write that
    fails half way (a full disk, a size limit) removes what it wrote: half a file is no file, and a retry must not
    find one there ("already exists"), nor listFiles a temporary name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    handle = os.open(name, flags, 0o644, dir_fd=fd) if fd is not None else os.open(name, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view):]
    except BaseException:
        os.close(handle)
        if fd is not None:
            os.unlink(name, dir_fd=fd)
        else:
            os.unlink(name)
        raise
    os.close(handle)


def _write_portably(root: Path, parts: list[str], data: bytes, overwrite: bool) -> dict:
    """The same rules without dir_fd: each folder on the way checked for a link, then made if missing."""
    folder = checked_folder(root, parts[:-1], create=True)
    target, shown = folder / parts[-1], "/".join(parts)
    if target.is_symlink():
        raise Refused(f"{shown} is a symbolic link; links are not followed")
    if not target.resolve().is_relative_to(root):  # a last line of defence: never outside the root
        raise Refused(f"{shown} leads out of the workspace")
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        _create_whole(str(target), str(folder / _temporary_name(parts[-1])), data, None, shown)
        return {"written": shown, "bytes": len(data), "created": True}
    previous = _check_replaceable(info, shown, overwrite)
    temporary = folder / _temporary_name(parts[-1])
    _write_new(str(temporary), data, None)
    try:
        os.replace(temporary, target)
    except OSError:
        temporary.unlink()
        raise
    return {"written": shown, "bytes": len(data), "replaced": True, "previous_bytes": previous}


def checked_folder(root: Path, folders: list[str], *, create: bool = False) -> Path:
    """`open_folder` without dir_fd (Windows): each folder on the way checked for a link before it is used
    (or made, with `create`). A link swapped in between the check and the use is not caught here."""
    folder = root
    for depth, part in enumerate(folders):
        folder = folder / part
        shown = "/".join(folders[: depth + 1])
        if folder.is_symlink():
            raise Refused(f"{shown} is a symbolic link; links are not followed")
        if folder.exists() and not folder.is_dir():
            raise Refused(f"{shown} is a file, not a folder")
        if not folder.exists():
            if not create:
                raise Refused(f"there is no folder {shown} in the workspace")
            folder.mkdir()
    if not folder.resolve().is_relative_to(root):  # a last line of defence: never outside the root
        raise Refused(f"{'/'.join(folders)} leads out of the workspace")
    return folder


# -- reading and listing (lesson 15): the same paths, the same walk, nothing followed -----------------
def read_in_workspace(root: Path, parts: list[str], max_bytes: int) -> bytes:
    """The bytes of the regular file root/parts (at most `max_bytes`, else `Refused`), following no link."""
    shown = "/".join(parts)
    # O_NONBLOCK: a pipe swapped in for the file after the check must not hang the read (it is refused).
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if USE_DIR_FD:
        folder_fd = open_folder(root, parts[:-1])
        try:
            _check_readable(_lstat_or_none(parts[-1], folder_fd), shown)
            handle = _open_file(parts[-1], flags, shown, folder_fd)
        finally:
            os.close(folder_fd)
    else:
        target = checked_folder(root, parts[:-1]) / parts[-1]
        _check_readable(_lstat_or_none(str(target), None), shown)
        handle = _open_file(str(target), flags, shown, None)
    try:
        info = os.fstat(handle)
        _check_readable(info, shown)  # what was opened, whatever the name pointed to at the check
        if info.st_size > max_bytes:
            raise Refused(f"{shown} is {info.st_size} bytes; readFile reads at most {max_bytes}",
                          "ask the user for the part that matters, or for a smaller file")
        data = b""
        while len(data) <= max_bytes and (more := os.read(handle, max_bytes + 1 - len(data))):
            data += more
    finally:
        os.close(handle)
    if len(data) > max_bytes:  # it grew while being read
        raise Refused(f"{shown} is more than {max_bytes} bytes; readFile reads at most {max_bytes}")
    return data


def _lstat_or_none(name: str, fd: int | None) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=fd) if fd is not None else os.lstat(name)
    except FileNotFoundError:
        return None


def _check_readable(info: os.stat_result | None, shown: str) -> None:
    if info is None:
        raise Refused(f"there is no file {shown} in the workspace", "call listFiles to see what is there")
    if stat.S_ISLNK(info.st_mode):
        raise Refused(f"{shown} is a symbolic link; links are not followed")
    if stat.S_ISDIR(info.st_mode):
        raise Refused(f"{shown} is a folder, not a file", "call listFiles to see what is in it")
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{shown} is not a regular file")


def _open_file(name: str, flags: int, shown: str, fd: int | None) -> int:
    try:
        return os.open(name, flags, dir_fd=fd) if fd is not None else os.open(name, flags)
    except FileNotFoundError:
        raise Refused(f"there is no file {shown} in the workspace") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link: swapped in after the check
            raise Refused(f"{shown} is a symbolic link; links are not followed") from None
        raise


def list_in_workspace(root: Path, parts: list[str], max_entries: int) -> dict:
    """What the folder root/parts holds: names, kinds (file, folder, link, other) and file sizes."""
    if USE_DIR_FD:
        fd = open_folder(root, parts)
        try:
            with os.scandir(fd) as found:
                entries = [_entry(item) for item in found if not is_temporary(item.name)]
        finally:
            os.close(fd)
    else:
        with os.scandir(checked_folder(root, parts)) as found:
            entries = [_entry(item) for item in found if not is_temporary(item.name)]
    entries.sort(key=lambda entry: entry["name"])
    listing: dict = {"folder": "/".join(parts) or ".", "entries": entries[:max_entries]}
    if len(entries) > max_entries:
        listing["more"] = len(entries) - max_entries
    return listing


def _entry(item: os.DirEntry) -> dict:
    # follow_symlinks=False throughout: a link is listed as a link, never as what it points to.
    if item.is_symlink():
        return {"name": item.name, "type": "link"}
    if item.is_dir(follow_symlinks=False):
        return {"name": item.name, "type": "folder"}
    if item.is_file(follow_symlinks=False):
        return {"name": item.name, "type": "file", "bytes": item.stat(follow_symlinks=False).st_size}
    return {"name": item.name, "type": "other"}


def _workspace_root(workspace: str | os.PathLike) -> Path:
    root = Path(workspace).resolve(strict=True)  # the folder's own location may be a link (/tmp on macOS)
    if not root.is_dir():
        raise NotADirectoryError(f"the workspace must be a folder: {workspace}")
    return root


def write_file_tool(workspace: str | os.PathLike, *, max_chars: int = MAX_CONTENT_CHARS) -> TypedTool:
    """The `writeFile` tool, writing only inside the folder `workspace` (which must exist)."""
    root = _workspace_root(workspace)
    check_whole("max_chars", max_chars)

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


def read_file_tool(workspace: str | os.PathLike, *, max_bytes: int = MAX_READ_BYTES) -> TypedTool:
    """The `readFile` tool (lesson 15): a UTF-8 text file from inside `workspace`, by the same path rules
    and the same link-free walk as `writeFile`."""
    root = _workspace_root(workspace)
    check_whole("max_bytes", max_bytes)

    @tool(
        name="readFile",
        description=f"Read a text file in the workspace (at most {max_bytes} bytes). Paths are relative to the "
        "workspace.",
        descriptions={"zh": f"读取工作区里的一个文本文件（最多 {max_bytes} 字节）。路径相对于工作区。"},
        param_descriptions={"zh": {"file_path": "文件路径，相对于工作区，如 notes/todo.txt"}},
        read_only=True,  # writeFile, which changes the workspace, is not
    )
    def read_file(file_path: str) -> str:
        """Read a text file in the workspace.

        Args:
            file_path: the file to read, relative to the workspace, e.g. notes/todo.txt
        """
        try:
            parts = check_relative_path(file_path, use="read")
            data = read_in_workspace(root, parts, max_bytes)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise Refused(f"{'/'.join(parts)} is not UTF-8 text (a binary file?)") from None
        except Refused as refusal:
            details = {"hint": refusal.hint} if refusal.hint else {}
            return error_observation(f"readFile refused: {refusal}", **details)
        except OSError as exc:  # the disk's own complaint: its words, never the root's path
            return error_observation(f"readFile failed: {exc.strerror or type(exc).__name__}", file_path=file_path)
        return as_observation({"file": "/".join(parts), "characters": len(text), "content": text})

    return read_file


def list_files_tool(workspace: str | os.PathLike, *, max_entries: int = MAX_LIST_ENTRIES) -> TypedTool:
    """The `listFiles` tool (lesson 15): what one folder of `workspace` holds. Links are listed as links
    ("type": "link") and never followed."""
    root = _workspace_root(workspace)
    check_whole("max_entries", max_entries)

    @tool(
        name="listFiles",
        description="List the files and folders in a folder of the workspace (\".\" for the workspace itself).",
        descriptions={"zh": "列出工作区里一个文件夹中的文件和子文件夹（\".\" 表示工作区本身）。"},
        param_descriptions={"zh": {"folder": "文件夹路径，相对于工作区，如 notes；工作区本身写 ."}},
        read_only=True,
    )
    def list_files(folder: str = ".") -> str:
        """List a folder of the workspace.

        Args:
            folder: the folder, relative to the workspace, e.g. notes; "." for the workspace itself
        """
        try:
            parts = check_relative_path(folder, folder=True, use="listed", field="folder")
            listing = list_in_workspace(root, parts, max_entries)
        except Refused as refusal:
            details = {"hint": refusal.hint} if refusal.hint else {}
            return error_observation(f"listFiles refused: {refusal}", **details)
        except OSError as exc:
            return error_observation(f"listFiles failed: {exc.strerror or type(exc).__name__}", folder=folder)
        return as_observation(listing)

    return list_files


def workspace_tools(workspace: str | os.PathLike) -> list[TypedTool]:
    """writeFile, readFile and listFiles, all kept inside `workspace`."""
    return [write_file_tool(workspace), read_file_tool(workspace), list_files_tool(workspace)]
