"""The classroom model against a page that points its own name at this machine (DNS rebinding).

Such a page's requests reach the room's port with the page's own name in Host (and in Origin, which then matches
it), and the browser lets the page read the answers. A room that asks no key answered them: 200 and a completion.
It now answers only requests that name it (localhost, an IP address, the name it listens on), as `serve` does; with
a key or the hub's tokens it answers whatever name the room uses, since a page cannot send those.
"""

from __future__ import annotations

import json
import socket

import pytest
import requests

from tinyagent.classroom.reply import Reply
from tinyagent.classroom.server import ClassroomServer

from .conftest import PATIENCE

MODELS = {"classroom": "echo"}
BODY = {"model": "classroom", "messages": [{"role": "user", "content": "Where is order 88231?"}]}


def echo(request: dict) -> Reply:
    return Reply(request["messages"][-1]["content"])


def as_named(room: ClassroomServer, name: str, **headers) -> tuple[requests.Response, requests.Response]:
    """A chat POST and a GET /v1/models, sent to the room with `name` as their Host, as a page at
    http://<name>:<port>/ sends them (Origin: its own, which a rebound page shares with the room)."""
    host = f"{name}:{room.port}"
    headers = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin", **headers}
    chat = requests.post(room.chat_url, json=BODY, headers=headers, timeout=PATIENCE)
    models = requests.get(room.base_url + "/models", headers=headers, timeout=PATIENCE)
    return chat, models


@pytest.fixture(scope="module")
def room():
    with ClassroomServer(responder=echo, models=MODELS) as server:
        yield server


@pytest.mark.parametrize("name", ["evil.example", "127.0.0.1.nip.io", "localhost.evil.example", "[::1].evil"])
def test_without_a_key_a_page_under_another_name_is_refused(room, name):
    for answer in as_named(room, name):
        assert answer.status_code == 403, answer.text
        assert answer.headers["Content-Type"] == "application/json"
        error = answer.json()["error"]
        assert error["code"] == "host_not_allowed" and error["type"] == "invalid_request_error"
        assert name in error["message"] and "--api-key" in error["message"]


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LocalHost.", "[::1]", "192.0.2.10", "[fd00::2]"])
def test_without_a_key_its_own_names_and_any_address_are_answered(room, name):
    # An address cannot be rebound: the page at http://<address>:<port>/ would be this server, which serves none.
    # So a room on a LAN without a key is still reached at the address its banner prints.
    chat, models = as_named(room, name)
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"] == BODY["messages"][0]["content"]
    assert models.status_code == 200


def test_without_a_key_a_request_naming_no_host_is_refused(room):
    with socket.create_connection(("127.0.0.1", room.port), timeout=PATIENCE) as connection:
        connection.sendall(b"GET /v1/models HTTP/1.0\r\n\r\n")
        answer = b""
        while part := connection.recv(65536):
            answer += part
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 ") and json.loads(body)["error"]["code"] == "host_not_allowed"


def test_with_a_key_any_name_is_answered_and_the_key_is_what_counts():
    # A page cannot send the key, so naming its own site gains it nothing: the room's own name (the teacher's
    # machine's, on a LAN) is served without a list of names to keep.
    with ClassroomServer(responder=echo, models=MODELS, api_key="room-key") as keyed:
        chat, models = as_named(keyed, "teacher-pc.lan", Authorization="Bearer room-key")
        assert chat.status_code == 200 and models.status_code == 200
        chat, models = as_named(keyed, "evil.example")
        assert chat.status_code == 401 and models.status_code == 401


def test_a_room_listening_under_a_name_answers_that_name():
    name = socket.gethostname()
    try:
        address = socket.getaddrinfo(name, 0, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError:
        pytest.skip(f"this machine's name {name!r} names no address of it")
    with ClassroomServer(host=name, responder=echo, models=MODELS) as named:
        host = f"{name}:{named.port}"
        answer = requests.get(f"http://{address}:{named.port}/v1/models", headers={"Host": host}, timeout=PATIENCE)
        assert answer.status_code == 200, answer.text
