"""The classroom model after a refund call that got no answer: the refund may have been written, so the answer says
the outcome is not known and to check the order before applying again, never that it was not submitted.

The words it reads are lesson 24's MCP client's (MAYBE_DONE) and lesson 15's/19's note on a call cut short
(CUT_SHORT); the classroom recognises them by their words (planning.maybe_done), and these tests keep the two in
step. Lesson 21's reminder reads them the same way.
"""

from __future__ import annotations

import json

import pytest

from tests.test_classroom_behaviour import REFUND_EN, REFUND_ZH, FakeShop, converse
from tinyagent.events import Observation
from tinyagent.memory.run_changes import CUT_SHORT
from tinyagent.registry import error_observation

mcp_client = pytest.importorskip("tinyagent.toolkit.mcp_client")  # the `mcp` extra

NOT_SUBMITTED = ("没有提交成功", "没有提交", "提交失败", "could not be submitted", "not submitted", "was not", "failed")
MAY_HAVE_BEEN = {"zh": "退款可能已经提交", "en": "the refund may have been submitted"}
CHECK_FIRST = {"zh": "请先查询订单状态", "en": "check the order (queryOrder) before applying again"}


class CrashedRefundShop(FakeShop):
    """The shop's tools, with applyRefund answering as lesson 24's McpTool does when the server wrote the refund and
    then crashed: its error Observation, the client's MAYBE_DONE at the end."""

    def apply_refund(self, text: str) -> str:
        said = f"MCP server 'shop': McpError: Connection closed. {mcp_client.MAYBE_DONE}"
        return error_observation(said, tool="applyRefund")


def said_not_done(answer: str) -> list[str]:
    return [words for words in NOT_SUBMITTED if words in answer.lower()]


@pytest.mark.parametrize(("question", "lang"), [(REFUND_ZH, "zh"), (REFUND_EN, "en")])
def test_a_refund_with_no_answer_is_said_as_perhaps_submitted_never_as_not_submitted(question, lang):
    run = converse(question, CrashedRefundShop().registry(), lang=lang)
    assert run.tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert not said_not_done(run.answer), run.answer
    assert MAY_HAVE_BEEN[lang] in run.answer and CHECK_FIRST[lang] in run.answer
    assert "RF20" not in run.answer  # no refund id is made up


def test_the_classroom_recognises_the_mcp_client_and_the_cut_short_notes():
    from tinyagent.classroom.planning import maybe_done

    assert maybe_done(mcp_client.MAYBE_DONE)
    assert all(maybe_done(note) for note in CUT_SHORT.values())
    assert not maybe_done("退款系统维护中") and not maybe_done("order not found")
    # a server's own refusal in words near a note's is a refusal
    assert not maybe_done("MCP server 'shop': refund refused: this order may have been refunded by phone already")
    assert not maybe_done("该订单可能已经退款，请勿重复申请")


@pytest.mark.parametrize(("question", "lang"), [(REFUND_ZH, "zh"), (REFUND_EN, "en")])
def test_a_refund_past_its_time_limit_is_said_as_perhaps_submitted_and_it_was(question, lang, tmp_path):
    """Lesson 10's ToolTimeout gives up waiting on a slow applyRefund, which goes on and writes the refund: the
    answer must not say it was not submitted."""
    import time

    from tinyagent import LlmClient, ReActAgent, fixed_clock
    from tinyagent.robustness.stop_rules import StopRules, ToolTimeout
    from tinyagent.shop import Shop, shop_registry

    with Shop(str(tmp_path / "shop.db"), clock=fixed_clock("2026-06-30T10:00:00")) as shop:
        registry = shop_registry(shop)
        refund = registry.get("applyRefund")
        invoke = refund.invoke
        refund.invoke = lambda text: time.sleep(1.5) or invoke(text)  # slower than its limit, and it still writes
        timeout = ToolTimeout(per_tool={"applyRefund": 0.3})
        agent = ReActAgent(LlmClient.classroom(), registry, lang=lang, parts=[StopRules([timeout])])
        run = agent.run(question)
        assert timeout.join_abandoned(30)
        assert len(shop.refunds()) == 1
    quoted = run.trace.of_type(Observation)[-1].text  # the tool's note, quoted: "It was not stopped", "failed"
    assert not said_not_done(run.answer.replace(json.loads(quoted)["error"], "")), run.answer
    assert MAY_HAVE_BEEN[lang] in run.answer


def test_a_refund_cut_off_by_a_real_server_crash_is_said_as_perhaps_submitted(tmp_path):
    """End to end: an MCP server that writes the refund, then exits before it answers; the classroom model reads the
    client's Observation."""
    from tests.test_mcp_client import hostile

    done = tmp_path / "refunds"
    shop = FakeShop()
    with hostile("exit_on_call", done) as connection:
        tools = shop.registry(("queryOrder", "getCurrentTime", "searchKnowledge"))
        tools.register(mcp_client.McpTool(connection, connection.list_tools()[0]))
        run = converse(REFUND_EN, tools, lang="en")
    assert done.read_text() == "refunded\n" and run.tools[-1] == "applyRefund"
    assert not said_not_done(run.answer), run.answer
    assert MAY_HAVE_BEEN["en"] in run.answer


def test_a_refund_the_shop_refused_is_still_said_as_not_submitted():
    run = converse(REFUND_ZH, FakeShop(refund_error="退款系统维护中").registry())
    assert "没有提交成功" in run.answer and "退款系统维护中" in run.answer


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_reminder_with_no_answer_is_said_as_perhaps_sent_never_as_not_sent(lang):
    """Lesson 21's closed loop, its sendWechat answering as an MCP tool does when its server went away mid-call."""
    from tests.test_reminders import EN, ZH
    from tinyagent import LlmClient, ReActAgent, ToolRegistry, tool
    from tinyagent.architectures.reminder_loop import ReminderStore, reminder_registry
    from tinyagent.toolkit.weather_api import WeatherService

    @tool(name="sendWechat")
    def send_wechat(text: str) -> str:
        """Send me a WeChat reminder.

        Args:
            text: the message
        """
        return error_observation(f"MCP server 'outbox': McpError: Connection closed. {mcp_client.MAYBE_DONE}")

    with WeatherService() as weather, ReminderStore() as store:
        kept = [kept for kept in reminder_registry(store, weather.base_url) if kept.name != "sendWechat"]
        tools = ToolRegistry([*kept, send_wechat])
        result = ReActAgent(LlmClient.classroom(), tools, lang=lang).run(EN if lang == "en" else ZH)
    assert [call.name for call in result.trace.tool_calls][-1] == "sendWechat"
    said = {"en": ("may have been sent", "not sent"), "zh": ("可能已经发出", "没有发出")}[lang]
    assert said[0] in result.answer and said[1] not in result.answer, result.answer
