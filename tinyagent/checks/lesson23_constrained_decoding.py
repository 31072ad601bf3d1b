"""Lesson 23's checks: a GBNF rule written by hand for one tool's input, and the narrowing of a step's ids."""

from __future__ import annotations

from tinyagent.checks.reporting import _fail, _not_attempted, _passed, _run, grades
from tinyagent.protocols.gbnf import GrammarError, parse_grammar

# The shop's tracking numbers (two capital letters, ten digits), and inputs that are not one.
TRACKING_NUMBERS = ("SF1234567890", "YT2468013579", "ZT5566778899")
NOT_TRACKING_NUMBERS = (
    ("88231", "an order id"),
    ("sf1234567890", "lower-case letters"),
    ("SF123456789", "nine digits"),
    ("SF12345678901", "eleven digits"),
    ("S1234567890", "one letter"),
    ("SFX1234567890", "three letters"),
    ("SF1234567890 ", "a space after it"),
    ("SF1234567890\nObservation: {}", "an Observation after it"),
    ("", "nothing at all"),
)


@grades("Exercise 1")
def check_tracking_grammar(tracking_grammar: str | None) -> None:
    """23, exercise 1: GBNF whose root allows exactly a tracking number: two capital letters, ten digits."""
    exercise = "Exercise 1"
    if tracking_grammar is None:
        return _not_attempted(exercise, 'Set tracking_grammar to GBNF text, e.g. \'root ::= "SF" ...\'.')
    if not isinstance(tracking_grammar, str):
        _fail(exercise, f"tracking_grammar should be GBNF text (a str), got {type(tracking_grammar).__name__}")
    try:
        grammar = parse_grammar(tracking_grammar)
    except GrammarError as exc:
        _fail(exercise, f"llama.cpp could not read this grammar either: {exc}")
    for number in TRACKING_NUMBERS:
        if not grammar.accepts(number):
            _fail(exercise, f"it refuses {number}, one of the shop's tracking numbers: any two capital letters, "
                            "then ten digits")
    for text, what in NOT_TRACKING_NUMBERS:
        if grammar.accepts(text):
            _fail(exercise, f"it allows {text!r} ({what}): a tracking number is exactly two capital letters "
                            "and ten digits, with nothing after them")
    _passed(exercise, f"your rule allows the shop's {len(TRACKING_NUMBERS)} tracking numbers and refuses the "
                      f"{len(NOT_TRACKING_NUMBERS)} near misses.")


# (what the conversation is, its messages, the example, the ids a right answer finds in order)
_SYSTEM = {"role": "system", "content": "Tools: queryOrder (e.g. 88231), queryLogistics (e.g. SF1234567890)."}
IDS_CASES = [
    ("the question alone", [_SYSTEM, {"role": "user", "content": "Where are orders 88234 and 88232?"}],
     "88231", ["88234", "88232"]),
    ("an Observation", [_SYSTEM, {"role": "user", "content": "Where is my parcel? Order 88231."},
                        {"role": "assistant", "content": "Thought: look\nAction: queryOrder\nAction Input: 88231"},
                        {"role": "user", "content": 'Observation: {"orderId":"88231","price":1999,'
                                                    '"signTime":"2026-06-22","trackingNo":"SF1234567890"}'}],
     "SF1234567890", ["SF1234567890"]),
    ("the model's own words", [_SYSTEM, {"role": "user", "content": "Refund order 88235 please."},
                               {"role": "assistant", "content": "Thought: maybe 88236 or sf9999999999\n"
                                                                "Action: queryOrder\nAction Input: 88235"},
                               {"role": "user", "content": 'Observation: {"orderId":"88235","trackingNo":"yt2468013579"}'}],
     "SF1234567890", ["YT2468013579"]),
    ("an id said twice", [_SYSTEM, {"role": "user", "content": "Order 88231, yes 88231, and 2026 is the year."}],
     "88231", ["88231"]),
    # a word is shaped like the example only as a whole: a phone number holds five digits in a row, and is no order id
    ("longer words", [_SYSTEM, {"role": "user", "content": "Call me on 13988231000 or 4008823100 about order 88233."}],
     "88231", ["88233"]),
]


@grades("Exercise 2")
def check_ids_seen(ids_seen) -> None:
    """23, exercise 2: ids_seen(messages, example) -> the ids shaped like `example` that the customer wrote or an
    Observation showed, upper-cased, each once, in the order they first appear."""
    exercise = "Exercise 2"
    if ids_seen is None:
        return _not_attempted(exercise, "Write def ids_seen(messages, example): ... returning a list of ids.")
    if not callable(ids_seen):
        _fail(exercise, f"ids_seen should be a function, got {type(ids_seen).__name__}")
    for what, messages, example, expected in IDS_CASES:
        got = _run(exercise, f"ids_seen(<{what}>, {example!r})", ids_seen, [dict(m) for m in messages], example)
        if not isinstance(got, (list, tuple)):
            _fail(exercise, f"ids_seen should return a list of ids, got {type(got).__name__}")
        got = list(got)
        if got == expected:
            continue
        said = " ".join(m["content"] for m in messages if m["role"] != "system").upper()
        if any(i in _SYSTEM["content"] and i not in said for i in got):
            _fail(exercise, f"on {what}: it found {got}; the system prompt's examples are not the customer's ids")
        if what == "the model's own words":
            _fail(exercise, f"on {what}: expected {expected}, got {got}; an id only the model wrote is not a fact, "
                            "and ids are upper-cased")
        if len(got) != len(set(got)):
            _fail(exercise, f"on {what}: expected {expected}, got {got}; each id once")
        if sorted(got) == sorted(expected):
            _fail(exercise, f"on {what}: expected {expected}, got {got}; keep the order they first appear in")
        missed = [i for i in expected if i not in got]
        if missed and all(i in expected for i in got):
            _fail(exercise, f"on {what}: expected {expected}, got {got}; it missed {missed}: ids come from the "
                            "customer's messages and from every Observation")
        _fail(exercise, f"on {what}: expected {expected}, got {got}; only words of the example's shape "
                        f"({len(example)} characters, letters and digits where it has them)")
    _passed(exercise, "ids_seen takes ids from the customer and the Observations only, once each, in order.")
