"""Lesson 06 (the ReAct loop): a usage-counting client, and record and replay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.agent import ReActAgent
from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _instance,
    _not_attempted,
    _passed,
    _run,
    grades,
)
from tinyagent.llm_client import ChatResult
from tinyagent.shop import shop_registry


class ScriptedModel:
    """A stand-in for `LlmClient` that answers with the given replies in order (then a final answer),
    and remembers the options of every call. Each reply is a text, or (text, finish_reason)."""

    def __init__(self, replies: list[str | tuple[str, str]]):
        self.script = [reply if isinstance(reply, tuple) else (reply, "stop") for reply in replies]
        self.calls: list[dict] = []

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        n = len(self.calls)
        self.calls.append(options)
        text, finish = self.script[n] if n < len(self.script) else ("Thought: done.\nFinal Answer: 好的。", "stop")
        prompt = sum(len(m["content"]) for m in messages)
        usage = {"prompt_tokens": prompt, "completion_tokens": len(text) + 1, "total_tokens": prompt + len(text) + 1}
        return ChatResult(text, finish, usage, model="scripted")


ORDER_STEP = "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n"
SCRIPTS = {
    "a parcel run ending in a Final Answer": [
        ORDER_STEP,
        "Thought: 有运单号了。\nAction: queryLogistics\nAction Input: SF1234567890\n",
        "Thought: 已签收。\nFinal Answer: 您的包裹已于 2026-06-22 签收。",
    ],
    "a run that answers in prose (the fallback)": [ORDER_STEP, "订单 88231 已签收。"],
    "a run whose second reply is cut by max_tokens": [ORDER_STEP, ("Thought: 订单已签收，运单号是 SF12", "length")],
    "a reply cut inside its Action Input": [("Thought: 先查订单。\nAction: queryOrder\nAction Input: 882", "length")],
    "an empty reply": [ORDER_STEP, ""],
}


@grades("Exercise 1")
def check_counting_llm(CountingLlm: type | None) -> None:
    """06, exercise 1: a wrapper that passes every call on and keeps each reply's usage."""
    exercise = "Exercise 1"
    if CountingLlm is None:
        return _not_attempted(exercise, "Write class CountingLlm in the cell above.")
    model = ScriptedModel(SCRIPTS["a parcel run ending in a Final Answer"])
    counting = _instance(exercise, CountingLlm, model)
    messages = [{"role": "user", "content": "帮我看看订单 88231 的快递到哪了。"}]
    replies = []
    for n in range(3):
        messages = [*messages, {"role": "user", "content": f"round {n + 1}"}]
        replies.append(_run(exercise, "chat(messages, stop=...)", counting.chat, messages,
                            stop=["Observation:"], max_tokens=64))
    if [getattr(reply, "text", None) for reply in replies] != [text for text, _ in model.script]:
        _fail(exercise, "chat() should return the wrapped model's reply as it is (a ChatResult)")
    if any(call.get("stop") != ["Observation:"] or call.get("max_tokens") != 64 for call in model.calls):
        _fail(exercise, f"chat() should pass every option on to the model (stop, max_tokens); the model got "
                        f"{_brief(model.calls, 80)}")
    expected = [reply.usage for reply in replies]
    usages = getattr(counting, "usages", None)
    if usages != expected:
        _fail(exercise, f"after 3 calls, .usages should hold the 3 usages (reply.usage) in order, "
                        f"{_brief(expected, 80)}; got {_brief(usages, 80)}")
    return _passed(exercise, "every call passes through, and every round's usage is kept.")


def _compare_replay(label: str, mine: Any, theirs: Any, exercise: str) -> str:
    """Your loop's result against ReActAgent's on the same replies; the explanation of a difference
    that is honest (ReActAgent stops on a reply cut by max_tokens or an empty one: lesson 10)."""
    their_calls = [(call.name, call.input) for call in theirs.trace.tool_calls]
    if theirs.reason in ("length", "empty_reply"):
        # Your loop does not look at finish_reason or at an empty reply; it agrees up to that round.
        rounds = theirs.trace.rounds
        if list(mine.calls[: len(their_calls)]) != their_calls or mine.messages[: len(theirs.messages)] != theirs.messages:
            _fail(exercise, f"{label}: up to round {rounds} both loops had the same replies, yet they differ: "
                            f"your calls {_brief(mine.calls)}, ReActAgent's {_brief(their_calls)}")
        return f"{label}: the same up to round {rounds}, where ReActAgent stops ({theirs.reason})"
    problems = []
    if mine.reason != theirs.reason:
        problems.append(f"reason {mine.reason!r} vs {theirs.reason!r}")
    if theirs.ok and mine.answer != theirs.answer:
        problems.append(f"answer {_brief(mine.answer, 40)} vs {_brief(theirs.answer, 40)}")
    if list(mine.calls) != their_calls:
        problems.append(f"calls {_brief(list(mine.calls))} vs {_brief(their_calls)}")
    if mine.rounds != theirs.trace.rounds:
        problems.append(f"rounds {mine.rounds} vs {theirs.trace.rounds}")
    if mine.messages != theirs.messages:
        problems.append("the message lists differ")
    if problems:
        _fail(exercise, f"{label}: given the same replies, your loop and ReActAgent disagree: "
                        + "; ".join(problems) + ". Does the Recorder keep every reply, and the Replayer "
                        "hand them back one after the other?")
    return f"{label}: same answer, calls, rounds and messages ({theirs.reason})"


@grades("Exercise 2")
def check_record_replay(
    Recorder: type | None,
    Replayer: type | None,
    run_loop: Callable | None = None,
    llm: Any = None,
    questions: tuple[str, ...] = (),
) -> None:
    """06, exercise 2: record the replies your loop got, replay them to ReActAgent, compare.

    Checked on scripted replies (a final answer, the fallback, a reply cut by max_tokens, an empty one),
    then, when `llm` and `questions` are given, on that model's own replies: true on any model."""
    exercise = "Exercise 2"
    if Recorder is None and Replayer is None:
        return _not_attempted(exercise, "Write class Recorder and class Replayer in the cell above.")
    if run_loop is None:
        _fail(exercise, "pass your run_loop too: check_record_replay(Recorder, Replayer, run_loop, ...)")
    parcel = "帮我看看订单 88231 的快递到哪了。"
    sources = [(label, ScriptedModel(script), parcel) for label, script in SCRIPTS.items()]
    if llm is not None:
        sources += [(f"{getattr(llm, 'model', 'your model')}: {question}", llm, question) for question in questions]
    # "passes every call on": the options too, or a stop sequence is lost between the loop and the model
    model = ScriptedModel([ORDER_STEP])
    recorder = _instance(exercise, Recorder, model)
    _run(exercise, "Recorder(llm).chat(messages, stop=[...], max_tokens=64)", recorder.chat,
         [{"role": "user", "content": "88231?"}], stop=["Observation:"], max_tokens=64)
    if model.calls != [{"stop": ["Observation:"], "max_tokens": 64}]:
        _fail(exercise, f"Recorder.chat(messages, stop=['Observation:'], max_tokens=64) should pass every call on with "
                        f"its options; the model got {model.calls}")
    lines = []
    for label, source, question in sources:
        recorder = _instance(exercise, Recorder, source)
        mine = _run(exercise, "run_loop(...) with your Recorder", run_loop, question, recorder,
                    shop_registry(_fresh_shop()), verbose=False)
        replies = getattr(recorder, "replies", None)
        if not replies:
            _fail(exercise, f"{label}: after the run, recorder.replies is {replies!r}: keep every reply")
        replayer = _instance(exercise, Replayer, replies)
        agent = ReActAgent(replayer, shop_registry(_fresh_shop()))
        theirs = _run(exercise, "ReActAgent(Replayer(...)).run(...)", agent.run, question)
        lines.append(_compare_replay(label, mine, theirs, exercise))
    return _passed(exercise, "\n  " + "\n  ".join(lines))
