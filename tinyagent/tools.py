"""The tool contract: a name, a description for the prompt, and `invoke(input) -> str`.

A tool may describe itself in several languages (`descriptions = {"zh": "..."}`): the prompt in that
language lists that description, so the model reads every line of its prompt in one language.

`Action` is what the parser extracts from the model's text; a `Tool` is what the registry runs for it.
Input and output are plain strings on purpose: the model writes text and reads text, so the tool is
where parsing and validation happen (lesson 07 adds JSON Schema on top). Models often wrap an input in a
Markdown code fence (```json ... ```): `without_fence` takes it off, for the shop's tools and for every reader of
a tool's input after them.

`parameters` is the JSON Schema of the tool's arguments (an object schema), or None for a tool that takes
one free-text input, as its description says. Lesson 07's `@tool` (toolkit/typed_tool.py) builds it from type
hints; a hand-written tool may set it by hand. It is how a tool's input is shown in the prompt (lesson 07's
protocols/tool_rendering.py), and what lesson 09's native function calling sends.

`read_only` marks a look-up that changes nothing: a class says `read_only = True` (the shop's look-ups do), lesson
07's `@tool` takes `read_only=True`. Lesson 12's sessions leave its calls out of what a stopped run
changed (memory/run_changes.py), lesson 22's tree search (architectures/tree_search.py) may run it on a path it is
only exploring, and lesson 24's MCP server and client pass it on as the `readOnlyHint`.
"""

from __future__ import annotations

import re
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
    # True only for a tool that changes nothing (a look-up): a part that looks ahead before it commits (lesson 22's
    # tree search) may run such a tool on a path it is only exploring; every other tool waits until the step is taken.
    # False unless a tool says so.
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


# The language word of an opening fence (json, JSON, json5, c++, objective-c, python3), or none: letters, at most
# two digits at its end. ASCII only, so a Chinese first line (```退货) is never taken for one, and an id (```88231,
# ```SF1234567890) is what the fence holds.
_LANGUAGE = re.compile(r"(?:[A-Za-z][A-Za-z_+.#-]*[0-9]{0,2})?")
# On one line, a language word before a JSON value: ```json {"orderId": "88231"}```, ```json 88231``` (what models
# mean by it). Before an object or a list any word is one; before a number or a string, json only.
_LANGUAGE_BEFORE_JSON = re.compile(r"[A-Za-z][A-Za-z0-9_+.#-]*[ \t]+(?=[\[{])|(?i:json)[ \t]+(?=[\"0-9-])")


class RepeatedKey(ValueError):
    """A JSON object that gives `key` more than once (see `keys_once`)."""

    def __init__(self, key: str):
        super().__init__(f"{key!r} is given more than once")
        self.key = key


def keys_once(pairs: list[tuple[str, object]]) -> dict:
    """For json.loads(object_pairs_hook=...): a JSON object whose keys are each given once, or `RepeatedKey`.
    `{"orderId": "88231", "orderId": "88232"}` is read by Python as 88232, while a person reading the input sees
    88231 first; neither may be guessed. The shop's tools read their JSON input with it."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise RepeatedKey(key)
        seen.add(key)
    return dict(pairs)


def without_fence(text: str) -> str:
    """`text` stripped, and without the Markdown code fence models wrap a tool's input in: ```json, its lines, ```.

    The opening line's language word may be any or none, with spaces around it; an opening line that holds more
    (```{"orderId": "88231"}) is the first line of what is inside. The closing fence may be missing (a reply cut
    short: ```json alone is nothing yet, but ```88231 is 88231: an id is no language word). On one line the fence is a
    code span: ```SF1234567890``` is SF1234567890, letters and all, though a word before a JSON object or list
    (```json {"orderId": "88231"}```), or json before any JSON value (```json 88231```), is a language. Text before the fence, and ~~~, are not read: they come back stripped, as written.
    Read by hand, not by one regex: a regex's "\\s*```$" is tried at every position of a run of spaces, and
    100,000 of them took 14 s."""
    text = text.strip()
    if not text.startswith("```"):
        return text
    body = text[3:]
    first, newline, rest = body.partition("\n")
    if newline and _LANGUAGE.fullmatch(first.strip()):
        return rest.strip().removesuffix("```").strip()  # the opening line was ``` and its language word
    if not newline and not body.endswith("```") and _LANGUAGE.fullmatch(body.strip()):
        return ""  # ```json and nothing after it
    body = body.strip().removesuffix("```").strip()
    language = _LANGUAGE_BEFORE_JSON.match(body)
    return body[language.end():] if language else body
