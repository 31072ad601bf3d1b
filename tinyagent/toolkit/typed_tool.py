"""`@tool`: a typed Python function becomes a `Tool` whose input is checked before the function runs.

    @tool(name="queryOrder", descriptions={"zh": "查询订单详情和运单号。"}, read_only=True)
    def query_order(order_id: str) -> dict:
        '''Look up an order and its tracking number.

        Args:
            order_id: the order id, e.g. 88231
        '''
        return shop.get_order(order_id) or {"error": f"订单不存在：{order_id}"}

`query_order` is now a `TypedTool`: `name` "queryOrder" (the function's own name without `name=`),
`description` the docstring's summary, `parameters` the JSON Schema built from the type hints and the
docstring (schema.py), and `describe(lang)` the description with the line that says how to write the input
(tool_rendering.input_hint), which is what the prompt's tool list shows. It can still be called as the function:
`query_order("88231")`.

`read_only=True` says the tool changes nothing, as a look-up such as queryOrder (tools.Tool.read_only). Leave it out
for a tool that writes, sends, books or reminds: a stopped run says every call of an unmarked tool as a change after
its answer (lesson 12's sessions, memory/run_changes.py), and lesson 22's tree search runs only a marked tool on a
branch it is only exploring.

`invoke(text)` is what the registry calls with the model's Action Input. Three steps, and the function runs
only if the first two pass:

    1. read     the text as arguments (action_input.py): JSON, fenced or multi-line, or plain text for a
                tool with one parameter
    2. check    the arguments against the schema (validation.py); every problem found goes back in an
                error Observation naming the field, what was expected and an example of a good input:
                {"error":"invalid input for applyRefund: reason is missing","field":"reason",
                 "expected":"a string: why the customer wants the money back",
                 "example":{"order_id":"88231","reason":"..."}}
    3. call     the function with the arguments as Python values (a JSON object becomes the dataclass the
                hint names); what it returns becomes the Observation: a string as it is, anything else as
                compact JSON, None as {"ok":true} (so a look-up that finds nothing must say so itself, as
                query_order above does: None would tell the model it worked)

The function's own exceptions are not caught here: the registry turns them into an error Observation, as
for every tool.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, overload

from tinyagent.protocols.tool_rendering import input_hint
from tinyagent.registry import error_observation
from tinyagent.toolkit.action_input import read_arguments
from tinyagent.toolkit.schema import example_arguments, function_schema, to_python
from tinyagent.toolkit.validation import Problem, problems_in
from tinyagent.tools import Tool


class TypedTool(Tool):
    """A tool made from a typed function by `@tool`; see the module docstring."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        descriptions: Mapping[str, str] | None = None,
        param_descriptions: Mapping[str, Mapping[str, str]] | None = None,
        read_only: bool = False,
    ):
        if not callable(fn):
            raise TypeError(f"@tool needs a function, got {type(fn).__name__}")
        found = function_schema(fn)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "")
        self.description = " ".join((description or found.summary).split())
        if not self.description:
            raise TypeError(f"tool {self.name!r} has no description: give its function a docstring, or "
                            "description=...; the description is how the model knows what the tool is for")
        if descriptions:
            self.descriptions = MappingProxyType(dict(descriptions))
        if not isinstance(read_only, bool):  # the tree search asks `read_only is True`: a "yes" would be a change there
            raise TypeError(f"read_only must be True or False, got {read_only!r} for tool {self.name!r}")
        self.read_only = read_only
        self.parameters = found.parameters
        self._hints = found.hints
        properties = self.parameters["properties"]
        for lang, texts in (param_descriptions or {}).items():
            unknown = sorted(set(texts) - set(properties))
            if unknown:
                raise TypeError(f"param_descriptions[{lang!r}] names {unknown}, which are not parameters of "
                                f"{self.name}: {list(properties)}")
        self.param_descriptions = MappingProxyType(
            {lang: MappingProxyType(dict(texts)) for lang, texts in (param_descriptions or {}).items()}
        )
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Still the plain function, for Python callers (no checks: Python has its own)."""
        return self.fn(*args, **kwargs)

    # -- what the model is told ---------------------------------------------------------------------
    def parameters_in(self, lang: str | None = None) -> dict[str, Any]:
        """A copy of `parameters`, with the parameters' descriptions in `lang` where they were given."""
        parameters = copy.deepcopy(self.parameters)
        for name, text in (self.param_descriptions.get(lang, {}) if lang else {}).items():
            parameters["properties"][name]["description"] = text
        return parameters

    def summary(self, lang: str | None = None) -> str:
        """What the tool does, in `lang`: the description alone (native function calling sends this)."""
        return Tool.describe(self, lang)

    def describe(self, lang: str | None = None) -> str:
        """The summary and how to write the input: the tool's line in the text prompt."""
        summary = self.summary(lang)
        # Chinese sentences follow each other without a space; an English one ends with a space.
        space = "" if summary.endswith(("。", "！", "？", "）", "」")) else " "
        return f"{summary}{space}{input_hint(self.parameters_in(lang), lang)}"

    # -- what runs ----------------------------------------------------------------------------------
    def check(self, text: str) -> dict[str, Any] | list[Problem]:
        """The model's input read and checked: the arguments (JSON values), or every problem found."""
        arguments = read_arguments(text, self.parameters)
        if isinstance(arguments, Problem):
            return [arguments]
        return problems_in(arguments, self.parameters) or arguments

    def invoke(self, input: str) -> str:
        checked = self.check(input)
        if isinstance(checked, list):
            return self.rejection(checked)
        kwargs = {name: to_python(value, self._hints[name]) for name, value in checked.items()}
        return as_observation(self.fn(**kwargs), self.name)

    def rejection(self, problems: list[Problem]) -> str:
        """The error Observation for `problems`: all of them in the message, the first one's field and
        expectation, and an example input (with that field in it, if it is optional)."""
        first = problems[0]
        top = first.field.split(".")[0].split("[")[0]
        return error_observation(
            f"invalid input for {self.name}: " + "; ".join(problem.message for problem in problems),
            field=first.field,
            expected=first.expected,
            example=example_arguments(self.parameters, also=(top,) if top in self.parameters["properties"] else ()),
        )

    def __repr__(self) -> str:
        return f"<TypedTool {self.name!r} ({', '.join(self.parameters['properties']) or 'no parameters'})>"


def as_observation(result: Any, tool_name: str = "tool") -> str:
    """What a tool function returned, as Observation text: a string as it is, None as {"ok":true},
    anything else (a dict, a list, a number, a dataclass) as compact JSON with Chinese kept readable."""
    if isinstance(result, str):
        return result
    if result is None:
        result = {"ok": True}
    try:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{tool_name} returned {type(result).__name__}, which has no JSON form: {exc}") from None


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


@overload
def tool(fn: Callable[..., Any], /) -> TypedTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    descriptions: Mapping[str, str] | None = None,
    param_descriptions: Mapping[str, Mapping[str, str]] | None = None,
    read_only: bool = False,
) -> Callable[[Callable[..., Any]], TypedTool]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> TypedTool | Callable[[Callable[..., Any]], TypedTool]:
    """Make a typed function a tool: `@tool` alone, or `@tool(name=..., descriptions={"zh": ...},
    param_descriptions={"zh": {"order_id": "订单号"}}, read_only=True)`, the last for a look-up that changes nothing
    (see the module docstring). Mistakes in the function (a parameter without a type hint, a type with no JSON form,
    no docstring, a read_only that is not True or False) raise TypeError here, not in the agent's loop."""
    if fn is not None:
        return TypedTool(fn, **options)
    return lambda function: TypedTool(function, **options)
