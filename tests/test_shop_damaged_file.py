"""A shop database file that exists but is damaged (a page overwritten, the file cut short) or cannot be read: one
ShopDatabaseError line that says so and names the file, which is left exactly as it was."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tinyagent.errors import ShopDatabaseError
from tinyagent.shop import Shop

from .conftest import as_if_not_root

PAGE = 4096  # SQLite's page size here: the second page is bytes 4096-8191


@pytest.fixture
def shop_file(tmp_path):
    path = tmp_path / "shop.db"
    with Shop(path) as shop:
        shop.apply_refund("88231", "broken")  # something of the learner's own that must not be lost
    return path


def overwrite_second_page(path) -> None:
    with open(path, "r+b") as file:
        file.seek(PAGE)
        file.write(b"\xff" * PAGE)


def test_a_file_with_a_damaged_page_is_refused_and_left_as_it_was(shop_file):
    # It opened, and the first query to reach the page gave the tool "database disk image is malformed", which the
    # agent read as a wrong order number: `ask --db` exited 0.
    overwrite_second_page(shop_file)
    before = shop_file.read_bytes()
    with pytest.raises(ShopDatabaseError) as refused:
        Shop(shop_file)
    message = str(refused.value)  # SQLite's finding in brackets: "Page 2: btreeInitPage() returns error code 11"
    assert message.startswith(f"the shop's database {shop_file} is damaged (Page 2: ") and "\n" not in message
    assert message.endswith("): restore it from a copy, or move it away and a new one is made in its place")
    assert shop_file.read_bytes() == before


def test_a_file_cut_short_is_called_damaged_not_a_file_that_cannot_be_created(shop_file):
    # It said "cannot create the shop's database ... give a path in a folder you can write to".
    shop_file.write_bytes(shop_file.read_bytes()[:20000])
    with pytest.raises(ShopDatabaseError) as refused:
        Shop(shop_file)
    assert str(refused.value) == (f"the shop's database {shop_file} is damaged (database disk image is malformed): "
                                  "restore it from a copy, or move it away and a new one is made in its place")
    assert shop_file.stat().st_size == 20000


def test_a_file_that_cannot_be_read_is_called_unreadable_not_a_file_that_cannot_be_created(shop_file):
    shop_file.chmod(0)
    script = ("import sys\nfrom tinyagent.errors import ShopDatabaseError\nfrom tinyagent.shop import Shop\n"
              "try:\n    Shop(sys.argv[1])\nexcept ShopDatabaseError as exc:\n    print(exc)\n")
    command = as_if_not_root([sys.executable, "-c", script, str(shop_file)])
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == (f"the shop's database {shop_file} cannot be read: give your account permission "
                                   "to read it"), done.stderr


def test_ask_with_a_damaged_db_prints_one_line_and_exits_2(shop_file):
    overwrite_second_page(shop_file)
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "Where is order 88231?", "--db", str(shop_file)],
                          capture_output=True, text=True, timeout=120, check=False, cwd=shop_file.parent,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: the shop's database {shop_file} is damaged (Page 2: ")
