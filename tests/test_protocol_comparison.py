"""Lesson 09's measurements (tinyagent/protocols/protocol_comparison.py), the shop's task set, and the benchmark
script that prints them (benchmarks/function_calling.py)."""

from __future__ import annotations

import copy
import importlib.util
import threading
from pathlib import Path

import pytest

from tinyagent import LlmClient, ReActAgent, fixed_clock, function_specs
from tinyagent.events import Parsed
from tinyagent.loop_parts import RunInTurn
from tinyagent.protocols.function_calling import UNREADABLE_ARGUMENTS, FunctionCallingAgent
from tinyagent.protocols.protocol_comparison import (
    SlowTool,
    TaskRun,
    compare_protocols,
    parse_failures,
    protocol_table,
    run_task,
    slowed,
    time_run,
    totals,
)
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.tasks import SHOP_TASKS, ShopTask
from tinyagent.trace import Trace

TWO_ORDERS = next(task for task in SHOP_TASKS if task.name == "two orders")


@pytest.fixture(scope="module")
def careful_runs():
    return compare_protocols(LlmClient.classroom())


def test_the_task_set_covers_every_shop_tool_both_languages_and_two_order_requests():
    assert len({task.name for task in SHOP_TASKS}) == len(SHOP_TASKS)
    assert {"zh", "en"} == {"zh" if any("\u4e00" <= c <= "\u9fff" for c in t.question) else "en" for t in SHOP_TASKS}
    assert sum(task.name.startswith("two ") for task in SHOP_TASKS) >= 2
    assert all(task.facts for task in SHOP_TASKS)


def test_the_tasks_are_worded_afresh_not_taken_from_the_understanding_tests():
    from .test_classroom_understanding import CASES

    assert not {task.question for task in SHOP_TASKS} & {case.phrasing for case in CASES}


def test_a_task_is_answered_only_when_every_fact_is_there():
    task = ShopTask("x", "?", ("SF1234567890", "2026-06-22"))
    assert task.answered("Parcel SF1234567890 was signed for on 2026-06-22.")
    assert not task.answered("Parcel SF1234567890 is on its way.")
    assert not task.answered(None)


def test_on_the_classroom_model_both_protocols_answer_every_task(careful_runs):
    assert len(careful_runs) == 2 * len(SHOP_TASKS)
    assert all(run.right and run.reason == "final_answer" and run.parse_failures == 0 for run in careful_runs)


def test_function_calling_needs_fewer_model_calls_where_lookups_are_independent(careful_runs):
    by = {(run.task, run.protocol): run for run in careful_runs}
    for task in SHOP_TASKS:
        text, native = by[task.name, "text"], by[task.name, "function"]
        assert native.model_calls <= text.model_calls, task.name
        assert native.tool_calls == text.tool_calls, task.name  # the same work, in fewer replies
        assert native.completion_tokens < text.completion_tokens, task.name  # no Thought, no format to write
    assert by["two parcels", "text"].model_calls == 5 and by["two parcels", "function"].model_calls == 3
    assert by["two orders", "text"].model_calls == 3 and by["two orders", "function"].model_calls == 2


def test_the_table_shows_both_protocols_per_task_and_the_totals(careful_runs):
    table = protocol_table(careful_runs)
    lines = table.splitlines()
    assert "text ReAct" in lines[0] and "function calling" in lines[0]
    assert len(lines) == 2 + len(SHOP_TASKS) + 1
    text, native = totals(careful_runs, "text"), totals(careful_runs, "function")
    assert lines[-1].split("|")[1].split() == [str(text["model_calls"]), str(text["prompt_tokens"]),
                                               str(text["completion_tokens"]), "0", f"{len(SHOP_TASKS)}/9"]
    assert native["model_calls"] < text["model_calls"]


def test_a_sloppy_formatter_breaks_text_react_but_not_function_calling():
    runs = compare_protocols(LlmClient.classroom("classroom-sloppy"), SHOP_TASKS[:3])
    text, native = totals(runs, "text"), totals(runs, "function")
    assert text["parse_failures"] == 3 and text["right"] == 0
    assert native["parse_failures"] == 0 and native["right"] == 3


def test_parse_failures_count_unreadable_replies_and_arguments_but_not_tool_errors():
    trace = Trace([
        Parsed(1, rule="action"), Parsed(2, rule="no_format"), Parsed(3, rule="format_error"),
        Parsed(4, rule="action (Markdown around keys)"), Parsed(5, rule=UNREADABLE_ARGUMENTS),
        Parsed(5, rule="tool_call"), Parsed(6, rule="final_answer"),
    ])
    assert parse_failures(trace) == 3


def test_run_task_refuses_an_unknown_protocol_and_passes_options_to_the_agent():
    with pytest.raises(ValueError, match="protocol"):
        run_task(TWO_ORDERS, "json", LlmClient.classroom())
    capped = run_task(SHOP_TASKS[0], "text", LlmClient.classroom(), max_steps=2)
    assert capped == TaskRun("refund", "text", 2, capped.prompt_tokens, capped.completion_tokens, 0, 2,
                             "max_steps", False)


def test_a_slow_tool_is_offered_exactly_as_the_original_and_sleeps_before_running():
    clock = fixed_clock("2026-06-30T19:05:23")
    tools = shop_registry(Shop(":memory:", clock=clock), clock)
    slow = slowed(tools, 0.2)
    assert slow.names == tools.names
    assert slow.build_tool_list("zh") == tools.build_tool_list("zh")
    assert function_specs(slow, "en") == function_specs(tools, "en")
    happened = []
    recording = copy.copy(tools.get("queryOrder"))  # the same tool, saying when it runs
    recording.invoke = lambda text: happened.append("run") or tools.get("queryOrder").invoke(text)
    order = SlowTool(recording, 0.2, sleep=lambda seconds: happened.append(f"sleep {seconds}"))
    assert order.invoke("88231") == tools.get("queryOrder").invoke("88231")
    assert happened == ["sleep 0.2", "run"]  # the wait stands for a slow tool: it comes before the result


class FakeClock:
    """Seconds that move only when a fake sleep moves them."""

    def __init__(self):
        self.now = 0.0
        self.lock = threading.Lock()

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        with self.lock:
            self.now += seconds


def slow_shop(clock, seconds):
    shop_clock = fixed_clock("2026-06-30T19:05:23")
    tools = shop_registry(Shop(":memory:", clock=shop_clock), shop_clock)
    from tinyagent import ToolRegistry

    return ToolRegistry([SlowTool(tool, seconds, sleep=clock.sleep) for tool in tools])


def test_time_run_adds_up_the_wait_for_tools_round_by_round():
    clock = FakeClock()
    result, timing = time_run(ReActAgent(LlmClient.classroom(), slow_shop(clock, 0.2)), TWO_ORDERS.question,
                              clock=clock)
    assert result.reason == "final_answer" and (timing.rounds, timing.tool_calls) == (3, 2)
    assert timing.tools_s == pytest.approx(0.4) and timing.run_s == pytest.approx(0.4)
    clock = FakeClock()
    _, timing = time_run(FunctionCallingAgent(LlmClient.classroom(), slow_shop(clock, 0.2), parts=[RunInTurn()]),
                         TWO_ORDERS.question, clock=clock)
    assert (timing.rounds, timing.tool_calls) == (2, 2) and timing.tools_s == pytest.approx(0.4)


# -- the benchmark script ------------------------------------------------------------------------------
def _benchmark():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "function_calling.py"
    spec = importlib.util.spec_from_file_location("function_calling_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_prints_both_parts(capsys):
    assert _benchmark().main(["--runs", "1", "--tool-ms", "50"]) == 0
    out = capsys.readouterr().out
    assert "1. The shop's task set" in out and "total" in out
    assert "parallel" in out and "sequential" in out and "target: parallel tool wait within 1.3x" in out


@pytest.mark.parametrize("argv, says", [
    (["--runs", "0"], "--runs"),
    (["--model", "classroom-nonexistent", "--runs", "1"], "classroom-nonexistent"),
])
def test_the_benchmark_refuses_bad_input_in_one_line_with_exit_code_2(argv, says, capsys):
    assert _benchmark().main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_benchmark_says_why_it_skips_the_timing_when_the_model_does_not_call_in_parallel(capsys):
    assert _benchmark().main(["--model", "classroom-loop", "--runs", "1", "--tool-ms", "10"]) == 1
    out = capsys.readouterr().out
    assert "skipped: the model made" in out and "max_steps" in out
