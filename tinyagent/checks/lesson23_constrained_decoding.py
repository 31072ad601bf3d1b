"""Lesson 23's checks: a GBNF rule written by hand for one tool's input, and the narrowing of a step's ids."""

from __future__ import annotations

import json
import random
import re
import string
import unicodedata
from collections.abc import Callable, Iterator

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _json_or_none, _not_attempted, _passed, grades, shown
from tinyagent.protocols.gbnf import GrammarError, parse_grammar

# The solution's grammar: what the learner's is compared with on every generated text.
_REFERENCE_GRAMMAR = parse_grammar("root ::= [A-Z] [A-Z] [0-9]{10}")


# The shop's own tracking numbers: tried first, before the generated ones.
TRACKING_NUMBERS = ("SF1234567890", "YT2468013579", "ZT5566778899")


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
def _letters(rng: random.Random, count: int, alphabet: str = string.ascii_uppercase) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


def _digits(rng: random.Random, count: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(count))


def _tracking(rng: random.Random) -> str:
    return _letters(rng, 2) + _digits(rng, 10)


def _tracking_numbers(rng: random.Random) -> Iterator[tuple]:
    yield from ((number,) for number in TRACKING_NUMBERS)
    yield ("AZ0000000000",)  # the ends of both classes
    yield ("ZA9999999999",)
    for _ in range(12):  # any two capital letters, any ten digits: not only the shop's SF, YT and ZT
        yield (_tracking(rng),)


# Capitals that are not A to Z, and digits that are not 0 to 9 (str.isupper() and str.isdigit() say yes to them).
_NOT_A_TO_Z = "ＡＳＺÀÉÖØÞΑΣΩАЯİ"
_NOT_0_TO_9 = "０５９٠٣٩०७۵๒²①"


def _not_the_shape(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        yield (_digits(rng, 5),)  # an order id
    for _ in range(3):
        yield (_letters(rng, 2, string.ascii_lowercase) + _digits(rng, 10),)  # lower case
        upper, lower = _letters(rng, 1), _letters(rng, 1, string.ascii_lowercase)
        yield (rng.choice((upper + lower, lower + upper)) + _digits(rng, 10),)  # one of them lower case
    yield ("顺丰" + _digits(rng, 10),)  # letters that are not A-Z
    yield (_digits(rng, 12),)
    yield (_digits(rng, 2) + _letters(rng, 2) + _digits(rng, 8),)  # the letters not first
    yield (_letters(rng, 2) + _digits(rng, 5) + _letters(rng, 1) + _digits(rng, 4),)  # a letter among the digits
    yield ("88231",)  # the lesson's own order id
    yield ("S01234567890",)  # twelve long, but a digit in the second letter's place
    yield ("SF12345678CN",)  # twelve long, but letters in the last two digits' places (a postal shape's end)
    # letters that are not A-Z and digits that are not 0-9, each in a place of its kind: full-width (a Chinese
    # keyboard's), accented, Greek and Cyrillic capitals, other scripts' digits. Drawn apart, so the texts of the
    # rules after this one stay as they were.
    more = random.Random("other scripts")
    for text in ("ＳＦ1234567890", "SF１２３４５６７８９０", "ÉÀ1234567890"):
        yield (text,)
    for ch in _NOT_A_TO_Z:
        number, place = _tracking(more), more.randint(0, 1)
        yield (number[:place] + ch + number[place + 1:],)
    for ch in _NOT_0_TO_9:
        number, place = _tracking(more), more.randint(2, 11)
        yield (number[:place] + ch + number[place + 1:],)
    # a capital in each digit's place (one from A to F, which a hexadecimal class lets through, and one after F;
    # in the first digit's, that is three letters and nine digits, which the counts' rule tries), and either
    # letter's place swapped with each digit's: twelve long, two letters and ten digits, but not where the shape
    # has them
    places = random.Random("letters and digits swapped")
    for place in range(3, 12):
        for letters in ("ABCDEF", "GHIJKLMNOPQRSTUVWXYZ"):
            number = _tracking(places)
            yield (number[:place] + places.choice(letters) + number[place + 1:],)
    for place in (0, 1):
        for other in range(2, 12):
            swapped = list(_tracking(places))
            swapped[place], swapped[other] = swapped[other], swapped[place]
            yield ("".join(swapped),)


def _wrong_counts(rng: random.Random) -> Iterator[tuple]:
    for digits in (9, 11, 8, 12):
        yield (_letters(rng, 2) + _digits(rng, digits),)
    for letters in (1, 3, 0):
        yield (_letters(rng, letters) + _digits(rng, 10),)
    yield (_letters(rng, 2),)
    # every other count beside a wrong one too, in capitals and in lower case: both counts wrong (three letters and
    # nine digits), four or five letters, thirteen digits and more. Drawn apart, so the texts above stay as they were.
    more = random.Random("wrong counts")
    for letters in range(1, 6):
        for digits in (*range(1, 21), more.randint(21, 40)):
            if (letters, digits) == (2, 10):
                continue
            if not ((letters == 2 or digits == 10) and letters <= 3 and digits <= 12):  # in capitals, tried above
                yield (_letters(more, letters) + _digits(more, digits),)
            yield (_letters(more, letters, string.ascii_lowercase) + _digits(more, digits),)


def _something_around(rng: random.Random) -> Iterator[tuple]:
    yield ("",)
    for after in (" ", "\n", "\nObservation: {}", ".", "\n\n", "。"):
        yield (_tracking(rng) + after,)
    yield (" " + _tracking(rng),)  # nothing before it either
    yield (_tracking(rng) + " " + _tracking(rng),)  # two numbers
    yield (f'"{_tracking(rng)}"',)  # quoted
    # more after it: a second number (glued, after a comma), a comma, a tab, a carriage return, a letter
    for after in ("YT2468013579", ",YT2468013579", ", YT2468013579", ",", "\t", "\r", "\r\n", "X"):
        yield ("SF1234567890" + after,)


# Marks that may stand among the letters and digits: spaces, the usual separators, and one more drawn per place.
_SEPARATORS = (" ", "-", "_", ".", "/", ":", "#", "\t", "　", "－")


def _nothing_between(rng: random.Random) -> Iterator[tuple]:
    for text in ("SF 1234567890", "SF-1234567890", "SF12345 67890", "SF12345-67890"):
        yield (text,)  # a space or a dash inside: not the shape
    # twelve long with a mark in a letter's or a digit's place, or a space between the letters or among the digits
    for text in ("SF12345 6789", "SF-123456789", "SF12345.6789", "S 1234567890", "S_1234567890", "S-1234567890",
                 "SF1234 567890", "S F1234567890"):
        yield (text,)
    # each mark at every place among the twelve characters (S-F1234567890, SF1234.567890), and instead of each of
    # them (S_1234567890). Drawn apart, so the texts of the rules after this one stay as they were.
    more = random.Random("marks between")
    for place in range(12):
        for mark in (*_SEPARATORS, more.choice(string.punctuation)):
            number = _tracking(more)
            if place:
                yield (number[:place] + mark + number[place:],)
            yield (number[:place] + mark + number[place + 1:],)


# What a rule may offer when there is no number: the spec's "no word", in the words a model writes for nothing.
_FALLBACK_WORDS = ("null", "None", "unknown", "N/A", "n/a", "-", "?", "not found", "no tracking number", "无", "未知",
                   "暂无")


def _word(rng: random.Random) -> str:
    """A random word: lower case, capitals or both, two to twenty letters, now and then with a mark or a digit."""
    word = _letters(rng, rng.randint(2, 20), rng.choice((string.ascii_lowercase, string.ascii_uppercase,
                                                         string.ascii_letters)))
    if rng.random() < 0.3:
        place = rng.randint(0, len(word))
        word = word[:place] + rng.choice(string.punctuation + " " + string.digits) + word[place:]
    return word


def _anything_else(rng: random.Random) -> Iterator[tuple]:
    """Texts that are no tracking number at all, as an extra alternative in `root` would let through: words, letters
    alone, digits alone (of every length, 13 and more too), the digits before the letters, the empty text."""
    for text in ("sf", "abc", "error", "none", "订单", "SF", "S", "SFX", "ABCD", ""):
        yield (text,)
    for digits in (1, 5, 10, 11, 12, 13, 16, 20):
        yield (_digits(rng, digits),)
    yield ("1234567890SF",)  # the ten digits, then the two letters
    yield (_digits(rng, 10) + _letters(rng, 2),)
    yield ("ＳＦ１２３４５６７８９０",)  # full-width: not A-Z, not 0-9
    # more words, and letters alone and digits alone of every length to forty and a few longer, in both cases.
    # Drawn apart, so the texts above stay as they were.
    more = random.Random("anything else")
    yield from ((text,) for text in _FALLBACK_WORDS)
    for _ in range(20):
        yield (_word(more),)
    for count in (*range(2, 41), *(more.randint(41, 200) for _ in range(4))):
        yield (_digits(more, count),)
        yield (_letters(more, count),)
        yield (_letters(more, count, string.ascii_lowercase),)


def _between_hint(args: tuple, expected: str, got: str) -> str | None:
    if got == "allowed" and re.fullmatch(r"[A-Z]{2}[0-9]*[ -][0-9]*", args[0]) and len(args[0]) == 13:
        return "It allows a space or dash inside the number: ten digits right after the letters."
    if got == "allowed":
        return f"It allows {shown(args[0])}: two capitals, then ten digits, and no mark in any place."
    return None


def _shape_hint(args: tuple, expected: str, got: str) -> str | None:
    if got == "allowed" and len(args[0]) == 12 and not args[0].isascii():
        return (f"It allows {shown(args[0])}: A-Z and 0-9 only, no full-width, accented or other script's letter or "
                "digit.")
    if got == "allowed" and len(args[0]) == 12:  # the length is right: a place holds the wrong kind of character
        return f"It allows {shown(args[0])}: two capitals A-Z first, then ten digits 0-9."
    return _grammar_hint(args, expected, got)


def _counts_hint(args: tuple, expected: str, got: str) -> str | None:
    letters, digits = (len(re.findall(kind, args[0])) for kind in ("[A-Za-z]", "[0-9]"))
    if got == "allowed" and re.fullmatch("[A-Za-z]*[0-9]*", args[0]):
        small, capitals = (" lower-case", " capitals") if re.search("[a-z]", args[0]) else ("", "")
        return (f"It allows {letters}{small} letter{'s' * (letters != 1)} and {digits} digit{'s' * (digits != 1)}: "
                f"exactly two{capitals} and ten.")
    return _grammar_hint(args, expected, got)


def _grammar_hint(args: tuple, expected: str, got: str) -> str | None:
    if got == "allowed" and re.fullmatch(r"[A-Z]{2}[0-9]{10}.+", args[0], re.DOTALL):
        return f"It allows {shown(args[0][12:])} after the number: nothing may follow it."
    if got == "allowed":
        return "It allows a text that is not a tracking number: two capitals, ten digits, nothing else."
    return "It refuses a tracking number: any two capital letters A-Z, then any ten digits 0-9."


GRAMMAR_RULES = (
    Rule("a tracking number is two capital letters, then ten digits: any letters, any digits (SF1234567890)",
         _tracking_numbers, _grammar_hint),
    Rule("not an order id, not lower case: the two letters are capitals from A to Z (not É, not a full-width Ｓ), "
         "the ten digits 0 to 9 (not a full-width ５), and the letters come first",
         _not_the_shape, _shape_hint),
    Rule("exactly two letters and ten digits: not nine or eleven digits, not one or three letters, nor both counts "
         "wrong (three letters and nine digits)", _wrong_counts, _counts_hint),
    Rule("nothing else: nothing after it (no space, no newline, no Observation) and nothing before it",
         _something_around, _grammar_hint),
    Rule("nothing between or instead: no space, dash or other mark among the two letters and ten digits, nor in "
         "their places",
         _nothing_between, _between_hint),
    Rule("nothing else at all: no word (sf, error), no letters or digits alone (of any length), no digits before "
         "the letters, not the empty text", _anything_else, _grammar_hint),
)


def _accepted(ok: bool) -> str:
    return "allowed" if ok else "refused"


@grades("Exercise 1", spec=Spec(GRAMMAR_RULES))
def check_tracking_grammar(tracking_grammar: str | None) -> None:
    """23, exercise 1: GBNF whose root allows exactly a tracking number: two capital letters, ten digits."""
    exercise = "Exercise 1"
    if tracking_grammar is None:
        return _not_attempted(exercise, 'Set tracking_grammar to GBNF text, e.g. \'root ::= [A-Z] ...\'.')
    if not isinstance(tracking_grammar, str):
        _fail(exercise, f"tracking_grammar should be GBNF text (a str), got {type(tracking_grammar).__name__}")
    try:
        grammar = parse_grammar(tracking_grammar)
    except GrammarError as exc:
        _fail(exercise, f"the check could not read this as GBNF (llama.cpp's grammar language): {exc}")
    try:
        grammar.accepts("SF1234567890")
    except GrammarError as exc:  # llama.cpp may read it; the check's matcher cannot follow it
        _fail(exercise, f"the check cannot follow this grammar: {exc}")
    # A grammar holds nothing between texts, so it is not asked again.
    tried = agree_on(exercise, "check_tracking_grammar", GRAMMAR_RULES, lambda text: _accepted(grammar.accepts(text)),
                     lambda text: _accepted(_REFERENCE_GRAMMAR.accepts(text)), call="your grammar", again=False)
    _passed(exercise, f"your rule decides {tried} generated texts as the spec does: any two capital letters and ten "
                      "digits, and no near miss (lower case, nine or eleven digits, anything after it).")


# -- exercise 2 ------------------------------------------------------------------------------------
def _reference_ids_seen(messages: list[dict], example: str) -> list[str]:
    """23, exercise 2's answer (the solution's): the words shaped like `example` in the user messages, read
    NFKC-normalised as the package's `ids_in` reads them (a full-width ８８２３１ is 88231), upper-cased, each once, in
    the order they first appear."""
    shape = "".join("[A-Z]" if ch.isalpha() else "[0-9]" for ch in example)
    word = re.compile(rf"(?<![A-Za-z0-9])(?<![0-9][.]){shape}(?![A-Za-z0-9])(?![.][0-9])", re.IGNORECASE)
    found: list[str] = []
    for message in messages:
        if message["role"] != "user":
            continue
        for match in word.finditer(unicodedata.normalize("NFKC", message["content"])):
            if match.group().upper() not in found:
                found.append(match.group().upper())
    return found


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
_SYSTEMS = ("Tools: queryOrder (e.g. 88231), queryLogistics (e.g. SF1234567890).",
            "工具：queryOrder（如 88231）、queryLogistics（如 SF1234567890）。\n只用顾客给出的编号。")
# Where an id sits in a customer's words: next to Han characters, at the start or end of a line, in brackets.
_ASKS = ("Where is order {id}?", "订单{id}到哪了？", "请查一下 {id} 的物流", "My parcel {id} has not arrived.",
         "({id}) was paid twice", "退款：{id}", "{id}", "Order #{id}, please.", "运单号{id}，谢谢")
_JOINS = ("\n", " ", "。", "\n\n", "，另外")


def _shape_like(rng: random.Random, example: str) -> str:
    """A random word of `example`'s shape: a capital letter for each letter, a digit for each digit."""
    return "".join(rng.choice(string.ascii_uppercase) if ch.isalpha() else rng.choice(string.digits)
                   for ch in example)


def _example(rng: random.Random) -> str:
    """The example a step's grammar is built from: an order id or a tracking number, or another shape."""
    return rng.choice(("88231", _digits(rng, 5), "SF1234567890", _tracking(rng), _letters(rng, 1) + _digits(rng, 6)))


def _ask(rng: random.Random, ids: list[str]) -> str:
    """A customer's message (one or several lines, either language) naming `ids` in that order."""
    return rng.choice(_JOINS).join(rng.choice(_ASKS).format(id=one) for one in ids)


def _observation(ids: list[str], example: str) -> str:
    key = "trackingNo" if example[0].isalpha() else "orderId"
    return "Observation: " + "\n".join(f'{{"{key}":"{one}","price":1999}}' for one in ids)


def _reply(rng: random.Random, one: str) -> str:
    return f"Thought: {rng.choice(('look it up', '先查订单', 'maybe'))}\nAction: queryOrder\nAction Input: {one}"


def _conversation(rng: random.Random, example: str, turns: list[tuple[str, list[str]]]) -> list[dict]:
    messages = [{"role": "system", "content": rng.choice(_SYSTEMS)}]
    for role, ids in turns:
        if role == "user":
            messages.append({"role": "user", "content": _ask(rng, ids)})
        elif role == "observation":
            messages.append({"role": "user", "content": _observation(ids, example)})
        else:
            messages.append({"role": "assistant", "content": _reply(rng, ids[0] if ids else "-")})
    return messages


def _shapes(rng: random.Random) -> Iterator[tuple]:
    for _ in range(8):  # several ids of the example's shape, in one message or several, either language
        example = _example(rng)
        ids = [_shape_like(rng, example) for _ in range(rng.randint(1, 4))]
        cut = rng.randint(1, len(ids))
        yield (_conversation(rng, example, [("user", ids[:cut]), ("observation", ids[cut:])] if ids[cut:]
                             else [("user", ids)]), example)
    for _ in range(6):  # words that are longer or shorter than the shape hold no id of it
        example = rng.choice(("88231", _tracking(rng)))
        one = _shape_like(rng, example)
        if example.isdigit():
            noise = [f"138{_digits(rng, 8)}", _digits(rng, 4), _digits(rng, 6), f"400{one}", "2026"]
        else:
            noise = [_letters(rng, 2) + _digits(rng, 11), _letters(rng, 3) + _digits(rng, 10),
                     _letters(rng, 2) + _digits(rng, 9), _digits(rng, 5)]
        words = [*rng.sample(noise, 2), one]
        rng.shuffle(words)
        yield ([{"role": "system", "content": rng.choice(_SYSTEMS)},
                {"role": "user", "content": rng.choice(("Call me on {} or {} about {}.", "电话{}，{}，订单{}"))
                 .format(*words)}], example)
    for example in ("88231", "SF1234567890"):  # a letter or a digit glued on makes another word, not an id
        if example.isdigit():
            glued = [_letters(rng, 1) + _digits(rng, 5), _digits(rng, 5) + _letters(rng, 1)]
        else:
            glued = [_digits(rng, 1) + _shape_like(rng, example), _shape_like(rng, example) + _letters(rng, 1)]
        words = [*glued, _shape_like(rng, example)]
        rng.shuffle(words)
        yield ([{"role": "system", "content": rng.choice(_SYSTEMS)},
                {"role": "user", "content": "I have {}, {} and {} here.".format(*words)}], example)
    yield ([{"role": "user", "content": ""}], "88231")
    yield ([{"role": "user", "content": "\u200b🙂 nothing here\n　"}], "SF1234567890")
    # a lower-case letter glued on makes another word too, as a capital does
    yield ([{"role": "user", "content": "Not order88231 nor 88232x, but 88233"}], "88231")
    yield ([{"role": "user", "content": "Not xSF2468013579 nor YT1357924680y, but ZT5566778899"}], "SF1234567890")
    # two ids one mark apart: the mark ends the first word and starts the second
    yield ([{"role": "user", "content": "Orders 88231 88232 and 88233"}], "88231")


def _whose_words(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):  # the model's guesses and the system prompt's examples are not facts
        example = _example(rng)
        asked, observed, guessed = (_shape_like(rng, example) for _ in range(3))
        turns = [("user", [asked]), ("assistant", [guessed]), ("observation", [observed])]
        if rng.random() < 0.5:
            turns.append(("assistant", [asked]))
        yield (_conversation(rng, example, turns), example)
    for example in ("88231", "SF1234567890"):  # only the system prompt has the example itself
        yield ([{"role": "system", "content": rng.choice(_SYSTEMS)},
                {"role": "user", "content": "Hello, where is my parcel?"}], example)
    # an Observation is read as text, whatever it holds: a number in its JSON, an error in words
    yield ([{"role": "user", "content": "Where is my order?"},
            {"role": "user", "content": 'Observation: {"orderId": 88231, "price": 1999}'}], "88231")
    # (an id of its own, not the customer's again: an answer that gives a repeated id twice fails on the rule that
    # says "each once", with its words)
    yield ([{"role": "user", "content": "Where is order 88231?"},
            {"role": "assistant", "content": "Thought: look it up\nAction: queryOrder\nAction Input: 88231"},
            {"role": "user", "content": "Observation: Error: no order 88213; did you mean 88239?"}], "88231")


def _cases(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):  # ids in lower or mixed case, as a customer types them
        example = rng.choice(("SF1234567890", _tracking(rng), "A123456"))
        ids = [_shape_like(rng, example) for _ in range(rng.randint(1, 3))]
        typed = [one.lower() if rng.random() < 0.6 else one[0] + one[1:].lower() for one in ids]
        yield (_conversation(rng, example, [("user", typed)]), example)


def _once_in_order(rng: random.Random) -> Iterator[tuple]:
    for _ in range(8):  # the same id in several messages (and cases); later ones first seen later
        example = _example(rng)
        ids = [_shape_like(rng, example) for _ in range(rng.randint(2, 4))]
        turns = [("user", [ids[0], ids[-1]]), ("assistant", [ids[0]]), ("observation", ids),
                 ("user", [ids[-1].lower(), ids[0]])]
        yield (_conversation(rng, example, turns), example)
    # an Observation brings an id before a later customer message names another: the Observation's comes first
    yield ([{"role": "user", "content": "Where is my parcel?"},
            {"role": "user", "content": 'Observation: {"trackingNo":"SF1234567890"}'},
            {"role": "user", "content": "And YT2468013579 too"}], "SF1234567890")
    yield ([{"role": "system", "content": _SYSTEMS[1]}, {"role": "user", "content": "我上周买的扫地机还没到"},
            {"role": "assistant", "content": "Thought: 先查订单\nAction: queryOrder\nAction Input: "},
            {"role": "user", "content": 'Observation: {"orderId":"88231","price":1999}'},
            {"role": "user", "content": "还有订单88236，谢谢"}], "88231")


def _letters_only(rng: random.Random) -> Iterator[tuple]:
    # a digit where the example has a letter: twelve digits (a phone number) are not SF1234567890's shape
    yield ([{"role": "user", "content": "Call me on 861234567890 about SF1234567890, or 008613912345678."}],
           "SF1234567890")
    yield ([{"role": "user", "content": "订单 A123456 和 7123456，电话 9912345"}], "A123456")


def _letters_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if _a_list(got) is None and any(one[:1].isdigit() for one in got):
        return "A letter of the example is a letter only: 7123456 is not shaped like A123456."
    return None


_MARK_HINT = "A word ends at any mark that is not a Latin letter or digit: an id beside one counts."
_SKIPPED_HINT = "It skipped a user message: read every one, the customer's messages and the Observations."


def _neighbours(one: str, text: str) -> list[str]:
    """The two characters beside each place `one` stands in `text` (either case), "" at an end of the text."""
    return [text[at - 1: at] + text[at + len(one): at + len(one) + 1]
            for at in (match.start() for match in re.finditer(re.escape(one), text, re.IGNORECASE))]


def _beside_a_mark(one: str, text: str) -> bool:
    """Whether `one` stands in `text` only beside ASCII marks, spaces and the text's ends, a mark at least once."""
    beside = _neighbours(one, text)
    return bool(beside) and all(ch.isascii() and not ch.isalnum() for pair in beside for ch in pair) and \
        any(ch in string.punctuation for pair in beside for ch in pair)


def _skipped_the_first(messages: list[dict], example: str, got: list[str]) -> bool:
    """Whether `got` is what the user messages after the first hold, and the first holds ids no reading could miss:
    each with a space or an end of the text on both sides."""
    users = [m for m in messages if m["role"] == "user"]
    first = [one for one in _reference_ids_seen(users[:1], example) if one not in got]
    return bool(first) and got == _reference_ids_seen(users[1:], example) and all(
        any(pair.strip() == "" for pair in _neighbours(one, users[0]["content"])) for one in first)


def _keeps_letters(one: str, example: str) -> bool:
    return all(ch == ex for ch, ex in zip(one, example.upper()) if ex.isalpha())


def _ids_hint(args: tuple, expected: list[str], got: object) -> str | None:
    """What the answer most likely did, worked out from its list and the input's messages."""
    if _a_list(got) is not None or list(got) == expected:
        return None  # the shape's own message, or another one (a changed input), says it
    messages, example = args
    got = list(got)
    users = [m["content"] for m in messages if m["role"] == "user"]
    said = " ".join(users).upper()
    if any(one.upper() != example.upper() and one.upper() not in
           unicodedata.normalize("NFKC", " ".join(m["content"] for m in messages)).upper() for one in got):
        return ("It returned an id that none of these messages holds: it keeps something between calls (a cache, a "
                "module-level list).")
    if any(one.upper() not in said for one in got):
        return "An id only the model wrote, or only the system prompt's example, is not a fact."
    if got != [one.upper() for one in got] and [one.upper() for one in got] == expected:
        return "Upper-case each id: 'sf…' and 'SF…' are the same id."
    if len(got) != len(set(got)):
        return "Each id once. An id said twice is given once, where it first appears."
    if sorted(got) == sorted(expected) and got == _reference_ids_seen(
            [m for m in messages if not m["content"].startswith("Observation:")]
            + [m for m in messages if m["content"].startswith("Observation:")], example):
        return "It read the customer's messages first: keep the messages' order, Observations in their place."
    if sorted(got) == sorted(expected):
        return "Keep the order they first appear in."
    extra = [one for one in got if one.upper() not in expected]
    if any(re.search(rf"[a-z]{re.escape(one)}|{re.escape(one)}[a-z]", text) for one in extra for text in users):
        return ("Whole words only: with a letter or digit glued on, in either case (order88231, 88232x), it is "
                "another word.")
    if extra:
        return "Whole words only: with a letter or digit glued on (A88231, 9SF1234567890) it is another word."
    missed = [one for one in expected if one not in got]
    if not missed or any(one not in expected for one in got):
        return None
    if not any(one in text for one in missed for text in users):
        return "Match the letters in either case (sf1234567890 is an id), then upper-case them."
    if any(re.search(rf"{re.escape(before)}[^A-Z0-9]{re.escape(one)}", text.upper())
           for before in got for one in missed for text in users):
        return f"It missed {_brief(missed, 30)}: one mark between two ids ends the first and starts the second."
    if any(re.search(rf"[0-9],{one}|{one},[0-9]", unicodedata.normalize("NFKC", text).upper())
           for one in missed for text in users):  # a full-width ， is a comma once normalised
        return "A comma is no decimal point (nor ，): it ends a word, and '88231,88232' holds two ids."
    if any(ch.isalpha() for ch in example) and all(_keeps_letters(one, example) for one in got) and \
            not any(_keeps_letters(one, example) for one in missed):
        return f"Any letter A-Z in a letter's place: {missed[0]} is shaped like {example}."
    if len(users) > 1 and got == _reference_ids_seen([{"role": "user", "content": "".join(users)}], example):
        return "Read every user message, each on its own: an id at a message's end does not run into the next."
    if _skipped_the_first(messages, example, got):
        if got:  # it found the others: its shape is right, and the first message is what it left out
            return _SKIPPED_HINT
        # none at all, in a message where nothing hides them: a message left out, or a shape that fits no id of this
        # example's (one written in, \d escaped twice), gives this the same
        return ("It found none, though spaces part them: read every user message (the customer's messages, the first "
                "too), and make the shape from example.")
    observed = [text for text in users if text.startswith("Observation:")]
    customers = [text for text in users if text not in observed]
    if all(any(one in text for text in observed) for one in missed) and \
            not any(one in text for one in missed for text in customers):
        if any(f'"{one}"' not in text for one in missed for text in observed if one in text):
            return f"It missed {_brief(missed, 30)}: ids come from every Observation's text, JSON or not."
        return f"It missed {_brief(missed, 30)}: ids come from every Observation too."
    if not any(one in text for one in missed for text in observed):
        if (not got or any(one in text for one in got for text in customers)) and \
                all(_beside_a_mark(one, text) for one in missed for text in customers if one in text.upper()):
            return _MARK_HINT
        if any(re.search(rf"(?:[^\x00-\x7f]|_){re.escape(one)}|{re.escape(one)}(?:[^\x00-\x7f]|_)", text.upper())
               for one in missed for text in customers):  # what a \b (or \w) reading misses
            return (f"It missed {_brief(missed, 30)} in the customer's messages: next to Chinese or _ too (\\b and "
                    "\\w count Chinese characters and _ as part of a word).")
        return f"It missed {_brief(missed, 30)} in the customer's messages: next to Chinese, on any line, each one."
    return f"It missed {_brief(missed, 30)}: ids come from the customer's messages and from every Observation."


def _places(rng: random.Random) -> Iterator[tuple]:
    # a shape with letters after its digits too (a postal one): each place as in the example
    yield ([{"role": "user", "content": "Hello"},
            {"role": "user", "content": "My parcel EB987654321CN has not arrived, nor RR123456789DE"}], "EA123456789CN")


def _full_stops(rng: random.Random) -> Iterator[tuple]:
    # an id that ends a sentence: the full stop is not part of the word
    yield ([{"role": "user", "content": "Hello"},
            {"role": "user", "content": "It is SF2468013579. Or YT1357924680, I think"}], "SF1234567890")
    # a full stop with no space after it ends the word too, before a letter or a Chinese character
    yield ([{"role": "user", "content": "Orders 88232 and 88231.Thanks"}], "88231")
    yield ([{"role": "user", "content": "运单YT1357924680和SF2468013579.谢谢"}], "SF1234567890")


def _decimals(rng: random.Random) -> Iterator[tuple]:
    # digits beside a decimal point belong to a number (a price, an amount), not to an id
    yield ([{"role": "user", "content": "I paid ¥12345.67 for order 88231"}], "88231")
    yield ([{"role": "user", "content": "Observation: {\"price\": 12000.50, \"orderId\": \"88232\"}"}], "88231")
    # digits after the point too: 0.12345 is an amount
    yield ([{"role": "user", "content": "It weighs 0.12345 kg, order 88231"}], "88231")
    # one place after the point is a decimal too; a comma is no decimal point: it ends a word
    yield ([{"role": "user", "content": "It weighs 88231.5 g, order 88232"}], "88231")
    yield ([{"role": "user", "content": "Orders 88231,88232 please"}], "88231")


def _points_after_letters(rng: random.Random) -> Iterator[tuple]:
    # a point after a letter is no decimal point: it ends the word before, and the id after it counts
    yield ([{"role": "user", "content": "订单No.88231还没到"}], "88231")
    yield ([{"role": "user", "content": "Tracking no.SF2468013579, please"}], "SF1234567890")
    for _ in range(4):  # drawn: a word ending in a point just before the id, an order's or a parcel's, either language
        word = rng.choice(("No.", "no.", "NO.", "Nr.", "ord."))
        if rng.random() < 0.5:
            found, example = str(rng.randint(10000, 99999)), "88231"
        else:
            found, example = "SF" + "".join(rng.choice("0123456789") for _ in range(10)), "SF1234567890"
        said = rng.choice(("订单{w}{id}还没到", "Please check {w}{id} for me.", "单号 {w}{id}，谢谢", "It is {w}{id}, thanks."))
        yield ([{"role": "user", "content": said.format(w=word, id=found)}], example)


# The keyboard's marks an id may stand between (lesson 25's check draws them too): each ends a word, as a space does.
KEYBOARD_MARKS = ("_", "#", "=", "/", "-", ":", "@", "~", "+", "*", "|", "`", "'", '"', "&", "%")


def _beside_marks(rng: random.Random) -> Iterator[tuple]:
    # a word ends at anything that is not a Latin letter or a digit: _ too (which \b takes for a word character),
    # and any other mark of the keyboard
    yield ([{"role": "user", "content": "order_88231 还没到"}], "88231")
    yield ([{"role": "user", "content": "Tracking: SF2468013579_copy, id=YT1357924680"}], "SF1234567890")
    yield ([{"role": "user", "content": "订单#38112、<38119> 和 [38120]"}], "88231")
    drawn = set()
    for _ in range(4):  # drawn: ids between marks, an order's or a parcel's, either language
        example = rng.choice(("88231", "SF1234567890"))
        marks = [rng.choice(KEYBOARD_MARKS) for _ in range(4)]
        drawn.update(marks[:3])  # the fourth is drawn but not written
        ids = [_shape_like(rng, example) for _ in range(2)]
        said = rng.choice(("ref{0}{2}{1} and {3}{4}", "单号{0}{2}{1}，还有{3}{4}", "{0}{2}{1}{3}{4}"))
        yield ([{"role": "user", "content": said.format(marks[0], marks[1], ids[0], marks[2], ids[1])}], example)
    # every mark the draws left out, on both sides of an id (no rng: the rules after this one draw as before)
    for n, mark in enumerate(mark for mark in KEYBOARD_MARKS if mark not in drawn):
        if n % 2:
            yield ([{"role": "user", "content": f"ref{mark}SF2468013579{mark} or {mark}YT1357924680"}], "SF1234567890")
        else:
            yield ([{"role": "user", "content": f"order{mark}88231{mark}，还有{mark}38112"}], "88231")


def _marks_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if not isinstance(got, list) or all(one in got for one in expected):
        return _ids_hint(args, expected, got)
    said = " ".join(m["content"] for m in args[0] if m["role"] == "user").upper()
    if any(re.search(rf"_{one}|{one}_", said) for one in expected if one not in got):
        return "_ is not a Latin letter or digit: it ends a word (\\b takes it for a word character)."
    return _MARK_HINT


def _point_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if isinstance(got, list) and any(one not in got for one in expected):
        return "A point after a letter is no decimal point: in 'No.88231' the id counts."
    return _ids_hint(args, expected, got)


def read_from_a_decimal(got: object, expected: list[str], said: str) -> bool:
    """Whether the answer's list holds a word the reference left out that stands in `said` beside a decimal point
    with a digit on its other side (12345 of ¥12345.67): lessons 23 and 25 both hint at it."""
    return isinstance(got, list) and any(
        isinstance(one, str) and re.search(rf"{re.escape(one)}\.[0-9]|[0-9]\.{re.escape(one)}", said) is not None
        for one in got if one not in expected)


def _decimal_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if read_from_a_decimal(got, expected, " ".join(m["content"] for m in args[0] if m["role"] == "user")):
        return "Digits beside a decimal point belong to a number: '¥12345.67' and '0.12345' hold no id."
    return _ids_hint(args, expected, got)


def _places_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if _a_list(got) is not None:
        return None
    said = " ".join(m["content"] for m in args[0] if m["role"] == "user").upper()
    missed = [one for one in expected if one not in got]
    if missed and all(f"{one}." in said for one in missed):
        return (f"An id may end a sentence: in '{missed[0]}.' the full stop is not part of the id, whatever comes "
                "after it.")
    if not got and re.fullmatch("[A-Za-z]*[0-9]*", args[1]) is None:
        return "Follow the example place by place: EA123456789CN has letters after its digits too."
    return _ids_hint(args, expected, got)


def _han_for_letters(rng: random.Random) -> Iterator[tuple]:
    # Chinese characters where the example has letters: str.isalpha() says yes to them, but they are no Latin
    # letters, so they end the word before the digits (and the digits alone are too short for the shape)
    yield ([{"role": "user", "content": "我的运单号是1234567890，麻烦查一下"}], "SF1234567890")
    yield ([{"role": "user", "content": "请查订单123456，谢谢"}], "A123456")
    for _ in range(4):  # drawn: one id of the shape beside Han characters standing where its letters would
        example = rng.choice(("SF1234567890", "A123456", _tracking(rng)))
        letters = sum(ch.isalpha() for ch in example)
        one, han = _shape_like(rng, example), "".join(rng.choice("运单号是编码查询订") for _ in range(letters))
        digits = one[letters:]
        said = rng.choice(("单号{han}{digits}，另一个是 {one}", "{one} 和 {han}{digits} 都是我的", "Is {han}{digits} mine, or {one}?"))
        yield ([{"role": "user", "content": said.format(han=han, digits=digits, one=one)}], example)


def _han_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if isinstance(got, list) and any(isinstance(one, str) and re.search("[\u4e00-\u9fff]", one) for one in got):
        return "Only A to Z are letters of an id: a Chinese character (which str.isalpha() takes for a letter) ends a word."
    return _ids_hint(args, expected, got)


def _ascii_digits(rng: random.Random) -> Iterator[tuple]:
    # the text read NFKC-normalised, as ids_in reads it: full-width digits and letters (a Chinese keyboard's) are the
    # ASCII ones they stand for; another script's digits (Arabic-Indic) stay what they are, digits to \d and
    # str.isdigit() but not 0-9
    yield ([{"role": "user", "content": "订单８８２３１还没到，另一个是88232"}], "88231")
    yield ([{"role": "user", "content": "My parcel is SF１２３４５６７８９０, or maybe YT2468013579"}], "SF1234567890")
    yield ([{"role": "user", "content": "Order ٨٨٢٣١ or 88233"}], "88231")
    # full-width lower-case letters too: upper-cased once read
    yield ([{"role": "user", "content": "运单ｓｆ２４６８０１３５７９还没到"}], "SF1234567890")


def digits_slip(args: tuple, expected: list[str], got: object, letters: str = " (and ｓｆ is SF)") -> str | None:
    """What an answer got wrong about digits, lessons 23 and 25 alike, or None: a word kept as typed that NFKC
    changes (８８２３１), or one of the reference's missed that the messages hold only once NFKC-normalised; else a
    digit of another script taken (\\d's ٨). `letters`: what the first hint adds about full-width letters."""
    said = " ".join(m["content"] for m in args[0] if m["role"] == "user")
    if isinstance(got, list) and (any(isinstance(one, str) and unicodedata.normalize("NFKC", one) != one for one in got)
                                  or any(one not in got and one not in said.upper() for one in expected)):
        return f"Read the text NFKC-normalised, as ids_in does: ８８２３１ is 88231{letters}."
    if isinstance(got, list) and any(isinstance(one, str) and re.search(r"[^\x00-\x7f]", one) for one in got):
        return "Digits are 0 to 9 only, even after NFKC: \\d (and str.isdigit()) take another script's ٨ too."
    return None


def _digits_hint(args: tuple, expected: list[str], got: object) -> str | None:
    return digits_slip(args, expected, got) or _ids_hint(args, expected, got)


def _currency_signs(rng: random.Random) -> Iterator[tuple]:
    # a currency sign is a mark like any other: with no decimal point after the digits, ¥12345 holds the id 12345
    yield ([{"role": "user", "content": "I paid ¥12345 for order 88231"}], "88231")
    yield ([{"role": "user", "content": "价格￥38112，订单88231"}], "88231")  # the full-width yen of a Chinese keyboard
    yield ([{"role": "user", "content": "Not ¥12345.67, but $38112 and €88231"}], "88231")


def _currency_hint(args: tuple, expected: list[str], got: object) -> str | None:
    said = " ".join(m["content"] for m in args[0] if m["role"] == "user")
    if isinstance(got, list) and any(re.search(rf"[¥￥$€]{one}(?![.][0-9])", said) for one in expected if one not in got):
        return "A currency sign is no decimal point: it ends a word like any mark, and '¥12345' holds the id 12345."
    return _ids_hint(args, expected, got)


def _json_texts(rng: random.Random) -> Iterator[tuple]:
    # a user message that is JSON (a tool's result, a pasted record), an id in its text beside Chinese: read as the
    # text it is, JSON or not; json.dumps would write 订单88231 as \u8ba2\u535588231, an id glued to the escape
    yield ([{"role": "user", "content": '{"note":"订单88231已发货"}'}], "88231")
    for _ in range(6):  # drawn: an object or a list, an order's or a parcel's ids, as an Observation or not
        example = rng.choice(("88231", "SF1234567890", "A123456"))
        ids = [_shape_like(rng, example) for _ in range(rng.randint(1, 3))]
        notes = [rng.choice(("订单{}已发货", "运单{}，已签收", "退款{}处理中", "{}号")).format(one) for one in ids]
        data = rng.choice(({"status": "ok", "notes": notes}, [{"备注": note} for note in notes]))
        text = json.dumps(data, ensure_ascii=False)
        if rng.random() < 0.5:
            text = "Observation: " + text
        yield ([{"role": "user", "content": rng.choice(("Where are my parcels?", "我的东西呢"))},
                {"role": "user", "content": text}], example)


def _json_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if isinstance(got, list):
        for message in args[0]:
            text = message["content"].removeprefix("Observation:")
            missed = [one for one in expected if one not in got and one in message["content"].upper()]
            if missed and message["role"] == "user" and _json_or_none(text) is not None:
                return (f"It missed {_brief(missed, 30)} in JSON text: read the text as it came (json.dumps writes "
                        "订 as \\u8ba2, and the id beside it is glued to that).")
    return _ids_hint(args, expected, got)


IDS_RULES = (
    Rule("the whole words shaped like `example` (letters as letters, digits as digits) in the customer's messages "
         "and the Observations, in order", _shapes, _ids_hint),
    Rule("only the `user` messages (the customer's, the Observations), not the system's or the model's",
         _whose_words, _ids_hint),
    Rule("upper-cased (sf1234567890 is SF1234567890)", _cases, _ids_hint),
    Rule("each once, in the order they first appear", _once_in_order, _ids_hint),
    Rule("the example's letters are letters only: a digit in a letter's place makes another word",
         _letters_only, _letters_hint),
    Rule("each place as in the example (letters after digits too: EA123456789CN)", _places, _places_hint),
    Rule("a full stop ends a word: an id that ends a sentence counts", _full_stops, _places_hint),
    Rule("digits beside a decimal point belong to a number, not an id: ¥12345.67 and 0.12345 hold none", _decimals,
         _decimal_hint),
    Rule("a point with a letter before it is no decimal point: it ends a word, and No.88231 holds an id",
         _points_after_letters, _point_hint),
    Rule("a word ends at anything that is not a Latin letter or a digit, _ included: order_88231 and #88231 hold 88231",
         _beside_marks, _marks_hint),
    Rule("a Chinese character is no Latin letter: in 运单号是1234567890 it ends the word, which holds no SF1234567890",
         _han_for_letters, _han_hint),
    Rule("the text read NFKC-normalised, as ids_in reads it: a full-width ８８２３１ is the id 88231, but "
         "٨٨٢٣١ (no 0 to 9 even then) is none", _ascii_digits, _digits_hint),
    Rule("only a decimal point makes digits a number's: ¥12345, with none after it, holds the id 12345",
         _currency_signs, _currency_hint),
    Rule("each user message read as text, JSON or not: an id in JSON counts where it stands, beside Chinese too "
         '({"note":"订单88231已发货"} holds 88231)', _json_texts, _json_hint),
)


def _a_list(value: object) -> str | None:
    if isinstance(value, list) and all(isinstance(one, str) for one in value):
        return None
    not_a_tuple = ", not a tuple" if isinstance(value, tuple) else ""
    return f"it returned {_brief(value, 40)}: return a list of ids (strings){not_a_tuple}"


def _show_messages(args: tuple) -> str:
    """The conversation in a line: each message's role and its words (the system prompt's cut short), line ends
    as ⏎, the whole cut in the middle when long."""
    messages, example = args
    said = " | ".join(f"{m['role']}: " + (m["content"][:12] + "…" if m["role"] == "system" else m["content"])
                      for m in messages).replace("\n", "⏎")
    if len(said) > 80:
        said = f"{said[:50]} … {said[-27:]}"
    return f"example {shown(example)}; {said}"


@grades("Exercise 2", spec=Spec(IDS_RULES))
def check_ids_seen(ids_seen: Callable[[list[dict], str], list[str]] | None) -> None:
    """23, exercise 2: ids_seen(messages, example) -> the ids shaped like `example` that the customer wrote or an
    Observation showed, upper-cased, each once, in the order they first appear."""
    exercise = "Exercise 2"
    if ids_seen is None:
        return _not_attempted(exercise, "Write def ids_seen(messages, example): ... returning a list of ids.")
    if not callable(ids_seen):
        _fail(exercise, f"ids_seen should be a function, got {type(ids_seen).__name__}")
    tried = agree_on(exercise, "check_ids_seen", IDS_RULES, ids_seen, _reference_ids_seen, shape=_a_list,
                     call="ids_seen(messages, example)", show=_show_messages)
    _passed(exercise, f"ids_seen read {tried} generated conversations: ids from the customer and the Observations "
                      "only, of the example's shape, upper-cased, once each, in order.")
