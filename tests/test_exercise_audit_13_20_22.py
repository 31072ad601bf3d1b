"""Wrong answers to lessons 13 and 20's exercises that an audit found passing, or failing with a message that named
something the answer got right: each now fails and says what is wrong, and each lesson's solution still passes."""

from __future__ import annotations

import json
from datetime import datetime

from tests.test_exercises import _text_of as text_of
from tests.test_exercises import failure, passes
from tinyagent.checks import check_fold_logistics, check_observations_in


# -- 13, exercise 1 ------------------------------------------------------------------------------------
def fold_with(text, latest_of=lambda traces: max(traces, key=lambda trace: trace["time"]), count=len, **dumps):
    """The solution's fold (notebooks/solutions/13_context.ipynb), with how `latest` is picked, how the traces are
    counted and how the JSON is written given: the wrong answers below swap one of them."""
    data = json.loads(text)
    if "error" in data:
        return text
    traces = data["traces"]
    folded = {"trackingNo": data["trackingNo"], "carrier": data["carrier"], "status": data["status"],
              "latest": latest_of(traces) if traces else None, "traces": count(traces)}
    return json.dumps(folded, **({"ensure_ascii": False, "separators": (",", ":")} | dumps))


def test_13_the_solution_passes():
    assert passes(check_fold_logistics, fold_with)


def test_13_a_fold_over_several_lines_is_told_of_its_indent_not_its_separators():
    # indent=1 with separators=(",", ":"): was told to pass the separators it already passes
    said = failure(check_fold_logistics, lambda text: fold_with(text, indent=1))
    assert "it runs over several lines (indent): leave indent out" in said, said
    assert "separators=" not in said, said


def test_13_an_error_returned_as_a_dict_is_told_to_come_back_unchanged():
    # an error Observation read with json.loads and returned as it came out: was told to return "the fold" as JSON
    def error_as_a_dict(text):
        data = json.loads(text)
        return data if "error" in data else fold_with(text)

    said = failure(check_fold_logistics, error_as_a_dict)
    assert 'an Observation with an "error" key comes back unchanged, the very text it was given' in said, said
    assert "return the fold" not in said, said


def test_13_a_rewritten_time_in_latest_is_named_where_the_ids_rule_heads_it():
    # the newest trace's time rewritten as ISO: headed by the ids' sentence, the hint now says they are right
    def iso_time(traces):
        newest = max(traces, key=lambda trace: datetime.fromisoformat(trace["time"]))
        return {"time": datetime.fromisoformat(newest["time"]).isoformat(), "desc": newest["desc"]}

    said = failure(check_fold_logistics, lambda text: fold_with(text, latest_of=iso_time))
    assert "the spec says: `trackingNo`, `carrier` and `status` as they were" in said, said
    assert ("`trackingNo`, `carrier` and `status` are right here; `latest` is the trace as it was, its time text "
            "too.") in said, said


def test_13_a_capped_count_is_named_under_the_count_s_rule():
    # the traces cut to ten before anything else: headed by the count's sentence, the hint talked of `latest`
    def first_ten(text):
        data = json.loads(text)
        if "error" in data:
            return text
        return fold_with(json.dumps({**data, "traces": data["traces"][:10]}, ensure_ascii=False))

    said = failure(check_fold_logistics, first_ten)
    assert "the spec says: `traces` is how many traces there were" in said, said
    assert "traces is 10, expected 12: every trace counts, however many there are." in said, said


# -- 20, exercise 1 ------------------------------------------------------------------------------------
def observations_with(after_label=str.strip, tool=str.strip, prompt_line=str.strip):
    """The solution's reader, with what is done to a user message's text after its label, to a tool's content and
    to a whole prompt's line after its label given."""
    def observations_in(body):
        found = []
        for item in body.get("messages", body.get("input", [])):
            if item.get("type") == "function_call_output":
                found.append(item["output"] or "")
                continue
            text = text_of(item.get("content")).strip()
            if item.get("role") == "tool":
                found.append(tool(text_of(item.get("content"))))
            elif item.get("role") == "user" and text.startswith("Observation:"):
                found.append(after_label(text[len("Observation:"):]))
            elif item.get("role") == "user" and "\nQuestion:" in "\n" + text:
                scratchpad = ("\n" + text).rsplit("\nQuestion:", 1)[1]
                found += [prompt_line(line[len("Observation:"):]) for line in scratchpad.splitlines()
                          if line.startswith("Observation:")]
        return found
    return observations_in


def test_20_the_solution_passes():
    assert passes(check_observations_in, observations_with())


def test_20_a_user_message_s_result_left_unstripped_fails():
    # the text after the label kept as it is (" {...}"): passed, since both lists were stripped before comparing
    said = failure(check_observations_in, observations_with(after_label=lambda text: text))
    assert "the spec says: a user message that begins with Observation: gives all the text after the label" in said
    assert "keeps white space around it: the text after the label is stripped." in said, said


def test_20_a_tool_s_content_and_a_prompt_s_lines_may_keep_their_white_space():
    # the spec says "its content" and "the text after the label" of those: as they are is right too
    def as_it_is(text):
        return text

    assert passes(check_observations_in, observations_with(tool=as_it_is, prompt_line=as_it_is))


def test_20_a_result_cut_to_its_first_line_is_told_so_not_that_the_order_is_wrong():
    # a user message's result of several lines cut to its first: was told "another result: not in the order sent"
    def first_line(text):
        return (text.splitlines() or [""])[0].strip()

    said = failure(check_observations_in, observations_with(after_label=first_line))
    assert "is its first line only: keep all its lines." in said, said
    assert "not in the order sent" not in said, said
