"""The command line: `python -m tinyagent ask "..."`, `python -m tinyagent classroom`, ...

    ask          run the shop agent on one request against the configured model, print the rounds
    classroom    serve the classroom model for a whole room, and print the .env lines to use it
    local-model  serve a real small model (SmolLM2 on llama.cpp) on 127.0.0.1, print its .env lines
    doctor       check the configured endpoint for real and say how to fix what fails
    weather-service  serve lesson 15's weather API on 127.0.0.1 (optionally slow or failing on purpose)
    eval         run the evaluation suite (lesson 18) against the configured model, print the scores
    serve        serve the shop agent over HTTP with its live trace page (lesson 19; the `serve` extra)
    mcp-server   serve the shop's tools over the Model Context Protocol, on stdio or Streamable HTTP (lesson 24)

A bad argument is one line on stderr that says what is wrong and what to do, and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import io
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from tinyagent.command_options import OneLineParser, number_of_seconds, output_file, whole_number
from tinyagent.errors import AuthenticationError, LlmError, NotFoundError, TinyAgentError, first_line
from tinyagent.hosting.signals import StopSignals
from tinyagent.llm_client import LlmClient, key_problem
from tinyagent.local_model import MAX_THREADS
from tinyagent.number_checks import ascii_number
from tinyagent.safe_text import one_line

DEFAULT_DB = Path.home() / ".cache" / "tinyagent" / "bitmall.sqlite3"
# Every round resends the whole conversation, which grows by two messages a round, so the tokens of a
# run grow with the square of its rounds: 100 rounds cost about 5,000 rounds' worth of Observations.
# The course's longest single loop takes 7 rounds (lesson 07's refund with bad arguments); a task that needs more than
# 100 needs a better prompt.
MAX_STEPS_LIMIT = 100


def _shop_db_setting() -> str:
    """$TINYAGENT_SHOP_DB without the spaces around it, as the other settings are read ("" when unset): a space
    copied in after the = had made a file whose name starts with one."""
    return os.environ.get("TINYAGENT_SHOP_DB", "").strip()


def _question(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(
            'the question is empty: write what the agent should do, e.g. ask "Where is order 88231?"')
    return text


def _skill_name(text: str) -> str:
    """--skill: one of the shop's skills, checked before anything runs or the shop's file is made."""
    from tinyagent.architectures.skills import shop_skills

    skills = shop_skills()
    if not text.strip():  # an empty name would quietly run without any skill
        raise argparse.ArgumentTypeError(f"--skill needs the name of one of the shop's skills: {', '.join(skills)}")
    if text not in skills:
        raise argparse.ArgumentTypeError(f"--skill {text!r}: the shop's skills are {', '.join(skills)}")
    return text


_steps = whole_number("--max-steps", MAX_STEPS_LIMIT,
                       "each round resends the whole conversation, so long runs cost quadratically")
_threads = whole_number("--threads", MAX_THREADS, "1 suits a busy machine")


_seconds = number_of_seconds("--timeout")
_workers = whole_number("--workers", 64, "each worker is a process with its own threads; 2 cores need few")
_header_seconds = number_of_seconds("--header-timeout")
_seconds_to_approve = number_of_seconds("--approval-timeout")
_resume_seconds = number_of_seconds("--resume-grace", 3600, zero_ok=True)
_connections = whole_number("--max-connections", 100_000, "each one holds a file descriptor")
_client_connections = whole_number("--max-connections-per-client", 100_000, "a browser holds 6 at most")
_body_bytes = whole_number("--max-body", 10 * 1024 * 1024, "a question is a few hundred bytes")


def _host_name(text: str) -> str:
    """--allowed-host: a name as it appears in a URL (shop.lan, 192.168.1.20, [fe80::1]), without port or scheme."""
    name = text.strip().lower()
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?|\[[0-9a-f:.]+\]", name):
        raise argparse.ArgumentTypeError(f"--allowed-host must be a host name such as shop.lan or 192.168.1.20 "
                                         f"(no scheme, no port), got {text!r}")
    return name.strip("[]")


def _operator_key(text: str) -> str:
    """--operator-key: a key a person can send in a header. An empty one must not quietly leave approvals open."""
    if not text or not _sendable(text):
        raise argparse.ArgumentTypeError("--operator-key (or TINYAGENT_SERVE_OPERATOR_KEY) must be a key of "
                                         "printable ASCII characters without spaces, not empty")
    return text


def _api_key(variable: str | None = None):
    """An argparse type for --api-key (and the variable it defaults to, which argparse reads through the same
    type): a key clients must send. An empty or blank one would serve without a key, open to anyone."""
    where = f"--api-key (or ${variable})" if variable else "--api-key"

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(
                f"{where} is empty: give the key clients must send, or leave it out to serve without one")
        if not _sendable(text):
            raise argparse.ArgumentTypeError(
                f"{where} must be printable ASCII without spaces, as an HTTP header carries it: no client could "
                "send this one")
        return text

    return parse


def _sendable(key: str) -> bool:
    """Whether a key can travel in an Authorization header as every client writes it: the client's own rule."""
    return key_problem(key) is None


def _port(text: str) -> int:
    port = ascii_number(text)
    if port is None or port > 65535:
        raise argparse.ArgumentTypeError(f"--port must be a whole number from 0 to 65535 (0: any free port), got {text!r}")
    return port


def _listen_host(text: str) -> str:
    """--host: an address to listen on. An empty one would make the classroom's server listen on every network
    (Python's socketserver reads "" as 0.0.0.0), which only --host 0.0.0.0 should ask for."""
    if not text.strip():
        raise argparse.ArgumentTypeError("--host must name an address: 127.0.0.1 (this machine only) or 0.0.0.0 "
                                         "(every network it is on)")
    return text


_delay = number_of_seconds("--delay", 3600, zero_ok=True)  # weather_api.MAX_DELAY_S (imported only when the service starts)


def _base_path(text: str) -> str:
    """--base-path: a path as a URL writes it, /services/classroom: no query or fragment, which would end the path
    in the URL the room prints, nothing encoded (the room matches the decoded path, where %2F is a slash), and no
    . or .. segment (a client resolves those before it sends: /a/./b arrives as /a/b). Else the URL printed for the
    learners' .env would answer 404."""
    if not text.strip("/"):
        return text
    if "://" in text or not re.fullmatch(r"/?[A-Za-z0-9._~!$&'()*+,;=:@/-]+", text):
        raise argparse.ArgumentTypeError(f"--base-path must be a URL path such as /services/classroom (no ?, #, %, "
                                         f"spaces or scheme), got {text!r}")
    if {".", ".."} & set(text.split("/")):
        raise argparse.ArgumentTypeError(f"--base-path {text!r} holds a . or .. segment, which clients resolve before "
                                         "they send (/a/./b arrives as /a/b): write the path without it")
    return text


def _session_store(text: str) -> str:
    """--session-store: a file or a URL. An empty one must not quietly mean the default, nor a blank one make a
    file named " "."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"--session-store needs an SQLite file or a postgresql:// URL, got {text!r} "
                                         "(leave it out for ~/.cache/tinyagent/sessions.sqlite3)")
    return text


def _moment(text: str) -> str:
    """--now: an ISO date-time the shop's clock is fixed at, checked here so every command says it the same way."""
    from tinyagent.clock import fixed_clock

    try:
        fixed_clock(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--now must be an ISO date-time such as 2026-06-30T19:05:23, got {text!r}") from None
    return text


def _output_file(text: str) -> Path | str:
    """A file the results can be written to (checked before the suite runs for minutes), or "-". A file that is
    there already is written over only when it holds an earlier run's results: a typo must not cost someone's notes."""
    if text == "-":
        return text
    path = output_file(text)
    from tinyagent.evaluation.report import replaceable_by_a_report

    try:
        replaceable = not path.is_file() or replaceable_by_a_report(path)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"--json {text!r}: {exc.strerror or exc}") from None
    if not replaceable:
        raise argparse.ArgumentTypeError(f"--json {text!r} holds something other than an earlier run's results: "
                                         "give a new file name, or move that file away first")
    return path


def _ask_arguments(ask: argparse.ArgumentParser) -> None:
    ask.add_argument("question", type=_question, help='e.g. "帮我看看订单 88231 的快递到哪了。"')
    ask.add_argument("--lang", choices=("en", "zh"), help="language of the prompt and the printed trace "
                     "(default: the question's language)")
    ask.add_argument("--json", action="store_true", help="print the trace as JSON instead of rounds")
    ask.add_argument("--max-steps", type=_steps, default=10,
                     help=f"rounds before giving up, 1 to {MAX_STEPS_LIMIT} (default 10)")
    ask.add_argument("--model", help="override TINYAGENT_MODEL (e.g. a classroom variant: classroom-loop)")
    # A run starts from the seeded shop unless told to keep one: with a file shared by every run (and by
    # `serve`), a learner's very first refund could meet an earlier run's refund for the same order.
    ask.add_argument("--db", default=_shop_db_setting() or ":memory:", metavar="FILE",
                     help="keep the shop in this SQLite file across runs, filled with the course's orders on first use; "
                     "delete it to start afresh (default: $TINYAGENT_SHOP_DB, else a freshly seeded shop in "
                     "memory for every run)")
    ask.add_argument("--now", type=_moment, help="pretend it is this time in the shop (China, UTC+8), e.g. 2026-06-30T19:05:23 (default: the real time)")
    ask.add_argument("--usage", action="store_true", help="show token counts per model call")
    ask.add_argument("--timeout", type=_seconds, help="seconds each model reply may go without data, and its body take "
                     "from its first byte to its last; its status line and headers are bounded only by the wait "
                     "between two bytes (default: 10 to connect, 120 without data, 300 for the body)")
    planned_or_scoped = ask.add_mutually_exclusive_group()  # lesson 17
    planned_or_scoped.add_argument("--plan", action="store_true",
                                   help="plan the request first, then run each step (--max-steps rounds a step)")
    planned_or_scoped.add_argument("--skill", type=_skill_name, help="run inside one of the shop's skills (logistics, policies, "
                                   "refunds): only its tools, and its instructions")


def _classroom_arguments(room: argparse.ArgumentParser) -> None:
    room.add_argument("--host", type=_listen_host, default="127.0.0.1",
                      help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for the whole LAN)")
    room.add_argument("--port", type=_port, default=8000, help="port to listen on (default 8000; 0: any free port)")
    keys = room.add_mutually_exclusive_group()
    # From the environment too: a key on the command line is in /proc/<pid>/cmdline, which `ps` shows every account.
    keys.add_argument("--api-key", type=_api_key("TINYAGENT_CLASSROOM_API_KEY"),
                      default=os.environ.get("TINYAGENT_CLASSROOM_API_KEY"),
                      help="require this key from clients (default: $TINYAGENT_CLASSROOM_API_KEY, which other "
                      "accounts cannot read as they can a command line; else none)")
    keys.add_argument("--hub-auth", action="store_true", help="as a JupyterHub service: serve only tokens "
                      "the hub accepts for this service (deploy/jupyterhub/)")
    room.add_argument("--base-path", type=_base_path, default="", help="a prefix a proxy adds to every path, e.g. "
                      "/services/classroom behind JupyterHub (default: none)")
    room.add_argument("--certfile", metavar="FILE", help="serve HTTPS with this certificate (PEM), with --keyfile "
                      "(default: plain HTTP)")
    room.add_argument("--keyfile", metavar="FILE", help="the certificate's private key (PEM, unencrypted)")


def _local_model_arguments(local: argparse.ArgumentParser) -> None:
    local.add_argument("--port", type=_port, default=8080, help="port to listen on (default 8080; 0: any free port)")
    local.add_argument("--verbose", action="store_true", help="show llama.cpp's log on stderr")
    # On a machine busy with other work, llama.cpp's threads wait for each other at every token:
    # measured here on 2 loaded cores, 1 thread wrote 45 tokens/s where 2 threads wrote 3.6.
    local.add_argument("--threads", type=_threads, default=None,
                       help="threads that generate (default: up to 4; use 1 on a busy machine)")


def _doctor_arguments(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument("--model", help="override TINYAGENT_MODEL for this check")
    doctor.add_argument("--timeout", type=_seconds, default=30.0,
                        help="seconds each reply may go without data, and its body take from its first byte to its "
                        "last; its status line and headers are bounded only by the wait between two bytes (default 30)")


def _weather_service_arguments(weather: argparse.ArgumentParser) -> None:
    """Lesson 15: the weather API its HTTP tool calls, with a fault for every request if asked."""
    weather.add_argument("--port", type=_port, default=8081, help="port to listen on (default 8081; 0: any free port)")
    weather.add_argument("--delay", type=_delay, default=0.0, help="seconds to wait before every reply (default 0)")
    weather.add_argument("--status", type=_http_status, help="answer every request with this HTTP error status")


def _eval_arguments(evaluation: argparse.ArgumentParser) -> None:
    """Lesson 18: the evaluation suite from the terminal. The exit code says whether every task passed."""
    evaluation.add_argument("--model", help="override TINYAGENT_MODEL (e.g. a classroom variant: classroom-loop)")
    evaluation.add_argument("--protocol", choices=("text", "function"), default="text",
                            help="text ReAct (default) or native function calling")
    evaluation.add_argument("--lang", choices=("zh", "en", "both"), default="both",
                            help="the tasks' language (default both)")
    evaluation.add_argument("--task", action="append", metavar="NAME",
                            help="run only this task, in each language; repeat for several (default: all)")
    evaluation.add_argument("--json", type=_output_file, metavar="FILE",
                            help="also write the results as JSON to FILE (- for stdout, instead of the table)")
    evaluation.add_argument("--max-steps", type=_steps, default=10,
                            help=f"rounds per task before giving up, 1 to {MAX_STEPS_LIMIT} (default 10)")
    evaluation.add_argument("--timeout", type=_seconds, help="seconds each model reply may go without data, and its "
                            "body take from its first byte to its last; its status line and headers are bounded only by "
                            "the wait between two bytes (default: 10 to connect, 120 without data, 300 for the body)")
    evaluation.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    """Lesson 19: the agent as a web service, with the trace page at /."""
    serve.add_argument("--host", type=_listen_host, default="127.0.0.1", help="address to listen on (default 127.0.0.1: this "
                       "machine only; 0.0.0.0 for every network it is on)")
    serve.add_argument("--port", type=_port, default=8000, help="port to listen on (default 8000; 0: any free port)")
    serve.add_argument("--workers", type=_workers, default=1,
                       help="worker processes (default 1); give them a PostgreSQL --session-store to share sessions "
                       "across the workers")
    serve.add_argument("--api-key", type=_api_key("TINYAGENT_SERVE_API_KEY"),
                       default=os.environ.get("TINYAGENT_SERVE_API_KEY"),
                       help="the client key: require Authorization: Bearer <key> to run the agent (default: "
                       "$TINYAGENT_SERVE_API_KEY, else none: any program the host check lets in runs it, but of this "
                       "machine only those of the account running the service, on Linux)")
    serve.add_argument("--operator-key", type=_operator_key, default=os.environ.get("TINYAGENT_SERVE_OPERATOR_KEY"),
                       help="the key of the person who lists and answers refund approvals; a client's --api-key "
                       "cannot (default: $TINYAGENT_SERVE_OPERATOR_KEY; without one, only a service with no key takes "
                       "answers, from this machine and the account running it, on Linux)")
    serve.add_argument("--session-store", type=_session_store, default=None, metavar="FILE_OR_URL",
                       help="an SQLite file or a postgresql:// URL for the sessions (default "
                       "~/.cache/tinyagent/sessions.sqlite3)")
    serve.add_argument("--db", type=Path, default=Path(_shop_db_setting() or DEFAULT_DB),
                       help=f"the shop's SQLite file, created on first use (default {DEFAULT_DB})")
    serve.add_argument("--max-steps", type=_steps, default=10,
                       help=f"rounds per run before giving up, 1 to {MAX_STEPS_LIMIT} (default 10)")
    serve.add_argument("--timeout", type=_seconds, default=120.0,
                       help="seconds a run may take in all (default 120)")
    serve.add_argument("--max-body", type=_body_bytes, default=16 * 1024, metavar="BYTES",
                       help="the largest request body accepted (default 16384)")
    serve.add_argument("--now", type=_moment, help="pretend it is this time in the shop (China, UTC+8), e.g. 2026-06-30T19:05:23 (default: the real time)")
    serve.add_argument("--model", help="override TINYAGENT_MODEL (e.g. a classroom variant: classroom-loop)")
    serve.add_argument("--allowed-host", action="append", type=_host_name, default=[], metavar="NAME",
                       help="without --api-key, a host name to answer besides localhost, 127.0.0.1, [::1] and the "
                       "--host address (the name clients use in the URL); repeat for several")
    serve.add_argument("--approval-timeout", type=_seconds_to_approve, default=60.0, metavar="SECONDS",
                       help="how long a refund waits for a person's yes (on the page, or POST /agent/approvals/<id>) "
                       "before it is declined (default 60)")
    serve.add_argument("--auto-approve", action="store_true",
                       help="approve every refund without asking anyone: for a demonstration only")
    serve.add_argument("--team", action="store_true",
                       help="answer with lesson 21's team: a triage agent handing each request to a specialist")
    serve.add_argument("--without", action="append", default=[], metavar="DEFENCE",
                       choices=("fenced data", "customer's words", "sourced gate"),
                       help="turn off one of lesson 25's defences against prompt injection (all on by default): "
                       "'fenced data', \"customer's words\" or 'sourced gate'; repeat for several")
    serve.add_argument("--resume-grace", type=_resume_seconds, default=5.0, metavar="SECONDS",
                       help="how long a streamed run goes on after its reader is gone, for the client to come back "
                       "with Last-Event-ID, before it is stopped (default 5; 0: stop at once)")
    serve.add_argument("--header-timeout", type=_header_seconds, default=10.0, metavar="SECONDS",
                       help="seconds a client may take to send a request's headers before it is cut off, and, once a "
                       "request was answered before its body was read (415, 413, 403, 408), to send the rest of that "
                       "body (default 10)")
    serve.add_argument("--max-connections", type=_connections, default=512,
                       help="connections held at once; more are closed as they open (default 512)")
    serve.add_argument("--max-connections-per-client", type=_client_connections, default=None, metavar="N",
                       help="connections held at once from one client address (an IPv6 /64); more from it are "
                       "closed as they open, so that one client cannot take every slot (default: a quarter of "
                       "--max-connections, 128). Behind a reverse proxy every client is the proxy: give it the "
                       "same number as --max-connections, and let the proxy limit each client")


def _mcp_server_arguments(mcp: argparse.ArgumentParser) -> None:
    """Lesson 24: the shop's tools for any MCP host. Without --port it speaks on stdin/stdout, as hosts expect."""
    mcp.add_argument("--port", type=_port, default=None, help="serve Streamable HTTP on 127.0.0.1:PORT/mcp instead "
                     "of stdio (0: any free port), to programs of this account only (on Linux; where the system does "
                     "not say whose a connection is, to every account of this machine)")
    mcp.add_argument("--db", default=_shop_db_setting() or ":memory:", metavar="FILE",
                     help="the shop's SQLite file, filled with the course's orders on first use (default: "
                     "$TINYAGENT_SHOP_DB, else a freshly seeded shop in memory)")
    mcp.add_argument("--now", type=_moment, help="pretend it is this time in the shop (China, UTC+8), e.g. 2026-06-30T19:05:23 (default: the real time)")


# Each command: its one-line help, anything more add_parser takes, and what adds its arguments.
COMMANDS = {
    "ask": ("run the shop agent on one request", {}, _ask_arguments),
    "classroom": ("serve the classroom model for a room", {}, _classroom_arguments),
    "local-model": ("serve SmolLM2-135M (llama.cpp) on 127.0.0.1", {}, _local_model_arguments),
    "doctor": ("check the configured model endpoint and suggest fixes",
               {"description": "Check the configured model endpoint for real and say how to fix what fails. Exit code "
                               "0 when every required check passed, 1 when the endpoint failed one, 2 for a bad option "
                               "or settings that cannot be used."},
               _doctor_arguments),
    "weather-service": ("serve lesson 15's weather API on 127.0.0.1", {}, _weather_service_arguments),
    "eval": ("run the evaluation suite and print the scores",
             {"description": "Run the evaluation suite (lesson 18) against the configured model. Exit code 0 when "
                             "every task passed, 1 when one failed, 2 for a bad option or a model that cannot be "
                             "used."},
             _eval_arguments),
    "serve": ("serve the shop agent over HTTP, with a live trace page at /",
              {"description": "Serve the shop agent: POST /agent/invoke, POST /agent/stream (Server-Sent Events), "
                              "and the trace page at /. Needs the serve extra."},
              _serve_arguments),
    "mcp-server": ("serve the shop's tools over MCP (stdio, or Streamable HTTP with --port)", {},
                   _mcp_server_arguments),
}


def main(argv: list[str] | None = None) -> int:
    stderr = sys.stderr
    # Started with stderr closed (2>&-), print(..., file=sys.stderr) would write to stdout, into the answer
    # (after --json's JSON): what nobody can read goes nowhere.
    sys.stderr = BestEffortStream(stderr if stderr is not None else open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    try:
        return _run_command(sys.argv[1:] if argv is None else list(argv))
    finally:
        sys.stderr = stderr


def _run_command(argv: list[str]) -> int:
    parser = OneLineParser(prog="python -m tinyagent", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, more, add_arguments) in COMMANDS.items():
        add_arguments(commands.add_parser(name, help=help_text, **more))

    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, so the error points at that command's --help
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if sys.stdout is None and args.command in ANSWERING:  # started with stdout closed (>&-): print() writes nothing
        print(f"error: standard output is closed, so nothing could show what {args.command} finds; run it with "
              "its output going somewhere", file=sys.stderr)
        return 2
    try:
        with _stop_signals_for(args):
            return _dispatch(args, parser)
    except KeyboardInterrupt:  # Ctrl-C in a command that ends on its own (the servers stop on it themselves)
        print("interrupted", file=sys.stderr)
        return 130
    except OutputLost as lost:
        print(f"error: {lost}", file=sys.stderr)
        return 2
    except OSError as exc:  # a notice printed before the result, into a closed pipe (`| head -c 10`) or a full disk
        if exc.errno not in STDOUT_FAILURES:  # (stderr's failures never come here: BestEffortStream keeps them)
            raise
        print(f"error: {_stdout_lost(exc)} before anything was done", file=sys.stderr)
        return 2


ANSWERING = ("ask", "eval", "doctor")  # the commands whose output is their whole point
SERVING = ("classroom", "local-model", "weather-service", "serve")  # and mcp-server with --port: each stops on
# SIGINT or SIGTERM through its own StopSignals (hosting/signals.py), entered once its modules are imported


def _stop_signals_for(args: argparse.Namespace) -> contextlib.AbstractContextManager:
    """For a server, StopSignals from now on: its imports take up to half a second (the MCP SDK, uvicorn), and a
    SIGINT in that time was lost when the server was started with SIGINT ignored (a background job, nohup), which
    left it running. The server's own StopSignals takes over the stop noted here. Other commands: nothing."""
    if args.command in SERVING or (args.command == "mcp-server" and args.port is not None):
        return StopSignals()
    return contextlib.nullcontext()
STDOUT_FAILURES = (errno.EPIPE, errno.ENOSPC, errno.EBADF)  # what a print to a closed pipe or a full disk raises


class OutputLost(Exception):
    """Standard output could not be written (a pipe closed early, a full disk); the message says what was lost."""


class BestEffortStream:
    """sys.stderr while a command runs: a message that cannot be written (stderr into a closed pipe, as in
    `2>&1 | head -1`, or a full disk) is dropped. Raised, it would stop the command halfway, or break the handler
    that reports a failure, and the exit code would say something else (1: "a task failed"). Nobody can be told
    through a stream that is gone; the exit code still tells. From its first failure on, the stream goes nowhere."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._gone()

    def _gone(self) -> None:
        # What is still buffered would fail again at exit, with an "Exception ignored" message: to /dev/null.
        _to_nowhere(self._stream)

    def __getattr__(self, name: str):  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self._stream, name)


def _to_nowhere(stream: TextIO) -> None:
    """Point the file descriptor under `stream` at /dev/null, if it has one (a test's captured stream has none)."""
    with contextlib.suppress(OSError, ValueError):  # io.UnsupportedOperation is both
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _stdout_lost(exc: OSError, lost: str = "") -> OutputLost:
    """OutputLost for a print to stdout that failed with `exc`, with `lost` after the reason (what the reader did
    not get: the run's changes, say). From here on stdout goes nowhere: what is still buffered would fail again when
    Python flushes at exit (a second error, a traceback-like "Exception ignored" message)."""
    _to_nowhere(sys.stdout)
    return OutputLost(f"could not write to standard output ({exc.strerror or type(exc).__name__})"
                      + (f"; {lost}" if lost else ""))


def _write_out(text: str, lost: str = "") -> None:
    """Print a command's result to stdout. OutputLost when it cannot be written, with `lost` after the reason, since
    nothing printed to stdout from here on reaches anyone."""
    try:
        print(text, flush=True)
    except OSError as exc:
        raise _stdout_lost(exc, lost) from None


@contextlib.contextmanager
def _saying_what_it_made(*paths: str | Path) -> Iterator[None]:
    """Around a server's start: if its banner cannot be printed (`| true`) after it made some of `paths` (its shop,
    its session store: those that were not there before), the error names them, and does not say nothing was done.
    ":memory:" and URLs are no files."""
    new = [str(path) for path in paths if str(path) != ":memory:" and "://" not in str(path)
           and not os.path.lexists(path)]
    try:
        yield
    except OSError as exc:
        made = [path for path in new if os.path.lexists(path)]
        if exc.errno not in STDOUT_FAILURES or not made:
            raise
        raise _stdout_lost(exc, f"the server stopped before serving, after creating {' and '.join(made)}") from None


def _dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.command == "serve":
        return _serve(args)
    if args.command == "weather-service":
        return _weather_service(args)
    if args.command == "mcp-server":
        return _mcp_server(args)
    if args.command == "eval":
        return _eval(args, parser)
    if args.command == "ask":
        return _ask(args)
    if args.command == "local-model":
        return _local_model(args)
    if args.command == "doctor":
        return _doctor(args)
    return _classroom(args)


def _http_status(text: str) -> int:
    status = ascii_number(text)
    if status is None or not 400 <= status <= 599:
        raise argparse.ArgumentTypeError(f"--status must be an HTTP error status from 400 to 599, got {text!r}")
    return status


def _weather_service(args: argparse.Namespace) -> int:
    from tinyagent.toolkit.weather_api import serve_weather

    _printable_stdout()  # its banner shows a city in Chinese: a terminal that cannot must still get the service
    try:
        serve_weather(port=args.port, delay_s=args.delay, status=args.status)
    except TinyAgentError as exc:  # a port it cannot listen on
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _printable_stdout() -> None:
    """A character the terminal cannot show becomes "?" instead of a UnicodeEncodeError traceback."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")


# A call refused for one of these is the settings' mistake, not the model's (the key; the URL or the model's name,
# a redirect among them): `ask` then exits 2, as for a bad option, where a run that failed otherwise exits 1.
SETTINGS_ERRORS = (AuthenticationError, NotFoundError)


class _AskClient(LlmClient):
    """The client `ask` runs with: it keeps the error of its last call, which says whether a failed run is the
    settings' mistake (exit 2) or not (exit 1)."""

    last_error: LlmError | None = None

    def chat(self, *args, **options):
        self.last_error = None
        try:
            return super().chat(*args, **options)
        except LlmError as exc:
            self.last_error = exc
            raise


def _ask(args: argparse.Namespace) -> int:
    from tinyagent.agent import ReActAgent
    from tinyagent.clock import fixed_clock, system_clock
    from tinyagent.llm_client import reply_timeouts
    from tinyagent.settings import load_settings
    from tinyagent.shop import Shop, shop_registry

    _printable_stdout()
    clock = fixed_clock(args.now) if args.now else system_clock
    timeouts = reply_timeouts(args.timeout) if args.timeout else {}
    try:
        settings = load_settings(model=args.model, notice=not args.json)
        if in_clear := settings.key_in_clear():
            print(f"[tinyagent] note: {in_clear}", file=sys.stderr)
        with Shop(str(args.db), clock=clock) as shop:
            llm, tools = _AskClient.from_settings(settings, **timeouts), shop_registry(shop, clock)
            if args.plan or args.skill:
                run = _start_planned_or_scoped(args, llm, tools)
            else:
                run = ReActAgent(llm, tools, max_steps=args.max_steps, lang=args.lang).start(args.question)
            try:
                with _ended_as_by_ctrl_c(signal.SIGTERM, signal.SIGHUP):
                    result = run.finish()
            except KeyboardInterrupt:  # Ctrl-C: run.trace still holds the rounds that ran, a refund among them
                return _interrupted(args, run.trace, tools)
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = _what_was_done(result.trace, tools)
    try:
        # a terminal paused (Ctrl-S) or a pipe nobody reads holds the answer's print: a stop then still says the refund
        with _ended_as_by_ctrl_c(signal.SIGTERM, signal.SIGHUP):
            _write_out(result.trace.to_json() if args.json else result.trace.format(args.lang, usage=args.usage),
                       lost=done)
    except KeyboardInterrupt:
        _to_nowhere(sys.stdout)  # what is still buffered would hold the exit too
        print("interrupted while the answer was printed" + (f"; {done}" if done else ""), file=sys.stderr)
        return 130
    if result.ok:
        return 0
    detail = (getattr(result.trace.end, "detail", "") or "").splitlines()
    # one_line: the detail may quote a server's error message, with ESC sequences of its own
    print(f"stopped: {result.reason}" + (f": {one_line(detail[0])}" if detail else ""), file=sys.stderr)
    return 2 if isinstance(llm.last_error, SETTINGS_ERRORS) else 1


@contextlib.contextmanager
def _ended_as_by_ctrl_c(*signals: signal.Signals) -> Iterator[None]:
    """Within: each of `signals` ends the run as Ctrl-C does, so what it had done is still said (a `kill`, or the
    terminal closed, had ended the process at once with nothing printed, a refund made or not)."""
    previous = {signum: signal.signal(signum, signal.default_int_handler) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupted(args: argparse.Namespace, trace, tools) -> int:
    """Ctrl-C during an `ask` run: the rounds that ran are printed as a finished run's are, and the line on stderr
    names what they changed (a refund stays made), so that nothing done goes unreported."""
    done = _what_was_done(trace, tools, interrupted=True)
    if trace.events:
        _write_out(trace.to_json() if args.json else trace.format(args.lang, usage=args.usage), lost=done)
    print("interrupted" + (f"; {done}" if done else ""), file=sys.stderr)
    return 130


def _what_was_done(trace, tools, interrupted: bool = False) -> str:
    """The calls of tools that change something (`read_only` not set: a refund) that worked, for a reader who did
    not get the trace that shows them; "" when there were none. `interrupted`: the run was stopped where it was,
    perhaps inside a call (a refund's write may commit just before Ctrl-C), so a call with no result is said too."""
    from tinyagent.memory.run_changes import calls_cut_short, changes_made, writes_in

    guards = writes_in(tools)
    changes = changes_made(trace, guards)
    said = ["the run had done this before: " + "; ".join(changes)] if changes else []
    cut_short = calls_cut_short(trace, guards) if interrupted else []
    if cut_short:
        said.append("the run may have done this: " + "; ".join(cut_short))
    return "; ".join(said)


def _start_planned_or_scoped(args: argparse.Namespace, llm, tools):
    """Lesson 17: `ask --plan` starts plan-and-execute; `ask --skill NAME` one loop inside that skill (the run,
    started, for the caller to finish)."""
    from tinyagent.agent import ReActAgent
    from tinyagent.architectures.skills import SkillActivated
    from tinyagent.prompts import detect_language

    if args.plan:
        from tinyagent.architectures.plan_execute import PlanAndExecuteAgent

        executor = ReActAgent(llm, tools, max_steps=args.max_steps, lang=args.lang)
        return PlanAndExecuteAgent(llm, executor=executor, lang=args.lang).start(args.question)
    from tinyagent.architectures.skills import shop_skills

    skill = shop_skills()[args.skill]  # a name _skill_name let through
    lang = args.lang or detect_language(args.question)
    agent = ReActAgent(llm, skill.scope(tools), max_steps=args.max_steps, lang=args.lang,
                       system_prompt=skill.system_prompt(tools, lang))
    run = agent.start(args.question)
    run.trace.append(SkillActivated(1, skill.name, skill.tools, "--skill"))  # first, before the run's own events
    return run


def _eval(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from tinyagent.evaluation import TASK_NAMES, evaluate
    from tinyagent.llm_client import reply_timeouts
    from tinyagent.settings import load_settings

    _printable_stdout()
    unknown = [name for name in args.task or () if name not in TASK_NAMES]
    if unknown:
        parser.exit(2, f"error: no task called {unknown[0]!r}: choose from {', '.join(TASK_NAMES)} "
                       f"(see {parser.prog} eval --help)\n")
    timeouts = reply_timeouts(args.timeout) if args.timeout else {}
    langs = None if args.lang == "both" else [args.lang]
    try:
        settings = load_settings(model=args.model, notice=False)
        llm = LlmClient.from_settings(settings, **timeouts)
        # One tiny request first: a wrong model name, URL or key fails here, once, as a bad option, and
        # not as every task of the suite failing the same way.
        llm.chat([{"role": "user", "content": "Hello"}], max_tokens=5)
        print(f"evaluating {settings.describe()}", file=sys.stderr)
        report = evaluate(llm, args.protocol, names=args.task, langs=langs, max_steps=args.max_steps,
                          progress=not args.no_progress)
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json == "-":
        _write_out(report.to_json(), lost="the results were not saved anywhere else")
        return 0 if report.passed else 1
    if args.json is not None:  # saved before the table is printed: a failed print must not lose the results
        earlier = args.json.exists()
        try:
            report.save(args.json)  # whole or not at all: a failure leaves an earlier run's results in place
        except OSError as exc:
            kept = "; the file that was there is left as it was" if earlier else ""
            print(f"error: could not write {args.json}: {exc.strerror or exc}{kept}", file=sys.stderr)
            _write_out(report.table(latency=True))
            return 2
        print(f"results written to {args.json}", file=sys.stderr)
    _write_out(report.table(latency=True),
               lost=f"the results are in {args.json}" if args.json is not None else "the table was not shown")
    return 0 if report.passed else 1


def _serve(args: argparse.Namespace) -> int:
    try:
        from tinyagent.serving import ServiceConfig, ServiceServer, serve_workers
        from tinyagent.serving.service import DEFAULT_SESSIONS, SERVICE_DEFENCES
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from tinyagent.hosting.peer_account import accounts_can_be_told
    from tinyagent.memory.session_store import safe_url

    if args.operator_key is not None and args.operator_key == args.api_key:
        print("error: --operator-key must differ from --api-key: a client's key must not answer approvals",
              file=sys.stderr)
        return 2
    store = args.session_store or str(DEFAULT_SESSIONS)
    if store != ":memory:" and os.path.realpath(store) == os.path.realpath(args.db):
        # Checked here, before the shop makes the file: the store would then only find the shop's tables in it.
        print(f"error: --session-store and --db are the same file ({store}): the sessions need a file of their own",
              file=sys.stderr)
        return 2
    per_client = args.max_connections_per_client or max(args.max_connections // 4, 1)
    config = ServiceConfig(max_steps=args.max_steps, timeout_s=args.timeout, max_body_bytes=args.max_body,
                           api_key=args.api_key or None, operator_key=args.operator_key, session_store=store,
                           shop_db=str(args.db), now=args.now,
                           model=args.model, header_timeout_s=args.header_timeout,
                           max_connections=args.max_connections,
                           max_connections_per_client=per_client,
                           allowed_hosts=tuple(dict.fromkeys([*args.allowed_host, args.host])),
                           approval_timeout_s=args.approval_timeout, auto_approve=args.auto_approve,
                           resume_grace_s=args.resume_grace, team=args.team,
                           defences=tuple(d for d in SERVICE_DEFENCES if d not in args.without))

    def banner(port: int) -> None:
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(f"tinyagent service on http://{host}:{port}/  (the trace page; POST /agent/invoke, "
              f"POST /agent/stream)\nworkers: {args.workers}; sessions: {safe_url(store)}; "
              f"API key: {'required' if config.api_key else 'none'}; operator key: "
              f"{'required for approvals' if config.operator_key else 'none'}", flush=True)
        if not config.api_key:
            names = ", ".join(dict.fromkeys(["localhost", "127.0.0.1", "[::1]", *(
                f"[{h}]" if ":" in h else h for h in config.allowed_hosts if h not in ("0.0.0.0", "::", ""))]))
            if accounts_can_be_told():
                print(f"answers only for the hosts {names} (--allowed-host adds one) and, from this machine, only the "
                      "programs of the account running the service (--api-key lifts both checks)", flush=True)
            else:
                print(f"answers only for the hosts {names} (--allowed-host adds one; --api-key lifts the check), "
                      "and to any account of this machine: this system does not say whose a connection is (on a "
                      "shared machine, start it with --api-key)", flush=True)
        if config.auto_approve:
            print("approvals: AUTOMATIC (--auto-approve): every refund is approved without asking anyone; "
                  "for a demonstration only", flush=True)
        else:
            where = "the page's buttons, or POST /agent/approvals/<id>"
            if config.operator_key:
                who = f"each refund waits for the operator's yes (--operator-key: {where})"
            elif config.api_key:
                who = "nobody can answer them (--api-key without --operator-key: a client's key cannot)"
            elif accounts_can_be_told():
                who = f"each refund waits for a yes from this machine, by the account running the service ({where})"
            else:
                who = ("nobody can answer them (no key, and this system does not say which account calls: start "
                       "the service with --operator-key)")
            print(f"approvals: {who}; no answer in {config.approval_timeout_s:g} s is a timeout: nothing is paid",
                  flush=True)
            if args.workers > 1:  # approvals.py keeps them in memory, per process
                print(f"approvals with {args.workers} workers: each waits in the worker running its refund, and a list "
                      "or an answer reaches it only when its request lands on that worker (else 404, and the "
                      "refund times out unpaid); to approve refunds by hand, run one worker", flush=True)
        print("Press Ctrl-C to stop.", flush=True)

    # StopSignals before the banner: a Ctrl-C right after it must not be lost.
    with _saying_what_it_made(args.db, store), StopSignals() as stop:
        # Each binds its port before it makes the shop's and the store's files, then checks them (serve_workers
        # with an AgentService made and closed), so a refusal leaves nothing new behind.
        try:
            if args.workers == 1:
                server = ServiceServer(config, args.host, args.port)
            else:
                serve_workers(config, args.host, args.port, args.workers, listening=banner, stop=stop)
        except (TinyAgentError, ValueError) as exc:
            print(f"error: {first_line(exc)}", file=sys.stderr)
            return 2
        if args.workers == 1:
            banner(server.port)
            stopped_by = server.serve_forever(stop)
        else:
            stopped_by = stop.received.name if stop.received is not None else "SIGINT or SIGTERM"
    print(f"service stopped ({stopped_by}).", file=sys.stderr)
    return 0


def _mcp_server(args: argparse.Namespace) -> int:
    from tinyagent.clock import fixed_clock, system_clock

    try:
        from tinyagent.toolkit.mcp_server import serve_mcp
    except ImportError as exc:
        print(f'error: the MCP server needs the official SDK ({exc.name}): pip install -e ".[mcp]" in the course '
              "folder", file=sys.stderr)
        return 2
    clock = fixed_clock(args.now) if args.now else system_clock
    try:
        with _saying_what_it_made(args.db):
            stopped_by = serve_mcp(args.db, clock, port=args.port)
    except TinyAgentError as exc:  # a shop file it cannot use, a port it cannot listen on
        print(f"error: {first_line(exc)}", file=sys.stderr)
        return 2
    print(f"MCP server stopped ({stopped_by}).", file=sys.stderr)
    return 0


def _classroom(args: argparse.Namespace) -> int:
    from tinyagent.classroom.server import serve_room, tls_context

    if (args.certfile is None) != (args.keyfile is None):
        print("error: --certfile and --keyfile go together: the certificate and its private key", file=sys.stderr)
        return 2
    if args.hub_auth and args.api_key is not None:  # argparse sees only --api-key itself as its group's other choice
        print("error: --hub-auth serves the hub's tokens, not a key: unset TINYAGENT_CLASSROOM_API_KEY",
              file=sys.stderr)
        return 2
    try:
        tls = tls_context(args.certfile, args.keyfile) if args.certfile is not None else None
        serve_room(args.host, args.port, api_key=args.api_key, base_path=args.base_path, hub_auth=args.hub_auth,
                   tls=tls)
    except TinyAgentError as exc:  # a certificate or key it cannot use, a host or port it cannot listen on
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _local_model(args: argparse.Namespace) -> int:
    from tinyagent.local_model import serve_local_model

    try:
        serve_local_model(args.port, verbose=args.verbose, threads=args.threads)
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from tinyagent.doctor import run_doctor
    from tinyagent.settings import load_settings

    _printable_stdout()
    settings = None
    if args.model:
        try:
            settings = load_settings(model=args.model, notice=False)
        except TinyAgentError as exc:  # the command line's mistake, as in ask: no check ran
            print(f"error: {exc}", file=sys.stderr)
            return 2
    report = io.StringIO()  # the report is printed once it is whole: a failed print is then one clear line
    code = run_doctor(settings, out=report, timeout=args.timeout)
    _write_out(report.getvalue().rstrip("\n"))
    return code


def run() -> None:
    """The command's entry point (`python -m tinyagent`, the `tinyagent` script): main(), then exit."""
    code = main()
    # The process ends here, and Python's shutdown would collect every object still alive, a wait at the end of
    # every command. Nothing collectable is left that matters (main closed the shop and the server): freeze them.
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
