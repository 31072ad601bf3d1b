"""The classroom model's behaviour: a pure function from a Chat Completions request to its next message.

It is a teaching instrument, not a language model. There are no weights and no sampling: a handful of
small planners read the conversation (the tools the system prompt lists, the user's request, every
Observation so far) and decide the next Thought and Action the way a careful assistant would, in the
user's language. That makes every lesson repeatable to the byte, offline, while the agent's code path
stays exactly the one a real provider would exercise.

    request dict ──read_conversation──> Conversation ──variant (by model name)──> Reply
                                            │                  │
                                            │           scenarios.plan: the next Act or Answer
                                            │           render / daydream: the text it would type
                                            └─ tools offered, language, steps and their Observations

`respond` only decides what the model would say. The server (`server.py`) applies the API's rules to it:
the stop sequence, `max_tokens`, streaming and token counts.

Modules, in the order a reader might open them:

    conversation.py      reading the request (tools, language, steps so far); malformed input -> ValueError
    tool_list.py         the tools offered, in any common shape of prompt, or `tools` (function calling)
    planning.py          Act / Answer / Call, and readers for the shop's Observations
    vocabulary.py        the words it listens for, one named list per intent or symptom (new phrases go here)
    intents.py           what the request says, and the table of rules that picks its scenario
    scenarios.py         the table of scenarios, and `plan`: the next step
    shop_scenarios.py    order status, logistics, policy questions, the time
    refund.py            the refund: dates, policy limits, the decision
    weather_and_files.py the articles' weather and file-writing tools
    small_talk.py        answers that need no tool, and plain chat
    render.py            the exact ReAct text format
    daydream.py          lesson 04: the invented Observations of a model that is not stopped
    variants.py          the careful model and its misbehaving variants (MODELS, VARIANTS_TABLE)
    tool_choice.py       `tool_choice` honoured: "required" or a named function gets a call, its arguments from the facts
    wrap_up.py           lesson 10: asked to stop and answer from what it knows, every variant does
    summaries.py         lesson 12: asked to summarize a conversation (a session's memory), every variant does
    plan_and_reflect.py  lesson 17: asked to plan, re-plan, compose, check a draft or choose a skill, every variant does
    handoffs.py          lesson 21: the triage agent (offered handoff tools) and a specialist that hands a request back
    reminders.py         lesson 21: the calendar, the forecast for the meeting, and the reminder (after a yes)
    tree_of_thoughts.py  lesson 22: asked for k candidate next steps, or to score candidates, every variant does
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

from tinyagent.classroom.answer_shapes import shape_answer
from tinyagent.classroom.conversation import (
    Conversation,
    MalformedRequestError,
    parse_action,
    read_conversation,
)
from tinyagent.classroom.no_code import no_code_reply
from tinyagent.classroom.plan_and_reflect import lesson_17_reply
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.summaries import summary_request, write_summary
from tinyagent.classroom.tool_choice import honour_tool_choice
from tinyagent.classroom.variants import MODELS, VARIANTS, VARIANTS_TABLE, chat
from tinyagent.classroom.wrap_up import closing_request, wrap_up

__all__ = ["KINDS", "MODELS", "VARIANTS_TABLE", "MalformedRequestError", "UnknownModelError", "respond"]


class UnknownModelError(ValueError):
    """The request names a model the classroom server does not have."""


@dataclass
class Asked:
    """One request, as the rows of KINDS look at it: the body, the variant its model names, and the
    conversation, read once on first use (a malformed one raises ValueError there)."""

    body: dict
    variant: Callable[[Conversation], Reply]

    @cached_property
    def conversation(self) -> Conversation:
        return read_conversation(self.body)


_TREE_PHRASES = ("different next steps", "个不同的下一步", "score each candidate", "给每个候选步骤打分")


def _tree_call(asked: Asked) -> Reply | None:
    messages = asked.body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    text = last.get("content") if isinstance(last, dict) else None
    if not isinstance(text, str) or not any(phrase in text.lower() for phrase in _TREE_PHRASES):
        return None  # most requests are not lesson 22's: its module loads only for one that is
    from tinyagent.classroom.tree_of_thoughts import tree_reply

    return tree_reply(asked.body)


def _closing_call(asked: Asked) -> Reply | None:
    closing = closing_request(asked.body)
    if closing is not None and (before := read_conversation(closing)).declared:
        return written(before, wrap_up(before))
    return None


def _summary(asked: Asked) -> Reply | None:
    found = summary_request(asked.body)
    return Reply(write_summary(*found)) if found is not None else None


def _plain_chat(asked: Asked) -> Reply | None:
    conv = asked.conversation
    return written(conv, chat(conv)) if not conv.declared else None


def _agent_step(asked: Asked) -> Reply:
    conv = asked.conversation
    return honour_tool_choice(asked.body, conv, written(conv, asked.variant(conv)))


# The kinds of request, first match wins: (kind, its reply, or None when the request is not of that kind).
# The calls a lesson's part makes with a prompt of its own come first; the agent's step is what is left.
KINDS: tuple[tuple[str, Callable[[Asked], Reply | None]], ...] = (
    # lesson 17: a planner, composer, draft-checking or skill-choosing call (plan_and_reflect.py)
    ("plan, compose, check or choose a skill", lambda asked: lesson_17_reply(asked.body)),
    # lesson 22: a tree of thoughts asks for k candidate next steps, or for their scores (tree_of_thoughts.py)
    ("propose or score candidates", _tree_call),
    # another framework's agent that wants code written (smolagents' CodeAgent): it writes none, and says so
    ("asked for code", lambda asked: no_code_reply(asked.body)),
    # lesson 10: a stop rule ended the loop, and its last call asks for the best answer, no tools (wrap_up.py)
    ("closing call", _closing_call),
    # lesson 12: a session's memory asks for a summary of the turns that fall out of its window (summaries.py)
    ("summary", _summary),
    ("plain chat", _plain_chat),  # no tools declared: every variant answers the same short text
    ("agent step", _agent_step),  # the variant the model name picks (variants.py)
)


def respond(request: dict) -> Reply:
    """The classroom model's next message for a parsed chat completion request.

    Reads `messages`, `model`, and optionally `tools`, `tool_choice` and `response_format`; ignores the rest
    (the server handles `stop`, `max_tokens` and `stream`). Raises ValueError for a malformed request.
    """
    if not isinstance(request, dict):
        raise MalformedRequestError("the request body must be a JSON object")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise MalformedRequestError("'model' must be the name of a model, e.g. 'classroom'")
    variant = VARIANTS.get(model)
    if variant is None:
        raise UnknownModelError(f"unknown model {model!r}; the classroom models are: {', '.join(MODELS)}")
    asked = Asked(request, variant)
    asked.conversation  # noqa: B018 - a malformed request is refused (ValueError) before any row of KINDS reads it
    return next(reply for _, reply_to in KINDS if (reply := reply_to(asked)) is not None)


def written(conv: Conversation, reply: Reply) -> Reply:
    """The reply in the shape the request asks for: a final answer as JSON or an answer tool's call
    (answer_shapes.py), and text in the prompt's own format (after the "Thought:" the prompt ends with, under
    the answer's key the prompt names). A request in the course's own format gets the reply as it is."""
    if conv.answer_shape.schema is not None and not reply.tool_calls and not reply.refusal:
        text = reply.text or ""
        if conv.native or parse_action(text) is None:  # an answer, not a text ReAct step
            prose = text.split("Final Answer:", 1)[1].strip() if "Final Answer:" in text else text.strip()
            reply = shape_answer(conv.answer_shape, conv.facts, prose, conv.zh)
    if not reply.text or reply.tool_calls:
        return reply
    text = reply.text
    if conv.answer_key != "Final Answer":  # LlamaIndex's format ends with "Answer:"
        text = text.replace("Final Answer:", f"{conv.answer_key}:")
    if conv.prefilled and text.startswith("Thought:"):  # the prompt typed the key already
        text = text[len("Thought:"):]
        text = text.lstrip(" ") if conv.prefilled.endswith(" ") else text
    return reply if text == reply.text else replace(reply, text=text)
