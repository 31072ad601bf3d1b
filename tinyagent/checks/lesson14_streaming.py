"""Lesson 14 (streaming): stop strings on text in pieces, and reading a stream's chunks."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from tinyagent.checks.reporting import ExerciseFailed, _brief, _fail, _not_attempted, _passed, _run, grades
from tinyagent.llm_client import LlmClient, cut_at_stop
from tinyagent.protocols.streaming import open_stream

STREAMED_STEP = ("Thought: The customer wants the parcel; I need the tracking number first.\n"
                 "Action: queryOrder\nAction Input: 88231\n")
RUN_ON = STREAMED_STEP + 'Observation: {"status": "lost at sea"}\nThought: done\nFinal Answer: It is lost.'
CUT_STREAM_TEXTS = [
    # (text, stop strings, what it is)
    (RUN_ON, ["Observation:"], "a step that runs on into an invented Observation"),
    (STREAMED_STEP + "Observed: the order exists.\nObservation: x", ["Observation:"],
     "'Observed' first, which starts like the stop string and is not it"),
    ("Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation: 已签收", ["Observation:"],
     "a Chinese step"),
    (STREAMED_STEP, ["Observation:"], "a step with no stop string in it"),
    (STREAMED_STEP + "Observ", ["Observation:"], "a reply that ends in the start of a stop string, never finished"),
    ("Thought: I know it.\nFinal Answer: signed\nObservation: x", ["Observation:", "\nFinal"],
     "two stop strings, the second one first in the text"),
]


def _pieces_of(text: str, cuts: tuple[int, ...]) -> list[str]:
    points = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(points)]


def _cut_mistake(got: str, expected: str, pieces: list[str], stop: list[str]) -> str:
    """What a wrong cut most likely did, judged from what came out."""
    if expected.startswith(got):
        return "Text is missing at the end: what was held back must come out when the stream ends."
    whole = [s for s in stop if s in got and any(s in piece for piece in pieces)]
    if whole:
        return (f"{whole[0]!r} came through in one piece: every stop string counts, and the text ends at the "
                "first one in it.")
    if len(got) > len(expected):
        return "A stop string split across two pieces must still be found."
    return "Only a stop string ends the text."


class _Arriving:
    """Pieces handed out one at a time, as a stream delivers them; it counts how many were taken, and
    refuses to be read past `last` (the piece that completes a stop string)."""

    def __init__(self, pieces: list[str], last: int | None = None):
        self.pieces, self.last, self.taken = pieces, last, 0

    def __iter__(self):
        for piece in self.pieces:
            if self.last is not None and self.taken > self.last:
                raise ExerciseFailed("read past the stop")
            self.taken += 1
            yield piece


@grades("Exercise 1")
def check_cut_stream(cut_stream: Callable | None) -> None:
    """14, exercise 1: stop strings applied to text that arrives in pieces."""
    exercise = "Exercise 1"
    if cut_stream is None:
        return _not_attempted(exercise, "Write def cut_stream(pieces, stop) in the cell above.")
    if not callable(cut_stream):
        _fail(exercise, f"cut_stream should be a function, got {type(cut_stream).__name__}")
    def run(pieces, stop, what):
        out = _run(exercise, f"cut_stream on {what}", lambda: list(cut_stream(pieces, stop)))
        if not all(isinstance(piece, str) for piece in out):
            _fail(exercise, f"on {what} it yielded {out!r}: yield the text, as strings")
        return out

    # 1. The same text as the whole reply cut at once, wherever the pieces were split.
    checked = 0
    for text, stop, what in CUT_STREAM_TEXTS:
        expected = cut_at_stop(text, stop)[0]
        at = min((text.find(s) for s in stop if s in text), default=len(text) // 2)
        splits = [(i,) for i in range(len(text) + 1)] + [(i, j) for i in range(at, at + 13) for j in range(i, at + 13)
                                                          if j <= len(text)]
        for cuts in splits:
            pieces = _pieces_of(text, cuts)
            got = "".join(run(pieces, stop, what))
            checked += 1
            if got != expected:
                _fail(exercise, f"on {what}, in pieces cut at character {' and '.join(map(str, cuts))}, it gave "
                                f"{len(got)} characters ending {_brief(got[-30:], 40)}; the whole reply cut at "
                                f"{stop} is {len(expected)} ending {_brief(expected[-30:], 40)}. "
                                + _cut_mistake(got, expected, pieces, stop))
    # 2. At once: a piece that cannot be the start of a stop string comes out before the next is read.
    first = "Thought: The customer wants the parcel."
    arriving = _Arriving([first, "\nAction: queryOrder", "\nAction Input: 88231\n"])
    stream = iter(_run(exercise, "cut_stream", cut_stream, arriving, ["Observation:"]))
    out = _run(exercise, "the first next() on cut_stream", next, stream, None)
    if out != first or arriving.taken != 1:
        _fail(exercise, f"with the pieces {arriving.pieces}, the first thing it yielded was {out!r} after reading "
                        f"{arriving.taken} piece(s); expected {first!r} after reading one: nothing in it can be the "
                        "start of 'Observation:', so the reader should see it at once (hold back only what could be)")
    # 3. It stops reading once it has found the stop string.
    pieces = ["Action Input: 88231\nObserv", "ation: {\"status\": \"lost\"}", "\nThought: done", "\nFinal Answer: x"]
    arriving = _Arriving(pieces, last=1)
    try:
        got = "".join(_run(exercise, "cut_stream", lambda: list(cut_stream(arriving, ["Observation:"]))))
    except ExerciseFailed as exc:
        if "read past the stop" not in str(exc):
            raise
        _fail(exercise, "after the stop string was complete (in the second piece) it read a third piece: stop "
                        "reading there, as the client closes the connection (the server may stop generating)")
    if got != "Action Input: 88231\n":
        _fail(exercise, f"with the pieces {pieces} it gave {got!r}; expected 'Action Input: 88231\\n'")
    return _passed(exercise, f"{checked} ways of cutting {len(CUT_STREAM_TEXTS)} replies into pieces, each cut as "
                             "the whole reply is; text that cannot start a stop string comes out at once, and "
                             "reading stops at the stop string.")


def _chunk(delta: dict | None, finish_reason: str | None = None, usage: Any = "absent") -> dict:
    data: dict = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m",
                  "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    if usage != "absent":
        data["usage"] = usage
    return data


def _stream_cases() -> list[tuple[str, list[dict], tuple[str, str | None, dict | None]]]:
    """(what, chunks, (text, finish_reason, usage)) for the exercise: real streams of the classroom model, and
    the shapes other servers send."""
    cases = []
    llm = LlmClient.classroom()
    messages = [{"role": "user", "content": "Hello!"}]
    for include_usage in (True, False):
        with open_stream(llm, messages, include_usage=include_usage) as stream:
            reply = stream.finish()
        what = "the classroom model's stream " + ("with usage asked for" if include_usage else "without usage")
        cases.append((what, reply.raw["chunks"], (reply.text, reply.finish_reason, reply.usage or None)))
    usage = {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    cases.append(("a stream whose last text, finish_reason and usage come in one chunk (as some servers send it)",
                  [_chunk({"role": "assistant", "content": None}), _chunk({"content": "Final Answer:"}),
                   _chunk({"content": " signed"}, "stop", usage)],
                  ("Final Answer: signed", "stop", usage)))
    cases.append(("a stream cut at max_tokens, usage: null in every chunk but the last",
                  [_chunk({"role": "assistant", "content": ""}, usage=None), _chunk({"content": "Thought: I"}, usage=None),
                   _chunk({"content": " need"}, usage=None), _chunk({}, "length", usage=None),
                   _chunk(None, usage=usage)],
                  ("Thought: I need", "length", usage)))
    running = [{"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n} for n in (1, 2, 3)]
    cases.append(("a stream with a running usage in every chunk (as vLLM's continuous usage stats send it)",
                  [_chunk({"role": "assistant", "content": "Final"}, usage=running[0]),
                   _chunk({"content": " Answer:"}, usage=running[1]), _chunk({"content": " ok"}, "stop", running[2])],
                  ("Final Answer: ok", "stop", running[2])))
    cases.append(("a stream whose usage chunk is followed by one more chunk with usage: null",
                  [_chunk({"role": "assistant", "content": "好的"}), _chunk({}, "stop"), _chunk(None, usage=usage),
                   _chunk(None, usage=None)],
                  ("好的", "stop", usage)))
    cases.append(("a stream with no usage and content: null in its role chunk",
                  [_chunk({"role": "assistant", "content": None}), _chunk({"content": "好的"}), _chunk({}, "stop")],
                  ("好的", "stop", None)))
    return cases


@grades("Exercise 2")
def check_read_chunks(read_chunks: Callable | None) -> None:
    """14, exercise 2: text, finish_reason and usage from the chunks of one streamed reply."""
    exercise = "Exercise 2"
    if read_chunks is None:
        return _not_attempted(exercise, "Write def read_chunks(chunks) in the cell above.")
    if not callable(read_chunks):
        _fail(exercise, f"read_chunks should be a function, got {type(read_chunks).__name__}")
    cases = _stream_cases()
    for what, chunks, expected in cases:
        got = _run(exercise, f"read_chunks on {what}", read_chunks, [dict(c) for c in chunks])
        if not isinstance(got, tuple) or len(got) != 3:
            _fail(exercise, f"on {what} it returned {got!r}: return (text, finish_reason, usage)")
        names = ("text", "finish_reason", "usage")
        for name, mine, right in zip(names, got, expected):
            if mine != right:
                why = ""
                if name == "usage" and right is None:
                    why = ": the server sent none, so say so (None); never make counts up"
                elif name == "usage":
                    why = ": it is in the last chunk that carries a usage (often one with no choices)"
                elif name == "finish_reason":
                    why = ": it comes in the chunk that has it, not always the last chunk"
                _fail(exercise, f"on {what} it read {name}={mine!r}, expected {right!r}{why}")
    return _passed(exercise, f"{len(cases)} streams read: the text joined, finish_reason from the chunk that has it, "
                             "and the usage from the final chunk, or None when the server sent none.")
