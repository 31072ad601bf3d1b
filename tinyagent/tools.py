"""The tool contract: a name, a description for the prompt, and `invoke(input) -> str`.

`Action` is what the parser extracts from the model's text; a `Tool` is what the registry runs for it.
Input and output are plain strings on purpose: the model writes text and reads text, so the tool is
where parsing and validation happen (lesson 07 adds JSON Schema on top).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Action:
    """One tool call the model asked for: which tool, and the raw text it wrote as input."""

    tool_name: str
    tool_input: str = ""


class Tool(ABC):
    """Subclass this, set `name` and `description`, and implement `invoke`."""

    name: str = ""
    description: str = ""

    @abstractmethod
    def invoke(self, input: str) -> str:
        """Run the tool on the model's raw input text and return the Observation text."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(Tool):
    """A tool made from a plain function `fn(input: str) -> str`, for when a class is too much ceremony."""

    def __init__(self, name: str, description: str, fn: Callable[[str], str]):
        if not callable(fn):
            raise TypeError(f"FunctionTool {name!r} needs a callable, got {type(fn).__name__}")
        self.name = name
        self.description = description
        self._fn = fn

    def invoke(self, input: str) -> str:
        return self._fn(input)
