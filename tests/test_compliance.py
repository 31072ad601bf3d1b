"""The format-compliance harness (lesson A1) measuring lesson 08's prompt variants, on a scripted model.

The harness is exercised on SmolLM2 by the notebooks; here its counting and its table are pinned on
replies chosen to land in each column, and the benchmark's --prompt option is run on the classroom model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tinyagent import ChatResult, fixed_clock
from tinyagent.protocols.compliance import ComplianceRow, format_table, measure_compliance, summarize
from tinyagent.protocols.prompt_variants import VARIANTS
from tinyagent.shop import Shop, shop_registry

QUESTION = "My vacuum from order 88231 has stopped charging, so I would like a refund."
REPLIES = [
    "Thought: First the order.\nAction: queryOrder\nAction Input: 88231",  # parses, a listed tool
    "Thought: hm\nAction: 88231",  # parses, but no such tool
    "Sure! I can help with that.",  # no format
    "Thought: ok\nAction: queryOrder\nAction Input: 88231\nObservation: {}\nFinal Answer: done",  # invents
]


class Scripted:
    """Answers each call with the next reply, and keeps what it was sent."""

    def __init__(self):
        self.sent: list[tuple[list[dict], dict]] = []

    def chat(self, messages, **options):
        self.sent.append((messages, options))
        text = REPLIES[(len(self.sent) - 1) % len(REPLIES)]
        return ChatResult(text, "stop", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})


@pytest.fixture()
def registry():
    with Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")) as shop:
        yield shop_registry(shop)


def test_variants_are_measured_under_their_names_with_their_own_messages(registry):
    llm = Scripted()
    prompts = ["zero-shot", VARIANTS["rules-anchored"], VARIANTS["one-shot-turns"]]
    runs = measure_compliance(llm, registry, QUESTION, prompts=prompts, stops=[True], seeds=range(4))
    assert [run.prompt for run in runs] == ["zero-shot"] * 4 + ["rules-anchored"] * 4 + ["one-shot-turns"] * 4
    anchored_messages, options = llm.sent[4]
    assert anchored_messages == VARIANTS["rules-anchored"].messages(registry, QUESTION, "en")
    assert anchored_messages[0]["content"].endswith("\nThought:")
    assert options["stop"] == ("Observation:",) and options["seed"] == 0
    assert [run.tool for run in runs[:4]] == ["queryOrder", "88231", None, None]


def test_summary_counts_listed_tools_only_when_given_the_registry(registry):
    runs = measure_compliance(Scripted(), registry, QUESTION, prompts=[VARIANTS["full"]], stops=[False],
                              seeds=range(4))
    [row] = summarize(runs)
    assert (row.prompt, row.runs, row.parsed, row.invented, row.listed) == ("full", 4, 3, 1, None)
    [row] = summarize(runs, registry)
    assert row.listed == 1 and row.listed_share == 0.25  # "Action: 88231" parses, but names no tool


def test_table_keeps_lesson_a1s_shape_and_widens_for_long_names(registry):
    a1 = format_table(summarize(measure_compliance(Scripted(), registry, QUESTION, stops=[True], seeds=range(4))))
    assert a1.splitlines() == [
        "prompt      stop   runs       parsed  invented Observation",
        "----------------------------------------------------------",
        "zero-shot   yes       4      3 (75%)               1 (25%)",
        "one-shot    yes       4      3 (75%)               1 (25%)",
    ]
    runs = measure_compliance(Scripted(), registry, QUESTION, prompts=[VARIANTS["one-shot-prompt"]],
                              stops=[True], seeds=range(4))
    lines = format_table(summarize(runs, registry)).splitlines()
    assert lines[0].startswith("prompt           stop") and lines[0].endswith("  listed tool")
    assert lines[2] == "one-shot-prompt  yes       4      3 (75%)               1 (25%)      1 (25%)"


def test_a_share_in_the_table_never_reads_as_none_or_all_when_it_is_neither():
    # 199 of 200 was written "199 (100%)" and 1 of 200 "1 (0%)".
    row = ComplianceRow("zero-shot", True, runs=200, parsed=199, invented=1)
    assert format_table([row]).splitlines()[2] == "zero-shot   yes     200   199 (>99%)               1 (<1%)"


def _benchmark():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "format_compliance.py"
    spec = importlib.util.spec_from_file_location("format_compliance_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_measures_the_chosen_variants(capsys):
    code = _benchmark().main(["--configured", "--prompt", "plain", "--prompt", "full", "--prompt", "one-shot",
                              "--stop", "yes", "--seeds", "2"])
    out = capsys.readouterr().out
    assert code == 0
    rows = [line.split()[:3] for line in out.splitlines() if line.split()[:2] in (["plain", "yes"],
                                                                              ["full", "yes"], ["one-shot", "yes"])]
    assert rows == [["plain", "yes", "2"], ["full", "yes", "2"], ["one-shot", "yes", "2"]]
    assert "listed tool" in out and "seeds 0-1" in out and "6 calls in" in out


@pytest.mark.parametrize("argv, says", [
    (["--prompt", "shouty"], "invalid choice: 'shouty'"),
    (["--seeds", "0"], "--seeds must be 1 or more"),
    (["--stop", "maybe"], "invalid choice: 'maybe'"),
])
def test_benchmark_refuses_bad_options_with_exit_code_2(capsys, argv, says):
    with pytest.raises(SystemExit) as exit_:
        _benchmark().main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err
