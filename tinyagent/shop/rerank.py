"""Re-ranking search results by the question's terms: how many a passage holds, and how close together.

bm25 (knowledge.py) scores each term on its own: a passage that repeats one rare word can beat one that
holds every word of the question. This step looks again at bm25's best few (`RERANK_CANDIDATES`) and
scores each by three things, all computed from the same terms the index uses (Han bigrams, Latin words):

    coverage    the share of the question's terms the passage holds (title, section and text)
    proximity   how tightly the matched terms sit together in the text: k terms found within a window of
                w terms scores k / w, times the share k / n of the n question terms (so a phrase of the
                question found word for word scores highest); 0 with fewer than two terms in the text
    bm25        the passage's bm25 score as a share of the best one, so bm25's judgement still counts

    score = COVERAGE_WEIGHT * coverage + PROXIMITY_WEIGHT * proximity + BM25_WEIGHT * bm25 share

It is deterministic and offline, and it only reorders what bm25 found: it cannot find a passage that shares
no term with the question. What it cannot judge is meaning. A cross-encoder (a small transformer such as a
BERT-sized re-ranker, which reads the question and the passage together and outputs a relevance score)
would also rank "can I send back an opened box?" next to "开封试用不影响退货", and a passage that answers in
other words; it costs a model download (hundreds of megabytes) and a forward pass per passage. None is
downloaded here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from tinyagent.shop.knowledge import Passage, query_terms, search_terms

RERANK_CANDIDATES = 10  # how many of bm25's best are looked at again

COVERAGE_WEIGHT = 1.0
PROXIMITY_WEIGHT = 0.5
BM25_WEIGHT = 0.5


def _matches(term: str, word: str) -> bool:
    # A lone Han character in the question matches any bigram it starts, as in the FTS query.
    return word == term or (len(term) == 1 and not term.isascii() and word.startswith(term))


def coverage(terms: Sequence[str], words: Sequence[str]) -> float:
    """The share of `terms` found among `words`."""
    if not terms:
        return 0.0
    return sum(any(_matches(term, word) for word in words) for term in terms) / len(terms)


def proximity(terms: Sequence[str], words: Sequence[str]) -> float:
    """k / w for the smallest window of `words` holding every matched term (k of them), times k / len(terms)."""
    hits = [(index, term) for index, word in enumerate(words) for term in terms if _matches(term, word)]
    wanted = len({term for _, term in hits})
    if wanted < 2:
        return 0.0
    best = len(words)
    counts: Counter[str] = Counter()
    left = 0
    for right, (position, term) in enumerate(hits):  # hits are in text order: slide a window over them
        counts[term] += 1
        while len(counts) == wanted:
            best = min(best, position - hits[left][0] + 1)
            counts[hits[left][1]] -= 1
            if counts[hits[left][1]] == 0:
                del counts[hits[left][1]]
            left += 1
    # At most 1 however close: a word can hold two terms (退 and 退货 both in 退货), and a passage that holds fewer of
    # the question's terms must not score above one that holds them all for packing them into fewer words.
    return min(1.0, wanted / best) * (wanted / len(terms))


def rerank(question: str, passages: Sequence[Passage]) -> list[Passage]:
    """`passages` in a new order, best first, each with its re-rank `score` (its `bm25` kept as it was).

    Ties keep bm25's order. Passages bm25 did not find are not added: re-ranking only reorders.
    """
    terms = query_terms(question)  # the terms the search itself used
    if not terms or not passages:
        return list(passages)
    best_bm25 = max(passage.bm25 for passage in passages) or 1.0
    scored = []
    for index, passage in enumerate(passages):
        everything = search_terms(f"{passage.title} {passage.section} {passage.content}")
        text = search_terms(passage.content)
        score = (COVERAGE_WEIGHT * coverage(terms, everything) + PROXIMITY_WEIGHT * proximity(terms, text)
                 + BM25_WEIGHT * passage.bm25 / best_bm25)
        scored.append((-round(score, 3), index, replace(passage, score=round(score, 3))))
    return [passage for _, _, passage in sorted(scored, key=lambda item: item[:2])]
