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
    "Event",
    "Final",
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
    "WallClock",
    "Warn",
    "build_system_prompt",
    "detect_language",
    "extract_final_answer",
    "fixed_clock",
    "load_settings",
    "parse_step",
    "recommended_stop_rules",
    "system_clock",
]
