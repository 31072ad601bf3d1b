"""tinyagent: a ReAct agent built from nothing. The finished package of the course.

    from tinyagent import ReActAgent, LlmClient, load_settings
    from tinyagent.shop import Shop, shop_registry

    agent = ReActAgent(LlmClient.from_settings(), shop_registry(Shop()))
    result = agent.run("帮我看看订单 88231 的快递到哪了。")
    print(result.trace)
"""

from .agent import AgentResult, AgentRun, ReActAgent
from .clock import fixed_clock, system_clock
from .errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ConfigurationError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TinyAgentError,
)
from .events import Event, Final, LimitReached, LlmCall, Observation, Parsed, Stopped, ToolCall
from .llm_client import ChatResult, LlmClient
from .parser import ParsedStep, extract_final_answer, parse_step
from .prompts import build_system_prompt, detect_language
from .registry import ToolRegistry, ToolResult
from .settings import Settings, load_settings
from .stop_rules import (
    CutOff,
    NoProgress,
    RepeatedAction,
    StepCap,
    Stop,
    StopRule,
    StopRules,
    TokenBudget,
    ToolTimeout,
    WallClock,
    Warn,
    recommended_stop_rules,
)
from .tolerant_parser import format_reminder, parse_tolerant
from .tools import Action, FunctionTool, Tool
from .trace import Trace

__all__ = [
    "Action",
    "AgentResult",
    "AgentRun",
    "AuthenticationError",
    "BadRequestError",
    "BadResponseError",
    "ChatResult",
    "ConfigurationError",
    "CutOff",
    "EvalReport",
    "Event",
    "Final",
    "FunctionCallingAgent",
    "FunctionTool",
    "LimitReached",
    "LlmCall",
    "LlmClient",
    "LlmConnectionError",
    "LlmError",
    "LlmTimeoutError",
    "NoProgress",
    "NotFoundError",
    "Observation",
    "Parsed",
    "ParsedStep",
    "RateLimitError",
    "ReActAgent",
    "RepeatedAction",
    "ServerError",
    "Settings",
    "StepCap",
    "Stop",
    "StopRule",
    "StopRules",
    "Stopped",
    "TinyAgentError",
    "TokenBudget",
    "Tool",
    "ToolCall",
    "ToolRegistry",
    "ToolResult",
    "ToolTimeout",
    "Trace",
    "TypedTool",
    "WallClock",
    "Warn",
    "build_system_prompt",
    "detect_language",
    "evaluate",
    "extract_final_answer",
    "fixed_clock",
    "format_reminder",
    "function_spec",
    "function_specs",
    "input_from_arguments",
    "load_settings",
    "parse_step",
    "parse_tolerant",
    "recommended_stop_rules",
    "system_clock",
    "tool",
    "write_file_tool",
]

# Lesson 07's and 09's names load on first use: the agent and the CLI never need them, so
# `python -m tinyagent ask` starts without compiling them (see benchmarks/overhead.py, cold start).
_LAZY = {
    "TypedTool": "typed_tool",
    "tool": "typed_tool",
    "function_spec": "tool_specs",
    "function_specs": "tool_specs",
    "input_from_arguments": "tool_specs",
    "write_file_tool": "workspace_files",
    "FunctionCallingAgent": "function_agent",  # lesson 09
    "evaluate": "evaluation",  # lesson 18
    "EvalReport": "evaluation",  # lesson 18
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tinyagent' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # found once, then an ordinary attribute
    return value
