"""Offering only the tools a request needs (lesson 13).

Every tool in the prompt costs tokens in every request, and a long list gives a model more ways to pick the
wrong one. `ToolFilter` ranks the tools against the request's words and offers the best few:

1. score: each word of the request found in a tool's name or descriptions (every language it has) counts,
   weighted so a word many tools share counts little; each of the tool's hint words (`ToolHint`)
   found in the request counts `HINT_WEIGHT`;
2. the `max_tools` best-scoring tools are offered, leaving out any that scores less than `RELATIVE` (half) of
   the best (one shared everyday word is weak evidence), and with them every tool they need (a hint's
   `needs`: nobody says "what is today's date?" when asking for a refund, yet the refund is decided on it);
3. tools the conversation has already called are always offered: a model that reads its own earlier
   Action for a tool that is no longer listed is confused, and a follow-up ("then refund it") needs it;
4. when no word points anywhere, nothing was called yet and no tool is offered `always`, every tool is offered:
   the filter does not guess.

Words are split as the shop's knowledge search splits them (shop/knowledge.py): Latin words, and Chinese as
overlapping two-character pieces, so 退款 in a request finds 退款 in a description without a dictionary.
Numbers are left out (a description's example id must not match a customer's order number). This is
matching words, not meaning: "my parcel" finds nothing in "Track a shipment" unless a hint says so. An
embedding model would find such neighbours by meaning (vectors close together), at the price of a model to
run and scores that are harder to explain; the hints are the honest small version.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tinyagent.number_checks import check_whole
from tinyagent.registry import ToolRegistry
from tinyagent.shop.knowledge import search_terms

HINT_WEIGHT = 2.0
MAX_TOOLS = 3
RELATIVE = 0.5
# Words of almost any request or description, which say nothing about which tool fits.
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "e", "g", "for", "from",
    "have", "how", "i", "if", "in", "input", "is", "it", "its", "me", "my", "of", "on", "or", "please", "the",
    "this", "that", "to", "was", "what", "when", "where", "will", "with", "would", "you", "your",
})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class ToolHint:
    """What the words of a tool's name and description miss.

    words: phrases a request about this tool uses (matched in the lower-cased request: "money back", "退款")
    needs: tools this one's task needs beside it, offered whenever it is
    """

    words: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()

    def __post_init__(self):
        # Kept as tuples: a list would make the hint unhashable, a generator would be used up by the first request.
        object.__setattr__(self, "words", _names("ToolHint words", self.words))
        object.__setattr__(self, "needs", _names("ToolHint needs", self.needs))
        # "" is in every request, so a blank word would point every request at this tool.
        if any(not word.strip() for word in self.words):
            raise ValueError(f"ToolHint words must not be empty or blank: got {self.words!r}")


@dataclass(frozen=True)
class ToolSelection:
    """What a `ToolFilter` offers for one request: the tool names in the registry's order, each tool's
    score, and why each offered tool is there ("words", "needed by applyRefund", "called earlier",
    "always", "nothing matched")."""

    offered: tuple[str, ...]
    scores: dict[str, float] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)


class ToolFilter:
    """Ranks a registry's tools against a request; `select` says which to offer (see the module's docstring).

    hints:     extra words and companions per tool name (`ToolHint`); the shop's are shop/tool_hints.py
    max_tools: how many of the best-scoring tools to offer (their needs, the tools already called and
               `always` come on top)
    always:    tool names offered with every request
    """

    def __init__(self, hints: Mapping[str, ToolHint] | None = None, *, max_tools: int = MAX_TOOLS,
                 always: Iterable[str] = ()):
        check_whole("max_tools", max_tools)
        self.hints = dict(hints or {})
        self.max_tools = max_tools
        self.always = _names("ToolFilter always", always)

    def __repr__(self) -> str:
        return f"ToolFilter({len(self.hints)} hints, max_tools={self.max_tools})"

    def scores(self, request: str, tools: ToolRegistry) -> dict[str, float]:
        """Each tool's score for `request`, by name, in the registry's order (0 for no match)."""
        documents = {tool.name: _words(_describe_all(tool)) for tool in tools}
        asked = _words(request)
        low = (request or "").lower()
        scores = {}
        for name, words in documents.items():
            shared = asked & words
            # Rarer words weigh more: one that every tool's description has is worth log(1 + 1) / 2.
            score = sum(math.log(1 + len(documents) / _frequency(word, documents)) / 2 for word in shared)
            hint = self.hints.get(name, ToolHint())
            score += HINT_WEIGHT * sum(1 for phrase in hint.words if phrase.lower() in low)
            scores[name] = round(score, 3)
        return scores

    def select(self, request: str, tools: ToolRegistry, called: Iterable[str] = ()) -> ToolSelection:
        """The tools to offer for `request`, given the tools the conversation has `called` already."""
        scores = self.scores(request, tools)
        order = {name: i for i, name in enumerate(tools.names)}
        top = max(scores.values(), default=0)
        best = sorted((name for name, score in scores.items() if score > 0 and score >= RELATIVE * top),
                      key=lambda n: (-scores[n], order[n]))
        why: dict[str, str] = {name: "words" for name in best[: self.max_tools]}
        for name in list(why):
            self._add_needs(name, tools, why)
        for name in called:
            if name in tools and name not in why:
                why[name] = "called earlier"
        for name in self.always:
            if name in tools and name not in why:
                why[name] = "always"
        if not why:
            why = {name: "nothing matched" for name in tools.names}
        offered = tuple(name for name in tools.names if name in why)
        return ToolSelection(offered, scores, {name: why[name] for name in offered})

    def _add_needs(self, name: str, tools: ToolRegistry, why: dict[str, str]) -> None:
        for needed in self.hints.get(name, ToolHint()).needs:
            if needed in tools and needed not in why:
                why[needed] = f"needed by {name}"
                self._add_needs(needed, tools, why)


def _names(what: str, names: Iterable[str]) -> tuple[str, ...]:
    """`names` as a tuple of strings; one string is refused, as tuple("applyRefund") would be its letters."""
    if isinstance(names, str):
        raise TypeError(f"{what} must be a list or tuple of strings, not one string: use ({names!r},)")
    names = tuple(names)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"{what} must be strings, got {names!r}")
    return names


def _describe_all(tool) -> str:
    """A tool's name split into words (queryOrder -> query Order) and its description in every language."""
    texts = [_CAMEL.sub(" ", tool.name), tool.description, *tool.descriptions.values()]
    return " ".join(t for t in texts if t)


def _words(text: str) -> set[str]:
    return {w for w in search_terms(text or "") if w not in STOP_WORDS and not w.isdigit()}


def _frequency(word: str, documents: dict[str, set[str]]) -> int:
    return sum(1 for words in documents.values() if word in words)
