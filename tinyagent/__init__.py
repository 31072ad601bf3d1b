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
from .events import Event, Final, LimitReached, LlmCall, Observation, Parsed, ReplyDelta, Stopped, ToolCall
from .lazy_names import lazy_getattr
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
    "ContextBudget",
    "ContextBudgetError",
    "CutOff",
    "EvalReport",
    "Event",
    "Final",
    "FittedRequest",
    "FullHistory",
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
    "PostgresSessionStore",
    "RateLimitError",
    "ReActAgent",
    "RepeatedAction",
    "ReplyDelta",
    "ReplyStream",
    "ServerError",
    "Session",
    "SessionStoreError",
    "Settings",
    "SlidingWindow",
    "SqliteSessionStore",
    "StepCap",
    "Stop",
    "StopCutter",
    "StopRule",
    "StopRules",
    "Stopped",
    "SummaryMemory",
    "TinyAgentError",
    "TokenBudget",
    "Tool",
    "ToolCall",
    "ToolFilter",
    "ToolHint",
    "ToolRegistry",
    "ToolResult",
    "ToolTimeout",
    "Trace",
    "Turn",
    "TypedTool",
    "UserFacts",
    "WallClock",
    "Warn",
    "build_system_prompt",
    "detect_language",
    "evaluate",
    "extract_final_answer",
    "fixed_clock",
    "fold_observation",
    "format_reminder",
    "function_spec",
    "function_specs",
    "input_from_arguments",
    "load_settings",
    "open_session_store",
    "parse_step",
    "parse_tolerant",
    "recommended_stop_rules",
    "request_tokens",
    "run_turns",
    "system_clock",
    "tool",
    "write_file_tool",
]

# Lesson 07's, 09's and 12's names load on first use: the agent and the CLI never need them, so
# `python -m tinyagent ask` starts without compiling them (see benchmarks/overhead.py, cold start).
_LAZY = {
    "TypedTool": "typed_tool",
    "tool": "typed_tool",
    "function_spec": "tool_specs",
    "function_specs": "tool_specs",
    "input_from_arguments": "tool_specs",
    "write_file_tool": "workspace_files",
    "FunctionCallingAgent": "function_agent",  # lesson 09
    "ContextBudget": "context_budget",  # lesson 13
    "ContextBudgetError": "errors",
    "FittedRequest": "context_budget",
    "request_tokens": "context_budget",
    "ToolFilter": "tool_filter",
    "ToolHint": "tool_filter",
    "fold_observation": "observation_folding",
    "run_turns": "turns",
    "ReplyStream": "streaming",  # lesson 14
    "StopCutter": "stop_cutter",  # lesson 14
    # lesson 12: sessions across runs, their memories and stores, long-term facts about the user
    "Session": "session",
    "Turn": "session_store",
    "FullHistory": "session_memory",
    "SlidingWindow": "session_memory",
    "SummaryMemory": "session_memory",
    "SqliteSessionStore": "session_store",
    "PostgresSessionStore": "session_store",
    "SessionStoreError": "session_store",
    "open_session_store": "session_store",
    "UserFacts": "user_facts",
    "evaluate": "evaluation",  # lesson 18
    "EvalReport": "evaluation",  # lesson 18
}


__getattr__ = lazy_getattr(__name__, _LAZY)


# -- 15 · Real tools: loaded on first use, like lesson 07's names ----------------------------------------
_LAZY.update({
    "ApprovalDecided": "events",
    "ApprovalRequested": "events",
    "ApiCallFailed": "http_tool",
    "JsonApi": "http_tool",
    "WeatherService": "weather_service",
    "weather_tool": "get_weather",
    "calculator_tool": "calculator",
    "ConfirmationGate": "confirmation",
    "ask_on_console": "confirmation",
    "read_file_tool": "workspace_files",
    "list_files_tool": "workspace_files",
    "workspace_tools": "workspace_files",
})
__all__ += [
    "ApiCallFailed", "ApprovalDecided", "ApprovalRequested", "ConfirmationGate", "JsonApi", "WeatherService",
    "ask_on_console", "calculator_tool", "list_files_tool", "read_file_tool", "weather_tool", "workspace_tools",
]

# -- 17 · Plan, reflect, skills: loaded on first use -------------------------------------------------------
_LAZY.update({
    "PlanAndExecuteAgent": "plan_execute",
    "PlanError": "plans",
    "parse_plan": "plans",
    "ReflectingAgent": "reflection",
    "Router": "router",
    "Skill": "skills",
    "SkillError": "skills",
    "load_skills": "skills",
    "shop_skills": "skills",
})
__all__ += [
    "PlanAndExecuteAgent", "PlanError", "ReflectingAgent", "Router", "Skill", "SkillError", "load_skills",
    "parse_plan", "shop_skills",
]
