"""An evaluation's results: one `TaskResult` per task, an `EvalReport` per model and protocol.

    report.table()            one line per task: each check, steps, tokens, and why a task failed
    scoreboard([a, b, c])     one line per report: success rate, each check's passes, steps and tokens per task
    report.to_json()          the JSON below; EvalReport.from_json(text) reads it back, checked against it

The JSON is stable (`REPORT_SCHEMA`, version "tinyagent.evaluation/1"): a later version adds keys under a new
version string, so a script that reads version 1 keeps working on the files it wrote. Seconds vary from
run to run; everything else is the same on every run of the classroom model.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinyagent.command_options import write_whole
from tinyagent.evaluation.grading import CHECKS, Check
from tinyagent.events import LlmCall
from tinyagent.protocols.protocol_comparison import PROTOCOL_NAMES
from tinyagent.safe_text import terminal_text
from tinyagent.shares import percent
from tinyagent.toolkit.validation import problems_in
from tinyagent.trace import Trace

SCHEMA_VERSION = "tinyagent.evaluation/1"

_COUNT = {"type": "integer", "minimum": 0}
_SECONDS = {"type": "number", "minimum": 0}
_CHECK = {
    "type": "object",
    "properties": {"passed": {"type": "boolean"}, "detail": {"type": "string"}},
    "required": ["passed", "detail"],
    "additionalProperties": False,
}
_TASK = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "lang": {"enum": ["zh", "en"]},
        "question": {"type": "string"},
        "passed": {"type": "boolean"},
        "checks": {"type": "object", "properties": {name: _CHECK for name in CHECKS},
                   "required": list(CHECKS), "additionalProperties": False},
        "reason": {"type": "string"},
        "answer": {"type": ["string", "null"]},
        "steps": _COUNT,
        "model_calls": _COUNT,
        "tool_calls": {"type": "array", "items": {"type": "string"}},
        "refunds": {"type": "array", "items": {"type": "string"}},
        "prompt_tokens": _COUNT,
        "completion_tokens": _COUNT,
        "seconds": _SECONDS,
        "agents": {"type": "array", "items": {"type": "string"}},  # lesson 21: only a team's tasks have it
        # Only a task with model calls whose reply counted no tokens has it: its tokens are a lower bound.
        "tokens_unreported": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}
_TASK["required"] = [name for name in _TASK["properties"] if name not in ("agents", "tokens_unreported")]
_SUMMARY = {
    "type": "object",
    "properties": {
        "tasks": _COUNT,
        "passed": _COUNT,
        "success_rate": {"type": "number", "minimum": 0, "maximum": 1},
        "checks": {"type": "object", "properties": {name: _COUNT for name in CHECKS},
                   "required": list(CHECKS), "additionalProperties": False},
        "steps": _COUNT,
        "model_calls": _COUNT,
        "prompt_tokens": _COUNT,
        "completion_tokens": _COUNT,
        "seconds": _SECONDS,
    },
    "additionalProperties": False,
}
_SUMMARY["required"] = list(_SUMMARY["properties"])
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "model": {"type": "string"},
        "protocol": {"enum": list(PROTOCOL_NAMES)},
        "label": {"type": "string"},
        "now": {"type": "string"},
        "max_steps": {"type": "integer", "minimum": 1},
        "summary": _SUMMARY,
        "tasks": {"type": "array", "items": _TASK},
    },
    "additionalProperties": False,
}
REPORT_SCHEMA["required"] = list(REPORT_SCHEMA["properties"])


@dataclass(frozen=True)
class TaskResult:
    """One task, run once: the checks' verdicts and what the run cost.

    steps is the highest round in the trace; model_calls counts every model call: one more with a stop rule's
    closing call, and more still when one agent's rounds run inside another's (lesson 21's team) or a round searches
    several candidates (lesson 22); tokens are the server's `usage`. `trace` is the whole run, kept in memory to look
    at a failure (not saved in the JSON).
    """

    name: str
    lang: str
    question: str
    checks: dict[str, Check]
    reason: str
    answer: str | None
    steps: int
    model_calls: int
    tool_calls: tuple[str, ...]
    refunds: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    seconds: float = field(default=0.0, compare=False)
    trace: Trace | None = field(default=None, compare=False, repr=False)
    # Lesson 21: the agents that made model calls, in order (read from the trace); () for a single agent.
    agents: tuple[str, ...] = field(default=(), repr=False)
    # The model calls whose reply carried no token counts ("usage": null): the tokens are then at least the sum shown.
    tokens_unreported: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if not self.agents and self.trace is not None:
            named = dict.fromkeys(call.agent for call in self.trace.of_type(LlmCall) if call.agent)
            object.__setattr__(self, "agents", tuple(named))

    @property
    def id(self) -> str:
        return f"{self.name} ({self.lang})"

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks.values())

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens_shown(self) -> str:
        """The tokens as the table prints them: "≥120" when some model call counted none."""
        return f"≥{self.tokens}" if self.tokens_unreported else str(self.tokens)

    @property
    def failed_checks(self) -> list[str]:
        return [name for name, check in self.checks.items() if not check.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "lang": self.lang, "question": self.question, "passed": self.passed,
            "checks": {name: {"passed": c.passed, "detail": c.detail} for name, c in self.checks.items()},
            "reason": self.reason, "answer": self.answer, "steps": self.steps, "model_calls": self.model_calls,
            "tool_calls": list(self.tool_calls), "refunds": list(self.refunds),
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3), **({"agents": list(self.agents)} if self.agents else {}),
            **({"tokens_unreported": self.tokens_unreported} if self.tokens_unreported else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskResult:
        checks = {name: Check(c["passed"], c["detail"]) for name, c in data["checks"].items()}
        return cls(data["name"], data["lang"], data["question"], checks, data["reason"], data["answer"],
                   data["steps"], data["model_calls"], tuple(data["tool_calls"]), tuple(data["refunds"]),
                   data["prompt_tokens"], data["completion_tokens"], data["seconds"],
                   agents=tuple(data.get("agents", ())), tokens_unreported=data.get("tokens_unreported", 0))


@dataclass
class EvalReport:
    """Every task of one evaluation: one model, one protocol ("text" or "function")."""

    model: str
    protocol: str
    results: list[TaskResult]
    now: str
    max_steps: int
    label: str = ""

    def __post_init__(self) -> None:
        self.label = self.label or f"{self.model} · {PROTOCOL_NAMES.get(self.protocol, self.protocol)}"

    # -- the figures -----------------------------------------------------------------------------
    @property
    def passed(self) -> bool:
        """True when every task passed (and there was at least one)."""
        return bool(self.results) and all(result.passed for result in self.results)

    @property
    def success_rate(self) -> float:
        return sum(r.passed for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def summary(self) -> dict[str, Any]:
        results = self.results
        return {
            "tasks": len(results),
            "passed": sum(r.passed for r in results),
            "success_rate": round(self.success_rate, 4),
            "checks": {name: sum(r.checks[name].passed for r in results) for name in CHECKS},
            "steps": sum(r.steps for r in results),
            "model_calls": sum(r.model_calls for r in results),
            "prompt_tokens": sum(r.prompt_tokens for r in results),
            "completion_tokens": sum(r.completion_tokens for r in results),
            # The tasks' seconds as saved (to the millisecond), summed: a report read back and saved again is the same.
            "seconds": round(sum(round(r.seconds, 3) for r in results), 3),
        }

    def failures(self) -> list[TaskResult]:
        return [result for result in self.results if not result.passed]

    def result(self, task_id: str) -> TaskResult:
        """The result of one task, by its id: "refund (zh)"."""
        for result in self.results:
            if result.id == task_id:
                return result
        raise KeyError(f"no task {task_id!r} in this report: {', '.join(r.id for r in self.results)}")

    def __repr__(self) -> str:
        s = self.summary
        return f"<EvalReport {self.label}: {s['passed']}/{s['tasks']} passed>"

    # -- as text ------------------------------------------------------------------------------
    def table(self, latency: bool = False, why: bool = True) -> str:
        """One line per task (ok or FAIL per check, steps, tokens; seconds with `latency`), the total, and,
        with `why`, one line per failed check saying what was wrong."""
        width = max([len(r.id) for r in self.results] + [5])
        head = f"{'task':<{width}}  " + " ".join(f"{name:<8}" for name in CHECKS) + "  steps  tokens"
        head += "  seconds" if latency else ""
        lines = [self.label, head]
        agents = any(r.agents for r in self.results)  # lesson 21: a team's tasks say which agents worked
        lines[1] += "  agents" if agents else ""
        for r in self.results:
            marks = " ".join(f"{'ok' if r.checks[name].passed else 'FAIL':<8}" for name in CHECKS)
            line = f"{r.id:<{width}}  {marks}  {r.steps:>5}  {r.tokens_shown:>6}"
            line += f"  {r.seconds:>7.2f}" if latency else ""
            lines.append(line + (f"  {' > '.join(r.agents)}" if agents else ""))
        s = self.summary
        checks = " ".join(f"{_of(n, s['tasks']):<8}" for n in s["checks"].values())
        tokens = s["prompt_tokens"] + s["completion_tokens"]
        tokens_shown = f"≥{tokens}" if any(r.tokens_unreported for r in self.results) else str(tokens)
        total = f"{'passed':<{width}}  {checks}  {s['steps']:>5}  {tokens_shown:>6}"
        lines.append(total + (f"  {s['seconds']:>7.2f}" if latency else ""))
        lines.append(f"{s['passed']} of {s['tasks']} tasks passed ({percent(s['success_rate'])})")
        if unreported := sum(r.tokens_unreported for r in self.results):
            lines.append(f"≥: {unreported} model {'call' if unreported == 1 else 'calls'} counted no tokens "
                         "(usage null): those tasks used at least the tokens shown")
        if why:
            for r in self.failures():
                lines += [f"  {r.id}, {name}: {r.checks[name].detail}" for name in r.failed_checks]
        return terminal_text("\n".join(lines))  # a detail may quote a model's tool name: no ESC obeyed

    # -- as JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION, "model": self.model, "protocol": self.protocol, "label": self.label,
            "now": self.now, "max_steps": self.max_steps, "summary": self.summary,
            "tasks": [result.to_dict() for result in self.results],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def save(self, path: str | Path) -> None:
        """Write the JSON to `path` (UTF-8), whole: if the write fails (a full disk), a file already at `path`, the
        results of an earlier run, is left as it was."""
        write_whole(Path(path), self.to_json() + "\n")

    @classmethod
    def from_dict(cls, data: Any) -> EvalReport:
        problems = report_problems(data)
        if problems:
            raise ValueError(f"not an evaluation report ({SCHEMA_VERSION}): {'; '.join(problems[:3])}")
        return cls(data["model"], data["protocol"], [TaskResult.from_dict(t) for t in data["tasks"]],
                   data["now"], data["max_steps"], data["label"])

    @classmethod
    def from_json(cls, text: str) -> EvalReport:
        return cls.from_dict(json.loads(text))


def replaceable_by_a_report(path: Path) -> bool:
    """Whether `save` may write over the file at `path`: an earlier run's results (any version of the schema), or
    an empty file. Anything else (notes, another program's JSON) is someone's data, not this command's to lose."""
    text = path.read_bytes()
    if not text.strip():
        return True
    try:
        data = json.loads(text)
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError too)
        return False
    return isinstance(data, dict) and str(data.get("schema", "")).startswith(SCHEMA_VERSION.split("/")[0] + "/")


def report_problems(data: Any) -> list[str]:
    """What keeps `data` from being a report of REPORT_SCHEMA, in words; [] when it is one (lesson 07's
    validator does the checking), and one that agrees with itself: a task passed when each of its checks did, no
    task twice, and a summary that adds up (its seconds aside: reports saved before 2026-12-05 summed the seconds
    before rounding them)."""
    problems = [problem.message for problem in problems_in(data, REPORT_SCHEMA)]
    if problems:
        return problems
    tasks = data["tasks"]
    for task in tasks:
        if task["passed"] != all(check["passed"] for check in task["checks"].values()):
            problems.append(f"the task {task['name']} ({task['lang']}) says passed {task['passed']} against its checks")
    listed = Counter((task["name"], task["lang"]) for task in tasks)
    problems += [f"the task {name} ({lang}) is there twice" for (name, lang), n in listed.items() if n > 1]
    if not problems:
        counted = EvalReport("", "text", [TaskResult.from_dict(task) for task in tasks], "", 1).summary
        problems += [f"the summary's {key} is {data['summary'][key]!r}, the tasks give {counted[key]!r}"
                     for key in counted if key != "seconds" and data["summary"][key] != counted[key]]
    return problems


def _of(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def scoreboard(reports: Iterable[EvalReport]) -> str:
    """One line per report: tasks passed, each check's passes, and steps and tokens per task (means)."""
    reports = list(reports)
    width = max([len(r.label) for r in reports] + [5])
    summaries = [report.summary for report in reports]
    passed = [f"{s['passed']}/{s['tasks']} {percent(s['success_rate']):>4}" for s in summaries]
    column = max([len(p) for p in passed] + [10])  # 200/200 and its share take more than 10
    lines = [f"{'model':<{width}}  {'passed':<{column}}  " + " ".join(f"{name:<8}" for name in CHECKS)
             + "  steps/task  tokens/task"]
    for report, s, share in zip(reports, summaries, passed):
        n = max(s["tasks"], 1)
        checks = " ".join(f"{_of(v, s['tasks']):<8}" for v in s["checks"].values())
        tokens = f"{(s['prompt_tokens'] + s['completion_tokens']) / n:.0f}"
        tokens = f"≥{tokens}" if any(r.tokens_unreported for r in report.results) else tokens  # some counted none
        lines.append(f"{report.label:<{width}}  {share:<{column}}  {checks}  {s['steps'] / n:>10.1f}  {tokens:>11}")
    return "\n".join(lines)
