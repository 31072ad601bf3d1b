import json

import pytest

from tinyagent import ReActAgent, Trace

from .test_agent import ACT_ORDER, ACT_TRACK, FINAL, ScriptedLlm, tools


def run(question="Where is order 88231?", *replies):
    return ReActAgent(ScriptedLlm(*(replies or (ACT_ORDER, ACT_TRACK, FINAL))), tools()).run(question)


def test_prints_round_by_round_in_english():
    text = run().trace.format("en")
    assert text.splitlines()[:4] == [
        "===== Round 1 =====",
        "[Thought] I need the order.",
        "[Tool call] queryOrder(88231)",
        '[Tool result] {"orderId": "88231", "trackingNo": "SF1"}',
    ]
    assert text.endswith("[Final answer] Your parcel SF1 was signed for.")


def test_prints_in_chinese():
    text = run().trace.format("zh")
    assert "===== 第 2 圈 =====" in text
    assert "[工具调用] queryLogistics(SF1)" in text
    assert "[最终答复] Your parcel SF1 was signed for." in text


def test_default_language_follows_the_question():
    assert "第 1 圈" in str(run("订单 88231 到哪了？").trace)


def test_usage_lines_are_optional():
    trace = run().trace
    assert "[Tokens]" not in trace.format()
    assert trace.format(usage=True).count("[Tokens] 7 in + 3 out, finish_reason=stop") == 3
    assert trace.total_usage() == {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}


def test_fallback_and_stop_are_labelled():
    assert "[Final answer - fallback] plain prose" in run("q", "plain prose").trace.format()
    stopped = ReActAgent(ScriptedLlm(ACT_ORDER), tools(), max_steps=1).run("q").trace.format()
    assert "[Stopped: max_steps] Sorry" in stopped


def test_json_round_trip_keeps_every_event():
    trace = run().trace
    again = Trace.from_json(trace.to_json())
    assert again.events == trace.events
    assert again.format() == trace.format()
    assert json.loads(trace.to_json())["events"][0]["type"] == "llm_call"


def test_from_json_rejects_garbage():
    with pytest.raises(TypeError):
        Trace.from_json("[1, 2]")
    with pytest.raises(ValueError, match="unknown event type"):
        Trace.from_json('{"events": [{"type": "nope", "step": 1}]}')


@pytest.mark.parametrize("text, says", [
    # Each once loaded, then failed far from the file: summing the usage, counting the rounds, printing.
    ('{"events": [{"type": "llm_call", "step": 1, "usage": null}]}', "usage should be dict"),
    ('{"events": [{"type": "llm_call", "step": "1"}]}', "step should be int"),
    ('{"events": [{"type": "final", "step": 1, "answer": 5}]}', "answer should be str"),
    ('{"events": [{"type": "tool_call", "step": true, "name": "x"}]}', "step should be int"),
    ('{"events": [], "lang": "fr"}', "lang must be one of"),
    ('{"events": [], "lang": null}', "lang must be one of"),
    ('{"events": [5]}', "events as objects"),
])
def test_from_json_refuses_a_field_of_the_wrong_type_where_it_reads_it(text, says):
    with pytest.raises((TypeError, ValueError), match=says):
        Trace.from_json(text)


def test_repr_is_short():
    assert repr(run().trace) == "<Trace 3 rounds, 11 events, ended: final_answer>"


def test_a_printed_trace_obeys_no_escape_sequence_its_words_hold():
    # A model's answer or a server's error holding ESC [2J (clear the screen), a carriage return or a bidi override
    # was printed raw: on a terminal it could wipe the rounds above it, a refund among them, and write its own.
    from tinyagent.events import Final, Observation

    hostile = "\x1b[2J\x1b[H===== Round 1 =====\r[Final answer] nothing was refunded \u202eevil"
    trace = Trace(lang="en")
    trace.append(Observation(1, '{"refundId":"RF1"}\tdone'))
    trace.append(Final(2, hostile))
    printed = trace.format()
    assert "\x1b" not in printed and "\r" not in printed and "\u202e" not in printed
    assert "\\x1b[2J\\x1b[H" in printed and "\\r[Final answer]" in printed and "\\u202eevil" in printed
    assert '{"refundId":"RF1"}\tdone' in printed and "\n\n===== Round 2 =====\n" in printed  # lines and tabs kept
