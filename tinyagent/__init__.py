"""tinyagent: a ReAct agent built from nothing. The finished package of the course.

    from tinyagent import ReActAgent, LlmClient, load_settings
    from tinyagent.shop import Shop, shop_registry

    agent = ReActAgent(LlmClient.from_settings(), shop_registry(Shop()))
    result = agent.run("帮我看看订单 88231 的快递到哪了。")
    print(result.trace)

`from tinyagent import X` offers the names the lessons import this way; everything else is imported from its own
module. Where each lesson's code lives: tinyagent/README.md, the lesson → modules map (tests/test_packaging.py
keeps it true).
"""

from importlib import import_module
from typing import Any

# Lessons 00-06: the loop and what it stands on.
from tinyagent.agent import ReActAgent
from tinyagent.clock import fixed_clock, system_clock
from tinyagent.errors import (
    AuthenticationError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    NotFoundError,
    TinyAgentError,
)
from tinyagent.events import Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.llm_client import ChatResult, LlmClient
from tinyagent.loop_parts import RunInTurn, Stop
from tinyagent.parser import ParsedStep, parse_step
from tinyagent.prompts import build_system_prompt, detect_language
from tinyagent.registry import ToolRegistry
from tinyagent.settings import load_settings
from tinyagent.tools import Action, FunctionTool, Tool
from tinyagent.trace import Trace

# Lessons 07-17: each module is imported the first time one of its names is asked for, so that a cold
# `python -m tinyagent ask` (lesson 06's loop) loads only the two it uses: tolerant_parser, for the changes it reports
# after the run, and streamed_stops, with the offline classroom server. `from tinyagent import X` works the same.
LATER = {
    # 07 tool schemas
    "toolkit.typed_tool": ("tool",),
    "toolkit.workspace_files": ("workspace_tools", "write_file_tool"),
    # 09 function calling
    "protocols.function_calling": ("FunctionCallingAgent", "ParallelAct"),
    "protocols.tool_rendering": ("function_spec", "function_specs", "input_from_arguments"),
    # 10 stopping
    "robustness.stop_rules": ("LimitReached", "NoProgress", "RepeatedAction", "StepCap", "StopRules", "TokenBudget",
                              "ToolTimeout", "WallClock", "recommended_stop_rules"),
    # 11 robust parsing
    "robustness.tolerant_parser": ("TolerantRead", "format_reminder", "parse_tolerant"),
    # 12 memory
    "memory.session": ("Session",),
    "memory.session_memory": ("FullHistory", "SlidingWindow", "SummaryMemory"),
    "memory.session_store": ("PostgresSessionStore", "SessionStoreError", "SqliteSessionStore"),
    "memory.user_facts": ("UserFacts",),
    # 14 streaming
    "protocols.streamed_stops": ("StopCutter",),
    "protocols.streaming": ("ReplyDelta", "StreamedSend", "open_stream"),
    # 15 real tools
    "toolkit.calculator": ("calculator_tool",),
    "toolkit.confirmation": ("ApprovalDecided", "ApprovalRequested", "ConfirmationGate", "GatedAct"),
    "toolkit.weather_tool": ("weather_tool",),
    "toolkit.weather_api": ("WeatherService",),
    # 17 plan, reflect, skills
    "architectures.plan_execute": ("PlanMade",),
    "architectures.reflection": ("Reflected",),
    "architectures.router": ("Routed",),
    "architectures.skills": ("SkillActivated",),
}
_MODULE_OF = {name: module for module, names in LATER.items() for name in names}

# Every module that defines a kind of event: a trace read back from JSON may hold any of them.
EVENT_MODULES = ("editable_trace", "robustness.stop_rules", "robustness.tolerant_parser", "protocols.streaming",
                 "toolkit.confirmation", "architectures.plan_execute", "architectures.reflection", "architectures.router",
                 "architectures.skills", "architectures.handoffs", "architectures.tree_search")

# What `from tinyagent import ...` offers: the names imported above, and the later lessons' names in LATER.
__all__ = sorted([*(name for name, value in globals().items() if getattr(value, "__module__", "").startswith("tinyagent.")),
                  *_MODULE_OF])


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tinyagent' has no attribute {name!r}")
    return getattr(import_module(f"tinyagent.{module}"), name)


def load_every_event_kind() -> None:
    """Import every module that defines a kind of event (for a trace read back from JSON)."""
    for module in EVENT_MODULES:
        import_module(f"tinyagent.{module}")
