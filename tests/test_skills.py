"""skills.py: skill files read (the documented subset of YAML front matter), every mistake one line naming the
file and the line, and an active skill's tools really the only ones: in the prompt and in the registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import Action, FunctionTool, LlmClient, ReActAgent, ToolRegistry
from tinyagent.architectures.skills import (
    SkillError,
    load_skill,
    load_skills,
    parse_skill,
    read_front_matter,
    shop_skills,
)
from tinyagent.classroom.tool_list import read_tool_list
from tinyagent.events import Observation, Parsed
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.skills import SKILL_FOLDER

from .lesson17_helpers import CLOCK, ScriptedLlm, shop_tools

ROOT = Path(__file__).resolve().parent.parent
GOOD = "---\nname: logistics\ndescription: Where a parcel is\ntools: [queryOrder, queryLogistics]\n---\nTrack it.\n"


def test_the_shop_ships_three_skills_whose_tools_the_shop_has():
    skills = shop_skills()
    assert {name: skill.tools for name, skill in skills.items()} == {
        "logistics": ("queryOrder", "queryLogistics"),
        "policies": ("searchKnowledge",),
        "refunds": ("queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"),
    }
    for skill in skills.values():
        assert skill.scope(shop_tools()).names == list(skill.tools) and skill.instructions


def test_the_skills_are_package_data():
    # tomllib is not in Python 3.10's standard library: the line is looked for as it is written.
    assert '"tinyagent.shop.skills" = ["*.md"]' in (ROOT / "pyproject.toml").read_text()
    assert len(sorted(SKILL_FOLDER.glob("*.md"))) == 3


@pytest.mark.parametrize("text, value", [
    ('---\nname: a\ndescription: "quoted: with a colon"\ntools: [x]\n---\nbody', "quoted: with a colon"),
    ("---\nname: a\ndescription: 'single'  # a comment\ntools: [x]\n---\nbody", "single"),
    ("---\nname: a\ndescription: plain words # a comment\ntools: [x]\n---\nbody", "plain words"),
    ('---\nname: a\ndescription: "escaped \\"quote\\""\ntools: [x]\n---\nbody', 'escaped "quote"'),
])
def test_quoted_and_plain_values_and_comments(text, value):
    assert parse_skill(text).description == value


@pytest.mark.parametrize("tools_lines, tools", [
    ("tools: [a, b]", ("a", "b")),
    ('tools: ["a", \'b\' ,c]  # why', ("a", "b", "c")),
    ("tools:\n  - a\n  - b", ("a", "b")),
    ("tools:\n- a\n# a comment\n\n- b", ("a", "b")),
])
def test_lists_on_one_line_or_over_several(tools_lines, tools):
    assert parse_skill(f"---\nname: s\ndescription: d\n{tools_lines}\n---\nbody").tools == tools


@pytest.mark.parametrize("text, where, says", [
    ("name: a\n", "x.md:1:", "starts with a front matter"),
    ("---\nname: a\ndescription: d\ntools: [q]\n", "x.md:5:", "no closing '---'"),
    ("---\nname: a\ndescription: d\ntool: [q]\n---\nbody", "x.md:4:", "unknown key 'tool'"),
    ("---\nname: a\ndescription: d\n---\nbody", "x.md:4:", "no 'tools'"),
    ("---\nname: a\ndescription: d\ntools: queryOrder\n---\nbody", "x.md:4:", "non-empty list"),
    ("---\nname: a\ndescription: d\ntools: []\n---\nbody", "x.md:4:", "non-empty list"),
    ("---\nname: two words\ndescription: d\ntools: [q]\n---\nbody", "x.md:2:", "one word"),
    ("---\nname: a\ndescription: \"open\ntools: [q]\n---\nbody", "x.md:3:", "not closed"),
    ("---\nname: a\ndescription: d\ntools: [q, [r]]\n---\nbody", "x.md:4:", "inside a list"),
    ("---\nname: a\ndescription: d\ntools: [q, r\n---\nbody", "x.md:4:", "close with ']'"),
    ("---\nname: a\ndescription: d\ntools: [q,, r]\n---\nbody", "x.md:4:", "empty item"),
    ("---\n- q\nname: a\n---\nbody", "x.md:2:", "must follow a 'key:'"),
    ("---\nname: a\nname: b\n---\nbody", "x.md:3:", "appears twice"),
    ("---\nname: a\ndescription: {x: 1}\ntools: [q]\n---\nbody", "x.md:3:", "does not support"),
    ("---\nname: a\njust words\n---\nbody", "x.md:3:", "expected 'key: value'"),
    ("---\nname: a\ndescription: d\ntools: [q, q]\n---\nbody", "x.md:4:", "listed twice"),
    ("---\nname: a\ndescription: d\ntools: [q]\n---\n\n", "x.md:6:", "no instructions"),
    ("---\nname: a\ndescription:\ntools: [q]\n---\nbody", "x.md:3:", "description must be a sentence"),
])
def test_a_bad_skill_file_is_one_line_naming_the_file_and_the_line(text, where, says):
    with pytest.raises(SkillError) as caught:
        parse_skill(text, "x.md")
    message = str(caught.value)
    assert message.startswith(where) and says in message and "\n" not in message


def test_files_that_cannot_be_read_are_named(tmp_path):
    (tmp_path / "gbk.md").write_bytes("---\nname: 退款\n".encode("gbk"))
    with pytest.raises(SkillError, match=r"^gbk\.md:2: not UTF-8"):
        load_skill(tmp_path / "gbk.md")
    with pytest.raises(SkillError, match=r"^missing\.md:1: no such file"):
        load_skill(tmp_path / "missing.md")
    (tmp_path / "a.md").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.md").write_text(GOOD, encoding="utf-8")
    with pytest.raises(SkillError, match=r"^b\.md:1: skill 'logistics' is also defined in a\.md"):
        load_skills(tmp_path)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_is_a_skill_or_a_skill_error(text):
    try:
        read_front_matter("---\n" + text, "x.md")
        parse_skill("---\n" + text, "x.md")
    except SkillError as error:
        assert str(error).startswith("x.md:") and "\n" not in str(error)


def test_the_prompt_of_an_active_skill_lists_only_its_tools_and_gives_its_instructions():
    skill = shop_skills()["logistics"]
    prompt = skill.system_prompt(shop_tools(), "zh")
    assert list(read_tool_list(prompt).tools) == ["queryOrder", "queryLogistics"]  # what the classroom model reads
    assert "applyRefund" not in prompt and "当前技能：logistics" in prompt and skill.instructions in prompt


def test_the_registry_refuses_a_tool_outside_the_skill_with_an_observation():
    shop = Shop(":memory:", clock=CLOCK)
    scoped = shop_skills()["logistics"].scope(shop_registry(shop, CLOCK))
    result = scoped.run(Action("applyRefund", '{"orderId": "88231", "reason": "x"}'))
    assert result.error and "not available: the active skill 'logistics' allows only queryOrder, queryLogistics" in result.text
    assert shop.refunds() == []  # refused before it ran, not after
    assert scoped.run(Action("queryOrder", "88231")).error is False
    assert "unknown tool: noSuchTool" in scoped.run(Action("noSuchTool", "")).text


def test_a_model_that_calls_a_tool_outside_the_skill_is_refused_in_the_loop_and_nothing_is_written():
    shop = Shop(":memory:", clock=CLOCK)
    tools = shop_registry(shop, CLOCK)
    skill = shop_skills()["logistics"]
    model = ScriptedLlm('Thought: refund it\nAction: applyRefund\nAction Input: {"orderId": "88231", "reason": "x"}',
                        "Thought: I cannot.\nFinal Answer: I cannot refund here.")
    agent = ReActAgent(model, skill.scope(tools), system_prompt=skill.system_prompt(tools, "en"))
    result = agent.run("Refund 88231")
    observation = result.trace.of_type(Observation)[0]
    assert observation.error and "not available" in observation.text
    assert shop.refunds() == [] and "RF" not in result.answer  # nothing written, nothing said


def test_the_classroom_model_inside_a_skill_uses_only_its_tools():
    tools = shop_tools()
    skill = shop_skills()["logistics"]
    agent = ReActAgent(LlmClient.classroom(), skill.scope(tools), system_prompt=skill.system_prompt(tools, "zh"))
    result = agent.run("订单 88231 的扫地机充不进电了，帮我退款")
    assert {call.name for call in result.trace.tool_calls} <= {"queryOrder", "queryLogistics"}
    assert "RF2026" not in result.answer


def test_a_skill_naming_a_tool_the_registry_lacks_is_refused_at_activation():
    skill = parse_skill(GOOD.replace("queryLogistics", "trackParcel"), "logistics.md")
    with pytest.raises(SkillError, match="^logistics.md: skill 'logistics' names tools the registry does not have: trackParcel"):
        skill.scope(shop_tools())


@pytest.mark.parametrize("question, lang, says", [
    ("我的扫地机（订单 88231）充不进电，想申请退款", "zh", "办理不了退款"),
    ("My vacuum (order 88231) will not charge, I want a refund", "en", "cannot handle refunds here"),
])
def test_a_refund_asked_inside_the_logistics_skill_is_declined_for_what_it_is(question, lang, says):
    tools, logistics = shop_tools(), shop_skills()["logistics"]
    agent = ReActAgent(LlmClient.classroom(), logistics.scope(tools), system_prompt=logistics.system_prompt(tools, lang))
    result = agent.run(question)
    assert [call.name for call in result.trace.tool_calls] == ["queryOrder"]
    assert says in result.answer and "2026-06-22" in result.answer  # the date it read is not called unknown
    assert "日期" not in result.answer and "date" not in result.answer.lower()


def test_a_tracking_error_is_not_called_everything_in_place():
    tools = shop_tools()
    broken = FunctionTool("queryLogistics", tools.get("queryLogistics").description,
                          lambda text: '{"error": "快递公司接口超时，请稍后再试"}')
    registry = ToolRegistry([broken if tool.name == "queryLogistics" else tool for tool in tools])
    result = ReActAgent(LlmClient.classroom(), registry).run("帮我看看订单 88231 的快递到哪了。")
    last = result.trace.of_type(Parsed)[-1].thought
    assert "错误" in last and "都齐了" not in last and "超时" in result.answer
