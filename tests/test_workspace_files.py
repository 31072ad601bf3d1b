"""workspace_files.py: writeFile writes inside its workspace only, and every escape is an error Observation."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tinyagent import Action, LlmClient, ReActAgent, ToolRegistry, write_file_tool
from tinyagent.toolkit import workspace_files
from tinyagent.toolkit.workspace_files import MAX_CONTENT_CHARS, check_relative_path

from .conftest import PATIENCE


@pytest.fixture(params=["dir_fd", "portable"])
def way(request, monkeypatch):
    """Every test runs twice: with the POSIX dir_fd walk, and with the portable checks (Windows' path). The race
    tests run with the dir_fd walk only (they ask for it by name): only that walk closes those races."""
    if request.param == "dir_fd" and not workspace_files.USE_DIR_FD:
        pytest.skip("this system has no dir_fd")
    monkeypatch.setattr(workspace_files, "USE_DIR_FD", request.param == "dir_fd")
    return request.param


@pytest.fixture
def place(tmp_path, way):
    """A workspace, and a folder next to it that must never be written."""
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("keep me")
    return workspace, outside


def write(tool, **arguments) -> dict:
    return json.loads(tool.invoke(json.dumps(arguments)))


def files_in(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_writes_a_new_file_and_its_folders(place):
    workspace, _ = place
    tool = write_file_tool(workspace)
    result = write(tool, file_path="notes/2026/numbers.txt", content="1\n2\n3")
    assert result == {"written": "notes/2026/numbers.txt", "characters": 5, "bytes": 5, "created": True}
    assert files_in(workspace) == {"notes/2026/numbers.txt": "1\n2\n3"}


def test_chinese_content_counts_characters_and_bytes(place):
    workspace, _ = place
    result = write(write_file_tool(workspace), file_path="备注.txt", content="扫地机不回充")
    assert (result["characters"], result["bytes"]) == (6, 18)
    assert (workspace / "备注.txt").read_text(encoding="utf-8") == "扫地机不回充"


def test_an_existing_file_is_kept_unless_overwrite_is_true(place):
    workspace, _ = place
    tool = write_file_tool(workspace)
    write(tool, file_path="a.txt", content="first version")
    refused = write(tool, file_path="a.txt", content="second")
    assert refused["error"] == "writeFile refused: a.txt already exists (13 bytes); it was not changed"
    assert '"overwrite": true' in refused["hint"]
    assert (workspace / "a.txt").read_text() == "first version"
    replaced = write(tool, file_path="a.txt", content="second", overwrite=True)
    assert replaced == {"written": "a.txt", "characters": 6, "bytes": 6, "replaced": True, "previous_bytes": 13}
    assert files_in(workspace) == {"a.txt": "second"}  # no temporary file left behind


def test_a_file_with_a_long_name_of_two_byte_letters_can_be_replaced(place):
    # 254 bytes in 129 characters: the temporary name once kept 200 characters (over 255 bytes) and failed.
    workspace, _ = place
    tool, name = write_file_tool(workspace), "é" * 125 + ".txt"
    assert write(tool, file_path=name, content="first")["created"] is True
    assert write(tool, file_path=name, content="second", overwrite=True)["replaced"] is True
    assert files_in(workspace) == {name: "second"}  # no temporary file left behind


def test_read_file_reads_the_longest_file_write_file_may_write(place):
    workspace, _ = place
    content = "扫" * MAX_CONTENT_CHARS  # 3 bytes each: once refused by a read limit of as many bytes
    assert write(write_file_tool(workspace), file_path="long.txt", content=content)["bytes"] == 3 * MAX_CONTENT_CHARS
    assert read(workspace, "long.txt")["characters"] == MAX_CONTENT_CHARS


@pytest.mark.parametrize("path", ["\ud800.txt", "notes/\udfff", "a\udc80b.txt"])
def test_a_lone_surrogate_in_a_path_is_refused_by_each_tool(place, path):
    workspace, _ = place
    said = [write(write_file_tool(workspace), file_path=path, content="x"), read(workspace, path),
            listing(workspace, path)]
    assert all("contains a lone surrogate" in result["error"] for result in said), said
    assert files_in(workspace) == {}


@pytest.mark.parametrize(("path", "shown"), [("c1\x85nel.txt", "\\x85"), ("\x9b31m.txt", "\\x9b"),
                                           ("line\u2028break.txt", "\\u2028"), ("rtl\u202etxt.exe", "\\u202e"),
                                           ("notes/zero\u200bwidth.txt", "\\u200b")])
def test_a_hidden_character_in_a_path_is_refused_by_each_tool(place, path, shown):
    # Only C0 controls and DEL were refused: \x9b (an 8-bit terminal escape) or a bidi override ("rtl\u202etxt.exe"
    # is listed as "rtlexe.txt") made files whose names do not show what they are.
    workspace, _ = place
    said = [write(write_file_tool(workspace), file_path=path, content="x"), read(workspace, path),
            listing(workspace, path)]
    assert all(f"contains a hidden character, {shown} " in result["error"] for result in said), said
    assert files_in(workspace) == {}


def test_a_name_with_an_emoji_held_together_by_a_joiner_is_written(place):
    workspace, _ = place
    assert write(write_file_tool(workspace), file_path="\U0001f469\u200d\U0001f4bb.txt", content="x")["created"]


def test_list_files_refuses_a_limit_that_is_not_a_positive_whole_number(place):
    workspace, _ = place
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_entries must be a positive whole number"):
            workspace_files.list_files_tool(workspace, max_entries=bad)


def test_replacing_a_hard_linked_file_leaves_the_other_name_alone(place):
    workspace, outside = place
    os.link(outside / "secret.txt", workspace / "linked.txt")
    write(write_file_tool(workspace), file_path="linked.txt", content="new", overwrite=True)
    assert (outside / "secret.txt").read_text() == "keep me"
    assert (workspace / "linked.txt").read_text() == "new"


@pytest.mark.parametrize(
    "file_path, says",
    [
        ("/etc/passwd", "is an absolute path"),
        ("//server/share/x.txt", "is an absolute path"),
        ("~/notes.txt", "is an absolute path"),
        ("C:/Windows/x.txt", "contains ':'"),
        ("notes.txt:stream", "contains ':'"),
        ("..\\..\\x.txt", "contains a backslash"),
        ("../x.txt", "goes up with '..'"),
        ("notes/../../x.txt", "goes up with '..'"),
        ("notes/../x.txt", "goes up with '..'"),  # even one that would come back inside
        ("..", "goes up with '..'"),
        ("", "file_path is empty"),
        ("   ", "file_path is empty"),
        (" a.txt", "starts or ends with spaces"),
        ("a\nb.txt", "control character"),
        ("a\x00b.txt", "control character"),
        ("notes/", "names a folder"),
        (".", "names a folder"),
        ("x" * 256, "longer than 255 bytes"),
        ("a/" * 600 + "b", "the limit is 1024"),
    ],
)
def test_a_path_that_could_escape_is_refused_before_anything_is_written(place, file_path, says):
    workspace, outside = place
    result = write(write_file_tool(workspace), file_path=file_path, content="x")
    assert says in result["error"] and result["error"].startswith("writeFile refused: ")
    assert files_in(workspace) == {} and files_in(outside) == {"secret.txt": "keep me"}


def test_a_symlink_to_a_folder_outside_is_not_followed(place):
    workspace, outside = place
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    result = write(write_file_tool(workspace), file_path="out/new.txt", content="x")
    assert result["error"] == "writeFile refused: out is a symbolic link; links are not followed"
    assert files_in(outside) == {"secret.txt": "keep me"}


def test_a_symlink_to_a_file_outside_is_not_written_through(place):
    workspace, outside = place
    (workspace / "secret.txt").symlink_to(outside / "secret.txt")
    result = write(write_file_tool(workspace), file_path="secret.txt", content="x", overwrite=True)
    assert result["error"] == "writeFile refused: secret.txt is a symbolic link; links are not followed"
    assert (outside / "secret.txt").read_text() == "keep me"


def test_a_dangling_symlink_is_not_created_through(place):
    workspace, outside = place
    (workspace / "new.txt").symlink_to(outside / "created-by-the-model.txt")
    result = write(write_file_tool(workspace), file_path="new.txt", content="x")
    assert "symbolic link" in result["error"]
    assert not (outside / "created-by-the-model.txt").exists()


def test_a_symlink_deeper_down_is_refused_too(place):
    workspace, outside = place
    (workspace / "notes").mkdir()
    (workspace / "notes" / "deep").symlink_to(outside, target_is_directory=True)
    result = write(write_file_tool(workspace), file_path="notes/deep/x.txt", content="x")
    assert result["error"] == "writeFile refused: notes/deep is a symbolic link; links are not followed"


def test_a_symlink_inside_pointing_inside_is_refused_as_well(place):
    # Simple and safe: links are never followed, wherever they point.
    workspace, _ = place
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real", target_is_directory=True)
    assert "symbolic link" in write(write_file_tool(workspace), file_path="alias/x.txt", content="x")["error"]


@pytest.mark.parametrize("way", ["dir_fd"], indirect=True)
def test_a_folder_swapped_for_a_link_while_the_tool_runs_is_not_followed(place, monkeypatch):
    workspace, outside = place
    real_mkdir = os.mkdir

    def mkdir_then_swap(name, mode=0o777, *, dir_fd=None):  # another process wins the race
        real_mkdir(name, mode, dir_fd=dir_fd)
        os.rmdir(name, dir_fd=dir_fd)
        os.symlink(outside, name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    result = write(write_file_tool(workspace), file_path="notes/x.txt", content="x")
    assert result["error"] == "writeFile refused: notes is a symbolic link; links are not followed"
    assert files_in(outside) == {"secret.txt": "keep me"}


def test_a_file_in_the_way_of_a_folder_and_a_folder_in_the_way_of_a_file(place):
    workspace, _ = place
    tool = write_file_tool(workspace)
    write(tool, file_path="a.txt", content="x")
    (workspace / "folder").mkdir()
    assert write(tool, file_path="a.txt/b.txt", content="y")["error"] == "writeFile refused: a.txt is a file, not a folder"
    assert write(tool, file_path="folder", content="y", overwrite=True)["error"] == (
        "writeFile refused: folder is a folder, not a file"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_special_file_is_not_written(place):
    workspace, _ = place
    os.mkfifo(workspace / "pipe")
    result = write(write_file_tool(workspace), file_path="pipe", content="x", overwrite=True)
    assert result["error"] == "writeFile refused: pipe is not a regular file"


def test_too_much_content_is_refused_with_the_limit(place):
    workspace, _ = place
    tool = write_file_tool(workspace, max_chars=10)
    result = write(tool, file_path="a.txt", content="x" * 11)
    assert result["error"] == "invalid input for writeFile: content is 11 characters long; at most 10 are allowed"
    assert result["field"] == "content" and "at most 10 characters" in result["expected"]
    assert files_in(workspace) == {}
    # Called as a plain Python function the schema is not in the way: the function checks it too.
    assert "the limit is 10" in json.loads(tool("a.txt", "x" * 11))["error"]
    assert write(tool, file_path="a.txt", content="x" * 10)["created"] is True


def test_the_limit_is_in_the_schema_and_the_description():
    tool = write_file_tool(Path.cwd())
    assert tool.parameters["properties"]["content"]["maxLength"] == MAX_CONTENT_CHARS
    assert f"at most {MAX_CONTENT_CHARS} characters" in tool.description
    assert f"最多 {MAX_CONTENT_CHARS} 个字符" in tool.describe("zh")


def test_a_lone_surrogate_in_the_content_is_refused_not_crashed(place):
    workspace, _ = place
    result = json.loads(write_file_tool(workspace)("a.txt", "bad \udc80"))
    assert "cannot be written as UTF-8" in result["error"]


def test_the_workspace_location_never_appears_in_an_observation(place):
    workspace, _ = place
    tool = write_file_tool(workspace)
    texts = [tool.invoke(json.dumps({"file_path": path, "content": "x"}))
             for path in ["a.txt", "a.txt", "../x", "/etc/x", "a.txt/b"]]
    assert all(str(workspace) not in text and str(workspace.parent) not in text for text in texts)


def test_a_disk_error_is_an_observation_without_the_path(place, monkeypatch):
    workspace, _ = place

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(workspace / "a.txt"))

    monkeypatch.setattr(workspace_files, "write_in_workspace", full)
    result = write(write_file_tool(workspace), file_path="a.txt", content="x")
    assert result == {"error": "writeFile failed: No space left on device", "file_path": "a.txt"}


def test_the_workspace_must_exist_and_be_a_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_file_tool(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        write_file_tool(tmp_path / "file")
    with pytest.raises(ValueError, match="max_chars"):
        write_file_tool(tmp_path, max_chars=0)


def test_check_relative_path_normalises_dots_and_double_slashes():
    assert check_relative_path("./notes//todo.txt") == ["notes", "todo.txt"]


def test_the_agent_writes_the_seeds_numbers_file_with_the_classroom_model(place):
    workspace, _ = place
    registry = ToolRegistry([write_file_tool(workspace)])
    result = ReActAgent(LlmClient.classroom(), registry).run("把 1 到 10 的整数写入 numbers.txt")
    assert result.reason == "final_answer"
    assert [call.name for call in result.trace.tool_calls] == ["writeFile"]
    assert files_in(workspace) == {"numbers.txt": "\n".join(str(n) for n in range(1, 11))}


def test_an_agent_asked_to_write_outside_gets_a_refusal_and_says_so(place):
    workspace, outside = place
    registry = ToolRegistry([write_file_tool(workspace)])
    result = ReActAgent(LlmClient.classroom(), registry).run('Write "hello" to ../outside/secret.txt')
    assert "goes up with '..'" in result.trace.events[3].text  # the Observation
    assert (outside / "secret.txt").read_text() == "keep me" and files_in(workspace) == {}
    assert registry.run(Action("writeFile", '{"file_path": "../x", "content": "x"}')).error


# -- readFile and listFiles (lesson 15): the same rules for reading ------------------------------------
def read(workspace, file_path: str, **options) -> dict:
    return json.loads(workspace_files.read_file_tool(workspace, **options).invoke(json.dumps({"file_path": file_path})))


def listing(workspace, folder: str = ".") -> dict:
    return json.loads(workspace_files.list_files_tool(workspace).invoke(json.dumps({"folder": folder})))


def test_read_gives_back_what_write_wrote(place):
    workspace, _ = place
    write(write_file_tool(workspace), file_path="notes/备注.txt", content="扫地机不回充\n第二行")
    assert read(workspace, "notes/备注.txt") == {"file": "notes/备注.txt", "characters": 10,
                                                 "content": "扫地机不回充\n第二行"}
    assert read(workspace, "./notes//备注.txt")["file"] == "notes/备注.txt"


@pytest.mark.parametrize(
    ("file_path", "says"),
    [
        ("../../etc/passwd", "readFile refused: ../../etc/passwd goes up with '..'; only the workspace can be read"),
        ("../outside/secret.txt", "goes up with '..'"),
        ("notes/../../outside/secret.txt", "goes up with '..'"),
        ("/etc/passwd", "readFile refused: /etc/passwd is an absolute path; paths are relative to the workspace"),
        ("~/.ssh/id_rsa", "is an absolute path"),
        ("\\\\server\\share\\x", "is an absolute path"),
        ("C:/Windows/win.ini", "contains ':'"),
        ("notes\\..\\..\\x", "contains a backslash"),
        ("a\x00b", "control character"),
        ("", "file_path is empty"),
        ("notes/", "names a folder"),
    ],
)
def test_reading_outside_is_refused_before_the_disk_is_touched(place, file_path, says):
    workspace, _ = place
    data = read(workspace, file_path)
    assert says in data["error"] and "keep me" not in json.dumps(data)


def test_a_symlink_to_a_file_outside_is_not_read_through(place):
    workspace, outside = place
    (workspace / "secret.txt").symlink_to(outside / "secret.txt")
    assert read(workspace, "secret.txt") == {"error": "readFile refused: secret.txt is a symbolic link; links are "
                                                      "not followed"}


def test_a_symlink_to_a_folder_outside_is_not_read_through(place):
    workspace, outside = place
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    (workspace / "notes").mkdir()
    (workspace / "notes" / "deep").symlink_to(outside, target_is_directory=True)
    assert read(workspace, "out/secret.txt")["error"] == "readFile refused: out is a symbolic link; links are not " \
                                                          "followed"
    assert read(workspace, "notes/deep/secret.txt")["error"].startswith("readFile refused: notes/deep is a symbolic")
    assert listing(workspace, "out")["error"] == "listFiles refused: out is a symbolic link; links are not followed"


def test_a_hard_to_read_file_is_refused_with_its_reason(place):
    workspace, _ = place
    (workspace / "notes").mkdir()
    (workspace / "big.txt").write_text("x" * 101)
    (workspace / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    os.mkfifo(workspace / "pipe")
    assert read(workspace, "missing.txt")["error"] == "readFile refused: there is no file missing.txt in the workspace"
    assert read(workspace, "nope/missing.txt")["error"] == "readFile refused: there is no folder nope in the workspace"
    assert read(workspace, "notes")["error"] == "readFile refused: notes is a folder, not a file"
    assert read(workspace, "pipe")["error"] == "readFile refused: pipe is not a regular file"  # and no hang
    assert read(workspace, "image.png")["error"] == "readFile refused: image.png is not UTF-8 text (a binary file?)"
    assert read(workspace, "big.txt", max_bytes=100)["error"] == "readFile refused: big.txt is 101 bytes; readFile " \
                                                                  "reads at most 100"
    assert read(workspace, "big.txt", max_bytes=101)["characters"] == 101


@pytest.mark.parametrize("way", ["dir_fd"], indirect=True)
def test_a_file_swapped_for_a_link_after_the_check_is_not_followed(place, monkeypatch):
    workspace, outside = place
    (workspace / "notes.txt").write_text("mine")
    real_lstat = os.lstat

    def lstat_then_swap(name, *, dir_fd=None):  # another process wins the race right after the check
        info = real_lstat(name, dir_fd=dir_fd)
        if name == "notes.txt":
            os.unlink(name, dir_fd=dir_fd)
            os.symlink(outside / "secret.txt", name, dir_fd=dir_fd)
        return info

    monkeypatch.setattr(os, "lstat", lstat_then_swap)
    data = read(workspace, "notes.txt")
    assert data == {"error": "readFile refused: notes.txt is a symbolic link; links are not followed"}


@pytest.mark.parametrize("way", ["dir_fd"], indirect=True)
def test_a_file_swapped_for_a_pipe_after_the_check_is_refused_without_hanging(place, monkeypatch):
    workspace, _ = place
    (workspace / "notes.txt").write_text("mine")
    real_lstat, real_open = os.lstat, os.open

    def lstat_then_swap(name, *, dir_fd=None):
        info = real_lstat(name, dir_fd=dir_fd)
        if name == "notes.txt":
            os.unlink(name, dir_fd=dir_fd)
            os.mkfifo(name, dir_fd=dir_fd)
        return info

    monkeypatch.setattr(os, "lstat", lstat_then_swap)
    outcome: list[dict] = []
    reader = threading.Thread(target=lambda: outcome.append(read(workspace, "notes.txt")), daemon=True)
    reader.start()
    reader.join(PATIENCE)
    if reader.is_alive():  # it blocked opening the pipe: let it go (a writer appears), then fail
        os.close(real_open(workspace / "notes.txt", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("readFile blocked on a pipe swapped in for the file")
    assert outcome == [{"error": "readFile refused: notes.txt is not a regular file"}]


@pytest.mark.parametrize("way", ["dir_fd"], indirect=True)
def test_a_folder_swapped_for_a_link_while_reading_is_not_followed(place, monkeypatch):
    workspace, outside = place
    (workspace / "notes").mkdir()
    (workspace / "notes" / "secret.txt").write_text("mine")
    real_open = os.open

    def swap_then_open(name, flags, mode=0o777, *, dir_fd=None):
        if name == "notes" and dir_fd is not None and not os.path.islink(workspace / "notes"):
            os.rename(workspace / "notes", workspace / "was-notes")
            os.symlink(outside, workspace / "notes", target_is_directory=True)
        return real_open(name, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", swap_then_open)
    assert read(workspace, "notes/secret.txt") == {"error": "readFile refused: notes is a symbolic link; links are "
                                                            "not followed"}
    assert listing(workspace, "notes")["error"] == "listFiles refused: notes is a symbolic link; links are not " \
                                                   "followed"


def test_list_files_shows_files_folders_and_links_without_following_them(place):
    workspace, outside = place
    write(write_file_tool(workspace), file_path="notes/todo.txt", content="buy milk")
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    (workspace / "b.txt").write_text("bb")
    assert listing(workspace) == {"folder": ".", "entries": [
        {"name": "b.txt", "type": "file", "bytes": 2},
        {"name": "notes", "type": "folder"},
        {"name": "out", "type": "link"},
    ]}
    assert listing(workspace, "") == listing(workspace, "./") == listing(workspace)
    assert listing(workspace, "notes/") == {"folder": "notes", "entries": [{"name": "todo.txt", "type": "file",
                                                                             "bytes": 8}]}


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        ("..", "listFiles refused: .. goes up with '..'; only the workspace can be listed"),
        ("/etc", "listFiles refused: /etc is an absolute path"),
        ("/", "is an absolute path"),
        ("missing", "listFiles refused: there is no folder missing in the workspace"),
    ],
)
def test_list_files_refuses_what_read_refuses(place, folder, says):
    workspace, _ = place
    assert says in listing(workspace, folder)["error"]


def test_a_long_listing_is_cut_and_says_how_many_more(place):
    workspace, _ = place
    for n in range(5):
        (workspace / f"{n}.txt").write_text("x")
    tool = workspace_files.list_files_tool(workspace, max_entries=3)
    data = json.loads(tool.invoke("."))
    assert [entry["name"] for entry in data["entries"]] == ["0.txt", "1.txt", "2.txt"] and data["more"] == 2


def test_workspace_tools_are_the_three_file_tools(place):
    workspace, _ = place
    assert [tool.name for tool in workspace_files.workspace_tools(workspace)] == ["writeFile", "readFile", "listFiles"]


# A write that fails half way, in a process of its own: the file size limit (RLIMIT_FSIZE) makes os.write fail
# with EFBIG after 1,000 bytes, as a full disk would.
HALF_WAY = r'''
import json, resource, signal, sys
from pathlib import Path
from tinyagent.toolkit.workspace_files import workspace_tools
workspace = Path(sys.argv[1])
write, read, listing = workspace_tools(workspace)
(workspace / "old.txt").write_text("the old content")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
said = [write.invoke(json.dumps({"file_path": "new.txt", "content": "y" * 5000})),
        write.invoke(json.dumps({"file_path": "old.txt", "content": "z" * 5000, "overwrite": True}))]
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print(json.dumps(said))
'''


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
def test_a_write_that_fails_half_way_leaves_neither_half_a_file_nor_a_temporary_one(tmp_path):
    # a new file stayed on disk at 1,000 bytes (and a retry was refused: "already exists"); a replacement's
    # temporary file stayed beside the old one, and listFiles showed it
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", HALF_WAY, str(tmp_path)], capture_output=True, text=True,
                          timeout=PATIENCE, check=True)
    new, replaced = (json.loads(said) for said in json.loads(done.stdout))
    assert new["error"].startswith("writeFile failed") and replaced["error"].startswith("writeFile failed")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["old.txt"]
    assert (tmp_path / "old.txt").read_text() == "the old content"
    write = workspace_files.workspace_tools(tmp_path)[0]
    assert json.loads(write.invoke(json.dumps({"file_path": "new.txt", "content": "y" * 5000})))["created"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_replaced_file_keeps_its_permissions(tmp_path):
    # a private file (0600) came back 0644 once writeFile had replaced it
    private = tmp_path / "private.txt"
    private.write_text("secret")
    private.chmod(0o600)
    write = workspace_files.workspace_tools(tmp_path)[0]
    assert json.loads(write.invoke(json.dumps({"file_path": "private.txt", "content": "new", "overwrite": True})))[
        "replaced"]
    assert private.read_text() == "new" and private.stat().st_mode & 0o777 == 0o600
