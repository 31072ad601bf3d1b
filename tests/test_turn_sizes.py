"""Lesson 13's measurement (tinyagent/memory/turn_tokens.py) and the script that prints it
(benchmarks/context_budget.py): every request counted as it goes out, per turn, both ways."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tinyagent import LlmCall, LlmClient, ReActAgent, fixed_clock
from tinyagent.memory.context_budget import BudgetedRequest, ContextBudget, request_tokens
from tinyagent.memory.turn_tokens import RequestLog, measure_session, size_table
from tinyagent.protocols.token_count import classroom_counter
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.long_session import LONG_SESSION
from tinyagent.shop.tasks import ShopTask

CLOCK = fixed_clock("2026-06-30T19:05:23")


def agent(budget=None):
    return ReActAgent(LlmClient.classroom(), shop_registry(Shop(":memory:", clock=CLOCK)),
                      parts=[BudgetedRequest(budget)] if budget else [])


def test_each_turn_is_sized_from_the_requests_it_sent():
    tasks = LONG_SESSION[:4]
    measured = agent()
    sizes = measure_session(measured, tasks)
    assert isinstance(measured.llm, LlmClient)  # the log is taken off again
    assert [s.requests for s in sizes] == [1, 3, 2, 5]  # hello; order + parcel; the clock; the refund's five rounds
    assert all(s.right and s.reason == "final_answer" for s in sizes)
    # The same figures from the traces of a second run of the same turns.
    from tinyagent.memory.plain_turns import run_turns

    results = run_turns(agent(), [t.question for t in tasks])
    for size, result in zip(sizes, results):
        counted = [request_tokens(list(call.messages)) for call in result.trace.of_type(LlmCall)]
        assert (size.largest, size.sent) == (max(counted), sum(counted))


def test_a_wrong_answer_is_marked_and_the_counter_is_the_one_given():
    tasks = [ShopTask("wrong on purpose", "What time is it now?", ("23:59",))]
    sizes = measure_session(agent(), tasks, counter=classroom_counter())
    assert not sizes[0].right
    log = RequestLog(LlmClient.classroom(), classroom_counter())
    reply = log.chat([{"role": "user", "content": "What time is it now?"}])
    assert log.tokens == [reply.usage["prompt_tokens"]]


def test_the_table_lines_up_both_sessions_with_totals():
    tasks = LONG_SESSION[:3]
    table = size_table(measure_session(agent(), tasks), measure_session(agent(ContextBudget(700)), tasks), 700)
    lines = table.splitlines()
    assert lines[0].rstrip().endswith("with 700") and len(lines) == 2 + 3 + 1
    assert lines[-1].endswith("3/3 of 3")


def _benchmark():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "context_budget.py"
    spec = importlib.util.spec_from_file_location("context_budget_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("protocol", ["text", "function"])
def test_the_benchmark_stays_under_the_budget_with_every_answer_right(protocol, capsys):
    assert _benchmark().main(["--protocol", protocol]) == 0
    out = capsys.readouterr().out
    assert "right answers: 30 of 30 without the budget, 30 with it" in out
    largest_with = re.search(r"tokens without, (\d+) with \(budget 1500\)", out)
    assert largest_with and int(largest_with.group(1)) <= 1500


def test_a_tight_budget_stops_turns_and_the_table_says_so(capsys):
    # 600 tokens: the refund's last request cannot fit even with everything folded, so that run stops with
    # "context_budget" (as do six others); no request goes over, but those answers are lost, and it says so.
    assert _benchmark().main(["--budget", "600"]) == 0
    out = capsys.readouterr().out
    assert "turns the budget stopped: 4 (context_budget), 8 (context_budget), 12 (context_budget)" in out
    assert "yes/NO" in out and "right answers: 30 of 30 without the budget, 23 with it" in out


def test_the_benchmark_exits_with_1_when_a_request_went_over(capsys):
    module = _benchmark()
    sizes = measure_session(agent(), LONG_SESSION[:2])
    module.sessions = lambda llm, protocol, budget: (sizes, sizes)  # as if the budget had not been applied
    assert module.main(["--budget", "300"]) == 1
    assert "OVER THE BUDGET in turns [2]" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [(["--budget", "0"], "--budget"),
                                        (["--model", "classroom-nonexistent"], "classroom-nonexistent")])
def test_the_benchmark_refuses_bad_input_in_one_line_with_exit_code_2(argv, says, capsys):
    assert _benchmark().main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
