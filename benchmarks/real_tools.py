"""Lesson 15's guards, measured: do the timeouts fire when they say, what do the checks cost?

    .venv/bin/python benchmarks/real_tools.py [--runs 7]

1. Timeouts. getWeather (toolkit/weather_tool.py) against the loopback WeatherService made slow (it waits 30 s
   before answering) with read timeouts of 0.25, 0.5 and 1 s; then against the service's trickle fault (a
   valid reply 16 bytes every 0.1 s) with a total timeout of 0.5 s and a read timeout of 5 s. The wall time of
   each call, median of `--runs`, in seconds and as a multiple of the timeout set. Target: within 1.5x (a
   timeout that fires late holds up the whole agent).
2. A good call. The same tool against the service answering normally: the median time of one call, and of
   `requests.get` + `.json()` on the same URL, as the baseline.
3. The calculator. The slowest refusal over the hostile inputs of tests/test_calculator.py (names, calls,
   9 ** 9 ** 9, (10 ** 1000) ** 1000, 150 nested minus signs, ...), and the slowest allowed computation
   (2 ** 1000, 10 ** 400 / 3, 99999999999 ** 30). Target: every one under 10 ms; `eval` would never return on
   9 ** 9 ** 9.
4. The confirmation gate. The classroom refund (5 rounds, applyRefund approved by an `ask` callback) with and
   without the gate: median wall time of a run, and the multiple. The gate starts a thread per request.

Wall times vary with the machine's load: read the multiples.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import requests

from tinyagent import LlmClient, ReActAgent, WeatherService, calculator_tool, fixed_clock, weather_tool
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.shop import Shop, refund_gate, shop_registry
from tinyagent.toolkit.calculator import CalculatorError, calculate
from tinyagent.toolkit.confirmation import GatedAct

HOSTILE = [
    "__import__('os').system('echo pwned')", "().__class__.__bases__[0].__subclasses__()", "9 ** 9 ** 9",
    "2 ** 100000", "(10 ** 1000) ** 1000", "(2 ** 1000) ** 4", "9" * 150 + " ** 999",
    "(10 ** 999) * (10 ** 999) * (10 ** 999)", "1e400", "10 ** 999.5", "-" * 150 + "1", "(" * 120 + "1",
    "'a' * 10**9", "[x for x in range(10**9)]", "1 << 100000",
]
HEAVY = ["2 ** 1000", "10 ** 400 / 3", "99999999999 ** 30", "(1999 - 200) * 0.85 / 7 ** 12"]
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


def median_seconds(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def timeouts(service: WeatherService, runs: int) -> None:
    print("1. Timeouts (getWeather against a slow weather service)")
    print(f"   {'fault':34} {'timeout set':>12} {'call took':>10} {'multiple':>9}")
    for seconds in (0.25, 0.5, 1.0):
        tool = weather_tool(service.base_url, read_timeout=seconds)

        def slow_call(tool=tool):
            service.inject(delay_s=30, times=1)
            assert '"kind":"timeout"' in tool.invoke("杭州")

        took = median_seconds(slow_call, runs)
        print(f"   {'30 s before the first byte':34} {f'read {seconds:g} s':>12} {took:>9.3f}s {took / seconds:>8.2f}x")
    tool = weather_tool(service.base_url, read_timeout=5, total_timeout=0.5)

    def trickle_call():
        service.inject(body="trickle", times=1)
        assert '"kind":"timeout"' in tool.invoke("杭州")

    took = median_seconds(trickle_call, runs)
    print(f"   {'16 bytes every 0.1 s (about 1.3 s)':34} {'total 0.5 s':>12} {took:>9.3f}s {took / 0.5:>8.2f}x")


def good_call(service: WeatherService, runs: int) -> None:
    tool = weather_tool(service.base_url)
    session = requests.Session()
    session.trust_env = False
    timings: dict[str, list[float]] = {"ours": [], "plain": []}
    for _ in range(runs * 5):  # in turns, so a burst of load hits both alike
        for name, call in (("ours", lambda: tool.invoke("杭州")),
                           ("plain", lambda: session.get(service.url("/weather"), params={"city": "杭州"},
                                                         timeout=5).json())):
            started = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - started)
    ours, plain = statistics.median(timings["ours"]), statistics.median(timings["plain"])
    print("2. A good call")
    print(f"   getWeather {ours * 1000:.2f} ms; requests.get + .json() {plain * 1000:.2f} ms ({ours / plain:.2f}x)")


def calculator_costs(runs: int) -> None:
    def worst(expressions: list[str], refused: bool) -> tuple[float, str]:
        slowest = (0.0, "")
        for expression in expressions:
            def once(expression=expression):
                try:
                    calculate(expression)
                except CalculatorError:
                    assert refused, expression
                else:
                    assert not refused, expression

            slowest = max(slowest, (median_seconds(once, runs), expression))
        return slowest

    refusal, which = worst(HOSTILE, refused=True)
    heavy, heavy_which = worst(HEAVY, refused=False)
    tool = calculator_tool()
    money = median_seconds(lambda: tool.invoke("(1999 - 200) * 0.85"), runs * 5)
    print("3. The calculator")
    print(f"   slowest refusal of {len(HOSTILE)} hostile inputs: {refusal * 1000:.3f} ms ({which[:30]})")
    print(f"   slowest allowed computation of {len(HEAVY)}: {heavy * 1000:.3f} ms ({heavy_which})")
    print(f"   a price through the tool, (1999 - 200) * 0.85: {money * 1000:.3f} ms")


def gate_cost(runs: int) -> None:
    clock = fixed_clock("2026-06-30T19:05:23")
    llm = LlmClient.classroom()

    def run(gated: bool):
        with Shop(":memory:", clock=clock) as shop:
            parts = [GatedAct(refund_gate(shop, ask=lambda request: True))] if gated else []
            result = ReActAgent(llm, shop_registry(shop), parts=parts).run(REFUND)
            assert len(shop.refunds()) == 1 and result.reason == "final_answer"

    run(True)  # warm the classroom model's answer cache and the imports
    timings = {False: [], True: []}
    for _ in range(runs):  # in turns, so a burst of load hits both alike
        for gated in (False, True):
            started = time.perf_counter()
            run(gated)
            timings[gated].append(time.perf_counter() - started)
    without, with_gate = (statistics.median(timings[g]) for g in (False, True))
    print("4. The confirmation gate (the classroom refund, 5 rounds, approved by a callback)")
    print(f"   without {without * 1000:.1f} ms, with {with_gate * 1000:.1f} ms ({with_gate / without:.2f}x)")


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=whole_number("--runs", 1000, "each run times every call"), default=7,
                        help="timed runs (default 7)")
    args = parser.parse_args()
    with WeatherService() as service:
        timeouts(service, args.runs)
        good_call(service, args.runs)
    calculator_costs(args.runs)
    gate_cost(args.runs)


if __name__ == "__main__":
    main()
