"""uvicorn's h11 protocol, answering a request it cannot read with a JSON 400 in place of a text/plain line.

h11 refuses some requests before any app sees them: a NUL in the path, two Content-Lengths that differ, a header line
without a colon, headers still unfinished past its size limit. uvicorn then writes "Invalid HTTP request received." as
text/plain. The course's servers answer every error in JSON, each in its own shape (`error_body`): the agent service
of lesson 19 (serving/connections.py) and the MCP server of lesson 24.
"""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

UNREADABLE = "the request is not HTTP/1.1 this server can read (its request line or headers): nothing was run"


class JsonErrorsH11Protocol(H11Protocol):
    """The `http=` protocol of uvicorn.Config for a server whose errors are JSON."""

    def error_body(self, message: str) -> dict[str, Any]:
        """The error as this server writes one (the MCP server's shape; the service's names a code)."""
        return {"error": message}

    def send_400_response(self, msg: str) -> None:
        # h11 may find a request unreadable in its body only, once the app has it: an app that refuses it before
        # reading the body (no key, not JSON) answers it too. The app's request ends here, as when its client goes
        # away, so that its answer, coming second, is dropped instead of breaking h11's state (a traceback). An answer
        # already under way (a resumed stream reads no body) is the last one: the connection just ends.
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()  # an app waiting for the body hears that its client has gone
            if cycle.response_started:
                self.hang_up()
                return
        body = json.dumps(self.error_body(UNREADABLE)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.hang_up()

    def hang_up(self) -> None:
        """The connection has had its last answer: close it (serving/connections.py ends it more gently)."""
        self.transport.close()
