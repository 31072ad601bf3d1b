"""`@tool(read_only=True)`: a typed look-up says it changes nothing, and every part that reads `Tool.read_only` hears it.

The package's look-ups made with lesson 07's `@tool` (lesson 15's getWeather, lesson 25's checkCoupon, ...) could not
say so: a stopped run that only looked up the weather said the look-up as a change, lesson 24's server published it
without readOnlyHint, and lesson 22's tree never ran it on a branch it was only exploring.
"""

from __future__ import annotations

import tempfile

import pytest

from tinyagent import ChatResult, ReActAgent, ToolRegistry, fixed_clock
from tinyagent.architectures.handoffs import Team, specialist
from tinyagent.architectures.reminder_loop import ReminderStore, forecast_tool, meetings_tool
from tinyagent.architectures.reminder_loop import message_tool as wechat_tool
from tinyagent.architectures.skills import Skill
from tinyagent.architectures.tree_search import TreeSearch, explorable
from tinyagent.defences.planting import described_tool
from tinyagent.defences.planting import message_tool as email_tool
from tinyagent.loop_parts import GIVE_UP
from tinyagent.memory.session import Session
from tinyagent.shop import Shop
from tinyagent.shop.cited_search import cited_search_tool
from tinyagent.toolkit.calculator import calculator_tool
from tinyagent.toolkit.mcp_client import McpConnection, mcp_registry
from tinyagent.toolkit.mcp_server import registry_server
from tinyagent.toolkit.pickup import pickup_tool
from tinyagent.toolkit.typed_tool import tool
from tinyagent.toolkit.weather_api import WeatherService
from tinyagent.toolkit.weather_tool import weather_tool
from tinyagent.toolkit.workspace_files import list_files_tool, read_file_tool, write_file_tool

CLOCK = fixed_clock("2026-06-30T19:05:23")
WEATHER = 'Thought: look\nAction: getWeather\nAction Input: {"city": "杭州"}'
NO_SERVICE = "http://127.0.0.1:9"  # never called: the tools below are only built


class Scripted:
    model = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)

    def chat(self, messages, **options):
        return ChatResult(self.replies.pop(0), "stop")


def test_a_typed_tool_says_it_changes_nothing_only_when_told():
    @tool(name="lookUp", read_only=True)
    def look_up(key: str) -> str:
        """Look something up.

        Args:
            key: what to look up, e.g. a
        """
        return key

    @tool
    def change(key: str) -> str:
        """Change something.

        Args:
            key: what to change, e.g. a
        """
        return key

    assert look_up.read_only is True and change.read_only is False
    assert look_up.invoke('{"key": "a"}') == "a"  # still the same tool otherwise


def test_read_only_must_be_true_or_false():
    # The tree search reads `read_only is True`: a "yes" or a 1 would be taken as a change there and a look-up here.
    def look_up(key: str) -> str:
        """Look something up."""
        return key

    for said in ("yes", 1, None):
        with pytest.raises(TypeError, match="read_only must be True or False"):
            tool(read_only=said)(look_up)


def built_tools(workspace: str) -> dict:
    shop = Shop(":memory:", clock=CLOCK)
    store = ReminderStore()
    made = [weather_tool(NO_SERVICE), described_tool(""), meetings_tool(store), forecast_tool(NO_SERVICE),
            cited_search_tool(shop), calculator_tool(), read_file_tool(workspace), list_files_tool(workspace),
            write_file_tool(workspace), wechat_tool(store), email_tool(store), pickup_tool()]
    return {made_tool.name: made_tool for made_tool in made}


def test_the_packages_typed_look_ups_say_they_change_nothing_and_the_tools_that_act_do_not():
    with tempfile.TemporaryDirectory() as workspace:
        tools = built_tools(workspace)
    marked = sorted(name for name, made in tools.items() if made.read_only)
    assert marked == ["calculator", "checkCoupon", "getForecast", "getMeetings", "getWeather", "listFiles",
                      "readFile", "searchKnowledge"]
    # they write a file, send a message, book a courier: each stays a change
    assert sorted(set(tools) - set(marked)) == ["schedulePickup", "sendMessage", "sendWechat", "writeFile"]


def test_a_stopped_run_that_only_looked_up_the_weather_keeps_the_canned_answer():
    # It said "Before the run stopped, it had already done this: - getWeather {...}": a look-up, as a change.
    with WeatherService() as service:
        agent = ReActAgent(Scripted(WEATHER, WEATHER), ToolRegistry([weather_tool(service.base_url)]), max_steps=2)
        result = Session(agent).ask("What is the weather in Hangzhou?")
    assert result.reason == "max_steps" and result.answer == GIVE_UP["en"].format(n=2)
    assert [call.name for call in result.trace.tool_calls] == ["getWeather", "getWeather"]


def test_a_team_counts_a_specialists_forecast_as_no_change_and_its_message_as_one():
    store = ReminderStore()
    registry = ToolRegistry([forecast_tool(NO_SERVICE), meetings_tool(store), wechat_tool(store)])
    skill = Skill("reminders", "Checks the weather for my meetings and reminds me.", tuple(registry.names), "")
    team = Team(Scripted(), [specialist(skill, registry, Scripted())])
    assert not team.writes("getForecast") and not team.writes("getMeetings") and team.writes("sendWechat")


def test_the_mcp_server_publishes_the_weather_look_up_as_read_only():
    registry = ToolRegistry([weather_tool(NO_SERVICE), calculator_tool(), pickup_tool()])
    # a client that trusts the server's hints reads readOnlyHint back as read_only
    with McpConnection.in_process(registry_server(registry), name="tools", trust_hints=True) as connection:
        listed = mcp_registry(connection)
        assert {t.name: t.read_only for t in listed} == {"getWeather": True, "calculator": True,
                                                        "schedulePickup": False}


def test_the_tree_may_look_ahead_with_the_weather_but_not_with_a_booking():
    registry = ToolRegistry([weather_tool(NO_SERVICE), pickup_tool()])
    run = ReActAgent(Scripted(), registry, parts=[TreeSearch()]).start("Will it rain in Hangzhou?")
    assert explorable(run, "getWeather") and not explorable(run, "schedulePickup")
