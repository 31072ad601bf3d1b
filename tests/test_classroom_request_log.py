"""The classroom server's request log: every request, in order, only while a recording() block runs."""

from __future__ import annotations

import threading

import requests

from tinyagent.classroom.server import ClassroomServer

ASK = {"model": "classroom", "messages": [{"role": "user", "content": "Hello"}]}


def test_a_recording_holds_each_request_in_order_and_nothing_outside_it():
    with ClassroomServer(api_key="room-key") as server:
        key = {"Authorization": "Bearer room-key"}
        requests.post(server.chat_url, json=ASK, headers=key, timeout=30)  # before: not recorded
        with server.recording() as log:
            requests.post(server.chat_url, json=ASK, headers=key, timeout=30)
            requests.post(server.chat_url, json=ASK, headers=key, timeout=30)  # served from the cache: still logged
            requests.post(server.base_url + "/responses", json={"model": "classroom", "input": "Hi"}, headers=key,
                          timeout=30)
            requests.get(server.base_url + "/models", headers=key, timeout=30)
            requests.post(server.chat_url, data=b"not json", headers={**key, "Content-Type": "application/json"},
                          timeout=30)
        requests.post(server.chat_url, json=ASK, headers=key, timeout=30)  # after: not recorded
    assert [(r.index, r.method, r.path) for r in log] == [
        (0, "POST", "/v1/chat/completions"), (1, "POST", "/v1/chat/completions"), (2, "POST", "/v1/responses"),
        (3, "GET", "/v1/models"), (4, "POST", "/v1/chat/completions")]
    assert log[0].body == ASK and log[0].messages == ASK["messages"] and log[2].messages == ["Hi"]
    assert log[4].body == "not json"
    assert "room-key" not in repr(log.requests)  # headers are not kept


def test_a_request_with_a_wrong_key_is_not_recorded():
    with ClassroomServer(api_key="room-key") as server, server.recording() as log:
        assert requests.post(server.chat_url, json=ASK, timeout=30).status_code == 401
    assert len(log) == 0


def test_requests_from_many_threads_are_all_recorded_once():
    with ClassroomServer() as server, server.recording() as log:
        def ask(n):
            body = {**ASK, "messages": [{"role": "user", "content": f"Hello {n}"}]}
            requests.post(server.chat_url, json=body, timeout=60)

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(r.body["messages"][0]["content"] for r in log) == sorted(f"Hello {n}" for n in range(8))
    assert [r.index for r in log] == list(range(8))
