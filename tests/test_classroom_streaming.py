"""The classroom server's streaming for lesson 14: a pace you can set (so time to first token means something),
and `classroom-split-stop`, which splits every stop string across two chunks."""

from __future__ import annotations

import time

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.classroom.behaviour import respond
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.server import TOKENS_PER_CHUNK, ClassroomServer, chunk_tokens, split_stop_text
from tinyagent.classroom.tokens import count_tokens, truncate_to_tokens

from .conftest import PATIENCE

REACT = 'Thought: look it up\nAction: queryOrder\nAction Input: 88231\nObservation: {"s": 1}\nThought: ok\nObservation: x'


def test_every_stop_string_is_split_across_two_pieces_at_its_middle():
    deltas, finish_reason = split_stop_text(REACT, ("Observation:",), None)
    assert "".join(deltas) == REACT and finish_reason == "stop"
    assert not any("Observation:" in piece for piece in deltas)
    assert sum(piece.endswith("Observ") for piece in deltas) == 2
    assert all(count_tokens(piece) <= TOKENS_PER_CHUNK + 1 for piece in deltas)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="Obsrvaton: \nAB88231", max_size=60), st.lists(st.text(alphabet="Obsrvaton:", min_size=2,
       max_size=6), min_size=1, max_size=3), st.none() | st.integers(1, 30))
def test_split_stop_text_keeps_the_text_and_never_sends_a_stop_string_whole(text, stop, max_tokens):
    deltas, _ = split_stop_text(text, tuple(stop), max_tokens)
    assert "".join(deltas) == (text if max_tokens is None else truncate_to_tokens(text, max_tokens))
    assert all(deltas)
    for s in stop:
        assert not any(s in piece for piece in deltas) or len(s) < 2


def test_split_stop_variant_is_the_classroom_text_ignoring_stop():
    request = {"model": "classroom-split-stop", "messages": [
        {"role": "system", "content": "Tools:\n1. queryOrder - look up an order. Input: the order id."},
        {"role": "user", "content": "Where is order 88231?"}]}
    careful = respond({**request, "model": "classroom"})
    split = respond(request)
    assert split.text == careful.text and split.splits_stop and not careful.splits_stop


def test_the_split_stop_variant_on_the_wire():
    with ClassroomServer() as room:
        body = {"model": "classroom-split-stop", "stop": ["Observation:"], "messages": [
            {"role": "system", "content": "Tools:\n1. queryOrder - look up an order. Input: the order id."},
            {"role": "user", "content": "Where is order 88231?"}]}
        plain = requests.post(room.chat_url, json=body, timeout=PATIENCE).json()["choices"][0]["message"]["content"]
        streamed = requests.post(room.chat_url, json={**body, "stream": True}, timeout=PATIENCE).text
    assert "Observation:" in plain  # not cut: the server ignores stop for this variant
    assert "Observation:" not in streamed and 'Observ"' in streamed  # in two chunks, never whole in one


def test_a_paced_plain_answer_waits_until_it_is_typed_and_is_never_served_from_the_cache():
    tps = 200.0
    with ClassroomServer(tokens_per_second=tps, prefill_tokens_per_second=10_000.0) as room:
        body = {"model": "classroom", "messages": [{"role": "user", "content": "Hello there"}]}
        times = []
        for _ in range(2):
            started = time.perf_counter()
            answer = requests.post(room.chat_url, json=body, timeout=PATIENCE).json()
            times.append(time.perf_counter() - started)
        assert len(room.answers) == 0 and room.answers.hits == 0
    usage = answer["usage"]
    least = usage["completion_tokens"] / tps + usage["prompt_tokens"] / 10_000.0
    assert min(times) >= 0.9 * least


def test_an_unpaced_room_takes_no_time_and_counts_chunk_tokens():
    room = ClassroomServer()
    try:
        assert not room.paced and room.typing_seconds(1000) == 0.0 and room.prefill_seconds(1000) == 0.0
    finally:
        room.stop()
    paced = ClassroomServer(tokens_per_second=10, prefill_tokens_per_second=100)
    try:
        assert paced.typing_seconds(5) == 0.5 and paced.prefill_seconds(50) == 0.5
    finally:
        paced.stop()
    content = {"choices": [{"delta": {"content": "Action Input: 88231"}}]}
    call = {"choices": [{"delta": {"tool_calls": [{"function": {"name": "queryOrder", "arguments": '{"id": 1'}}]}}]}
    assert chunk_tokens(content) == 4 and chunk_tokens(call) == 1 + 6 and chunk_tokens({"choices": []}) == 0


@pytest.mark.parametrize("pace", [0, -2.5, float("nan"), True and "x"])
def test_prefill_pace_is_checked_too(pace):
    with pytest.raises(ValueError, match="prefill_tokens_per_second"):
        ClassroomServer(tokens_per_second=10, prefill_tokens_per_second=pace)


def test_reply_flag_defaults_off():
    assert Reply("x").splits_stop is False
