"""Lesson 19 (serving): a Server-Sent Events reader, and the service's status codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import requests

from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, _run, grades
from tinyagent.llm_client import LlmClient
from tinyagent.registry import ToolRegistry
from tinyagent.serving import ServiceConfig, ServiceServer
from tinyagent.shop.tools import shop_tools
from tinyagent.tools import FunctionTool

# Exercise 1's streams: what the service sends, and what any Server-Sent Events reader must also handle (a
# keep-alive comment, data over two lines, an event with no name, Windows line ends).
SSE_EXERCISE_STREAMS = (
    ("the service's own stream",
     ('event: start\ndata: {"session_id": "s1", "query": "Where is order 88231?"}\n\n'
     'event: reply_delta\ndata: {"type": "reply_delta", "step": 1, "text": "Thought: "}\n\n'
     'event: end\ndata: {"answer": "It is on its way.", "reason": "final_answer"}\n\n')),
    ("a stream with a keep-alive comment between two events",
     ('event: tool_call\ndata: {"name": "queryOrder", "input": "88231"}\n\n: keep-alive\n\n'
     'event: observation\ndata: {"text": "signed"}\n\n')),
    ("an event whose data comes on two data: lines (joined with a newline, then read as JSON)",
     'event: observation\ndata: {"text":\ndata:  "two lines"}\n\n'),
    ("an event with no event: line (its name is then \"message\")",
     'data: {"note": "no name"}\n\n'),
    ("an event with no event: line after a named one (its name is \"message\", not the one before's)",
     'event: tool_call\ndata: {"name": "queryOrder"}\n\ndata: {"note": "unnamed"}\n\n'),
    ("a stream with Windows line ends (\\r\\n)",
     'event: tool_call\r\ndata: {"name": "getCurrentTime"}\r\n\r\nevent: final\r\ndata: {"answer": "done"}\r\n\r\n'),
)


SSE_RULES = ("Blocks end at a blank line; in a block, ':' starts a comment, 'event:' names the event "
             "(\"message\" if none), and the 'data:' lines, joined with newlines, are the JSON.")


def read_sse_reference(text: str) -> list[tuple[str, dict]]:
    """The check's own reader: (event name, data as JSON) for each block of a Server-Sent Events text."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


@grades("Exercise 1")
def check_sse_reader(read_events: Callable[[str], list] | None) -> None:
    """19, exercise 1: read_events(text) -> [(event name, data dict), ...], for the streams above."""
    exercise = "Exercise 1"
    if read_events is None:
        return _not_attempted(exercise, "Define read_events(text) in the cell above.")
    if not callable(read_events):
        _fail(exercise, f"read_events should be a function of the stream's text, got {type(read_events).__name__}")
    for what, text in SSE_EXERCISE_STREAMS:
        got = _run(exercise, f"read_events on {what}", read_events, text)
        expected = read_sse_reference(text)
        try:
            got = [tuple(pair) for pair in got]
        except TypeError:
            _fail(exercise, f"read_events should return a list of (event, data) pairs, got {got!r}")
        if got != expected:
            place = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
            mine = _brief(got[place], 50) if place < len(got) else "nothing"
            right = _brief(expected[place], 50) if place < len(expected) else "nothing"
            _fail(exercise, f"on {what}, event {place + 1} read as {mine}, expected {right}. {SSE_RULES}")
    return _passed(exercise, f"read_events reads all {len(SSE_EXERCISE_STREAMS)} streams: comments skipped, data "
                             "lines joined, unnamed events called \"message\", \\r\\n line ends too.")


def registry_with_a_broken_courier(shop, clock=None):
    """The shop's tools, but queryLogistics raises as a courier's API that is down would (lesson 19's tests and
    exercise 2): the loop must turn that into an error Observation, and the service still answer 200."""
    def courier_down(text: str) -> str:
        raise ConnectionError("the courier's tracking API did not answer")

    return ToolRegistry([
        FunctionTool(tool.name, tool.description, courier_down, parameters=tool.parameters)
        if tool.name == "queryLogistics" else tool
        for tool in shop_tools(shop, clock)
    ])


SERVING_EXERCISE_REQUESTS = (
    "malformed JSON", "no query field", "body over the limit", "GET on /agent/invoke", "unknown session_id",
    "no API key", "a tool raises mid-run",
)


@grades("Exercise 2")
def check_status_predictions(predicted_status: dict | None) -> None:
    """19, exercise 2: the status code the service answers each request of SERVING_EXERCISE_REQUESTS with.
    The check starts a service (an API key, a 2 KB body limit, queryLogistics broken) and sends them."""
    exercise = "Exercise 2"
    if predicted_status is None:
        return _not_attempted(exercise, "Set predicted_status = {...} in the cell above.")
    if not isinstance(predicted_status, dict) or set(predicted_status) != set(SERVING_EXERCISE_REQUESTS):
        _fail(exercise, f"predicted_status should be a dict with the keys {list(SERVING_EXERCISE_REQUESTS)}, "
                        f"each an HTTP status code (a whole number)")
    for name, status in predicted_status.items():
        if isinstance(status, bool) or not isinstance(status, int):
            _fail(exercise, f"{name!r}: predict a status code, a whole number such as 200, got {status!r}")
    answers = _ask_the_service()
    for name in SERVING_EXERCISE_REQUESTS:
        status, body = answers[name]
        if predicted_status[name] != status:
            said = body.get("error", {}).get("message") if isinstance(body, dict) else None
            why = f': "{said}"' if said else " (the run ended, and the trace holds the tool's error as an Observation)"
            _fail(exercise, f"{name}: you predicted {predicted_status[name]}, the service answered {status}{why}")
    return _passed(exercise, "every status as the service answered: the client's mistakes are 4xx with a JSON "
                             "error, and a tool that fails mid-run is an Observation inside a 200.")


def _ask_the_service() -> dict[str, tuple[int, Any]]:
    config = ServiceConfig(api_key="exercise-key", max_body_bytes=2048, session_store=":memory:", shop_db=":memory:",
                           now="2026-06-30T19:05:23", max_steps=6)
    key = {"Authorization": "Bearer exercise-key"}
    with ServiceServer(config, llm=LlmClient.classroom, tools=registry_with_a_broken_courier) as server:
        invoke = server.url + "/agent/invoke"
        sent = {
            "malformed JSON": lambda: requests.post(invoke, data='{"query": "Where is order 88231?"',
                                                    headers={**key, "Content-Type": "application/json"}),
            "no query field": lambda: requests.post(invoke, json={"question": "Where is order 88231?"}, headers=key),
            "body over the limit": lambda: requests.post(invoke, json={"query": "x" * 4000}, headers=key),
            "GET on /agent/invoke": lambda: requests.get(invoke, headers=key),
            "unknown session_id": lambda: requests.post(invoke, json={"query": "Hi", "session_id": "abc"}, headers=key),
            "no API key": lambda: requests.post(invoke, json={"query": "Where is order 88231?"}),
            "a tool raises mid-run": lambda: requests.post(invoke, json={"query": "Where is my parcel, order 88231?"},
                                                           headers=key, timeout=300),
        }
        answers = {}
        for name, send in sent.items():
            response = send()
            answers[name] = (response.status_code, response.json())
        return answers
