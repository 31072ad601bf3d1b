"""What the classroom model was sent: every request, in the order it arrived (lesson 20 shows them side by side).

    with server.recording() as log:          # server: a ClassroomServer, e.g. ensure_classroom_server()
        agent.run("Where is order 88231?")
    for request in log:
        print(request.path, len(request.body["messages"]))

A log records only while its `with` block runs, so two notebooks sharing one server each see their own requests
(and those of anyone else using it at the same time). Headers are not kept: an API key never lands in a log.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class LoggedRequest:
    """One request: its position in the log (from 0), method, path, and body (parsed JSON, else its text)."""

    index: int
    method: str
    path: str
    body: object

    @property
    def messages(self) -> list:
        """The chat request's messages, or the Responses request's input (a plain string as a list of one), else []."""
        if not isinstance(self.body, dict):
            return []
        found = self.body.get("messages", self.body.get("input"))
        return found if isinstance(found, list) else [] if found is None else [found]


class RequestLog:
    """Requests in arrival order. Thread-safe: the server's threads add to it while a notebook reads it."""

    def __init__(self) -> None:
        self._requests: list[LoggedRequest] = []
        self._lock = threading.Lock()

    def add(self, method: str, path: str, raw: bytes) -> None:
        try:
            body: object = json.loads(raw) if raw else None
        except (ValueError, RecursionError):
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self._requests.append(LoggedRequest(len(self._requests), method, path, body))

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._requests)

    def __iter__(self) -> Iterator[LoggedRequest]:
        return iter(self.requests)

    def __len__(self) -> int:
        with self._lock:
            return len(self._requests)

    def __getitem__(self, index: int) -> LoggedRequest:
        with self._lock:
            return self._requests[index]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def __repr__(self) -> str:
        return f"RequestLog({len(self)} requests)"
