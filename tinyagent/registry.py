"""`ToolRegistry`: register tools, list them for the prompt, and run the model's Actions.

The one rule that matters: `execute` never raises. An unknown tool, an empty action, an input that
JSON cannot write, a tool that crashes or returns something other than a string all come back as an
error Observation (a small JSON object) that the model can read and correct itself from. An exception
would end the loop instead.
What comes back can always be encoded: a lone surrogate in a tool's text is replaced (safe_text.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tinyagent.safe_text import replace_lone_surrogates
from tinyagent.tools import Action, Tool


@dataclass(frozen=True)
class ToolResult:
    """What running an Action produced: the Observation text, and whether it reports a failure."""

    text: str
    error: bool = False


def error_observation(message: str, **details: object) -> str:
    """The one shape every error Observation has: {"error":"...",...details}, compact like the tools' JSON."""
    return json.dumps({"error": message, **details}, ensure_ascii=False, separators=(",", ":"))


def input_text(action: Action) -> str:
    """The text the registry hands the tool for `action`: its input, or a JSON value's JSON text. Lesson 05's parser
    always gives text; an Action built from a JSON value instead (lesson 09's native calls give their arguments as
    JSON: a number, an object) runs on its JSON text, and whoever shows the call (lesson 15's confirmation gate) shows
    that same text. Raises when JSON cannot write the value."""
    if isinstance(action.tool_input, str):
        return action.tool_input
    return "" if action.tool_input is None else json.dumps(action.tool_input, ensure_ascii=False, default=str)


class ToolRegistry:
    def __init__(self, tools: list[Tool] | tuple[Tool, ...] = ()):
        # A dict keeps insertion order, so the tool list in the prompt is the same on every run:
        # the same prompt gives the same behaviour (and the same tokens cached by the provider).
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        """Add a tool. Mistakes here are the programmer's, so they raise at once (not in the loop)."""
        if not isinstance(tool, Tool):
            raise TypeError(f"register() needs a Tool, got {type(tool).__name__}")
        name = (tool.name or "").strip()
        if not name or any(ch.isspace() for ch in name):
            raise ValueError(f"a tool needs a one-word name, got {tool.name!r}")
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered")
        self._tools[name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self):
        return iter(self._tools.values())

    def build_tool_list(self, lang: str | None = None) -> str:
        """One numbered line per tool, "1. name - description", in registration order.

        With `lang`, each tool's description in that language where it has one (`Tool.describe`). A line break
        in a description becomes a space: kept, it would start a line of its own in the prompt (a "2. ..." line that
        lists a tool nobody registered, or an "Observation:" line), and a description may come from outside (an MCP
        server's, lesson 24).
        """
        return "".join(
            f"{i}. {tool.name} - {' '.join(tool.describe(lang).split())}\n"
            for i, tool in enumerate(self._tools.values(), start=1)
        )

    def run(self, action: Action | None) -> ToolResult:
        """Run an Action and say whether it failed. Never raises."""
        result = self._run(action)
        # A tool may hand back text it read from anywhere (a file, a web page, an exception message):
        # repaired here, once, it can be printed, saved and sent to the model.
        return ToolResult(replace_lone_surrogates(result.text), result.error)

    def _run(self, action: Action | None) -> ToolResult:
        if action is None or not isinstance(action.tool_name, str) or not action.tool_name.strip():
            return ToolResult(error_observation("no tool name was found in the reply"), error=True)
        name = action.tool_name.strip()
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(
                error_observation(f"unknown tool: {name}", available_tools=self.names), error=True
            )
        try:
            tool_input = input_text(action)
        # A value JSON cannot spell (a number of 5000 digits, a tuple as a key, a dict that holds itself) is the
        # caller's mistake, told like a tool's: the loop goes on.
        except Exception as exc:  # noqa: BLE001
            return ToolResult(
                error_observation(f"the input for tool {name} cannot be written as JSON: {_describe(exc)}"),
                error=True,
            )
        tool_input = tool_input.strip()
        try:
            output = tool.invoke(tool_input)
        # Any crash must become an Observation, not end the loop: SystemExit too (a tool built on argparse exits on
        # a bad input) and GeneratorExit. Only KeyboardInterrupt, a person's Ctrl-C, goes on.
        except (Exception, SystemExit, GeneratorExit) as exc:  # noqa: BLE001
            return ToolResult(error_observation(f"tool {name} failed: {_describe(exc)}"), error=True)
        if not isinstance(output, str):
            return ToolResult(
                error_observation(f"tool {name} returned {type(output).__name__}, not a string"), error=True
            )
        return ToolResult(output, error=_reports_error(output))

    def execute(self, action: Action | None) -> str:
        """The first article's contract: run an Action and return the Observation text. Never raises."""
        return self.run(action).text


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - an exception whose message itself fails must not escape either
        return type(exc).__name__


def _reports_error(text: str) -> bool:
    """A tool may report its own failure the same way the registry does: a JSON object whose "error" says
    something ({"error": null} is a tool saying there was none)."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # a tool's text may be a web page's: nested deeper than Python reads
        return False
    return isinstance(value, dict) and value.get("error") not in (None, "", False)
