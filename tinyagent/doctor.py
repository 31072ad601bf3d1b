"""`python -m tinyagent doctor`: check the configured model endpoint for real, and say how to fix it.

It makes a handful of small requests to the endpoint that `load_settings()` picks and prints one
line per check:

    reachable      GET /models gets an HTTP answer, whatever its status   required
    key accepted   no 401/403                                             required
    model exists   the chat call is accepted; /models lists the name      required
    reply          a well-formed Chat Completions reply                   required
    stop honoured  the server cuts at a stop string itself                tinyagent copes without
    usage          token counts in the reply                              the token budget needs them
    streaming      stream=true gives Server-Sent Events                   lesson 14 needs it
    tool_calls     tools=[...] gives back tool_calls                      lesson 09 needs it
    grammar        a GBNF `grammar` is followed, not only accepted         lesson 23 (llama.cpp; vLLM takes one
                                                                          in `structured_outputs`)
    json_schema    response_format json_schema is followed                lesson 23 (llama.cpp, vLLM, OpenAI's
                                                                          structured outputs)

Above them, a warning when the .env the settings came from can be read by every account of this machine, where the
key is (`env_file_checks`).

The exit code is 2 when the settings cannot be used as written (a .env line that is not NAME=value, a key no header
can carry): a command given bad input, as `ask` and `eval` exit for the same settings, and no request is sent. It is
1 when the endpoint failed a required check (a refused key among them: only the provider can say so), and 0 when
it passed them all. The key is never printed: every detail that quotes
a server passes through `redact()`. Every body the doctor reads (GET /models, the chat replies, the stream)
is read by `LlmClient`'s own readers, within `--timeout` in all and MAX_REPLY_BYTES, and every detail is
printed through `one_line`: a server that drips a body for ever, or writes ESC sequences into its
finish_reason, cannot hold the doctor or rewrite its report. A status line and headers are bounded by
`--timeout` between two bytes only, as in `LlmClient`: a server that drips them a byte at a time holds
each request as long as it drips. A redirect is not followed, as the client follows none.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urljoin

import requests

from tinyagent.api_url import is_loopback, models_url, shown_url, url_host
from tinyagent.chat_result import CHECK_THE_URL, UNTRUSTED_CERTIFICATE, short_reason
from tinyagent.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ConfigurationError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    NotFoundError,
    RateLimitError,
    RedirectError,
    ServerError,
    redact,
)
from tinyagent.llm_client import (
    ACCEPT_ENCODING,
    TRUST_ITS_AUTHORITY,
    ChatResult,
    LlmClient,
    reply_timeouts,
    unsent_reason,
)
from tinyagent.protocols.streaming import open_stream
from tinyagent.safe_text import one_line, terminal_text
from tinyagent.settings import Settings, find_env_file, load_settings

OK, WARN, FAIL, SKIP = "OK", "WARN", "FAIL", "SKIP"

PING = [{"role": "user", "content": "Say hello to a customer in one short sentence."}]
TOOL_QUESTION = [{"role": "user", "content": "What time is it now? Use the getCurrentTime tool."}]
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "getCurrentTime",
        "description": "Get the current date and time.",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
}
CHECKS = ("reachable", "key accepted", "model exists", "reply", "stop honoured", "usage", "streaming", "tool_calls",
          "grammar", "json_schema")
# A grammar and a schema no unconstrained model would meet by chance: "tinyagent-" and three digits (a thousand
# replies), and one JSON object; a reply of that form is one the server made the model write.
PROBE_GRAMMAR = 'root ::= "tinyagent-" [0-9] [0-9] [0-9]'
PROBE_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["tinyagent"]}},
                "required": ["answer"], "additionalProperties": False}
CONSTRAINED_FIX = {
    "grammar": "lesson 23's grammars need a server that takes GBNF: llama.cpp's server (`grammar`), or vLLM "
               "(a grammar in `structured_outputs`, formerly `guided_grammar`); OpenAI's API takes none, use its "
               "JSON Schema instead (response_format); the rest of the course works without",
    "json_schema": "lesson 23's JSON steps need response_format json_schema: llama.cpp's server, vLLM and OpenAI's "
                   "structured outputs take it; the rest of the course works without",
}
# Sampling fixed, so that asking twice gives the same text (what the stop check relies on).
SAME_EVERY_TIME = {"temperature": 0, "seed": 7}


@dataclass(frozen=True)
class Check:
    """One line of the report. `fix` says what to do when the status is not OK. `bad_settings`: the check failed on
    the settings as written, before any request (the doctor then exits 2, as a command given bad input does)."""

    name: str
    status: str
    detail: str
    fix: str = ""
    required: bool = False
    bad_settings: bool = False

    @property
    def failed(self) -> bool:
        return self.required and self.status == FAIL


def diagnose(settings: Settings, *, timeout: float = 30.0) -> list[Check]:
    """Run every check against `settings`' endpoint and return them in order; each reply may go `timeout` seconds
    without data, and its body take `timeout` seconds from its first byte to its last (`reply_timeouts`)."""
    secret = settings.api_key
    checks: list[Check] = []

    def add(name, status, detail, fix="", required=False, bad_settings=False):
        checks.append(Check(name, status, redact(detail, secret), redact(fix, secret), required, bad_settings))

    def skip_the_rest(why):
        done = {check.name for check in checks}
        for name in CHECKS:
            if name not in done:
                add(name, SKIP, f"not tried: {why}", required=name in CHECKS[:4])
        return sorted(checks, key=lambda check: CHECKS.index(check.name))

    try:
        llm = LlmClient(
            settings.api_url, settings.api_key, settings.model, **reply_timeouts(timeout),
            max_retries=1, max_retry_wait=5.0,
        )
    except ConfigurationError as exc:  # a key that cannot go in a header (a space, a letter that is not ASCII)
        add("key accepted", FAIL, str(exc), "copy the key again from your provider's page into TINYAGENT_API_KEY "
            "(in .env), with nothing around it", required=True, bad_settings=True)
        return skip_the_rest("the key cannot be sent")

    # 1. Reachable: any HTTP answer at all. GET /models is cheap, and its list helps check 3.
    listing = _get_models(settings, llm)
    if isinstance(listing, LlmError):  # it answered, but its body did not come in full
        shown = shown_url(models_url(llm.api_url))
        add("reachable", FAIL, f"GET {shown} began to answer, but {_unfinished(listing, timeout)}",
            "the server or a proxy in front of it is stuck or sending far too much: restart it, or check "
            "TINYAGENT_API_URL", required=True)
        return skip_the_rest("GET /models did not finish")
    if isinstance(listing, Exception):
        reason = _reason(listing)
        fix = TRUST_ITS_AUTHORITY if reason.startswith(UNTRUSTED_CERTIFICATE) else (
            "check TINYAGENT_API_URL; for a local server (classroom, llama.cpp, Ollama) check that it is "
            "running and listening on that port")
        add("reachable", FAIL, f"could not reach {url_host(llm.api_url)}: {reason}", fix, required=True)
        return skip_the_rest("the server cannot be reached")
    status, _, moved_to = listing
    redirect = f", a redirect to {moved_to} (not followed)" if moved_to else ""
    add("reachable", OK, f"HTTP {status} from GET {shown_url(models_url(llm.api_url))}{redirect}", required=True)

    # 2-4: one small chat request, made the way the agent makes them, answers the other required
    # questions, in the order they fail.
    try:
        ping = llm.chat(PING, max_tokens=24)
    except LlmError as exc:
        _explain_failure(exc, add, settings.api_url)
        return skip_the_rest("no usable reply yet")
    if settings.api_key:
        add("key accepted", OK, "the server accepted the key", required=True)
    else:
        add("key accepted", OK, "no key sent, and the server did not ask for one", required=True)
    add("model exists", *_model_listed(settings, listing), required=True)
    add("reply", OK, f"{len(ping.text)} characters, finish_reason={ping.finish_reason}", required=True)

    # 5-10: what the lessons need beyond a plain reply.
    add("stop honoured", *_check_stop(llm))
    add("usage", *_check_usage(ping))
    add("streaming", *_check_streaming(llm, timeout))
    add("tool_calls", *_check_tools(llm))
    add("grammar", *check_constrained(llm, "grammar"))
    add("json_schema", *check_constrained(llm, "json_schema"))
    return checks


def _explain_failure(exc: LlmError, add: Callable, api_url: str) -> None:
    """Turn the chat request's error into the lines of the required checks it decides."""
    message = str(exc)
    if isinstance(exc, AuthenticationError):
        if is_loopback(api_url):  # a server on this machine that asks a key: the course's own print theirs
            fix = ("put the key this machine's server was started with in TINYAGENT_API_KEY (in .env): "
                   "`python -m tinyagent local-model` prints its own in the TINYAGENT_API_KEY line it shows when it "
                   "starts; `classroom --api-key KEY` and `serve --api-key KEY` take KEY")
        else:
            fix = ("put the key your provider gave you in TINYAGENT_API_KEY (in .env); check that it belongs to "
                   "the provider in TINYAGENT_API_URL and has not expired")
        add("key accepted", FAIL, message, fix, required=True)
        return
    if isinstance(exc, (LlmConnectionError, LlmTimeoutError)):
        add("reply", FAIL, message,
            "the server is up but did not answer a tiny request: it may be overloaded or still loading "
            "the model; try again, or raise --timeout", required=True)
        return
    if isinstance(exc, RedirectError):  # a NotFoundError too, but no 404: the URL answers, from elsewhere
        add("reply", FAIL, message,
            "the endpoint answers from another URL: set TINYAGENT_API_URL to the redirect's target, the URL in "
            "the message (often https:// where you wrote http://), if you trust it", required=True)
        return
    add("key accepted", OK, "no 401/403", required=True)
    if isinstance(exc, NotFoundError):
        add("model exists", FAIL, message,
            "HTTP 404 means a wrong URL or a wrong model name: compare TINYAGENT_API_URL and "
            "TINYAGENT_MODEL with the provider table in the README", required=True)
        return
    if isinstance(exc, BadRequestError):
        add("model exists", WARN, "not refused with a 404",
            "a 400 can also mean an unknown model name: check TINYAGENT_MODEL", required=True)
    else:
        add("model exists", OK, "not refused (no 404)", required=True)
    fix = {
        RateLimitError: "wait a minute and run the doctor again; check your plan's quota",
        ServerError: "the provider is failing right now: try again later",
        BadResponseError: "TINYAGENT_API_URL must point at an OpenAI-compatible /chat/completions "
                          "endpoint, not a web page or another API" if CHECK_THE_URL in message else "see the message",
        BadRequestError: "the server refused a plain chat request: check TINYAGENT_MODEL and the provider's "
                         "documentation for OpenAI compatibility",
    }.get(type(exc), "see the message")
    add("reply", FAIL, message, fix, required=True)


def _headers(settings: Settings) -> dict[str, str]:
    headers = {"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING}  # what LlmClient's reader inflates
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    return headers


def _get_models(settings: Settings, llm: LlmClient) -> tuple[int, bytes, str] | Exception:
    """GET /models: its status, its body and where a redirect points ("" for none), or what went wrong. The body is
    read by the reader `chat` uses, within `llm.total_timeout` and MAX_REPLY_BYTES: requests' own timeout is only
    the wait for each byte. A redirect is not followed, as the client follows none: its 200 from elsewhere would
    pass a URL that every chat request then finds moved."""
    url = models_url(llm.api_url)
    try:
        response = requests.get(url, headers=_headers(settings), stream=True, allow_redirects=False,
                                timeout=(llm.connect_timeout, llm.read_timeout))
    except OSError as exc:  # requests' own errors, and a TLS certificate bundle that cannot be read
        return exc
    moved_to = shown_url(urljoin(url, response.headers["Location"])) if response.is_redirect else ""
    try:
        return response.status_code, llm._read_body(response), redact(moved_to, settings.api_key)
    except LlmError as exc:
        return exc


def _unfinished(exc: LlmError, timeout: float) -> str:
    """Why a body the doctor read did not come in full, in the doctor's words: the client's message names its own
    options (total_timeout, read_timeout), where the doctor's is --timeout."""
    if isinstance(exc, LlmTimeoutError):
        return f"its body did not come in full within {timeout:g} s (--timeout bounds the whole body, and each pause)"
    return str(exc)


def _reason(exc: Exception) -> str:
    """Why GET /models got no answer, in the client's words (`short_reason`: a certificate not trusted, a refused
    connection), or "timed out"."""
    if not isinstance(exc, requests.RequestException) and isinstance(exc, OSError):  # no request started: a TLS bundle
        return unsent_reason(exc)
    if isinstance(exc, requests.Timeout):
        return "timed out"
    return short_reason(exc)


def _model_listed(settings: Settings, listing: tuple[int, bytes, str]) -> tuple[str, str, str]:
    """The chat call worked, so the model exists for the server; /models (its status and body) may say more."""
    status, body, _ = listing
    try:
        names = [item.get("id") for item in json.loads(body).get("data", [])] if status < 400 else []
    except (ValueError, AttributeError, TypeError, RecursionError):  # not the list OpenAI's /models sends
        names = []
    if settings.model in names:
        return OK, f"{settings.model!r} is listed by /models", ""
    if names:
        shown = ", ".join(repr(name) for name in names[:5]) + (", ..." if len(names) > 5 else "")
        fix = ("some servers (llama.cpp, Ollama) answer whatever model name you send: set TINYAGENT_MODEL "
               "to a listed name so that the name in your traces is the model that answered")
        return WARN, f"{settings.model!r} answered, but /models lists only {shown}", fix
    return OK, f"the server answered as {settings.model!r} (it has no /models list to compare with)", ""


def _stop_word(text: str) -> str | None:
    """A word from the middle of a reply: asked again with it as the stop string, the server must cut."""
    words = [w.strip(".,!?;:\"'()") for w in text.split()]
    candidates = [w for w in words[2:] if len(w) >= 4]
    return candidates[0] if candidates else None


def _check_stop(llm: LlmClient) -> tuple[str, str, str]:
    """Ask twice with fixed sampling: the second time with a word of the first reply as the stop."""
    try:
        first = llm.chat(PING, max_tokens=24, **SAME_EVERY_TIME)
    except LlmError as exc:
        return WARN, f"could not tell: a request with temperature=0 and a seed failed: {exc}", ""
    word = _stop_word(first.text)
    if word is None:
        return WARN, "could not tell: the reply was too short to pick a stop word from", ""
    try:
        again = llm.chat(PING, max_tokens=24, stop=[word], **SAME_EVERY_TIME)
    except LlmError as exc:
        return (WARN, f"the server refused `stop`: {exc}",
                "tinyagent sends stop on every call: use a model or server that accepts it")
    if again.client_cut:
        fix = ("nothing breaks (the client cuts, and a trace shows [Client cut]), but you pay for the "
               "tokens the model writes past the stop string; a server that honours stop is cheaper")
        return WARN, f"the server ignored stop={[word]!r}: tinyagent cut the reply itself", fix
    if word not in again.text and again.finish_reason == "stop":
        return OK, f"cut at {word!r}, finish_reason=stop", ""
    why = "the second reply did not reach the stop word (the server may not support temperature=0 / seed)"
    return WARN, f"could not tell: {why}", ""


def _check_usage(ping: ChatResult) -> tuple[str, str, str]:
    usage = ping.usage
    if isinstance(usage.get("prompt_tokens"), int) and isinstance(usage.get("completion_tokens"), int):
        return OK, f"{usage['prompt_tokens']} in + {usage['completion_tokens']} out", ""
    return (WARN, "the reply has no usage token counts",
            "token counts in traces and the token budget (lesson 10) show 0 with this server")


def _check_streaming(llm: LlmClient, timeout: float) -> tuple[str, str, str]:
    """Ask for a stream, and read it with the course's own reader (`open_stream`, lesson 14): what it refuses (a
    chunk that is not one, an error sent in the stream, a stream that never ends) the doctor must not pass."""
    fix = "streaming (lesson 14) needs a server that answers stream=true with Server-Sent Events"
    try:
        with open_stream(llm, PING, max_tokens=16, **SAME_EVERY_TIME) as stream:
            reply = stream.finish()
    except LlmTimeoutError:
        return WARN, f"the stream did not end within {timeout:g} s of its first byte, or paused longer", fix
    except LlmError as exc:
        return WARN, f"the stream broke: {exc}", fix
    if not reply.streamed:  # a whole JSON reply: the reader takes it, but nothing is streamed
        return WARN, "stream=true answered with one JSON reply, not text/event-stream", fix
    chunks = len(reply.raw["chunks"])
    return OK, f"{chunks} chunks, {len(reply.text)} characters, finish_reason={reply.finish_reason}", ""


def _check_tools(llm: LlmClient) -> tuple[str, str, str]:
    fix = ("native function calling (lesson 09) needs tool_calls; the text ReAct protocol (lessons 01-08) "
           "works without them")
    try:
        reply = llm.chat(TOOL_QUESTION, max_tokens=64, tools=[TIME_TOOL], **SAME_EVERY_TIME)
    except LlmError as exc:
        return WARN, f"the server refused `tools`: {exc}", fix
    if reply.tool_calls:
        names = [(call.get("function") or {}).get("name", "?") for call in reply.tool_calls]
        return OK, f"tool_calls: {', '.join(names)} (finish_reason={reply.finish_reason})", ""
    return WARN, "the server accepted `tools` but answered in text, with no tool_calls", fix


def check_constrained(llm: LlmClient, form: str) -> tuple[str, str, str]:
    """Ask for a reply of the probe grammar's form ("tinyagent-" and three digits) or the probe schema's one object,
    and see whether it came."""
    fix = CONSTRAINED_FIX[form]
    ask = [{"role": "user", "content": "Say hello."}]
    if form == "grammar":
        options = {"grammar": PROBE_GRAMMAR}
        followed = lambda text: re.fullmatch(r"tinyagent-\d{3}", text.strip()) is not None
    else:
        options = {"response_format": {"type": "json_schema",
                                       "json_schema": {"name": "probe", "strict": True, "schema": PROBE_SCHEMA}}}
        followed = lambda text: _json_or_none(text) == {"answer": "tinyagent"}
    try:
        reply = llm.chat(ask, max_tokens=64, **options, **SAME_EVERY_TIME)  # JSON may come with much whitespace
    except LlmError as exc:
        return WARN, f"the server refused `{form}`: {exc}", fix
    if followed(reply.text):
        return OK, f"followed: the reply is exactly what it allowed ({reply.text.strip()[:40]!r})", ""
    return WARN, f"accepted, but not followed: the reply was {reply.text.strip()[:40]!r}", fix


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def env_file_checks(path: str) -> list[Check]:
    """A warning when every account of this machine can read the .env at `path` ("": none), where the key goes: the
    file readable by others, and each folder above it open to them (`cp .env.example .env` makes it 0644; a home of
    mode 0700, as on the course's JupyterHub, keeps it private whatever its mode). Windows' files have no such
    mode bits: nothing is said there."""
    if not path or not hasattr(os, "getuid"):
        return []
    where = Path(path).absolute()
    mode = where.stat().st_mode
    if not mode & stat.S_IROTH or any(not folder.stat().st_mode & stat.S_IXOTH for folder in where.parents):
        return []
    return [Check(".env", WARN, f"{path} can be read by every account of this machine (mode {stat.S_IMODE(mode):04o}): "
                  "a key in it is theirs too", f"make it yours alone: chmod 600 {path}")]


# -- the report --------------------------------------------------------------------------------
def format_report(settings: Settings | None, checks: list[Check]) -> str:
    lines = ["tinyagent doctor"]
    if settings is not None:
        lines.append(f"  endpoint: {shown_url(settings.api_url)}")
        lines.append(f"  model:    {settings.model}")
        lines.append(f"  key:      {'set (not shown)' if settings.api_key else 'not set'}")
        lines.append(f"  settings: {settings.source}")
    lines.append("")
    width = max(len(check.name) for check in checks)
    lines.append(f"{'check':<{width}}  {'result':<6}  detail")
    lines.append(f"{'-' * width}  ------  {'-' * 40}")
    for check in checks:
        detail = one_line(check.detail)  # it may quote a server: a CR, an ESC or a bidi override is shown, not obeyed
        lines.append(f"{check.name:<{width}}  {check.status:<6}  {detail}")
    fixes = [check for check in checks if check.status in (FAIL, WARN) and check.fix]
    if fixes:
        lines.append("")
        lines.append("How to fix:")
        lines.extend(f"- {check.name} ({check.status}): {check.fix}" for check in fixes)
    failed = [check.name for check in checks if check.failed]
    lines.append("")
    lines.append(f"Required checks failed: {', '.join(failed)}." if failed
                 else "All required checks passed: tinyagent can use this endpoint.")
    return terminal_text("\n".join(lines))  # the model's name and the fixes too: nothing in it a terminal obeys


def run_doctor(settings: Settings | None = None, *, out: TextIO | None = None, timeout: float = 30.0) -> int:
    """Check the endpoint (the configured one by default), print the report. The exit code: 2 if the settings cannot
    be used as written, 1 if the endpoint failed a required check, 0 if it passed them all (see the module doc)."""
    out = out or sys.stdout
    if settings is None:
        try:
            settings = load_settings(notice=False)
        except ConfigurationError as exc:
            check = Check("settings", FAIL, str(exc), "fix .env as the message says (see .env.example)", True, True)
            print(format_report(None, [check]), file=out)
            return 2
    in_clear = settings.key_in_clear()
    checks = [Check("settings", WARN if in_clear else OK, settings.describe(), in_clear or "", required=True),
              *env_file_checks(find_env_file() if ".env" in settings.source.split(", ") else ""),
              *diagnose(settings, timeout=timeout)]
    print(redact(format_report(settings, checks), settings.api_key), file=out)
    failed = [check for check in checks if check.failed]
    if any(check.bad_settings for check in failed):
        return 2
    return 1 if failed else 0
