"""Arbitrary JSON in every field of a Chat Completions reply, through the real client, loop and command line.

Whatever a server sends, `ReActAgent.run()` returns (with an answer, or a Stopped event and its reason)
and `python -m tinyagent ask` / `doctor` print lines and an exit code, never a traceback. Each example
is served by a loopback server, so the bytes go through `requests`, `LlmClient` and the JSON decoder
exactly as a real provider's would.
"""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tinyagent import FunctionTool, LlmClient, ReActAgent, ToolRegistry
from tinyagent.__main__ import main

from .conftest import ScriptedServer, completion

QUESTION = "Where is the parcel for order 88231?"
ENDINGS = {"final_answer", "fallback", "max_steps", "llm_error", "length", "empty_reply", "native_tool_calls"}

# Where a value can be replaced in a valid reply, by path. () is the whole reply.
MESSAGE = ("choices", 0, "message")
PATHS = {
    "the reply": (),
    "choices": ("choices",),
    "choices[0]": ("choices", 0),
    "message": MESSAGE,
    "content": (*MESSAGE, "content"),
    "role": (*MESSAGE, "role"),
    "tool_calls": (*MESSAGE, "tool_calls"),
    "tool_calls[0]": (*MESSAGE, "tool_calls", 0),
    "tool_calls[0].function": (*MESSAGE, "tool_calls", 0, "function"),
    "tool_calls[0].function.name": (*MESSAGE, "tool_calls", 0, "function", "name"),
    "finish_reason": ("choices", 0, "finish_reason"),
    "usage": ("usage",),
    "usage.prompt_tokens": ("usage", "prompt_tokens"),
    "usage.completion_tokens": ("usage", "completion_tokens"),
    "usage.total_tokens": ("usage", "total_tokens"),
    "model": ("model",),
}

# Text that includes lone surrogates (hypothesis leaves them out unless asked) and the protocol's words.
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
protocol_text = st.sampled_from([
    "", "   ", "Final Answer: ok", "Thought: look\nAction: echo\nAction Input: \ud800x",
    "Thought: hmm\nAction: nope\nAction Input: 1", "Action: echo\nAction Input: " + "y" * 50,
    "Thought: t\nAction: echo\nAction Input: 1\nObservation: invented",
])
leaves = (st.none() | st.booleans() | st.integers() | st.floats() | any_text | protocol_text)
json_values = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4),
    max_leaves=10,
)


BASES = {  # valid replies that take the loop down each of its paths, before a field is replaced
    "answer": "Thought: I know.\nFinal Answer: Order 88231 was signed for.",
    "action": "Thought: look it up\nAction: echo\nAction Input: 88231",
    "native call only": None,
}


def base_reply(kind: str) -> dict:
    reply = completion(BASES[kind])
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]
    return reply


def replace(reply, path: tuple, value):
    """The reply with the value at `path` replaced (skipped where a replaced parent left no such place)."""
    if not path:
        return value
    node = reply
    for key in path[:-1]:
        if isinstance(node, dict) and key in node or isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return reply
    if isinstance(node, dict) or isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node):
        node[path[-1]] = value
    return reply


@st.composite
def replies(draw) -> str:
    """A reply with one to three fields replaced by arbitrary JSON, as the body a server would send."""
    changes = draw(st.dictionaries(st.sampled_from(sorted(PATHS)), json_values, min_size=1, max_size=3))
    reply = base_reply(draw(st.sampled_from(sorted(BASES))))
    for name in sorted(changes, key=lambda name: len(PATHS[name])):  # parents first
        reply = replace(reply, PATHS[name], changes[name])
    # ensure_ascii escapes lone surrogates as \udXXX and floats may come out as NaN or Infinity:
    # both are what a careless server really sends, and Python's json reads them.
    return json.dumps(reply, ensure_ascii=True)


@pytest.fixture(scope="module")
def fuzz_server():
    server = ScriptedServer()
    yield server
    server.close()


def echo_tools() -> ToolRegistry:
    return ToolRegistry([FunctionTool("echo", "Repeats its input.", lambda text: f"echo:{text}")])


@settings(max_examples=80, deadline=None)
@given(body=replies())
def test_run_never_raises_whatever_the_reply_holds(fuzz_server, body):
    fuzz_server.reply((200, body))
    llm = LlmClient(fuzz_server.url, None, "fuzz-model", max_retries=0)
    result = ReActAgent(llm, echo_tools(), lang="en", max_steps=3).run(QUESTION)
    event(f"ended: {result.reason}")  # shown by --hypothesis-show-statistics
    assert result.reason in ENDINGS
    assert isinstance(result.answer, str)
    # Everything a learner can print or save works, in both languages.
    for shown in (result.trace.format("en", usage=True), result.trace.format("zh", usage=True),
                  result.trace.to_json(), json.dumps(result.messages, ensure_ascii=False)):
        shown.encode("utf-8")
    assert all(isinstance(count, int) and not math.isnan(count) for count in result.trace.total_usage().values())


def strict_stream() -> io.TextIOWrapper:
    """A stream that refuses what a terminal or a pipe cannot encode, as sys.stdout does."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")


def run_command(argv: list[str]) -> tuple[int, str]:
    out, err = strict_stream(), strict_stream()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)  # an exception escaping main() is a traceback: hypothesis reports it
    err.flush()
    return code, err.buffer.getvalue().decode("utf-8")


@pytest.fixture
def provider_env(fuzz_server, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env found upward
    for name in ("TINYAGENT_OFFLINE", "TINYAGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", fuzz_server.url)
    monkeypatch.setenv("TINYAGENT_MODEL", "fuzz-model")
    return tmp_path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=replies(), extra=st.sampled_from([[], ["--json"], ["--usage"]]))
def test_ask_never_prints_a_traceback_whatever_the_reply_holds(fuzz_server, provider_env, body, extra):
    fuzz_server.reply((200, body))
    code, err = run_command(["ask", QUESTION, "--db", str(provider_env / "shop.db"), "--max-steps", "3", *extra])
    assert code in (0, 1), err
    assert "Traceback" not in err


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=replies())
def test_doctor_never_prints_a_traceback_whatever_the_reply_holds(fuzz_server, provider_env, body):
    fuzz_server.reply((200, body))
    code, err = run_command(["doctor", "--timeout", "20"])
    assert code in (0, 1), err
    assert "Traceback" not in err
