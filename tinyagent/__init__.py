"""tinyagent: a ReAct agent built from nothing. The finished package of the course.

    from tinyagent import ReActAgent, LlmClient, load_settings
    from tinyagent.shop import Shop, shop_registry

    agent = ReActAgent(LlmClient.from_settings(), shop_registry(Shop()))
    result = agent.run("帮我看看订单 88231 的快递到哪了。")
    print(result.trace)

Where each lesson's code lives: tinyagent/README.md, the lesson → modules map (tests/test_packaging.py keeps it true).
"""

from importlib import import_module
from types import ModuleType
from typing import Any

# Lessons 00-06: the loop and what it stands on.
from tinyagent.agent import AgentResult, AgentRun, ReActAgent
from tinyagent.clock import fixed_clock, system_clock
from tinyagent.editable_trace import PersonEdit, edit_thought, retry_tool
from tinyagent.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ConfigurationError,
    ContextBudgetError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TinyAgentError,
)
from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.llm_client import ChatResult, LlmClient
from tinyagent.loop_parts import (
    LoopParts,
    PlainSend,
    RunInTurn,
    StepLimit,
    Stop,
    StrictRead,
    WholeConversation,
)
from tinyagent.parser import ParsedStep, extract_final_answer, parse_step
from tinyagent.prompts import build_system_prompt, detect_language
from tinyagent.registry import ToolRegistry, ToolResult
from tinyagent.settings import Settings, load_settings
from tinyagent.tools import Action, FunctionTool, Tool
from tinyagent.trace import Trace

# Lessons 07-23: each module is imported the first time one of its names is asked for, so that a cold
# `python -m tinyagent ask` (lesson 06's loop) waits for none of them. `from tinyagent import X` works the same.
_LATER = {
    # 07 tool schemas
    "toolkit.typed_tool": ("TypedTool", "tool"),
    "toolkit.workspace_files": ("list_files_tool", "read_file_tool", "workspace_tools", "write_file_tool"),
    # 09 function calling
    "protocols.function_calling": ("FunctionCallingAgent", "NativeRead", "NativeRequest", "ParallelAct"),
    "protocols.tool_rendering": ("function_spec", "function_specs", "input_from_arguments"),
    # 10 stopping
    "robustness.stop_rules": ("CutOff", "LimitReached", "NoProgress", "RepeatedAction", "StepCap", "StopRule", "StopRules",
                   "TokenBudget", "ToolTimeout", "WallClock", "Warn", "recommended_stop_rules"),
    # 11 robust parsing
    "robustness.tolerant_parser": ("FormatObservation", "TolerantRead", "format_reminder", "parse_tolerant"),
    # 12 memory
    "memory.session": ("Session",),
    "memory.session_memory": ("FullHistory", "SlidingWindow", "SummaryMemory"),
    "memory.session_store": ("PostgresSessionStore", "SessionStoreError", "SqliteSessionStore", "Turn", "open_session_store"),
    "memory.user_facts": ("UserFacts",),
    # 13 context
    "memory.context_budget": ("BudgetedRequest", "ContextBudget", "FittedRequest", "request_tokens"),
    "memory.observation_folding": ("fold_observation",),
    "memory.tool_filter": ("ToolFilter", "ToolHint"),
    "memory.plain_turns": ("run_turns",),
    # 14 streaming
    "protocols.streamed_stops": ("StopCutter",),
    "protocols.streaming": ("ReplyDelta", "ReplyStream", "StreamedSend", "open_stream"),
    # 15 real tools
    "toolkit.calculator": ("calculator_tool",),
    "toolkit.confirmation": ("ApprovalDecided", "ApprovalRequested", "ConfirmationGate", "GatedAct", "ask_on_console"),
    "toolkit.weather_tool": ("weather_tool",),
    "toolkit.http_tool": ("ApiCallFailed", "JsonApi"),
    "toolkit.weather_api": ("WeatherService",),
    # 17 plan, reflect, skills
    "architectures.plan_execute": ("PlanAndExecuteAgent", "PlanMade", "PlanStepDone", "PlanStepStarted"),
    "architectures.plan_text": ("PlanError", "parse_plan"),
    "architectures.reflection": ("ReflectingAgent", "Reflected"),
    "architectures.router": ("Routed", "Router"),
    "architectures.skills": ("Skill", "SkillActivated", "SkillError", "load_skills", "shop_skills"),
    # 18 evaluation
    "evaluation": ("EvalReport", "evaluate"),
    # 21 several agents
    "architectures.handoffs": ("Handoff", "Team", "shop_team"),
    "architectures.reminder_loop": ("ReminderStore", "reminder_registry"),
    # 22 a tree of thoughts
    "architectures.tree_search": ("TreeBudget", "TreeSearch"),
}
_MODULE_OF = {name: module for module, names in _LATER.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tinyagent' has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


def load_every_lesson() -> None:
    """Import every lesson's module (so that every kind of event is known, for a trace read back from JSON)."""
    for module in _LATER:
        import_module(f".{module}", __name__)


# What `from tinyagent import ...` offers: every name above.
__all__ = sorted([*(name for name, value in globals().items() if not name.startswith("_")
                    and not isinstance(value, ModuleType) and name not in ("Any", "import_module", "load_every_lesson")),
                  *_MODULE_OF])
