"""What a session gives the model of its earlier turns: everything, the last few, or a summary and the last few.

A memory is any object with one method, `history(session) -> list[dict]`: the chat messages that go between
the system prompt and the new question, oldest first. It reads the session's turns (`session.turns()`),
and may use `session.store`, `session.id`, `session.lang` (the new question's language) and
`session.agent`. Three are built in:

    FullHistory()              every turn, as user/assistant pairs: nothing is lost, and the prompt grows
                               with every turn until it no longer fits
    SlidingWindow(turns=3)     the last 3 turns: the prompt stops growing; whatever was said before is gone
                               (the order number given in turn 1 is forgotten by turn 5)
    SummaryMemory(window=2)    the last 2 turns, and before them a summary of all the older ones, which the
                               model writes itself: one more model call whenever turns fall out of the window

A summary is written incrementally: the previous summary plus the turns that just fell out of the window
go to the model, which returns the new summary. It is saved in the session store with the number of turns
it covers, so a resumed session (a restarted kernel, another worker) does not summarize again. If the
summarizing call fails (an error, a reply with no text, a summary cut at `max_tokens` or empty), nothing is
lost: the turns not yet summarized are given whole, and the next turn tries again. A summary that is not
shorter than what it would replace (the previous summary and those turns) is not kept either: it would only
make the prompt longer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from tinyagent.errors import TinyAgentError
from tinyagent.llm_client import ChatResult
from tinyagent.memory.session_store import Turn
from tinyagent.number_checks import check_whole

if TYPE_CHECKING:  # for type hints only: session.py imports this module
    from tinyagent.memory.session import Session


class Memory(Protocol):
    """The one method a memory strategy needs."""

    def history(self, session: Session) -> list[dict]: ...


def turn_messages(turns: Sequence[Turn]) -> list[dict]:
    """Turns as chat messages: each turn's question (user) and answer (assistant), oldest first."""
    return [message for turn in turns for message in turn.messages()]


class FullHistory:
    """Every earlier turn, whole."""

    def history(self, session: Session) -> list[dict]:
        return turn_messages(session.turns())

    def __repr__(self) -> str:
        return "FullHistory()"


class SlidingWindow:
    """The last `turns` turns; older ones are dropped. `SlidingWindow(0)` remembers nothing."""

    def __init__(self, turns: int = 3):
        check_whole("turns", turns, least=0)
        self.turns = turns

    def history(self, session: Session) -> list[dict]:
        turns = session.turns()
        # Not turns[-self.turns:]: with turns=0 that slice is the whole list.
        return turn_messages(turns[max(0, len(turns) - self.turns):])

    def __repr__(self) -> str:
        return f"SlidingWindow(turns={self.turns})"


# The instruction of the summarizing call. The classroom model recognises it by "Summarize the conversation"
# (and 总结下面的对话): see tinyagent/classroom/summaries.py.
SUMMARY_PROMPT = {
    "en": "You keep the notes of a customer-service conversation. Summarize the conversation below for the "
          "assistant who will continue it. Keep every order number, tracking number, refund id, fault, city and "
          "date that was mentioned, what was decided, and what the customer asked for. At most five short "
          "lines; write only the summary.",
    "zh": "你负责记录一段客服对话。请总结下面的对话，交给接着服务的客服：保留提到过的每个订单号、运单号、退款单号、故障、"
          "城市和日期，已经做出的决定，以及顾客要过什么。最多五行，只写摘要。",
}
_LABELS = {
    "en": {"previous": "Summary so far:", "turns": "The conversation:", "user": "Customer", "assistant": "Assistant"},
    "zh": {"previous": "目前的摘要：", "turns": "对话：", "user": "顾客", "assistant": "客服"},
}
# How the summary is put in front of the next run: a system message after the agent's own system prompt.
SUMMARY_HEADER = {
    "en": "Summary of the earlier conversation (turns 1-{covered}):",
    "zh": "之前对话的摘要（第 1-{covered} 轮）：",
}
SUMMARY_MAX_TOKENS = 256


def summary_request(turns: Sequence[Turn], previous: str | None = None, lang: str = "en") -> list[dict]:
    """The messages of a summarizing call: the instruction, then the previous summary and the new turns."""
    labels = _LABELS[lang]
    parts = [f"{labels['previous']}\n{previous.strip()}\n"] if previous else []
    lines = [labels["turns"]]
    for turn in turns:
        lines.append(f"{labels['user']}: {turn.question}")
        lines.append(f"{labels['assistant']}: {turn.answer}")
    parts.append("\n".join(lines))
    return [{"role": "system", "content": SUMMARY_PROMPT[lang]}, {"role": "user", "content": "\n".join(parts)}]


def summarize_turns(llm, turns: Sequence[Turn], previous: str | None = None, lang: str = "en") -> ChatResult:
    """One model call that folds `turns` into `previous` (a summary, or None). Raises `LlmError` on failure."""
    return llm.chat(summary_request(turns, previous, lang), max_tokens=SUMMARY_MAX_TOKENS)


class SummaryMemory:
    """The last `window` turns whole, and a summary of every turn before them, written by a model.

    llm:    the model that writes the summary; None uses the session's agent's own `llm`
    window: how many recent turns are given whole
    `calls` records every summarizing call's reply (with its `usage`); `failures` every error.
    """

    def __init__(self, llm=None, window: int = 2):
        check_whole("window", window, least=0)
        self.llm = llm
        self.window = window
        self.calls: list[ChatResult] = []
        self.failures: list[str] = []

    def history(self, session: Session) -> list[dict]:
        turns = session.turns()
        cut = max(0, len(turns) - self.window)  # turns[:cut] fall out of the window
        covered, text = session.store.summary(session.id) or (0, None)
        if covered < cut:
            written = self._summarize(session, turns[covered:cut], text)
            if written:
                session.store.save_summary(session.id, cut, written)
                covered, text = cut, written
        messages = []
        if text:
            header = SUMMARY_HEADER[session.lang].format(covered=covered)
            messages.append({"role": "system", "content": f"{header}\n{text}"})
        # From the first turn the summary does not cover: the window, plus any turn a failed call left out.
        return messages + turn_messages(turns[covered:])

    def _summarize(self, session: Session, turns: Sequence[Turn], previous: str | None) -> str | None:
        """The new summary of `previous` and `turns`, or None when there is none to keep: the turns stay whole."""
        llm = self.llm if self.llm is not None else session.agent.llm
        try:
            reply = summarize_turns(llm, turns, previous, session.lang)
        except TinyAgentError as exc:
            self.failures.append(str(exc))
            return None
        except Exception as exc:  # noqa: BLE001 - a summarizer of one's own may fail any way: the turns stay whole
            self.failures.append(f"the summarizing call failed: {type(exc).__name__}: {exc}")
            return None
        text = getattr(reply, "text", None)
        if not isinstance(text, str):
            self.failures.append(f"the summarizing call returned {type(reply).__name__}, not a ChatResult with text")
            return None
        self.calls.append(reply)
        if getattr(reply, "finish_reason", None) == "length" or not text.strip():
            # A summary cut in the middle may have lost the very fact that matters: keep the turns instead.
            self.failures.append(f"the summary came back {'cut at max_tokens' if text.strip() else 'empty'}")
            return None
        summary = text.strip()
        # A summary is kept only if it is shorter than what it replaces, the previous summary and the turns, counted
        # as the history is (Turn.history_tokens, the header in front of a summary left out): else it only adds.
        counter = session.counter
        whole = counter.chat(([{"role": "system", "content": previous}] if previous else []) + turn_messages(turns))
        summarized = counter.chat([{"role": "system", "content": summary}])
        if summarized >= whole:
            self.failures.append(f"the summary came back no shorter than what it would replace ({summarized} tokens "
                                 f"against {whole}): the turns are kept whole")
            return None
        return summary

    def __repr__(self) -> str:
        return f"SummaryMemory(window={self.window})"
