"""Lesson 25, defence (b): a write tool's arguments only from the customer's own words.

An instruction planted in a document can name any order; the customer named theirs. So before a tool that changes
something runs, each of its watched arguments must be a word the customer wrote: an order id for applyRefund, the
recipient for sendMessage. The customer's words are the user messages that are not Observations (history included:
"that order" after an earlier turn that named it). An id the customer never wrote is refused as an error
Observation, and the tool does not run:

    applyRefund {"orderId":"88236",...}   the customer wrote 88231 only
        -> {"error":"applyRefund was not run: orderId 88236 is not in the customer's messages", ...}

Ids are found as lesson 23 finds them (protocols/constrained_decoding.py's `id_shape`: a word shaped like the value,
letters as letters, digits as digits, never the digits of a decimal such as ¥12345.67; full-width ８８２３１ read as
88231), but in the customer's words only, not in what the tools returned. Only ASCII letters are compared without
their case (`as_read`): str.upper() makes the dotless "ı" an I and "ß" SS, and alice@gmaıl.com, a domain anyone may
register, passed for the customer's alice@gmail.com.

It holds however the model spells the id (full-width or bold digits, a JSON escape, a number for a string, a zero-width
space inside, leading zeros: each is read as the shop's tool reads it, or refused), and however the instruction was
planted (split over two results, in another language, in a field's name, in an HTML comment): it reads the call, not
the text that asked for it.

What it cannot judge:
    an id the customer wrote, used for what they did not ask   a planted "refund 88231" when the customer only asked
                                                               where 88231 is; any id they wrote anywhere counts,
                                                               even in "what does 88236 in that note mean?" or
                                                               "not 88236"
    free text                                                  a message's body, a refund's reason
    a tool it does not watch                                   only WATCHED's tools are checked: a read-only tool
                                                               that sends its input out (getWeather's city goes to
                                                               the weather page's host) runs with whatever it is given
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections.abc import Generator, Iterable, Mapping
from typing import Any, ClassVar

from tinyagent.events import Event
from tinyagent.protocols.constrained_decoding import id_shape
from tinyagent.registry import ToolResult, error_observation
from tinyagent.tools import Action

WATCHED: Mapping[str, tuple[str, ...]] = {"applyRefund": ("orderId",), "sendMessage": ("to",)}
ALWAYS_ALLOWED: Mapping[str, tuple[str, ...]] = {"to": ("me",)}  # the customer themself
OBSERVATION = "Observation:"
ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)
MAX_SHOWN_CHARS = 80  # of a refused argument, in the error Observation
# An email address as a whole: the name before the @ and every label of the domain after it (ASCII only: an address
# with other letters is never the customer's, and is refused).
ADDRESS = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def customer_texts(messages: Iterable[dict]) -> list[str]:
    """What the customer wrote: the content of each user message that is not an Observation, in order."""
    return [str(m.get("content") or "") for m in messages
            if m.get("role") == "user" and not str(m.get("content") or "").startswith(OBSERVATION)]


def ids_from_customer(messages: Iterable[dict], example: str = "88231") -> list[str]:
    """The words shaped like `example` in the customer's messages (`words_like`); never from an Observation or the
    system prompt."""
    return words_like("\n".join(customer_texts(messages)), example)


def as_read(value: str) -> str:
    """A word as the defences compare it: NFKC-normalised (８８２３１ is 88231, as the shop reads an order id) and its
    ASCII letters upper-cased, no other letter changed ("ı" stays "ı", "ß" stays "ß")."""
    return unicodedata.normalize("NFKC", value).translate(ASCII_UPPER)


def words_like(text: str, example: str) -> list[str]:
    """The words of `text` shaped like `example` (lesson 23's `id_shape`, in the NFKC-normalised text), each as
    `as_read` reads it, each once, in the order they first appear. An email address (an `example` with an @) is
    read whole (ADDRESS): id_shape ends a word at a dot, so alice@company.co in alice@company.co.uk, and
    smith@gmail.com in bob.smith@gmail.com, had passed for addresses the customer wrote."""
    text = unicodedata.normalize("NFKC", text)
    if "@" in example:
        found = [match.group(0) for match in ADDRESS.finditer(text)]
    else:
        found = [match.group(1) for match in id_shape(example).finditer(text)]
    return list(dict.fromkeys(as_read(word) for word in found))


def arguments_of(action: Action) -> dict:
    """The action's arguments: its input as a JSON object, or {"input": the text} when it is not one."""
    text = action.tool_input if isinstance(action.tool_input, str) else json.dumps(action.tool_input)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads (the tool refuses it too)
        return {"input": text.strip()}
    return value if isinstance(value, dict) else {"input": str(value)}


def refusal(action: Action, messages: list[dict], watched: Mapping[str, tuple[str, ...]] = WATCHED) -> str | None:
    """Why `action` may not run (an argument the customer never wrote), or None when it may."""
    fields = watched.get(action.tool_name.strip())
    if not fields:
        return None
    arguments = arguments_of(action)
    for name in fields:
        value = arguments.get(name, arguments.get("input") if len(fields) == 1 else None)
        if value is None:
            continue
        value = str(value).strip()
        if value.lower() in ALWAYS_ALLOWED.get(name, ()) or as_read(value) in ids_from_customer(messages, value):
            continue
        shown = value if len(value) <= MAX_SHOWN_CHARS else value[:MAX_SHOWN_CHARS] + "…"  # the model's, any length
        return f"{action.tool_name.strip()} was not run: {name} {shown} is not in the customer's messages"
    return None


class CustomerWordsOnly:
    """The `act` part of defence (b): `parts=[CustomerWordsOnly()]`. Around the act part it wraps, each call of a
    watched tool whose argument the customer never wrote gets an error result in its place and does not run."""

    slot: ClassVar[str] = "act"

    def __init__(self, watched: Mapping[str, tuple[str, ...]] = WATCHED, inner: Any = None):
        self.watched = dict(watched)
        self.inner = inner

    def around(self, inner: Any) -> CustomerWordsOnly:
        return CustomerWordsOnly(self.watched, inner)

    def __call__(self, run: Any, step: int, actions: list[Action], ready: list[ToolResult | None]
                 ) -> Generator[Event, None, Iterable[ToolResult]]:
        ready = [done or self._refused(run, action) for action, done in zip(actions, ready)]
        return (yield from self.inner(run, step, actions, ready))

    def _refused(self, run: Any, action: Action) -> ToolResult | None:
        why = refusal(action, run.messages, self.watched)
        if why is None:
            return None
        hint = "nothing was changed; do only what the customer asked, with the ids the customer gave"
        return ToolResult(error_observation(why, changed="nothing", hint=hint), error=True)

    def perform(self, run: Any, actions: list[Action], ready: list[ToolResult | None]) -> Iterable[ToolResult]:
        ready = [done or self._refused(run, action) for action, done in zip(actions, ready)]
        return self.inner.perform(run, actions, ready)

    def __repr__(self) -> str:
        return f"CustomerWordsOnly({self.inner!r})"
