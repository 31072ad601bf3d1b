"""tinyagent: a ReAct agent built from nothing. The finished package of the course."""

from .clock import fixed_clock, system_clock
from .errors import TinyAgentError
from .prompts import build_system_prompt
from .registry import ToolRegistry, ToolResult
from .tools import Action, FunctionTool, Tool

__all__ = [
    "Action",
    "FunctionTool",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "TinyAgentError",
    "build_system_prompt",
    "fixed_clock",
    "system_clock",
]
