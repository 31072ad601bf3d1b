"""A trace a person can step into (lessons 06 and 19): edit a round's Thought, or run its tool again, and carry on.

    edit_thought(agent, trace, step, reply)       round `step`'s reply is the person's `reply` (Thought, Action,
                                                  Action Input, as the model would write them), then the model
                                                  carries on from what that reply leads to
    retry_tool(agent, trace, step, tool_input)    round `step`'s Action runs again (with `tool_input`, or as it
                                                  was), its new Observation goes to the model, and it carries on

Both return a `ContinuedRun`: a new run of the loop that starts from the message list the model read at round
`step` (the LlmCall of that round holds it), so nothing after that point is kept. Its trace is the original
rounds before `step`, then the person's round, then what followed, numbered on from the original; the step cap
counts all of them.

The person's round goes through the loop like any other. Its send part is `PersonsReply`: it hands the loop the
person's text once, in place of the model's reply, and every later call to the agent's own send. So the reply is
read by the agent's read part, its Action runs through the agent's act part (lesson 15's gate asks again before an
`applyRefund`), and the trace says whose it was: a `PersonEdit` event opens the round, and its LlmCall has the model
"person" and no tokens. The loop itself (agent.py) knows nothing of it.

A round is read as the agent read it: its Parsed event (lesson 11's tolerant reader, say) names the tool a retry runs
again. Text ReAct rounds of one agent only: `check_edit` refuses, saying why, a run of native tool calls (lesson 09:
no Action line to edit or replay, and a person's text would reach the customer as the answer) and a team's trace
(lesson 21: its rounds are several agents'); `edit_thought` and `retry_tool` also refuse a round the agent's step cap
would never reach. With a context budget (lesson 13) the round's messages are the ones it sent, as fitted, and the
continued run starts from those.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Generator
from dataclasses import replace
from typing import Any, ClassVar

from tinyagent.agent import AgentRun, ReActAgent
from tinyagent.chat_result import ChatResult
from tinyagent.errors import TinyAgentError
from tinyagent.events import Event, LlmCall, Observation, Parsed, ToolCall, event_kind
from tinyagent.parser import parse_step
from tinyagent.safe_text import replace_lone_surrogates
from tinyagent.trace import Trace

# What a printed trace says of a person's round.
EDIT_LABELS = {
    "en": {"edited": "[Edited by a person] this round's reply is the person's, not the model's",
           "model_wrote": "  the model had written: {text}",
           "retried": "[Retried by a person] the tool runs again with: {text}",
           "before": "  it had returned: {text}"},
    "zh": {"edited": "[人工修改] 这一圈的回复是人写的，不是模型写的",
           "model_wrote": "  模型原来写的：{text}",
           "retried": "[人工重试] 工具用这个输入再执行一次：{text}",
           "before": "  上次的结果：{text}"},
}


def _shortened(text: str, limit: int = 200) -> str:
    """What a person's edit replaced, on one line: its first `limit` characters (the whole is in the event)."""
    return text if len(text) <= limit else text[:limit] + " …"


@event_kind
class PersonEdit(Event):
    """A person stepped into the trace (editable_trace.py): this round's reply is not the model's. what "thought"
    (the person wrote the reply: `text`, in place of the model's `original`) or "retry" (the round's tool runs
    again: `text` is the Action Input it runs with, `original` the Observation it had before). `by` who did it."""

    kind: ClassVar[str] = "person_edit"
    what: str = "thought"
    original: str = ""
    text: str = ""
    by: str = "person"

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = EDIT_LABELS[lang]
        if self.what == "retry":
            return [labels["retried"].format(text=self.text), labels["before"].format(text=_shortened(self.original))]
        original = " / ".join(self.original.strip().splitlines())
        return [labels["edited"], labels["model_wrote"].format(text=_shortened(original))]


__all__ = ["PERSON", "ContinuedRun", "EditError", "PersonsReply", "check_edit", "edit_thought", "replies", "retry_tool"]

PERSON = "person"  # the `model` of an LlmCall whose reply a person wrote: no model was called
MAX_REPLY_CHARS = 4000
# An Observation key as a reader takes one (after NFKC, which makes "：" and "Ｏ" plain): any case, spaces or
# Markdown before the colon, or the Chinese key. Only a tool writes Observations.
OBSERVATION_KEY = re.compile(r"(?<![^\W_])(?:observation|观察)[ \t*_`]*:", re.IGNORECASE)


class EditError(TinyAgentError, ValueError):
    """An edit the trace cannot take: no such round, no tool in it, an empty reply, a round of native tool calls,
    a team's trace, a round past the agent's step cap. The message says which."""


class PersonsReply:
    """A send part: the first call returns the person's `text` as the reply (after yielding `edit`, the event
    that says so); every later call is the agent's own send part, `inner`."""

    slot: ClassVar[str] = "send"

    def __init__(self, text: str, edit: PersonEdit, inner: Any = None):
        self.text, self.edit, self.inner = text, edit, inner
        self.given = False

    def around(self, inner: Any) -> PersonsReply:
        return PersonsReply(self.text, self.edit, inner)

    def __call__(self, run: Any, step: int, messages: list[dict], **options: Any
                 ) -> Generator[Event, None, ChatResult]:
        if self.given:
            return (yield from self.inner(run, step, messages, **options))
        self.given = True
        yield replace(self.edit, step=step)
        return ChatResult(self.text, "stop", usage={}, model=PERSON)

    def __repr__(self) -> str:
        return f"PersonsReply({self.edit.what}, then {self.inner!r})"


def _round_call(trace: Trace, step: int) -> LlmCall:
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise EditError(f"the round must be a whole number from 1, not {step!r}")
    calls = [e for e in trace.events if isinstance(e, LlmCall) and e.step == step]
    if not calls:
        rounds = sorted({e.step for e in trace.events if isinstance(e, LlmCall)})
        raise EditError(f"round {step} has no model reply to edit; the rounds with one are "
                        f"{', '.join(map(str, rounds)) or 'none'}")
    return calls[0]


def _check_one_agent(trace: Trace) -> None:
    agents = list(dict.fromkeys(e.agent for e in trace.events if e.agent))
    if agents:
        raise EditError(f"this trace is a team's (lesson 21: {', '.join(agents)}, each numbering its own rounds): an "
                        "edit continues one agent's run, which would drop the team's handoffs and keep an answer "
                        "handed back from before the edit; edit a single agent's run")


def _check_text_round(trace: Trace, step: int) -> None:
    # A round whose reply asked for its tools in the API's own tool_calls field (lesson 09) is followed by a request
    # whose last assistant message is that reply, tool_calls and all; a text round's reply is text there. The last
    # round has no request after it: its Parsed events say it, read by lesson 09's NativeRead ("tool_call ...").
    native = [call.step - 1 for call in trace.of_type(LlmCall) if _last_reply_called_natively(call)]
    native += [read.step for read in trace.of_type(Parsed) if read.rule.startswith("tool_call")]
    if step in native:
        raise EditError(f"round {step} called its tools natively (lesson 09's function calling): the model asked "
                        "in the API's tool_calls, not in Action lines, so there is no Action line to edit or run "
                        "again, and a reply a person wrote would reach the customer as the answer")
    if native:
        raise EditError(f"this run called its tools natively (lesson 09's function calling, rounds "
                        f"{', '.join(map(str, sorted(set(native))))}): its agent reads no Action lines, so a reply a "
                        f"person wrote for round {step} would reach the customer as the answer")


def _last_reply_called_natively(call: LlmCall) -> bool:
    """Whether the last assistant message of the request `call` sent holds the API's tool_calls."""
    last_reply = next((m for m in reversed(call.messages) if m.get("role") == "assistant"), {})
    return bool(last_reply.get("tool_calls"))


def check_edit(trace: Trace, step: int, *, reply: str | None = None, retry: bool = False,
               tool_input: str | None = None, agent: ReActAgent | None = None) -> tuple[str, PersonEdit]:
    """The reply the person's round starts from and the event that marks it, or EditError naming what is wrong.

    reply:      the person's reply for round `step` (an edited Thought)
    retry:      run round `step`'s tool again, with `tool_input` if given (else its Action Input as it was)
    agent:      the agent that will carry on, when known: the person's reply is read as it will read it
    """
    call = _round_call(trace, step)
    _check_one_agent(trace)
    _check_text_round(trace, step)
    if retry == (reply is not None):
        raise EditError("give either a reply (edit the Thought) or retry=True (run the tool again), not both")
    if reply is not None:
        if not isinstance(reply, str) or not reply.strip():
            raise EditError("the edited reply is empty: write the Thought (and the Action and Action Input to run)")
        # As the model is sent it, and as the trace can be saved: half of a UTF-16 pair is U+FFFD (safe_text).
        reply = replace_lone_surrogates(reply)
        if len(reply) > MAX_REPLY_CHARS:
            raise EditError(f"the edited reply is longer than {MAX_REPLY_CHARS} characters")
        if found := OBSERVATION_KEY.search(unicodedata.normalize("NFKC", reply)):
            raise EditError(f"the edited reply holds an Observation line ({found.group(0)!r}): only a tool writes "
                            "Observations; end the reply at its Action Input")
        if agent is not None:
            read = agent.parse_text(reply.strip())
            if read.action is None and read.final_answer is not None and parse_step(reply).action is not None:
                raise EditError("this agent reads no Action lines (as lesson 09's FunctionCallingAgent does): it "
                                "would take the whole reply, Action line and all, as its answer to the customer")
        return reply.strip(), PersonEdit(step, "thought", call.text, reply.strip())
    # The round as the agent read it (its Parsed event): lesson 11's tolerant reader reads more than lesson 05's.
    calls = [e for e in trace.events if isinstance(e, ToolCall) and e.step == step]
    read = [e for e in trace.events if isinstance(e, Parsed) and e.step == step and e.tool_name is not None]
    if len(calls) != 1 or len(read) != 1:
        raise EditError(f"round {step} ran no tool (or more than one) from an Action line: there is nothing to retry")
    if tool_input is not None and (not isinstance(tool_input, str) or "\n" in tool_input):
        raise EditError("the tool input must be one line of text")
    seen = [e for e in trace.events if isinstance(e, Observation) and e.step == step]
    original = seen[0].text if seen else ""
    (parsed,) = read
    if tool_input is None:
        text, used = call.text, parsed.tool_input or ""
    else:
        used = replace_lone_surrogates(tool_input.strip())
        text = f"Thought: {parsed.thought}\nAction: {parsed.tool_name}\nAction Input: {used}"
    return text, PersonEdit(step, "retry", original, used)


class ContinuedRun(AgentRun):
    """A run that goes on from round `step` of `trace`, whose reply there is `reply`, marked by `edit`
    (see the module's docstring). Iterate it, `advance()` it or `finish()` it like any AgentRun; its `trace`
    holds the earlier rounds too."""

    def __init__(self, agent: ReActAgent, trace: Trace, step: int, reply: str, edit: PersonEdit):
        sent = _round_call(trace, step).messages
        first = next((e for e in trace.events if isinstance(e, LlmCall)), None)
        super().__init__(agent, first.messages[-1]["content"])  # the run's question: language, prompt, budget
        self.messages[:] = [dict(m) for m in sent]  # what the model read at that round, and nothing after it
        self.trace = Trace([e for e in trace.events if e.step < step], lang=trace.lang)
        self.offset = step - 1
        self.parts = self.parts.mount([PersonsReply(reply, edit)])
        # Asked of a copy, since a rule may remember what it saw: would the run stop before the person's round?
        if stop := self.parts.fresh().stop_rules.before_call(self.trace):
            cap = f" (max_steps={agent.max_steps})" if stop.reason == "max_steps" else ""
            raise EditError(f"the agent's stop rules end the run before round {step}: {stop.reason}{cap}, so the "
                            "edited round would never run; edit an earlier round, or give the agent more steps")

    def __next__(self) -> Event:
        event = next(self._events)
        event = replace(event, step=event.step + self.offset)  # numbered on from the original rounds
        self.trace.append(event)
        return event


def edit_thought(agent: ReActAgent, trace: Trace, step: int, reply: str) -> ContinuedRun:
    """Round `step` with the person's `reply` in place of the model's, and the run from there."""
    text, edit = check_edit(trace, step, reply=reply, agent=agent)
    return ContinuedRun(agent, trace, step, text, edit)


def retry_tool(agent: ReActAgent, trace: Trace, step: int, tool_input: str | None = None) -> ContinuedRun:
    """Round `step`'s tool run again (with `tool_input`, or its own Action Input), and the run from there."""
    text, edit = check_edit(trace, step, retry=True, tool_input=tool_input, agent=agent)
    return ContinuedRun(agent, trace, step, text, edit)


def replies(trace: Trace) -> dict[int, str]:
    """Each round's reply text, by round: what an edit starts from."""
    # Read from the end, so that a round's first reply is the one kept, as `_round_call` takes it.
    return {e.step: e.text for e in reversed(trace.events) if isinstance(e, LlmCall)}
