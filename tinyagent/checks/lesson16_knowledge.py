"""Lesson 16 (knowledge as a tool): overlapping windows, and a re-rank by term coverage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.checks.reporting import COURSE_NOW, _brief, _fail, _not_attempted, _passed, _run, grades
from tinyagent.clock import fixed_clock
from tinyagent.shop import Shop
from tinyagent.shop.knowledge import Passage, query_terms, search_terms
from tinyagent.shop.policies import POLICY_FOLDER

_NO_PUNCTUATION = "签收次日起十五天内出现性能故障的属于质量问题经售后检测确认后可以退货也可以换货往返运费由商家承担"

# (text, size, overlap, what it is): the check compares the learner's windows with `_windows` on each.
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
    """Windows of `size` characters, each starting `size - overlap` after the last, until one reaches the end."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        pieces.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += size - overlap
    return pieces


@grades("Exercise 1")
def check_overlapping_windows(windows: Callable[[str, int, int], list[str]] | None) -> None:
    """16, exercise 1: lesson 16's fixed-size chunks, with an overlap."""
    exercise = "Exercise 1"
    if windows is None:
        return _not_attempted(exercise, "Write def windows(text, size, overlap) in the cell above.")
    if not callable(windows):
        _fail(exercise, f"windows should be a function, got {type(windows).__name__}")
    for text, size, overlap, what in WINDOW_CASES:
        mine = _run(exercise, f"windows(text, {size}, {overlap}) on {what}", windows, text, size, overlap)
        expected = _windows(text, size, overlap)
        if not isinstance(mine, list) or not all(isinstance(piece, str) for piece in mine):
            _fail(exercise, f"windows should return a list of strings, got {mine!r} on {what}")
        if mine == expected:
            continue
        why = ""
        if not text:
            why = " An empty text has no windows: return []."
        elif any(len(piece) > size for piece in mine):
            why = f" A window is longer than size ({size})."
        elif len(mine) > len(expected) and mine[: len(expected)] == expected:
            why = " The last window lies inside the one before: stop once a window reaches the end of the text."
        elif len(mine) > 1 and text.find(mine[1]) != size - overlap:
            why = f" Each window starts size - overlap = {size - overlap} characters after the one before."
        elif len(mine) < len(expected):
            why = " The windows stop before the end of the text: the last one must reach it."
        _fail(exercise, f"on {what}, expected {expected!r}, got {mine!r}.{why}")
    return _passed(exercise, f"{len(WINDOW_CASES)} texts cut into windows that overlap by exactly the overlap, and "
                             "no window is wasted at the end.")


def _coverage_order(question: str, passages: list) -> list:
    """Passages by how many distinct question terms their section and content hold; ties keep their order."""
    terms = query_terms(question)

    def held(passage: Any) -> int:
        words = set(search_terms(f"{passage.section} {passage.content}"))
        return sum(term in words for term in terms)

    ranked = sorted(range(len(passages)), key=lambda i: (-held(passages[i]), i))
    return [passages[i] for i in ranked]


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


@grades("Exercise 2")
def check_coverage_rerank(my_rerank: Callable[[str, list], list] | None) -> None:
    """16, exercise 2: re-rank search results by how many of the question's terms each passage holds."""
    exercise = "Exercise 2"
    if my_rerank is None:
        return _not_attempted(exercise, "Write def my_rerank(question, passages) in the cell above.")
    if not callable(my_rerank):
        _fail(exercise, f"my_rerank should be a function, got {type(my_rerank).__name__}")
    for question, passages, what in rerank_cases():
        given = list(passages)
        mine = _run(exercise, f"my_rerank({question!r}, ...) on {what}", my_rerank, question, given)
        expected = _coverage_order(question, passages)
        mine = list(mine) if isinstance(mine, (list, tuple)) else mine
        if not isinstance(mine, list) or sorted(map(id, mine)) != sorted(map(id, passages)):
            _fail(exercise, f"on {what}, my_rerank should return every passage it was given, once each, in a new "
                            f"order; got {_brief(mine)}")
        if mine == expected:
            continue

        def shown(order: list) -> list[str]:
            return [f"{p.section or p.content[:24]}" for p in order]

        why = ""
        if what.startswith("bm25") and shown(mine)[0] != shown(expected)[0]:
            why = (" Count whole terms, as the index splits them (search_terms): 'items' is not 'item', and "
                   "'returned' is not 'return'.")
        elif "repeats" in what:
            why = " Count each of the question's terms once, however often the passage repeats it."
        elif "heading" in what:
            why = " A term in the passage's section heading counts too."
        elif "same count" in what:
            why = " Passages with the same count keep the order they came in (bm25's), whatever their scores."
        place = next(i for i, (a, b) in enumerate(zip(mine, expected)) if a is not b)
        _fail(exercise, f"on {what} ({question!r}), place {place + 1} should be {shown(expected)[place]!r}, "
                        f"got {shown(mine)[place]!r}.{why}")
    return _passed(exercise, "Each list is in order of how many of the question's terms a passage holds; the "
                             "opened-item question now starts with the Conditions section.")
