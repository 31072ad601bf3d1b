"""tinyagent: a ReAct agent built from nothing. The finished package of the course.

    from tinyagent import ReActAgent, LlmClient, load_settings
    from tinyagent.shop import Shop, shop_registry

    agent = ReActAgent(LlmClient.from_settings(), shop_registry(Shop()))
    result = agent.run("帮我看看订单 88231 的快递到哪了。")
    print(result.trace)

Where each lesson's code lives (the README has the same map; tests/test_packaging.py keeps it whole):

    00 welcome            agent, settings, doctor, classroom/
    01 tools              tools, clock, shop/
    02 registry           registry
    03 raw HTTP           llm_client, chat_reply, api_url, errors
    04 stop sequence      llm_client, chat_reply, classroom/daydream
    05 parser             parser
    06 the loop           agent, loop_parts, events, trace, widgets/, editable_trace
    07 tool schemas       schema, typed_tool, validation, action_input, workspace_files
    08 prompt design      prompts, prompt_variants, token_count, compliance
    09 function calling   function_agent, tool_rendering, native_calls, protocol_comparison
    10 stopping           stop_rules
    11 robust parsing     tolerant_parser, reply_shapes
    12 memory             session, session_memory, session_store, user_facts, sqlite_writes
    13 context            context_budget, observation_folding, tool_filter, turns, turn_sizes
    14 streaming          streaming, streamed_stops
    15 real tools         http_tool, get_weather, weather_service, confirmation, calculator
    16 knowledge          shop/
    17 plan and skills    plan_text, plan_execute, reflection, skills, router
    18 evaluation         evaluation/
    19 serving            serving/, server_signals, serving/edits
    20 frameworks         frameworks/
    21 several agents     handoffs, reminders, classroom/handoffs, classroom/reminders
    22 tree of thoughts   tree_search
    23 constrained        gbnf, constrained_decoding
    A1 real model         local_model
    every lesson          checks/, background_server, server_address, lazy_names, records, safe_text, arguments,
                          lesson_copies
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
from .tools import Action, FunctionTool, Tool
from .trace import Trace

__all__ = [
    "Action",
    "AgentResult",
    "AgentRun",
    "ApiCallFailed",
    "ApprovalDecided",
    "ApprovalRequested",
    "AuthenticationError",
    "BadRequestError",
    "BadResponseError",
    "ChatResult",
    "ConfigurationError",
    "ConfirmationGate",
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
    "Handoff",
    "JsonApi",
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
    "PersonEdit",
    "PlanAndExecuteAgent",
    "PlanError",
    "PostgresSessionStore",
    "RateLimitError",
    "ReActAgent",
    "ReflectingAgent",
    "ReminderStore",
    "RepeatedAction",
    "ReplyDelta",
    "ReplyStream",
    "Router",
    "ServerError",
    "Session",
    "SessionStoreError",
    "Settings",
    "Skill",
    "SkillError",
    "SlidingWindow",
    "SqliteSessionStore",
    "StepCap",
    "Stop",
    "StopCutter",
    "StopRule",
    "StopRules",
    "Stopped",
    "SummaryMemory",
    "Team",
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
    "TreeBudget",
    "TreeSearch",
    "Turn",
    "TypedTool",
    "UserFacts",
    "WallClock",
    "Warn",
    "WeatherService",
    "ask_on_console",
    "build_system_prompt",
    "calculator_tool",
    "detect_language",
    "edit_thought",
    "evaluate",
    "extract_final_answer",
    "fixed_clock",
    "fold_observation",
    "format_reminder",
    "function_spec",
    "function_specs",
    "input_from_arguments",
    "list_files_tool",
    "load_settings",
    "load_skills",
    "open_session_store",
    "parse_plan",
    "parse_step",
    "parse_tolerant",
    "read_file_tool",
    "recommended_stop_rules",
    "reminder_registry",
    "request_tokens",
    "retry_tool",
    "run_turns",
    "shop_skills",
    "shop_team",
    "system_clock",
    "tool",
    "weather_tool",
    "workspace_tools",
    "write_file_tool",
]

# Names of the later lessons load on first use: the agent and the CLI never need them, so `python -m tinyagent
# ask` starts without compiling them (see benchmarks/overhead.py, cold start). Each is in `__all__` above too.
_LAZY = {
    # 06 · The loop: a person steps into a trace (an edited Thought, a retried tool)
    "PersonEdit": "events",
    "edit_thought": "editable_trace",
    "retry_tool": "editable_trace",
    # 07 · Tool schemas
    "TypedTool": "typed_tool",
    "tool": "typed_tool",
    "write_file_tool": "workspace_files",
    # 09 · Function calling
    "FunctionCallingAgent": "function_agent",
    "function_spec": "tool_rendering",
    "function_specs": "tool_rendering",
    "input_from_arguments": "tool_rendering",
    # 11 · Robust parsing
    "format_reminder": "tolerant_parser",
    "parse_tolerant": "tolerant_parser",
    # 12 · Memory: sessions across runs, their memories and stores, long-term facts about the user
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
    # 13 · Context
    "ContextBudget": "context_budget",
    "ContextBudgetError": "errors",
    "FittedRequest": "context_budget",
    "request_tokens": "context_budget",
    "ToolFilter": "tool_filter",
    "ToolHint": "tool_filter",
    "fold_observation": "observation_folding",
    "run_turns": "turns",
    # 14 · Streaming
    "ReplyStream": "streaming",
    "StopCutter": "streamed_stops",
    # 15 · Real tools
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
    # 17 · Plan, reflect, skills
    "PlanAndExecuteAgent": "plan_execute",
    "PlanError": "plan_text",
    "parse_plan": "plan_text",
    "ReflectingAgent": "reflection",
    "Router": "router",
    "Skill": "skills",
    "SkillError": "skills",
    "load_skills": "skills",
    "shop_skills": "skills",
    # 18 · Evaluation
    "evaluate": "evaluation",
    "EvalReport": "evaluation",
    # 21 · Several agents
    "Handoff": "events",
    "Team": "handoffs",
    "shop_team": "handoffs",
    "ReminderStore": "reminders",
    "reminder_registry": "reminders",
    # 22 · A tree of thoughts
    "TreeSearch": "tree_search",
    "TreeBudget": "tree_search",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
