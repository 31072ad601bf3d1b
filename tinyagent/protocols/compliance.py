"""Does a model follow the ReAct format? Ask it the same question many times and count.

    runs = measure_compliance(llm, registry, "我上周买的扫地机不回充了……订单号 88231。")
    print(format_table(summarize(runs)))

Each run is one model call on a fresh conversation (system prompt + question), made with one of
two prompts and with or without the stop sequence, under a few sampling seeds:

    zero-shot   the plain system prompt: the format described in words
    one-shot    the same prompt, then one worked example of a whole conversation as earlier turns

Lesson 08's prompt variants (tinyagent.protocols.prompt_variants.PromptVariant) can be measured the same way:
pass them in `prompts`, beside or instead of the two names.

A reply *parses* when `parse_step` finds an Action or a Final Answer in it, which is what the agent
loop needs to go on. A reply *invents an Observation* when it contains an "Observation:" line: the
model wrote the tool's result itself instead of stopping. Given the registry, `summarize` also counts
the replies whose Action names a *listed tool*. The appendix notebook, lesson 08 and
`benchmarks/format_compliance.py` print this table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tinyagent.llm_client import LlmClient
from tinyagent.parser import parse_step
from tinyagent.prompts import build_system_prompt, check_language, detect_language
from tinyagent.registry import ToolRegistry
from tinyagent.shares import percent

PROMPTS = ("zero-shot", "one-shot")
STOP = ("Observation:",)

# One worked example: an earlier conversation about an order the shop does not have (so copying
# its facts shows). It goes in as chat turns before the question, not as text in the system
# prompt: a small chat model imitates what "it" said in earlier turns far more than a description.
WORKED_EXAMPLE = {
    "en": (
        ("user", "Where is the parcel for order 10086?"),
        ("assistant", (
            "Thought: The customer wants the shipping status of order 10086. First I look up the order.\n"
            "Action: queryOrder\n"
            "Action Input: 10086"
        )),
        ("user", 'Observation: {"orderId": "10086", "status": "shipped", "trackingNo": "SF0000000001"}'),
        ("assistant", (
            "Thought: The order has shipped with tracking number SF0000000001, so I can answer.\n"
            "Final Answer: Your order 10086 has shipped; the tracking number is SF0000000001."
        )),
    ),
    "zh": (
        ("user", "帮我查一下订单 10086 的快递到哪了。"),
        ("assistant", (
            "Thought: 用户想知道订单 10086 的物流。先查订单，拿到运单号。\n"
            "Action: queryOrder\n"
            "Action Input: 10086"
        )),
        ("user", 'Observation: {"orderId": "10086", "status": "已发货", "trackingNo": "SF0000000001"}'),
        ("assistant", (
            "Thought: 订单已发货，运单号是 SF0000000001，可以回答了。\n"
            "Final Answer: 您的订单 10086 已发货，运单号 SF0000000001。"
        )),
    ),
}

_OBSERVATION_LINE = re.compile(r"^\s*\**observation\**\s*[:：]", re.IGNORECASE | re.MULTILINE)


def example_turns(lang: str = "en") -> list[dict]:
    """The worked example as messages, to pass as `history` (ReActAgent.run takes it too)."""
    return [{"role": role, "content": content} for role, content in WORKED_EXAMPLE[check_language(lang)]]


def messages_for(prompt: str | PromptDesign, tools: ToolRegistry, question: str, lang: str = "en") -> list[dict]:
    """The conversation one run sends: system prompt, the example if one-shot, the question.

    `prompt` is "zero-shot", "one-shot", or a prompt variant of lesson 08 (prompt_variants.PromptVariant),
    which builds its own messages."""
    if not isinstance(prompt, str):
        return prompt.messages(tools, question, lang)
    if prompt not in PROMPTS:
        raise ValueError(f"prompt must be one of {', '.join(PROMPTS)}, got {prompt!r}")
    history = example_turns(lang) if prompt == "one-shot" else []
    return [
        {"role": "system", "content": build_system_prompt(tools, lang)},
        *history,
        {"role": "user", "content": question},
    ]


class PromptDesign(Protocol):
    """What measure_compliance needs of a prompt other than its two named ones (lesson 08's variants)."""

    name: str

    def messages(self, tools: ToolRegistry, question: str, lang: str = "en") -> list[dict]: ...


def prompt_name(prompt: str | PromptDesign) -> str:
    return prompt if isinstance(prompt, str) else prompt.name


def invents_observation(text: str) -> bool:
    """True when the reply has a line starting "Observation:" (any case, bold, or a full-width colon)."""
    return bool(_OBSERVATION_LINE.search(text or ""))


@dataclass(frozen=True)
class ComplianceRun:
    """One model call: which prompt, whether stop was sent, the sampling seed, and what came back."""

    prompt: str
    stop: bool
    seed: int
    text: str
    finish_reason: str | None
    rule: str  # what parse_step decided: "action", "final_answer" or "no_format"
    usage: dict
    client_cut: bool = False
    tool: str | None = None  # the tool its Action names, if it has one (listed or not)

    @property
    def parsed(self) -> bool:
        return self.rule in ("action", "final_answer")

    @property
    def invented_observation(self) -> bool:
        return invents_observation(self.text)


@dataclass(frozen=True)
class ComplianceRow:
    """One line of the table: a prompt and stop setting, and how its runs went."""

    prompt: str
    stop: bool
    runs: int
    parsed: int
    invented: int
    listed: int | None = None  # replies whose Action names a tool of the registry (when counted)

    @property
    def parsed_share(self) -> float:
        return self.parsed / self.runs if self.runs else 0.0

    @property
    def listed_share(self) -> float:
        return (self.listed or 0) / self.runs if self.runs else 0.0

    @property
    def invented_share(self) -> float:
        return self.invented / self.runs if self.runs else 0.0


def measure_compliance(
    llm: LlmClient,
    tools: ToolRegistry,
    question: str,
    *,
    lang: str | None = None,
    prompts: Iterable[str | PromptDesign] = PROMPTS,
    stops: Iterable[bool] = (False, True),
    seeds: Iterable[int] = range(5),
    max_tokens: int = 120,
    temperature: float = 0.7,
) -> list[ComplianceRun]:
    """Ask `question` once per prompt x stop setting x seed, and record each reply.

    A temperature above zero and a different seed per run make the model sample different
    replies; servers that take `seed` (llama.cpp, OpenAI, vLLM) give the same reply for the same
    seed again. Runs sharing a prompt go one after another, so a server's prompt cache helps.
    """
    lang = check_language(lang) if lang else detect_language(question)
    seeds = list(seeds)
    runs = []
    for prompt in prompts:
        messages = messages_for(prompt, tools, question, lang)
        for with_stop in stops:
            for seed in seeds:
                reply = llm.chat(
                    messages, stop=STOP if with_stop else None, max_tokens=max_tokens,
                    temperature=temperature, seed=seed,
                )
                step = parse_step(reply.text)
                runs.append(ComplianceRun(
                    prompt_name(prompt), with_stop, seed, reply.text, reply.finish_reason,
                    step.rule, reply.usage, reply.client_cut, step.action.tool_name if step.action else None,
                ))
    return runs


def summarize(runs: Iterable[ComplianceRun], tools: ToolRegistry | None = None) -> list[ComplianceRow]:
    """Count the runs per (prompt, stop), in the order they were made.

    With `tools`, also count the replies whose Action names one of them: a reply can parse and
    still ask for a tool that does not exist (`Action: 88231`), which the loop can only answer with
    an error Observation."""
    groups: dict[tuple[str, bool], list[ComplianceRun]] = {}
    for run in runs:
        groups.setdefault((run.prompt, run.stop), []).append(run)
    return [
        ComplianceRow(prompt, stop, len(group), sum(r.parsed for r in group),
                      sum(r.invented_observation for r in group),
                      None if tools is None else sum(r.tool is not None and r.tool in tools for r in group))
        for (prompt, stop), group in groups.items()
    ]


def format_table(rows: Iterable[ComplianceRow]) -> str:
    """The rows as a fixed-width text table (the prompt column as wide as its longest name)."""
    rows = list(rows)
    width = max([10, *(len(row.prompt) for row in rows)])
    listed = any(row.listed is not None for row in rows)  # a column only when summarize counted it
    header = f"{'prompt':<{width}}  {'stop':<5}  {'runs':>4}  {'parsed':>11}  {'invented Observation':>20}"
    header += f"  {'listed tool':>11}" if listed else ""
    lines = [header, "-" * len(header)]
    for row in rows:
        parsed = f"{row.parsed} ({percent(row.parsed_share)})"
        invented = f"{row.invented} ({percent(row.invented_share)})"
        line = f"{row.prompt:<{width}}  {'yes' if row.stop else 'no':<5}  {row.runs:>4}  {parsed:>11}  {invented:>20}"
        if listed:
            line += f"  {f'{row.listed or 0} ({percent(row.listed_share)})':>11}"
        lines.append(line)
    return "\n".join(lines)
