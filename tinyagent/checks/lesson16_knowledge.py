"""Lesson 16 (knowledge as a tool): overlapping windows, and a re-rank by term coverage."""

from __future__ import annotations

import functools
import random
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import COURSE_NOW, _brief, _fail, _not_attempted, _passed, grades, shown
from tinyagent.clock import fixed_clock
from tinyagent.shop import Shop
from tinyagent.shop.knowledge import Passage, query_terms, search_terms
from tinyagent.shop.policies import POLICY_FOLDER

_NO_PUNCTUATION = "签收次日起十五天内出现性能故障的属于质量问题经售后检测确认后可以退货也可以换货往返运费由商家承担"

# (text, size, overlap, what it is): the texts the check started from, the first of its generated inputs.
WINDOW_CASES = [
    (_NO_PUNCTUATION, 20, 5, "48 Chinese characters, size 20, overlap 5"),
    (_NO_PUNCTUATION, 20, 0, "the same text with no overlap"),
    (_NO_PUNCTUATION[:35], 20, 5, "35 characters, size 20, overlap 5: the second window reaches the end"),
    (_NO_PUNCTUATION[:20], 20, 5, "a text exactly one window long"),
    (_NO_PUNCTUATION[:21], 20, 5, "a text one character longer than a window"),
    ("Within 7 days from the day after delivery, an item can be returned without giving a reason.", 30, 10,
     "an English sentence, size 30, overlap 10"),
    ("", 20, 5, "an empty text"),
]


def _windows(text: str, size: int, overlap: int) -> list[str]:
    """16, exercise 1's answer (the solution's behaviour): windows of `size` characters, each starting
    `size - overlap` after the last, until one reaches the end."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        pieces.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += size - overlap
    return pieces


@dataclass(frozen=True)
class _NotAList:
    """What windows returned when it was not a list: its type, and what it held (the same on every call, so a
    generator is not taken for state kept between calls)."""

    kind: str
    held: tuple


def _as_returned(windows: Callable[[str, int, int], Any]) -> Callable[[str, int, int], Any]:
    def run(text: str, size: int, overlap: int) -> Any:
        got = windows(text, size, overlap)
        if isinstance(got, (list, str, bytes)) or not hasattr(got, "__iter__"):
            return got
        return _NotAList(type(got).__name__, tuple(got))

    return run


def _list_of_strings(value: Any) -> str | None:
    if isinstance(value, _NotAList):
        return f"it returned a {value.kind}: return the windows as a list of strings"
    if isinstance(value, list) and all(isinstance(piece, str) for piece in value):
        return None
    return f"it returned {type(value).__name__} {_brief(value, 40)}: return the windows as a list of strings"


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_SENTENCES = (_NO_PUNCTUATION, "七天无理由退货自签收次日起计算",
              "Within 7 days from the day after delivery, an item can be returned without giving a reason.",
              "Refunds go back the way you paid, in 1-3 working days.",
              "发票在订单完成后开具。\n退款后发票作废。", "Engraved items 🎁 cannot be returned.\n\nAsk support first.",
              "保修期内的性能故障 (quality problems) 可以换货", "¡Olé! Ünïcödé tëxt — with dashes…")


def _text(rng: random.Random, length: int) -> str:
    text = ""
    while len(text) < length:
        text += rng.choice(_SENTENCES) + rng.choice(("", " ", "\n"))
    return text[:length]


def _sized(rng: random.Random) -> tuple[int, int]:
    size = rng.choice((rng.randint(2, 9), rng.randint(10, 60)))
    return size, rng.randint(1, size - 1)


def _cut_texts(rng: random.Random) -> Iterator[tuple]:
    for text, size, overlap, _ in WINDOW_CASES:
        if text:
            yield (text, size, overlap)
    for _ in range(14):
        size, overlap = _sized(rng)
        yield (_text(rng, rng.randint(1, 4 * size + 10)), size, overlap)
    # a window of only spaces or line ends is a window too (no draws: the later rules' inputs stay as they were)
    yield ("退货须知如下" + "\n" * 4 + "七天无理由退货。", 4, 1)
    yield ("Refunds:" + " " * 4 + "1-3 days.", 4, 2)
    # a text of only spaces or line ends is no empty text: its windows are kept, as any text's
    # (spaces of several kinds, so that where each window starts still shows)
    yield (" \t\n\u3000\u2003" * 2, 4, 1)
    yield (" \u3000\n" * 2 + "\t", 4, 2)


def _ends(rng: random.Random) -> Iterator[tuple]:
    """Texts whose last window ends at, one before, or one after the end: where a loop stops too early or late."""
    for _ in range(5):
        size, overlap = _sized(rng)
        whole = size + (size - overlap) * rng.randint(0, 3)
        for length in (whole - 1, whole, whole + 1):
            if length > 0:
                yield (_text(rng, length), size, overlap)
    yield (_text(rng, 1), 1 + rng.randint(1, 30), 0)


def _no_overlap(rng: random.Random) -> Iterator[tuple]:
    for _ in range(5):
        size = rng.randint(1, 40)
        yield (_text(rng, rng.randint(1, 5 * size)), size, 0)


def _empty(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        size, overlap = _sized(rng)
        yield ("", size, overlap)


def _repeats(rng: random.Random) -> Iterator[tuple]:
    """Text that repeats itself: windows with the same text are still windows (inside means by position)."""
    yield ("哈" * 12, 4, 2)
    yield ("ab" * 10, 6, 2)
    yield ("=" * 20 + "\n退款后发票作废。", 8, 3)


def _window_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """What a wrong list of windows most likely did, judged from what came out."""
    text, size, overlap = args
    if got == expected or not isinstance(got, list):
        return None
    if not text:
        return "— an empty text has no windows: return []."
    if not text.strip() and got == []:  # a blank text taken for an empty one, or its blank windows left out
        return ("— a text of only spaces or line ends is not empty, and its windows are windows: strip none, and "
                "keep one of only spaces.")
    if any(len(piece) > size for piece in got):
        return f"— a window is longer than size ({size})."
    if got in ([piece for piece in expected if piece.strip()], [piece.strip() for piece in expected],
               [piece.strip() for piece in expected if piece.strip()]):
        return "— a window is the text as it is, spaces and line ends too: strip none, and keep one of only spaces."
    if any("\n" in piece for piece in expected) and not any("\n" in piece for piece in got):
        return "— the text is cut as one string: a window may hold a line end (\\n) and run on into the next line."
    if len(got) > len(expected) and got[: len(expected)] == expected:
        return "— the last window lies inside the one before: stop once a window reaches the end of the text."
    if len(got) < len(expected) and set(got) == set(expected):
        return "— windows with the same text are still windows: one lies inside another by position only."
    if text.encode() != text.encode("ascii", errors="ignore") and got in (
            [piece.decode(errors=errors) for piece in _windows(text.encode(), size, overlap)]
            for errors in ("ignore", "replace")):
        return "— size and overlap count characters, not bytes: cut the str itself, not text.encode()."
    step = size - overlap
    rebuilt = "".join(piece if n == 0 else piece[overlap:] for n, piece in enumerate(got))
    if (len(rebuilt) == len(text) and rebuilt != text and got == _windows(rebuilt, size, overlap)) or (
            got == _windows(unicodedata.normalize("NFKC", text), size, overlap)):
        return "— the windows are in the right places, but some characters are not the text's: cut it as it is."
    if any(len(piece) < size for piece in got[:-1]) and all(
            piece and piece == text[n * step : n * step + len(piece)] for n, piece in enumerate(got)):
        # every window starts where it should, one before the last ends early: text[start : start + size - 1]
        return (f"— a window before the last is shorter than size ({size}): each window is "
                "text[start : start + size].")
    if (len(expected) > 1 and len(got) == len(expected) and got[:-1] == expected[:-1] and got[-1] != expected[-1]
            and got[-1] == text[-size:]):
        return (f"— the last window was made size ({size}) long: it may be shorter, as it starts size - overlap = "
                f"{size - overlap} characters after the one before and runs to the end of the text.")
    if len(got) == len(expected) > 1 and got[:-1] == expected[:-1] and text.endswith(got[-1]):
        return (f"— the last window starts size - overlap = {size - overlap} characters after the one before too, and "
                "runs to the end of the text.")
    if len(got) > 1 and got[1] != text[size - overlap : 2 * size - overlap]:
        return f"— each window starts size - overlap = {size - overlap} characters after the one before."
    if len(got) < len(expected):
        return "— the windows stop before the end of the text: the last one must reach it."
    return None


WINDOW_RULES = (
    Rule("windows of size characters, size - overlap apart", _cut_texts, _window_hint),
    Rule("it stops once a window reaches the end of the text", _ends, _window_hint),
    Rule("with overlap=0 it is fixed_chunks", _no_overlap, _window_hint),
    Rule("an empty text has no windows", _empty, _window_hint),
    Rule("a window lies inside the one before by its position, not its text: text that repeats is cut too",
         _repeats, _window_hint),
)


def _show_window_args(args: tuple) -> str:
    text, size, overlap = args
    return f"{_brief(text, 30)} ({len(text)}), size={size}, overlap={overlap}"


@grades("Exercise 1", spec=Spec(WINDOW_RULES))
def check_overlapping_windows(windows: Callable[[str, int, int], list[str]] | None) -> None:
    """16, exercise 1: lesson 16's fixed-size chunks, with an overlap."""
    exercise = "Exercise 1"
    if windows is None:
        return _not_attempted(exercise, "Write def windows(text, size, overlap) in the cell above.")
    if not callable(windows):
        _fail(exercise, f"windows should be a function, got {type(windows).__name__}")
    tried = agree_on(exercise, "check_overlapping_windows", WINDOW_RULES, _as_returned(windows), _windows,
                     shape=_list_of_strings, call="windows", show=_show_window_args)
    return _passed(exercise, f"{tried} generated texts cut into windows that overlap by exactly the overlap, and no "
                             "window is wasted at the end.")


def _coverage_order(question: str, passages: list) -> list:
    """16, exercise 2's answer (the solution's behaviour): passages by how many distinct question terms their
    section and content hold; ties keep their order."""
    terms = query_terms(question)
    return sorted(passages, key=lambda passage: _terms_held(terms, passage), reverse=True)


def _terms_held(terms: list[str], passage: Any) -> int:
    """How many of `terms` the passage holds: among search_terms of its section and content, each once."""
    words = set(search_terms(f"{passage.section} {passage.content}"))
    return sum(term in words for term in terms)


def _ties_reordered(args: tuple, expected: Any, got: Any) -> str | None:
    """When the answer's order is right by the counts and differs only among passages that hold as many terms
    (a reversed ascending sort, say): the tie rule, which these inputs meet before its own."""
    if not isinstance(got, str) or got == expected:
        return None
    question, passages = args
    terms = query_terms(question)
    want, have = ([int(place[1:]) for place in order.split()] for order in (expected, got))
    count = {place: _terms_held(terms, passages[place - 1]) for place in want}
    if [count[place] for place in want] != [count.get(place) for place in have]:
        return None
    first, other = next((a, b) for a, b in zip(want, have) if a != b)
    return (f"— #{first} and #{other} hold as many terms: passages that hold as many terms keep the order they came "
            "in (bm25's).")


def _stop_words_kept(args: tuple, expected: Any, got: Any) -> str | None:
    """An order by the terms of search_terms(question), stop words and all, not query_terms(question)."""
    if got == expected:
        return None
    question, passages = args
    kept = search_terms(question)
    if got not in {_order(passages, lambda p: _held_in(kept, f"{p.section} {p.content}")),
                   _order(passages, lambda p: sum(term in search_terms(f"{p.section} {p.content}") for term in kept))}:
        return None
    stop = [term for term in dict.fromkeys(kept) if term not in query_terms(question)]
    return (f"— the question's terms are query_terms(question): stop words such as {', '.join(map(repr, stop[:3]))} "
            "are left out.")


def _least_first(args: tuple, expected: Any, got: Any) -> str | None:
    """An order by the right counts, least first (sorted without reverse=True), or the order given (not sorted at
    all); where the two are the same order, both."""
    question, passages = args
    terms = query_terms(question)
    ascending = " ".join(f"#{n + 1}" for n in sorted(range(len(passages)),
                                                     key=lambda n: _terms_held(terms, passages[n])))
    given = " ".join(f"#{n}" for n in range(1, len(passages) + 1))
    if got == expected or got not in (ascending, given):
        return None
    if got == given != ascending:
        return "— it returned the passages in the order given: sort them by how many terms each holds, most first."
    most_first = "— most first: the passage that holds the most terms comes first (sorted(..., reverse=True))."
    return most_first if got != given else f"{most_first} Here the order given is least first: kept as given, wrong too."


def _share_not_count(args: tuple, expected: Any, got: Any) -> str | None:
    """An order by the share of the passage's terms (or words, or characters) that are the question's: the count
    divided by the passage's length, so that a longer passage that holds more terms ranks lower."""
    if got == expected:
        return None
    question, passages = args
    terms = query_terms(question)
    sizes = (lambda text: len(set(search_terms(text))), lambda text: len(search_terms(text)), len,
             lambda text: len(text.split()))
    for size in sizes:
        if got == _order(passages, lambda p, size=size: _terms_held(terms, p) / max(1, size(f"{p.section} {p.content}"))):
            return ("— it divided by the passage's length: the order is by how many terms a passage holds, not their "
                    "share of it (a longer passage is not worth less).")
    return None


def _in_order_hint(args: tuple, expected: Any, got: Any) -> str | None:
    return (_ties_reordered(args, expected, got) or _stop_words_kept(args, expected, got)
            or _least_first(args, expected, got) or _share_not_count(args, expected, got))


def rerank_cases() -> list[tuple[str, list, str]]:
    """(question, passages, what it is): the real shop's bm25 results for one question, and small made-up ones."""
    with Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as shop:
        shop.import_documents(POLICY_FOLDER)
        opened = shop.search_passages("Can I return an opened item without a reason?", 5, scope="documents")

    def made_up(*items: tuple[str, str, float]) -> list:
        return [Passage("Returns", content, score, score, "made-up.md", section, n)
                for n, (section, content, score) in enumerate(items, start=1)]

    return [
        ("Can I return an opened item without a reason?", opened, "bm25's five best for the opened-item question"),
        ("engraved items returned reason", made_up(
            ("", "engraved engraved engraved engraved", 9.0),
            ("", "returned items", 7.0),
            ("", "engraved items cannot be returned without a reason", 5.0)),
         "a passage that repeats one word against one that holds them all"),
        ("包邮 运费", made_up(
            ("发货时效", "现货商品 48 小时内发货。", 3.0),
            ("运费", "不满 99 元收取运费 8 元。", 2.5),
            ("包邮门槛", "满 99 元免运费。", 2.0)),
         "a term found only in a section heading"),
        ("退款 到账", made_up(
            ("发票", "订单退款后发票作废。", 1.0),
            ("取消", "取消后款项全额退款。", 4.0),
            ("退款到账", "审核通过后 1-3 个工作日原路退回。", 2.0)),
         "two passages with the same count, in the order they came"),
    ]


@functools.cache
def _shop_results() -> tuple[tuple[str, tuple[Passage, ...]], ...]:
    """The real shop's bm25 results for a few questions (built once: a shop with the policy documents)."""
    questions = ("Can I return an opened item without a reason?", "退货运费谁承担？", "How long does a refund take?",
                 "保修期内坏了可以换货吗")
    with Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as shop:
        shop.import_documents(POLICY_FOLDER)
        return tuple((question, tuple(shop.search_passages(question, 5, scope="documents")))
                     for question in questions)


class _Order(str):
    """An order as `_placed` gives it ("#2 #1"), shown in a failure as it is written; an empty one (no passages
    given) as `[] (no passages)`, not as ''."""

    def __repr__(self) -> str:
        return str.__repr__(self) if self else "[] (no passages)"


# Orders of a type named for what my_rerank returns: generated.py names the reference's value by its type ("returned
# None for every input, where a list of passages was expected").
_Ranked = type("list of passages", (_Order,), {"__module__": __name__})


def _order(passages: list, count: Callable[[Any], int]) -> str:
    """The order a re-rank by `count(passage)` gives, most first, ties as given: "#2 #1 #3"."""
    ranked = sorted(range(len(passages)), key=lambda n: count(passages[n]), reverse=True)
    return " ".join(f"#{n + 1}" for n in ranked)


def _held_in(terms: list[str], text: str) -> int:
    """How many of `terms` search_terms(text) holds, each once."""
    return len(set(terms) & set(search_terms(text)))


@dataclass(frozen=True)
class _Misplaced:
    """What my_rerank did that no rule asks for: handed back something it was not given, or changed the list."""

    what: str


def _placed(rerank: Callable[[str, list], Any]) -> Callable[[str, list], Any]:
    """`rerank(question, passages)` as the passages' places in the list it was given ("#2 Conditions"), so two
    answers agree when they return the same objects in the same order; a returned object that was not given,
    or a given list changed, is the outcome instead."""

    def run(question: str, passages: list) -> Any:
        before = list(passages)
        got = rerank(question, passages)
        if [id(p) for p in passages] != [id(p) for p in before]:
            return _Misplaced("it changed the list it was given (sorted it in place?): return a new list, and "
                              "leave bm25's order to the caller")
        if got is None:
            return None  # generated.py says what None for every input means; for some, _the_passages does
        if got is passages:
            return _Misplaced("it returned the list it was given (sorted it in place?): return a new list, and "
                              "leave bm25's order to the caller")
        if not isinstance(got, list):
            return _Misplaced(f"it returned a {type(got).__name__}: return a list of the passages")
        place = {id(p): n for n, p in enumerate(before, start=1)}
        if sorted(place.get(id(p), 0) for p in got) != sorted(place.values()):
            return _Misplaced(f"it returned {_brief([_label(p) for p in got], 40)}: return every passage it was "
                              "given (the same objects), once each, in a new order")
        return _Ranked(" ".join(f"#{place[id(p)]}" for p in got))

    return run


def _label(passage: Any) -> str:
    if not isinstance(passage, Passage):
        return repr(passage)[:20]
    return (passage.section.split(" › ")[-1] or passage.content)[:10]


def _the_passages(value: Any) -> str | None:
    if value is None:
        return "it returned None: return the list of passages (print only shows a value)"
    return value.what if isinstance(value, _Misplaced) else None


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
_EN_TERMS = ("return", "opened", "item", "reason", "refund", "shipping", "invoice", "warranty", "engraved", "days")
_EN_LOOK_ALIKES = {"return": "returned", "item": "items", "opened": "reopened", "refund": "refunds",
                   "day": "days", "invoice": "invoices"}
_ZH_TERMS = ("退货", "运费", "包邮", "发票", "保修", "退款", "到账", "签收", "换货")
_FILLER = ("the", "customer", "within", "seven", "after", "delivery", "的", "可以", "订单", "商家", "一律")


def _question(rng: random.Random) -> str:
    english = rng.random() < 0.5
    terms = rng.sample(_EN_TERMS if english else _ZH_TERMS, rng.randint(2, 4))
    if english:
        return rng.choice(("{}?", "Can I {}?", "what about {}", "{}")).format(" ".join(terms))
    return rng.choice(("{}？", "请问{}", "{}怎么算", "{}")).format(" ".join(terms))


def _passage(rng: random.Random, terms: list[str], n: int, *, section: str = "", score: float | None = None) -> Passage:
    words = [*terms, *rng.sample(_FILLER, 3)]
    rng.shuffle(words)
    # bm25's order is by score: a later passage scores less, unless the input says otherwise
    score = score if score is not None else round(12 - n - 0.9 * rng.random(), 3)
    return Passage("Policies", " ".join(words), score, score, "made-up.md", section, n)


def _some_of(rng: random.Random, terms: list[str]) -> list[str]:
    return rng.sample(terms, rng.randint(0, len(terms)))


def _mixed_lists(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        question = _question(rng)
        terms = query_terms(question)
        yield (question, [_passage(rng, _some_of(rng, terms), n) for n in range(1, rng.randint(2, 8))])
    yield (_question(rng), [])
    yield (_question(rng), [_passage(rng, [], 1)])
    # the passages hold the question's stop words ('can', 'i', 'the'): they are no terms of it
    yield ("Can I return the item?", [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", "", n)
                                      for n, content in enumerate(("return the item", "item within 7 days",
                                                                   "can I open the box"), start=1)])
    yield from _long_and_short()


def _long_and_short() -> Iterator[tuple]:
    """A long passage that holds more of the question's terms, a short one that holds fewer and one that holds none,
    in two orders (no draws: the later rules' inputs stay as they were): a count of terms, not their share of the
    passage. Each order differs from the order given, from least first and from the order by share."""
    for terms in (_EN_TERMS[:3], _ZH_TERMS[:3], _EN_TERMS[3:6], _ZH_TERMS[3:6]):
        short, long, none = terms[:1], [*terms[1:], *(_FILLER * 2)], _FILLER[:4]
        for contents in ((none, long, short), (long, none, short)):
            yield (" ".join(terms), [Passage("Policies", " ".join(words), 12.0 - n, 12.0 - n, "made-up.md", "", n)
                                     for n, words in enumerate(contents, start=1)])


def _look_alikes(rng: random.Random) -> Iterator[tuple]:
    """Passages that hold a question term only inside a longer word, in another case, or a lone Han character
    only inside a pair: no match as the index splits text."""
    for _ in range(6):
        terms = rng.sample([term for term in _EN_TERMS if term in _EN_LOOK_ALIKES], 2)
        question = " ".join(terms) + rng.choice(("?", ""))
        held = [[_EN_LOOK_ALIKES[term] for term in terms], terms[:1], [terms[0].upper()]]
        rng.shuffle(held)
        yield (question, [_passage(rng, words, n) for n, words in enumerate(held, start=1)])
    for _ in range(3):
        pair = rng.choice(_ZH_TERMS)
        question = f"{pair[0]} {rng.choice(_ZH_TERMS)}"  # a lone character is a term of its own
        yield (question, [_passage(rng, [pair], 1), _passage(rng, [pair[0]], 2)])


def _in_headings(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        question = _question(rng)
        terms = query_terms(question)
        heading = " › ".join(["Policies", *terms[:2]]) if rng.random() < 0.5 else f"售后 › {terms[0]}"
        passages = [_passage(rng, terms[:1], 1), _passage(rng, [], 2, section=heading),
                    _passage(rng, terms[-1:], 3)]
        yield (question, passages)
    # terms in both the heading and the content: the heading read as search_terms reads it, not only when the
    # content holds nothing, not split at spaces only
    for question, items in (
            ("Can I return an opened item without a reason?", (("", "item in its box"),
                                                               ("Policies › opened", "return it later"))),
            ("退货运费谁承担？", (("", "运费由买家承担"), ("售后 › 退货运费", "退货须在七天内申请"))),
            ("opened item return", (("", "return the item"), ("Policies › Opened, item", "return within 7 days")))):
        yield (question, [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", section, n)
                          for n, (section, content) in enumerate(items, start=1)])
    # Chinese with no spaces: a text split at spaces finds 退货 in the heading and nothing in the content; then
    # a term in the heading only, as a word of its own: found split at spaces, missed with the heading unread
    for question, items in (("退货运费？", (("", "运费 8 元"), ("售后 › 退货", "退货运费由买家承担"))),
                            ("运费？", (("", "满 99 元包邮"), ("售后 › 运费", "8 元")))):
        yield (question, [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", section, n)
                          for n, (section, content) in enumerate(items, start=1)])


def _repeats(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        question = _question(rng)
        terms = query_terms(question)
        repeated = _passage(rng, [terms[0]] * rng.randint(3, 8), 1)
        holds_more = _passage(rng, terms[:2], 2)
        yield (question, [repeated, holds_more, _passage(rng, [], 3)])
    # a term in both the heading and the content is held once: section and content are one text
    for question, items in (
            ("Can I return an opened item without a reason?", (("Policies › return", "return it within 7 days"),
                                                               ("", "opened item"))),
            ("退货运费谁承担？", (("售后 › 运费", "运费由买家承担"), ("", "退货运费")))):
        yield (question, [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", section, n)
                          for n, (section, content) in enumerate(items, start=1)])
    # a term repeated, no heading: occurrences counted is told apart from section and content counted apart
    yield ("退货运费", [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", "", n)
                       for n, content in enumerate(("运费运费运费", "退货运费"), start=1)])


def _shop_lists(rng: random.Random) -> Iterator[tuple]:
    for question, passages in _shop_results():
        yield (question, list(passages))


def _ties(rng: random.Random) -> Iterator[tuple]:
    """Passages that hold as many terms, with scores in any order: they keep the order they came in."""
    for _ in range(6):
        question = _question(rng)
        terms = query_terms(question)
        count = rng.randint(0, len(terms))
        passages = [_passage(rng, rng.sample(terms, count), n, score=round(rng.uniform(0.5, 12), 3))
                    for n in range(1, rng.randint(3, 6))]
        passages.insert(rng.randint(0, len(passages)), _passage(rng, terms, 9, score=0.1))
        yield (question, passages)
    # positions that do not follow the order given: a tie is not broken by position either
    for question, items in (("退货 运费", (("运费 8 元", 7), ("退货须在七天内申请", 2), ("退货运费由买家承担", 5))),
                            ("return item", (("item in its box", 9), ("return within 7 days", 4),
                                             ("return the item", 1)))):
        yield (question, [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", "", position)
                          for n, (content, position) in enumerate(items, start=1)])


def _tie_hint(args: tuple, expected: Any, got: Any) -> str | None:
    return None if got == expected else "— the order given (bm25's), whatever their scores or positions."


def _in_titles(rng: random.Random) -> Iterator[tuple]:
    """A document's title that holds the question's terms: not read, only the section and the content are."""
    for _ in range(4):
        question = _question(rng)
        terms = query_terms(question)
        titled = replace(_passage(rng, [], 1), title=" ".join(terms))
        yield (question, [titled, _passage(rng, terms[:1], 2)])


def _same_content(rng: random.Random) -> Iterator[tuple]:
    """Passages with the same content under different headings: each holds its own heading's terms (an answer that
    keeps its counts by content gives them all the last one's)."""
    for question, items in (("退货运费", (("", "运费由买家承担"), ("售后 › 退货", "运费由买家承担"))),
                            ("return item", (("", "the item in its box"), ("Policies › Return", "the item in its box"))),
                            ("opened item reason", (("", "item"), ("Opened", "item"), ("Opened › Reason", "item")))):
        yield (question, [Passage("Policies", content, 12.0 - n, 12.0 - n, "made-up.md", section, n)
                          for n, (section, content) in enumerate(items, start=1)])


def _counted_by_content(args: tuple, expected: Any, got: Any) -> str | None:
    if got == expected:
        return None
    return ("— these passages have the same content under different headings: count each passage on its own, its "
            "own heading too (not by its content).")


def _twice_held(args: tuple, expected: Any, got: Any) -> str | None:
    """A term counted more than once: as often as it occurs, or once in the heading and again in the content
    (section and content counted apart and added); named by the order each gives that is the answer's."""
    if got == expected:
        return None
    question, passages = args
    terms = query_terms(question)
    occurrences = got == _order(passages, lambda p: sum(search_terms(f"{p.section} {p.content}").count(term)
                                                        for term in terms))
    apart = got == _order(passages, lambda p: _held_in(terms, p.section) + _held_in(terms, p.content))
    if occurrences and apart:  # this input does not tell the two apart
        return "— section and content are one text: a term in both counts once, as does a term repeated."
    if occurrences:
        return "— it counted each time a term occurs: count the distinct terms the passage holds."
    if apart:
        return "— section and content are one text: a term in both counts once."
    return None


def _heading_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """The heading's rule: an order right by the counts but not among ties is the tie rule's mistake, met here
    first; otherwise the heading left unread (the order of the content's terms alone), or the text split at
    spaces (the whole text, or the heading), whichever order is the answer's."""
    if got == expected:
        return None
    if tied := _ties_reordered(args, expected, got):
        return tied
    question, passages = args
    terms = query_terms(question)
    unread = got == _order(passages, lambda p: _held_in(terms, p.content))
    at_spaces = got == _order(passages, lambda p: len(set(terms) & set(f"{p.section} {p.content}".lower().split())))
    heading_at_spaces = got == _order(passages, lambda p: len(set(terms) & (set(search_terms(p.content))
                                                                         | set(p.section.lower().split()))))
    said = "— its terms are search_terms(f\"{section} {content}\")"
    if unread and (at_spaces or heading_at_spaces):  # this input does not tell the two apart
        return f"{said}: the heading's terms count too, as search_terms finds them (Han bigrams, not words between spaces)."
    if unread:
        return f"{said}: the heading was left unread."
    if at_spaces:
        return f"{said}: the heading and the content split as it splits them (Han bigrams), not at spaces."
    if heading_at_spaces:
        return f"{said}: the heading split as it splits the content (Han bigrams), not at spaces."
    return f"{said}, the heading's too."


RERANK_RULES = (
    Rule("passages in order of how many of the question's terms each holds, most first", _mixed_lists,
         _in_order_hint),
    Rule("a term is held when among search_terms(section + content), not as a substring", _look_alikes),
    Rule("the passage's section heading counts", _in_headings, _heading_hint),
    Rule("each term counts once, however often the passage repeats it", _repeats, _twice_held),
    Rule("passages that hold as many terms keep the order they came in", _ties, _tie_hint),
    Rule("the shop's own results come in that order too ('items' is not the question's 'item')", _shop_lists),
    Rule("the document's title is not read: only search_terms(f\"{section} {content}\")", _in_titles,
         lambda args, expected, got: None if got == expected else f"— #1's title, {shown(args[1][0].title)}, is not "
                                                                  "part of the text a term is looked for in."),
    Rule("each passage is counted on its own: two with the same content under different headings hold different "
         "terms", _same_content, _counted_by_content),
)


def _show_rerank_args(args: tuple) -> str:
    question, passages = args
    listed = ", ".join(f"#{n} {_label(p)}" for n, p in enumerate(passages, start=1))
    return f"{shown(question)} with [{listed[:120]}{'…' if len(listed) > 120 else ''}]"


@grades("Exercise 2", spec=Spec(RERANK_RULES))
def check_coverage_rerank(my_rerank: Callable[[str, list], list] | None) -> None:
    """16, exercise 2: re-rank search results by how many of the question's terms each passage holds."""
    exercise = "Exercise 2"
    if my_rerank is None:
        return _not_attempted(exercise, "Write def my_rerank(question, passages) in the cell above.")
    if not callable(my_rerank):
        _fail(exercise, f"my_rerank should be a function, got {type(my_rerank).__name__}")
    tried = agree_on(exercise, "check_coverage_rerank", RERANK_RULES, _placed(my_rerank), _placed(_coverage_order),
                     shape=_the_passages, call="my_rerank", show=_show_rerank_args)
    return _passed(exercise, f"{tried} generated result lists (the shop's own among them) in order of how many of "
                             "the question's terms a passage holds; the opened-item question now starts with the "
                             "Conditions section.")
