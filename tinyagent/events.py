"""The typed events the agent loop yields. Everything else (trace, widgets, CLI) consumes them.

One round of lesson 06's loop yields, in order:

    LlmCall -> Parsed -> ToolCall -> Observation      (the model asked for a tool)
    LlmCall -> Parsed -> Final                        (the model answered)
    ... or Stopped, when the loop ends without an answer (step cap, a failed model call)

A later lesson's part may yield events of its own: each is defined in that lesson's module, as a subclass of
`Event` with its own `kind` and its own `lines()`, the words a printed trace shows for it. Every kind is
registered when its class is made, so `Trace.from_json` finds it by its `kind`.

Events are frozen dataclasses: a trace is a record of what happened, never edited afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from importlib import import_module
from typing import Any, ClassVar

EVENT_KINDS: dict[str, type[Event]] = {}  # kind -> class, filled as each event class is made

# The words of a printed trace, for this lesson's events. Three lines print what only a later lesson's part makes:
# "after_limit" is a Final after lesson 10's closing call, "parser" names a rule a later reader gives (lesson 09's
# unreadable arguments, lesson 11's repairs), and a Stopped's reason may be a later part's.
LABELS = {
    "en": {
        "thought": "[Thought]",
        "tool_call": "[Tool call]",
        "tool_result": "[Tool result]",
        "tool_error": "[Tool error]",
        "final": "[Final answer]",
        "fallback": "[Final answer - fallback]",
        "after_limit": "[Final answer - after a limit]",
        "stopped": "[Stopped: {reason}]",
        "usage": "[Tokens] {prompt} in + {completion} out, finish_reason={finish}",
        "client_cut": "[Client cut] the server ignored stop; tinyagent cut the reply at the stop sequence",
        "observation_cut": "[Observation cut] the tool returned {total} characters, more than max_observation_chars"
        "; the model saw only the start",
        "parser": "[Parser] {rule}",
    },
    "zh": {
        "thought": "[思考]",
        "tool_call": "[工具调用]",
        "tool_result": "[工具结果]",
        "tool_error": "[工具出错]",
        "final": "[最终答复]",
        "fallback": "[最终答复-兜底]",
        "after_limit": "[最终答复-到达限制后]",
        "stopped": "[停止：{reason}]",
        "usage": "[Token] 输入 {prompt} + 输出 {completion}，finish_reason={finish}",
        "client_cut": "[客户端截断] 服务器没有遵守 stop，tinyagent 在停止词处自己截断了回复",
        "observation_cut": "[观察被截断] 工具返回了 {total} 个字符，超过了 max_observation_chars，模型只看到了开头",
        "parser": "[解析] {rule}",
    },
}

# The rules a trace does not repeat (the line after says it all): lesson 05's line scanner's, and "tool_call", a plain
# native call of lesson 09's reader. A reader of another lesson names rules of its own, and the trace shows those.
PLAIN_RULES = ("action", "final_answer", "no_format", "", "tool_call")


def event_kind(cls: type) -> type:
    """An event kind: a frozen dataclass, shown by Event's repr (which leaves `agent` out when it is "")."""
    return dataclass(frozen=True, repr=False)(cls)


@event_kind
class Event:
    """Base class: `step` is the round number, starting at 1. `agent` names the agent whose loop made the event
    when several share one trace (lesson 21's team); a keyword, and "" (left out of `to_dict` and the repr) for a
    single agent, as in every lesson before 21."""

    kind: ClassVar[str] = "event"
    step: int
    agent: str = field(default="", kw_only=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            EVENT_KINDS[cls.kind] = cls

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                          if f.repr and (f.name != "agent" or self.agent))
        return f"{type(self).__qualname__}({shown})"

    def to_dict(self) -> dict[str, Any]:
        """The event as plain data for JSON. Its fields hold plain values (no nested dataclasses), so they are read
        as they are, not deep-copied as `asdict` would: an LlmCall holds the whole conversation so far, and
        lesson 19's service turns every event of a streamed run into JSON as it happens."""
        data = {"type": self.kind, **{f.name: getattr(self, f.name) for f in fields(self)}}
        if not data["agent"]:
            del data["agent"]  # a single agent's trace reads as it always has
        return data

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        """What a printed trace shows for this event in `lang` ("en" or "zh"); `usage` asks for token counts.
        `round` is every event of this event's round, for an event whose lines depend on its neighbours."""
        return [repr(self)]


@event_kind
class LlmCall(Event):
    """One request to the model and what came back.

    messages:      the message list that was sent (a copy, as it was at that moment)
    text:          the reply text, after any stop-string cut
    finish_reason: "stop", "length", ... as the server said, or "stop" when the client cut the reply at a stop
                   string itself (client_cut)
    usage:         the server's token counts (prompt/completion/total), {} if it sent none
    latency_s:     seconds the request took (varies run to run; printed traces leave it out)
    model:         the model that answered
    client_cut:    True when the server ignored `stop` and the client cut the text itself
    """

    kind: ClassVar[str] = "llm_call"
    messages: tuple[dict, ...] = ()
    text: str = ""
    finish_reason: str | None = None
    usage: dict = field(default_factory=dict)
    latency_s: float = field(default=0.0, repr=False)  # varies run to run: kept out of printed reprs
    model: str = ""
    client_cut: bool = False

    @classmethod
    def of_reply(cls, step: int, messages: list[dict], reply: Any) -> LlmCall:
        """The event of a call: the messages sent, and the ChatResult that came back."""
        return cls(step, tuple(dict(m) for m in messages), reply.text, reply.finish_reason, reply.usage,
                   reply.latency_s, reply.model, reply.client_cut)

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = LABELS[lang]
        lines = []
        if usage and self.model != "person":  # a reply a person wrote, not a model, cost no tokens
            lines.append(labels["usage"].format(prompt=self.usage.get("prompt_tokens", "?"),
                                                completion=self.usage.get("completion_tokens", "?"),
                                                finish=self.finish_reason))
        if self.client_cut:  # always shown: the model wrote past the stop, and the provider billed it
            lines.append(labels["client_cut"])
        return lines


@event_kind
class Parsed(Event):
    """What the parser read in the reply. `rule` says which case applied (see parser.ParsedStep)."""

    kind: ClassVar[str] = "parsed"
    thought: str = ""
    tool_name: str | None = None
    tool_input: str | None = None
    final_answer: str | None = None
    rule: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        # A reply with no format has no thought; its Final (fallback) line shows the text.
        lines = [f"{LABELS[lang]['thought']} {self.thought}"] if self.thought else []
        if self.rule not in PLAIN_RULES:  # a later lesson's reader (09, 11) says what it repaired or refused
            lines.append(LABELS[lang]["parser"].format(rule=self.rule))
        return lines


@event_kind
class ToolCall(Event):
    """The tool the parsed reply asked for, and the input as the model wrote it (before the tool reads it)."""

    kind: ClassVar[str] = "tool_call"
    name: str = ""
    input: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        return [f"{LABELS[lang]['tool_call']} {self.name}({self.input})"]


@event_kind
class Observation(Event):
    """A tool's result as the model will read it. `error` marks a failed call (still fed back).

    original_chars: set only when the result was longer than the agent's `max_observation_chars`
                    and was cut: how many characters the tool returned (`text` is what the model saw).
    """

    kind: ClassVar[str] = "observation"
    text: str = ""
    error: bool = False
    original_chars: int | None = None

    @property
    def truncated(self) -> bool:
        return self.original_chars is not None

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = LABELS[lang]
        lines = [f"{labels['tool_error'] if self.error else labels['tool_result']} {self.text}"]
        if self.truncated:  # always shown: the model answered from part of what the tool said
            lines.append(labels["observation_cut"].format(total=self.original_chars))
        return lines


@event_kind
class Final(Event):
    """The run ended with an answer. reason: "final_answer", or "fallback" when the model replied with neither
    an Action nor "Final Answer:" and its text was taken as the answer, or the reason of a stop that still
    brought an answer (lesson 10's stop rules ask the model for its best answer when a limit is reached)."""

    kind: ClassVar[str] = "final"
    answer: str = ""
    reason: str = "final_answer"

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        label = {"final_answer": "final", "fallback": "fallback"}.get(self.reason, "after_limit")
        return [f"{LABELS[lang][label]} {self.answer}"]


@event_kind
class Stopped(Event):
    """The run ended without an answer; `answer` is the polite message the user gets instead and
    `detail` is for the developer. reason: "max_steps" (the step cap), "llm_error" (the model call
    failed, or its reply was not a Chat Completions reply), "length" (the reply was cut at max_tokens),
    "empty_reply" (the model said nothing), "native_tool_calls" (the model answered with the API's
    tool_calls, which lesson 09's agent reads and the text protocol does not), or the reason of a later
    lesson's part (lesson 10's stop rules name most of them)."""

    kind: ClassVar[str] = "stopped"
    reason: str = ""
    answer: str = ""
    detail: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        line = f"{LABELS[lang]['stopped'].format(reason=self.reason)} {self.answer}"
        return [line, self.detail] if self.detail else [line]


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from `Event.to_dict()` output (used by Trace.from_json)."""
    data = dict(data)
    kind = data.pop("type", None)
    cls = EVENT_KINDS.get(kind)
    if cls is None:  # a later lesson's event whose module is not imported yet
        import_module("tinyagent").load_every_event_kind()
        cls = EVENT_KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}; expected one of {', '.join(EVENT_KINDS)}")
    unknown = set(data) - {f.name for f in fields(cls)}
    if unknown:
        raise ValueError(f"{kind} event has unknown fields: {', '.join(sorted(unknown))}")
    for f in fields(cls):  # tuples in the event, lists in JSON
        if isinstance(data.get(f.name), list) and str(f.type).startswith("tuple"):
            data[f.name] = tuple(data[f.name])
        if f.name in data and not _fits(data[f.name], str(f.type)):
            # Checked here, where the file is read: a wrong type once loaded and failed later, far from it,
            # when the trace was printed or its usage summed.
            raise ValueError(f"{kind} event: {f.name} should be {f.type}, got {type(data[f.name]).__name__}")
    return cls(**data)


# What a field's annotation admits from JSON (the annotations events use; any other is not checked).
_JSON_KINDS = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,)}


def _fits(value: Any, annotation: str) -> bool:
    kinds = annotation.split(" | ")
    if value is None:
        return "None" in kinds
    for kind in kinds:
        if kind.startswith("tuple["):  # tuple[str, ...], tuple[dict, ...]: each item of that kind
            item = _JSON_KINDS.get(kind.removeprefix("tuple[").split(",")[0])
            if isinstance(value, tuple) and (item is None or all(isinstance(v, item) for v in value)):
                return True
        elif kind in _JSON_KINDS:
            if isinstance(value, _JSON_KINDS[kind]) and (kind == "bool" or not isinstance(value, bool)):
                return True
        elif kind != "None":
            return True  # an annotation this check does not know: not checked
    return False
