"""A `ToolRegistry` served over the Model Context Protocol (lesson 24), on the official `mcp` SDK.

    server = registry_server(shop_registry(shop, clock))      # an mcp.server.lowlevel.Server
    python -m tinyagent mcp-server                             # over stdio: a host starts it as a subprocess
    python -m tinyagent mcp-server --port 8765                 # over Streamable HTTP on 127.0.0.1:8765/mcp

`tools/list` is made from the registry's own JSON Schemas (lesson 07), one MCP Tool per registry tool, in the
registry's order. `tools/call` runs `ToolRegistry.run`: a tool's failure (an unknown order, a bad argument) comes
back as a result with `isError: true` whose text is the error Observation the model reads (lesson 02's rule),
never as a JSON-RPC error, which is for an exchange that failed. (The specification counts an unknown tool name as
such; here it is lesson 02's error Observation too, listing the names there are, since the model wrote the name.)

A tool that changes something and is named in `needs_yes` (applyRefund) runs only after a person said yes. MCP's
way for a server to ask the person is *elicitation*: the server sends `elicitation/create` with a message and a
small form, the host shows it, and answers accept, decline or cancel. From protocol version 2026-07-28 on (the SDK
Client's default, with no `initialize`) a server sends no request of its own: the call's result is the question (an
`InputRequiredResult`), and the client sends the same call again with the answer, which counts only for the question
it answers (RegistryServer.yes_in_retry). A client that did not declare the elicitation capability cannot be asked,
so the tool does not run and the model reads why. Nor does it run when the client that made the call hangs up before
the person answers: the question is withdrawn, and a later yes finds nobody waiting for it. Who the person is and how they are asked is the host's business; the protocol only carries
the question and the answer.

Over HTTP the server answers this machine only, and on it only programs of the account that started it (on a machine
shared by several accounts, such as the course's JupyterHub, every account's programs reach its port; where the
system does not say whose a connection is, no /proc/net as on macOS or Windows, it answers them all), as
mcp_guards.LoopbackGuard checks, and bounds what one client can hold, with lesson 19's guards
(serving/connections.py): a request's headers within HEADER_TIMEOUT_S and its body within BODY_TIMEOUT_S (10 s
each), MAX_CONNECTIONS (64) held at once, more get a JSON 503; MAX_SESSIONS (100) sessions, a new one taking the
place of the one idle longest. A stop (Ctrl-C, SIGTERM) first ends every open stream. A message the SDK would drop
in silence is answered with a JSON-RPC error: an id that is neither a string nor an integer, an id still in flight
in the same session, and over stdio a line that is not a message (mcp_guards.py). A JSON-RPC batch (an array) is
refused (-32600) in every protocol version, 2025-03-26 too, the one version that had batches
(mcp_guards.BATCH_REFUSED says why).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Self, TypeVar

import anyio
import h11
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from tinyagent.errors import TinyAgentError
from tinyagent.hosting.address import listening_socket
from tinyagent.hosting.peer_account import accounts_can_be_told
from tinyagent.hosting.signals import StopSignals
from tinyagent.protocols.prompt_variants import tool_parameters
from tinyagent.registry import ToolRegistry, error_observation
from tinyagent.safe_text import json_shown
from tinyagent.serving.connections import MAX_HEADER_BYTES, GuardedH11Protocol, guarded_protocol
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.mcp_guards import (
    JsonRpcGuard,
    LinesKept,
    LoopbackGuard,
    UnreadableLinesAnswered,
    loopback_security,
)
from tinyagent.toolkit.validation import problems_in
from tinyagent.tools import Action, Tool

T = TypeVar("T")

NEEDS_YES = ("applyRefund",)
# The form the client shows the person before a NEEDS_YES tool runs (MCP elicitation): one box, Approve?, required.
# From this protocol version on, a server asks in the call's result (InputRequiredResult), not in a request of its own.
INPUT_REQUIRED_VERSION = "2026-07-28"
YES_FORM = {"type": "object", "properties": {"approve": {"type": "boolean", "title": "Approve?"}},
            "required": ["approve"]}


def input_schema(tool: Tool) -> dict[str, Any]:
    """What `tools/list` says a tool takes: the tool's own JSON Schema (lesson 07), or one required string `input`
    (prompt_variants.tool_parameters, as lesson 08's JSON tool list shows it)."""
    return tool_parameters(tool)


def mcp_tool(tool: Tool) -> types.Tool:
    """The MCP description of one registry tool: its name, description and JSON Schema, and what it changes."""
    hints = types.ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=False if tool.read_only else None)
    return types.Tool(name=tool.name, description=tool.description, input_schema=input_schema(tool),
                      annotations=hints)


def registry_input(tool: Tool | None, arguments: dict[str, Any] | None) -> Any:
    """What the registry gets for an MCP call's arguments: the object itself, or a free-text tool's one string.

    A tool with no schema takes one free-text input (tools.py); over MCP that text is its one argument, `input`."""
    arguments = arguments or {}
    if tool is not None and tool.parameters is None:
        return str(arguments.get("input", ""))
    return arguments


def mcp_error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class RegistryServer:
    """The handlers of an MCP server whose tools are a registry's. `server` is the SDK's low-level Server.

    A call runs in a worker thread, so a slow tool does not hold up the server's other sessions; the shop's tools
    may run side by side (the shop holds a lock around its database).
    """

    def __init__(self, registry: ToolRegistry, *, name: str = "bitmall-shop", needs_yes: Iterable[str] = NEEDS_YES):
        self.registry = registry
        self.needs_yes = tuple(needs_yes)
        self.question_key = secrets.token_bytes(32)  # signs the questions it asks at 2026-07-28 (yes_in_retry)
        self.server = Server(name, version="1.0", on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                             instructions="The Bit Mall (比特严选) shop's after-sales tools.")

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """Every tool, on one page: no result carries a `nextCursor`, so any cursor a client sends is one this server
        never gave, -32602 as MCP's pagination says (it was answered with the whole list again)."""
        if params is not None and params.cursor is not None:
            raise MCPError(code=types.INVALID_PARAMS, message="invalid cursor: this server lists all its tools on "
                                                              "one page and gives no cursor")
        return types.ListToolsResult(tools=[mcp_tool(tool) for tool in self.registry])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
        tool = self.registry.get(params.name)
        problems = problems_in(params.arguments or {}, tool.parameters) if tool and tool.parameters else []
        if problems:  # refused before anyone is asked: a person's yes must be to the call that runs, all of it
            return mcp_error_result(error_observation(
                f"invalid arguments for {params.name}: " + "; ".join(problem.message for problem in problems),
                field=problems[0].field, expected=problems[0].expected))
        if tool is not None and params.name in self.needs_yes:
            refusal = self.cannot_ask(ctx, params.name)
            if refusal is None and is_version_at_least(ctx.protocol_version or "", INPUT_REQUIRED_VERSION):
                refusal = self.yes_in_retry(params)
            elif refusal is None:
                refusal = await self.ask_for_yes(ctx, params)
            if isinstance(refusal, types.InputRequiredResult):
                return refusal
            if refusal is not None:
                return mcp_error_result(refusal)
        action = Action(params.name, registry_input(tool, params.arguments))
        result = await anyio.to_thread.run_sync(self.registry.run, action)
        return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.error)

    def cannot_ask(self, ctx: Any, name: str) -> str | None:
        """The Observation for a client that cannot ask a person (it declared no elicitation), or None."""
        capabilities = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        if ctx.session.check_client_capability(capabilities):
            return None
        return error_observation(f"{name} needs a person's yes, and this client cannot ask one (it did not "
                                 "declare MCP elicitation): nothing was done", tool=name)

    def yes_in_retry(self, params: types.CallToolRequestParams) -> str | types.InputRequiredResult | None:
        """The 2026-07-28 way to ask, where a server cannot send a request of its own: the call's result is the
        question (`InputRequiredResult`), and the client asks the person and sends the same call again with the
        answer (`input_responses`). None when the answer is a yes to this very question, the Observation why not
        when it is another answer; the question again when there is no answer, or one to another question. The
        `request_state` that comes back names the question it answers (other arguments are another question),
        signed with a key of this server's: a client cannot make it up and send a yes to a question it was never
        asked, or one another server asked. (Nor can any token show that a person answered: a host that got the
        question can answer it itself. Which programs may call at all is LoopbackGuard's part.)"""
        question = yes_question(params)
        shown = hmac.new(self.question_key, question.encode(), hashlib.sha256).hexdigest()
        answer = (params.input_responses or {}).get("approve")
        echoed = (params.request_state or "").encode("utf-8", "surrogatepass")  # compare_digest takes str in ASCII only
        if not isinstance(answer, types.ElicitResult) or not hmac.compare_digest(echoed, shown.encode()):
            form = types.ElicitRequestFormParams(message=question, requested_schema=YES_FORM)
            return types.InputRequiredResult(input_requests={"approve": types.ElicitRequest(params=form)},
                                             request_state=shown)
        return said_yes(params.name, answer)

    async def ask_for_yes(self, ctx: Any, params: types.CallToolRequestParams) -> str | None:
        """Ask the person through the client (elicitation); None when they said yes, else the Observation why not."""
        name = params.name
        caller = ctx.request if isinstance(ctx.request, Request) else None  # the HTTP request; None over stdio
        try:
            answer = await while_caller_waits(caller, partial(
                ctx.session.elicit_form, yes_question(params), YES_FORM, related_request_id=ctx.request_id))
        except Exception as exc:  # noqa: BLE001 - a host that fails to ask is a no, said to the model
            # the cause's own words only: an SDK class's name (NoBackChannelError) tells the model nothing
            reason = _first_cause(exc).split(": ", 1)[-1] or "no reason given"
            return error_observation(f"{name} needs a person's yes, and asking failed: {reason}", tool=name)
        # The answer to this call goes back on its request's stream: with the stream gone (the client hung up while
        # the person read the question), a yes would change the shop in a call whose result nobody reads.
        if answer is None or (caller is not None and await caller.is_disconnected()):
            return error_observation(f"the client that called {name} hung up before the person answered: {name} "
                                     "was not run", tool=name)
        return said_yes(name, answer)


def yes_question(params: types.CallToolRequestParams) -> str:
    """What the person is asked before `params` runs: the tool and all its arguments."""
    # json_shown: a bidi override in an argument would reorder what the person reads
    return f"Allow {params.name} {json_shown(params.arguments or {})}?"


def said_yes(name: str, answer: types.ElicitResult) -> str | None:
    """None when the person's `answer` is yes, else the Observation that says what they did."""
    if answer.action == "accept" and (answer.content or {}).get("approve") is True:
        return None
    said = "declined" if answer.action != "cancel" else "dismissed the question"
    return error_observation(f"the person {said}: {name} was not run", tool=name)


CALLER_CHECK_S = 0.2  # how often a question to a person looks whether the client that is waiting is still there


async def while_caller_waits(caller: Request | None, asking: Callable[[], Awaitable[T]]) -> T | None:
    """What `asking()` gives, or None as soon as the HTTP request `caller` is gone (its client hung up), `asking`
    then cancelled: an answer that comes later finds nobody waiting for it. (Its error comes in an ExceptionGroup.)

    The SDK gives a handler no sign that its request's stream closed (only a client's `notifications/cancelled`
    cancels it), so this asks Starlette's `is_disconnected`. Over stdio (`caller` None) a client that leaves
    closes the whole session, which ends every handler."""
    if caller is None:
        return await asking()
    given: list[T] = []
    async with anyio.create_task_group() as waiting:
        async def ask() -> None:
            given.append(await asking())
            waiting.cancel_scope.cancel()

        waiting.start_soon(ask)
        while not await caller.is_disconnected():
            await anyio.sleep(CALLER_CHECK_S)
        waiting.cancel_scope.cancel()
    return given[0] if given else None


def registry_server(registry: ToolRegistry, **options: Any) -> Server:
    """An MCP server (the SDK's low-level `Server`) listing and calling the tools of `registry`."""
    return RegistryServer(registry, **options).server


def shop_server_process(*options: str) -> dict[str, Any]:
    """How to start `python -m tinyagent mcp-server OPTIONS` of this very package, as a host's MCP settings hold it:
    {"command": ..., "args": [...], "env": {...}}. The environment names the folder this `tinyagent` came from,
    so the server runs the same code as its client, installed or not."""
    folder = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(dict.fromkeys([folder, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
    return {"command": sys.executable, "args": ["-m", "tinyagent", "mcp-server", *options], "env": {"PYTHONPATH": path}}


# The limits of the HTTP server. It listens on 127.0.0.1 only, for a learner's few clients (a notebook, an
# inspector, an editor), each holding a session and a connection or two. Every client comes from 127.0.0.1, so the
# service's per-client cap (serving/connections.py) is the cap on everyone here.
HEADER_TIMEOUT_S = 10.0  # a connection that has not sent a whole request line and headers by then is closed
BODY_TIMEOUT_S = 10.0  # and a body that has not all arrived this long after its headers is a JSON 408
MAX_CONNECTIONS = 64  # held at once, well under a common descriptor limit (ulimit -n 1024); more get a JSON 503
# Sessions open at once. Each `initialize` opens one, and the SDK's defaults (10,000, each kept 30 minutes idle)
# let one client fill them in seconds and lock every new client out for half an hour. Here a new session takes
# the place of the one idle longest when they are all open (McpSessions): a new client always gets in, and an
# idle client that lost its session gets a 404 and initializes again, as the specification says it must. The
# 30-minute idle timeout stays: a learner reading between two cells keeps their session. A session with a
# request in flight (an open GET stream) is never closed for room; at most MAX_CONNECTIONS of them can be, so
# at least the rest are idle and can give their place.
MAX_SESSIONS = 100


class McpHttpServer:
    """The server over Streamable HTTP at http://127.0.0.1:<port>/mcp (this machine only, and on it the programs of the
    account that started it: mcp_guards.LoopbackGuard), run by uvicorn in a thread of its own.

    `port=0` takes a free port (read `port` after the start). `stop()` ends it and waits; also a context manager.
    The keyword limits default to the ones above.
    """

    def __init__(self, registry: ToolRegistry, port: int = 0, *, header_timeout_s: float = HEADER_TIMEOUT_S,
                 body_timeout_s: float = BODY_TIMEOUT_S, max_connections: int = MAX_CONNECTIONS,
                 max_sessions: int = MAX_SESSIONS, **options: Any):
        try:
            self._socket = listening_socket("127.0.0.1", port)
        except OSError as exc:
            raise TinyAgentError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
        self.port = self._socket.getsockname()[1]
        self.sessions = McpSessions(registry_server(registry, **options), max_sessions=max_sessions,
                                    security_settings=loopback_security(self.port))
        protocol = guarded_protocol(header_timeout_s, max_connections, max_connections, McpH11Protocol,
                                    end_sessions=self.sessions.end_all)
        app = LoopbackGuard(JsonRpcGuard(self.sessions.asgi()), self.port, body_timeout_s)
        config = uvicorn.Config(app, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=2, http=protocol,
                                h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                                # asyncio accepts up to `backlog` waiting connections in one go, before any is
                                # refused and closed: with uvicorn's 2048, a burst of them ran out of descriptors
                                # anyway, and each accept that failed logged a traceback.
                                backlog=max_connections,
                                # Told, so uvicorn's log formatter does not ask sys.stdout.isatty(): with stdout
                                # closed (`mcp-server --port 0 >&-`) sys.stdout is None and its logging fails.
                                use_colors=sys.stdout is not None and sys.stdout.isatty())
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, kwargs={"sockets": [self._socket]},
                                        name="mcp-http", daemon=True)
        self._thread.start()
        while not self._uvicorn.started:  # uvicorn sets it once the app's lifespan (the session manager) is up
            if not self._thread.is_alive():
                self._socket.close()
                raise TinyAgentError("the MCP server stopped while it started (see the log above)")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class McpSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, with two changes: at `max_sessions`, a new session closes the one idle longest
    (MAX_SESSIONS says why), and `end_all` ends every session at once, its open streams with it, for the stop.

    Both close a session the way the SDK's own idle timeout does, by cancelling the session's `idle_scope`: its
    server task then ends and forgets it, and its streams end. The SDK keeps its sessions in `_server_instances`
    and admits one in `_admit_session` (mcp 2.3); tests/test_mcp_server.py fails if that changes."""

    def _admit_session(self, requestor: Any) -> Any:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._close_longest_idle()
        return super()._admit_session(requestor)

    def _close_longest_idle(self) -> None:
        # An idle session's deadline is when its idle timeout would close it; one serving a request has none (inf).
        idle = {session_id: transport.idle_scope.deadline for session_id, transport in self._server_instances.items()
                if transport.idle_scope is not None and transport.idle_scope.deadline != math.inf}
        if idle:
            session_id = min(idle, key=idle.__getitem__)
            transport = self._server_instances.pop(session_id)  # its place is free now: its task ends it soon
            self._session_owners.pop(session_id, None)
            transport.idle_scope.cancel()

    def end_all(self) -> None:
        """End every session and its streams (an open GET stream, a POST's answer under way): the server stops.
        Called on the event loop, once for each open connection; the later calls find nothing left to end."""
        for transport in list(self._server_instances.values()):
            if transport.idle_scope is not None:
                transport.idle_scope.cancel()

    def asgi(self) -> Any:
        """The app to serve: this manager at /mcp, run for the app's lifespan (what the SDK's streamable_http_app
        builds around its own manager)."""
        return Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(self))], lifespan=self.lifespan)

    @asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """This manager, run for the app's life. At the stop its sessions end first, while it still runs: a
        request still in flight with no connection left to end it (a question its client hung up on) is cancelled
        with the session's writer still there. Cut off with the manager instead, its last writes waited 6 s
        for a writer that was gone ("courtesy cancel ... gave up")."""
        async with self.run():
            yield
            self.end_all()
            with anyio.move_on_after(1):  # each session's task forgets it as it ends
                while self._server_instances:
                    await anyio.sleep(0.01)


class McpH11Protocol(GuardedH11Protocol):
    """The service's guarded h11 protocol (lesson 19: a deadline for each request's headers, a cap on connections
    held), with this server's errors, `{"error": "..."}`, and a stop that ends what would otherwise run out
    uvicorn's grace and be cancelled with a traceback: every open stream (`end_sessions`), and a request whose
    body is still arriving, which gets a 503."""

    def __init__(self, *args: Any, end_sessions: Callable[[], None], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.end_sessions = end_sessions

    name = "this MCP server"

    def refusal_body(self, code: str, message: str) -> dict[str, Any]:
        return {"error": message}  # this server's shape, for its refusals and its 400

    def shutdown(self) -> None:
        self.end_sessions()
        if self.cycle is not None and not self.cycle.response_started and self.conn.their_state is h11.SEND_BODY:
            # LoopbackGuard waits for the rest of the body, which may never come: end the wait (it then finds the
            # connection gone and runs nothing).
            self._refuse(503, "Service Unavailable", "stopping",
                         "this MCP server is stopping: the request was not run")
        super().shutdown()  # which closes a connection it has answered


def serve_stdio(registry: ToolRegistry, **options: Any) -> None:
    """Serve over this process's stdin and stdout until the client closes them (how a host runs a local server)."""
    server = registry_server(registry, **options)

    async def main(lines: LinesKept) -> None:
        async with stdio_server(stdin=lines) as (read, write):
            read = UnreadableLinesAnswered(read, write, lines.kept)
            await server.run(read, read.answers, server.create_initialization_options())

    # stdin read here, not by the SDK, so that each line is kept for UnreadableLinesAnswered (LinesKept says why);
    # closefd=False: closing this reader leaves the process's stdin open. The SDK still claims stdout.
    with open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False) as stdin:
        anyio.run(main, LinesKept(anyio.wrap_file(stdin)))


class StdioUnusable(TinyAgentError):
    """The stdio server cannot speak: stdin or stdout is closed, or writing an answer failed."""


def _serve_stdio_keeping_failure(registry: ToolRegistry, failed: list[BaseException]) -> None:
    """serve_stdio, in the server's thread: what stopped it with an error goes into `failed`, not to a traceback."""
    try:
        serve_stdio(registry)
    except Exception as exc:  # noqa: BLE001 - said by serve_mcp in one line, with the exit code
        failed.append(exc)


def _first_cause(exc: BaseException) -> str:
    """The first error inside `exc` (anyio wraps a task's error in an ExceptionGroup), as a few words."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"


def serve_mcp(db: str, clock: Any, port: int | None = None) -> str:
    """`python -m tinyagent mcp-server`: the shop's tools, until the client hangs up (stdio) or SIGINT/SIGTERM.

    On stdio the banner goes to stderr: stdout carries the protocol and nothing else. Returns what stopped it.
    """
    if port is None and (sys.stdin is None or sys.stdout is None):  # started with one closed (<&- or >&-): said
        # before the shop's file is made, which no server would then use
        raise StdioUnusable("stdin or stdout is closed: an MCP client writes requests to the one and "
                            "reads answers from the other; run it from an MCP host, or give --port")
    with StopSignals() as stop, Shop(db, clock=clock) as shop:  # handlers first: no signal is lost at the start
        registry = shop_registry(shop, clock)
        if port is None:
            print("MCP server on stdio: the shop's tools; stop it by closing stdin, Ctrl-C or SIGTERM",
                  file=sys.stderr, flush=True)
            failed: list[BaseException] = []
            thread = threading.Thread(target=_serve_stdio_keeping_failure, args=(registry, failed), name="mcp-stdio",
                                      daemon=True)
            thread.start()
            # The stdio server ends when the client closes stdin; a signal ends the wait instead, and the
            # thread blocked on stdin goes with the process.
            while thread.is_alive() and not stop.stop_requested:
                thread.join(0.2)
            if failed:
                raise StdioUnusable(f"the answers could not be written to stdout ({_first_cause(failed[0])}): the "
                                    "client that reads them has gone, or stdout is a full disk")
            return stop.received.name if stop.received else "stdin closed"
        with McpHttpServer(registry, port) as server:
            who = ("this machine only, programs of this account" if accounts_can_be_told() else
                   "this machine only, programs of every account: this system does not say whose a connection is")
            print(f"MCP server on {server.url} (Streamable HTTP, {who}). Press Ctrl-C to stop.", flush=True)
            return stop.wait()
