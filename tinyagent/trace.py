"""`Trace`: the record of one run, as a list of events.

Print it to read the run round by round, as the first article's console does, in English or Chinese; save it
with `to_json()` and load it back with `from_json()`. Latency is kept in the events but left out of the printed
form, so a printed trace is the same on every run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tinyagent.events import Event, Final, LlmCall, Stopped, ToolCall, event_from_dict
from tinyagent.prompts import check_language
from tinyagent.safe_text import terminal_text

# A round's heading. "agent" is for a trace several agents share (lesson 21's team, `Event.agent`): each numbers its
# own rounds, and the heading names the agent; a single agent's trace, every lesson's before 21, uses "one".
ROUND = {
    "en": {"one": "===== Round {n} =====", "agent": "===== Round {n} · {agent} ====="},
    "zh": {"one": "===== 第 {n} 圈 =====", "agent": "===== 第 {n} 圈 · {agent} ====="},
}


@dataclass
class Trace:
    """Every event of one run. `lang` is the language `str(trace)` prints in."""

    events: list[Event] = field(default_factory=list)
    lang: str = "en"

    def append(self, event: Event) -> None:
        self.events.append(event)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    # -- what happened ---------------------------------------------------------------------
    @property
    def end(self) -> Final | Stopped | None:
        """The Final or Stopped event, if the run has ended."""
        for event in reversed(self.events):
            if isinstance(event, (Final, Stopped)):
                return event
        return None

    @property
    def answer(self) -> str | None:
        end = self.end
        return end.answer if end else None

    @property
    def reason(self) -> str | None:
        end = self.end
        return end.reason if end else None

    @property
    def rounds(self) -> int:
        return max((event.step for event in self.events), default=0)

    def of_type(self, cls: type[Event]) -> list:
        return [event for event in self.events if isinstance(event, cls)]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return self.of_type(ToolCall)

    def total_usage(self) -> dict[str, int]:
        """Token counts summed over every model call (keys the server did not send count as 0)."""
        total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for call in self.of_type(LlmCall):
            for key in total:
                total[key] += int(call.usage.get(key) or 0)
        return total

    # -- printing --------------------------------------------------------------------------
    def format(self, lang: str | None = None, usage: bool = False) -> str:
        """The run round by round. `usage=True` adds a token line per model call. Each event says how it
        prints (`Event.lines`)."""
        lang = check_language(lang or self.lang)
        rounds: list[list[Event]] = []
        for event in self.events:
            if not rounds or (rounds[-1][0].step, rounds[-1][0].agent) != (event.step, event.agent):
                rounds.append([])
            rounds[-1].append(event)
        blocks = []
        for events in rounds:
            first = events[0]
            lines = [ROUND[lang]["agent" if first.agent else "one"].format(n=first.step, agent=first.agent)]
            for event in events:
                lines.extend(event.lines(lang, usage, events))
            blocks.append("\n".join(lines))
        return terminal_text("\n\n".join(blocks))  # the model's and the tools' words, printed: no ESC obeyed

    def __str__(self) -> str:
        return self.format()

    def print(self, lang: str | None = None, usage: bool = False) -> None:
        print(self.format(lang, usage))

    def __repr__(self) -> str:
        return f"<Trace {self.rounds} rounds, {len(self.events)} events, ended: {self.reason or 'running'}>"

    # -- saving ----------------------------------------------------------------------------
    def to_json(self, indent: int | None = 2) -> str:
        data = {"lang": self.lang, "events": [event.to_dict() for event in self.events]}
        return json.dumps(data, ensure_ascii=False, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("events"), list):
            raise TypeError('a trace in JSON is an object with an "events" list')
        if not all(isinstance(item, dict) for item in data["events"]):
            raise TypeError("a trace in JSON holds its events as objects")
        return cls([event_from_dict(item) for item in data["events"]], lang=check_language(data.get("lang", "en")))


@contextmanager
def kept_with_ctrl_c(trace: Trace) -> Iterator[None]:
    """Within: a Ctrl-C (KeyboardInterrupt) leaves with `trace` as its `trace`, what the run had done before it (a
    refund among it), for a caller that has only `run()`'s exception to go on: it can still say what was done."""
    try:
        yield
    except KeyboardInterrupt as stop:
        stop.trace = trace
        raise
