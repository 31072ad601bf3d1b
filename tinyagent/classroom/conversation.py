"""Reading a Chat Completions request the way the classroom model needs it.

A real model reads the whole conversation every time it is called; so does this one. From the request's
messages it works out:

- which tools it was offered: the tool list of the system prompt, in any common shape, for text ReAct,
  or the `tools` field for native function calling (both read by tool_list.py);
- the latest real request from the user, and its language;
- what the application told it about earlier conversations (lesson 12): any system message after the first,
  such as a session's summary or the facts recalled about the customer;
- every step taken since that request: which tool was called with what input, and what the Observation
  said (a user message starting with "Observation:" in text ReAct, a `tool` message in function calling).

Everything the model decides next is a function of this `Conversation`, and nothing else.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from tinyagent.architectures.plan_text import CONTEXT_HEADING
from tinyagent.classroom.answer_shapes import AnswerShape, read_answer_shape
from tinyagent.classroom.format_instructions import without_format_instructions
from tinyagent.classroom.schema_filling import facts_in
from tinyagent.classroom.tool_list import (
    MalformedToolsError,
    asks_for_tools,
    read_native_tools,
    read_tool_list,
)
from tinyagent.defences.fenced_data import unfence
from tinyagent.memory.observation_folding import strip_fold_mark
from tinyagent.prompts import detect_language
from tinyagent.tools import without_fence

# The heading of the note a plan's step is given (lesson 17), in either language.
PLAN_CONTEXT = tuple(CONTEXT_HEADING.values())
ROLES = ("system", "developer", "user", "assistant", "tool")  # "developer": newer OpenAI name for system
# The parts of a message a model that reads images, sound or files takes; the classroom model reads text only.
NOT_TEXT_PARTS = ("image_url", "input_audio", "file")

_WRAPPED_ERROR = re.compile(r"\ban error occurred\b", re.IGNORECASE)


class MalformedRequestError(ValueError):
    """The request is not a well-formed chat completion request (the server answers 400). `param` names the field
    at fault, as OpenAI's error does."""

    def __init__(self, message: str, param: str = "messages"):
        super().__init__(message)
        self.param = param


ORDER_ID = re.compile(r"(?<!\d)\d{5}(?!\d)")  # the shop's order ids: five digits (88231)
# Two letters, ten digits (SF1234567890); typed in lower case too, so the match ignores case.
TRACKING_NO = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{10}(?!\d)")


# One keyed line of the model's own earlier replies, read tolerantly (bold, lower case, full-width
# colon), because the sloppy variant wrote some of them.
KEY_LINE = re.compile(r"^[\s*_>`#-]*(thought|action input|action|final answer|observation)[\s*_]*[:：][\s*_]*(.*)$", re.IGNORECASE)
# An error about the form of the input, not about the world ("invalid input", "expected an integer").
INPUT_COMPLAINT = re.compile(r"invalid input|invalid argument|expected|schema|validation|参数|格式", re.IGNORECASE)
OBSERVATION_PREFIX = re.compile(r"^\s*observation\s*[:：]\s*", re.IGNORECASE)
TASK_LABEL = re.compile(r"^\s*(?:new task|task)\s*[:：]\s*\n", re.IGNORECASE)
QUESTION = re.compile(r"^\s*(?:question|问题)\s*[:：]\s*", re.IGNORECASE)
# A note's bullet and short label (lesson 12's summaries and facts): "- ", "Faults reported: ".
NOTE_LABEL = re.compile(r"^(?:[-*•]\s+)?(?:[^:：]{1,40}[:：]\s*)?")


# What each shop tool does, by its name in the prompt. The planners ask for "the order tool", not for a
# name, so a tool that was not offered is simply never called.
_KIND_BY_NAME = {
    "queryorder": "order",
    "querylogistics": "logistics",
    "applyrefund": "refund",
    "searchknowledge": "knowledge",
    "getcurrenttime": "time",
}


def unwrapped(value: object) -> object:
    """A tool's result as the tool wrote it, out of the object a client put it in: {"result": "<the JSON text>"},
    {"output": {...}}, {"content": "<JSON>"}: one key holding JSON text or an object. An error ({"error": ...}) and
    a key holding a list ({"results": [...]}, the tool's own shape) are left as they are."""
    while isinstance(value, dict) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if key == "error":
            break
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                break
            if not isinstance(inner, (dict, list)):
                break
        elif not isinstance(inner, dict):
            break
        value = inner
    return value


def tool_kind(name: str) -> str | None:
    """What a tool does, judged by its name: "order", "refund", ..., "weather", "write_file", "read_file",
    "list_files", "calculator", lesson 21's "handoff", "handback", "forecast", "calendar", "message", or None.

    Read by meaning, not spelling: queryOrder, query_order, QueryOrder and query-order are one tool."""
    low = re.sub(r"[^a-z0-9]", "", (name or "").lower())
    if low in _KIND_BY_NAME:
        return _KIND_BY_NAME[low]
    if low.startswith("handoffto") or low == "handback":  # lesson 21: the team's routing
        return "handoff" if low != "handback" else "handback"
    if "forecast" in low:  # lesson 21's closed loop: the forecast, the calendar, the message
        return "forecast"
    if "meeting" in low or "calendar" in low:
        return "calendar"
    if "wechat" in low or ("send" in low and "message" in low):
        return "message"
    if "weather" in low:
        return "weather"
    if "write" in low and "file" in low:
        return "write_file"
    if "read" in low and "file" in low:  # lesson 15: readFile, listFiles, calculator
        return "read_file"
    if "list" in low and "file" in low:
        return "list_files"
    if "calc" in low:
        return "calculator"
    return None


@dataclass(frozen=True)
class Step:
    """One tool call made since the user's request, and the Observation that answered it (if any yet)."""

    tool: str
    input: str = ""
    observation: str | None = None
    kind: str | None = None
    fenced: bool = False  # lesson 25: the Observation came marked as data (defences/fenced_data.py)

    @property
    def data(self) -> object:
        """The Observation parsed as JSON, as the tool wrote it (see `unwrapped`), or None when it is not JSON."""
        if self.observation is None:
            return None
        try:
            return unwrapped(json.loads(self.observation))
        except ValueError:
            return None

    @property
    def error(self) -> str | None:
        """The error the Observation reports, or None when the call worked."""
        data = self.data
        if isinstance(data, dict):
            if "error" in data:
                return str(data["error"])
            if data.get("success") is False:
                return str(data.get("message") or "failed")
        text = (self.observation or "").strip()
        if text.lower().startswith(("error", "错误")):
            return text
        if data is None and _WRAPPED_ERROR.search(text.split("\n", 1)[0]):
            # A framework's own words around a tool's exception ("An error occurred while running the tool.
            # Please try again. Error: {...}", the Agents SDK's): the tool failed, whatever follows.
            return text
        return None

    @property
    def ran(self) -> bool:
        """True when the tool really did its job (even if its answer was an error such as "no such order").

        Two kinds of error mean it did not, so the step does not count as done and the model tries again:
        the registry found no such tool (a wrong name, or a parser that mangled it), or the tool refused
        the input itself (see `input_error`).
        """
        if self.observation is None or self.input_error:
            return False
        error = (self.error or "").lower()
        data = self.data
        dispatch_error = error.startswith(("unknown tool", "no tool name", "未找到工具", "未解析到")) or (
            isinstance(data, dict) and "available_tools" in data
        )
        return not dispatch_error

    @property
    def input_error(self) -> bool:
        """True when the Observation complains about the input's form (it says what it expected)."""
        error = self.error
        if error is None:
            return False
        data = self.data
        if isinstance(data, dict) and ("expected" in data or "received" in data):
            return True
        return bool(INPUT_COMPLAINT.search(error))

    @property
    def text(self) -> str:
        """Every string inside the Observation, joined: what to search for a phrase or a date."""
        data = self.data
        if data is None:
            return self.observation or ""
        return "\n".join(_strings_in(data))


def _strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings_in(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings_in(item)]
    return [] if value is None else [str(value)]


@dataclass(frozen=True)
class Conversation:
    """What the model knows when it is called.

    request:      the user's latest real request (not an Observation)
    lang:         "zh" if that request contains Chinese characters, else "en"
    tools:        the tools offered, name -> description, in the prompt's order
    declared:     True when the request declared tools at all (a ReAct prompt or `tools`); False for
                  plain chat
    native:       True for function calling (`tools` in the request): reply with tool_calls
    steps:        the tool calls made since the request, oldest first
    rounds:       how many replies the model has given since the request
    earlier:      the user's earlier requests in this conversation, most recent first
    notes:        system messages after the first (a session's summary, facts about the customer: lesson 12);
                  read after `earlier`, as what was said before the turns the conversation still holds
    schemas:      each tool's JSON Schema `parameters`: from `tools`, or from a prompt that gives them (LlamaIndex)
    tool_problem: what the model could not read in the prompt's tool list ({"zh": ..., "en": ...}), when
                  the prompt asks for tool calls but lists no tool it can read
    answer_shape: the shape the final answer must take: prose, JSON for a schema, or an answer tool's
                  arguments (answer_shapes.py); an answer tool is not one of `tools`
    pasted:       JSON objects the user's messages hold (facts a `response_format` answer may use; none
                  when the answer goes through a tool)
    told_before:  what tool results said in the turns before the request (a structured answer or a forced call
                  may use them: "summarise that order as JSON" after the order was looked up)
    prefilled:    the key the prompt itself ends with ("Thought:"), which the reply continues rather than repeats
    json_input:   the prompt asks for every Action Input as a JSON object of the tool's arguments (LlamaIndex)
    answer_key:   the key the prompt's format ends with: "Final Answer", or "Answer" (LlamaIndex)
    """

    request: str
    lang: str = "en"
    tools: dict[str, str] = field(default_factory=dict)
    declared: bool = True
    native: bool = False
    steps: tuple[Step, ...] = ()
    rounds: int = 0
    earlier: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    schemas: dict[str, dict] = field(default_factory=dict)
    tool_problem: dict[str, str] | None = None
    answer_shape: AnswerShape = field(default_factory=AnswerShape)
    pasted: tuple[dict, ...] = ()
    told_before: tuple[object, ...] = ()
    prefilled: str = ""
    json_input: bool = False
    answer_key: str = "Final Answer"

    @property
    def zh(self) -> bool:
        return self.lang == "zh"

    def say(self, zh: str, en: str) -> str:
        """Pick the sentence in the user's language."""
        return zh if self.zh else en

    def tool_for(self, kind: str) -> str | None:
        """The name of the offered tool that does `kind`, or None if none was offered."""
        return next((name for name in self.tools if tool_kind(name) == kind), None)

    def result(self, kind: str, key: str | None = None) -> Step | None:
        """The latest step of `kind` that really ran (and whose input mentions `key`, if given)."""
        for step in reversed(self.steps):
            if step.kind == kind and step.ran and (key is None or key in step.input):
                return step
        return None

    @property
    def order_ids(self) -> list[str]:
        """Order ids in the request; if it has none, the ones in the most recent earlier request that had some,
        then in the notes (a summary or the customer's facts).

        That second part is what lets "那我想退货" follow "订单 88231 到哪了" in a multi-turn chat.
        """
        for text in self.said_before:
            ids = list(dict.fromkeys(ORDER_ID.findall(text)))
            if ids:
                return ids
        return []

    @property
    def said_before(self) -> tuple[str, ...]:
        """The request, then the earlier requests (most recent first), then the notes: where to look for an
        order id or a fault the request itself does not give."""
        return (self.request, *self.earlier, *self.notes)

    @property
    def tracking_numbers(self) -> list[str]:
        return list(dict.fromkeys(number.upper() for number in TRACKING_NO.findall(self.request)))

    @property
    def facts(self) -> dict[str, object]:
        """What the conversation knows, field by field: the order id asked about, what tool results said in earlier
        turns, JSON the user pasted, then every Observation's JSON since the request (a later one wins). What a
        structured answer is filled from."""
        asked = {"orderId": self.order_ids[0]} if self.order_ids else {}
        return facts_in([asked, *self.told_before, *self.pasted, *(step.data for step in self.steps if step.ran)])

    def with_step(self, step: Step) -> Conversation:
        """This conversation one round later, after `step` (used to imagine what comes next)."""
        return replace(self, steps=(*self.steps, step), rounds=self.rounds + 1)


# --- reading the request ----------------------------------------------------------------------------


def read_conversation(request: dict) -> Conversation:
    """Turn a parsed chat completion request into a `Conversation`. Raises ValueError if it is malformed."""
    if not isinstance(request, dict):
        raise MalformedRequestError("the request body must be a JSON object")
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise MalformedRequestError("'messages' must be a non-empty list of messages")
    for index, message in enumerate(messages):
        _check_message(index, message)
    _check_tool_replies(messages)

    texts = [message_text(m) for m in messages]
    start = _latest_request_index(messages, texts)
    # A framework's label before the customer's words ("New task:\n..." from smolagents) is not what they said.
    request_text = TASK_LABEL.sub("", texts[start], count=1)
    earlier = tuple(
        texts[i]
        for i in range(start - 1, -1, -1)
        if messages[i]["role"] == "user" and not _is_observation(texts[i])
    )

    try:
        native_tools, schemas = read_native_tools(request)
    except MalformedToolsError as exc:
        raise MalformedRequestError(str(exc), exc.param) from None
    tool_problem = None
    try:
        unplanned = tuple(name for name in native_tools or {} if tool_kind(name) is None)
        shape = read_answer_shape(request, native_tools or {}, schemas, unplanned)
    except ValueError as exc:  # the answer tool's schema was checked with the tools: this is response_format's
        raise MalformedRequestError(str(exc), "response_format") from None
    if shape.tool is not None:  # the answer goes through it: it is not a tool to plan with
        native_tools = {name: text for name, text in native_tools.items() if name != shape.tool}
    scratchpad: Scratchpad | None = None
    json_input = False
    if native_tools is not None:
        tools, native, declared = native_tools, True, True
    else:
        system = "\n".join(t for m, t in zip(messages, texts) if m["role"] in ("system", "developer"))
        offered = read_tool_list(system)
        if not offered.tools and asks_for_tools(request_text) and (in_request := read_tool_list(request_text)).tools:
            # The whole ReAct prompt in one user message (LangChain classic's PromptTemplate): its tool list,
            # the question it ends with, and the scratchpad of the steps taken so far.
            offered, scratchpad = in_request, read_scratchpad(request_text)
            request_text = scratchpad.question
        tools, native, tool_problem = offered.tools, False, offered.problem
        declared = bool(tools) or tool_problem is not None
        schemas, json_input = offered.schemas, offered.json_input

    # Lesson 12: a session's summary or recalled facts come as system messages after the agent's own prompt.
    systems = [t for m, t in zip(messages, texts) if m["role"] in ("system", "developer")]
    # Lesson 17: a plan's step comes with what earlier steps found; the step names everything this model needs.
    notes = tuple(line for note in systems[1:] if not note.startswith(PLAN_CONTEXT) for line in note_lines(note))

    # What is asked, apart from a client's sentences about the answer's format (format_instructions.py).
    request_text = without_format_instructions(request_text)
    steps, rounds = _read_steps(messages[start + 1 :], texts[start + 1 :])
    if scratchpad is not None:
        steps, rounds = [*scratchpad.steps, *steps], scratchpad.rounds + rounds
    return Conversation(
        request=request_text,
        lang=detect_language(request_text),
        tools=tools,
        declared=declared,
        native=native,
        steps=tuple(steps),
        rounds=rounds,
        earlier=earlier,
        notes=notes,
        schemas=schemas,
        tool_problem=tool_problem,
        answer_shape=shape,
        prefilled=scratchpad.prefilled if scratchpad else "",
        json_input=json_input,
        answer_key=_answer_key("\n".join(texts[i] for i, m in enumerate(messages) if m["role"] in ("system", "developer"))),
        # read only for a response_format answer, not an answer tool's arguments: a tool's description may hold an
        # example object, which is no fact
        pasted=tuple(json_objects_in(texts[i] for i, m in enumerate(messages) if m["role"] == "user"))
        if shape.schema is not None and not shape.tool else (),
        told_before=results_before(messages[:start], texts[:start]),
    )


def results_before(messages: list[dict], texts: list[str]) -> tuple[object, ...]:
    """The JSON of every tool result in `messages` (a tool message, or a user message that is an Observation),
    unwrapped as a step's is, oldest first."""
    found = []
    for message, text in zip(messages, texts):
        if message["role"] == "tool":
            body = text
        elif message["role"] == "user" and _is_observation(text):
            body = OBSERVATION_PREFIX.sub("", text, count=1)
        else:
            continue
        try:
            found.append(unwrapped(json.loads(body)))
        except ValueError:
            continue
    return tuple(found)


def json_objects_in(texts) -> list[dict]:
    """The JSON objects written in `texts` (a pasted order, an Observation quoted in a message)."""
    decoder = json.JSONDecoder()
    found = []
    for text in texts:
        start = text.find("{")
        while start >= 0:
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                start = text.find("{", start + 1)
                continue
            if isinstance(value, dict):
                found.append(value)
            start = text.find("{", end)
    return found


def _answer_key(system: str) -> str:
    """ "Answer" when a line of the prompt starts with `Answer:` and it never says "final answer" (in any case)."""
    if "final answer" in system.lower() or not re.search(r"^\s*Answer\s*:", system, re.MULTILINE):
        return "Final Answer"
    return "Answer"


def note_lines(note: str) -> list[str]:
    """The lines of a note that say something, each without its bullet or label: "Orders: 88231" -> "88231",
    "- My usual order is 88231." -> "My usual order is 88231."; a heading ("Summary ...:") says nothing."""
    lines = []
    for line in note.splitlines():
        line = line.strip()
        if not line or line.endswith((":", "：")):
            continue
        line = NOTE_LABEL.sub("", line).strip()
        if line:
            lines.append(line)
    return lines


def message_text(message: dict) -> str:
    """A message's text: its content string, or the text parts of a content list joined."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


def _check_message(index: int, message: object) -> None:
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise MalformedRequestError(f"{where} must be an object with a 'role' and a 'content'")
    role = message.get("role")
    if role not in ROLES:
        raise MalformedRequestError(f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}")
    content = message.get("content")
    if content is None:
        if role != "assistant":
            raise MalformedRequestError(
                f"{where}.content is missing: only an assistant message with tool_calls may omit it"
            )
    elif isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise MalformedRequestError(
                    f"{where}.content must be a string or a list of {{'type': 'text', ...}} parts"
                )
            _check_part(f"{where}.content[{j}]", role, part)
    elif not isinstance(content, str):
        raise MalformedRequestError(f"{where}.content must be a string, got {type(content).__name__}")

    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is None:
            if content is None:
                raise MalformedRequestError(f"{where} has neither content nor tool_calls")
            return
        if not isinstance(calls, list):
            raise MalformedRequestError(f"{where}.tool_calls must be a list")
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if (
                not isinstance(call, dict)
                or not isinstance(call.get("id"), str)
                or not isinstance(function, dict)
            ):
                raise MalformedRequestError(f"{where}.tool_calls[{j}] must have an 'id' and a 'function'")
            if not isinstance(function.get("name"), str) or not function["name"]:
                raise MalformedRequestError(
                    f"{where}.tool_calls[{j}].function.name must be a non-empty string"
                )
            if not isinstance(function.get("arguments", ""), (str, dict)):
                raise MalformedRequestError(
                    f"{where}.tool_calls[{j}].function.arguments must be a JSON string"
                )
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise MalformedRequestError(f"{where} is a tool message without a 'tool_call_id'")


def _check_part(where: str, role: str, part: dict) -> None:
    """A content part the classroom model can read: text (and, in the model's own earlier messages, a refusal).
    An image, audio or a file is refused as OpenAI refuses it to a text-only model, rather than dropped unseen (the
    answer would then be about a picture nobody looked at); a type the API does not have is refused by its name."""
    kind = part["type"]
    if kind == "text" or (kind == "refusal" and role == "assistant"):
        if not isinstance(part.get(kind), str):
            raise MalformedRequestError(f"{where} is a {kind} part without a '{kind}' string", where)
    elif kind in NOT_TEXT_PARTS:
        raise MalformedRequestError(f"{where} is a part of type '{kind}', but the classroom model reads text only: send "
                                    "what it should read as a 'text' part", where)
    else:
        raise MalformedRequestError(f"{where} has the type {kind!r}, which no content part has: send the text as a "
                                    "part of type 'text'", where)


def _check_tool_replies(messages: list[dict]) -> None:
    """Every tool message must answer a tool call an earlier assistant message made, and, as OpenAI's API requires,
    every call must be answered by the tool messages right after its assistant message: a call left without its
    result (one of two answered, or the user speaking next) is a conversation no real model is sent."""
    made: set[str] = set()
    waiting: dict[str, int] = {}  # the calls of the latest assistant message not answered yet -> that message's index
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            if message["tool_call_id"] not in made:
                raise MalformedRequestError(
                    f"messages[{index}] answers tool_call_id {message['tool_call_id']!r}, "
                    "which no earlier assistant message made"
                )
            waiting.pop(message["tool_call_id"], None)
            continue
        _check_answered(waiting)
        if message["role"] == "assistant":
            ids = [call["id"] for call in message.get("tool_calls") or []]
            made.update(ids)
            waiting = dict.fromkeys(ids, index)
    _check_answered(waiting)


def _check_answered(waiting: dict[str, int]) -> None:
    """A 400 naming the calls still `waiting` for a tool message, if any."""
    if waiting:
        asked_at = next(iter(waiting.values()))
        raise MalformedRequestError(
            f"messages[{asked_at}] is an assistant message with 'tool_calls', so the messages right after it must be "
            f"tool messages answering each of its calls, and none answers {', '.join(waiting)}: send each call's "
            "result as a tool message with that 'tool_call_id' before any other message"
        )


def _is_observation(text: str) -> bool:
    return bool(OBSERVATION_PREFIX.match(text))


def _latest_request_index(messages: list[dict], texts: list[str]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] == "user" and not _is_observation(texts[index]):
            return index
    raise MalformedRequestError("the conversation has no user message with a request in it")


def _read_steps(messages: list[dict], texts: list[str]) -> tuple[list[Step], int]:
    """The steps taken after the request, and how many replies the model gave.

    A call is a `tool_calls` entry answered by a `tool` message, or written as text and answered by the next
    user messages that start with "Observation:": an `Action:` step (text ReAct), or a framework's record of
    native calls it keeps as text (smolagents: "Calling tools:" and a list of calls).
    """
    steps: list[Step] = []
    by_call_id: dict[str, int] = {}
    waiting: list[int] = []  # the text steps that the next "Observation:" messages answer, in order
    rounds = 0
    for message, text in zip(messages, texts):
        role = message["role"]
        if role == "assistant":
            rounds += 1
            waiting = []
            for call in message.get("tool_calls") or []:
                name = call["function"]["name"]
                by_call_id[call["id"]] = len(steps)
                steps.append(
                    Step(name, _arguments_as_input(call["function"].get("arguments")), kind=tool_kind(name))
                )
            if not message.get("tool_calls"):
                action = parse_action(text)
                written = [action] if action is not None else calls_in_text(text)
                waiting = list(range(len(steps), len(steps) + len(written)))
                steps += [Step(tool, tool_input, kind=tool_kind(tool)) for tool, tool_input in written]
        elif role == "tool":
            index = by_call_id.get(message["tool_call_id"])
            if index is not None:
                steps[index] = _observed(steps[index], text)
        elif role == "user" and waiting:
            # A folded Observation (lesson 13's context budget) is read like a whole one: its mark goes, its
            # JSON stays JSON, with the facts the fold kept.
            observation = OBSERVATION_PREFIX.sub("", text, count=1).strip()
            # Several calls answered in one message (smolagents joins their results with newlines): one JSON
            # value each, when it splits that way; otherwise the whole text answers the first call.
            parts = _json_values(observation) if len(waiting) > 1 else None
            answers = parts if parts and len(parts) == len(waiting) else [observation]
            for answer in answers:
                index = waiting.pop(0)
                steps[index] = _observed(steps[index], answer)
    return steps, rounds


def _observed(step: Step, text: str) -> Step:
    """`step` answered by `text`: a folded Observation's mark taken off (lesson 13), a fenced one read out of its
    fence and marked as fenced (lesson 25)."""
    inside = unfence(text.strip())
    if inside is not None:
        return replace(step, observation=strip_fold_mark(inside[0]), fenced=True)
    return replace(step, observation=strip_fold_mark(text))


class Scratchpad(NamedTuple):
    """A ReAct prompt that is one message: the question it ends with, the steps written after it."""

    question: str
    steps: list[Step]
    rounds: int
    prefilled: str  # "Thought:" when the message ends with the key the model is to go on from


def read_scratchpad(text: str) -> Scratchpad:
    """The last `Question:` of a one-message ReAct prompt (the ones above it are the format's example), and the
    Thought / Action / Action Input / Observation lines after it, read as steps."""
    lines = text.splitlines()
    at = max((i for i, line in enumerate(lines) if QUESTION.match(line)), default=None)
    if at is None:
        return Scratchpad(text, [], 0, "")
    question = [QUESTION.sub("", lines[at], count=1)]
    rest = lines[at + 1 :]
    while rest and KEY_LINE.match(rest[0]) is None:
        question.append(rest.pop(0))
    steps: list[Step] = []
    observation: list[str] | None = None
    pending = ""
    for line in rest:
        match = KEY_LINE.match(line)
        key = match.group(1).lower() if match else None
        if key == "observation":
            observation = [match.group(2)]
            continue
        if key is not None and observation is not None and steps:
            steps[-1] = replace(steps[-1], observation=strip_fold_mark("\n".join(observation).strip()))
            observation = None
        if observation is not None:
            observation.append(line)
        elif key in ("action", "action input"):
            pending += line + "\n"
            if key == "action input":
                action = parse_action(pending)
                if action is not None:
                    steps.append(Step(action[0], action[1], kind=tool_kind(action[0])))
                pending = ""
    if observation is not None and steps:
        steps[-1] = replace(steps[-1], observation=strip_fold_mark("\n".join(observation).strip()))
    ends_with = text.rsplit("\n", 1)[-1].lstrip()  # "Thought:" or "Thought: ", as the prompt wrote it
    prefilled = ends_with if re.fullmatch(r"(?i)thought\s*[:：]\s*", ends_with) else ""
    return Scratchpad("\n".join(question).strip(), steps, len(steps), prefilled)


def _json_values(text: str) -> list[str] | None:
    """The JSON values `text` is made of, one after another, each as its own text; None if it is not that."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text):
        try:
            _, end = decoder.raw_decode(text, at)
        except ValueError:
            return None
        values.append(text[at:end])
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def calls_in_text(text: str) -> list[tuple[str, str]]:
    """(tool, input) of each call in a record of native calls kept as text: "Calling tools:" and then the
    calls as a JSON or Python list ([{'id': ..., 'function': {'name': ..., 'arguments': {...}}}]); [] if none."""
    head, found, listed = text.partition("Calling tools:")
    if not found or head.strip():
        return []
    try:
        calls = json.loads(listed)
    except ValueError:

        try:
            calls = ast.literal_eval(listed.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return []
    if not isinstance(calls, list):
        return []
    written = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            written.append((function["name"], _arguments_as_input(function.get("arguments"))))
    return written


def parse_action(text: str) -> tuple[str, str] | None:
    """(tool, input) from one of the model's earlier text replies, or None if it gave no Action.

    Tolerant on purpose (it reads the sloppy variant too). Only what comes before an `Observation:` line
    counts: a reply that ran on past it (no stop sequence) invented the rest.
    """
    tool: str | None = None
    tool_input = ""
    extra: list[str] = []
    collecting = False
    for line in text.splitlines():
        match = KEY_LINE.match(line)
        if match is None:
            if collecting:
                extra.append(line)
            continue
        key, value = match.group(1).lower(), match.group(2).strip()
        collecting = False
        if key in ("observation", "final answer"):
            break
        if key == "action":
            words = value.strip("`*_ ").split()
            tool, tool_input, extra = (words[0] if words else ""), "", []
        elif key == "action input":
            tool_input, collecting, extra = value, True, []
    if not tool:
        return None
    while extra and extra[-1].strip() in ("", "```"):
        extra.pop()  # the closing fence of a reply wrapped whole in one, and blank lines: not part of the input
    if extra:  # the input goes on over the next lines (a fence, a JSON object), as the agent's parser reads it
        tool_input = "\n".join([tool_input, *extra]) if tool_input else "\n".join(extra)
    return tool, without_fence(tool_input)


def _arguments_as_input(arguments: object) -> str:
    """Function-call arguments as the text a ReAct step would have written: one argument's value (a string as it
    is, anything else as JSON), or several as compact JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return arguments
    if isinstance(arguments, dict):
        if not arguments:
            return ""
        if len(arguments) == 1:
            value = next(iter(arguments.values()))
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
