"""`Trace`: the record of one run, as a list of events.

Print it to read the run round by round (like the seed's console), in English or Chinese; save it
with `to_json()` and load it back with `from_json()`. Latency is kept in the events but left out of
the printed form, so a printed trace is the same on every run. So are the pieces of a streamed reply
(lesson 14): kept as events, never printed one by one (the LlmCall holds the whole text).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from .events import (
    ApprovalDecided,
    ApprovalRequested,
    BranchExplored,
    Event,
    Final,
    Handoff,
    LimitReached,
    LlmCall,
    Observation,
    Parsed,
    PathChosen,
    PersonEdit,
    PlanMade,
    PlanStepDone,
    PlanStepStarted,
    Reflected,
    ReplyDelta,
    Routed,
    SkillActivated,
    Stopped,
    ThoughtCandidate,
    ToolCall,
    TreeNote,
    event_from_dict,
)
from .prompts import check_language
from .records import field, record

LABELS = {
    "en": {
        "round": "===== Round {n} =====",
        "thought": "[Thought]",
        "tool_call": "[Tool call]",
        "tool_result": "[Tool result]",
        "tool_error": "[Tool error]",
        "final": "[Final answer]",
        "fallback": "[Final answer - fallback]",
        "stopped": "[Stopped: {reason}]",
        "usage": "[Tokens] {prompt} in + {completion} out, finish_reason={finish}",
        "client_cut": "[Client cut] the server ignored stop; tinyagent cut the reply at the stop sequence",
        "observation_cut": "[Observation cut] the tool returned {total} characters, more than max_observation_chars"
        "; the model saw only the start",
        "format_error": "[Format reminder]",
        "parser": "[Parser] {rule}",
        "limit": "[Limit reached: {reason}] {what}",
        "after_limit": "[Final answer - after a limit]",
        "streamed": "[Streamed] the reply came in {n} pieces",
        "typed": "[Typed so far] {text}",
        "approval_asked": "[Approval asked] {tool}: {summary} (waits up to {timeout:g} s)",
        "approval": "[Approval: {outcome}] by {by}",
        "outcomes": {"approved": "approved", "declined": "declined", "timeout": "no answer in time",
                     "error": "error"},
        "routed": "[Route: {mode}{skill}] {reason}",
        "skill": "[Skill: {name}] tools: {tools}",
        "plan": "[Plan]",
        "replan": "[Re-plan {n}] {reason}",
        "plan_error": "[Plan unreadable] {error}",
        "plan_step": "[Step {n}] {text}",
        "step_done": "[Step {n} done]",
        "step_failed": "[Step {n} failed: {reason}]",
        "reflected": "[Reflection: {verdict}]",
        "draft": "[Draft]",
        "edited": "[Edited by a person] this round's reply is the person's, not the model's",
        "model_wrote": "  the model had written: {text}",
        "retried": "[Retried by a person] the tool runs again with: {text}",
        "before": "  it had returned: {text}",
        "agent_round": "===== Round {n} · {agent} =====",
        "handoff": "[Handoff] {source} -> {target}: {message}",
        "handback": "[Handed back] {target} -> {source}: {message}",
    },
    "zh": {
        "round": "===== 第 {n} 圈 =====",
        "thought": "[思考]",
        "tool_call": "[工具调用]",
        "tool_result": "[工具结果]",
        "tool_error": "[工具出错]",
        "final": "[最终答复]",
        "fallback": "[最终答复-兜底]",
        "stopped": "[停止：{reason}]",
        "usage": "[Token] 输入 {prompt} + 输出 {completion}，finish_reason={finish}",
        "client_cut": "[客户端截断] 服务器没有遵守 stop，tinyagent 在停止词处自己截断了回复",
        "observation_cut": "[观察被截断] 工具返回了 {total} 个字符，超过了 max_observation_chars，模型只看到了开头",
        "format_error": "[格式提醒]",
        "parser": "[解析] {rule}",
        "limit": "[到达限制：{reason}] {what}",
        "after_limit": "[最终答复-到达限制后]",
        "streamed": "[流式] 回复分 {n} 段到达",
        "typed": "[已输入] {text}",
        "approval_asked": "[等待批准] {tool}：{summary}（最多等 {timeout:g} 秒）",
        "approval": "[批准结果：{outcome}] 决定方：{by}",
        "outcomes": {"approved": "已批准", "declined": "被拒绝", "timeout": "超时无人答复", "error": "出错"},
        "routed": "[路由：{mode}{skill}] {reason}",
        "skill": "[技能：{name}] 可用工具：{tools}",
        "plan": "[计划]",
        "replan": "[重新计划 {n}] {reason}",
        "plan_error": "[计划无法解析] {error}",
        "plan_step": "[第 {n} 步] {text}",
        "step_done": "[第 {n} 步完成]",
        "step_failed": "[第 {n} 步失败：{reason}]",
        "reflected": "[反思：{verdict}]",
        "draft": "[草稿]",
        "edited": "[人工修改] 这一圈的回复是人写的，不是模型写的",
        "model_wrote": "  模型原来写的：{text}",
        "retried": "[人工重试] 工具用这个输入再执行一次：{text}",
        "before": "  上次的结果：{text}",
        "agent_round": "===== 第 {n} 圈 · {agent} =====",
        "handoff": "[转交] {source} -> {target}：{message}",
        "handback": "[交回] {target} -> {source}：{message}",
    },
}

# What each stop reason means (lesson 10), for the [Limit reached] line.
REASON_NAMES = {
    "en": {
        "max_steps": "the step cap",
        "length": "a reply cut at max_tokens",
        "token_budget": "the token budget is spent",
        "timeout": "the time limit is up",
        "repeated_action": "the same action again",
        "no_progress": "no new information",
    },
    "zh": {
        "max_steps": "步数上限",
        "length": "回复在 max_tokens 处被截断",
        "token_budget": "token 预算用完了",
        "timeout": "时间到了",
        "repeated_action": "重复同一个动作",
        "no_progress": "没有新的信息",
    },
}


# The rules of lesson 05's strict parser, and a native tool call read as it came (lesson 09): a trace does
# not repeat them (the line after says it all).
STRICT_RULES = ("action", "final_answer", "no_format", "", "tool_call")


@record(frozen=False)
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
        """The run round by round. `usage=True` adds a token line per model call."""
        lang = check_language(lang or self.lang)
        labels = LABELS[lang]
        lines: list[str] = []
        current_step = None
        typed: list[str] = []  # the pieces of a streamed reply (lesson 14) whose LlmCall has not come yet
        for event in self.events:
            if (event.step, event.agent) != current_step:  # several agents (lesson 21): each its own rounds
                if typed:  # the stream of the last round never became a reply (it broke, or is still going)
                    lines.append(labels["typed"].format(text="".join(typed)))
                    typed = []
                current_step = (event.step, event.agent)
                if lines:
                    lines.append("")
                heading = labels["agent_round"] if event.agent else labels["round"]
                lines.append(heading.format(n=event.step, agent=event.agent))
            if isinstance(event, ReplyDelta):
                typed.append(event.text)  # never one line per piece: the LlmCall holds the whole text
                continue
            if typed and not isinstance(event, LlmCall):
                lines.append(labels["typed"].format(text="".join(typed)))
            lines.extend(_format_event(event, labels, usage, REASON_NAMES[lang]))
            if typed and isinstance(event, LlmCall) and usage:
                lines.append(labels["streamed"].format(n=len(typed)))
            typed = []
        if typed:
            lines.append(labels["typed"].format(text="".join(typed)))
        return "\n".join(lines)

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
        return cls([event_from_dict(item) for item in data["events"]], lang=data.get("lang", "en"))


def _format_event(event: Event, labels: dict[str, str], usage: bool, reasons: dict[str, str]) -> list[str]:
    if isinstance(event, LlmCall):
        lines = []
        if usage and event.model != "person":  # a person's reply (editable_trace.py) cost no tokens
            lines.append(labels["usage"].format(
                prompt=event.usage.get("prompt_tokens", "?"),
                completion=event.usage.get("completion_tokens", "?"),
                finish=event.finish_reason,
            ))
        if event.client_cut:  # always shown: the model wrote past the stop, and the provider billed it
            lines.append(labels["client_cut"])
        return lines
    if isinstance(event, Parsed):
        # A reply with no format has no thought; its Final (fallback) line shows the text.
        lines = [f"{labels['thought']} {event.thought}"] if event.thought else []
        if event.rule not in STRICT_RULES:  # the tolerant parser says what it repaired or refused (lesson 11)
            lines.append(labels["parser"].format(rule=event.rule))
        return lines
    if isinstance(event, ToolCall):
        return [f"{labels['tool_call']} {event.name}({event.input})"]
    if isinstance(event, Observation):
        label = labels["tool_error"] if event.error else labels["tool_result"]
        if event.format_error:
            label = labels["format_error"]
        lines = [f"{label} {event.text}"]
        if event.truncated:  # always shown: the model answered from part of what the tool said
            lines.append(labels["observation_cut"].format(total=event.original_chars))
        return lines
    if isinstance(event, Final):
        label = {"final_answer": labels["final"], "fallback": labels["fallback"]}.get(event.reason, labels["after_limit"])
        return [f"{label} {event.answer}"]
    if isinstance(event, LimitReached):
        what = reasons.get(event.reason, "")
        line = labels["limit"].format(reason=event.reason, what=what).rstrip()
        return [line, event.detail] if event.detail else [line]
    if isinstance(event, Stopped):
        line = f"{labels['stopped'].format(reason=event.reason)} {event.answer}"
        return [line, event.detail] if event.detail else [line]
    if isinstance(event, ApprovalRequested):  # lesson 15: a side effect waiting for a person's yes
        return [labels["approval_asked"].format(tool=event.tool, summary=event.summary, timeout=event.timeout_s)]
    if isinstance(event, ApprovalDecided):
        outcome = labels["outcomes"].get(event.outcome, event.outcome)
        line = labels["approval"].format(outcome=outcome, by=event.by)
        return [line, event.detail] if event.detail else [line]
    if isinstance(event, PersonEdit):  # a person stepped into the trace (editable_trace.py)
        if event.what == "retry":
            return [labels["retried"].format(text=event.text), labels["before"].format(text=_shortened(event.original))]
        return [labels["edited"], labels["model_wrote"].format(text=_shortened(" / ".join(event.original.strip().splitlines())))]
    return _format_lesson_17(event, labels) or _format_lesson_22(event, labels) or [repr(event)]


def _shortened(text: str, limit: int = 200) -> str:
    """What a person's edit replaced, on one line: its first `limit` characters (the whole is in the event)."""
    return text if len(text) <= limit else text[:limit] + " …"


def _format_lesson_17(event: Event, labels: dict) -> list[str] | None:
    """Lines for lesson 17's events: the route, the skill, the plan and its steps, the reflection."""
    if isinstance(event, Routed):
        skill = f", {event.skill}" if event.skill else ""
        return [labels["routed"].format(mode=event.mode, skill=skill, reason=event.reason)]
    if isinstance(event, SkillActivated):
        lines = [labels["skill"].format(name=event.name, tools=", ".join(event.tools) or "-")]
        return lines + ([event.reason] if event.reason else [])
    if isinstance(event, PlanMade):
        if event.error:  # the planner is asked again: its next PlanMade has the heading
            return [labels["plan_error"].format(error=event.error)]
        head = labels["replan"].format(n=event.revision, reason=event.reason) if event.revision else labels["plan"]
        return [head.rstrip()] + [f"  {n}. {text}" for n, text in enumerate(event.steps, start=1)]
    if isinstance(event, PlanStepStarted):
        return [labels["plan_step"].format(n=event.number, text=event.text)]
    if isinstance(event, PlanStepDone):
        if event.ok:
            return [f"{labels['step_done'].format(n=event.number)} {event.result}"]
        return [f"{labels['step_failed'].format(n=event.number, reason=event.reason)} {event.result}".rstrip()]
    if isinstance(event, Reflected):
        lines = [f"{labels['draft']} {event.draft}", labels["reflected"].format(verdict=event.verdict)]
        return lines + [f"  - {problem}" for problem in event.problems]
    if isinstance(event, Handoff):  # lesson 21
        label = labels["handback"] if event.back else labels["handoff"]
        return [label.format(source=event.source, target=event.target, message=event.message)]
    return None


# Lesson 22's lines, by the language of the trace's other labels (tree_search.py).
TREE_LABELS = {
    "en": {"candidate": "[Candidate {node}] {step}  (model {model}, rule {rule} -> {score})",
           "explored": "[Explored {node}] {tool} ran: {text}", "not_explored": "[Not explored {node}] {detail}",
           "note": "[Tree: {stage}] {detail}",
           "chosen": "[Chosen] path {path}; this round takes {committed} ({calls} calls, {tokens} tokens spent)"},
    "zh": {"candidate": "[候选 {node}] {step}（模型 {model}，规则 {rule} -> {score}）",
           "explored": "[探索 {node}] 运行了 {tool}：{text}", "not_explored": "[未探索 {node}] {detail}",
           "note": "[树：{stage}] {detail}",
           "chosen": "[选定] 路径 {path}；这一圈执行 {committed}（已花 {calls} 次调用、{tokens} 个 token）"},
}


def _format_lesson_22(event: Event, labels: dict) -> list[str] | None:
    """Lines for lesson 22's tree of thoughts: each candidate and its scores, what looking ahead did, the choice."""
    tree = TREE_LABELS["zh" if labels is LABELS["zh"] else "en"]
    if isinstance(event, ThoughtCandidate):
        what = f"{event.tool_name}({event.tool_input or ''})" if event.tool_name else f"Final Answer: {event.final_answer}"
        num = lambda value: "-" if value is None else f"{value:.2f}"
        return [tree["candidate"].format(node=event.node, step=what, model=num(event.model_score),
                                         rule=num(event.rule_score), score=f"{event.score:.2f}")]
    if isinstance(event, BranchExplored):
        if event.ran:
            return [tree["explored"].format(node=event.node, tool=event.tool, text=event.observation)]
        return [tree["not_explored"].format(node=event.node, detail=event.detail)]
    if isinstance(event, TreeNote):
        return [tree["note"].format(stage=event.stage, detail=event.detail)]
    if isinstance(event, PathChosen):
        return [tree["chosen"].format(path=" -> ".join(event.path), committed=event.committed, calls=event.calls,
                                      tokens=event.tokens)]
    return None
