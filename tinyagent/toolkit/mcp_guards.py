"""The MCP server's guards over HTTP and stdio (lesson 24): what reaches the SDK is a request it can answer, from
this machine. mcp_server.py puts them in front of the SDK's transports.

- `LoopbackGuard` (HTTP): only programs of the account that started the server (on a machine shared by several
  accounts, such as the course's JupyterHub, another learner's program is on the same loopback), only this
  machine's Host and pages, a JSON body that arrives in time and within the SDK's limit, each refused with a JSON
  error before the SDK reads anything.
- `JsonRpcGuard` (HTTP): a request id the SDK can answer (a string or an integer), not one still in flight in the
  same session; the SDK dropped the first in silence and lost the first request's answer to the second. A batch
  (a JSON array) is refused in one sentence, where the SDK answered with a pydantic dump.
- `UnreadableLinesAnswered` (stdio): a line that is no JSON-RPC message gets a JSON-RPC error, where the SDK only
  logged it and the client waited; and JsonRpcGuard's two checks (`id_refusal`, `IdsInFlight`) hold here too.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from starlette.datastructures import Headers

from tinyagent.hosting.peer_account import accounts_can_be_told, peer_uid, scope_ends


def loopback_security(port: int) -> TransportSecuritySettings:
    """Only this machine's names in Host, and no web page's Origin but this server's own: a page elsewhere (or a
    DNS-rebinding name that points here) gets 421 or 403 before any tool runs."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=[f"{name}:{port}" for name in names],
                                     allowed_origins=[f"http://{name}:{port}" for name in names])


class LoopbackGuard:
    """ASGI middleware in front of the MCP endpoint: a request from anywhere but this machine's own pages is refused
    before the SDK reads it, with a JSON error. It must come from a program of the account that started the server
    (403, account_refusal): the server takes no key, and on a machine shared by several accounts every account's
    programs reach its port; where the system does not say whose a connection is (no /proc/net: macOS, Windows),
    any program of this machine is served. The Host must name this machine and port, in any case (a DNS-rebinding
    name pointing here is 421); an Origin, sent by every browser's cross-site POST, must be this server's, and a
    browser's Sec-Fetch-Site must not say another site (403); a POST must say application/json (415), which a page
    cannot send across sites without a preflight this server never answers, so a plain form's text/plain POST runs
    nothing. A POST's body must arrive within `body_timeout_s` (408) and hold at most the SDK's limit (413), however
    it is sent. A WebSocket handshake gets a JSON 403: the server has no WebSocket transport."""

    def __init__(self, app: Any, port: int, body_timeout_s: float):
        self.app = app
        self.settings = loopback_security(port)
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket" and "websocket.http.response" in scope.get("extensions", {}):
            # The SDK closed it before accepting, which uvicorn answered with a 403 and an empty body.
            await receive()  # websocket.connect: the handshake, which ASGI gives the app before any answer
            answer = {"error": "this MCP server speaks Streamable HTTP at /mcp, not WebSocket"}
            await send_json(send, 403, json.dumps(answer).encode(), websocket=True)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            scope = with_host_lower_cased(scope)  # the SDK compares the Host as written: LOCALHOST:port is this one too
        if refusal is None and scope["method"] == "POST":
            # The whole body is read here, so that one too large is a JSON 413 however it comes: the SDK reads it
            # too, and answers a body sent in chunks (no Content-Length) past its limit with a text 413 of its own.
            # A body that drips would hold its connection for ever: the header deadline ends with the headers.
            body = b""
            with anyio.move_on_after(self.body_timeout_s) as waiting:
                body = await read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
            if waiting.cancelled_caught:
                refusal = 408, f"the request body did not all arrive within {self.body_timeout_s:g} s"
            elif body is None:  # the client hung up before the end of it, or the server is stopping
                return
            elif len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
                refusal = 413, f"a request body may hold at most {DEFAULT_MAX_REQUEST_BODY_SIZE} bytes"
            receive = replaying(body, receive)
        if refusal is not None:
            status, message = refusal
            await send_json(send, status, json.dumps({"error": message}).encode())
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: dict) -> tuple[int, str] | None:
        refusal = account_refusal(scope)
        if refusal is not None:
            return refusal
        names = [name.decode("latin-1").lower() for name, _ in scope["headers"]]
        # Read once here and once by the SDK, a header sent twice could pass here and be refused there in plain
        # text, or the other way round: one of each is all a client needs to send.
        doubled = [name for name in ("host", "origin", "content-type") if names.count(name) > 1]
        if doubled:
            return 400, f"a request may carry one {doubled[0].title()} header, not {names.count(doubled[0])}"
        if "content-length" in names and "transfer-encoding" in names:
            # h11 reads the chunks; a proxy in front may read the length, and take this body's tail for the next
            # request (request smuggling): refused, as the service of lesson 19 and the classroom model refuse it
            return 400, ("the request gives its body's length two ways (Content-Length and Transfer-Encoding): "
                         "send exactly one")
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if headers.get("host", "").lower() not in self.settings.allowed_hosts:  # a host name has no case
            return 421, "this server answers only for 127.0.0.1, localhost and [::1] on its own port"
        if "origin" in headers and headers["origin"] not in self.settings.allowed_origins:
            return 403, "requests from other web sites are refused"
        if headers.get("sec-fetch-site", "none") not in ("same-origin", "none"):  # a browser's word, Origin or not
            return 403, "requests from other web sites are refused"
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if scope["method"] == "POST" and content_type != "application/json":
            return 415, "a POST must be JSON-RPC with Content-Type: application/json"
        # The SDK's own answers to these are text/plain (404) or no content type at all (413): said here in JSON.
        if scope["path"] != "/mcp":
            return 404, "this server answers only at /mcp (MCP's Streamable HTTP)"
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return 413, f"a request body may hold at most {DEFAULT_MAX_REQUEST_BODY_SIZE} bytes"
        return None


def account_refusal(scope: dict) -> tuple[int, str] | None:
    """Why a request is refused for the account that sent it, or None when that is the account running this server
    (hosting/peer_account.py reads it from Linux's /proc/net), or when this system does not say whose a connection
    is (no /proc/net: macOS, Windows), where any program of this machine is served."""
    ends = scope_ends(scope)
    account = peer_uid(*ends) if ends else None
    if account is None and not accounts_can_be_told():
        return None
    if account is None:  # Linux, and no established connection from it: its client has closed its end
        return 403, ("this MCP server answers only programs of the account that started it, and cannot tell which "
                     "account sent this request")
    if account != os.geteuid():
        return 403, ("this MCP server answers only programs of the account that started it, not another account "
                     "of this machine (it takes no key)")
    return None


class JsonRpcGuard:
    """ASGI middleware between LoopbackGuard and the SDK: a POST's JSON-RPC id must be one the SDK can answer.

    An id that is not a string or an integer (null, true, 1.5, an object) is refused with JSON-RPC's -32600
    (HTTP 400): the SDK took such a request for a notification, answered 202 and ran nothing, and the client
    waited for ever. So is a request whose id is still being answered in the same session (HTTP 409): the SDK
    keeps one response stream per id, and the second request took the first one's, which then waited for ever
    and held a stop until uvicorn cancelled it with a traceback."""

    def __init__(self, app: Any):
        self.app = app
        self.in_flight = IdsInFlight()  # (session, str(id)): the SDK keys a request's stream by str(id)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)  # LoopbackGuard read it: it is all here
        if body is None:
            return
        receive = replaying(body, receive)
        if is_json_array(body):  # the SDK said -32602 with a pydantic dump of what it expected
            await send_jsonrpc_error(send, 400, BATCH_REFUSED)
            return
        message = json_object(body)
        if message is None or "id" not in message:  # not JSON (the SDK's -32700), or a notification
            await self.app(scope, receive, send)
            return
        refusal = id_refusal(message)
        if refusal is not None:
            await send_jsonrpc_error(send, 400, refusal)
            return
        session = Headers(scope=scope).get("mcp-session-id")  # the first one, as the SDK reads it
        if "method" not in message or session is None or message["id"] is None:  # an answer, an error, an opening
            await self.app(scope, receive, send)
            return
        key = (session, str(message["id"]))
        refusal = self.in_flight.claim(key, message["id"])
        if refusal is not None:
            await send_jsonrpc_error(send, 409, refusal)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight.release(key)


def id_refusal(message: dict[str, Any]) -> str | None:
    """Why a JSON-RPC message's id cannot be answered (it is not a string or an integer), or None. A client's
    error may carry id null, as JSON-RPC says for an error about a message whose id could not be read."""
    if "id" not in message:
        return None
    request_id = message["id"]
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return None
    if request_id is None and "error" in message:
        return None
    return f"Invalid request: a JSON-RPC id must be a string or an integer, not {json.dumps(request_id)}"


class IdsInFlight:
    """The ids of a session's requests still being answered. A request that reuses one is refused: the SDK keeps
    one entry per id, and the second took the first one's place (its answer stream over HTTP, its cancellation
    over stdio)."""

    def __init__(self) -> None:
        self.keys: set[Any] = set()

    def claim(self, key: Any, request_id: Any) -> str | None:
        """Mark `key` in flight; or, when it already is, the refusal for the request that reused it."""
        if key in self.keys:
            return (f"Invalid request: id {json.dumps(request_id)} is already in use by a request of this session "
                    "still being answered; use a new id")
        self.keys.add(key)
        return None

    def release(self, key: Any) -> None:
        self.keys.discard(key)


# JSON-RPC batches came in MCP 2025-03-26 and went in 2025-06-18. The SDK still accepts an `initialize` at
# 2025-03-26 and answers in that version, which had them: refused here all the same, and said in mcp_server.py's
# docstring, rather than answering such an initialize with another version, which would mean reaching into the
# SDK's negotiation for a version no current client asks for.
BATCH_REFUSED = ("Invalid request: a JSON-RPC batch (an array) is not taken; this server speaks MCP 2025-06-18 and "
                 "later, which have no batches: send one message per request")


def is_json_array(body: bytes) -> bool:
    """Whether `body` is a JSON array (a JSON-RPC batch); not JSON at all is the SDK's -32700."""
    try:
        return isinstance(json.loads(body), list)
    except (ValueError, RecursionError):
        return False


def with_host_lower_cased(scope: dict) -> dict:
    """`scope` with its Host header in lower case, as LoopbackGuard compared it."""
    headers = [(name, value.lower() if name.lower() == b"host" else value) for name, value in scope["headers"]]
    return {**scope, "headers": headers}


def json_object(body: bytes) -> dict[str, Any] | None:
    """The JSON object `body` holds, or None (not JSON, too deeply nested, or not an object)."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


async def send_json(send: Any, status: int, answer: bytes, *, websocket: bool = False) -> None:
    """Answer an ASGI request with `status` and the JSON `answer`; with `websocket`, a WebSocket handshake (ASGI's
    denial response)."""
    kind = "websocket.http" if websocket else "http"
    await send({"type": f"{kind}.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]})
    await send({"type": f"{kind}.response.body", "body": answer})


async def send_jsonrpc_error(send: Any, status: int, message: str) -> None:
    """A JSON-RPC -32600 with no id, as the SDK says its own refusals."""
    error = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=types.INVALID_REQUEST,
                                                                               message=message))
    await send_json(send, status, error.model_dump_json(by_alias=True, exclude_unset=True).encode())


async def read_body(receive: Any, limit: int) -> bytes | None:
    """A request's body, read until its end or until it holds more than `limit` bytes; None if the connection
    closed first."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > limit or not message.get("more_body", False):
            return bytes(body)


def replaying(body: bytes, receive: Any) -> Any:
    """An ASGI `receive` that gives `body` whole, then what `receive` gives (a disconnect, for a stream)."""
    given = False

    async def receive_again() -> dict:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_again


class LinesKept:
    """stdin's lines as the SDK's stdio transport reads them (`async for line in ...`), each also kept in `kept`
    until UnreadableLinesAnswered reads the message the SDK made of it: the SDK takes a request whose id is null,
    a number with a fraction, a bool or an object for a notification, and only the line still shows the id."""

    def __init__(self, lines: Any):
        self.lines = lines
        self.kept: deque[str] = deque()

    def __aiter__(self) -> AsyncIterator[str]:
        return self.each()

    async def each(self) -> AsyncIterator[str]:
        async for line in self.lines:
            self.kept.append(line)
            yield line


class UnreadableLinesAnswered:
    """The stdio server's read stream, where a message the SDK would drop or misread is answered on stdout (id
    null) and not handed on:

    - a line that is not a JSON-RPC message: -32700 if it is not JSON at all (invalid UTF-8, a lone surrogate,
      nesting too deep), else -32600. The SDK's stdio transport hands such a line's error to the dispatcher,
      which only logs it, and the client waited for ever for an answer. (Over HTTP the SDK answers -32700 itself.)
    - a request whose id is not a string or an integer (-32600, as JsonRpcGuard says it over HTTP): the SDK took it
      for a notification and the client waited for ever. Read from the line, so only with `lines` (LinesKept.kept).
    - a request whose id is one still being answered (-32600, JsonRpcGuard's 409 over HTTP): the SDK answered
      it, and the first request's entry under that id was gone, so a `notifications/cancelled` for the first
      found nothing to cancel, and a yes that came later still ran a cancelled refund. The answer's id is null,
      not the reused id: the client would take an error with that id for the first request's answer.

    Write the server's answers through `answers`, which sees each request's answer and frees its id."""

    def __init__(self, read: Any, write: Any, lines: deque[str] | None = None):
        self.read = read
        self.write = write
        self.lines = lines
        self.in_flight = IdsInFlight()
        self.answers = AnswersSeen(write, self.in_flight)

    @property
    def last_context(self) -> Any:  # the sender's context, which the SDK's loop reads off its read stream
        return getattr(self.read, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self.read.receive()
            line = self.lines.popleft() if self.lines else None  # the SDK sends one item for each line it reads
            refusal = self.refusal(item, line)
            if refusal is None:
                return item
            await self.write.send(SessionMessage(refusal))

    def refusal(self, item: Any, line: str | None) -> types.JSONRPCError | None:
        """The answer that takes the place of `item` (made from `line`), or None to hand it on."""
        if isinstance(item, Exception):
            return unreadable_answer(item)
        raw = json_object(line.encode()) if line is not None else None
        refusal = id_refusal(raw) if raw is not None else None
        message = item.message
        if refusal is None and isinstance(message, types.JSONRPCRequest):
            refusal = self.in_flight.claim(str(message.id), message.id)
        if refusal is not None:
            return types.JSONRPCError(jsonrpc="2.0", id=None,
                                      error=types.ErrorData(code=types.INVALID_REQUEST, message=refusal))
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # A request the client cancelled is never answered: its id is free once the SDK has cancelled it.
            self.in_flight.release(str((message.params or {}).get("requestId")))
        return None

    async def aclose(self) -> None:
        await self.read.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AnswersSeen:
    """The stdio server's write stream: an answer to a request frees the request's id in `in_flight`."""

    def __init__(self, write: Any, in_flight: IdsInFlight):
        self.write = write
        self.in_flight = in_flight

    async def send(self, item: SessionMessage) -> None:
        await self.write.send(item)
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError) and item.message.id is not None:
            self.in_flight.release(str(item.message.id))

    async def aclose(self) -> None:
        await self.write.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def unreadable_answer(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read as a message (`exc`, its pydantic ValidationError)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(error["type"] == "json_invalid" for error in errors):
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not JSON")
    else:
        error = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid request: the line is JSON but not a "
                                                                    "JSON-RPC 2.0 message")
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
