"""Naming the source of a policy in the answer, when the Observation gives one (lesson 16).

The default searchKnowledge returns {"title", "content", "score"}, and the answers built on it stay as they
were. The citing searchKnowledge (tinyagent/shop/cited_search.py) adds to each result where it comes from:

    {"title": "退换货政策", "section": "质量问题退换货 › 期限与检测", "source": "zh/returns.md#5", "content": ...}

A result with a `source` string and a `title` is a `CitedPassage`. When the passage an answer rests on is
one, the answer names its document and section: a policy question is answered "根据《退换货政策》「质量问题
退换货 › 期限与检测」：...", and a refund or warranty decision ends with a note naming the passage that states
the rules it applied ("出处：《保修与维修》「保修期限」"). A careful assistant cites what it was shown, and
only that: never a source the Observation did not give.
"""

from __future__ import annotations

from dataclasses import dataclass

from tinyagent.classroom.conversation import Conversation, Step


@dataclass(frozen=True)
class CitedPassage:
    """One search result that says where it comes from."""

    title: str
    section: str
    source: str
    content: str


def cited_passages(step: Step | None) -> list[CitedPassage]:
    """The results of a knowledge-search Observation that carry a source, best first ([] for none)."""
    data = step.data if step is not None else None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        return []
    found = []
    for item in results:
        if not isinstance(item, dict):
            continue
        title, source, content = item.get("title"), item.get("source"), item.get("content")
        if isinstance(title, str) and title and isinstance(source, str) and source and isinstance(content, str):
            section = item.get("section")
            found.append(CitedPassage(title, section if isinstance(section, str) else "", source, content))
    return found


def top_cited(step: Step | None) -> CitedPassage | None:
    """The best result, if it is a cited one (a search whose first result has no source cites nothing)."""
    data = step.data if step is not None else None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        return None
    passages = cited_passages(step)
    return passages[0] if passages and results[0].get("source") == passages[0].source else None


def name_of(conv: Conversation, passage: CitedPassage) -> str:
    """How the answer names the passage: 《退换货政策》「质量问题退换货」, or "Returns and exchanges", section "..."."""
    if conv.zh:
        return f"《{passage.title}》「{passage.section}」" if passage.section else f"《{passage.title}》"
    return f'"{passage.title}", section "{passage.section}"' if passage.section else f'"{passage.title}"'


def source_note(conv: Conversation, *passages: CitedPassage) -> str:
    """The note that ends an answer resting on `passages`: （出处：《…》「…」；《…》「…」）."""
    if conv.zh:
        return f"（出处：{'；'.join(name_of(conv, p) for p in passages)}）"
    label = "Source" if len(passages) == 1 else "Sources"
    return f" ({label}: {'; '.join(name_of(conv, p) for p in passages)}.)"
