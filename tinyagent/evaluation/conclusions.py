"""What an answer concludes, read from its words: a refund submitted or refused, an order under warranty or not.

The answer check finds facts as words (grading.holds_fact). A conclusion needs a little more, because "no refund
was submitted" holds the words of "your refund was submitted". So each claim is read where it stands:

    clause     its sentence, cut at commas and colons and at and, but, so (但是, 所以, 不过 ...)
    next to it the six words before the claim (a Chinese character is a word), the claim's own words, and for a
               claim that reads one word (refund, 退款, warranty) the four words after it
    said       no negation next to it, or two ("the refund was not declined")
    denied     one negation next to it: no, not, n't, never, nothing, cannot, unable, failed, declined, refused
               (不, 没, 未, 无法, 拒绝 ...): "no refund was submitted", "I cannot refund it", "不能退款", "not covered"
    hedged     a hedge in its clause: maybe, might, probably, I think, may be, could have (可能, 也许, 应该 ...)
    asked      its sentence is a question ("Shall I submit the refund?"), or its clause restates one before it: "you
               asked whether it can be returned" (是否, 能否, 能不能)

    read_claim("Sorry, I cannot refund it.", REFUND)          # ["denied"]
    read_claim("The refund was not declined.", REFUND)        # ["said"]
    read_claim("Your refund might be approved.", REFUND)      # ["hedged"]

An answer to a yes-or-no question ("Can I get my money back?", "Is it still under warranty?") is read at its opening
too: a bare "Yes" or "No" (可以, 不能, 不在) in its first clause that neither asks nor restates the question. A fact the
grader finds as it stands (a number, a date, an id) is read for a hedge only (`hedged_at`): "Maybe SF1234567890?"
does not state it; "not within the 15 days" states 15.

A check of words still: a negation next to the claim that is about something else ("the refund for the vacuum that
won't charge has been submitted" reads as denied), a negation further away than six words or in a clause of its own
("you can return items within 15 days, but not this one"), a claim worded in words these lists do not hold, a
conditional ("if it were day 10, I could refund it") and sarcasm are all read wrong; a yes that its sentence goes on
to qualify with a negation ("Yes, it is not too late") is no yes, and a hedge takes a fact back even where it is fair
("退款应该在 1-3 个工作日内到账"). A person reading the answers can tell; these readers cannot.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """A claim an answer can make. `says`: its words; `denies`: words that say it is not so (out of warranty);
    `after`: how many words after the claim's words are read for a negation (the refund *was declined*)."""

    name: str
    says: re.Pattern
    denies: re.Pattern | None = None
    after: int = 0


_I = re.IGNORECASE
_OPTIONAL_NOT = r"(?:\s*n['’]t|\s+not|\s+never)?"
# Words that make the verb after them a rule or a plan, not a thing done: "once a refund is approved".
_NOT_DONE_YET = r"(?:is|are|be|being|get|gets|will|would|can|could|should|must|to)"
_DONE = r"(?:successfully\s+)?(?:submitted|processed|issued|filed|lodged|placed|created|initiated|approved|completed|granted|made|accepted)"

# "A refund was submitted": in the perfect or the past ("has been submitted", "was processed", "I've submitted your
# refund", "Refund submitted"), not in the present of a policy ("refunds are processed within 1-3 days"). Chinese:
# 已(经)提交 / 受理 / 办理 near 退款, or 提交成功.
SUBMITTED = Claim("refund submitted", re.compile(
    r"\brefund\b(?:[^.;:!?]{0,40}?\b(?:has|have|had)" + _OPTIONAL_NOT + r"\s+(?:now\s+|already\s+|just\s+)?been"
    r"|[^.;:!?]{0,40}?\b(?:was|were)" + _OPTIONAL_NOT + r"|(?:\s+(?!" + _NOT_DONE_YET + r"\b)\w+){0,2}?)\s+" + _DONE + r"\b"
    r"|\b(?:I|we)(?:['’]ve|\s+have|\s+had)?" + _OPTIONAL_NOT + r"(?:\s+(?:now|already|just))?\s+"
    r"(?:successfully\s+)?(?:submitted|processed|issued|filed|lodged|placed|created|initiated)\b[^.;:!?]{0,40}?\brefund"
    r"|\b(?:has|have|had)" + _OPTIONAL_NOT + r"\s+been\s+(?:fully\s+)?refunded\b|\b(?:was|were)" + _OPTIONAL_NOT
    + r"\s+refunded\b|\bI(?:['’]ve|\s+have)\s+refunded\b"
    r"|退款[^，。；：！？]{0,24}?(?:(?:已经?|已)(?:成功)?(?:为您|帮您)?(?:提交|受理|办理|发起|申请|通过)|(?:提交|办理)成功)"
    r"|(?:已经?|已)(?:为您|帮您)?(?:提交|申请|办理|发起)(?:了|过)?[^，。；：！？]{0,8}?退款|退款成功", _I))

# "A refund" as something that is or will be done: denied, it is a refusal ("I cannot refund it", "no refund",
# "the refund was declined", "不能退款", "退不了").
REFUND = Claim("refund", re.compile(r"\brefund(?:s|ed|ing)?\b|\bmoney back\b|\breimburse\w*|退款|退钱|退货|退(?=不了|不掉)|可退",
                                    _I), after=4)

# "A refund is possible", the answer to "can I get my money back?": can (could, may) return or be refunded, get a
# refund or the money back, eligible for a refund, able to return it, returnable; 可以退 (能退, 可退, 可以申请退款),
# 符合退货条件. Denied, a refusal: "you cannot return it", "not eligible for a refund", "unable to refund it",
# non-returnable, 不能退, 无法退款, 退不了.
REFUNDABLE = Claim("refund possible", re.compile(
    r"\b(?:can(?:not|['’]t)?|could(?:n['’]t)?|may)(?:\s+(?:not|still|also|now|certainly|definitely|easily))?\s+(?:"
    r"(?:be\s+)?(?:return(?:ed)?|refund(?:ed)?)\b"
    r"|(?:get|have|receive|request|ask\s+for|apply\s+for|submit|process|arrange)\s+(?:a\s+|an\s+|your\s+|the\s+)?"
    r"(?:full\s+)?(?:refund|return|money\s+back)\b)"
    r"|\b(?:in)?eligible\s+for\s+(?:a\s+)?(?:full\s+)?(?:return|refund)\b|\bqualif(?:y|ies)\s+for\s+(?:a\s+)?(?:return|refund)\b"
    r"|\bentitled\s+to\s+(?:a\s+)?(?:full\s+)?refund\b"
    r"|\b(?:un)?able\s+to\s+(?:return|refund|get\s+(?:a\s+|your\s+)?(?:refund|money\s+back))\b"
    r"|(?:可以|能够?|可|无法)(?:申请|办理|直接|为您|帮您)?(?:退货|退款|退钱|退)"
    r"|\b(?:returnable|refundable)\b|退(?:不了|不掉|得了)|符合[^，。；：！？]{0,8}?(?:退货|退款)条件", _I),
    re.compile(r"\bnon-?(?:returnable|refundable)\b", _I))

# "Under warranty": the word itself (warranty, covered, 保修, 质保) unless a negation is next to it, and the words that
# say it is over (out of warranty, the warranty has expired, past the warranty, 超过保修期, 保修期已过, 过保).
WARRANTY = Claim("under warranty", re.compile(r"\bwarrant(?:y|ies)\b|\bcovered\b|保修|质保|保内", _I), re.compile(
    r"\bout\s+of\s+(?:the\s+|its\s+)?warranty\b|\bwarranty\b[^.;:!?,]{0,20}?\b(?:expired|ended|lapsed|run\s+out|is\s+over|was\s+over)\b"
    r"|\b(?:past|beyond|outside)\s+(?:the\s+|its\s+|a\s+|your\s+)?(?:[\w-]+\s+){0,2}?warranty\b"
    r"|(?:超过|超出|过了|已过)了?[^，。；：！？]{0,12}?(?:保修|质保)期|(?:保修|质保)期(?:已经?|已)?(?:过|结束|到期|满)|过保", _I), after=4)

# Negations, and the words that only look like one: a no-reason return, 无理由, 非人为 (not man-made), 不过 (however),
# 不好意思 (sorry).
_NEGATION = re.compile(
    r"\b(?:no(?![\s-]reason)|not(?!\s+only)|never|nothing|none|neither|nor|cannot|unable|ineligible|impossible"
    r"|fail(?:s|ed)?|refuse[sd]?|decline[sd]?|reject(?:s|ed)?|den(?:y|ies|ied))\b|n['’]t\b"
    r"|不(?!过|但|仅|管|论|久|少|错|客气|用谢|好意思)|没|未(?!来)|无法|无从|无须|无需|非(?!人为|常)|拒绝|驳回", _I)
# Hedges. May and could doubt before be or have ("it may be 343", "it could have been submitted"); before another verb
# they allow ("you may return it", "you could get a refund"), which is no doubt.
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|likely|unlikely|might|unsure|hopefully|presumably|apparently)\b"
    r"|\bnot\s+(?:sure|certain)\b|\bI\s+(?:think|believe|guess|suppose)\b"
    r"|\bmay(?:\s+\w+)?\s+(?:be|have)\b|\bcould(?!\s+not\b)(?:\s+\w+)?\s+(?:be|have)\b"
    r"|可能|也许|或许|大概|说不定|不确定|不一定|好像|似乎|应该", _I)
# A sentence ends at its mark (a full stop not between digits: 1.15 is a number); a clause at a comma or a colon
# (not between digits: 15,000 and 19:05) or at a conjunction.
_SENTENCE_END = re.compile(r"[。！？!?；;\n]+|(?<![0-9])\.|\.(?![0-9])")
_CLAUSE_END = re.compile(r"[，,：:、](?![0-9])|(?<![0-9])[,:]|\b(?:and|but|so|because|since|although|though|however|while"
                         r"|whereas)\b|(?<!不)但是?|不过|所以|因此|因为|而且|并且|可是|然而", _I)
# A question restated: "you asked whether it can be returned", 是否可以退, 能否退款, 能不能退, 还在不在保修期内.
_WHETHER = re.compile(r"\bwhether\b|是否|能否|([\u4e00-\u9fff])不\1", _I)
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*|[0-9]+|[\u4e00-\u9fff]")
_BEFORE = 6  # words before a claim that are read for a negation


def _sentences(text: str) -> list[tuple[str, bool]]:
    """(sentence, whether it asks) for each sentence of `text`, with the mark that ended it read for the asking."""
    found, start = [], 0
    for end in [*_SENTENCE_END.finditer(text), None]:
        stop = end.start() if end else len(text)
        sentence = text[start:stop]
        mark = end.group() if end else ""
        asks = "?" in mark or "？" in mark or sentence.rstrip(" \"'”’)）").endswith(("吗", "呢"))
        if sentence.strip():
            found.append((sentence, asks))
        start = end.end() if end else len(text)
    return found


def _clauses(sentence: str) -> list[str]:
    return [clause for clause in _CLAUSE_END.split(sentence) if clause and clause.strip()]


def _reading(clause: str, start: int, end: int, after: int, denied: bool, asks: bool) -> str:
    if asks or _WHETHER.search(clause, 0, end):  # (to its end: 能不能退 restates the question its 能退 is in)
        return "asked"
    if _HEDGE.search(clause):
        return "hedged"
    words_before = [word.start() for word in _WORD.finditer(clause, 0, start)][-_BEFORE:]
    words_after = [word.end() for word in _WORD.finditer(clause, end)][:after]
    low = words_before[0] if words_before else start
    high = words_after[-1] if words_after else end
    negations = sum(1 for negation in _NEGATION.finditer(clause)
                    if low <= negation.start() < high and not _asks_either_way(clause, negation.start()))
    return "denied" if (negations + denied) % 2 else "said"


def _asks_either_way(clause: str, at: int) -> bool:
    """Whether the 不 at `at` asks rather than denies: 在不在, 能不能, 可不可以 (the same character either side)."""
    return clause[at] == "不" and 0 < at < len(clause) - 1 and clause[at - 1] == clause[at + 1]


def read_claim(answer: str, claim: Claim) -> list[str]:
    """How `answer` states `claim`, each place it does: "said", "denied", "hedged" or "asked" (see the module)."""
    readings = []
    for sentence, asks in _sentences(unicodedata.normalize("NFKC", answer or "")):
        for clause in _clauses(sentence):
            taken: list[tuple[int, int]] = []
            for match in claim.denies.finditer(clause) if claim.denies else ():
                taken.append(match.span())
                readings.append(_reading(clause, *match.span(), 0, True, asks))
            for match in claim.says.finditer(clause):
                if not any(low <= match.start() < high for low, high in taken):  # "out of warranty" read once
                    readings.append(_reading(clause, *match.span(), claim.after, False, asks))
    return readings


def word_claim(word: str) -> Claim:
    """A word fact as a claim ("cancel", "取消"): said where no negation is next to it ("not cancelled" denies it)."""
    return Claim(word, re.compile(re.escape(word), _I))


def hedged_at(text: str, at: int) -> bool:
    """Whether the clause of `text` that holds position `at` has a hedge: a fact found there ("Maybe SF1234567890?",
    "probably 343 days", "好像还剩 343 天") is not stated. A negation does not take a fact back: "not within the
    15 days" states 15. (`text` NFKC-normalised, as read_claim reads it.)"""
    sentence, at = _part_holding(_SENTENCE_END, text, at)
    clause, _ = _part_holding(_CLAUSE_END, sentence, at)
    return bool(_HEDGE.search(clause))


def _part_holding(ends: re.Pattern, text: str, at: int) -> tuple[str, int]:
    """The part of `text` between two matches of `ends` that holds position `at`, and where `at` is in it."""
    start, stop = 0, len(text)
    for end in ends.finditer(text):
        if end.end() <= at:
            start = end.end()
        elif end.start() >= at:
            stop = end.start()
            break
    return text[start:stop], at - start


# A yes or a no at the opening of an answer to a yes-or-no question: "No, not covered", "可以。", "Yes: 343 days".
_BARE_NO = re.compile(r"\s*(?:no|nope|不|不是|不在|否|不行|不能|不可以)\s*$", _I)
_BARE_YES = re.compile(r"\s*(?:yes|yeah|yep|sure|certainly|of course|absolutely|是|是的|对|在|在的|还在|能|可以|可以的"
                       r"|当然|当然可以)\s*$", _I)


def opening_answer(answer: str) -> str | None:
    """"yes" or "no" when the answer opens with one: its first clause that neither asks nor restates the question
    ("Yes, ...", "No.", "Still covered? Yes.", "You asked whether it can be returned: yes.", "可以。"); else None
    ("不在保修期内" opens with no bare no). A yes whose sentence goes on to a negation ("Yes, but not this one",
    "可以，但这单不行") is none."""
    for sentence, asks in _sentences(unicodedata.normalize("NFKC", answer or "")):
        if asks:  # the question asked again: the answer comes after it
            continue
        clauses = _clauses(sentence)
        for at, clause in enumerate(clauses):
            if _WHETHER.search(clause):  # the question restated ("you asked whether ...:"), likewise
                continue
            if _BARE_NO.fullmatch(clause):
                return "no"
            if _BARE_YES.fullmatch(clause) and not any(_NEGATION.search(later) for later in clauses[at + 1:]):
                return "yes"
            return None
    return None


# The conclusions a task can ask its answer to reach (EvalTask.conclusion), and what each reads.
CONCLUSIONS = {
    "refunded": "says the refund was submitted",
    "refused": "says the refund is refused",
    "covered": "says the order is under warranty",
    "refundable": "says a refund is possible",
}


def conclusion_problem(conclusion: str, answer: str) -> str | None:
    """What is wrong with `answer` as one reaching `conclusion` (a key of CONCLUSIONS), or None when it reaches it.

    refunded    a refund submitted is said, and nowhere denied ("no refund was made" is denied)
    refused     a refund is denied somewhere ("I cannot refund it", "no refund", "不能退款"); a hedge ("the refund might
                be approved") or "the refund was not declined" is no refusal
    covered     under warranty is said or the answer opens with a yes, and it is nowhere denied ("not covered", "out
                of warranty", 已过保修期) nor answered "No" at the opening
    refundable  a refund possible is said ("you can return it", "可以退") or the answer opens with a yes, and it is
                nowhere denied ("you cannot return it", "不能退") nor answered "No" at the opening; "whether you can
                return it" (是否可以退) asks, and says nothing
    """
    if conclusion == "refunded":
        readings = read_claim(answer, SUBMITTED)
        if "denied" in readings:
            return "it says the refund was not submitted"
        return None if "said" in readings else "it does not say the refund was submitted"
    if conclusion == "refused":  # (one that says a refund was submitted fails grading.claims_refund too)
        return None if "denied" in read_claim(answer, REFUND) else "it does not say the refund is refused"
    if conclusion in ("covered", "refundable"):  # the answer to a yes-or-no question: its opening is read too
        claim, so, not_so = {
            "covered": (WARRANTY, "the order is under warranty", "the order is not under warranty"),
            "refundable": (REFUNDABLE, "a refund is possible", "a refund is not possible"),
        }[conclusion]
        readings, opening = read_claim(answer, claim), opening_answer(answer)
        if "denied" in readings or opening == "no":
            return f"it says {not_so}"
        return None if "said" in readings or opening == "yes" else f"it does not say {so}"
    raise ValueError(f"no conclusion called {conclusion!r}: {', '.join(CONCLUSIONS)}")
