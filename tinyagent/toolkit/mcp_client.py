"""The agent as an MCP client (lesson 24): a registry filled from a server's `tools/list`, each call over MCP.

    with McpConnection.stdio(**shop_server_process()) as shop:   # python -m tinyagent mcp-server, a subprocess
        tools = mcp_registry(shop)                    # a ToolRegistry: ReActAgent(llm, tools) as ever
        tools.run(Action("queryOrder", {"orderId": "88231"}))

`McpConnection` holds one session of the official SDK's `ClientSession` open on an event loop in a thread of its
own, so plain code (the loop of lesson 06) calls it like a function; `close()` ends the session and the server's
process (stdio) or HTTP session. With `record=True` it keeps every JSON-RPC message sent and received (`wire`),
as lesson 03 showed the HTTP request.

What MCP gives a client is a list of tools (name, description, JSON Schema, hints) and a way to call them. The
loop, when to stop and which calls need a yes stay the agent's: the server may ask the person through the client
(elicitation), and `ask` is how this client asks them; without `ask` the client declares no elicitation, and a
server that needs a yes must refuse.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Self

import mcp_types as types
import pydantic_core

from tinyagent.classroom.schema_filling import check_schema
from tinyagent.errors import TinyAgentError
from tinyagent.memory.run_changes import shortened
from tinyagent.registry import ToolRegistry, error_observation
from tinyagent.safe_text import one_line
from tinyagent.toolkit.action_input import read_arguments
from tinyagent.toolkit.confirmation import read_answer
from tinyagent.toolkit.validation import Problem
from tinyagent.tools import Tool

DEFAULT_TIMEOUT_S = 30.0
CLIENT_INFO = types.Implementation(name="tinyagent", version="1.0")
ECHOED_CHARS = 200  # of a bad input, in an error Observation: the shop's tools echo as much
# Of each value a server wrote in a part's one-line summary (a uri, a name, a description): as much as a bad input
# is echoed. The text of a part is not cut here: the loop cuts a whole Observation (lesson 06's cap).
SHOWN_CHARS = ECHOED_CHARS


# The codes of the errors the SDK writes itself, in the server's place, when no answer came: the pipe or the HTTP
# connection closed or an SSE stream ended (CONNECTION_CLOSED), its own timeout, a body it could not read (PARSE_ERROR),
# an HTTP error status with no JSON-RPC error in it (INTERNAL_ERROR), a page that is neither JSON nor SSE or a 202
# (INVALID_REQUEST). Once written, nothing tells them from a server's own error of the same code, so these codes all
# count as no answer: a server that sends one itself broke mid-request or could not read it, and saying "not known"
# then is only caution. A server's refusal (METHOD_NOT_FOUND, INVALID_PARAMS) or a code of its own is its answer.
NO_ANSWER_CODES = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT, types.PARSE_ERROR, types.INTERNAL_ERROR,
                             types.INVALID_REQUEST})
MAYBE_DONE = ("No answer came, so it is not known whether the server did it: it may still; check before asking for it "
              "again")


class _OneLineRecord(logging.Filter):
    """The SDK's transports log a traceback for every line a server sends that they cannot read; this client already
    says why in the error that ends the wait (`_note_unreadable`), so the record keeps one line: its message and the
    first reason."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg, record.args = f"{record.getMessage()}: {_first_reason(record.exc_info[1])}", ()
            record.exc_info = record.exc_text = None
        return True


for _transport in ("mcp.client.stdio", "mcp.client.streamable_http"):
    logging.getLogger(_transport).addFilter(_OneLineRecord())


class McpError(TinyAgentError):
    """The server could not be started or reached, or the session broke. `unanswered`: a request was sent and no
    answer came (a timeout, a broken session), so whatever it asked for may still have been done."""

    def __init__(self, message: str, *, unanswered: bool = False):
        super().__init__(message)
        self.unanswered = unanswered


def observation_from_result(result: Mapping[str, Any]) -> str:
    """What the model reads for a `tools/call` result, as JSON on the wire ({"content": [...], "isError": ...}).

    Each part in the order sent, joined by newlines (`content_text`). With "isError": true it is an error
    Observation: the text as it is when it already is a JSON object with "error", else {"error": the text}; an error
    with no text says so.
    """
    text = content_text(result.get("content") or [])
    if result.get("isError") is True and not _is_error_object(text):
        return error_observation(text or "the tool failed and said nothing")
    return text


def content_text(content: list[Mapping[str, Any]]) -> str:
    """A result's content parts as the model reads them, joined by newlines, in the order sent:

    - a "text" part: its text;
    - an embedded "resource" with text: [resource <uri>], a newline, then its text;
    - an embedded "resource" with a blob: one line, [resource <uri>, mimeType: <type>, <n> bytes, not shown], where
      n is the size of the decoded bytes ("not valid base64" when they cannot be decoded): a model reads no base64;
    - a "resource_link": one line, [resource_link <uri>, name: …, title: …, description: …, not read], each of
      the three left out when missing or empty: the client did not fetch it (resources/read would);
    - an "image", an "audio" or a part of a type not named here: [its type].

    Each value the server wrote between the brackets is `shortened(one_line(value), SHOWN_CHARS)`: a server is
    untrusted, and a line break in a resource's name must not start a line of its own (a forged "Observation:").
    """
    return "\n".join(_part_text(part) for part in content)


def _part_text(part: Mapping[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text":
        return part.get("text", "")
    if kind == "resource":
        resource = part.get("resource") or {}
        uri = _shown(resource.get("uri", ""))
        if "blob" not in resource:
            return f"[resource {uri}]\n{resource.get('text', '')}"
        mime = [f"mimeType: {_shown(resource['mimeType'])}"] if resource.get("mimeType") else []
        return f"[resource {', '.join([uri, *mime, _decoded_size(resource['blob']), 'not shown'])}]"
    if kind == "resource_link":
        said = [f"{key}: {_shown(part[key])}" for key in ("name", "title", "description") if part.get(key)]
        return f"[resource_link {', '.join([_shown(part.get('uri', '')), *said, 'not read'])}]"
    return f"[{_shown(kind)}]"


def _shown(value: object) -> str:
    """A value a server wrote, as a summary line shows it: on one line, cut to SHOWN_CHARS."""
    return shortened(one_line(str(value)), SHOWN_CHARS)


def _decoded_size(blob: object) -> str:
    """How many bytes a base64 blob holds, as base64.b64decode reads it."""
    try:
        return f"{len(base64.b64decode(blob))} bytes"  # type: ignore[arg-type]
    except (ValueError, TypeError):  # binascii.Error is a ValueError; a blob that is no text is a TypeError
        return "not valid base64"


def observation_text(result: types.CallToolResult) -> str:
    """`observation_from_result` for the SDK's own `CallToolResult`. A result whose only data is its
    structuredContent (no content parts, though the specification asks a server to send the same JSON as text
    beside it) is read as that JSON as text, not as an empty Observation."""
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not wire.get("content") and wire.get("structuredContent") is not None:
        text = json.dumps(wire["structuredContent"], ensure_ascii=False)
        wire = {**wire, "content": [{"type": "text", "text": text}]}
    return observation_from_result(wire)


def _is_error_object(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


class _Recorded:
    """A transport stream that notes each JSON-RPC message passing through it, then passes it on."""

    def __init__(self, stream: Any, wire: list[dict[str, Any]], direction: str):
        self._stream, self._wire, self._direction = stream, wire, direction

    def _note(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if message is not None:
            self._wire.append({"direction": self._direction,
                               **message.model_dump(by_alias=True, exclude_none=True, mode="json")})

    async def send(self, item: Any) -> None:
        self._note(item)
        await self._stream.send(item)

    async def receive(self) -> Any:
        item = await self._stream.receive()
        self._note(item)
        return item

    def __aiter__(self) -> _Recorded:
        return self

    async def __anext__(self) -> Any:
        item = await self._stream.__anext__()
        self._note(item)
        return item

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class McpConnection:
    """One open MCP session, usable from plain code. Make it with `stdio(...)` or `http(url)`; close it (or use
    `with`). `ask(question) -> yes/no` answers the server's elicitation questions (a person's yes); the question
    starts with the server's name ("MCP server 'shop' asks: ..."), so a person can tell who asks.
    `trust_hints`: take the server's `readOnlyHint` as the tool's `read_only` (lesson 22's search then runs such a
    tool on a branch it only explores); False, the default, as the specification advises for a server you have not
    vetted: its tools count as changing something."""

    def __init__(self, transport: Callable[[], AbstractAsyncContextManager[Any]], *, name: str = "server",
                 ask: Callable[[str], object] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 record: bool = False, trust_hints: bool = False):
        self.name = name
        self.ask = ask
        self.trust_hints = trust_hints
        self.timeout_s = timeout_s
        self.wire: list[dict[str, Any]] | None = [] if record else None
        self.server_info: types.Implementation | None = None
        self._transport = transport
        self._session: Any = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}", daemon=True)
        self._thread.start()
        self._closing: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._unreadable: Exception | None = None  # the last message from the server the SDK could not read
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        if not self._ready.wait(timeout_s) or self._failure is not None:
            why = self._failure or TimeoutError(f"no answer in {timeout_s:g} s")
            self.close()
            raise McpError(f"cannot connect to the MCP server {name!r}: {describe_failure(why)}") from None

    @classmethod
    def stdio(cls, command: str, args: list[str] | tuple[str, ...] = (), *, env: Mapping[str, str] | None = None,
              cwd: str | None = None, **options: Any) -> McpConnection:
        """Start `command args` as a subprocess and talk MCP over its stdin and stdout."""
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=command, args=list(args), env=dict(env or {}), cwd=cwd)

        @asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            # The server's stderr (its banner) is not the client's; opening the null device never waits.
            with open(os.devnull, "w") as errlog:  # noqa: ASYNC230
                async with stdio_client(params, errlog=errlog) as streams:
                    yield streams

        return cls(transport, **options)

    @classmethod
    def http(cls, url: str, **options: Any) -> McpConnection:
        """Talk MCP over Streamable HTTP to the server at `url` (e.g. http://127.0.0.1:8765/mcp)."""
        from mcp.client.streamable_http import streamable_http_client

        return cls(lambda: streamable_http_client(url), **options)

    @classmethod
    def in_process(cls, server: Any, **options: Any) -> McpConnection:
        """Talk MCP to a server object of this process (the SDK's `Server` or `MCPServer`) over in-memory streams:
        the same messages as over a pipe, without a process (the SDK's own test transport)."""
        # What the SDK's own Client(server) uses; its module is not re-exported.
        from mcp.client._memory import InMemoryTransport

        return cls(lambda: InMemoryTransport(server), **options)

    async def _hold(self) -> None:
        from mcp.client.session import ClientSession

        self._closing = asyncio.Event()
        try:
            async with self._transport() as (read, write):
                if self.wire is not None:
                    read, write = _Recorded(read, self.wire, "received"), _Recorded(write, self.wire, "sent")
                elicit = self._elicit if self.ask is not None else None
                async with ClientSession(read, write, elicitation_callback=elicit, client_info=CLIENT_INFO,
                                         read_timeout_seconds=self.timeout_s,
                                         message_handler=self._note_unreadable) as session:
                    init = await session.initialize()
                    self.server_info, self._session = init.server_info, session
                    self._ready.set()
                    await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self._failure = exc
        finally:
            self._session = None
            self._ready.set()

    async def _note_unreadable(self, message: Any) -> None:
        """The session hands over a message it could not parse (a lone surrogate, JSON nested past its limit) as an
        exception and drops it: an answer lost that way leaves its request waiting until `timeout_s`, and the error
        then should say why."""
        if isinstance(message, Exception):
            self._unreadable = message

    async def _elicit(self, context: Any, params: Any) -> types.ElicitResult:
        try:
            # Which server asks, as this client names it: any server can write "Approve refund of order 88231?"
            question = f"MCP server {self.name!r} asks: {params.message}"
            answer = read_answer(await asyncio.to_thread(self.ask, question))
        except Exception:  # noqa: BLE001 - a failure to ask is no yes
            answer = None
        if answer is None:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept", content={"approve": answer})

    def _run(self, make: Callable[[Any], Any], *, calls_tool: bool = False) -> Any:
        session = self._session
        if session is None:
            raise McpError(f"the MCP session with {self.name!r} is closed")
        self._unreadable = None
        future = asyncio.run_coroutine_threadsafe(make(session), self._loop)
        try:
            return future.result(self.timeout_s + 5)
        except Exception as exc:  # noqa: BLE001 - a timeout, a broken session: one error the tool turns into text
            future.cancel()
            lost = "" if self._unreadable is None else (
                f" (the server sent a message this client could not read, perhaps the answer: "
                f"{_first_reason(self._unreadable)})")
            unanswered = no_answer_came(exc)
            # A refund a person approved just before the time ran out, or that the server wrote before it crashed, is
            # done: say so, or the model tells the customer it failed and asks for it again. A listing changes nothing.
            unknown = f". {MAYBE_DONE}" if unanswered and calls_tool else ""
            raise McpError(f"MCP server {self.name!r}: {describe_failure(exc)}{lost}{unknown}", unanswered=unanswered) from None

    def list_tools(self) -> list[types.Tool]:
        """The server's `tools/list`, every page."""
        async def every_page(session: Any) -> list[types.Tool]:
            tools, cursor = [], None
            while True:
                page = await session.list_tools(
                    params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
        return self._run(every_page)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One `tools/call`; an error the tool reported comes back as a result with `is_error`, not raised."""
        try:
            # Written as the SDK will write the request, first: arguments it cannot write (read from JSON, they can
            # only be nested deeper than pydantic goes) failed inside the call, and were said as a request that may
            # have been done. It was never sent.
            pydantic_core.to_json(arguments)
        except ValueError:
            raise McpError(f"MCP server {self.name!r}: the arguments of {name} are nested too deeply to be sent as "
                           "JSON; nothing was sent") from None
        return self._run(lambda session: session.call_tool(name, arguments), calls_tool=True)

    def close(self) -> None:
        """End the session (and the server's process, for stdio), then the event loop's thread. Safe to repeat."""
        if self._loop.is_closed():
            return
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        try:
            self._holder.result(10)
        except Exception:  # noqa: BLE001 - closing what failed to open
            self._holder.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if self._session is not None else "closed"
        return f"<McpConnection {self.name!r} {state}>"


class McpTool(Tool):
    """A registry tool whose every call is a `tools/call` to the server that listed it."""

    def __init__(self, connection: McpConnection, listed: types.Tool, name: str | None = None):
        self.connection = connection
        self.remote_name = listed.name
        self.name = name or listed.name
        self.description = listed.description or ""
        self.parameters = dict(listed.input_schema)
        # A hint from the server, which the client cannot verify: believed only from a server the host trusts, and
        # a gate goes by its own list, never by this.
        self.read_only = connection.trust_hints and bool(listed.annotations and listed.annotations.read_only_hint)

    def invoke(self, input: str) -> str:
        arguments = read_arguments(input, self.parameters)  # lesson 07's reading of an Action Input
        if isinstance(arguments, Problem):
            return error_observation(f"invalid input for {self.name}: {arguments.message}",
                                     expected=arguments.expected, received=shortened(input, ECHOED_CHARS))
        try:
            result = self.connection.call_tool(self.remote_name, arguments)
        except McpError as exc:
            return error_observation(str(exc), tool=self.name)
        return observation_text(result)


class ToolNameClash(TinyAgentError, ValueError):
    """A name one registry of several servers' tools cannot take: two servers offer a tool of that name, two
    connections share a name, or a server offers a name the registry refuses (empty, two words, twice)."""


class UnusableToolSchema(TinyAgentError, ValueError):
    """A tool a server lists with an inputSchema a model cannot fill: a keyword of the wrong type (`"enum": null`,
    `"required": "x"`), a `$ref` that points nowhere, nesting too deep, or no value at all that fits (a required
    property whose enum is empty, `$ref`s that loop with no way out). A model's provider refuses the whole request
    that offers it (the classroom model with a 400), and the agent could only say it cannot reach the model."""


def mcp_registry(*connections: McpConnection, on_clash: str = "prefix") -> ToolRegistry:
    """One registry from the tools of one or more servers, in the servers' order then each server's.

    A name that two servers offer is ambiguous: with on_clash="prefix" each of those tools is named
    <server>_<tool> (the others keep their names), and its description says which server it is from;
    with on_clash="raise" it is a ToolNameClash naming both servers. A tool whose schema a model cannot fill (a
    required property whose enum is empty, a `$ref` to nothing) is an UnusableToolSchema naming the server, the tool
    and what is wrong where.
    """
    if on_clash not in ("prefix", "raise"):
        raise ValueError(f'on_clash must be "prefix" or "raise", got {on_clash!r}')
    names = [connection.name for connection in connections]
    if len(set(names)) < len(names):  # a clash's prefix is the server's name: two alike would route calls astray
        twice = next(name for name in names if names.count(name) > 1)
        raise ToolNameClash(f"two of the connections are named {twice!r}: give each McpConnection a name of its own "
                            "(name=...), which tells their tools apart")
    listed = [(connection, tool) for connection in connections for tool in connection.list_tools()]
    for connection, tool in listed:
        _check_schema(tool, connection)
    offers: dict[str, list[str]] = {}
    for connection, tool in listed:
        offers.setdefault(connection.name, []).append(tool.name)
    registry = ToolRegistry()
    for (connection, tool), name in zip(listed, merged_names(offers)):
        if name == tool.name:
            _register(registry, McpTool(connection, tool), connection)
            continue
        if on_clash == "raise":
            owners = [server for server, names in offers.items() if tool.name in names]
            raise ToolNameClash(f"the tool {tool.name!r} is offered by {' and '.join(owners)}: name the servers' "
                                f'tools apart, or pass on_clash="prefix"')
        renamed = McpTool(connection, tool, name=name)
        renamed.description = f"({connection.name}) {renamed.description}"
        _register(registry, renamed, connection)
    return registry


def _register(registry: ToolRegistry, tool: McpTool, connection: McpConnection) -> None:
    """Register a server's tool; a name the registry refuses (empty, two words, taken) is the server's doing, and a
    name another server's tool already holds is the doing of one of the two, which the error cannot tell."""
    try:
        registry.register(tool)
    except ValueError as exc:
        name = (tool.name or "").strip()
        other = getattr(registry.get(name), "connection", connection)
        if other is not connection:
            raise ToolNameClash(f"the MCP servers {other.name!r} and {connection.name!r} both offer a tool that "
                                f"becomes {name!r} in this registry: {exc}") from None
        raise ToolNameClash(f"the MCP server {connection.name!r} offers a tool this registry cannot take: {exc}"
                            ) from None


def _check_schema(tool: types.Tool, connection: McpConnection) -> None:
    """Refuse a tool whose inputSchema the classroom model refuses in a request's `tools` (its 400 for
    `tools[i].function.parameters` is schema_filling.check_schema's verdict, so both judge alike), as an
    UnusableToolSchema naming the server, the tool and what the check says. A schema it accepts is passed on as it
    came, odd or not: the code that reads a schema copes with it (tests/test_mcp_client.py,
    test_a_schema_the_sdk_lets_through_never_breaks_a_run)."""
    try:
        check_schema(tool.input_schema, f"the MCP server {connection.name!r} lists the tool {tool.name!r} with a "
                                         "schema no model can use")
    except ValueError as exc:
        raise UnusableToolSchema(str(exc)) from None


def merged_names(offers: Mapping[str, list[str]]) -> list[str]:
    """The names of one registry made from several servers' tools ({server: [tool names]}): every tool, the servers
    in their order and each server's tools in its order; a name only one server offers is kept, and a name two or
    more offer is kept by none of them: each becomes <server>_<name>."""
    servers_of: dict[str, int] = {}
    for names in offers.values():
        for name in dict.fromkeys(names):
            servers_of[name] = servers_of.get(name, 0) + 1
    return [name if servers_of[name] == 1 else f"{server}_{name}" for server, names in offers.items()
            for name in names]


def _first_reason(exc: Exception) -> str:
    """One line on why a message could not be read: pydantic's first error ("Invalid JSON: ...") or the text."""
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else None
    reason = str(errors[0].get("msg", "")) if errors and isinstance(errors[0], dict) else str(exc)
    return (reason.splitlines() or [type(exc).__name__])[0][:160]


def no_answer_came(exc: BaseException) -> bool:
    """Whether a request ended without the server's answer: any failure but an error whose code the SDK never makes
    up itself (NO_ANSWER_CODES)."""
    from mcp.shared.exceptions import MCPError

    first = first_failure(exc)
    return not isinstance(first, MCPError) or first.code in NO_ANSWER_CODES


def first_failure(exc: BaseException) -> BaseException:
    """anyio's task groups wrap what failed inside them: the first real failure says the most."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]
    return exc


def describe_failure(exc: BaseException) -> str:
    exc = first_failure(exc)
    return f"{type(exc).__name__}: {exc}".rstrip(": ")
