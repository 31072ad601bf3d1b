"""The tool contract: a name, a description for the prompt, and `invoke(input) -> str`.

A tool may describe itself in several languages (`descriptions = {"zh": "..."}`): the prompt in that
language lists that description, so the model reads every line of its prompt in one language.

`Action` is what the parser extracts from the model's text; a `Tool` is what the registry runs for it.
Input and output are plain strings on purpose: the model writes text and reads text, so the tool is
where parsing and validation happen (lesson 07 adds JSON Schema on top).

`parameters` is the JSON Schema of the tool's arguments (an object schema), or None for a tool that takes
one free-text input, as its description says. `@tool` (typed_tool.py) builds it from type hints; a
hand-written tool may set it by hand. It is what native function calling sends, and how a tool's input
is shown in the prompt (tool_rendering.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Action:
    """One tool call the model asked for: which tool, and the raw text it wrote as input."""

    tool_name: str
    tool_input: str = ""


class Tool(ABC):
    """Subclass this, set `name` and `description`, and implement `invoke`."""

    name: str = ""
    description: str = ""
    # The description in other languages, by language code ("zh": ...); `description` is the default.
    descriptions: Mapping[str, str] = MappingProxyType({})
    # The JSON Schema of the arguments, or None: one free-text input (see the module docstring).
    parameters: Mapping[str, Any] | None = None
    # True only for a tool that changes nothing (a look-up): a part that looks ahead before it commits may run such a
    # tool on a path it is only exploring; every other tool waits until the step is taken. False unless a tool says so.
    read_only: bool = False

    @abstractmethod
    def invoke(self, input: str) -> str:
        """Run the tool on the model's raw input text and return the Observation text."""

    def describe(self, lang: str | None = None) -> str:
        """The description for a prompt in `lang`: its own one for that language, else `description`."""
        return self.descriptions.get(lang, self.description) if lang else self.description

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(Tool):
    """A tool made from a plain function `fn(input: str) -> str`, for when a class is too much ceremony."""

    def __init__(
        self,
        name: str,
        description: str,
        fn: Callable[[str], str],
        descriptions: Mapping[str, str] | None = None,
        parameters: Mapping[str, Any] | None = None,
    ):
        if not callable(fn):
            raise TypeError(f"FunctionTool {name!r} needs a callable, got {type(fn).__name__}")
        self.name = name
        self.description = description
        if descriptions:
            self.descriptions = MappingProxyType(dict(descriptions))
        if parameters is not None:
            self.parameters = dict(parameters)
        self._fn = fn

    def invoke(self, input: str) -> str:
        return self._fn(input)
