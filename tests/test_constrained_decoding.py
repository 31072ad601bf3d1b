"""Lesson 23: grammars from the registry's JSON Schemas, checked against lesson 07's validator and llama.cpp."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import ChatResult, FunctionTool, ReActAgent, ToolRegistry, fixed_clock, parse_step, tool
from tinyagent.errors import BadRequestError
from tinyagent.protocols.constrained_decoding import (
    ConstrainedSend,
    JsonStepRead,
    StepChoices,
    WithExample,
    allowed_steps,
    input_grammar,
    read_step,
    schema_grammar,
    step_grammar,
    step_schema,
    variant_options,
)
from tinyagent.protocols.gbnf import GrammarError, literal, parse_grammar, rule_name
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.pickup import pickup_tool
from tinyagent.toolkit.schema import example_arguments
from tinyagent.toolkit.validation import problems_in

from .conftest import require_local_model

CLOCK = fixed_clock("2026-06-30T19:05:23")


def shop_tools():
    return shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)


# Lesson 07's typed tools: a plain string, a Literal with a default, a nested dataclass with a list.
@tool(name="queryOrder")
def query_order(order_id: str) -> dict:
    """Look up an order.

    Args:
        order_id: the order id, e.g. 88231
    """
    return {"orderId": order_id}


@tool(name="applyRefund")
def apply_refund(order_id: str, reason: str, kind: Literal["quality", "no_reason"] = "quality") -> dict:
    """Submit a refund.

    Args:
        order_id: the order id, e.g. 88231
        reason: why the customer wants the money back
        kind: a faulty product, or a return without a reason
    """
    return {"orderId": order_id}


def every_tool():
    return [*shop_tools(), query_order, apply_refund, pickup_tool()]


def variations(schema: dict) -> list:
    """Values around a schema: a valid one, then each property missing, of the wrong type, or an extra key,
    and for nested objects and lists the same one level down."""
    good = example_arguments(schema)
    out = [good, {**good, "surprise": 1}, [], "text", 7, None]
    for key, sub in (schema.get("properties") or {}).items():
        out.append({k: v for k, v in good.items() if k != key})
        for wrong in (12345, "12345", True, None, [], {}, ["a", "b"], "no_reason", "evening", {"city": "上海"},
                      {"city": "上海", "street": "南京西路 1 号"}, {"city": 3, "street": "x"}, ["箱子", 3]):
            out.append({**good, key: wrong})
        if sub.get("type") == "string":
            out.append({**good, key: 'with "quotes", \\ and 中文\n'})
    return out


def texts(value) -> list[str]:
    """The JSON text of a value, compact and with one space after each comma and colon."""
    return [json.dumps(value, ensure_ascii=False, separators=(",", ":")), json.dumps(value, ensure_ascii=False)]


@pytest.mark.parametrize("tool_", every_tool(), ids=lambda t: t.name)
def test_the_schema_grammar_accepts_exactly_what_the_schema_allows(tool_):
    schema = dict(tool_.parameters)
    grammar = parse_grammar(schema_grammar(schema))
    checked = 0
    for value in variations(schema):
        valid = not problems_in(value, schema)
        for text in texts(value):
            assert grammar.accepts(text) == valid, (text, problems_in(value, schema))
            checked += 1
    assert checked >= 12
    assert not grammar.accepts(texts(example_arguments(schema))[0] + " ")  # nothing after the value


def test_the_grammar_writes_keys_in_the_schemas_order_only():
    # A limit said plainly: JSON allows the keys in any order; the grammar (like llama.cpp's own converter)
    # writes them in the schema's order, so a reordered object is valid for the schema and not for the grammar.
    schema = dict(shop_tools().get("applyRefund").parameters)
    grammar = parse_grammar(schema_grammar(schema))
    assert grammar.accepts('{"orderId":"88231","reason":"broken"}')
    assert not problems_in({"reason": "broken", "orderId": "88231"}, schema)
    assert not grammar.accepts('{"reason":"broken","orderId":"88231"}')


def test_an_optional_key_may_be_left_out_wherever_it_stands():
    schema = {"type": "object", "additionalProperties": False, "required": ["b"],
              "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}}
    grammar = parse_grammar(schema_grammar(schema))
    for text in ('{"b":"x"}', '{"a":1,"b":"x"}', '{"b":"x","c":true}', '{"a":1,"b":"x","c":false}'):
        assert grammar.accepts(text), text
    for text in ('{"a":1}', '{,"b":"x"}', '{"b":"x",}', '{"c":true,"b":"x"}', '{"a":1.5,"b":"x"}'):
        assert not grammar.accepts(text), text


def test_what_a_grammar_cannot_say_is_refused_not_dropped():
    for keyword, value in (("pattern", "^SF"), ("minimum", 1)):
        with pytest.raises(ValueError, match=keyword):
            schema_grammar({"type": "string", keyword: value})
    with pytest.raises(ValueError, match="additionalProperties"):
        schema_grammar({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}})


@pytest.mark.parametrize("schema, says", [
    # Each once gave a grammar llama.cpp refuses ({3,2}, {-1,}), one that allows too much ([] for minItems 3, ""
    # for an empty enum, only {} for additionalProperties true), or an OverflowError or AttributeError.
    ({"type": "string", "minLength": 3, "maxLength": 2}, "the first no more than the second"),
    ({"type": "string", "minLength": -1}, "whole numbers from 0"),
    ({"type": "string", "maxLength": -1}, "whole numbers from 0"),
    ({"type": "string", "minLength": float("inf")}, "whole numbers from 0"),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 1}, "the first no more"),
    ({"type": "array", "items": [{"type": "integer"}]}, "items must be one schema"),
    ({"enum": []}, "enum must be a non-empty list"),
    ({"anyOf": []}, "anyOf must be a non-empty list"),
    ({"type": "object", "properties": {"q": True}}, "a schema must be a JSON object here, got True"),
    ({"type": "object", "additionalProperties": True}, "set additionalProperties to false"),
])
def test_a_schema_no_grammar_can_say_exactly_is_refused(schema, says):
    with pytest.raises(ValueError, match=says):
        schema_grammar(schema)


def test_the_matcher_refuses_what_llama_cpp_refuses():
    for bad in ("root ::= foo", 'root ::= "open', "root ::= [a-", 'x ::= "a"', 'root ::= ("a"', 'root ::= "a"{3,1}'):
        with pytest.raises(GrammarError):
            parse_grammar(bad)
    grammar = parse_grammar('root ::= "a" b{2,3} # a comment\nb ::= [^\\n"] | "\\u00e9"')
    assert grammar.accepts("axy") and grammar.accepts('aé#z') and not grammar.accepts("ax") and not grammar.accepts("a\n\n")
    tricky = '\nsay "hi" \\ 好'
    assert parse_grammar("root ::= " + literal(tricky)).accepts(tricky)


def test_an_operator_may_stand_apart_from_its_element_as_llama_cpp_reads_it():
    # llama.cpp skips spaces and tabs after an element before its */+/?/{m,n}: these were refused as unreadable
    for grammar in ("root ::= [A-Z] {2} [0-9] {10}", "root ::= [A-Z]\t{2} [0-9]{ 10 }"):
        assert parse_grammar(grammar).accepts("SF1234567890") and not parse_grammar(grammar).accepts("S1234567890")
    grammar = parse_grammar('root ::= ("a" | "b") + "c" ? "d" *')
    assert [grammar.accepts(text) for text in ("ab", "bacdd", "c", "acc")] == [True, True, False, False]


def test_a_rule_goes_on_to_a_new_line_only_where_llama_cpp_lets_it():
    # after ::=, after |, inside ( ): the rule goes on
    grammar = parse_grammar('root ::=\n  "a" (\n  "b"\n  | "c" ) |\n  "d"\nnext ::= "e"')
    assert [grammar.accepts(text) for text in ("ab", "ac", "d", "a", "e")] == [True, True, True, False, False]
    # anywhere else llama.cpp ends the rule there, and the next line is no rule: it refuses the grammar
    for bad in ("root ::=\n    [A-Z]{2}\n    [0-9]{10}", 'root ::= "a"\n  | "b"', 'root ::= ("a") # (\n  "b"'):
        with pytest.raises(GrammarError, match="a new line ends rule 'root' here"):
            parse_grammar(bad)


@pytest.mark.parametrize("grammar, says", [
    ('root ::= "\\U00110000"', "past Unicode's last character"),  # chr() raised ValueError
    ('root ::= "\\UFFFFFFFF"', "past Unicode's last character"),  # ... and OverflowError
    ("root ::= " + "(" * 400 + '"a"' + ")" * 400, "nested more than 100 deep"),  # RecursionError
])
def test_what_would_break_the_reader_is_a_grammar_error(grammar, says):
    with pytest.raises(GrammarError, match=says):
        parse_grammar(grammar)


@pytest.mark.parametrize("inside", ["\u2028", "\x85", "\u2029"])
def test_a_literal_holding_a_line_separator_means_itself(inside):
    # llama.cpp ends a line at "\n" only: splitlines() broke the literal there, and joined it back with a space.
    grammar = parse_grammar("root ::= " + literal(f"a{inside}b"))
    assert grammar.accepts(f"a{inside}b") and not grammar.accepts("a b")


def test_a_chain_of_rules_too_long_to_follow_is_a_grammar_error_not_a_recursion_error():
    chain = [f"r{n} ::= r{n + 1}" for n in range(5000)]
    grammar = parse_grammar("\n".join([*chain, 'r5000 ::= "a"', "root ::= r0"]))
    with pytest.raises(GrammarError, match="too deep for this checker"):
        grammar.accepts("a")


@pytest.mark.parametrize("grammar", ['root ::= e{1999} "a"\ne ::= ""{1999}', 'root ::= "a" e{1999}\ne ::= " "?{1999}',
                                     'root ::= e{1999} "a"\ne ::= ("b"?){1999}'])
def test_a_huge_repeat_of_what_may_be_empty_is_decided_at_once(grammar):
    # Each repeat of an empty match changes nothing: the matcher once counted them all, one by one (1999 x 1999
    # here: llama.cpp takes no count of 2000 or more in one sequence, and parse_grammar refuses those too).
    assert parse_grammar(grammar).accepts("a") and not parse_grammar(grammar).accepts("aa")


@pytest.mark.parametrize("grammar", ['root ::= ""{100000000} "a"', 'root ::= "a"{0,2000}', 'root ::= "a"{2000,}',
                                     'root ::= [a]{50} [b]{40}', 'root ::= ("b"?){1000}{2}'])
def test_a_repeat_llama_cpp_refuses_is_a_grammar_error(grammar):
    # llama.cpp's MAX_REPETITION_THRESHOLD: the product of one sequence's repeat counts must stay below 2000.
    with pytest.raises(GrammarError, match="llama.cpp refuses 2000 or more"):
        parse_grammar(grammar)
    assert parse_grammar("root ::= [a]{50} [b]{39}").accepts("a" * 50 + "b" * 39)  # 1950: taken
    assert parse_grammar('root ::= "a"{1999}\nb ::= "b"{1999}').accepts("a" * 1999)  # each sequence its own product


def test_a_one_string_tool_takes_the_string_itself_and_a_no_input_tool_nothing():
    tools = shop_tools()
    order = parse_grammar(input_grammar(tools.get("queryOrder")))
    assert order.accepts("88231") and order.accepts("订单 88231") and not order.accepts("") and not order.accepts("1\n2")
    narrowed = parse_grammar(input_grammar(tools.get("queryOrder"), {"orderId": ["88231", "88232"]}))
    assert narrowed.accepts("88232") and not narrowed.accepts("88233")
    assert parse_grammar(input_grammar(tools.get("getCurrentTime"))).accepts("")
    refund = parse_grammar(input_grammar(tools.get("applyRefund"), {"orderId": ["88231"]}))
    assert refund.accepts('{"orderId": "88231", "reason": "does not dock"}')
    assert not refund.accepts('{"orderId": "88232", "reason": "does not dock"}')


# -- what the conversation allows ----------------------------------------------------------------------------------
QUESTION = "Where is the parcel for order 88231?"


def conversation(*turns: str) -> list[dict]:
    messages = [{"role": "system", "content": "tools... e.g. 88231, SF1234567890"},
                *[{"role": "user" if i % 2 else "assistant", "content": t} for i, t in enumerate(turns, start=1)]]
    return messages


def test_ids_come_only_from_the_question_and_observations_never_the_prompt_or_an_example():
    tools = shop_tools()
    example = conversation("Where is 10086?", "Thought: x\nAction: queryOrder\nAction Input: 10086",
                           'Observation: {"trackingNo": "SF0000000001"}', "Thought: y\nFinal Answer: z")
    first = allowed_steps([*example, {"role": "user", "content": QUESTION}], tools)
    assert first.values["queryOrder"] == {"orderId": ("88231",)}
    assert "queryLogistics" not in first.tools  # no tracking number seen yet
    assert not first.final  # nothing looked up yet
    later = allowed_steps(conversation(QUESTION, "Thought: x\nAction: queryOrder\nAction Input: 88231",
                                       'Observation: {"orderId": "88231", "trackingNo": "SF1234567890"}'), tools)
    assert later.values["queryLogistics"] == {"trackingNo": ("SF1234567890",)}
    assert "queryOrder" not in later.tools  # its only id was used: no call is repeated
    assert later.final


def test_ids_typed_in_full_width_are_the_ids_they_look_like_and_a_price_is_none():
    choices = allowed_steps(conversation("订单８８２３１付了¥12345.67，快递 ＳＦ１２３４５６７８９０ 到哪了？"), shop_tools())
    assert choices.values["queryOrder"] == {"orderId": ("88231",)}
    assert choices.values["queryLogistics"] == {"trackingNo": ("SF1234567890",)}


def test_a_free_text_tool_and_a_no_input_tool_are_offered_once():
    tools = shop_tools()
    after = allowed_steps(conversation("Refund 88231", "Thought: a\nAction: searchKnowledge\nAction Input: refund",
                                       "Observation: {}", "Thought: b\nAction: getCurrentTime\nAction Input:",
                                       "Observation: {}"), tools)
    assert {"searchKnowledge", "getCurrentTime"}.isdisjoint(after.tools)
    assert {"queryOrder", "applyRefund"} <= set(after.tools)
    unnarrowed = allowed_steps(conversation("Refund 88231", "Thought: a\nAction: searchKnowledge\nAction Input: x",
                                            "Observation: {}"), tools, narrow=False)
    assert "searchKnowledge" in unnarrowed.tools and unnarrowed.final


def test_a_step_is_forced_when_one_action_is_left_and_no_answer():
    assert StepChoices(("queryOrder",), {"queryOrder": {"orderId": ("88231",)}}, final=False).forced
    assert not StepChoices(("queryOrder",), {"queryOrder": {"orderId": ("88231", "88232")}}, final=False).forced
    assert not StepChoices(("queryOrder",), {"queryOrder": {"orderId": ("88231",)}}, final=True).forced
    assert StepChoices((), {}, final=True).forced


def test_the_step_grammar_allows_each_open_choice_and_nothing_else():
    tools = shop_tools()
    choices = allowed_steps(conversation(QUESTION), tools)
    grammar = parse_grammar(step_grammar(choices, tools))
    accepted = "Thought: look it up\nAction: queryOrder\nAction Input: 88231"
    assert grammar.accepts(accepted)
    assert parse_step(accepted).action.tool_input == "88231"  # what the grammar lets through reads as the action
    for text in ("Thought: x\nAction: queryOrder\nAction Input: 88232",  # an id nobody wrote
                 "Thought: x\nAction: queryLogistics\nAction Input: SF1234567890",  # not seen yet
                 "Thought: x\nFinal Answer: it is on its way",  # nothing looked up yet
                 "Action: queryOrder\nAction Input: 88231",  # no Thought
                 "Thought: x\nAction: queryOrder\nAction Input: 88231\nObservation: {}"):
        assert not grammar.accepts(text), text


def test_the_json_schema_step_says_the_same_and_reads_back_as_an_action():
    tools = shop_tools()
    choices = allowed_steps(conversation(QUESTION), tools)
    schema = step_schema(choices, tools)
    grammar = parse_grammar(schema_grammar(schema))
    reply = '{"tool": "queryOrder", "arguments": {"orderId": "88231"}}'
    assert grammar.accepts(reply) and not grammar.accepts(reply.replace("88231", "88232"))
    assert not grammar.accepts('{"final_answer": "x"}')  # nothing looked up yet
    step = read_step(reply, tools)
    assert (step.action.tool_name, step.action.tool_input, step.rule) == ("queryOrder", "88231", "action")
    assert read_step('{"final_answer": "done"}').final_answer == "done"
    assert read_step("{not json").rule == "no_format"


# Tool names a registry takes (one word each) that are no rule name as they stand: a digit first, quotes, GBNF's
# own `::=`, `|` and `#`, NUL, Chinese, emoji, the root rule's name, a JSON basic's name.
ODD_NAMES = ["9lives", "007", 'say"hi"', "it's", "a::=b", "a|b", "a#b", "nul\x00l", "查询订单", "🐱", "root", "ws",
             "json-string", "-"]


def odd_tools(name: str) -> list:
    """One tool of each input kind under `name` (with a suffix, as a registry wants names unique)."""
    order = {"type": "object", "properties": {"orderId": {"type": "string", "examples": ["88231"]}},
             "required": ["orderId"]}
    args = {"type": "object", "properties": {"count": {"type": "integer"}, "note": {"type": "string"}},
            "required": ["count"]}
    return [FunctionTool(name, "free words", str), FunctionTool(name + "1", "an id", str, parameters=order),
            FunctionTool(name + "2", "JSON", str, parameters=args),
            FunctionTool(name + "3", "nothing", str, parameters={"type": "object", "properties": {}})]


CALLS = {"": " anything at all", "1": " 88231", "2": ' {"count":2}', "3": ""}  # what each kind takes


@pytest.mark.parametrize("name", ODD_NAMES, ids=repr)
def test_any_tool_name_gives_a_grammar_the_parser_reads_and_a_call_it_accepts(name):
    tools = ToolRegistry(odd_tools(name))
    choices = allowed_steps(conversation("order 88231, please"), tools, narrow=False)
    for ids in (True, False):
        grammar = parse_grammar(step_grammar(choices, tools, ids=ids))
        for suffix, text in CALLS.items():
            call = f"Thought: x\nAction: {name}{suffix}\nAction Input:{text}"
            assert grammar.accepts(call), (ids, call)
    for tool_ in tools:
        parse_grammar(input_grammar(tool_))
        parse_grammar(schema_grammar({"type": "object", "properties": {name: {"type": "integer"}}}))


def test_two_tools_whose_names_give_the_same_rule_name_still_get_a_rule_each():
    by_id = FunctionTool("a_b", "an id", str, parameters={
        "type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]})
    by_count = FunctionTool("a|b", "a count", str, parameters={
        "type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]})
    tools = ToolRegistry([by_id, by_count])
    text = step_grammar(StepChoices(("a_b", "a|b"), {"a_b": {"orderId": ("88231",)}}, final=False), tools)
    grammar = parse_grammar(text)
    assert {"call-a-b", "call-a-b-2", "a-b-input", "a-b-input-2"} <= set(grammar.rules)
    assert grammar.accepts("Thought: x\nAction: a_b\nAction Input: 88231")
    assert grammar.accepts('Thought: x\nAction: a|b\nAction Input: {"count":3}')
    assert not grammar.accepts('Thought: x\nAction: a_b\nAction Input: {"count":3}')  # each its own input
    assert not grammar.accepts("Thought: x\nAction: a|b\nAction Input: 88231")  # not the other tool's input


def test_a_rule_name_is_always_one_the_parser_reads():
    for text in [*ODD_NAMES, "", "---", "9", "a b", "é"]:
        name = rule_name(text)
        source = f'{name} ::= "x"\n' + ("" if name == "root" else f"root ::= {name}\n")
        assert parse_grammar(source).accepts("x"), (text, name)
    assert [rule_name(t) for t in ("queryOrder", "9lives", "查询订单", "a|b")] == [
        "queryOrder", "rule-9lives", "rule", "a-b"]


class RecordingLlm:
    """Plays a script of replies and keeps every call's options."""

    model = "scripted"

    def __init__(self, *replies):
        self.replies, self.options = list(replies), []

    def chat(self, messages, **options):
        self.options.append((list(messages), options))
        return ChatResult(self.replies.pop(0), "stop", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})


def test_the_constrained_send_rebuilds_the_grammar_every_step_and_logs_what_it_allowed():
    llm = RecordingLlm("Thought: a\nAction: queryOrder\nAction Input: 88231",
                       "Thought: b\nAction: queryLogistics\nAction Input: SF1234567890",
                       "Thought: c\nFinal Answer: signed for on 2026-06-22")
    send = ConstrainedSend()
    result = ReActAgent(llm, shop_tools(), lang="en", parts=[send, WithExample()]).run(QUESTION)
    assert result.reason == "final_answer"
    grammars = [options["grammar"] for _, options in llm.options]
    assert len(set(grammars)) == 3
    assert "88231" in grammars[0] and "SF1234567890" not in grammars[0] and "SF1234567890" in grammars[1]
    assert "2026-06-22" not in "".join(grammars)  # the answer's facts are never in a grammar
    assert llm.options[0][0][1]["content"] == "Where is the parcel for order 10086?"  # the example's turns
    assert [s.step for s in send.log] == [1, 2, 3]
    assert [s.forced for s in send.log] == [False, False, False]


def test_the_json_form_sends_a_response_format_and_reads_json():
    llm = RecordingLlm('{"tool": "queryOrder", "arguments": {"orderId": "88231"}}', '{"final_answer": "SF1234567890"}')
    result = ReActAgent(llm, shop_tools(), lang="en",
                        parts=[ConstrainedSend("json_schema"), JsonStepRead()]).run(QUESTION)
    assert result.answer == "SF1234567890"
    form = llm.options[0][1]["response_format"]
    assert form["type"] == "json_schema" and "anyOf" in form["json_schema"]["schema"]
    assert "grammar" not in llm.options[0][1]


def test_every_variant_builds_an_agent_with_its_parts_and_an_unknown_one_is_named():
    from tinyagent import LlmClient

    for name in ("none", "format", "inputs", "conversation", "json_schema"):
        agent = ReActAgent(LlmClient.classroom(), shop_tools(), **variant_options(name))
        if name != "none":
            assert isinstance(agent.parts.send, ConstrainedSend)
        if name in ("conversation", "json_schema"):
            assert isinstance(agent.parts.request, WithExample)
        if name == "json_schema":
            assert isinstance(agent.parts.read, JsonStepRead)
    with pytest.raises(ValueError, match="conversation"):
        variant_options("fancy")


def test_the_benchmark_measures_every_variant_with_its_send_parts_log():
    """benchmarks/constrained_decoding.py's row for one task on the classroom model: the forced share is read from
    the variant's ConstrainedSend (none for the plain prompt)."""
    import importlib.util
    from pathlib import Path

    from tinyagent import LlmClient

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "constrained_decoding.py"
    spec = importlib.util.spec_from_file_location("constrained_decoding_benchmark", path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    real_evaluate, sends = benchmark.evaluate, []

    def evaluate(llm, **options):  # keeps the ConstrainedSend the variant's run was given
        sends.append(next((p for p in options.get("parts", []) if isinstance(p, ConstrainedSend)), None))
        return real_evaluate(llm, **options)

    benchmark.evaluate = evaluate
    # The share of steps the grammar forced on parcel (en), deterministic on the classroom model: the format and
    # the inputs leave a choice at each of the three steps; the grammar rebuilt from the conversation forces two
    # (first queryOrder on the one id the question gives, last the answer), not the second (the parcel or answer).
    forced = {"none": None, "format": 0.0, "inputs": 0.0, "conversation": pytest.approx(2 / 3),
              "json_schema": pytest.approx(2 / 3)}
    for name in ("none", "format", "inputs", "conversation", "json_schema"):
        row = benchmark.measure(LlmClient.classroom(), name, ["parcel"], ["en"], 6, 512)
        assert row["variant"] == name and row["tasks"] == 1 and row["replies"] >= 1
        # The careful classroom model passes the task whatever the variant: under json_schema its answer once came as
        # every fact and an "answer" key (no shape of the step schema), which the step reader took for prose.
        assert row["passed"] == 1 and row["readable"] == 1.0, (name, row)
        # Pinned, not just "a number": a share read from a send that never ran (forced_share([]) is 0.0) fails.
        assert row["forced"] == forced[name], (name, row["forced"])
        # And the send whose log is read is the one the run used: it logged one step for each of the replies.
        send = sends[-1]
        assert (send is None) == (name == "none")
        assert send is None or len(send.log) == row["replies"], (name, len(send.log), row["replies"])


def test_the_classroom_model_takes_a_grammar_and_answers_as_before():
    from tinyagent import LlmClient

    llm = LlmClient.classroom()
    plain = ReActAgent(llm, shop_tools(), lang="en").run(QUESTION)
    constrained = ReActAgent(llm, shop_tools(), lang="en", parts=[ConstrainedSend()]).run(QUESTION)
    assert constrained.answer == plain.answer and constrained.reason == "final_answer"
    with pytest.raises(BadRequestError, match="grammar"):
        llm.chat([{"role": "user", "content": "hi"}], grammar=7)


# -- llama.cpp -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_model():
    require_local_model()
    from tinyagent.local_model import start_local_model

    with start_local_model() as model:
        yield model.client(temperature=0, read_timeout=600, total_timeout=900)


def test_llama_cpp_takes_every_grammar_the_registry_gives_and_refuses_a_broken_one(real_model):
    ask = [{"role": "user", "content": "Write the input."}]
    tools = shop_tools()
    grammars = [schema_grammar(dict(t.parameters)) for t in every_tool()]
    grammars += [input_grammar(t) for t in every_tool()]
    grammars.append(step_grammar(allowed_steps(conversation(QUESTION), tools), tools))
    for name in ODD_NAMES:  # rule names made from any tool name are names llama.cpp reads too
        odd = ToolRegistry(odd_tools(name))
        grammars.append(step_grammar(allowed_steps(conversation("order 88231"), odd, narrow=False), odd))
    for grammar in grammars:
        real_model.chat(ask, grammar=grammar, max_tokens=1)  # a grammar llama.cpp cannot read is a 400
    with pytest.raises(BadRequestError, match="grammar"):
        real_model.chat(ask, grammar="root ::= undefined-rule", max_tokens=1)


def test_what_llama_cpp_writes_under_a_step_grammar_is_what_the_matcher_accepts(real_model):
    tools = shop_tools()
    messages = [{"role": "system", "content": "You help a shop's customers."}, {"role": "user", "content": QUESTION}]
    grammar = step_grammar(allowed_steps(messages, tools), tools)
    reply = real_model.chat(messages, grammar=grammar, max_tokens=200)
    assert reply.finish_reason == "stop"
    assert parse_grammar(grammar).accepts(reply.text)
    assert parse_step(reply.text).rule == "action"
    # Every string and list bounded, so whatever the schema lets through fits in max_tokens: the reply must end by
    # itself and be valid. (Unbounded, a 135M model may write a very long street and be cut; a check skipped when
    # the reply was cut would also pass if llama.cpp ignored the schema and wrote prose up to the cap.)
    schema = json.loads(json.dumps(dict(pickup_tool().parameters)))
    for string in (schema["properties"]["order_id"], schema["properties"]["items"]["items"],
                   *schema["properties"]["address"]["properties"].values()):
        string["maxLength"] = 12
    schema["properties"]["items"]["maxItems"] = 2
    value = real_model.chat(messages, response_format={"type": "json_schema", "json_schema": {
        "name": "pickup", "schema": schema}}, max_tokens=400)
    assert value.finish_reason == "stop", value.text
    assert not problems_in(json.loads(value.text), schema)


def _one_string_tool(schema: dict) -> FunctionTool:
    return FunctionTool("redeem", "Redeem a code.", lambda code: code,
                        parameters={"type": "object", "properties": {"code": schema}, "required": ["code"]})


def test_one_string_parameter_written_plain_keeps_its_schema_s_lengths():
    grammar = parse_grammar(input_grammar(_one_string_tool({"type": "string", "minLength": 3, "maxLength": 5})))
    assert [text for text in ("ab", "abc", "abcde", "abcdef") if grammar.accepts(text)] == ["abc", "abcde"]
    assert parse_grammar(input_grammar(_one_string_tool({"type": "string", "maxLength": 0}))).accepts("")


@pytest.mark.parametrize(("schema", "refused"), [
    ({"type": "string", "pattern": "^[0-9]{6}$"}, "cannot express 'pattern'"),
    ({"type": "string", "maxLength": -3}, "must be whole numbers"),
    ({"type": "string", "maxLength": float("inf")}, "must be whole numbers"),
    ({"type": "string", "minLength": 6, "maxLength": 2}, "must be whole numbers"),
])
def test_one_string_parameter_written_plain_is_refused_where_its_json_form_is(schema, refused):
    # The same schema was refused as JSON and quietly loosened (or made a grammar llama.cpp refuses) as plain text.
    with pytest.raises(ValueError, match=refused):
        schema_grammar({"type": "object", "properties": {"code": schema}})
    with pytest.raises(ValueError, match=refused):
        input_grammar(_one_string_tool(schema))


# -- what the grammar allows, the parser reads as the branch it took ------------------------------------------------
# Pieces of a reply the grammar must not let through as they stand: every line break str.splitlines() knows (the
# parser's lines), the keys a new line could start with, "Final Answer:" (which the parser reads anywhere), an id
# nobody wrote, and ordinary words and colons.
HOSTILE_PIECES = ["x", " ", "r", ":", "19:05", "https://x", "Final Answer:", "Final Answer", "Action: applyRefund",
                  "Action: queryOrder", "Action Input: ", "Observation:", "88231", "88232", '\\"', "\\u2028",
                  *"\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"]
REFUND_QUESTION = "Where is my order 88231?"


def _step_states():
    """(choices, grammar) at the first step (no answer yet) and after an Observation (an answer allowed)."""
    tools = shop_tools()
    first = conversation(REFUND_QUESTION)
    later = conversation(REFUND_QUESTION, "Thought: x\nAction: queryOrder\nAction Input: 88231",
                         'Observation: {"orderId": "88231", "trackingNo": "SF1234567890"}')
    return [(choices, parse_grammar(step_grammar(choices, tools)))
            for choices in (allowed_steps(first, tools), allowed_steps(later, tools))]


STEP_STATES = _step_states()


def _reply(branch: str, thought: str, words: str, id_: str) -> str:
    inputs = {"queryOrder": f" {id_}{words}", "queryLogistics": f" {id_}{words}", "searchKnowledge": f" {words}",
              "getCurrentTime": words, "applyRefund": f' {{"orderId":"{id_}","reason":"{words}"}}'}
    if branch == "final":
        return f"Thought: {thought}\nFinal Answer: {words}"
    return f"Thought: {thought}\nAction: {branch}\nAction Input:{inputs[branch]}"


@settings(max_examples=400, deadline=None)
@given(state=st.sampled_from(STEP_STATES), branch=st.sampled_from(["final", *shop_tools().names]),
       thought=st.lists(st.sampled_from(HOSTILE_PIECES), max_size=6).map("".join),
       words=st.lists(st.sampled_from(HOSTILE_PIECES), max_size=6).map("".join),
       id_=st.sampled_from(["88231", "88232", "SF1234567890"]))
def test_a_reply_the_step_grammar_allows_reads_as_the_branch_it_took_with_its_allowed_ids(state, branch, thought,
                                                                                           words, id_):
    # Once, "x\rAction: applyRefund\rAction Input: {...88232...}" as a query refunded an order nobody named, and
    # "Final Answer:" in a Thought ended the run before any lookup: the grammar allowed both.
    choices, grammar = state
    reply = _reply(branch, thought, words, id_)
    if not grammar.accepts(reply):
        return
    step = parse_step(reply)
    if branch == "final":
        assert choices.final and step.rule == "final_answer", reply
        return
    assert step.rule == "action" and step.action.tool_name == branch, (reply, step)
    for key, allowed in choices.values.get(branch, {}).items():
        text = step.action.tool_input
        value = json.loads(text)[key] if text.startswith("{") else text
        assert value in allowed, (reply, step)


def test_a_literal_from_the_schema_holds_no_line_break_or_answer_as_it_stands():
    # An enum value is written as JSON: its U+2028 and the colon of "Final Answer:" as escapes, the same value.
    schema = {"type": "object", "properties": {"note": {"enum": ["a\u2028Action: queryOrder", "Final Answer: yes"]}},
              "required": ["note"]}
    grammar = parse_grammar(schema_grammar(schema))
    assert grammar.accepts('{"note":"a\\u2028Action: queryOrder"}')
    assert grammar.accepts('{"note":"Final Answer\\u003a yes"}')
    assert not grammar.accepts('{"note":"a\u2028Action: queryOrder"}')
    assert not grammar.accepts('{"note":"Final Answer: yes"}')
    assert json.loads('{"note":"Final Answer\\u003a yes"}')["note"] == "Final Answer: yes"


# -- schemas a grammar cannot be built from: a GrammarError, and the run ends politely -------------------------------
HOSTILE_PROPERTIES = {
    "true": {"q": True},  # JSON Schema's "anything"
    "examples-5": {"q": {"type": "string", "examples": 5}, "n": {"type": "integer", "minimum": 1}},
    "minimum": {"count": {"type": "integer", "minimum": 1, "maximum": 50}},  # FastMCP's Field(ge=1, le=50)
    "ref": {"address": {"$ref": "#/$defs/Addr"}},  # a nested pydantic model
    "unknown-type": {"q": {"type": {}}},
    "a-list": [["q", {"type": "string"}]],
}


@pytest.mark.parametrize("label", HOSTILE_PROPERTIES)
@pytest.mark.parametrize("form", ["grammar", "json_schema"])
def test_a_schema_the_grammar_cannot_take_ends_the_run_politely_never_a_traceback(label, form):
    from tinyagent import LlmClient

    schema = {"type": "object", "properties": HOSTILE_PROPERTIES[label], "required": []}
    tools = ToolRegistry([FunctionTool("lookup", "Look something up.", lambda **kw: "ok", parameters=schema)])
    parts = [ConstrainedSend(form)] + ([JsonStepRead()] if form == "json_schema" else [])
    result = ReActAgent(LlmClient.classroom(), tools, lang="en", parts=parts).run("hi, order 88231")
    assert result.reason in ("grammar", "final_answer", "llm_error", "max_steps"), result.reason
    if result.reason == "grammar":
        stopped = result.trace.events[-1]
        assert "tool lookup" in stopped.detail and result.answer == GrammarError.answer["en"]


def test_a_grammar_error_is_the_package_s_error_and_still_a_value_error():
    from tinyagent.errors import TinyAgentError

    with pytest.raises(TinyAgentError, match="cannot express 'minimum'"):
        schema_grammar({"type": "integer", "minimum": 1})
    assert issubclass(GrammarError, ValueError)


@pytest.mark.parametrize("schema, says", [
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]} | {"type": ["object", "x"]},
     "one or more of string"),
    ({"type": "x", "properties": {"a": {"type": "integer"}}}, "unknown type 'x'"),
    ({"type": []}, "one or more of string"),
    ({"enum": [float("nan")]}, "is no JSON value"),
    ({"const": float("inf")}, "is no JSON value"),
    ({"type": "string", "maxLength": 2000}, "below 2000"),
    ({"type": "string", "minLength": 5000}, "below 2000"),
    ({"type": "string", "maxLength": 10**18}, "below 2000"),
    ({"type": "array", "items": {"type": "string"}, "maxItems": 5000}, "below 2000"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, r"\$ref"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": 5}, "required must be a list"),
])
def test_a_schema_a_grammar_cannot_say_is_a_grammar_error(schema, says):
    with pytest.raises(GrammarError, match=says):
        schema_grammar(schema)
    assert parse_grammar(schema_grammar({"type": "string", "maxLength": 1999})).accepts('"ab"')


def _nested(depth: int, kind) -> dict:
    schema = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": kind, "properties": {"a": schema}, "required": ["a"]}
    return schema


def test_a_list_of_types_writes_each_subtree_once():
    # ["object", "object"] once built the subtree twice at every level: 2**18 builds (seconds of CPU at every step)
    # from 1.3 KB of schema. The CPU this thread used, not the wall clock: a loaded machine does not stretch it.
    import time

    started = time.thread_time()
    text = schema_grammar(_nested(18, ["object", "object"]))
    assert time.thread_time() - started < 1 and len(text) < 2_000
    assert parse_grammar(text).accepts('{"a":' * 18 + "7" + "}" * 18)


@pytest.mark.parametrize("schema, says", [
    (_nested(3000, "object"), "nested more than 32 deep"),  # was a RecursionError
    ({"anyOf": [_nested(40, "object")]}, "nested more than 32 deep"),
    ({"type": "object", "properties": {f"p{i}": {"enum": list(range(1000))} for i in range(100)}},
     "grows past 200,000 characters"),  # 490 KB of schema: once a 40 MB grammar, in seconds
])
def test_a_schema_too_deep_or_too_big_is_refused_at_once(schema, says):
    import time

    started = time.thread_time()  # this thread's CPU: what the refusal cost, however busy the machine
    with pytest.raises(GrammarError, match=says):
        schema_grammar(schema)
    assert time.thread_time() - started < 2


def test_many_optional_keys_give_a_grammar_that_grows_with_them_and_reads():
    # Each optional key once repeated the keys after it: quadratic, and past 100 a grammar parse_grammar refused.
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(150)}}
    text = schema_grammar(schema)
    assert len(text) < 60_000
    grammar = parse_grammar(text)
    assert grammar.accepts("{}") and grammar.accepts('{"p7":1,"p149":2}') and not grammar.accepts('{"p149":2,"p7":1}')
