"""`StopComparison`: the same request without and with a stop sequence, side by side (lesson 04).

    StopComparison(llm, messages)                       # messages: system prompt + question
    StopComparison.from_agent(agent, "我上周买的扫地机不回充了，修不好我想退。订单号 88231。")

Without `stop` the model keeps typing past its Action: it writes an `Observation:` line itself,
with data no tool returned, and answers from it. With `stop=["Observation:"]` the server cuts the
reply right there and the program runs the real tool. The two raw texts are aligned line by line;
invented Observation lines are marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

import ipywidgets as widgets

from tinyagent.agent import STOP_SEQUENCES, ReActAgent
from tinyagent.llm_client import ChatResult
from tinyagent.widgets.cards import STATUS, WRAP, badge, esc, tint
from tinyagent.widgets.trace_viewer import with_text

INVENTED = STATUS["tool_error"]
AFTER_CUT = STATUS["acting"]


@dataclass(frozen=True)
class Row:
    """One aligned line. kind: "same" (both replies have it), "differs", "after_cut" (only the
    reply without stop has it), or "invented" (an Observation the model wrote itself)."""

    left: str | None
    right: str | None
    kind: str


def align(without: str, with_stop: str, stop: tuple[str, ...]) -> list[Row]:
    rows = []
    for left, right in zip_longest(without.splitlines(), with_stop.splitlines()):
        if left is not None and any(s and left.lstrip().startswith(s) for s in stop):
            kind = "invented"
        elif right is None:
            kind = "after_cut"
        else:
            kind = "same" if left == right else "differs"
        rows.append(Row(left, right, kind))
    return rows


class StopComparison(widgets.VBox):
    """Sends `messages` twice through `llm.chat`: without `stop`, then with it.

    State for tests: `.without` and `.with_stop` (ChatResult), `.rows`, `.fabricated` (the
    invented Observation lines).
    """

    def __init__(
        self,
        llm,
        messages: list[dict],
        *,
        stop: tuple[str, ...] | list[str] = STOP_SEQUENCES,
        max_tokens: int | None = None,
    ):
        self.stop = tuple(stop)
        self.without: ChatResult = llm.chat(list(messages), max_tokens=max_tokens)
        self.with_stop: ChatResult = llm.chat(list(messages), stop=list(self.stop), max_tokens=max_tokens)
        self.rows = align(self.without.text, self.with_stop.text, self.stop)
        self.fabricated = [row.left for row in self.rows if row.kind == "invented"]
        table = widgets.HTML(self.html())
        table.add_class("tinyagent-stop-table")
        super().__init__([table])
        self.add_class("tinyagent-stop-comparison")

    @classmethod
    def from_agent(cls, agent: ReActAgent, question: str, **options) -> StopComparison:
        """Compare on the exact first request `agent` would send for `question` (its messages and max_tokens)."""
        messages = agent.start(question).messages
        options.setdefault("stop", agent.stop or STOP_SEQUENCES)
        options.setdefault("max_tokens", agent.max_tokens)
        return cls(agent.llm, messages, **options)

    def _stop_label(self) -> str:
        return f"stop={list(self.stop)!r}"

    @staticmethod
    def _facts(reply: ChatResult) -> str:
        usage = reply.usage or {}
        return f"finish_reason={reply.finish_reason}, {usage.get('completion_tokens', '?')} tokens out"

    def html(self) -> str:
        cell = f"vertical-align:top;padding:1px 8px;{WRAP};line-height:1.35;font-family:var(--jp-code-font-family,monospace);font-size:90%"
        rows = []
        cut_marked = False
        for row in self.rows:
            left = esc(row.left or "")
            right = esc(row.right or "")
            style = ""
            if row.kind == "invented":
                style = f"background:{tint(INVENTED)};"
                left = (
                    f'<span class="ta-invented" style="color:{INVENTED};font-weight:600">{left}</span> '
                    + badge("invented: no tool ran", INVENTED)
                )
            elif row.kind == "after_cut":
                style = f"background:{tint(AFTER_CUT)};"
            if row.right is None and not cut_marked:
                cut_marked = True
                right = (
                    f'<span class="ta-cut" style="color:{AFTER_CUT};font-style:italic">✂ cut here by '
                    f"{esc(self._stop_label())}: the program runs the real tool now</span>"
                )
            rows.append(
                f'<tr class="ta-row-{row.kind}" style="{style}"><td style="{cell}">{left}</td>'
                f'<td style="{cell}">{right}</td></tr>'
            )
        head_style = "text-align:left;padding:4px 8px;border-bottom:1px solid #999"
        summary = (
            f'<div class="ta-summary" style="margin-top:4px">{len(self.fabricated)} invented Observation '
            f"line(s) without stop; {sum(row.right is None for row in self.rows)} lines the stop "
            f"sequence kept out.</div>"
        )
        return (
            '<table style="table-layout:fixed;width:100%;border-collapse:collapse">'
            f'<colgroup><col style="width:50%"><col style="width:50%"></colgroup>'
            f'<tr><th style="{head_style}">Without stop<br><span style="font-weight:normal;opacity:0.75">'
            f"{esc(self._facts(self.without))}</span></th>"
            f'<th style="{head_style}">With {esc(self._stop_label())}<br><span style="font-weight:normal;'
            f'opacity:0.75">{esc(self._facts(self.with_stop))}</span></th></tr>'
            f"{''.join(rows)}</table>{summary}"
        )

    def text(self) -> str:
        """Both replies, one after the other; "!" marks an invented Observation line."""
        lines = [
            f"StopComparison: the same request without and with {self._stop_label()}",
            f"invented Observation lines without stop: {len(self.fabricated)}",
            f"--- without stop ({self._facts(self.without)}) ---",
        ]
        for row in self.rows:
            if row.left is not None:
                mark = "!" if row.kind == "invented" else " "
                lines.append(
                    f"{mark} {row.left}".rstrip() + ("   <- invented: no tool ran" if mark == "!" else "")
                )
        lines.append(f"--- with {self._stop_label()} ({self._facts(self.with_stop)}) ---")
        lines.extend(f"  {line}".rstrip() for line in self.with_stop.text.splitlines())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<StopComparison {len(self.fabricated)} invented Observation lines>"

    def _repr_mimebundle_(self, **kwargs):
        return with_text(super()._repr_mimebundle_(**kwargs), self.text())
