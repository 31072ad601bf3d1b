"""The web app: the shop agent behind HTTP, its trace as JSON or as Server-Sent Events, and the trace page.

    POST /agent/invoke   {"query": "...", "session_id": "..."?}  -> the answer and the whole trace, as JSON
    POST /agent/stream   {"query": "...", "session_id": "..."?}  -> the same run's events as Server-Sent Events
                         (with Last-Event-ID: the rest of a stream whose connection dropped; streams.py)
    GET  /agent/sessions/{session_id}                             -> the session's turns so far
    POST /agent/sessions/{session_id}/turns/{turn}/continue  {"step": n, "reply": "..."} or {"step": n,
                         "retry": true, "input": "..."?}  -> a turn's run continued from a person's edit of round n
                         (edit its Thought, or run its tool again), as Server-Sent Events (edits.py)
    GET  /agent/approvals                                         -> the refunds waiting for a yes (operator only)
    POST /agent/approvals/{approval_id}  {"approve": true|false}  -> the answer to one (operator only; approvals.py)
    GET  /                                                        -> the trace page (page/index.html)
    GET  /health                                                  -> {"status": "ok", runs under way, ...}
    GET  /openapi.json, GET /docs                                 -> these routes described (openapi.py)
    POST /v1/chat/completions, GET /v1/models                     -> the same agent behind OpenAI's chat API
                         (openai_chat.py)

Why Starlette (and not FastAPI): the service has a dozen routes, three of them able to stream, and its errors must be
the course's own one-line JSON. FastAPI would add pydantic and its own error bodies for validation, which
would have to be replaced anyway; Starlette is the routing and the streaming response FastAPI is built on,
and nothing more. uvicorn runs it (uvicorn_server.py).

Every failure a client can cause is a JSON body `{"error": {"code": "...", "message": "..."}}` with the fitting
status (400, 401, 403, 404, 405, 408, 409, 413, 415, 503, 504, ...), never a traceback. A tool that fails in the
middle of a run is not one of them: the loop turns it into an error Observation (lesson 02), the model reads it,
and the answer comes back with status 200 and the trace that shows it.

Who may do what (check_client, check_operator below): a *client* (the customer's app, with `--api-key` when the
service has one; with none, any program the host check lets in, but of this machine only those of the account that
started the service) runs the agent and reads or continues only the sessions whose ids it was given; the *operator*
(a person of the shop, with `--operator-key`; with no key at all, a program of the account that started the service,
calling it from this very machine) alone lists and answers the refunds waiting for a yes. On a machine shared by
several accounts, such as the course's JupyterHub, another learner is neither: her program gets a 403 on every route
that runs the agent or reads what it did. Which account called is read from Linux's /proc/net
(hosting/peer_account.py); where it cannot be told (another system), every program the host check lets in is a
client, and only --operator-key makes an operator. A session id is handed only to the request that started the
session, an approval id only to its own run's stream and to the operator: neither is ever shown to anyone else.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import threading
import uuid
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tinyagent.chat_result import NotJsonNumber
from tinyagent.editable_trace import EditError
from tinyagent.errors import TinyAgentError, first_line
from tinyagent.hosting.peer_account import accounts_can_be_told, peer_is_here, peer_uid, scope_ends, unmapped
from tinyagent.hosting.request_heads import host_name, other_site, request_json
from tinyagent.number_checks import ascii_number
from tinyagent.safe_text import replace_lone_surrogates
from tinyagent.serving import edits, openai_chat
from tinyagent.serving.approvals import new_run_id
from tinyagent.serving.connections import client_key
from tinyagent.serving.openapi import docs_page, openapi_document
from tinyagent.serving.service import AgentService, RunCancelled, RunOutcome
from tinyagent.serving.stopping import STATE_KEY, ServiceStop
from tinyagent.serving.streams import GRACE_SECONDS, RunStreams
from tinyagent.tools import RepeatedKey

log = logging.getLogger("tinyagent.serving")

SESSION_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
MAX_QUERY_CHARS = 4000
FIELDS = ("query", "session_id")
STARTED = openai_chat.now()  # "created" of the one model /v1/models lists
BODY_TIMEOUT_S = 10.0  # a question's body is a few hundred bytes: this is for clients that never finish
STOP_WAIT_S = 10.0  # a run told to stop stops at its next event: how long a 504 waits to say what it had done


class ApiError(Exception):
    """A request the service refuses, with its status, a code a program can test and a sentence for a person."""

    def __init__(self, status: int, code: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def stopped_message(stopped: RunCancelled, what: str) -> str:
    """What a client is told of a run that was stopped: `what`, and either that nothing was done or the changes
    it had made (a refund written after a person's yes), which the session's turn keeps too."""
    if not stopped.changes:
        return f"{what}: nothing was done; ask again in a moment"
    kept = f" (kept as turn {stopped.turn} of the session)" if stopped.turn else ""
    return stopped.said(f"{what}{kept}")


def error_response(status: int, code: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def create_app(service: AgentService, *, owns_service: bool = False, listen_host: str | None = None):
    """The Starlette app around `service`. With `owns_service`, the app closes it when the server stops.
    Without an API key it answers only loopback names, `config.allowed_hosts` and `listen_host` (HostCheck)."""

    streams = RunStreams(service)
    stop = ServiceStop(service, streams)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield {STATE_KEY: stop.begin}  # what the server calls as it starts to stop (stopping.py)
        stop.end_now()
        if owns_service:
            await asyncio.get_running_loop().run_in_executor(None, service.close)

    async def invoke(request: Request) -> Response:
        check_client(request, service)
        check_not_cross_site(request)
        query, session_id = read_question(await read_json_body(request, service.config.max_body_bytes, stop.begun))
        await check_session(service, session_id)
        outcome = await finished_run(request, query, session_id)
        return JSONResponse(outcome_json(outcome, trace=True), headers=served_by())

    async def finished_run(request: Request, query: str, session_id: str | None,
                           history: list[dict] | None = None) -> RunOutcome:
        """Run the agent in the pool and wait for its outcome, turning what can go wrong into a JSON error.
        A client that hangs up meanwhile stops the run: its refund, if one waits for a yes, is declined, since
        nobody could be told it was made (the stream does the same once its resume grace is over)."""
        cancelled, run_id = threading.Event(), new_run_id()
        future = service.submit(query, session_id, cancelled=cancelled, run_id=run_id, history=history,
                                client=client_of(request))
        waited = asyncio.wrap_future(future)
        waited.add_done_callback(lambda done: done.cancelled() or done.exception())  # read, even if nobody waits
        gone = asyncio.ensure_future(client_gone(request))
        try:
            done, _ = await asyncio.wait({waited, gone}, timeout=service.config.longest_run_s + GRACE_SECONDS,
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server stops while the run goes on (a refund waiting for a person)
            cancelled.set()
            service.approvals.abandon(run_id, "the service stopped")
            raise ApiError(503, "stopping", "the service is stopping, and the run was stopped before its answer; "
                           "whatever it had done by then (a refund a person approved) stands: check before asking "
                           "again") from None
        finally:
            gone.cancel()
        if waited in done:
            try:
                return waited.result()
            except TinyAgentError as exc:  # the session store or the shop failed (a database that went away)
                raise ApiError(503, "unavailable", first_line(exc)) from None
            except RunCancelled as stopped:  # the service is stopping: the run was stopped before its end
                raise ApiError(503, "stopping", stopped_message(stopped, "the service is stopping, and the run was "
                               "stopped before it ended")) from None
        cancelled.set()
        if gone in done:  # nobody is left to read the answer: this response goes nowhere
            service.approvals.abandon(run_id, "the client went away")
            raise ApiError(499, "client_gone", "the client went away before the answer: the run was stopped, and "
                           "a refund waiting for a yes was declined")
        service.approvals.abandon(run_id, "the run took too long")
        said = service.config.too_long()
        # It stops at its next event; what it had changed by then (a refund approved earlier) is said too.
        ended, _ = await asyncio.wait({waited}, timeout=STOP_WAIT_S)
        if ended and not waited.cancelled() and isinstance(waited.exception(), RunCancelled):
            said = stopped_message(waited.exception(), said)
        raise ApiError(504, "timeout", f"{said}; ask a simpler question, or start the service with a larger "
                       "--timeout")

    async def chat_completions(request: Request) -> Response:
        """OpenAI's Chat Completions API over the agent (openai_chat.py): any chat client can ask the shop."""
        check_client(request, service)
        check_not_cross_site(request)
        data = await read_json_body(request, service.config.max_body_bytes, stop.begun, fields=openai_chat.ACCEPTED,
                                    example='{"model": "tinyagent-shop", "messages": [{"role": "user", '
                                            '"content": "..."}]}')
        try:
            query, history, stream = openai_chat.read_chat_request(data)
            limit = openai_chat.answer_limit(data)
        except openai_chat.ChatRequestError as exc:
            status = 404 if exc.code == "model_not_found" else 400
            raise ApiError(status, exc.code, str(exc)) from None
        check_question_text(query, "the last user message")  # the same limits as the agent's own routes
        outcome = await finished_run(request, query, None, history)
        completion_id, created = f"chatcmpl-{uuid.uuid4().hex}", openai_chat.now()
        answer, finish = openai_chat.cut_answer(outcome.result.answer, limit)
        usage = openai_chat.usage_of(outcome.result)
        extra = openai_chat.extra_json(outcome_json(outcome, trace=True))
        if not stream:
            return JSONResponse(openai_chat.completion_json(completion_id, created, answer, usage, extra, finish),
                                headers=served_by())
        options = data.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        events = openai_chat.completion_chunks(completion_id, created, answer, usage, extra, include_usage, finish)
        return StreamingResponse(iter(events), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", **served_by()})

    async def models(request: Request) -> Response:
        check_client(request, service)
        return JSONResponse(openai_chat.models_json(STARTED))

    async def approvals(request: Request) -> Response:
        check_operator(request, service)
        return JSONResponse({"pending": service.approvals.pending()})

    async def approve(request: Request) -> Response:
        check_operator(request, service)
        check_not_cross_site(request)
        data = await read_json_body(request, service.config.max_body_bytes, stop.begun, fields=("approve",),
                                    example='{"approve": true}')
        approve = data.get("approve")
        if not isinstance(approve, bool):
            raise ApiError(400, "bad_answer", '"approve" must be true (run the tool) or false (decline it)')
        approval = request.path_params["approval_id"]
        decision = service.approvals.answer(approval, approve)
        if decision is None:
            raise ApiError(404, "unknown_approval", f"no request {approval[:80]!r} is waiting for an answer: its "
                           "run may be over (GET /agent/approvals lists those that wait)")
        answer = {"approval_id": approval, "outcome": decision.outcome, "by": decision.by}
        wanted = "approved" if approve else "declined"
        if decision.outcome != wanted:  # an earlier answer, or the time limit, decided it first
            raise ApiError(409, "already_decided", f"this request was already decided: {decision.outcome} "
                           f"({decision.by}); a later answer does not change it")
        return JSONResponse(answer)

    async def stream(request: Request) -> Response:
        check_client(request, service)
        check_not_cross_site(request)
        last_event_id = request.headers.get("last-event-id")
        if last_event_id is not None:  # a client coming back after its connection dropped (streams.py)
            found = streams.resume(last_event_id)
            if found is None:
                raise ApiError(404, "unknown_stream", "no stream to resume from that Last-Event-ID: it is over (or "
                               "was never issued); send the question again without the header")
            events = found[0].events(found[1])
        else:
            query, session_id = read_question(await read_json_body(request, service.config.max_body_bytes, stop.begun))
            await check_session(service, session_id)
            session_id = session_id or uuid.uuid4().hex  # known now, so the first event can name it
            events = streams.start(query, session_id, outcome_json, client=client_of(request)).events()
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **served_by()})

    async def continue_turn(request: Request) -> Response:
        """A stored turn's run, continued from a person's edit of one round (edits.py): streamed like /agent/stream."""
        check_client(request, service)
        check_not_cross_site(request)
        data = await read_json_body(request, service.config.max_body_bytes, stop.begun, fields=edits.FIELDS,
                                    example='{"step": 1, "reply": "Thought: ...\\nAction: ...\\nAction Input: ..."}')
        session_id, turn = request.path_params["session_id"], request.path_params["turn"]
        await check_session(service, session_id)
        if service.config.team:  # a team's trace holds several agents' rounds: an edit names one agent's loop only
            raise ApiError(409, "edits_need_one_agent", "this service answers with a team of agents (--team); a "
                           "person's edit continues a single agent's run: start the service without --team")
        number = ascii_number(turn, most_digits=9)
        trace = service.traces.get(session_id, number) if number is not None else None
        if trace is None:
            raise ApiError(404, "unknown_turn", f"turn {turn[:20]!r} of this session is not kept here: only the last "
                           f"{edits.KEEP} turns this process ran can be continued; ask the question again")
        try:
            edit = edits.read_edit(data, trace)
        except EditError as exc:
            raise ApiError(400, "bad_edit", str(exc)) from None
        events = streams.start(edit.question, session_id, outcome_json, edit, client_of(request)).events()
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **served_by()})

    async def session_turns(request: Request) -> Response:
        check_client(request, service)
        session_id = request.path_params["session_id"]
        await check_session(service, session_id)
        turns = await asyncio.get_running_loop().run_in_executor(None, service.store.turns, session_id)
        return JSONResponse({"session_id": session_id, "turns": [
            {"number": t.number, "question": t.question, "answer": t.answer, "reason": t.reason,
             "rounds": t.rounds, "tools": list(t.tools)} for t in turns]})

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE, headers=PAGE_HEADERS)

    document = openapi_document()
    docs = docs_page(document)
    docs_headers = page_headers(docs)

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def docs_html(request: Request) -> Response:
        return HTMLResponse(docs, headers=docs_headers)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", **service.counts}, headers=served_by())

    async def refused(request: Request, exc: ApiError) -> Response:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        # Starlette's own refusals (no such route, a method the route does not take), in the same JSON.
        if exc.status_code == 405:
            allowed = exc.headers.get("Allow", "") if exc.headers else ""
            return error_response(405, "method_not_allowed", f"{request.method} is not allowed on "
                                  f"{request.url.path}; use {allowed or 'another method'}", exc.headers)
        if exc.status_code == 404:
            return error_response(404, "not_found", f"no such endpoint: {request.url.path} (see GET / for the page, "
                                  "POST /agent/invoke, POST /agent/stream, GET /docs)")
        return error_response(exc.status_code, "http_error", str(exc.detail))

    async def crashed(request: Request, exc: Exception) -> Response:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "the service failed on this request; its log says why")

    routes = [
        Route("/", page, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs_html, methods=["GET"]),
        Route("/agent/invoke", invoke, methods=["POST"]),
        Route("/agent/stream", stream, methods=["POST"]),
        Route("/agent/sessions/{session_id}", session_turns, methods=["GET"]),
        Route("/agent/sessions/{session_id}/turns/{turn}/continue", continue_turn, methods=["POST"]),
        Route("/agent/approvals", approvals, methods=["GET"]),
        Route("/agent/approvals/{approval_id}", approve, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ]
    starlette = Starlette(routes=routes, lifespan=lifespan, exception_handlers={
        ApiError: refused, HTTPException: http_error, Exception: crashed})
    # Starlette's default answers "/health/" with a redirect to "/health" on whatever host the request named (an
    # empty body, and a Location a client never asked for): here it is the JSON 404 of any other unknown path.
    starlette.router.redirect_slashes = False
    app = OneBodyLength(NoWebSockets(starlette))
    if service.config.api_key:
        return app
    return HostCheck(app, {*LOOPBACK_NAMES, *service.config.allowed_hosts, *([listen_host] if listen_host else [])})


class NoWebSockets:
    """A WebSocket handshake, on any path, is refused with a JSON 403 like every other refusal: the service has no
    WebSocket route (POST /agent/stream streams a run as server-sent events). Starlette closed it before accepting,
    which uvicorn answers with a 403 and an empty body; ASGI's denial response (which every uvicorn WebSocket
    implementation offers) lets the app say why instead."""

    def __init__(self, app):
        self.app = app

    def __getattr__(self, name: str):  # the app's own attributes (its routes, for the OpenAPI document)
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket" and "websocket.http.response" in scope.get("extensions", {}):
            await receive()  # websocket.connect: the handshake, which ASGI gives the app before any answer
            response = error_response(403, "no_websocket", "this service does not speak WebSocket: call its HTTP "
                                      "routes (POST /agent/stream streams a run as server-sent events)")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class OneBodyLength:
    """A request that gives its body's length two ways, Content-Length and Transfer-Encoding, is refused (400).

    h11 reads the chunks and lets the length go; a proxy in front may read the length instead, and then what it
    takes for the client's next request is the tail of this one (request smuggling). The classroom model refuses
    the same request."""

    def __init__(self, app):
        self.app = app

    def __getattr__(self, name: str):  # the app's own attributes (its routes, for the OpenAPI document)
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            names = {name for name, _ in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                response = error_response(400, "ambiguous_body_length", "the request gives its body's length two "
                                          "ways (Content-Length and Transfer-Encoding): send exactly one")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


# -- which host names are answered -------------------------------------------------------------------------
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
FORWARDING_HEADERS = ("x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "forwarded", "x-real-ip", "via")
_ANY_ADDRESS = ("", "0.0.0.0", "::")


def is_loopback_name(name: str) -> bool:
    """Whether a host name (as host_name gives it) is this machine by a loopback name: localhost, or any loopback
    address (127.0.0.2 too, which a service started with --host 127.0.0.2 is opened at)."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """Without an API key, only requests that name an allowed host are answered (every route).

    Why: a page on any web site can make a browser send requests to 127.0.0.1, and with DNS rebinding
    (a name of the attacker's that first points at their server, then at 127.0.0.1) it can also read the
    answers, as if it were the page here. Such requests still carry the attacker's name in their Host
    header; checking it closes that door. A service with a key needs no such check: the attacker's page
    does not know the key."""

    def __init__(self, app, allowed: set[str]):
        self.app = app
        self.allowed = {host_name(name) for name in allowed if name not in _ANY_ADDRESS} - {""}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            sent = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"host"), "")
            if host_name(sent) not in self.allowed:
                shown = sent[:80] or "(none)"
                response = error_response(403, "host_not_allowed", f"this service does not answer for the host "
                                          f"{shown!r} without an API key: open it as http://127.0.0.1:<port>/, or "
                                          "start it with --allowed-host NAME (or --api-key)")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


# -- reading a request -------------------------------------------------------------------------------------
def bearer_token(request: Request) -> str | None:
    """The key in `Authorization: Bearer <key>`, or None when the header is missing or of another kind."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def same_key(sent: str | None, key: str | None) -> bool:
    # compare_digest: the time taken does not tell an attacker how much of a guess was right.
    return bool(sent and key) and hmac.compare_digest(sent.encode(), key.encode())


def check_client(request: Request, service: AgentService) -> None:
    """Running the agent and reading a session: with `--api-key`, the client key (or the operator's) is needed;
    without one, anybody the host check lets in, but no other account of this machine (check_this_account). A
    session itself is guarded by its id (check_session)."""
    config = service.config
    if not config.api_key:
        check_this_account(request)
        return
    sent = bearer_token(request)
    if not (same_key(sent, config.api_key) or same_key(sent, config.operator_key)):
        what = "no API key was sent" if not request.headers.get("authorization") else "the API key is wrong"
        raise ApiError(401, "unauthorized", f"{what}: send the header Authorization: Bearer <key>",
                       {"WWW-Authenticate": "Bearer"})


def check_this_account(request: Request) -> None:
    """Without --api-key, a program of this machine runs the agent only if it is of the account that started the
    service. On a machine shared by several accounts (the course's JupyterHub: each learner an account of her own,
    all on one loopback), another learner's program can find the service's port (/proc/net/tcp lists the listening
    ones) and would run its agent on its owner's model and paid key, write refunds into her shop (--auto-approve),
    fill her approvals list. A client on another machine (a customer on the network, let in by --host and
    --allowed-host) is in none of this machine's tables, and goes on as before; so does every client where the
    system says nothing of accounts (macOS, Windows: no /proc/net). A client of this machine whose account cannot
    be told (it closed its end before it was read) is refused: it cannot be taken for a customer on the network."""
    ends = scope_ends(request.scope)
    if ends is None or not accounts_can_be_told() or not peer_is_here(*ends):
        return
    if peer_uid(*ends) != os.geteuid():
        raise ApiError(403, "another_account", "this service runs without an API key, and on this machine it answers "
                       "only the programs of the account that started it; start it with --api-key, and send "
                       "Authorization: Bearer <key>")


def client_of(request: Request) -> str:
    """Who sent the request, as the per-client caps count (connections.client_key): its address, or its /64."""
    return client_key(request.client.host) if request.client else ""


def check_operator(request: Request, service: AgentService) -> None:
    """Listing and answering approvals: the operator alone. That is whoever sends `--operator-key`; on a service
    with no key at all, a program of the account that started the service, calling it from this machine by a
    loopback name (the teacher's own page): on a machine shared by several accounts, another account's program is
    on the same loopback, and is refused, as is any caller whose account cannot be told (account_of). A client's
    key is never enough: the customer asking for a refund must not be the one who says yes to it."""
    config = service.config
    sent = bearer_token(request)
    if config.operator_key:
        if same_key(sent, config.operator_key):
            return
        if same_key(sent, config.api_key):
            raise ApiError(403, "operator_only", "a client's key cannot list or answer approvals: only the "
                           "operator's key (--operator-key) can")
        what = "no operator key was sent" if not request.headers.get("authorization") else "the operator key is wrong"
        raise ApiError(401, "unauthorized", f"{what}: approvals need the header Authorization: Bearer "
                       "<operator key>", {"WWW-Authenticate": "Bearer"})
    if config.api_key:
        check_client(request, service)
        raise ApiError(403, "no_operator", "nobody may answer approvals on this service: it was started with "
                       "--api-key and without --operator-key, so each refund waits until its time runs out, and does not run")
    if not from_this_machine(request):
        raise ApiError(403, "operator_only", "without --operator-key, approvals are listed and answered only "
                       "from this machine, at http://127.0.0.1:<port>/; start the service with --operator-key")
    account = account_of(request)
    if account is None:
        raise ApiError(403, "operator_only", "without --operator-key, approvals are listed and answered only by the "
                       "account that started the service, and this system does not say which account sent the "
                       "request (Linux's /proc/net/tcp does); start the service with --operator-key and send that key")
    if account != os.geteuid():
        raise ApiError(403, "operator_only", "without --operator-key, approvals are listed and answered only by the "
                       "account that started the service, not by another account of this machine; start the "
                       "service with --operator-key and send that key")


def from_this_machine(request: Request) -> bool:
    """A request from a loopback address that names a loopback host: a person at this machine, not a client of a
    proxy on it (a proxy passes on the name its clients used) nor a neighbour naming 127.0.0.1. A request that
    says it was forwarded (X-Forwarded-For, Forwarded, X-Real-IP, Via) is a proxy's client too. A proxy that
    names 127.0.0.1 and says nothing of forwarding (nginx's defaults do both) cannot be told from a person here
    by its request: check_operator also asks which account sent it (account_of), which refuses a proxy of another
    account (nginx's www-data), but behind one at all, start the service with --operator-key (the README says so)."""
    if any(name in request.headers for name in FORWARDING_HEADERS):
        return False
    peer = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return unmapped(address).is_loopback and is_loopback_name(host_name(request.headers.get("host", "")))


def account_of(request: Request) -> int | None:
    """The uid of the account whose program sent the request over this machine's loopback, or None when it cannot
    be told (hosting/peer_account.py). On a machine shared by several accounts (the course's JupyterHub: each
    learner an account of her own, all on one loopback), a loopback address and name say only "this machine"."""
    ends = scope_ends(request.scope)
    return peer_uid(*ends) if ends else None


def check_not_cross_site(request: Request) -> None:
    """A request that can change the shop (run the agent, answer an approval) must come from this service's own
    page or from a program, never from another site's page.

    A browser lets any page send a "simple" request to any address: a GET (an <img>), or a POST of a form
    or of text/plain. So these routes take only POST with a JSON body (a cross-site page cannot send that
    without the browser asking this service first, and this service never says yes), and refuse a request
    whose `Sec-Fetch-Site` or `Origin` header says it comes from another site. Programs (requests, curl) send
    neither header and are not affected. Each of the three headers read here may come once: read first-wins, a
    second one could say what a proxy in front, reading the last, refused (no browser sends one twice)."""
    for name in ("sec-fetch-site", "origin", "content-type"):
        if len(sent := request.headers.getlist(name)) > 1:
            raise ApiError(400, "duplicate_header", f"a request may carry one {name.title()} header, not {len(sent)}")
    sender = other_site(request.headers.get("sec-fetch-site"), request.headers.get("origin"),
                        request.headers.get("host", ""))
    if sender is not None:
        raise ApiError(403, "cross_site", f"a request from {sender} may not run the agent: "
                       "use this service's own page, or call it from a program")
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "not_json", f"the body must be sent as Content-Type: application/json, not "
                       f"{media_type or 'none'!r}")


async def read_json_body(request: Request, limit: int, stopping: asyncio.Event, fields: tuple[str, ...] = FIELDS,
                         example: str = '{"query": "..."}') -> dict:
    """The request's body as a JSON object with only `fields`, or an ApiError: 413 past `limit` bytes, 408 when
    it drips past BODY_TIMEOUT_S, 503 when the service begins to stop (`stopping` is set) before it has all come."""
    declared = request.headers.get("content-length")
    if declared is not None and ((size := ascii_number(declared)) is None or size > limit):
        raise too_large(limit)
    reading = asyncio.ensure_future(whole_body(request, limit))
    stop = asyncio.ensure_future(stopping.wait())
    try:
        # A body that drips holds a connection, and would hold the service's stop until uvicorn cuts it (with a
        # traceback): both bounded here.
        done, _ = await asyncio.wait({reading, stop}, timeout=BODY_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
    finally:
        reading.cancel()
        stop.cancel()
    if reading in done:
        body = reading.result()  # or its ApiError
    elif stop in done:
        # Connection: close, since the rest of the body is not waited for (uvicorn would close it anyway).
        raise ApiError(503, "stopping", "the service is stopping, and the request's body had not all arrived: "
                       "nothing was run; send it again once the service is back", {"Connection": "close"})
    else:
        raise ApiError(408, "body_timeout", f"the body did not arrive within {BODY_TIMEOUT_S:g} s: send it "
                       "all at once")
    if not body.strip():
        raise ApiError(400, "empty_body", f"the body is empty: send JSON such as {example}")
    data = body_object(body, example)
    unknown = sorted(set(data) - set(fields))
    if unknown and fields == FIELDS:
        raise ApiError(400, "unknown_field", f"unknown field {unknown[0]!r}: the body takes \"query\" and, "
                       'to continue a conversation, "session_id"')
    if unknown:
        raise ApiError(400, "unknown_field", f"unknown field {unknown[0]!r}: send {example}")
    return data


def body_object(body: bytes, example: str) -> dict:
    """The body as a JSON object, lone surrogates repaired, or the 400 that says what keeps it from being one."""
    try:
        data = request_json(body)
    except UnicodeDecodeError:
        raise ApiError(400, "malformed_json", "the body is not UTF-8 text: send JSON in UTF-8") from None
    except RepeatedKey as exc:  # Python keeps the last value: {"approve": false, "approve": true} would be a yes
        key = replace_lone_surrogates(exc.key[:40])  # "\ud800" is a valid key, and no UTF-8 answer holds it
        raise ApiError(400, "duplicate_key", f"the body gives {key!r} more than once, so what it asks cannot be "
                       f"told: send each field once, as in {example}") from None
    except json.JSONDecodeError as exc:
        raise ApiError(400, "malformed_json", f"the body is not valid JSON ({exc.msg} at line {exc.lineno} "
                       f"column {exc.colno}): send an object such as {example}") from None
    except NotJsonNumber as exc:  # Python's json reads NaN, Infinity and 1e400 (as inf); JSON (and so the client's
        # other readers, and this service's answer that would echo it) has no such number
        raise ApiError(400, "malformed_json", f"the body cannot be read as JSON ({exc}): send finite numbers") \
            from None
    except RecursionError:  # valid JSON nested deeper than Python's parser goes: still the client's doing
        raise too_deep(example) from None
    except ValueError:  # an integer of more digits than int() converts (sys.get_int_max_str_digits)
        raise ApiError(400, "number_too_long", f"the body holds a number with too many digits to read: send "
                       f"{example}, numbers as short as JSON's readers take") from None
    # A lone surrogate ("\ud800" is valid JSON) cannot be stored or sent back as UTF-8: repaired now,
    # before the run, so that nothing after the tools have run can fail on it.
    try:
        data = replace_lone_surrogates(data)
    except RecursionError:  # the repair walks the body: two levels of Python's stack for each of its own
        raise too_deep(example) from None
    if not isinstance(data, dict):
        raise ApiError(400, "not_an_object", f"the body is JSON {type(data).__name__}, not an object: "
                       f"send {example}")
    return data


async def whole_body(request: Request, limit: int) -> bytes:
    body = bytearray()
    try:
        async for chunk in request.stream():  # a body sent in chunks has no length to check first
            body += chunk
            if len(body) > limit:
                raise too_large(limit)
    except ClientDisconnect:  # the client went away (or broke its chunked body) before the end: nothing to run
        raise ApiError(400, "body_cut", "the connection closed before the whole body arrived: send it again") \
            from None
    return bytes(body)


def too_deep(example: str) -> ApiError:
    return ApiError(400, "too_deep", f"the body is JSON nested too deeply to read: send a flat object such as {example}")


def too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"the body is larger than {limit} bytes: send a shorter question")


def read_question(data: dict) -> tuple[str, str | None]:
    query, session_id = data.get("query"), data.get("session_id")
    if query is None:
        raise ApiError(400, "missing_query", 'no "query": send the question, e.g. {"query": "Where is order 88231?"}')
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, "empty_query", '"query" must be a non-empty string: the question for the agent')
    check_question_text(query, '"query"')
    if session_id is not None and (not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id)):
        raise ApiError(400, "bad_session_id", '"session_id" must be up to 128 letters, digits and _ . : - '
                       "(the id an earlier answer returned)")
    return query, session_id


def check_question_text(text: str, name: str) -> None:
    """The limits on a question, whichever field holds it (`name`, as the client's request calls it)."""
    if "\x00" in text:  # PostgreSQL cannot store it: refused before the run, not after the refund
        raise ApiError(400, "control_character", f"{name} holds a NUL character (\\u0000): send plain text")
    if len(text) > MAX_QUERY_CHARS:
        raise ApiError(400, "query_too_long", f"{name} is longer than {MAX_QUERY_CHARS} characters")


async def client_gone(request: Request) -> None:
    """Returns once the client has hung up. Its body is read by now, so the next message the server has for the
    app is the disconnect (uvicorn goes on reading the connection while the app waits, to notice it)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def check_session(service: AgentService, session_id: str | None) -> None:
    if session_id is None:
        return
    if not SESSION_ID.fullmatch(session_id):
        raise ApiError(400, "bad_session_id", "a session id is up to 128 letters, digits and _ . : -")
    try:
        # In a thread, as every read of the store: a store that is slow or locked by another process (SQLite
        # waits up to its busy timeout) holds up this request only, not the event loop that answers all others.
        known = await asyncio.get_running_loop().run_in_executor(None, service.session_exists, session_id)
    except TinyAgentError as exc:
        raise ApiError(503, "unavailable", first_line(exc)) from None
    if not known:
        raise ApiError(404, "unknown_session", f"no session {session_id!r}: leave session_id out to start "
                       "a new one, and use the id its answer returns")


# -- answering -------------------------------------------------------------------------------------------
def outcome_json(outcome: RunOutcome, trace: bool) -> dict:
    result = outcome.result
    data = {"answer": result.answer, "reason": result.reason, "ok": result.ok, "session_id": outcome.session_id,
            "turn": outcome.turn, "rounds": result.trace.rounds}
    if trace:
        data["trace"] = json.loads(result.trace.to_json(indent=None))  # the form `ask --json` prints
    if outcome.store_error:
        data["warning"] = f"the answer was not stored in the session: {outcome.store_error}"
    # The model's own text may hold a lone surrogate; the JSON (UTF-8) must still be writable.
    return replace_lone_surrogates(data)


def served_by() -> dict:
    """Which worker process answered: with several workers, a client (or a test) can see them share the work."""
    return {"X-Served-By": str(os.getpid())}


PAGE = resources.files(__package__).joinpath("page/index.html").read_text(encoding="utf-8")


def page_headers(page: str) -> dict[str, str]:
    """The headers of one of the service's HTML pages. The page holds the approve button: no other site may frame
    it under a lure and have a person click through (clickjacking), nor may a browser read it as anything but HTML.
    Its Content-Security-Policy lets run only the page's own script and style (named by their SHA-256), and lets it
    talk only to this service: were a trace's text ever drawn as HTML by mistake, a script in it would not run,
    and could send nothing anywhere."""
    script, style = (_block_hashes(page, tag) or "'none'" for tag in ("script", "style"))
    policy = (f"default-src 'none'; script-src {script}; style-src {style}; connect-src 'self'; img-src data:; "
              "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return {"X-Frame-Options": "DENY", "Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff"}


def _block_hashes(page: str, tag: str) -> str:
    """The CSP source of each inline <script> or <style> block of `page` (the service's own, without attributes)."""
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.DOTALL)
    return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()}'" for block in blocks)


PAGE_HEADERS = page_headers(PAGE)
