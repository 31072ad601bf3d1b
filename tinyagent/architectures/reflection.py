"""Lesson 17: reflection. Before the answer goes out, the model checks its draft against the Observations.

A model can read `"status":"已签收"` in an Observation and still write "运输中" in its answer. Nothing in the
loop notices: the answer has the right format, so it is final. Reflection is one more model call, after the
draft and before the customer sees it:

    system  Check the draft answer against the Observations ...
    user    Request / Observations (every tool result of the run) / Draft answer
    reply   Verdict: ok                          -> the draft stands
            Verdict: revise                      -> the revised answer replaces it
            Problems:
            - the draft says 运输中; queryOrder said 已签收
            Revised answer: ...

`read_verdict` reads that reply, leniently (case, full-width colons, Chinese labels, Markdown), and reads
the verdict by one rule, so that a verdict that may mean "revise" is never read as "ok":

    revise     the verdict holds a revise word (revise, revision, wrong, fix, fail, 修改, 错误, 有误 ...) or a
               negation (not, no, never, n't, 不, 没, 未, 否, outside an ok word: 没问题 is ok, 通过不了 is not)
    ok         otherwise, the verdict is an ok word alone (ok, pass, correct, 通过, 正确, 没问题, 无误; 通过了 too),
               with nothing but Markdown and punctuation around it
    unchecked  anything else ("correct the status", "maybe"), or Verdict lines that do not agree

A revised answer is the lines after "Revised answer:" up to the next label line (Verdict, Problems). A reply
it cannot read, or a "revise" with no revised answer, leaves the draft as it is with verdict "unchecked": a
check that did not work must never replace a right answer with nothing, and a revision never drops what the run
changed: when it ran a tool that changes something (a refund), those changes are said after the revised answer
(memory/run_changes.py), which may correct a fact but not deny an effect. `ReflectingAgent` wraps a ReActAgent:
the run's Final is held back, checked, and given out as a `Reflected` event and then the Final of the checked
answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from tinyagent.agent import AgentResult, ReActAgent
from tinyagent.errors import LlmError
from tinyagent.events import Event, Final, LlmCall, Observation, ToolCall, event_kind
from tinyagent.llm_client import LlmClient
from tinyagent.memory.run_changes import MADE, changes_made, said_after, writes_in
from tinyagent.robustness.tolerant_parser import FormatObservation
from tinyagent.trace import Trace, kept_with_ctrl_c

REFLECTION_LABELS = {  # in a printed trace
    "en": {"draft": "[Draft]", "reflected": "[Reflection: {verdict}]"},
    "zh": {"draft": "[草稿]", "reflected": "[反思：{verdict}]"},
}


@event_kind
class Reflected(Event):
    """Lesson 17 (reflection.py): the draft answer checked against the run's Observations. verdict "ok",
    "revise" (then `answer` is the revised one) or "unchecked" (the check could not be read or made; the draft
    stands); `problems` what the check found wrong."""

    kind: ClassVar[str] = "reflected"
    verdict: str = "ok"
    draft: str = ""
    problems: tuple[str, ...] = ()
    answer: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = REFLECTION_LABELS[lang]
        lines = [f"{labels['draft']} {self.draft}", labels["reflected"].format(verdict=self.verdict)]
        return lines + [f"  - {problem}" for problem in self.problems]


# The classroom model recognises the call by "Check the draft answer" / 核对草稿答复 (classroom/plan_and_reflect.py).
REFLECTION_PROMPT = {
    "en": (
        "Check the draft answer against the Observations before it is sent. A draft may state only what the "
        "Observations say: compare every order status, amount, date, tracking number and refund id. Reply in "
        "this form:\nVerdict: ok\nor\nVerdict: revise\nProblems:\n- <each statement the Observations contradict>\n"
        "Revised answer: <the answer with those statements corrected>"
    ),
    "zh": (
        "在发出之前，请对照观察结果核对草稿答复。草稿只能说观察结果里有的内容：逐一核对订单状态、金额、日期、运单号和退款单号。"
        "按这个格式回复：\n结论：通过\n或\n结论：需修改\n问题：\n- <每一处与观察结果矛盾的说法>\n修改后的答复：<改正后的答复>"
    ),
}
LABELS = {
    "en": {"request": "Request", "observations": "Observations", "draft": "Draft answer", "none": "(no tools ran)"},
    "zh": {"request": "请求", "observations": "观察结果", "draft": "草稿答复", "none": "（没有调用工具）"},
}
# A label line: Markdown and spaces may stand around the label (never a line end: each run of them is read
# once, possessively, so a reply padded with spaces is read in linear time). The Markdown a model puts around a
# label ("**Revised answer:** fixed") is no part of what follows it.
_BEFORE = r"(?:[^\S\n]|[*_#>])*+"
_AROUND = r"(?:[^\S\n]|[*_])*+"
_VERDICT = re.compile(rf"^{_BEFORE}(?:verdict|结论){_AROUND}[:：](.*)$", re.IGNORECASE | re.MULTILINE)
_PROBLEMS = re.compile(rf"^{_BEFORE}(?:problems?|问题){_AROUND}[:：]{_AROUND}(.*)$", re.IGNORECASE)
_REVISED = re.compile(rf"^{_BEFORE}(?:revised answer|修改后的答复|修改后答复){_AROUND}[:：]{_AROUND}(.*)$",
                      re.IGNORECASE)
_OK_WORDS = ("ok", "pass", "passed", "correct", "通过", "正确", "没问题", "无误")
_REVISE_WORDS = ("revise", "revised", "revision", "wrong", "incorrect", "fix", "fail", "failed", "correction",
                 "corrections", "需修改", "修改", "错误", "有误", "不通过")
_NEGATIONS = ("not", "no", "never")
_CHINESE_NEGATIONS = ("不", "没", "未", "否")


@dataclass(frozen=True)
class Verdict:
    """What the check said: verdict "ok", "revise" or "unchecked", what was wrong, and the answer to give."""

    verdict: str
    problems: tuple[str, ...]
    answer: str


def reflection_messages(question: str, draft: str, observations: list[str], lang: str = "en") -> list[dict]:
    """The messages of the checking call."""
    labels = LABELS[lang]
    seen = "\n".join(f"- {text}" for text in observations) or labels["none"]
    user = f"{labels['request']}: {question}\n\n{labels['observations']}:\n{seen}\n\n{labels['draft']}: {draft}"
    return [{"role": "system", "content": REFLECTION_PROMPT[lang]}, {"role": "user", "content": user}]


def observations_of(trace: Trace) -> list[str]:
    """Every tool result of a run, as "tool(input) -> text", the errors too (they are facts as well)."""
    lines, call = [], None
    for event in trace:
        if isinstance(event, ToolCall):
            call = event
        elif isinstance(event, Observation) and not isinstance(event, FormatObservation):
            where = f"{call.name}({call.input})" if call is not None else "Observation"
            lines.append(f"{where} -> {event.text}")
            call = None
    return lines


def _bare(value: str) -> str:
    """What follows a label, without the spaces and Markdown around it."""
    return value.strip().strip("*_").strip()


def _reading(verdict: str) -> str:
    """One Verdict line's words read by the module's rule: "ok", "revise" or "unchecked"."""
    low = verdict.lower()
    words = re.findall(r"[a-z]+(?:['’]t)?", low)  # English whole words: "correction" is not "correct"
    chinese = low
    for word in _OK_WORDS:
        if not word.isascii():
            chinese = chinese.replace(word, " ")  # 没问题 and 无误 hold no negation
    if (any(word in _REVISE_WORDS or word in _NEGATIONS or word.endswith(("n't", "n’t")) for word in words)
            or any(word in low for word in _REVISE_WORDS if not word.isascii())
            or any(mark in chinese for mark in _CHINESE_NEGATIONS)):
        return "revise"
    bare = re.sub(r"[\W_]+", "", low)  # only Markdown, punctuation and spaces around the word
    return "ok" if bare in _OK_WORDS or (bare.endswith("了") and bare[:-1] in _OK_WORDS) else "unchecked"


def read_verdict(text: str, draft: str) -> Verdict:
    """The check's reply read leniently, by the module's rule. Never raises; whatever cannot be read leaves the
    draft standing."""
    text = text if isinstance(text, str) else ""
    verdicts = [(match, value) for match in _VERDICT.finditer(text) if (value := _bare(match.group(1)))]
    if not verdicts:
        return Verdict("unchecked", ("the check's reply has no 'Verdict:' line",), draft)
    readings = {_reading(value) for _, value in verdicts}
    said = " / ".join(repr(value) for _, value in verdicts)
    if len(readings) > 1:
        return Verdict("unchecked", (f"the check's verdicts do not agree: {said}",), draft)
    if readings == {"ok"}:
        return Verdict("ok", (), draft)
    if readings == {"unchecked"}:
        return Verdict("unchecked", (f"unknown verdict {said}",), draft)
    problems, revised, section = [], [], None
    for line in text[verdicts[0][0].end():].splitlines():
        if _VERDICT.match(line):
            section = None  # a label line ends the section before it
        elif (found := _PROBLEMS.match(line)) is not None:
            section = "problems"
            if found.group(1).strip():
                problems.append(found.group(1).strip())
        elif (found := _REVISED.match(line)) is not None:
            section = "revised"
            revised.append(found.group(1))
        elif section == "problems" and line.strip():
            problems.append(line.strip().lstrip("-*• ").strip())
        elif section == "revised":
            revised.append(line)
    answer = "\n".join(revised).strip()
    if not answer:
        return Verdict("unchecked", (*problems, "the check asked for a revision but wrote no revised answer"), draft)
    return Verdict("revise", tuple(problems), answer)


def check_draft(llm: LlmClient, question: str, draft: str, trace: Trace, lang: str = "en"):
    """One checking call: (the Verdict, the ChatResult). Raises LlmError if the model cannot be reached."""
    reply = llm.chat(reflection_messages(question, draft, observations_of(trace), lang))
    return read_verdict(reply.text, draft), reply


class ReflectingAgent:
    """A ReActAgent whose answers are checked before they are given (see the module's docstring).

    agent:  the ReActAgent that drafts the answer
    llm:    the model that checks it (default: the agent's own)
    A run that ends without an answer of the model's own (a stop rule, an error) is not checked.
    """

    def __init__(self, agent: ReActAgent, llm: LlmClient | None = None):
        if not isinstance(agent, ReActAgent):
            raise TypeError(f"ReflectingAgent wraps a ReActAgent, got {type(agent).__name__}")
        self.agent = agent
        self.llm = llm if llm is not None else agent.llm
        self.tools = agent.tools

    def steps(self, question: str, history: list[dict] | None = None) -> Iterator[Event]:
        run = self.agent.start(question, history)
        for event in run:
            if not (isinstance(event, Final) and event.reason in ("final_answer", "fallback")):
                yield event
                continue
            step = event.step + 1
            try:
                verdict, reply = check_draft(self.llm, question, event.answer, run.trace, run.lang)
            except LlmError as error:  # no check is no reason to lose the answer
                verdict, reply = Verdict("unchecked", (f"the check failed: {error}",), event.answer), None
            if reply is not None:
                messages = reflection_messages(question, event.answer, observations_of(run.trace), run.lang)
                yield LlmCall.of_reply(step, messages, reply)
            answer = verdict.answer
            if verdict.verdict == "revise":  # the checker's words replace the draft's, and may leave out a refund
                answer = said_after(answer, changes_made(run.trace, writes_in(self.tools)), run.lang, MADE)
            yield Reflected(step, verdict.verdict, event.answer, verdict.problems, answer)
            yield Final(step, answer, event.reason)

    def run(self, question: str, history: list[dict] | None = None) -> AgentResult:
        trace = Trace(lang=self.agent.language_for(question))
        with kept_with_ctrl_c(trace):
            for event in self.steps(question, history):
                trace.append(event)
        return AgentResult(trace.answer, trace.reason, trace, [])
