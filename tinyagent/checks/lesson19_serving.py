"""Lesson 19 (serving): a Server-Sent Events reader, and the service's status codes."""

from __future__ import annotations

import copy
import difflib
import json
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import requests

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import COURSE_NOW, _brief, _fail, _not_attempted, _passed, grades, shown
from tinyagent.llm_client import LlmClient
from tinyagent.registry import ToolRegistry
from tinyagent.serving import ServiceConfig, ServiceServer
from tinyagent.shop.tools import shop_tools
from tinyagent.tools import FunctionTool

# Exercise 1's streams: what the service sends (an id: line in every block, `<stream id>.<n>`), and what any
# Server-Sent Events reader must also handle (a keep-alive comment, data over two lines, an event with no name,
# Windows line ends).
SSE_EXERCISE_STREAMS = (
    ("the service's own stream",
     ('id: 3q2-7wEm9P0aXcKQnVvYtA.0\nevent: start\ndata: {"session_id": "s1", "query": "Where is order 88231?"}\n\n'
      'id: 3q2-7wEm9P0aXcKQnVvYtA.1\nevent: reply_delta\ndata: {"type": "reply_delta", "step": 1, "text": "Thought: "}'
      '\n\nid: 3q2-7wEm9P0aXcKQnVvYtA.2\nevent: end\ndata: {"answer": "It is on its way.", "reason": "final_answer"}'
      '\n\n')),
    ("a stream with a keep-alive comment between two events",
     ('event: tool_call\ndata: {"name": "queryOrder", "input": "88231"}\n\n: keep-alive\n\n'
     'event: observation\ndata: {"text": "signed"}\n\n')),
    ("an event whose data comes on two data: lines (joined with a newline)",
     'event: observation\ndata: {"text":\ndata:  "two lines"}\n\n'),
    ("an event with no event: line (its name is then \"message\")",
     'data: {"note": "no name"}\n\n'),
    ("an event with no event: line after a named one (its name is \"message\", not the one before's)",
     'event: tool_call\ndata: {"name": "queryOrder"}\n\ndata: {"note": "unnamed"}\n\n'),
    ("a stream with Windows line ends (\\r\\n)",
     'event: tool_call\r\ndata: {"name": "getCurrentTime"}\r\n\r\nevent: final\r\ndata: {"answer": "done"}\r\n\r\n'),
)


def read_sse_reference(text: str) -> list[tuple[str, Any]]:
    """The check's own reader, as the lesson's solution reads: (event name, data text) for each block of a
    Server-Sent Events text. A line ends at \r\n, \n or a lone \r, as the SSE standard says (and lesson 14's
    reader), and nowhere else."""
    return _read_blocks(re.sub(r"\r\n|\r", "\n", text))


def _read_blocks(text: str) -> list[tuple[str, Any]]:
    """The events of a text whose lines all end at \n: blocks split at blank lines (a line of spaces is no blank
    line: it is skipped). The last event: line names the block; one with nothing after it, as the SSE standard and
    lesson 14's reader say, names it "message"."""
    events = []
    for block in text.split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            if line.startswith("event:"):
                name = line[len("event:"):].strip() or "message"
            elif line.startswith("data:"):
                data.append(line[len("data:"):].removeprefix(" "))
        if data:
            events.append((name, "\n".join(data)))
    return events


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
# Event names the service sends, and others a stream may carry: a reader must take the name from the line.
_NAMES = ("start", "reply_delta", "tool_call", "observation", "end", "final", "error", "step", "usage", "ping",
          "status_update", "message")
_TEXTS = ("Thought: ", "It is on its way.", "订单 {id} 已签收", "退款已提交，退款单号 RF2026063000{n:02d}", "",
          "Action: queryOrder", "快递 SF{sf} 在派送中 🚚", "a \"quoted\" word", "line one\nline two", "¥1999.00",
          "Where is order {id}?", "  spaces  ")
_KEYS = ("text", "answer", "name", "input", "session_id", "query", "step", "reason", "note", "内容")
_COMMENTS = (": keep-alive", ":", ":ping", ": data: {this is not data}", ": event: not-a-name", ":注释")


def _value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(_TEXTS).format(id=rng.randint(10000, 99999), n=rng.randint(1, 99),
                                         sf=rng.randint(10**9, 10**10 - 1))
    if roll < 0.8:
        return rng.randint(0, 12000)
    return rng.choice((None, True, False, [rng.randint(1, 99), "二"], {"orderId": str(rng.randint(10000, 99999))}))


def _data(rng: random.Random) -> dict:
    return {key: _value(rng) for key in rng.sample(_KEYS, rng.randint(1, 4))}


def _data_lines(data: dict, rng: random.Random, *, lines: int = 1) -> list[str]:
    """`data` as JSON on `lines` data: lines (cut between JSON tokens, where a newline is only white space), each
    with or without the one space after 'data:'."""
    if lines == 1:
        parts = [json.dumps(data, ensure_ascii=rng.random() < 0.3)]
    else:
        parts = json.dumps(data, ensure_ascii=False, indent=rng.choice((None, 1, 2))).split("\n")
        if len(parts) == 1:  # no indent: cut after the commas instead
            pieces = parts[0].split(", ")
            parts = [", ".join(pieces[:1]), *([", ".join(pieces[1:])] if pieces[1:] else [])]
    return [f"data:{rng.choice((' ', ' ', ''))}{part}" for part in parts]


def _block(rng: random.Random, name: str | None, data: dict, *, lines: int = 1, comments: bool = False) -> list[str]:
    block = [f"event:{rng.choice((' ', ' ', ''))}{name}"] if name is not None else []
    block += _data_lines(data, rng, lines=lines)
    if comments:
        block.insert(rng.randint(0, len(block)), rng.choice(_COMMENTS))
    return block


def _stream(blocks: list[list[str]], end: str = "\n") -> str:
    return "".join(end.join(block) + end + end for block in blocks)


def _named_streams(rng: random.Random) -> Iterator[tuple]:
    # (the service's own stream, with its id: lines, is _streams_with_ids')
    yield ("",)
    for size in (1, 1, 2, 3, 3, 4, 5, 6, 8, 12):
        yield (_stream([_block(rng, rng.choice(_NAMES), _data(rng)) for _ in range(size)]),)
    # a name is the line's text as written: capitals and a hyphen kept
    yield ('event: Done\ndata: {"answer": "It is on its way."}\n\n',)
    yield ('event: approval-requested\ndata: {"approval_id": "a1", "tool": "applyRefund"}\n\n',)
    yield ('event: reply_delta\ndata: {"text": "."}\n\n' * 2,)  # two blocks alike are two events


_ID_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _streams_with_ids(rng: random.Random) -> Iterator[tuple]:
    """Streams whose blocks carry an id: line, as the service's do (`<22-character stream id>.<n>`), before the
    event: line or after it. Drawn from a generator of their own, so the other rules' inputs stay as they were."""
    yield (SSE_EXERCISE_STREAMS[0][1],)
    own = random.Random("id: lines")
    for _ in range(8):
        stream_id = "".join(own.choice(_ID_CHARACTERS) for _ in range(22))
        blocks = []
        for n in range(own.randint(1, 4)):
            block = _block(own, own.choice((None, *_NAMES, *_NAMES)), _data(own))
            block.insert(0 if own.random() < 0.7 else 1, f"id:{own.choice((' ', ' ', ''))}{stream_id}.{n}")
            blocks.append(block)
        yield (_stream(blocks),)


def _streams_with_comments(rng: random.Random) -> Iterator[tuple]:
    yield (SSE_EXERCISE_STREAMS[1][1],)
    for _ in range(10):
        blocks = []
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.4:  # a block of comments only, as a keep-alive is: no event
                blocks.append([rng.choice(_COMMENTS) for _ in range(rng.randint(1, 2))])
            blocks.append(_block(rng, rng.choice(_NAMES), _data(rng), comments=rng.random() < 0.5))
        yield (_stream(blocks),)
    yield (_stream([[rng.choice(_COMMENTS)] for _ in range(3)]),)  # nothing but keep-alives: no event at all
    # a ':' line is a comment whatever follows the colon, a field's name too (':data: …' holds no data)
    yield ('event: end\n:data: {"x": 1}\ndata: {"answer": "done"}\n\n',)
    yield ('event: end\n:event: ping\ndata: ok\n\n',)


def _streams_with_data_on_several_lines(rng: random.Random) -> Iterator[tuple]:
    yield (SSE_EXERCISE_STREAMS[2][1],)
    for _ in range(10):
        blocks = [_block(rng, rng.choice(_NAMES), _data(rng), lines=rng.choice((1, 2, 3)))
                  for _ in range(rng.randint(1, 4))]
        yield (_stream(blocks),)
    yield from _text_data_lines(rng)


def _streams_with_unnamed_events(rng: random.Random) -> Iterator[tuple]:
    yield (SSE_EXERCISE_STREAMS[3][1],)
    yield (SSE_EXERCISE_STREAMS[4][1],)
    for _ in range(10):
        blocks = [_block(rng, rng.choice((None, None, *_NAMES)), _data(rng), lines=rng.choice((1, 1, 2)))
                  for _ in range(rng.randint(2, 5))]
        yield (_stream(blocks),)


def _streams_with_windows_line_ends(rng: random.Random) -> Iterator[tuple]:
    yield (SSE_EXERCISE_STREAMS[5][1],)
    for _ in range(8):
        blocks = [_block(rng, rng.choice((None, *_NAMES)), _data(rng), lines=rng.choice((1, 2)),
                         comments=rng.random() < 0.3) for _ in range(rng.randint(1, 4))]
        yield (_stream(blocks, end="\r\n"),)


def _comment_read(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer read a ':' line that holds a field's name (':data: {"x": 1}') as that
    field's line, that."""
    texts = [text for pair in got for text in pair if isinstance(text, str)]
    right_texts = [text for pair in expected for text in pair]
    for line in re.split(r"\r\n|\r|\n", args[0]):
        field, colon, value = line[1:].partition(":")
        value = value.strip()
        if (line.startswith(":") and colon and field.strip() in ("event", "data") and value
                and any(value in text for text in texts) and not any(value in text for text in right_texts)):
            return "A line that starts with ':' is a comment, whatever follows (':data: …' too)."
    return _first_difference(args, expected, got)


def _crlf_read_as_two(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer read \r\n as two line ends (a lone \r, then \n), that."""
    if "\r\n" in args[0] and got == _read_blocks(args[0].replace("\r", "\n")):
        return "\\r\\n is one line end, not two: look for \\r\\n before a lone \\r."
    return _first_difference(args, expected, got)


def _data_holding_field_names(rng: random.Random) -> Iterator[tuple]:
    """A line's field is the word it starts with: data that holds "event:" or "data:" as text is still data."""
    yield ('event: reply_delta\ndata: {"type": "reply_delta", "step": 1, "text": "event: end"}\n\n',)
    yield ('data: {"text": "an SSE line reads data: {...}"}\n\nevent: end\ndata: {"answer": "done"}\n\n',)


def _text_data_lines(rng: random.Random) -> Iterator[tuple]:
    """Data lines whose join shows: a second line that begins with a space (kept: only the first space after
    data: is not data), an empty line between two, text that is not JSON."""
    yield ("event: reply_delta\ndata: a\ndata:  b\n\n",)
    yield ("event: reply_delta\ndata: 第一行\ndata:\ndata: 第三行\n\n",)
    for _ in range(4):
        lines = [rng.choice(_TEXTS).format(id=rng.randint(10000, 99999), n=rng.randint(1, 99),
                                           sf=rng.randint(10**9, 10**10 - 1)) for _ in range(rng.randint(2, 3))]
        lines = [line for text in lines for line in text.split("\n")]
        block = [f"event: {rng.choice(_NAMES)}", *(f"data:{rng.choice((' ', ' ', ''))}{line}" for line in lines)]
        yield (_stream([block]),)


def _one_space_only(rng: random.Random) -> Iterator[tuple]:
    """One space after data: is not data; any more are (and so are spaces at the data's end)."""
    # One named block each, its data a JSON object or list: this rule comes first, and a reader wrong on anything
    # else (one that reads the JSON too, which the shape check names) must not fail here.
    yield ('event: reply_delta\ndata:  {"x": 1}\n\n',)
    yield ('event: reply_delta\ndata:   {"text": "It is"}\n\n',)
    yield ('event: end\ndata: {"answer": "done"}  \n\n',)
    yield ('event: observation\ndata:\t["已签收"]\n\n',)
    for _ in range(3):  # drawn: more than one space (or a tab) after data:, or spaces after the data
        text = rng.choice(_TEXTS).format(id=rng.randint(10000, 99999), n=rng.randint(1, 99),
                                         sf=rng.randint(10**9, 10**10 - 1)).split("\n")[0]
        data = json.dumps({"text": text}, ensure_ascii=False)
        before, after = rng.choice((("  ", ""), ("   ", ""), (" \t", ""), (" ", "  "), ("  ", " ")))
        yield (f"event: {rng.choice(_NAMES)}\ndata:{before}{data}{after}\n\n",)
    # JSON written with no space after its colon: the data keeps it so (json.dumps would write one)
    yield ('event: end\ndata: {"n":1}\n\n',)


def _spaces_hint(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer took away more than the one space after data:, that."""
    for (_, data), (_, right_data) in zip([tuple(pair) for pair in got], expected):
        if data == " " + right_data:
            return "Leave out the one space after data: (data: x is 'x')."
        if data == right_data + "\n":
            return "Each data ends with an extra '\\n': join the data lines with '\\n'."
        if data != right_data and isinstance(data, str) and data.strip(" \t") == right_data.strip(" \t"):
            return "Only one space after data: is left out: the data keeps every other space as sent."
    return _first_difference(args, expected, got)


def _joined_hint(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer joined the data: lines with something other than a newline."""
    for (_, data), (_, right_data) in zip([tuple(pair) for pair in got], expected):
        joiner = next((joiner for joiner in ("", " ", ", ") if data == right_data.replace("\n", joiner)), None)
        if data != right_data and joiner is not None:
            return f"Join a block's data: lines with a newline (\"\\n\".join), not with {joiner!r}."
    return _first_difference(args, expected, got)


def _misread(text: str, *, is_name: Callable[[str], bool] = lambda line: line.startswith("event:"),
             name_of: Callable[[str], str] = lambda line: line[len("event:"):].strip() or "message",
             is_data: Callable[[str], bool] = lambda line: line.startswith("data:"),
             data_of: Callable[[str], str] = lambda line: line[len("data:"):].removeprefix(" "),
             named_is_an_event: bool = False, first_name_only: bool = False,
             every_block: bool = False, name_carried: bool = False) -> list[tuple[str, str]]:
    """The reference's reading with one piece swapped for a mistake's: what an answer that made it returns
    (`first_name_only`: a block named by its first event: line, not its last; `every_block`: each block an event,
    one with no data: line too, the empty text after the last blank line among them; `name_carried`: the name of a
    block with no data handed on to the next block, the name reset only once an event is made)."""
    events, carried = [], "message"
    for block in re.sub(r"\r\n|\r", "\n", text).split("\n\n"):
        name, data, named = carried if name_carried else "message", [], False
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            if is_name(line):
                if not (first_name_only and named):
                    name, named = name_of(line), True
            elif is_data(line):
                data.append(data_of(line))
        if data or (named_is_an_event and named) or every_block:
            events.append((name, "\n".join(data)))
        carried = name if not data else "message"
    return events


def _with_a_space(field: str) -> dict:
    """_misread's pieces for a reader that takes `field` + ": " (a space required) for the field's line."""
    if field == "event":
        return {"is_name": lambda line: line.startswith("event: ")}
    return {"is_data": lambda line: line.startswith("data: "), "data_of": lambda line: line[len("data: "):]}


def _any_case(field: str) -> dict:
    """_misread's pieces for a reader that finds `field`'s lines in any case (Event:, DATA:)."""
    if field == "event":
        return {"is_name": lambda line: line.lower().startswith("event:")}
    return {"is_data": lambda line: line.lower().startswith("data:")}


_LSTRIPPED = tuple({"name_of": lambda line, chars=chars, strip=strip: (line.lstrip(chars).strip() if strip
                                                                       else line.lstrip(chars))}
                   for chars in ("event:", "event: ") for strip in (True, False))
_UNSTRIPPED = ({"name_of": lambda line: line[len("event:"):]},
               {"name_of": lambda line: line[len("event:"):] or "message"})
_CUT_AT_7 = ({"name_of": lambda line: line[7:]}, {"name_of": lambda line: line[7:].strip()})


def _json_written_again(data: Any, right_data: str) -> bool:
    """Whether `data` is `right_data` read as JSON and written again with json.dumps (its spaces and escapes)."""
    try:
        value = json.loads(right_data)
    except ValueError:
        return False
    return data != right_data and data in (json.dumps(value), json.dumps(value, ensure_ascii=False)) and (
        data != right_data.replace("\n", ""))  # data: lines joined with no newline: the joining rule's hint says it


def _mistake_seen(text: str, expected: list, got: list) -> str | None:
    """The mistake an answer that returned `got` most likely made, when its reading is that mistake's exactly;
    None when none fits."""
    if got == [(data, name) for name, data in expected]:
        return "Each pair is (event name, data), name first."
    if got == list(dict.fromkeys(expected)):
        return "Two blocks alike are two events: keep each, in order."
    if got == _misread(text, named_is_an_event=True):
        return "A block with an event: line but no data: line is no event."
    if got == _misread(text, name_carried=True):
        return ("The block before had no data: its event: line names only that block, and gives no event; the next "
                "block starts as \"message\".")
    if got == _misread(text, every_block=True):
        # reported under whichever rule's stream it met first (one space after data:, on its first): say what it is
        return ("Its events' names and data are right, but it made an event of a block with no data: line: such a "
                "block gives none, nor does the empty text after the stream's last blank line.")
    if re.search(r"^data: ?$", text, re.MULTILINE) and got == _misread(
            text, is_data=lambda line: line.startswith("data:") and line[len("data:"):].removeprefix(" ") != ""):
        return "A data: line with nothing after it is a data: line too: it adds an empty line ('') to the data."
    spaced = [field for field in ("event", "data") if got == _misread(text, **_with_a_space(field))]
    if not spaced and got == _misread(text, **_with_a_space("event"), **_with_a_space("data")):
        spaced = ["event", "data"]
    if spaced:
        return " ".join(f"{field}:x, with no space after the colon, is {'a data' if field == 'data' else 'an event:'} "
                        "line too." for field in spaced)
    if any(got == _misread(text, **_any_case(field)) for field in ("event", "data")) or got == _misread(
            text, **_any_case("event"), **_any_case("data")):
        return "Field names are case-sensitive (the SSE standard): Event: is not event:, and its line is skipped."
    if any(got == _misread(text, **unstripped) for unstripped in _UNSTRIPPED):
        # before lstrip's hint: on 'event: end' the two read the same, and this is the likelier mistake
        return "The name is the text after event:, stripped: strip every space and tab around it."
    if any(got == _misread(text, **lstripped) for lstripped in _LSTRIPPED):
        why = "lstrip('event:') strips those letters, not the prefix: use line[len('event:'):]."
        if any(got == _misread(text, **cut) for cut in _CUT_AT_7):  # the same names as line[7:] would read
            why = f"line[7:] counts a space that may not be there, and {why}"
        return why
    for (name, data), (right_name, right_data) in zip(got, expected):
        if name == right_name and _json_written_again(data, right_data):
            return "The data is the text as sent: json.dumps wrote it again."
    return None


def _first_difference(args: tuple, expected: list, got: list) -> str | None:
    """Where the answer's events part from the reference's, in a few words: the whole lists, cut to fit a
    failure, can hide it. Where the answer's reading is a known mistake's exactly, that mistake too."""
    got = [tuple(pair) for pair in got]
    return _mistake_seen(args[0], expected, got) or _where_they_part(expected, got)


def _where_they_part(expected: list, got: list) -> str | None:
    """The first event where `got` (a list of pairs) parts from `expected`, or how many events each has."""
    for place, ((name, data), (right_name, right_data)) in enumerate(zip(got, expected), 1):
        if name != right_name:
            return f"Event {place}'s name: {_brief(name, 25)}, expected {_brief(right_name, 25)}."
        if data != right_data:
            return f"Event {place}'s data: {_brief(data, 30)}, expected {_brief(right_data, 30)}."
    if len(got) != len(expected):
        return f"It read {len(got)} event(s), expected {len(expected)}."
    return None


def _name_as_written(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where a name differs only in case or was cut short, that."""
    for (name, _), (right_name, _) in zip([tuple(pair) for pair in got], expected):
        if name == right_name:
            continue
        if isinstance(name, str) and name.lower() == right_name.lower():
            return f"Event name {_brief(name, 25)}, expected {_brief(right_name, 25)}: keep its case as written."
        if isinstance(name, str) and name and right_name.startswith(name):
            colons = ", colons too (not split(':')[1])" if right_name[len(name)] == ":" else ""
            return (f"Event name {_brief(name, 25)}, expected {_brief(right_name, 25)}: read all the text after "
                    f"event:{colons}.")
        break
    return _first_difference(args, expected, got)


def _field_by_its_start(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where a data: line holds the word event: (an answer that looked for it anywhere), that."""
    if any(line.startswith("data:") and "event:" in line for line in args[0].split("\n")):
        return "A line is an event: line only when it starts with event:; this data: line holds it as text."
    return _first_difference(args, expected, got)


def _id_not_a_name(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer named an event after its id: line, that."""
    ids = {line.partition(":")[2].strip() for line in args[0].split("\n") if line.startswith("id:")}
    if any(pair[0] in ids for pair in got):
        return "It took the id: line's value for the event's name: id: only numbers the event."
    return _first_difference(args, expected, got)


def _name_after_data(rng: random.Random) -> Iterator[tuple]:
    """A block's event: line names it wherever it stands in the block, after its data: lines too."""
    yield ('data: {"answer": "It is on its way."}\nevent: end\n\n',)
    yield ('event: tool_call\ndata: {"name": "queryOrder"}\n\ndata: {"text": "signed"}\nevent: observation\n\n',)


def _name_placed_late(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer missed an event: line that comes after the data, that."""
    if any(name == "message" for name, _ in (tuple(pair) for pair in got)):
        return "An event: line names its block even when it comes after the data: lines."
    return _first_difference(args, expected, got)


def _empty_data(rng: random.Random) -> Iterator[tuple]:
    """A data: line with nothing after it is data too: its block is an event, with the data ''."""
    yield ('event: ping\ndata:\n\nevent: end\ndata: {"answer": "done"}\n\n',)
    yield ("data: \n\nevent: reply_delta\ndata:\ndata:\n\n",)


def _empty_data_dropped(args: tuple, expected: list, got: list) -> str | None:
    if len(got) < len(expected):
        return "A block with a data: line is an event even when the data is empty ('')."
    return _first_difference(args, expected, got)


def _other_line_breaks(rng: random.Random) -> Iterator[tuple]:
    """A line ends at \r\n, \n or a lone \r (the SSE standard's three), not at the other line breaks
    str.splitlines() knows (U+2028, U+0085), which JSON text may hold as they are."""
    yield ('event: reply_delta\ndata: {"text": "第一行\u2028第二行"}\n\nevent: end\ndata: {"answer": "a\u0085b"}\n\n',)
    # a lone \r (a carriage return with no \n after it) ends a line, in the middle of JSON text too
    yield ('event: reply_delta\ndata: {"text": "第一行\r第二行"}\n\n',)
    yield ("event: reply_delta\ndata: a\rdata: b\n\n",)  # two data: lines: 'a\nb'
    yield ('data: {"text": "It is"}\r\rdata: {"text": "on its way"}\n\nevent: end\ndata: done\n\n',)  # \r\r: a blank line
    # \n then \r is two line ends (a blank line); \r then \r\n too
    yield ("event: start\ndata: a\n\rdata: b\r\r\nevent: end\ndata: c\n\n",)
    # every line ended by a lone \r, which the standard allows (drawn from a generator of their own, so the other
    # rules' inputs stay as they were)
    own = random.Random("lone \\r line ends")
    for _ in range(3):
        blocks = [_block(own, own.choice((None, *_NAMES)), _data(own), lines=own.choice((1, 2)),
                         comments=own.random() < 0.3) for _ in range(own.randint(1, 4))]
        yield (_stream(blocks, end="\r"),)


def _line_end_hint(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer kept a lone carriage return in the data (only \r\n and \n ended
    its lines), or ended lines where str.splitlines() does, that."""
    text = args[0]
    if "\r" in text.replace("\r\n", "") and got == _read_blocks(text.replace("\r\n", "\n")):
        return "A lone \\r ends a line too, as the SSE standard and lesson 14's read_events say."
    if got == _read_blocks("\n".join(text.splitlines())):
        return "str.splitlines() also breaks at U+2028, U+0085 and more: split at \\r\\n, \\n and \\r only."
    return _first_difference(args, expected, got)


def _names_with_spaces(rng: random.Random) -> Iterator[tuple]:
    """Names with spaces and tabs around them, as a server may write them: stripped, they are the name."""
    yield ('event:   end\ndata: {"answer": "It is on its way."}\n\n',)
    yield ('event: start  \ndata: {"session_id": "s1"}\n\n',)
    yield ('event:\ttool_call\t\ndata: {"name": "queryOrder", "input": "88231"}\n\n',)
    yield ('event: \t observation \t \r\ndata: {"text": "已签收"}\r\n\r\n',)
    for _ in range(4):
        blocks = []
        for _ in range(rng.randint(1, 3)):
            before, after = rng.choice((("  ", ""), ("", " "), ("\t", ""), (" \t", "  "), ("   ", "\t"), ("", "")))
            blocks.append([f"event:{before}{rng.choice(_NAMES)}{after}", *_data_lines(_data(rng), rng)])
        yield (_stream(blocks),)
    yield ('event: order:update\ndata: {}\n\n',)  # a name may hold a colon: all the text after event: is it


def _name_not_stripped(args: tuple, expected: list, got: list) -> str | None:
    """_name_as_written, and where a name kept spaces or tabs around it, that."""
    for (name, _), (right_name, _) in zip([tuple(pair) for pair in got], expected):
        if isinstance(name, str) and name != right_name and name.strip() == right_name:
            return (f"Event name {_brief(name, 25)}, expected {_brief(right_name, 25)}: strip the name, every space "
                    "and tab around it.")
    return _name_as_written(args, expected, got)


def _no_blank_line_at_the_end(rng: random.Random) -> Iterator[tuple]:
    """The text ends after a whole line with no blank line after the last block: that block is an event too, as
    some servers end a stream (and as the package's reader reads it)."""
    yield ('event: reply_delta\ndata: {"text": "It is"}\n\nevent: end\ndata: {"answer": "It is on its way."}\n',)
    yield ('data: {"n": 1}\n\ndata: {"n": 2}',)


def _other_fields(rng: random.Random) -> Iterator[tuple]:
    """Lines of other fields, some whose names begin with event or data: none is an event: or data: line."""
    yield ('retry: 3000\n\nevent: start\ndata: {"session_id": "s1"}\n\n',)
    yield ('event: reply_delta\neventId: 7\ndata: {"text": "hi"}\n\n',)
    yield ('event: end\ndata: {"answer": "ok"}\ndatatype: json\n\n',)
    yield ('events: 2\ndata: {"n": 1}\n\ndata_source: shop\nevent: end\ndata: {"n": 2}\n\n',)


def _names_without_data(rng: random.Random) -> Iterator[tuple]:
    """A block with an event: line and no data: line is no event: its name names nothing."""
    yield ("event: ping\n\nevent: end\ndata: done\n\n",)
    yield ("event: end\ndata: x\n\nevent: ping\n",)
    # nor is it the next block's name: a block after it with no event: line is "message"
    yield ('event: ping\n\ndata: {"note": "unnamed"}\n\n',)
    yield ('event: tool_call\n: keep-alive\n\ndata: {"text": "已签收"}\n\nevent: end\ndata: {"answer": "done"}\n\n',)


def _fields_in_another_case(rng: random.Random) -> Iterator[tuple]:
    """Field names are case-sensitive, as the SSE standard says: Event: and Data: are other fields, skipped."""
    yield ("Event: end\ndata: x\n\n",)
    yield ("event: end\nData: x\n\ndata: y\n\n",)


def _another_field_read(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer took another field's line for an event: or data: line, that."""
    if isinstance(got, list) and got != expected:
        return ("A line is an event: or data: line only when it starts with event: or data:, colon and all: "
                "eventId:, datatype: and retry: lines are skipped.")
    return _first_difference(args, expected, got)


def _last_block_dropped(args: tuple, expected: list, got: list) -> str | None:
    if isinstance(got, list) and len(got) == len(expected) - 1:
        return "The end of the text ends the last block too: it is an event even with no blank line after it."
    return _first_difference(args, expected, got)


def _names_with_spaces_inside(rng: random.Random) -> Iterator[tuple]:
    """Names with spaces inside them: all the text after event:, stripped only around it, is the name."""
    yield ('event: tool call\ndata: {"name": "queryOrder"}\n\n',)
    yield ('event:  reply  delta \ndata: {"text": "It is"}\n\n',)
    yield ('event: 订单 更新\ndata: {"orderId": "88231"}\n\nevent:\tapproval\trequested\ndata: {}\n\n',)


def _spaces_inside_cut(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where a name lost the spaces inside it (or the words after its first), that."""
    for (name, _), (right_name, _) in zip([tuple(pair) for pair in got], expected):
        if isinstance(name, str) and name != right_name and (name.split() == right_name.split()
                                                             or right_name.startswith(name)):
            return (f"Event name {_brief(name, 25)}, expected {_brief(right_name, 25)}: the name is all the text "
                    "after event:, stripped only around it: the spaces inside it stay.")
    return _first_difference(args, expected, got)


def _lines_not_quite_fields(rng: random.Random) -> Iterator[tuple]:
    """Lines that are not event: or data: lines, though they look like them: indented ones, and ones with a
    full-width colon (：). Each is another field's, skipped."""
    yield (' data: {"text": "indented"}\ndata: {"text": "kept"}\n\n',)
    yield ("event: end\n\tevent: ping\ndata: done\n\n",)
    yield ("event：end\ndata: x\n\ndata：{\"a\": 1}\ndata: y\n\n",)


def _not_quite_a_field(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer read an indented line, or one with a full-width colon, as an event:
    or data: line, that."""
    lines = re.split(r"\r\n|\r|\n", args[0])
    if any(line[:1] in (" ", "\t") and line.lstrip().startswith(("event:", "data:")) for line in lines):
        return ("A line is an event: or data: line only when it starts with event: or data: itself: an indented "
                "line is another field's, skipped (do not strip a line before you look at its start).")
    if any(line.startswith(("event：", "data：")) for line in lines):
        return "Only the ASCII colon makes a field's line: event：end (a full-width ：) is another field's, skipped."
    return _first_difference(args, expected, got)


def _bare_event_lines(rng: random.Random) -> Iterator[tuple]:
    """event: lines with nothing after them, or only spaces and tabs: the name is empty, so the block is "message",
    as the SSE standard says and lesson 14's reader reads (not '', nor the block before's name)."""
    yield ('event:\ndata: {"text": "no name"}\n\n',)
    yield ('event: \ndata: x\n\nevent: end\ndata: y\n\n',)
    yield ('event:  \t \ndata: {"n": 1}\n\n',)
    yield ('event: tool_call\ndata: {"name": "queryOrder"}\n\nevent:\ndata: {"note": "unnamed"}\n\n',)
    yield ('event:\r\ndata: {"answer": "done"}\r\n\r\n',)


def _bare_name_kept(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where a bare event: line named its block '' (or its spaces), that."""
    for (name, _), (right_name, _) in zip([tuple(pair) for pair in got], expected):
        if right_name == "message" and isinstance(name, str) and name != right_name and not name.strip():
            return (f"Event name {_brief(name, 25)}, expected 'message': an event: line with nothing after it names "
                    "nothing, so the block is \"message\", as with no event: line (the SSE standard).")
    return _first_difference(args, expected, got)


def _lines_of_spaces(rng: random.Random) -> Iterator[tuple]:
    """Lines of only spaces or tabs inside a block: no blank line (the SSE standard's blank line is empty), so they
    end no block; each is a line of an unknown field, skipped."""
    yield ("data: a\n \ndata: b\n\n",)
    yield ('event: tool_call\ndata: {"name": "queryOrder"}\n\t\ndata: {"input": "88231"}\n\n',)
    yield ('event: end\n   \ndata: {"answer": "done"}\n\n',)
    yield ("data: x\r\n  \r\ndata: y\r\n\r\n",)


def _spaces_line_read_as_blank(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer took a line of only spaces or tabs for a blank line, that."""
    text = re.sub(r"\r\n|\r", "\n", args[0])
    if got != expected and got == _read_blocks(re.sub(r"(?m)^[ \t]+$", "", text)):
        return ("A line of only spaces or tabs is no blank line: it ends no block (skip it, as another field's "
                "line); only an empty line ends a block.")
    return _first_difference(args, expected, got)


def _two_event_lines(rng: random.Random) -> Iterator[tuple]:
    """Blocks with two event: lines (or three): the last one names the block, as the SSE standard says."""
    yield ('event: start\nevent: end\ndata: {"answer": "done"}\n\n',)
    yield ('event: tool_call\ndata: {"name": "queryOrder"}\nevent: observation\n\n',)
    yield ("event: reply_delta\nevent: reply_delta\nevent: final\ndata: a\ndata: b\n\n",)
    yield ("event: ping\ndata: 1\n\nevent: start\nid: 2\nevent: end\ndata: 2\n\n",)
    # the last one bare: it names the block too, "message" (the standard: it sets the name to ""), not the one before
    yield ('event: end\nevent:\ndata: {"answer": "done"}\n\n',)


def _first_name_kept(args: tuple, expected: list, got: list) -> str | None:
    """_first_difference, and where the answer named a block by its first event: line, not its last, that."""
    if got != expected and got == _misread(args[0], first_name_only=True):
        return "A block with two event: lines is named by the last: each event: line replaces the name before it."
    return _first_difference(args, expected, got)


SSE_RULES = (
    Rule("one space after data: is not data; any other space is (data:  x is ' x')", _one_space_only, _spaces_hint),
    Rule("a blank line ends a block; each block with data is one (name, data) pair, in order", _named_streams,
         _name_as_written),
    Rule("a ':' line is a comment (a block of only comments gives no event)", _streams_with_comments,
         _comment_read),
    Rule("a block's data: lines are joined with newlines (data: a, then data:  b, is 'a\\n b')",
         _streams_with_data_on_several_lines, _joined_hint),
    Rule("a block with no event: line is named \"message\" (not the block before's name)",
         _streams_with_unnamed_events, _first_difference),
    Rule("Windows line ends (\\r\\n) read as \\n do", _streams_with_windows_line_ends, _crlf_read_as_two),
    Rule("an id: line (the service sends one) numbers the event; it is not its name or data",
         _streams_with_ids, _id_not_a_name),
    Rule("a line is an event: or data: line by how it starts: data holding 'event:' is still data",
         _data_holding_field_names, _field_by_its_start),
    Rule("a block's event: line names it wherever it stands in the block, after its data: lines too",
         _name_after_data, _name_placed_late),
    Rule("a block with a data: line is an event, even when the data is empty ('')", _empty_data, _empty_data_dropped),
    Rule("a line ends at \\r\\n, \\n or a lone \\r (as the SSE standard says), and nowhere else: not at U+2028 or "
         "U+0085, which the data may hold", _other_line_breaks, _line_end_hint),
    Rule("the end of the text ends the last block too, with no blank line after it", _no_blank_line_at_the_end,
         _last_block_dropped),
    Rule("a line of any other field is skipped (retry:, eventId:, datatype:): only event:, data: and id: lines count",
         _other_fields, _another_field_read),
    Rule("a block's name is the text after event:, stripped: spaces and tabs around it are not part of it "
         "('event:  end\\t' names 'end')", _names_with_spaces, _name_not_stripped),
    Rule("a block with an event: line but no data: line gives no event ('event: ping' alone is none), and names no "
         "block after it",
         _names_without_data, _first_difference),
    Rule("field names are case-sensitive: an Event: or Data: line is another field's, skipped",
         _fields_in_another_case, _first_difference),
    Rule("a name is all the text after event:, spaces inside it too ('event: tool call' names 'tool call')",
         _names_with_spaces_inside, _spaces_inside_cut),
    Rule("a line that only looks like an event: or data: line is another field's, skipped: an indented one "
         "(' data: x'), one with a full-width colon ('data：x')", _lines_not_quite_fields, _not_quite_a_field),
    Rule("an event: line with nothing after it (or only spaces or tabs) names its block \"message\", as no event: "
         "line does", _bare_event_lines, _bare_name_kept),
    Rule("a line of only spaces or tabs is not a blank line: it ends no block, and is skipped", _lines_of_spaces,
         _spaces_line_read_as_blank),
    Rule("a block with two event: lines is named by the last one", _two_event_lines, _first_name_kept),
)


def _list_of_pairs(value: object) -> str | None:
    if isinstance(value, Iterator):
        return "it returns a generator (yield): return a list of (event name, data) pairs"
    if isinstance(value, tuple):
        return f"it returned a tuple, {_brief(value, 40)}: return a list of (event name, data) pairs"
    if not (isinstance(value, list) and all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in value)):
        return f"it returned {_brief(value, 50)}: return a list of (event name, data) pairs"
    data = next((data for _, data in value if not isinstance(data, str)), "")
    if isinstance(data, (dict, list, int, float)):  # bool is an int
        return f"it returned data {_brief(data, 40)}: the data is the text of the data: lines, not read as JSON"
    if not isinstance(data, str):
        return f"it returned data {_brief(data, 40)}: the data is the text of the data: lines, a str"
    return None


def _a_copy_of(answer: Callable[..., Any]) -> Callable[..., Any]:
    """`answer`, returning a copy of what it returns: an answer that hands back one module-level list each call
    would otherwise change its own first answer too, and the state it keeps would not show. A value that cannot be
    copied (a generator) is returned as it is, for the shape check to name."""
    def copied(*args: Any) -> Any:
        value = answer(*args)
        try:
            return copy.deepcopy(value)
        except Exception:  # noqa: BLE001 - the learner's value, of any kind: its form is judged, not copied
            return value

    return copied


@grades("Exercise 1", spec=Spec(SSE_RULES))
def check_sse_reader(read_events: Callable[[str], list] | None) -> None:
    """19, exercise 1: read_events(text) -> [(event name, data text), ...], on streams drawn from the spec (the six of
    SSE_EXERCISE_STREAMS among them)."""
    exercise = "Exercise 1"
    if read_events is None:
        return _not_attempted(exercise, "Define read_events(text) in the cell above.")
    if not callable(read_events):
        _fail(exercise, f"read_events should be a function of the stream's text, got {type(read_events).__name__}")
    tried = agree_on(exercise, "check_sse_reader", SSE_RULES, _a_copy_of(read_events), read_sse_reference, shape=_list_of_pairs,
                     read=lambda pairs: [tuple(pair) for pair in pairs], call="read_events(text)",
                     show=lambda args: _brief(args[0], 34))
    return _passed(exercise, f"{tried} generated streams read as the spec says: comments skipped, data lines "
                             "joined, unnamed events called \"message\", \\r\\n and \\r line ends too.")


def registry_with_a_broken_courier(shop, clock=None):
    """The shop's tools, but queryLogistics raises as a courier's API that is down would (lesson 19's tests and
    exercise 2): the loop must turn that into an error Observation, and the service still answer 200."""
    def courier_down(text: str) -> str:
        raise ConnectionError("the courier's tracking API did not answer")

    return ToolRegistry([
        FunctionTool(tool.name, tool.description, courier_down, parameters=tool.parameters)
        if tool.name == "queryLogistics" else tool
        for tool in shop_tools(shop, clock)
    ])


SERVING_EXERCISE_REQUESTS = (
    "malformed JSON", "no query field", "body over the limit", "GET on /agent/invoke", "unknown session_id",
    "no API key", "a tool raises mid-run",
)


@grades("Exercise 2", spec=Spec(fixed="a prediction of what a run shows: the status code of each of the seven fixed "
                                       "requests, compared with what a service started by the check answers them"))
def check_status_predictions(predicted_status: dict | None) -> None:
    """19, exercise 2: the status code the service answers each request of SERVING_EXERCISE_REQUESTS with.
    The check starts a service (an API key, a 2 KB body limit, queryLogistics broken) and sends them."""
    exercise = "Exercise 2"
    if predicted_status is None:
        return _not_attempted(exercise, "Set predicted_status = {...} in the cell above.")
    if not isinstance(predicted_status, dict) or set(predicted_status) != set(SERVING_EXERCISE_REQUESTS):
        _fail(exercise, f"predicted_status should be a dict with the keys {list(SERVING_EXERCISE_REQUESTS)}, "
                        f"each an HTTP status code (a whole number){_keys_told(predicted_status)}")
    for name, status in predicted_status.items():
        # a number, as the exercise asks: 400.0 is the number 400 (a string, a bool or 400.5 is not a status code)
        whole_float = isinstance(status, float) and status.is_integer()
        if isinstance(status, bool) or not (isinstance(status, int) or whole_float):
            _fail(exercise, f"{shown(name)}: predict a status code, a whole number such as 200, got {shown(status)}")
    answers = _ask_the_service()
    for name in SERVING_EXERCISE_REQUESTS:
        status, body = answers[name]
        if predicted_status[name] != status:
            said = body.get("error", {}).get("message") if isinstance(body, dict) else None
            why = f': "{said}"' if said else " (the run ended, and the trace holds the tool's error as an Observation)"
            _fail(exercise, f"{name}: you predicted {predicted_status[name]}, the service answered {status}{why}")
    return _passed(exercise, "every status as the service answered: the client's mistakes are 4xx with a JSON "
                             "error, and a tool that fails mid-run is an Observation inside a 200.")


def _keys_told(predicted: object) -> str:
    """For a dict whose keys are not the seven requests': the keys it lacks and the ones it should not have, each
    of those with the nearest request's name where one is near (a letter's case, a word left out)."""
    if not isinstance(predicted, dict):
        return ""
    missing = [name for name in SERVING_EXERCISE_REQUESTS if name not in predicted]
    unexpected = [key for key in predicted if key not in SERVING_EXERCISE_REQUESTS]
    told = []
    if missing:
        every = len(missing) == len(SERVING_EXERCISE_REQUESTS)
        told.append(f"Missing: {'all seven' if every else ', '.join(map(shown, missing))}.")
    if unexpected:
        keys = []
        for key in unexpected[:3]:
            near = difflib.get_close_matches(key.lower(), [name.lower() for name in missing], n=1, cutoff=0.6) if (
                isinstance(key, str)) else []
            meant = next((name for name in missing if near and name.lower() == near[0]), None)
            keys.append(_brief(key, 30) + (f" (did you mean {shown(meant)}?)" if meant else ""))
        more = f" and {len(unexpected) - 3} more" if len(unexpected) > 3 else ""
        told.append(f"Not a request of the exercise: {', '.join(keys)}{more}.")
    return "\n" + " ".join(told)


def _ask_the_service() -> dict[str, tuple[int, Any]]:
    config = ServiceConfig(api_key="exercise-key", max_body_bytes=2048, session_store=":memory:", shop_db=":memory:",
                           now=COURSE_NOW, max_steps=6)
    key = {"Authorization": "Bearer exercise-key"}
    with ServiceServer(config, llm=LlmClient.classroom, tools=registry_with_a_broken_courier) as server:
        invoke = server.url + "/agent/invoke"
        sent = {
            "malformed JSON": lambda: requests.post(invoke, data='{"query": "Where is order 88231?"',
                                                    headers={**key, "Content-Type": "application/json"}),
            "no query field": lambda: requests.post(invoke, json={"question": "Where is order 88231?"}, headers=key),
            "body over the limit": lambda: requests.post(invoke, json={"query": "x" * 4000}, headers=key),
            "GET on /agent/invoke": lambda: requests.get(invoke, headers=key),
            "unknown session_id": lambda: requests.post(invoke, json={"query": "Hi", "session_id": "abc"}, headers=key),
            "no API key": lambda: requests.post(invoke, json={"query": "Where is order 88231?"}),
            "a tool raises mid-run": lambda: requests.post(invoke, json={"query": "Where is my parcel, order 88231?"},
                                                           headers=key, timeout=300),
        }
        answers = {}
        for name, send in sent.items():
            response = send()
            answers[name] = (response.status_code, response.json())
        return answers
