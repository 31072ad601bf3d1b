"""Lesson 14 (streaming): stop strings on text in pieces, and reading a stream's chunks."""

from __future__ import annotations

import copy
import random
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Self

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _json_or_none, _not_attempted, _passed, grades, shown

STREAMED_STEP = ("Thought: The customer wants the parcel; I need the tracking number first.\n"
                 "Action: queryOrder\nAction Input: 88231\n")
RUN_ON = STREAMED_STEP + 'Observation: {"status": "lost at sea"}\nThought: done\nFinal Answer: It is lost.'
CUT_STREAM_TEXTS = [
    # (text, stop strings, what it is): the replies the check started from; the generated ones grow from them
    (RUN_ON, ["Observation:"], "a step that runs on into an invented Observation"),
    (STREAMED_STEP + "Observed: the order exists.\nObservation: x", ["Observation:"],
     "'Observed' first, which starts like the stop string and is not it"),
    ("Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation: 已签收", ["Observation:"],
     "a Chinese step"),
    (STREAMED_STEP, ["Observation:"], "a step with no stop string in it"),
    (STREAMED_STEP + "Observ", ["Observation:"], "a reply that ends in the start of a stop string, never finished"),
    ("Thought: I know it.\nFinal Answer: signed\nObservation: x", ["Observation:", "\nFinal"],
     "two stop strings, the second one first in the text"),
]


def _pieces_of(text: str, cuts: tuple[int, ...]) -> list[str]:
    points = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in pairwise(points)]


def _cut_stream(pieces, stop):
    """14, exercise 1's answer (the solution's behaviour): hold back only an end that could start a stop string,
    and stop reading once one is complete."""
    held = ""
    for piece in pieces:
        text = held + piece
        found = [text.find(s) for s in stop if s in text]
        if found:
            yield text[: min(found)]
            return
        keep = len(text)
        for i in range(max(len(text) - max(len(s) for s in stop) + 1, 0), len(text)):
            if any(s.startswith(text[i:]) for s in stop):
                keep = i
                break
        held = text[keep:]
        if keep:
            yield text[:keep]
    if held:
        yield held


def _could_go_on(text: str, stop: list[str]) -> bool:
    """Whether `text` holds a stop string, or ends in the start of one (so a reader may hold its end back)."""
    if any(s in text for s in stop):
        return True
    return any(s.startswith(text[i:]) for s in stop for i in range(max(len(text) - len(s) + 1, 0), len(text)))


class _Joined(str):
    """What a generator yielded, joined; `items` are its yields one by one, and `taken` how many pieces it had read
    when it yielded each (a hint tells text held back and let out after the stop from text let out too early)."""

    items: tuple[str, ...]
    taken: tuple[int, ...]

    def __new__(cls, items: list[str], taken: list[int]) -> Self:
        joined = super().__new__(cls, "".join(items))
        joined.items, joined.taken = tuple(items), tuple(taken)
        return joined


def _safe_end(text: str, stop: list[str]) -> int:
    """Where the text safe to show ends: before the longest end of `text` that could start a stop string."""
    for i in range(max(len(text) - max(len(s) for s in stop) + 1, 0), len(text)):
        if any(s.startswith(text[i:]) for s in stop):
            return i
    return len(text)


@dataclass(frozen=True)
class _NotText:
    """What a generator yielded that is not a string (the check joins what it yields)."""

    item: Any


@dataclass(frozen=True)
class _NotAGenerator:
    """What the answer returned when it is no generator (a list made at once, None from a function that prints)."""

    kind: str


def _watched(generator: Callable) -> Callable[[list[str], list[str], str], Any]:
    """`generator` run on pieces handed out one at a time, as a stream delivers them. What comes back is what
    the rule's sentence is about (`watch`): "text", the text it yielded, joined; "at once", what it had yielded
    when it asked for a next piece though nothing in the text so far could start a stop string; "before its end",
    what it had yielded when it asked for a next piece, the text so far ending in what could start one (all before
    that end is safe to show); "reads", how many pieces it took."""

    def run(pieces: list[str], stop: list[str], watch: str) -> Any:
        out: list[Any] = []
        taken = 0
        late: list[str] = []  # the first time safe text was not out when the next piece was asked for
        early: list[str] = []  # the first time what was out was not the text before an end that could start one
        at: list[int] = []  # how many pieces it had read at each yield

        def arriving() -> Iterator[str]:
            nonlocal taken
            for k, piece in enumerate(pieces):
                so_far = "".join(pieces[:k])
                sent = "".join(item for item in out if isinstance(item, str))
                if k and not _could_go_on(so_far, stop) and sent != so_far and not late:
                    late.append(f"held back {shown(so_far[len(sent):])} at piece {k + 1}" if so_far.startswith(sent)
                                else f"{shown(sent)} out at piece {k + 1}")
                if k and not early and not any(s in so_far for s in stop) and sent != so_far[:_safe_end(so_far, stop)]:
                    early.append(f"held back {shown(so_far[len(sent):])} at piece {k + 1}"
                                 if so_far[:_safe_end(so_far, stop)].startswith(sent)
                                 else f"{shown(sent)} out at piece {k + 1}")
                taken += 1
                yield piece

        produced = generator(arriving(), stop)
        if not isinstance(produced, Iterator):  # a list or a string made at once, or None: nothing streams
            return _NotAGenerator("None" if produced is None else f"a {type(produced).__name__}")
        for item in produced:
            out.append(item)  # one at a time: arriving() reads `out` while the generator runs
            at.append(taken)
        wrong = [item for item in out if not isinstance(item, str)]
        if wrong:  # its type alone when it is not plain data (an object's repr changes from call to call)
            plain = isinstance(wrong[0], (bytes, list, tuple, dict, int, float, type(None)))
            return _NotText(wrong[0] if plain else f"a {type(wrong[0]).__name__}")
        if watch == "text":
            return _Joined(out, at)
        if watch == "at once":
            return late[0] if late else "nothing held back"
        if watch == "before its end":
            return early[0] if early else "only that end held back"
        return taken

    return run


def _yields_text(value: Any) -> str | None:
    if isinstance(value, _NotAGenerator):
        return (f"it returned {value.kind}, not a generator: yield each piece of text as soon as it may go out "
                "(a function with yield in it), so the text streams")
    if isinstance(value, _NotText):
        return f"it yielded {_brief(value.item, 40)}: yield the text, as strings"
    return None


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_THOUGHTS = ("Thought: The customer wants the parcel; I need the tracking number first.",
             "Thought: 先查订单 {id}，再查物流。", "Thought: 顾客问的是 {id} 的退款进度。", "Thought: I know enough now.",
             "Thought: Observe the order {id} first 🙂", "Thought: 需要先查询订单。")
_ACTIONS = ("Action: queryOrder\nAction Input: {id}", "Action: queryLogistics\nAction Input: SF{sf}",
            "Action: searchKnowledge\nAction Input: 七天无理由退货", "Action: applyRefund\nAction Input: {id}")
_RUN_ONS = ('Observation: {{"status": "已签收", "orderId": "{id}"}}', "Observation: the parcel is in Hangzhou.",
            "Observation: 订单不存在：{id}", "观察：已签收", "Final Answer: It was signed for.", "Final Answer: 已签收。")
_LOOK_ALIKES = ("Observed: the order exists.", "Obs: none", "Observ", "Observation", "观察", "Final Answers are short.",
                "Finally, I", "\nFin")
_STOPS = (["Observation:"], ["Observation:", "\nFinal"], ["\nFinal", "Observation:"], ["观察：", "Observation:"],
          ["\nObservation:"], ["Observation:", "Final Answer:"], ["###"], ["\nFinal Answer:", "\nObservation:"])


def _filled(rng: random.Random, form: str) -> str:
    return form.format(id=rng.randint(10000, 99999), sf=rng.randint(10**9, 10**10 - 1))


def _reply(rng: random.Random, *, run_on: bool) -> str:
    """A ReAct step as a model writes it: a Thought, an Action, maybe a look-alike, maybe an invented
    continuation the stop strings should cut."""
    lines = [_filled(rng, rng.choice(_THOUGHTS))]
    if rng.random() < 0.8:
        lines.append(_filled(rng, rng.choice(_ACTIONS)))
    if rng.random() < 0.4:
        lines.insert(1, rng.choice(_LOOK_ALIKES))
    if run_on:
        lines += [_filled(rng, rng.choice(_RUN_ONS)) for _ in range(rng.randint(1, 3))]
    return "\n".join(lines) + ("\n" if rng.random() < 0.5 else "")


def _cut_anywhere(rng: random.Random, text: str, count: int) -> list[str]:
    cuts = tuple(rng.randint(0, len(text)) for _ in range(count))  # the same place twice: an empty piece
    return _pieces_of(text, cuts)


def _cut_inside_the_stop(rng: random.Random, text: str, stop: list[str]) -> list[str]:
    """Pieces cut inside the earliest stop string (split across two or three pieces), and a few other places."""
    at = min((text.find(s) for s in stop if s in text), default=len(text) // 2)
    length = max((len(s) for s in stop if text.find(s) == at), default=1)
    inside = [at + rng.randint(1, max(length - 1, 1)) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.4:  # all but its last character in one piece, however long the stop string
        inside.append(at + length - 1)
    others = [rng.randint(0, len(text)) for _ in range(rng.randint(0, 3))]
    return _pieces_of(text, tuple(min(point, len(text)) for point in inside + others))


def _texts_in_pieces(rng: random.Random) -> Iterator[tuple]:
    for text, stop, _ in CUT_STREAM_TEXTS:
        yield (_cut_anywhere(rng, text, rng.randint(1, 6)), list(stop), "text")
    for _ in range(12):
        stop = list(rng.choice(_STOPS))
        text = _reply(rng, run_on=rng.random() < 0.8)
        pieces = _cut_inside_the_stop(rng, text, stop) if rng.random() < 0.6 else _cut_anywhere(rng, text, 5)
        yield (pieces, stop, "text")
    for _ in range(4):  # the reply ends in the start of a stop string, which never comes: it is text after all
        stop = list(rng.choice(_STOPS))
        start = stop[0][: rng.randint(1, len(stop[0]) - 1)] if len(stop[0]) > 1 else ""
        text = _reply(rng, run_on=False).rstrip("\n") + "\n" + start
        yield (_cut_anywhere(rng, text, rng.randint(1, 4)), stop, "text")
    for _ in range(3):  # one character a piece
        stop = list(rng.choice(_STOPS))
        text = _reply(rng, run_on=True)[:60]
        yield (list(text), stop, "text")
    yield ([""], ["Observation:"], "text")
    yield ([], ["Observation:"], "text")
    # two stop strings complete in one piece: the earlier in the text cuts, whichever comes first in the list
    yield (["Thought: I know it.\nFinal Answer: signed\nObservation: x"], ["Observation:", "\nFinal"], "text")
    yield (["Thought: done", ".\nFinal Answer: ok\nObservation: y"], ["Observation:", "\nFinal"], "text")
    yield (["Thought: 先查订单。\n观察：已签收\nObservation: x"], ["Observation:", "观察："], "text")
    # a stop string matches as cut_at_stop matches it: case and all
    yield (["Thought: my observation: the box is empty.\nAction: queryOrder\nAction Input: 88231\n"],
           ["Observation:"], "text")
    # the longest stop string split across pieces, a shorter one first in the list: hold back what the longest needs
    yield (["Thought: 先查订单。\nObserv", "ation: x"], ["观察：", "Observation:"], "text")
    yield (["Thought: done.\nFinal Answer", ": ok"], ["Observation:", "Final Answer:"], "text")
    # two stop strings whose starts both match the end so far: hold back the longer start, whichever is later
    yield (["Thought: ok\nObs", "ervation: x"], ["\nObservation:", "Observation:"], "text")
    yield (["Thought: 已签收。\nFin", "al Answer: 已签收"], ["\nFinal", "Final Answer:"], "text")
    for _ in range(4):  # the same, drawn: a stop string and itself after a line end, in either order, cut in both
        base = rng.choice(("Observation:", "Final Answer:", "观察："))
        stop = ["\n" + base, base]
        rng.shuffle(stop)
        head = _reply(rng, run_on=False).rstrip("\n")
        text = f"{head}\n{base} {rng.choice(('x', '已签收', '{}'))}"
        cut = len(head) + 1 + rng.randint(1, len(base) - 1)
        yield ([text[:cut], text[cut:]], stop, "text")
    # a stop string whose first characters repeat, the text so far shorter than it: hold back all that could start
    # it ("\n\n"), not only its last character, or the stop string gets through whole
    yield (["Done.\n\n", "Observation: x"], ["\n\nObservation:"], "text")
    yield (["好的。\n\n", "User: 还有别的吗？"], ["\n\nUser:"], "text")
    # fixed inputs from here on (no draws: the later rules' inputs stay as they were)
    # a stop string matches as written: its look-alike with the other colon (full-width for ASCII, or the other way
    # round) is text, before the stop string itself and split across pieces too
    yield from _colon_look_alikes()
    # a "\r" is text like any other character: kept, even right before the stop string
    yield (["Action Input: 88231\r\n", "Observation: x"], ["\nObservation:"], "text")
    # a stop string is plain text, not a regular expression: "|" and ">" are characters to find
    yield (["Thought: 3 > 2\n", "Final Answer: 3<|im_end|>"], ["<|im_end|>"], "text")
    # an empty piece between the parts of a split stop string: it changes nothing
    yield (["Thought: ok\nObs", "", "ervation: x"], ["Observation:"], "text")
    # a stop string whose first characters repeat, the text holding one of them more than it does ("\n\n\n" before
    # "\n\nObservation:"), cut at every place and one character a piece: of the ends that could start it, the longest
    # waits, or its start comes out and the stop string gets through
    for text, stop in (("Thought: ok\n\n\nObservation: x", ["\n\nObservation:"]),
                       ("Thought: 3 << 2 <<<<END x", ["<<<END"])):
        for at in range(1, len(text)):
            yield ([text[:at], text[at:]], stop, "text")
        yield (list(text), stop, "text")


def _colon_look_alikes() -> Iterator[tuple]:
    """For each stop string of _STOPS with a colon: a reply that holds it written with the other colon (`：` for
    `:`, `:` for `：`) before the stop string itself, cut inside the look-alike, in English and Chinese."""
    stops = [(s, stop) for stop in _STOPS for s in stop if ":" in s or "：" in s]
    for n, (s, stop) in enumerate(dict.fromkeys((s, tuple(stop)) for s, stop in stops)):
        look_alike = s.translate(str.maketrans({":": "：", "：": ":"}))
        thought = _THOUGHTS[n % len(_THOUGHTS)].format(id=88231)
        text = f"{thought}\n{look_alike.lstrip(chr(10))} 已签收\n{s.lstrip(chr(10))} x"
        at = len(thought) + 1 + len(look_alike.lstrip("\n")) - 1  # the look-alike's colon starts the second piece
        yield ([text[:at], text[at:]], list(stop), "text")


def _pieces_safe_to_show(rng: random.Random) -> Iterator[tuple]:
    """Replies cut into whole lines and words: after most pieces nothing could start a stop string."""
    for _ in range(14):
        stop = list(rng.choice(_STOPS))
        text = _reply(rng, run_on=rng.random() < 0.5)
        words = text.split(" ")
        cuts, at = [], 0
        for word in words[:-1]:
            at += len(word) + 1
            if rng.random() < 0.4:
                cuts.append(at)
        yield (_pieces_of(text, tuple(cuts)), stop, "at once")
    # whole lines: a line's end "\n" comes out too, unless a stop string starts with it
    yield (["Action: queryOrder\n", "Action Input: 88231\n", "Thought: ok"], ["Observation:"], "at once")
    own = random.Random("whole lines")  # its own draws: the inputs after these stay as they were
    for _ in range(4):
        stop = list(own.choice(_STOPS))
        yield (_reply(own, run_on=False).splitlines(keepends=True), stop, "at once")
    # an end that starts a stop string only when case is ignored cannot start it: a stop string matches as written
    yield (["Thought: I will obs", "erve the order first.\n", "Action: queryOrder\n"], ["Observation:"], "at once")
    yield (["Thought: 先查订单。\nfinal", " check, then answer.\n"], ["\nFinal Answer:"], "at once")


def _pieces_after_the_stop(rng: random.Random) -> Iterator[tuple]:
    """The stop string completes in one piece and more pieces follow (what the server keeps sending)."""
    for _ in range(14):
        stop = list(rng.choice(_STOPS))
        text = _reply(rng, run_on=False) + rng.choice(stop) + " " + _filled(rng, rng.choice(_RUN_ONS))
        pieces = _cut_inside_the_stop(rng, text, stop)
        yield (pieces + [_filled(rng, rng.choice(_RUN_ONS)) for _ in range(rng.randint(1, 3))], stop, "reads")
    yield (["Observation: x", "Thought: more", "Final Answer: y"], ["Observation:"], "reads")


def _cut_mistake(args: tuple, expected: str, got: Any) -> str | None:
    """What a wrong cut most likely did, judged from what came out."""
    pieces, stop = args[0], args[1]
    text = "".join(pieces)
    if isinstance(got, str) and got and not text:
        return "— the pieces hold no text, so there is nothing to yield."
    if isinstance(got, str) and expected and got != expected and got.endswith(expected) and not text.startswith(
            got[: len(got) - len(expected)]):
        return "— an earlier call's text came first: keep held text local."
    if not isinstance(got, str) or got == expected or not text.startswith(got[:1]):
        return None  # right (another sentence failed), or nothing like the text: no guess
    after = text[len(got):] if text.startswith(got) else ""
    cut_at = [s for s in stop if after.startswith(s)]
    earliest = [s for s in stop if text[len(expected):].startswith(s)]
    if why := _later_of_two(pieces, stop, expected, got, earliest):
        return why
    if why := _slip(pieces, stop, expected, got, earliest):
        return why
    if why := _stop_changed(pieces, stop, expected, got, after, earliest):
        return why
    if earliest and 0 < len(got) - len(expected) < len(earliest[0]) and earliest[0].startswith(got[len(expected):]):
        return (f"— the start of {shown(earliest[0])} came out before it was complete: of the ends that could "
                "start a stop string, hold back the longest.")
    if why := _held_too_little(pieces, stop, expected, got, earliest):
        return why
    if cut_at and earliest and len(got) > len(expected):
        if cut_at[0] in earliest:
            starts = [sum(map(len, pieces[:k])) for k in range(len(pieces))]
            whole = any(at <= len(expected) and len(expected) + len(cut_at[0]) <= at + len(piece)
                        for at, piece in zip(starts, pieces, strict=True))
            return (f"— it cut at a later {shown(cut_at[0])}: " + ("cut at the first one (find, not rfind)." if whole
                    else "the first one cuts, even split across pieces."))
        return f"— {shown(earliest[0])} comes before {shown(cut_at[0])}: every stop string counts, the earliest cuts."
    if expected.startswith(got):
        if len(expected) < len(text) and got == expected.rstrip():
            return "— keep the text before the stop string as it is: no strip()."
        if len(expected) < len(text):  # a stop string cuts it: what is missing comes right before it
            return ("— the text before the stop string must all come out: yield text[:at], then return (what a "
                    "generator returns is not yielded).")
        return "— what was held back must come out when the stream ends."
    read = ["".join(pieces[:k]) for k in range(1, len(pieces) + 1)]
    if any(so_far[:-1] == got and any(s not in so_far for s in stop) for so_far in read):
        return "— str.find gives -1 for a stop string that is not there: leave those out of min()."
    whole = [s for s in stop if s in got and any(s in piece for piece in pieces)]
    if whole:
        at = got.find(whole[0])
        mid_line = at > 0 and got[at - 1] != "\n" and not whole[0].startswith("\n")
        return (f"— {shown(whole[0])} came through whole: every stop string counts"
                + (", mid-line too." if mid_line else "."))
    if len(got) > len(expected):
        if earliest and len(earliest[0]) > min(len(s) for s in stop):
            return "— every stop string counts; one split across pieces must still be found, the longest too."
        return "— a stop string split across pieces must still be found."
    if "".join(got.split()) == "".join(expected.split()):
        return "— spaces went missing: keep every piece, one of only spaces too."
    return "— keep every character of the pieces as it came: only a stop string changes the text, by ending it."


def _stop_changed(pieces: list[str], stop: list[str], expected: str, got: str, after: str,
                  earliest: list[str]) -> str | None:
    """A cut at a stop string the answer changed: stripped of its spaces and line ends, or matched loosely (in any
    case, a full-width colon for a colon), so it cut where no stop string is."""
    stripped = [s for s in earliest if s.strip() and s != s.strip() and after.startswith(s.strip())
                and not any(after.startswith(other) for other in stop)]  # where no stop string is, as given
    if stripped and got == expected + stripped[0][: len(stripped[0]) - len(stripped[0].lstrip())]:
        whole, lead = stripped[0], stripped[0][: len(stripped[0]) - len(stripped[0].lstrip())]
        end = len(expected) + len(whole)
        completed = next((k for k in range(1, len(pieces) + 1) if len("".join(pieces[:k])) >= end), len(pieces))
        if isinstance(got, _Joined) and len(_out_by(got, completed - 1)) > len(expected):
            # the spaces came out before the piece that completed the stop string: a reader that holds nothing
            # back, the stop string kept whole, yields the same text at the same time as one that stripped it
            return (f"— it cut at {shown(whole.strip())}, not at the stop string {shown(whole)} (do not strip it), "
                    f"or let {shown(lead)} out too soon (hold it back).")
        return (f"— it cut at {shown(whole.strip())}, not at the stop string {shown(whole)}: "
                "a stop string is matched as given, its line ends and spaces too (do not strip it).")
    if len(got) >= len(expected):
        return None
    if any(after.lower().startswith(s.lower()) for s in stop):
        return "— a stop string matches exactly, case and all, as cut_at_stop matches it."
    if any(_loosely(after).startswith(_loosely(s)) for s in stop):
        return "— a stop string matches only as written (as cut_at_stop): a full-width ： is not :."
    return None


def _loosely(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _as_pattern(stop: list[str]) -> re.Pattern | None:
    """The stop strings joined into a regular expression unescaped, when one of them holds a character special there
    (what `re.compile("|".join(stop))` finds)."""
    if not any(ch in s for s in stop for ch in "\\.^$*+?{}[]|()"):
        return None
    try:
        return re.compile("|".join(stop))
    except re.error:
        return None


def _later_of_two(pieces: list[str], stop: list[str], expected: str, got: str, earliest: list[str]) -> str | None:
    """A cut at a stop string that starts after the earliest one (two that overlap, each searched on its own): the
    text up to the later one came out in one yield once the earliest was complete, not held back and let out."""
    text = "".join(pieces)
    later = [s for s in stop if text[len(got):].startswith(s) and s not in earliest]
    if not (later and earliest and len(got) > len(expected) and isinstance(got, _Joined) and text.startswith(got)):
        return None
    end = len(expected) + len(earliest[0])
    completed = next((k for k in range(1, len(pieces) + 1) if len("".join(pieces[:k])) >= end), len(pieces))
    if len(_out_by(got, completed - 1)) > len(expected) or sum(read >= completed for read in got.taken) > 1:
        return None  # its start came out too early, or was let out after the cut: _slip tells those
    return f"— {shown(earliest[0])} comes before {shown(later[0])}: every stop string counts, the earliest cuts."


def _held_too_little(pieces: list[str], stop: list[str], expected: str, got: str, earliest: list[str]) -> str | None:
    """A shorter end held back than the longest that could start a stop string (one "\n" of "\n\n"): part of the
    stop string's start came out before the piece that completed it, and the stop string got through."""
    if not (earliest and isinstance(got, _Joined)):
        return None
    end = len(expected) + len(earliest[0])
    completed = next((k for k in range(1, len(pieces) + 1) if len("".join(pieces[:k])) >= end), len(pieces))
    so_far = "".join(pieces[: completed - 1])
    out, longest = _out_by(got, completed - 1), so_far[_safe_end(so_far, stop):]
    held = len(so_far) - len(out)
    if not (out.startswith(expected) and len(expected) < len(out) < len(so_far) and held < len(longest)):
        return None
    return (f"— {shown(out[len(expected):])} came out too soon: hold back the longest end that could start a stop "
            f"string ({shown(longest)} here).")


def _out_by(got: _Joined, taken: int) -> str:
    """What a generator had yielded before it asked for piece `taken` + 1."""
    return "".join(item for item, read in zip(got.items, got.taken, strict=True) if read <= taken)


def _slip(pieces: list[str], stop: list[str], expected: str, got: str, earliest: list[str]) -> str | None:
    """A slip of a cut that is right but for one thing, told from what came out (and when): None when it is none
    of these."""
    text = "".join(pieces)
    if "\r" in expected and "\r" not in got:
        return f"— {shown(chr(13))} is text too: keep every character of the pieces as it came."
    pattern = _as_pattern(stop)
    if len(got) < len(expected) and pattern and (match := pattern.search(text)) and match.start() == len(got):
        return "— a stop string is plain text, not a regular expression: str.find it (or re.escape it)."
    if len(got) < len(text) and any(got == expected + s for s in earliest):
        return "— cut the stop string off too: text[:at]."
    extra = got[len(expected):] if got.startswith(expected) else ""
    if extra and isinstance(got, _Joined) and any(s.startswith(extra) and extra != s for s in earliest):
        # the held start of the stop string, yielded after the piece that completed it (not before: too early)
        end = len(expected) + min(map(len, earliest))
        completed = next(k for k in range(1, len(pieces) + 1) if len("".join(pieces[:k])) >= end)
        if got.taken[-1] >= completed and got.items[-1] == extra:
            return "— after a stop string, return: what was held back must not come out after it."
    if len(got) > len(expected) > 0 and got.endswith(expected) and expected.startswith(got[: -len(expected)]):
        return "— at the stop, yield only what has not come out yet."
    starts = [sum(map(len, pieces[:k])) for k in range(1, len(pieces))]
    if isinstance(got, _Joined):  # all but the last character of the stop string out before its last came
        for s in earliest:
            at = len(expected) + len(s) - 1
            if len(s) > 1 and at in starts and _out_by(got, starts.index(at) + 1).startswith(expected + s[:-1]):
                return f"— hold back up to len(stop) - 1 characters ({shown(s[:-1])} here)."
    if "" in pieces:
        before = "".join(_cut_stream(pieces[: pieces.index("")], stop))
        if (before != expected and before.startswith(got) and len(before) - len(got) < max(map(len, stop))
                and not (expected.startswith(got) and got == expected.rstrip())):  # a strip(), told below
            return "— an empty piece is not the end of the stream: skip it."
    inside = [at for at, piece in zip([0, *starts], pieces, strict=True) if not piece
              and any(len(expected) < at < len(expected) + len(s) for s in earliest)]
    if inside and len(got) > len(expected):
        return "— an empty piece between a stop string's parts changes nothing: keep holding back."
    return None


def _held_back(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    pieces, stop = args[0], args[1]
    for k in range(1, len(pieces)):
        so_far = "".join(pieces[:k])
        end = so_far[_safe_end(so_far.lower(), [s.lower() for s in stop]):]
        if end and not _could_go_on(so_far, stop) and got == f"held back {shown(end)} at piece {k + 1}":
            return (f"— a stop string starts only as written, case and all (as cut_at_stop finds it): {shown(end)} "
                    "cannot start one.")
    return "— text comes out at once; hold back only what could start a stop string."


def _read_on(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    if isinstance(got, int) and got > expected:
        return (f"pieces read — the stop string was complete in piece {expected}: stop reading there, as the client "
                "hangs up.")
    return "pieces read — it stopped reading before the stop string was complete."


def _spaces_before_the_stop(rng: random.Random) -> Iterator[tuple]:
    """Spaces right before the stop string: cut_at_stop keeps them, as it keeps every character before the stop."""
    yield (["Action: queryOrder\nAction Input: 88231 ", "Observation: x"], ["Observation:"], "text")
    yield (["Final Answer: 已签收  \nObserv", "ation: y"], ["\nObservation:"], "text")
    yield (["Thought: 先查订单。\t观察：已签收"], ["观察："], "text")


def _pieces_ending_in_a_start(rng: random.Random) -> Iterator[tuple]:
    """Pieces whose end could start a stop string: the text before that end comes out before the next piece."""
    yield (["Action Input: 88231\nObs", "erved it"], ["Observation:"], "before its end")
    yield (["Thought: 先查订单。\n观", "察到了"], ["观察："], "before its end")
    for _ in range(8):
        stop = list(rng.choice(_STOPS))
        text = _reply(rng, run_on=rng.random() < 0.7)
        yield (_cut_inside_the_stop(rng, text, stop), stop, "before its end")
    # a stop string whose first characters repeat: only the end that could start it waits, not all of the run
    yield (["Thought: ok\n\n\n", "Observed"], ["\n\nObservation:"], "before its end")
    yield (["Final Answer: 先查 ## 订单 ##", " 再说"], ["###"], "before its end")


def _held_too_much(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    if isinstance(got, str) and " out at piece " in got:
        return "— the end that could start a stop string waits for the next piece."
    return "— only the end that could start a stop string waits; the rest comes out at once."


def _stripped_before_the_stop(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    if isinstance(got, str) and isinstance(expected, str) and got == expected.rstrip():
        return "— the text before the stop string is kept as it is, spaces at its end too (cut_at_stop strips nothing)."
    return None


CUT_STREAM_RULES = (
    Rule("joined, what it yields is the whole text cut at its earliest stop string, however it was split",
         _texts_in_pieces, _cut_mistake),
    Rule("a piece whose end cannot start a stop string comes out whole before the next piece is read",
         _pieces_safe_to_show, _held_back),
    Rule("once a stop string is complete it stops, without reading another piece", _pieces_after_the_stop,
         _read_on),
    Rule("the text before the stop string is kept whole, spaces at its end too", _spaces_before_the_stop,
         _stripped_before_the_stop),
    Rule("of a piece, only an end that could start a stop string waits for the next one", _pieces_ending_in_a_start,
         _held_too_much),
)


def _show_pieces(args: tuple) -> str:
    return f"{_brief(args[0], 60)}, stop={shown(args[1])}"


@grades("Exercise 1", spec=Spec(CUT_STREAM_RULES))
def check_cut_stream(cut_stream: Callable | None) -> None:
    """14, exercise 1: stop strings applied to text that arrives in pieces."""
    exercise = "Exercise 1"
    if cut_stream is None:
        return _not_attempted(exercise, "Write def cut_stream(pieces, stop) in the cell above.")
    if not callable(cut_stream):
        _fail(exercise, f"cut_stream should be a function, got {type(cut_stream).__name__}")
    tried = agree_on(exercise, "check_cut_stream", CUT_STREAM_RULES, _watched(cut_stream), _watched(_cut_stream),
                     shape=_yields_text, call="cut_stream(pieces, stop)", show=_show_pieces)
    return _passed(exercise, f"{tried} generated replies in pieces, each cut as the whole reply is; text that cannot "
                             "start a stop string comes out at once, and reading stops at the stop string.")


def _chunk(delta: dict | None, finish_reason: str | None = None, usage: Any = "absent") -> dict:
    data: dict = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m",
                  "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    if usage != "absent":
        data["usage"] = usage
    return data


def _read_chunks(chunks: list[dict]) -> tuple[str, str | None, dict | None]:
    """14, exercise 2's answer (the solution's behaviour)."""
    text, finish_reason, usage = "", None, None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            text += choice["delta"].get("content") or ""
            finish_reason = choice.get("finish_reason") or finish_reason
    return text, finish_reason, usage


_FIELDS = ("text", "finish_reason", "usage")


@dataclass(frozen=True)
class _NotATriple:
    """What read_chunks returned when it was not (text, finish_reason, usage)."""

    value: Any


def _one_field(read_chunks: Callable) -> Callable[[list[dict], str], Any]:
    """read_chunks(chunks), and of what it returned the field the rule's sentence is about."""

    def run(chunks: list[dict], field: str) -> Any:
        got = read_chunks(chunks)
        if not isinstance(got, tuple) or len(got) != 3:
            # its type alone when it is not plain data (a generator's repr changes from call to call)
            return _NotATriple(got if isinstance(got, (str, list, dict, tuple, int, float, type(None)))
                               else f"a {type(got).__name__}")
        return got[_FIELDS.index(field)]

    return run


def _a_triple(value: Any) -> str | None:
    if isinstance(value, _NotATriple):
        return f"it returned {_brief(value.value, 40)}: return (text, finish_reason, usage), a tuple"
    return None


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
_REPLY_PIECES = ("Final", " Answer:", " signed", "Thought: I", " need", " the order", "好的", "，已签收", "。\n",
                 "订单 {id} ", "Action: queryOrder\n", "Action Input: {id}\n", " 🙂", "\n\n", "¡Olé! ", "退款")
_FINISHES = ("stop", "length", "tool_calls", "content_filter")


def _usage(rng: random.Random, completion: int | None = None) -> dict:
    prompt, completion = rng.randint(9, 4000), completion if completion is not None else rng.randint(1, 900)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _streamed_chunks(rng: random.Random, usage_mode: str, *, finish: str | None = "any") -> list[dict]:
    """The chunks of one streamed reply, in one of the shapes servers send. `usage_mode`: "none" (no usage
    key), "nulls" (usage: null in every chunk, the counts in a last chunk with no choices), "last" (only a last
    chunk with no choices carries it), "with finish" (in the chunk with finish_reason), "running" (a running
    count in every chunk), "then null" (a chunk with usage: null after the one that carries it)."""
    pieces = [rng.choice(_REPLY_PIECES).format(id=rng.randint(10000, 99999)) for _ in range(rng.randint(1, 6))]
    reason = rng.choice(_FINISHES) if finish == "any" else finish
    null = None if usage_mode == "nulls" else "absent"
    # the role chunk's content: "", null, absent, or the reply's first piece of text (some servers send it there)
    first = pieces.pop(0) if len(pieces) > 1 and rng.random() < 0.4 else rng.choice(("", None, "absent"))
    role: dict = {"role": "assistant"} if first == "absent" else {"role": "assistant", "content": first}
    chunks = [_chunk(role, usage=null)] + [_chunk({"content": piece}, usage=null) for piece in pieces]
    if rng.random() < 0.5 or reason is None:  # finish_reason in a chunk of its own, with an empty delta
        chunks.append(_chunk({}, reason, usage=null))
    else:  # or with the last piece of text
        chunks[-1]["choices"][0]["finish_reason"] = reason
    usage = _usage(rng, len(chunks))
    if usage_mode in ("nulls", "last", "then null"):
        chunks.append(_chunk(None, usage=usage))
    if usage_mode == "then null":
        chunks.append(_chunk(None, usage=None))
    if usage_mode == "with finish":
        chunks[-1]["usage"] = usage
    if usage_mode == "running":
        for n, chunk in enumerate(chunks, start=1):
            chunk["usage"] = {**usage, "completion_tokens": n, "total_tokens": usage["prompt_tokens"] + n}
    return chunks


_WITH_USAGE = ("nulls", "last", "with finish", "running", "then null")


_TOOL_CALL_ROUND = [  # a reply that is a tool call: its chunks carry no content at all
    _chunk({"role": "assistant", "content": None}),
    _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "queryOrder", "arguments": ""}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"orderId": "88231"}'}}]}),
    _chunk({}, "tool_calls"),
]


def _streams_for_text(rng: random.Random) -> Iterator[tuple]:
    for _ in range(8):
        yield (_streamed_chunks(rng, rng.choice(("none", *_WITH_USAGE))), "text")
    yield (copy.deepcopy(_TOOL_CALL_ROUND), "text")  # no draws from here on: the later rules' inputs stay as they were


def _streams_for_finish(rng: random.Random) -> Iterator[tuple]:
    for _ in range(8):
        yield (_streamed_chunks(rng, rng.choice(("none", *_WITH_USAGE))), "finish_reason")
    yield (_streamed_chunks(rng, "last", finish=None), "finish_reason")  # cut off: no chunk has one
    # A chunk after the finish chunk whose choice says finish_reason null (with the usage, as some servers send it).
    yield ([_chunk({"role": "assistant", "content": ""}), _chunk({"content": "已签收。"}), _chunk({}, "stop"),
            _chunk({}, None, usage={"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43})],
           "finish_reason")


def _streams_for_usage(rng: random.Random) -> Iterator[tuple]:
    for mode in _WITH_USAGE * 2:
        yield (_streamed_chunks(rng, mode), "usage")
    # cut off (no finish_reason anywhere) with a running usage: the last chunk's usage still counts
    yield (_streamed_chunks(rng, "running", finish=None), "usage")
    # a usage with more than the three counts (OpenAI's cached tokens): all of it, as it came (no draws: the next
    # rule's inputs stay as they were)
    yield ([_chunk({"role": "assistant", "content": ""}), _chunk({"content": "已签收。"}), _chunk({}, "stop"),
            _chunk(None, usage={"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43,
                                "prompt_tokens_details": {"cached_tokens": 32}})], "usage")


def _streams_without_usage(rng: random.Random) -> Iterator[tuple]:
    for _ in range(5):
        yield (_streamed_chunks(rng, "none"), "usage")


_IN_ORDER = "— the order is (text, finish_reason, usage)."


def _text_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if got is None and expected == "":
        return "— no chunk carries content here (a tool call): the text is '', not None."
    return None


def _finish_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    chunks = args[0]
    if got is not None and got == _read_chunks(chunks)[2]:
        return _IN_ORDER
    if expected is None:
        return "— no chunk has one here: return None, not a default."
    if isinstance(got, (list, tuple)) and expected in got:
        return "— return the finish_reason itself, one string (or None), not a list of them."
    last = chunks[-1]["choices"] if chunks else []
    if got is None and last and last[0].get("finish_reason") == expected:
        return '— it is choice["finish_reason"], beside delta, in the chunk that has it (here the last one).'
    if got is None:  # read from delta, or from the last chunk only: None either way, so name both places
        return '— it is choice["finish_reason"], beside delta, in the chunk that has it, not always the last chunk.'
    return "— it comes in the chunk that has it, not always the last chunk."


def _usage_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    chunks = args[0]
    if isinstance(got, str) and got == _read_chunks(chunks)[1]:
        return _IN_ORDER
    if expected is None:
        return "— the server sent none, so say so (None); never make counts up."
    if isinstance(got, int) and isinstance(expected, dict):
        return "— return the usage dict, not one count."
    if isinstance(got, str) and isinstance(expected, dict) and _json_or_none(got) == expected:
        return "— return the usage as the dict it is in the chunk, not as JSON text."
    if isinstance(got, dict) and isinstance(expected, dict) and got.items() < expected.items():
        return "— return the usage as the server sent it, every key (prompt_tokens_details too)."
    if got is None and not any(choice.get("finish_reason") for chunk in chunks for choice in chunk["choices"]):
        return "— no chunk has a finish_reason (cut off), yet the last usage sent still counts."
    choiceless = _read_chunks([chunk for chunk in chunks if not chunk["choices"]])[2]
    if got == choiceless:
        return "— any chunk may carry it, even one with choices."
    return "— it is in the last chunk that carries a usage (often one with no choices)."


READ_CHUNKS_RULES = (
    Rule("the text is every chunk's content joined (content may be null)", _streams_for_text, _text_hint),
    Rule("finish_reason comes from the chunk that has one, not always the last", _streams_for_finish, _finish_hint),
    Rule("usage comes from the last chunk that carries one (\"usage\": null carries none)", _streams_for_usage,
         _usage_hint),
    Rule("usage is None when the server sent none", _streams_without_usage, _usage_hint),
)


def _show_chunks(args: tuple) -> str:
    """The chunks as a failure shows them, one short word each: the delta's content (null, or tool_calls or - when
    absent), +finish_reason, [] for no choices, and the usage (its completion tokens, or null)."""
    each = []
    for chunk in args[0]:
        words = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta", {})
            words.append(("null" if delta["content"] is None else repr(delta["content"])) if "content" in delta
                         else "tool_calls" if "tool_calls" in delta else "-")
            if choice.get("finish_reason"):
                words.append(f"+{choice['finish_reason']}")
        if not chunk.get("choices"):
            words.append("[]")
        if "usage" in chunk:
            usage = chunk["usage"]
            words.append("usage=null" if usage is None else f"usage={usage.get('completion_tokens')}")
        each.append(" ".join(words))
    if len(each) > 6:
        each = [*each[:2], "…", *each[-3:]]
    return f"chunks [{', '.join(each)}] (the {args[1]})"


@grades("Exercise 2", spec=Spec(READ_CHUNKS_RULES))
def check_read_chunks(read_chunks: Callable | None) -> None:
    """14, exercise 2: text, finish_reason and usage from the chunks of one streamed reply."""
    exercise = "Exercise 2"
    if read_chunks is None:
        return _not_attempted(exercise, "Write def read_chunks(chunks) in the cell above.")
    if not callable(read_chunks):
        _fail(exercise, f"read_chunks should be a function, got {type(read_chunks).__name__}")
    tried = agree_on(exercise, "check_read_chunks", READ_CHUNKS_RULES, _one_field(read_chunks),
                     _one_field(_read_chunks), shape=_a_triple, call="read_chunks(chunks)", show=_show_chunks)
    return _passed(exercise, f"{tried} generated streams read: the text joined, finish_reason from the chunk that has "
                             "it, and the usage from the last chunk that carries one, or None when the server sent "
                             "none.")
