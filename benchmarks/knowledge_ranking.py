"""Ranking quality and cost of the knowledge base's imported documents (lesson 16).

    .venv/bin/python benchmarks/knowledge_ranking.py [--runs 7]

1. Quality. Every question of `POLICY_QUESTIONS` (tinyagent/shop/policies/: ten Chinese, ten English, each with
   the section that answers it), and four "hard" questions that say the same thing in other words, ranked over
   the imported policy documents by bm25 alone and with the re-rank step (rerank.py). Per set: hit@1 (the right
   section first) and MRR@3 (1 / rank of the right section in the first three, 0 if absent). Deterministic:
   the same figures on every run.
2. Cost. Medians of `--runs` runs: importing the policy folder (8 documents) into a new in-memory shop;
   importing one generated Markdown document just under the 1,000,000-byte limit (median of max(3, --runs // 2)); and one search, over
   every question, with and without the re-rank. Times vary with the machine's load.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from tinyagent import fixed_clock
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.shop import Shop
from tinyagent.shop.documents import MAX_DOCUMENT_BYTES
from tinyagent.shop.policies import POLICY_FOLDER, POLICY_QUESTIONS, PolicyQuestion

HARD = (
    PolicyQuestion("Who pays the shipping when I return a faulty vacuum?", "en/returns.md",
                   "Quality problems › Shipping cost"),
    PolicyQuestion("How long is the warranty?", "en/warranty.md", "Warranty period"),
    PolicyQuestion("Do you ship for free?", "en/shipping.md", "Shipping fees"),
    PolicyQuestion("Can I send it back if I have simply changed my mind?", "en/returns.md",
                   "Seven-day no-reason returns › Conditions"),
)


def new_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))


def quality(shop: Shop, questions: tuple[PolicyQuestion, ...], rerank: bool) -> tuple[float, float]:
    """(hit@1, MRR@3) of `questions` over `shop`'s documents."""
    hits, reciprocal = 0, 0.0
    for case in questions:
        found = [(p.document, p.section) for p in shop.search_passages(case.question, 3, scope="documents",
                                                                        rerank=rerank)]
        rank = found.index((case.document, case.section)) + 1 if (case.document, case.section) in found else 0
        hits += rank == 1
        reciprocal += 1 / rank if rank else 0.0
    return hits / len(questions), reciprocal / len(questions)


def median_ms(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def big_document(folder: Path) -> Path:
    """A Markdown file just under the size limit: many sections of policy-like Chinese text."""
    section = "## 第 {n} 条\n\n签收次日起 15 天内出现性能故障的，属于质量问题，经售后检测确认后可以退货或换货。\n\n"
    parts, size, n = ["# 大文件\n\n"], 0, 0
    while True:
        n += 1
        piece = section.format(n=n)
        if size + len(piece.encode()) > MAX_DOCUMENT_BYTES - 100:
            break
        parts.append(piece)
        size += len(piece.encode())
    path = folder / "big.md"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=whole_number("--runs", 1000, "each run times every question"), default=7,
                        help="timed runs (default 7)")
    runs = parser.parse_args().runs

    shop = new_shop()
    shop.import_documents(POLICY_FOLDER)
    chunks = sum(d["chunks"] for d in shop.documents())
    print(f"policy documents: {len(shop.documents())} documents, {chunks} chunks\n")
    print(f"{'questions':28} {'ranking':10} {'hit@1':>6} {'MRR@3':>6}")
    for label, questions in (("policy questions (20)", POLICY_QUESTIONS), ("hard questions (4)", HARD)):
        for rerank in (False, True):
            hit, mrr = quality(shop, questions, rerank)
            print(f"{label:28} {'re-ranked' if rerank else 'bm25':10} {hit:6.2f} {mrr:6.2f}")

    print(f"\ncost (medians of {runs} runs):")
    print(f"  a new shop, and the policy folder imported into it: "
          f"{median_ms(lambda: new_shop().import_documents(POLICY_FOLDER), runs):8.1f} ms")
    with tempfile.TemporaryDirectory() as scratch:
        path = big_document(Path(scratch))
        big_chunks = new_shop().import_documents(path)[0].chunks
        size = path.stat().st_size
        print(f"  import one {size:,}-byte document ({big_chunks:,} chunks): "
              f"{median_ms(lambda: new_shop().import_documents(path), max(3, runs // 2)):8.1f} ms")
    for rerank in (False, True):
        per_query = median_ms(lambda r=rerank: [shop.search_passages(q.question, 3, scope="documents", rerank=r)
                                                for q in POLICY_QUESTIONS], runs) / len(POLICY_QUESTIONS)
        label = "one search, re-ranked:" if rerank else "one search, bm25 alone:"
        print(f"  {label:24} {per_query * 1000:6.0f} µs")


if __name__ == "__main__":
    main()
