"""The four SQLite stores say an unusable file the same way (sqlite_files.why_unusable): the shop, the session store,
the user facts and lesson 21's reminder store. For each situation (a folder, a text file, a file another program holds
locked, a full disk, a read-only file or folder, a file moved while open) each store's error is one line that names
the store and its path and says what to do. A path that can name no file (blank, a pipe) is refused before anything is
made, and an opening that fails leaves nothing behind: not the empty file, nor the folders made for it
(sqlite_files.left_as_found), as the shop alone did.

Before, each store said these in words of its own, and several said nothing to act on: "cannot use X as a session
store: database is locked", "the facts file X failed: attempt to write a readonly database", "nothing was sent: the
reminder store is busy ..." (no path), "cannot use X as the reminder store: unable to open database file" for a new
file in a folder that cannot be written, the shop's "the shop's database is read-only: X" (nothing to do).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import as_if_not_root
from tests.full_disk import no_room_to_grow, run_on_a_full_disk
from tests.test_shop_busy_stop import holding_the_write_lock
from tinyagent import fixed_clock
from tinyagent.architectures.reminder_loop import ReminderStore
from tinyagent.errors import TinyAgentError
from tinyagent.memory.session_store import SqliteSessionStore, Turn
from tinyagent.memory.user_facts import UserFacts
from tinyagent.shop import Shop

ROOT = Path(__file__).resolve().parents[1]
NOW = "2026-06-30T19:05:23"


def _shop_write(shop: Shop, n: int) -> None:
    # A refund first (the write a shop exists for), then notes long enough to need pages of their own.
    if n == 0:
        shop.apply_refund("88231", "broken")
    else:
        shop.add_order_note(("88232", "88233", "88234", "88235", "88236")[n % 5], f"note {n} " + "n" * 3000)


@dataclass(frozen=True)
class StoreUnderTest:
    name: str
    what: str  # the words the store's errors name it by
    open: Callable[[str], object]
    write: Callable[[object, int], object]  # the n-th write: each adds a row too large to fit beside the last
    connection: Callable[[object], object]
    patience: str  # the module's BUSY_TIMEOUT_SECONDS, set small for the tests of a busy file

    def opened_and_written(self, path: str) -> None:
        with self.open(path) as store:
            self.write(store, 0)


STORES = {
    "shop": StoreUnderTest("shop", "the shop's database", lambda path: Shop(path, clock=fixed_clock(NOW)),
                           _shop_write, lambda shop: shop._conn, "tinyagent.shop.database.BUSY_TIMEOUT_SECONDS"),
    "sessions": StoreUnderTest("sessions", "the session store", SqliteSessionStore,
                               lambda store, n: store.append_turn("s", Turn(f"q{n}", "a" * 3000)),
                               lambda store: store._conn, "tinyagent.memory.session_store.BUSY_TIMEOUT_SECONDS"),
    "facts": StoreUnderTest("facts", "the facts store", UserFacts,
                            lambda facts, n: facts.remember("u1", f"fact {n} " + "f" * 480),
                            lambda facts: facts._conn, "tinyagent.memory.user_facts.BUSY_TIMEOUT_SECONDS"),
    "reminders": StoreUnderTest("reminders", "the reminder store", ReminderStore,
                                lambda store, n: store.send(f"reminder {n} " + "r" * 480),
                                lambda store: store.conn, "tinyagent.architectures.reminder_loop.BUSY_TIMEOUT_SECONDS"),
}
EVERY_STORE = pytest.mark.parametrize("store", STORES.values(), ids=list(STORES))

# What to do, as each situation's sentence must say it.
GIVE_A_FILE = re.compile(r"give .*(a file path|a new file name)")
TRY_AGAIN = re.compile(r"try again")
MAKE_ROOM = re.compile(r"make room on its disk.* try again")
WRITABLE = re.compile(r"make it writable, or give .* a path in a folder you can write to")
CREATE_ELSEWHERE = re.compile(r"give a path in a folder you can write to")
RESTART = re.compile(r"restart the program")


def refusal(store: StoreUnderTest, action: Callable[[], object]) -> str:
    """The store's own error raised by `action` (never a raw sqlite3 or OS error), as the one line a person reads.
    The shop's errors for a write say it in Chinese first, then in English between （ and ）: the English."""
    with pytest.raises(TinyAgentError) as caught:
        action()
    message = str(caught.value)
    english = re.search(r"（([^（]*)）$", message)
    return english.group(1) if english else message


def says(message: str, store: StoreUnderTest, path, what_to_do: re.Pattern) -> None:
    assert "\n" not in message, message
    assert store.what in message and str(path) in message, message
    assert what_to_do.search(message), message


# -- opening --------------------------------------------------------------------------------------------------------
@EVERY_STORE
def test_a_folder(store, tmp_path):
    message = refusal(store, lambda: store.open(str(tmp_path)))
    says(message, store, tmp_path, GIVE_A_FILE)
    assert message.startswith(f"{tmp_path} is a folder"), message
    assert list(tmp_path.iterdir()) == []


@EVERY_STORE
def test_a_text_file(store, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, just text that is long enough to be read as a header\n" * 20)
    before = notes.read_bytes()
    message = refusal(store, lambda: store.open(str(notes)))
    says(message, store, notes, GIVE_A_FILE)
    assert message.startswith(f"{notes} is not an SQLite database"), message
    assert notes.read_bytes() == before


@EVERY_STORE
@pytest.mark.parametrize("case", ["text-file", "journal-cannot-be-made"])
def test_a_failed_start_is_the_stores_own_error_alone(store, tmp_path, case):
    # A notebook shows a store's error as its one line (TinyAgentError._render_traceback_) and a command prints its
    # first line; a script, a log or traceback.print_exception shows the whole chain. The shop's start chained SQLite's
    # error to its own (`from exc`), and where SQLite could not make the journal of a new file, the ShopReadOnlyError
    # that said it in Chinese too; the other stores raise their own error alone (`from None`), as the shop now does.
    path = tmp_path / "mine.db"
    if case == "text-file":
        path.write_text("not a database, just text that is long enough to be read as a header\n" * 20)
    else:  # the file may be made, but not the journal SQLite writes beside it at the first write
        (tmp_path / "mine.db-journal").mkdir()
    with pytest.raises(TinyAgentError) as caught:
        store.open(str(path))
    assert "\n" not in str(caught.value) and store.what in str(caught.value), caught.value
    shown, exc = [], caught.value  # the errors a traceback prints, as traceback.print_exception walks them
    while exc is not None:
        shown.append(exc)
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    assert shown == [caught.value], "".join(traceback.format_exception(caught.value))


@EVERY_STORE
@pytest.mark.parametrize(("given", "said"), [
    ("", "the path given for {what} is empty: give a file path, such as "),  # was "<nothing> is a folder"
    ("  ", "the path given for {what} is empty: give a file path, such as "),  # a file named "  ", but by the shop
    ("\t", "the path given for {what} is empty: give a file path, such as "),
    ("/dev/null", "/dev/null is not a regular file: give {what} a file path"),  # was "... disk I/O error"
    ("{tmp}/" + "a" * 256 + ".db", "cannot create {what} {tmp}/aaa"),  # the outbox raised the OSError itself
], ids=["empty", "spaces", "tab", "dev-null", "too-long"])
def test_a_path_that_can_name_no_store(store, tmp_path, monkeypatch, given, said):
    monkeypatch.chdir(tmp_path)  # where a blank name's file was made
    message = refusal(store, lambda: store.open(given.format(tmp=tmp_path)))
    assert "\n" not in message and message.startswith(said.format(what=store.what, tmp=tmp_path)), message
    if given.endswith(".db"):  # a name past 255 bytes: no folder's permission is in question (it sent people there)
        assert message.endswith("(File name too long): give a shorter name"), message
    else:
        assert GIVE_A_FILE.search(message), message
    assert list(tmp_path.iterdir()) == []


@EVERY_STORE
def test_something_where_sqlite_writes_the_journal_is_named(store, tmp_path):
    # A folder where SQLite writes a new file's journal, in a folder anyone may write to, was "cannot create ...
    # (unable to open database file): give a path in a folder you can write to", which sent people to the folder's
    # permissions.
    (tmp_path / "mine.db-journal").mkdir()
    path = tmp_path / "mine.db"
    message = refusal(store, lambda: store.open(str(path)))
    assert message == (f"cannot create {store.what} {path}: {tmp_path / 'mine.db-journal'} is in the way of the "
                       "journal SQLite writes beside the file: remove it, or give another file name"), message
    assert [found.name for found in tmp_path.iterdir()] == ["mine.db-journal"]


def test_a_store_opens_in_a_folder_of_its_own_made_for_it(tmp_path):
    # The reminder store made no folder, where the others did: "cannot create ... (unable to open database file)".
    for store in STORES.values():
        store.opened_and_written(str(tmp_path / store.name / "new" / "mine.db"))
        assert (tmp_path / store.name / "new" / "mine.db").is_file()


def path_of_bytes(folder: Path, size: int) -> Path:
    """A path in `folder` (in folders of its own, each name short enough for the file system) whose full path is
    `size` bytes long, ending in ".db"."""
    path = folder.resolve() / "made"
    while (gap := size - len(os.fsencode(path / "mine.db"))) > 0:
        path /= "d" * (150 if gap > 201 else gap - 1)  # each folder adds its name and a "/"
    assert len(os.fsencode(path / "mine.db")) == size, path
    return path / "mine.db"


def too_long(store: StoreUnderTest, path, size: int) -> str:
    return (f"{store.what} {path} cannot be opened: its full path is too long for SQLite ({size} bytes; SQLite opens "
            "at most 504): give a shorter path")


@EVERY_STORE
def test_a_new_file_sqlite_cannot_open_leaves_no_folders_behind(store, tmp_path):
    # SQLite takes paths of at most 504 bytes: the session store and the facts made the folders on the way, and left
    # them (the shop removed them).
    deep = tmp_path / "made" / ("d" * 200) / ("d" * 200) / ("d" * 200) / "mine.db"
    refusal(store, lambda: store.open(str(deep)))
    assert list(tmp_path.iterdir()) == []


@EVERY_STORE
def test_a_path_longer_than_sqlite_opens_says_so_with_the_limit(store, tmp_path):
    # SQLite's unix VFS keeps a path in 512 bytes, less the "-journal" it adds: a new file at 505 bytes, in a folder
    # anyone may write to, was "cannot create ... (unable to open database file): give a path in a folder you can
    # write to", which sent people to the folder's permissions.
    store.opened_and_written(str(path_of_bytes(tmp_path / "fits", 504)))
    deep = path_of_bytes(tmp_path / "over", 505)
    assert refusal(store, lambda: store.open(str(deep))) == too_long(store, deep, 505)
    assert [path.name for path in tmp_path.iterdir()] == ["fits"]


@EVERY_STORE
def test_a_relative_path_counts_its_folder_toward_the_limit(store, tmp_path, monkeypatch):
    # "mine.db" is short, but SQLite opens it by its full path: the folder it is in counts.
    deep = path_of_bytes(tmp_path, 600)
    deep.parent.mkdir(parents=True)
    monkeypatch.chdir(deep.parent)
    assert refusal(store, lambda: store.open("mine.db")) == too_long(store, "mine.db", 600)
    assert list(deep.parent.iterdir()) == []


@EVERY_STORE
def test_a_file_another_program_holds_locked_at_opening(store, tmp_path, monkeypatch):
    monkeypatch.setattr(store.patience, 0.3)
    path = tmp_path / "mine.db"
    store.open(str(path)).close()
    with holding_the_write_lock(path, "BEGIN EXCLUSIVE"):
        message = refusal(store, lambda: store.open(str(path)))
    says(message, store, path, TRY_AGAIN)
    assert "is busy (another program held it locked past 0.3 s)" in message, message  # how long it waited


# -- using ----------------------------------------------------------------------------------------------------------
@EVERY_STORE
def test_a_file_another_program_holds_locked_at_a_write(store, tmp_path, monkeypatch):
    monkeypatch.setattr(store.patience, 0.3)
    path = tmp_path / "mine.db"
    with store.open(str(path)) as opened:
        with holding_the_write_lock(path, "BEGIN EXCLUSIVE"):
            message = refusal(store, lambda: store.write(opened, 0))
        store.write(opened, 0)  # the lock let go, the same write goes in
    says(message, store, path, TRY_AGAIN)
    assert "is busy (another program held it locked past 0.3 s)" in message, message  # how long it waited


@EVERY_STORE
def test_a_full_disk_at_a_write(store, tmp_path):
    path = tmp_path / "mine.db"
    with store.open(str(path)) as opened:
        no_room_to_grow(store.connection(opened))  # as a full disk: SQLITE_FULL

        def fill() -> None:
            for n in range(200):
                store.write(opened, n)

        message = refusal(store, fill)
    says(message, store, path, MAKE_ROOM)
    assert "database or disk is full" in message, message


@EVERY_STORE
def test_a_file_moved_while_open(store, tmp_path):
    path = tmp_path / "mine.db"
    with store.open(str(path)) as opened:
        shutil.move(path, tmp_path / "moved.db")
        message = refusal(store, lambda: store.write(opened, 0))
    says(message, store, path, RESTART)
    assert "moved or deleted" in message and "read-only" not in message and "readonly" not in message, message


# -- in another process: a read-only file or folder, a real full disk -----------------------------------------------
CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.test_store_refusals import STORES
from tinyagent.errors import TinyAgentError
try:
    STORES[sys.argv[2]].opened_and_written(sys.argv[3])
    print(json.dumps({"error": None}))
except TinyAgentError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def child(store: StoreUnderTest, path) -> list[str]:
    return [sys.executable, "-c", CHILD, str(ROOT), store.name, str(path)]


def said_by_child(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-2000:]
    message = json.loads(done.stdout.strip().splitlines()[-1])["error"]
    assert message is not None, "the write was not refused"
    english = re.search(r"（([^（]*)）$", message)
    return english.group(1) if english else message


def said_without_root_powers(store: StoreUnderTest, path, read_only_folder=None) -> str:
    """What the store says, opened at `path` and written to in a process as any account runs it: root's power to
    write any file taken away (setpriv), so that a file's or a folder's mode says what may be written, as for a
    learner. `read_only_folder` is made read-only for the while."""
    if read_only_folder is not None:
        read_only_folder.chmod(0o555)
    try:
        return said_by_child(subprocess.run(as_if_not_root(child(store, path)), capture_output=True, text=True,
                                            timeout=120, check=False))
    finally:
        if read_only_folder is not None:
            read_only_folder.chmod(0o755)


@EVERY_STORE
@pytest.mark.parametrize("read_only", ["file", "folder"])
def test_a_read_only_file_or_folder(store, tmp_path, read_only):
    folder = tmp_path / "folder"
    folder.mkdir()
    path = folder / "mine.db"
    store.open(str(path)).close()
    before = path.read_bytes()
    if read_only == "file":
        path.chmod(0o444)
        message = said_without_root_powers(store, path)
    else:  # the file may be written, but not the journal SQLite writes beside it
        message = said_without_root_powers(store, path, folder)
    says(message, store, path, WRITABLE)
    assert "read-only" in message, message
    assert path.read_bytes() == before


@EVERY_STORE
def test_a_new_file_in_a_read_only_folder(store, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    message = said_without_root_powers(store, folder / "mine.db", folder)
    says(message, store, folder / "mine.db", CREATE_ELSEWHERE)
    assert f"the folder {folder} cannot be written" in message, message
    assert list(folder.iterdir()) == []


@EVERY_STORE
def test_a_new_file_on_a_full_disk(store, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    fill_then_run = 'cat /dev/zero > "$0/fill" 2>/dev/null; exec "$@"'
    done = run_on_a_full_disk(disk, "sh", "-c", fill_then_run, str(disk), *child(store, disk / "mine.db"), size="1m")
    message = said_by_child(done)
    says(message, store, disk / "mine.db", MAKE_ROOM)


# A file size limit of 0 bytes, then the command: as a disk that takes no more bytes, where a new file is made empty.
# (Python ignores SIGXFSZ, so a write fails with EFBIG instead of killing the child.)
NO_BYTES_THEN_EXEC = ("import os, resource, sys; "
                      "resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1])); "
                      "os.execv(sys.argv[1], sys.argv[1:])")


@EVERY_STORE
@pytest.mark.parametrize("where", ["mine.db", "new/folders/mine.db"], ids=["in-its-folder", "in-new-folders"])
def test_a_new_file_that_cannot_be_written_leaves_nothing_behind(store, tmp_path, where):
    # The file was made, empty, and stayed, with the folders made for it: the next start then found an empty file the
    # user never made (the shop removed both).
    path = tmp_path / where
    done = subprocess.run([sys.executable, "-c", NO_BYTES_THEN_EXEC, *child(store, path)], capture_output=True,
                          text=True, timeout=120, check=False)
    message = said_by_child(done)
    says(message, store, path, re.compile(r"check its disk, then try again"))
    assert list(tmp_path.iterdir()) == []


@EVERY_STORE
def test_a_named_pipe_is_refused_before_it_is_opened(store, tmp_path):
    # Only the shop looked before opening; the others left it to SQLite, whose "disk I/O error" on a pipe why_unusable
    # then said, and an SQLite that waited on a pipe for a writer would have hung them. In a child, so that a store that
    # waits fails this test instead of hanging the run.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    try:
        done = subprocess.run(child(store, pipe), capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{store.name}: opening a named pipe did not return in 120 s")
    message = said_by_child(done)
    assert message.startswith(f"{pipe} is not a regular file: give {store.what} a file path, such as "), message
    assert stat.S_ISFIFO(pipe.lstat().st_mode) and [p.name for p in tmp_path.iterdir()] == ["pipe"]
