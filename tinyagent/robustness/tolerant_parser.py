"""Lesson 11: a tolerant parser for the replies models really write.

    parse_tolerant(text, tools=None, finish_reason=None) -> ParsedStep

Lesson 05's `parse_step` reads the format the prompt asks for and nothing else: to it `**Action:**`,
`action:` and `Action：` are "no format", and lesson 06's fallback then sends the model's working notes
to the customer. This parser reads the shapes real models write, and says in `rule` what it repaired,
so a trace shows why a reply was read the way it was: "action (Markdown around keys, code fence)".

    keys     **Action:**  ## Action:  action:  ACTION :  Action：(a full-width colon)  Action 1:
             ActionInput: / action_input:  Reason: (the second article's Thought)  FinalAnswer:  思考：
    names    `queryOrder` in backticks; a name followed by a comment; queryOrder[88231] and
             queryOrder(88231); toolName=queryOrder; with `tools`, queryorder or a name inside a sentence
    replies  CRLF line ends; the input, the answer or the whole reply in a ``` fence; all keys on one
             line ("Reason: ... Action: x ActionInput: y", the second article's example); a JSON agent's
             {"action": ..., "action_input": ...}; an Observation echoed before the step

Three rules differ from `parse_step` on purpose:

* An Action and a Final Answer in one reply: the Action wins (rule "action_over_final"). The answer was
  written before anything was observed (lesson 04's invented refund reaches the customer that way), so
  the agent runs the Action and the premature answer is dropped. `parse_step` keeps the first article's choice.
* The first complete step wins. When a reply holds several steps, the later ones rest on results nobody has
  seen yet. A step is complete with an input of its own: an Action Input after it, or one beside the name
  (queryOrder[88231], queryOrder(88231), a JSON object). An `Action:` line without one (a Thought line
  that happens to start with the word, lesson 05) still gives way to a complete step after it.
* A reply that looks like a botched step is an error, not an answer: keys but no usable Action or Final
  Answer, an empty reply, a reply cut by max_tokens (finish_reason "length") before its step was
  complete. `error` says what is wrong, and `format_reminder` turns it into the Observation that
  an agent with `TolerantRead()` mounted sends back. Plain prose with no key at all stays "no_format" without an
  error: lesson 06's fallback may take it as the answer.

With `tools` (the tool names the model was offered) a name is matched to a known tool: exactly, then
ignoring case, then the one known name a sentence mentions. An unknown name is kept as written (rule
says "unknown tool"): the registry answers it with an error Observation listing the tools (lesson 02),
and the model can correct itself from that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from tinyagent.events import Event, Observation, Stopped, event_kind
from tinyagent.loop_parts import EMPTY_REPLY as NO_ANSWER
from tinyagent.loop_parts import Reading, text_reading
from tinyagent.number_checks import check_whole
from tinyagent.parser import ParsedStep
from tinyagent.tools import Action, without_fence

THOUGHT, ACTION, ACTION_INPUT, FINAL_ANSWER, OBSERVATION = (
    "Thought", "Action", "Action Input", "Final Answer", "Observation",
)

# What `rule` can name, in parentheses after the outcome ("action", "final_answer", ...).
CRLF = "CRLF line ends"
MARKDOWN = "Markdown around keys"
KEY_CASE = "key case"
KEY_SPELLING = "key spelling"
CHINESE_KEYS = "Chinese keys"
FULL_WIDTH = "full-width colon"
NUMBERED = "numbered keys"
FENCE = "code fence"
BRACKETS = "tool[input]"
NAME_MARKS = "marks around the tool name"
COMMENT = "comment after the tool name"
NAME_CASE = "tool name case"
NAME_IN_SENTENCE = "tool name in a sentence"
UNKNOWN_TOOL = "unknown tool"
INPUT_WITHOUT_KEY = "input without its key"
ONE_LINE = "keys on one line"
JSON_AGENT = "JSON agent"
FINAL_AS_ACTION = "Action: Final Answer"
INVENTED = "invented Observation cut"
ECHO = "echoed Observation skipped"
LATER_STEPS = "later steps dropped"
EMPTY_ACTION = "empty Action ignored"

# The problems `error` names. Short: the agent puts one into a sentence for the model. (The loop's own EMPTY_REPLY,
# its words to the customer when no answer came, is imported above as NO_ANSWER.)
EMPTY_REPLY = "the reply is empty"
CUT_OFF = "the reply was cut off at max_tokens (finish_reason: length) before its step was complete"
NO_TOOL = "the Action line names no tool"
EMPTY_FINAL = "the Final Answer is empty"

# Every spelling of a key, lower-cased with spaces, "_" and "-" taken out -> the key it means.
_SPELLINGS = {
    "thought": THOUGHT, "thoughts": THOUGHT, "reason": THOUGHT, "reasoning": THOUGHT, "思考": THOUGHT,
    "action": ACTION, "行动": ACTION, "动作": ACTION,
    "actioninput": ACTION_INPUT, "行动输入": ACTION_INPUT, "动作输入": ACTION_INPUT,
    "finalanswer": FINAL_ANSWER, "最终答案": FINAL_ANSWER, "最终回答": FINAL_ANSWER,
    "observation": OBSERVATION, "观察": OBSERVATION,
}
# Spellings that are ordinary words too: inside an input or an answer they stay text ("reason: broken").
_WEAK_SPELLINGS = {"reason", "reasoning", "thoughts", "思考", "行动", "动作", "观察", "最终回答"}

# The patterns.
_QUOTES = "*`'\"“”‘’「」"
_MARKS = _QUOTES + "_"
# The runs of spaces and marks are possessive (*+): none of them can give back what another could take, and
# without it a line of 16,000 spaces took 8 s (each split of the run between two [ \t]* was tried).
# Inside a key and before its colon, a space may be a no-break one: French puts U+00A0 or U+202F before a colon
# ("Action : queryOrder"), and a Chinese reply may hold an ideographic space, U+3000.
_SPACE = "[ \t\u00a0\u202f\u3000]"
KEY_LINE = re.compile(rf"^[ \t]*+(?P<before>[*_#>`~+-]*+)[ \t]*+"  # Markdown before the key: **Action, ## Action, > Action, - Action
        rf"(?P<key>thoughts?|reasoning|reason|action(?:{_SPACE}|[_-])*input|action|final(?:{_SPACE}|[_-])*answer"
        r"|observation|思考|行动输入|动作输入|行动|动作|最终答案|最终回答|观察)"
        rf"(?P<number>{_SPACE}*+\d+)?"  # Action 1: (the ReAct paper's numbered steps)
        rf"(?P<after>{_SPACE}*+[*_`]*+{_SPACE}*+)"  # **Action**:
        r"(?P<colon>[:：])[ \t]*(?P<value>.*)$", re.IGNORECASE)
# Keys in the middle of a line, as the second article's model writes them: "Reason: ... Action: x ActionInput: y".
# A tool's name is at most 64 characters (OpenAI's limit): an unbounded name made "x" + "Action:" * 8000 take 6 s.
INLINE_ACTION = re.compile(rf"(?<!\w)[Aa]ction{_SPACE}*[:：][ \t]*(?P<name>[^\s,;，；]{{1,64}})[\s,;，；]*"
        rf"[Aa]ction(?:{_SPACE}|_)?[Ii]nput{_SPACE}*[:：][ \t]*(?P<input>.*)", re.DOTALL)
INLINE_INPUT = re.compile(rf"(?<!\w)[Aa]ction(?:{_SPACE}|_)?[Ii]nput{_SPACE}*[:：][ \t]*(?P<input>.*)", re.DOTALL)
INLINE_FINAL = re.compile(rf"(?<!\w)Final(?:{_SPACE}|_)?Answer{_SPACE}*[:：][ \t]*(?P<answer>.*)", re.DOTALL)
ANY_INLINE_KEY = re.compile(rf"(?<!\w)(?:Thought|Action|Action{_SPACE}Input|Final{_SPACE}Answer|Observation)"
                            rf"{_SPACE}*[:：]")
NAME_PREFIX = re.compile(r"^(?:tool[ _]?name|tool|function|name)[ \t]*[=:：][ \t]*", re.IGNORECASE)
CALL = re.compile(r"(?P<name>[\w.-]+)(?:[ \t]*\[(?P<square>.*)\]|[(（](?P<round>.*)[)）])", re.DOTALL)
FIRST_WORD = re.compile(rf"[{_QUOTES}]*(?P<name>[^\s{_QUOTES},;:：，。、()（）\[\]#]+)[{_QUOTES}]*(?P<rest>.*)", re.DOTALL)


_NO_TOOL = {"", "none", "null", "nil", "n/a", "na", "no", "nothing", "无", "没有", "-", "—"}
_MAX_JSON_TRIES = 20  # "{" positions tried per reply: a long reply full of braces costs no more than this


@dataclass
class _Section:
    """A keyed line and the unkeyed lines under it; `key` None is the text before the first key.

    lines:   the key's value (the first line, before any key), then the lines under it, without trailing spaces
    raw:     the same lines as written (a JSON agent's object is read from them)
    repairs: what had to be forgiven to read the key
    """

    key: str | None
    lines: list[str]
    raw: list[str]
    repairs: list[str] = field(default_factory=list)

    @property
    def value(self) -> str:
        return "\n".join(self.lines).strip()


@dataclass
class _Found:
    """What the parser found so far: a thought, an action, an answer, and every repair it made."""

    thought: str = ""
    action: Action | None = None
    complete: bool = True  # False when the action's input may have been cut off (finish_reason "length")
    final: str | None = None
    repairs: list[str] = field(default_factory=list)

    def repaired(self, *names: str) -> None:
        self.repairs.extend(name for name in names if name not in self.repairs)


def parse_tolerant(
    text: str | None, tools: Iterable | None = None, finish_reason: str | None = None
) -> ParsedStep:
    """Read one reply tolerantly. Never raises. `rule` says what was found and what was repaired;
    `error` says what is wrong when nothing usable was found (see the module's docstring)."""
    text = text if isinstance(text, str) else "" if text is None else str(text)
    known = _tool_names(tools)
    cut = finish_reason == "length"
    found = _Found()
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        found.repaired(CRLF)
    if not text.strip():
        return _error(found, CUT_OFF if cut else EMPTY_REPLY)

    sections = _sections(text.split("\n"))
    step, invented = _split_at_observation(sections, found)
    found.thought = _thought(step, found)
    _read_action(step, sections, known, found)
    _read_final(step, invented, found)
    if found.action is None and found.final is None:
        _json_step("\n".join(line for s in step for line in s.raw), known, found, whole_reply=True)

    if found.action is not None:
        if cut and not found.complete:
            return _error(found, CUT_OFF)
        outcome = "action_over_final" if found.final is not None else "action"
        return _result(found, outcome, action=found.action)
    if found.final is not None:
        if cut:
            return _error(found, CUT_OFF)
        if not found.final:
            return _error(found, EMPTY_FINAL)
        return _result(found, "final_answer", final=found.final)
    if cut:
        return _error(found, CUT_OFF)
    if any(s.key == ACTION for s in step):
        return _error(found, NO_TOOL)
    if any(s.key is not None for s in sections) or ANY_INLINE_KEY.search(text):
        return _error(found, _what_is_missing(sections))
    return ParsedStep("", None, None, "no_format")


def format_reminder(error: str, tools: Iterable | None = None, lang: str = "en") -> str:
    """The Observation that tells the model what was wrong with its reply and the exact format to use."""
    names = _tool_names(tools)
    if lang == "zh":
        listed = f"：{'、'.join(names)}" if names else ""
        return (
            f"格式错误：{error}\n请严格按下面的格式回复，每次只走一步：\n"
            f"Thought: <你的思考>\nAction: <一个工具名{listed}>\nAction Input: <工具的输入>\n"
            "可以回答时：\nThought: <为什么现在可以回答>\nFinal Answer: <给用户的回复>"
        )
    listed = f": {', '.join(names)}" if names else ""
    return (
        f"Format error: {error}. Reply in exactly this format, one step per reply:\n"
        f"Thought: <your reasoning>\nAction: <one tool name{listed}>\nAction Input: <the tool's input>\n"
        "or, when you can answer:\nThought: <why you can answer now>\nFinal Answer: <your reply to the user>"
    )


# -- the results -----------------------------------------------------------------------------------
def _rule(outcome: str, repairs: list[str]) -> str:
    return f"{outcome} ({', '.join(repairs)})" if repairs else outcome


def _result(found: _Found, outcome: str, action: Action | None = None, final: str | None = None) -> ParsedStep:
    return ParsedStep(found.thought, action, final, _rule(outcome, found.repairs))


def _error(found: _Found, message: str) -> ParsedStep:
    return ParsedStep(found.thought, None, None, _rule("format_error", found.repairs), message)


def _what_is_missing(sections: list[_Section]) -> str:
    keys = {s.key for s in sections if s.key is not None}
    if keys == {THOUGHT}:
        return "the reply has a Thought but no Action and no Final Answer"
    if keys == {OBSERVATION}:
        return "the reply has only an Observation, and the tools write those, not you"
    if ACTION_INPUT in keys and ACTION not in keys:
        return "the reply has an Action Input but no Action line naming the tool"
    return "the reply has no Action and no Final Answer"


# -- lines and keys --------------------------------------------------------------------------------
def _sections(lines: list[str]) -> list[_Section]:
    """Group the lines under their keys. In an input or an answer only a strong key starts a new section
    (an answer may list "- Reason: ..."), and in an answer only Action, Action Input or Observation does."""
    sections: list[_Section] = []
    for line in lines:
        match = KEY_LINE.match(line)
        current = sections[-1].key if sections else None
        if match is not None and _starts_section(match, current):
            key, value, repairs = _read_key(match)
            sections.append(_Section(key, [value], [line], repairs))
        elif sections:
            sections[-1].lines.append(line.rstrip())
            sections[-1].raw.append(line)
        else:
            sections.append(_Section(None, [line.rstrip()], [line]))
    return sections


def _spelling(match: re.Match) -> str:
    return re.sub(r"[\s_-]", "", match["key"].lower())


def _starts_section(match: re.Match, current: str | None) -> bool:
    spelling = _spelling(match)
    if current in (ACTION_INPUT, FINAL_ANSWER) and spelling in _WEAK_SPELLINGS:
        return False
    if current == FINAL_ANSWER:
        return _SPELLINGS[spelling] in (ACTION, ACTION_INPUT, OBSERVATION)
    return True


def _read_key(match: re.Match) -> tuple[str, str, list[str]]:
    """The key a line starts with, its value, and what had to be forgiven to read it."""
    written, spelling = match["key"], _spelling(match)
    key = _SPELLINGS[spelling]
    repairs = []
    marks = (match["before"] + match["after"]).strip()
    value = match["value"]
    if marks:
        repairs.append(MARKDOWN)
        value = _without_emphasis(value, match["before"])
    if not spelling.isascii():
        repairs.append(CHINESE_KEYS)
    elif written.lower() != key.lower() or spelling in _WEAK_SPELLINGS:
        repairs.append(KEY_SPELLING)  # ActionInput, final_answer, Reason
    elif written != key:
        repairs.append(KEY_CASE)
    if match["number"]:
        repairs.append(NUMBERED)
    if match["colon"] == "：":
        repairs.append(FULL_WIDTH)
    elif match["after"].strip() == "" and match["after"]:
        repairs.append(KEY_SPELLING)  # "Action : queryOrder", the space perhaps a no-break one
    return key, value.strip(), repairs


def _without_emphasis(value: str, before: str) -> str:
    """The value of a key in bold or italics without the marks that close it: "** queryOrder" after **Action:**,
    "... **" of **Thought: ...**. Only those: `__init__.py`, `*.log` and *a word in italics* stay as written."""
    emphasis = re.search(r"[*_]*$", before.strip())[0]
    value = value.strip(" \t")
    if emphasis and value.startswith(emphasis):
        value = value[len(emphasis):].lstrip(" \t")
    if emphasis and value.endswith(emphasis):
        value = value[: -len(emphasis)].rstrip(" \t")
    return value


def _split_at_observation(sections: list[_Section], found: _Found) -> tuple[list[_Section], list[_Section]]:
    """The step, and what comes after the first Observation that follows an Action: the model wrote that
    Observation itself, so everything from it on is invented. An Observation before any Action is the
    last one echoed back: it is skipped."""
    step: list[_Section] = []
    acted = False  # an Action is in the step so far
    for index, section in enumerate(sections):
        if section.key == OBSERVATION:
            if acted:
                found.repaired(INVENTED)
                return step, sections[index:]
            found.repaired(ECHO)
            continue
        step.append(section)
        acted = acted or section.key == ACTION
    return step, []


def _unfence(text: str, found: _Found) -> str:
    """The text without a ``` fence (or a pair of backticks) around it."""
    stripped = text.strip()
    # A fence around the whole value, or an opening one that never closes (the reply was cut): lesson 01's
    # without_fence, which the shop's tools read their input with too. A text that holds a second fence after an
    # unclosed one ends in a code block of its own ("```\nx\nRun this:\n```\npip install x"): kept.
    if stripped.startswith("```") and (stripped.endswith("```") or stripped.count("```") == 1):
        inside = without_fence(stripped)
        if inside != stripped:
            found.repaired(FENCE)
            return inside
    # A lone closing fence: the reply was wrapped whole, its opening fence on the key's line.
    if stripped.endswith("```") and stripped.count("```") == 1:  # the closing fence of a reply wrapped whole
        found.repaired(FENCE)
        stripped = stripped[:-3].strip()
    inner = stripped.strip("`")
    if len(stripped) > 1 and stripped[0] == stripped[-1] == "`" and "`" not in inner and "\n" not in stripped:
        found.repaired(FENCE)  # one code span around the whole value: `88231`, not `88231` and `SF1234567890`
        stripped = inner.strip()
    return stripped


def _thought(step: list[_Section], found: _Found) -> str:
    """The Thought sections joined; without any, the text before the first key (if there is a key)."""
    thoughts = [s for s in step if s.key == THOUGHT]
    for section in thoughts:
        found.repaired(*section.repairs)
    if thoughts:
        return "\n".join(v for v in (_unfence(s.value, found) for s in thoughts) if v)
    if step and step[0].key is None and len(step) > 1:
        return _unfence(step[0].value, found)
    return ""


# -- the action ------------------------------------------------------------------------------------
def _read_action(step: list[_Section], sections: list[_Section], known: list[str], found: _Found) -> None:
    """Find the action: a keyed one, else keys on one line. (A JSON agent's object is tried last.)"""
    actions = [i for i, s in enumerate(step) if s.key == ACTION]
    chosen = _choose_action(step, actions, found)
    if chosen is None:
        if not actions:
            _inline_action(step, known, found)
        return
    index, input_index = chosen
    found.complete = step[input_index if input_index is not None else index] is not sections[-1]
    _keyed_action(step[index], step[input_index] if input_index is not None else None, known, found)
    if _has_input(step, index) and any(_has_input(step, i) for i in actions if i > index):
        found.repaired(LATER_STEPS)


def _input_index(step: list[_Section], action_index: int) -> int | None:
    """The Action Input section that belongs to the Action at `action_index`, if any."""
    for i in range(action_index + 1, len(step)):
        if step[i].key == ACTION:
            return None
        if step[i].key == ACTION_INPUT:
            return i
    return None


def _choose_action(step: list[_Section], actions: list[int], found: _Found) -> tuple[int, int | None] | None:
    """The first Action that has its own input, else the last Action; an Action that names no tool
    ("Action: None" beside a Final Answer) does not count."""
    named = []
    for i in actions:
        first_line = _unfence(step[i].value, _Found()).partition("\n")[0]
        if _is_no_tool(first_line) and not first_line.lstrip().startswith("{"):
            found.repaired(EMPTY_ACTION)
            continue
        named.append(i)
    for i in named:
        if _has_input(step, i):
            return i, _input_index(step, i)
    return (named[-1], None) if named else None


def _has_input(step: list[_Section], action_index: int) -> bool:
    """Whether the Action at `action_index` is a complete step: an Action Input of its own follows it, or its
    input is written beside the name (queryOrder[88231], queryOrder(88231), a JSON object, "ActionInput:" on
    the same line). Then it runs, and a later step, which rests on a result nobody has seen yet, does not."""
    if _input_index(step, action_index) is not None:
        return True
    value = _unfence(step[action_index].value, _Found())
    first = NAME_PREFIX.sub("", value.partition("\n")[0].strip())
    return (first.startswith("{") or INLINE_INPUT.search(value) is not None
            or CALL.fullmatch(first) is not None or CALL.fullmatch(NAME_PREFIX.sub("", value)) is not None)


def _keyed_action(section: _Section, input_section: _Section | None, known: list[str], found: _Found) -> None:
    found.repaired(*section.repairs)
    value = section.value
    if value.startswith("```"):
        value = _unfence(value, found)
    if value.startswith("{") and _json_step(value, known, found):
        return  # "Action:" followed by a JSON agent's object (LangChain's structured chat)
    inline = INLINE_INPUT.search(value) if input_section is None else None
    if inline is not None:  # "Action: writeFile ActionInput: {...}" on one line
        found.repaired(ONE_LINE)
        name, _ = _tool_name(value[: inline.start()], known, found)
        _set_action(name, _unfence(inline["input"], found), found)
        return
    first, _, rest = value.partition("\n")
    if _is_final_name(first):  # "Action: Final Answer" + "Action Input: <the answer>" (LangChain's agents)
        found.repaired(FINAL_AS_ACTION)
        found.final = _unfence(input_section.value if input_section else rest, found)
        return
    # "Action: applyRefund[{...\n...}]": brackets that close on a later line hold the whole input, to the last "]"
    spans_lines = (input_section is None and bool(rest.strip()) and CALL.fullmatch(value.strip()) is not None
                   and CALL.fullmatch(first.strip()) is None)
    name, written_input = _tool_name(value if spans_lines else first, known, found)
    if input_section is not None:
        found.repaired(*input_section.repairs)
        tool_input = _unfence(input_section.value, found)
    elif written_input is not None:
        tool_input = written_input
    elif rest.strip():
        found.repaired(INPUT_WITHOUT_KEY)
        tool_input = _unfence(rest, found)
    else:
        tool_input = ""
    _set_action(name, tool_input, found)


def _set_action(name: str, tool_input: str, found: _Found) -> None:
    if _is_no_tool(name):  # {"action": ""} or "Action: None ActionInput: ..." names no tool
        found.repaired(EMPTY_ACTION)
        return
    found.action = Action(name, tool_input)


def _is_final_name(text: str) -> bool:
    return re.sub(r"[\s_*`'\"-]", "", text.lower()) == "finalanswer"


def _tool_name(line: str, known: list[str], found: _Found) -> tuple[str, str | None]:
    """The tool name in an Action line, and an input written beside it (tool[input]) if there is one."""
    text = line.strip()
    if NAME_PREFIX.match(text):
        found.repaired(NAME_MARKS)  # toolName=writeFile: the second article's prompt forbids exactly this
        text = NAME_PREFIX.sub("", text)
    written_input = None
    call = CALL.fullmatch(text)
    if call is not None:
        found.repaired(BRACKETS)
        name = call["name"]
        written_input = call["square"] if call["square"] is not None else call["round"]
        written_input = _strip_quotes(written_input.strip())
    else:
        word = FIRST_WORD.match(text)
        if word is None:  # it starts with punctuation: the first word as written, for the registry to refuse
            return text.split()[0] if text.split() else "", None
        name = word["name"].rstrip(".!?。")
        marked = any(mark in text[: word.start("name")] + text[word.end("name") :][:1] for mark in _QUOTES)
        for pair in ("__", "_"):
            if name in known:
                break
            if len(name) > 2 * len(pair) and name.startswith(pair) and name.endswith(pair):
                name, marked = name[len(pair) : -len(pair)], True
                break
        if marked:
            found.repaired(NAME_MARKS)
        rest = word["rest"].strip(_MARKS + " \t")
        quoted = re.findall(r"`([^`\s]+)`", text)
        if rest and len(quoted) == 1 and quoted[0] != name and not known:
            # "Action: I call `queryOrder` now": without a tool list, the one name in backticks
            found.repaired(NAME_IN_SENTENCE)
            name = quoted[0]
        elif rest:
            found.repaired(COMMENT)
    return _known_name(name, text, known, found), written_input


def _known_name(name: str, line: str, known: list[str], found: _Found) -> str:
    if not known or name in known:
        return name
    same = [k for k in known if k.lower() == name.lower()]
    if same:
        found.repaired(NAME_CASE)
        return same[0]
    mentioned = {k for k in known if re.search(rf"(?<!\w){re.escape(k)}(?!\w)", line, re.IGNORECASE)}
    if len(mentioned) == 1:
        found.repaired(NAME_IN_SENTENCE)
        return mentioned.pop()
    found.repaired(UNKNOWN_TOOL)
    return name


def _inline_action(step: list[_Section], known: list[str], found: _Found) -> None:
    """"Reason: ... Action: writeFile ActionInput: {...}" on one line: the second article's example."""
    for section in step:
        if section.key not in (THOUGHT, None):
            continue
        match = INLINE_ACTION.search(section.value)
        if match is None:
            continue
        found.repaired(ONE_LINE, *section.repairs)
        before = section.value[: match.start()].strip()
        found.thought = before if section.key == THOUGHT or not found.thought else found.thought
        if _is_final_name(match["name"]):
            found.final = _unfence(match["input"], found)
            return
        name, _ = _tool_name(match["name"], known, found)
        _set_action(name, _unfence(match["input"], found), found)
        found.complete = False  # the input runs to the end of the text: it may have been cut
        return


# -- the answer ------------------------------------------------------------------------------------
def _read_final(step: list[_Section], invented: list[_Section], found: _Found) -> None:
    """A Final Answer line, else "Final Answer:" inside a Thought. With an Action, one written after an
    invented Observation counts too: it is the premature answer the Action wins over."""
    if found.final is not None:
        return
    for section in step:
        if section.key == FINAL_ANSWER:
            if found.action is None:
                found.repaired(*section.repairs)
            found.final = _unfence(section.value, found if found.action is None else _Found())
            return
    for section in step:
        if section.key not in (THOUGHT, None):
            continue
        match = INLINE_FINAL.search(section.value)
        if match is not None:
            if found.action is None:
                found.repaired(ONE_LINE)
                found.thought = section.value[: match.start()].strip() if section.key == THOUGHT else found.thought
            found.final = _unfence(match["answer"], found)
            return
    if found.action is not None and any(s.key == FINAL_ANSWER for s in invented):
        found.final = next(s.value for s in invented if s.key == FINAL_ANSWER)


# -- a JSON agent's reply --------------------------------------------------------------------------
_NAME_KEYS = ("action", "tool", "tool_name", "name")
_INPUT_KEYS = ("action_input", "tool_input", "input", "arguments", "parameters", "args")


def _json_step(text: str, known: list[str], found: _Found, whole_reply: bool = False) -> bool:
    """{"action": "queryOrder", "action_input": "88231"} anywhere in the text (LangChain's JSON agents),
    or {"name": ..., "arguments": {...}} (what many small models write for a tool call)."""
    decoder = json.JSONDecoder()
    for tries, match in enumerate(re.finditer(r"\{", text)):
        if tries >= _MAX_JSON_TRIES:
            break
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python reads
            continue
        step = _json_action(value) if isinstance(value, dict) else None
        if step is None:
            continue
        name, tool_input = step
        if "```" in text[: match.start()]:  # ```json before the object: a fence read through
            found.repaired(FENCE)
        found.repaired(JSON_AGENT)
        if whole_reply:  # the Thought is what comes before the object (a Thought section also holds the object)
            found.thought = _thought_before_json(text[: match.start()])
        if name is None or _is_final_name(name):
            found.final = tool_input
        else:
            name, _ = _tool_name(name, known, found)
            _set_action(name, tool_input, found)
            found.complete = True  # the object parsed, so it was not cut inside
        return True
    return False


def _json_action(value: dict) -> tuple[str | None, str] | None:
    """(tool name, input) from a JSON agent's object; (None, answer) for a final answer; None if neither."""
    function = value.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        value = function
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    inputs = [value[k] for k in _INPUT_KEYS if k in value]
    if name is None:
        answer = value.get("final_answer", value.get("answer"))
        return (None, _as_text(answer)) if isinstance(answer, str) else None
    if name == value.get("name") and not inputs:
        return None  # {"name": "Alice"} is data, not a call
    return name, _as_text(inputs[0] if inputs else "")


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _thought_before_json(text: str) -> str:
    # Without the fence or the tag (<tool_call>) the object came in.
    lines = [line for line in text.split("\n") if not re.fullmatch(r"\s*(```.*|<[^<>]*>)\s*", line)]
    sections = _sections(lines)
    thoughts = [s.value for s in sections if s.key == THOUGHT and s.value]
    if thoughts:
        return "\n".join(thoughts)
    return sections[0].value if sections and sections[0].key is None else ""


# -- small helpers ---------------------------------------------------------------------------------
def _tool_names(tools: object) -> list[str]:
    """Tool names from a list of names, of Tools, or a ToolRegistry; anything else gives none."""
    if tools is None or isinstance(tools, (bytes, bytearray)):
        return []
    if isinstance(tools, str):
        tools = [tools]
    try:
        items = list(tools)  # a ToolRegistry iterates its Tools
    except TypeError:
        return []
    names = []
    for item in items:
        name = item if isinstance(item, str) else getattr(item, "name", None)
        if isinstance(name, str) and name.strip() and not any(ch.isspace() for ch in name.strip()):
            names.append(name.strip())
    return list(dict.fromkeys(names))


def _is_no_tool(text: str) -> bool:
    return text.strip(_MARKS + " \t.。").lower() in _NO_TOOL


def _strip_quotes(text: str) -> str:
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


# -- the loop's part -------------------------------------------------------------------------------------------
class TolerantRead:
    """How a reply is read in lesson 11 (`ReActAgent(llm, tools, parts=[TolerantRead()])`): with
    `parse_tolerant`, and a reply that is a botched step is answered with the exact format instead of being taken
    as an answer, at most `max_format_errors` times in a run (a model that never complies must still end:
    "format_errors")."""

    slot: ClassVar[str] = "read"
    protocol: ClassVar[str] = "text"  # it reads Thought / Action lines (loop_parts.py)

    def __init__(self, max_format_errors: int = 2):
        check_whole("max_format_errors", max_format_errors, least=0)
        self.max_format_errors = max_format_errors
        self.errors = 0  # botched replies in this run (a fresh part for every run)

    def fresh(self) -> TolerantRead:
        return TolerantRead(self.max_format_errors)

    def parse(self, text: str, finish_reason: str | None = None, tools=None) -> ParsedStep:
        return parse_tolerant(text, tools.names if tools is not None else None, finish_reason)

    def __call__(self, run, step: int, reply) -> Reading:
        tools, lang = run.agent.tools, run.lang
        parsed = self.parse(reply.text, reply.finish_reason, tools)
        reading = text_reading(step, reply, parsed, lang)
        if parsed.error is None or parsed.action is not None or parsed.final_answer is not None or reply.tool_calls:
            return reading  # something to run, an answer, native calls (their own ending), or plain prose
        self.errors += 1
        if self.errors > self.max_format_errors:
            reading.ending = Stopped(step, "format_errors", NO_ANSWER[lang],
                                     detail=f"{self.errors} replies could not be read; the last: {parsed.error}")
            return reading
        return FormatReminder(reading.message, reading.parsed, reminder=format_reminder(parsed.error, tools.names, lang))

    def __repr__(self) -> str:
        return f"TolerantRead(max_format_errors={self.max_format_errors})"


class FormatReminder(Reading):
    """A botched step: nothing to run, and the format goes back to the model as an error Observation."""

    def __init__(self, message: dict, parsed: list, reminder: str):
        super().__init__(message, parsed)
        self.reminder = reminder

    def observe(self, step: int, results, limit):
        yield ({"role": "user", "content": f"Observation: {self.reminder}"},
               FormatObservation(step, self.reminder, error=True))


@event_kind
class FormatObservation(Observation):
    """The Observation that answers a botched reply: no tool ran, and `text` tells the model the exact format."""

    kind: ClassVar[str] = "format_reminder"

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        return [f"{FORMAT_LABEL[lang]} {self.text}"]


FORMAT_LABEL = {"en": "[Format reminder]", "zh": "[格式提醒]"}  # in a printed trace
