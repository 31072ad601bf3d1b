"""A `--host` the socket module cannot encode, for the servers that listen from a thread (threaded_server.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tinyagent.hosting.address import ServerAddressError
from tinyagent.toolkit.weather_api import WeatherService

# What Python makes of a command-line byte that is not UTF-8 (`--host $'\xff'`): a lone surrogate, which IDNA
# cannot encode, so socket's bind() raised a TypeError ("encoding of hostname failed") past the OSError handler.
NOT_TEXT = "\udcff"


@pytest.mark.parametrize("host", [NOT_TEXT, "a\udcffb.lan"], ids=["a byte alone", "a byte in a name"])
def test_a_host_that_is_not_text_is_a_server_address_error(host):
    with pytest.raises(ServerAddressError, match="it is not an address of this machine"):
        WeatherService(host, 0)


def test_the_classroom_command_says_a_host_that_is_not_text_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "classroom", "--host", os.fsencode(NOT_TEXT),
                           "--port", "0"], check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("error: cannot listen on '\\udcff': it is not an address of this machine; use "
                                   "--host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every network it is on)")
