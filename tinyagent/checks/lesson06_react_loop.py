"""Lesson 06 (the ReAct loop): a usage-counting client, and record and replay."""

from __future__ import annotations

import copy
import inspect
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

from tinyagent.agent import ReActAgent
from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _instance,
    _not_attempted,
    _passed,
    _run,
    grades,
    shown,
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


# -- the inputs of both exercises: scripted conversations, drawn from the specs ---------------------
# A conversation is plain data: one entry per call, the messages and options the loop sends, and the reply the
# model gives back. The harnesses below turn the replies into ChatResult objects, so an answer is told apart
# from the reference by what it returns (the very reply, or something else) and what it keeps.
_QUESTIONS = ("帮我看看订单 {id} 的快递到哪了。", "我上周买的扫地机不回充了，修不好我想退。订单号 {id}。", "Where is my order {id}?",
              "Can I return order {id}?\nIt arrived broken.", "订单 {id} 和 {other} 都查一下", "")
_REPLIES = ("Thought: 先查订单。\nAction: queryOrder\nAction Input: {id}\n",
            "Thought: I need the parcel.\nAction: queryLogistics\nAction Input: {tracking}\n",
            "Thought: 已签收。\nFinal Answer: 您的包裹已于 2026-06-22 签收。",
            "Thought: done.\nFinal Answer: Order {id} was delivered.\nAnything else?",
            "订单 {id} 已签收。", "", "Thought: 订单已签收，运单号是 SF12",
            "Thought: 查一下政策 🙂\nAction: searchKnowledge\nAction Input: 七天无理由退货")
_OBSERVATIONS = ('Observation: {{"orderId":"{id}","status":"已签收"}}', 'Observation: {{"error":"订单不存在：{id}"}}',
                 "Observation: 快件已由本人签收\n(2026-06-22 11:35)")


def _filled(rng: random.Random, text: str) -> str:
    return text.format(id=rng.randint(10000, 99999), other=rng.randint(10000, 99999),
                       tracking=rng.choice(("SF", "YT", "ZT", "JD")) + str(rng.randint(10**9, 10**10 - 1)))


def _options(rng: random.Random) -> dict:
    """What a loop may pass besides the messages: any of these, or none."""
    options = {}
    if rng.random() < 0.7:
        options["stop"] = rng.choice((["Observation:"], ["Observation:", "\nObservation"], ["观察："]))
    if rng.random() < 0.5:
        options["max_tokens"] = rng.randint(16, 2048)
    if rng.random() < 0.3:
        options["temperature"] = rng.choice((0.0, 0.1, 0.7, 1.0))
    if rng.random() < 0.2:
        options["seed"] = rng.randint(1, 10**6)
    return options


def _usage(rng: random.Random, prompt: int) -> dict:
    completion = rng.randint(1, 400)
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if rng.random() < 0.2:  # what some servers add; the usage is kept as it is
        usage["prompt_tokens_details"] = {"cached_tokens": rng.randint(0, prompt)}
    return usage


def _conversation(rng: random.Random, calls: int, *, same_usage: bool = False, empty_usage: bool = False,
                  retry: bool = False) -> list:
    """`calls` rounds of a loop: the growing message list, the options of each call, and the model's reply.
    `retry`: the first call is asked again with the same messages (a loop that retries): each call still counts."""
    messages = [{"role": "system", "content": rng.choice(("You are a shop assistant.", "你是客服助手。\n只用工具。"))},
                {"role": "user", "content": _filled(rng, rng.choice(_QUESTIONS))}]
    prompt = rng.randint(90, 900)
    script = []
    for n in range(calls):
        text = _filled(rng, rng.choice(_REPLIES))
        finish = "length" if text.endswith("SF12") else rng.choice(("stop", "stop", None))
        usage = _usage(rng, prompt)
        if same_usage and n > 0:
            usage = dict(script[-1]["reply"]["usage"])  # two rounds may cost the same: both are kept
        if empty_usage and n == calls // 2:
            usage = {}  # a server that reports no usage: still that reply's usage
        script.append({"messages": copy.deepcopy(messages), "options": _options(rng),
                       "reply": {"text": text, "finish_reason": finish, "usage": usage}})
        if retry and n == 0:
            continue
        messages += [{"role": "assistant", "content": text},
                     {"role": "user", "content": _filled(rng, rng.choice(_OBSERVATIONS))}]
        prompt += rng.randint(40, 600)
    return script


class _Playback:
    """The model both harnesses wrap: it answers with the given replies in order and keeps what it was sent."""

    def __init__(self, replies: list[ChatResult]):
        self.replies = replies
        self.sent: list[tuple[list, dict]] = []

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        self.sent.append((copy.deepcopy(messages), dict(options)))
        if len(self.sent) > len(self.replies):  # said as what the answer did, not as an IndexError of the check's
            raise RuntimeError(f"the model was called {len(self.sent)} times for {len(self.replies)} call(s) of "
                               "chat(): call it once per call of chat()")
        return self.replies[len(self.sent) - 1]


def _replies_of(script: list) -> list[ChatResult]:
    # Each reply names its round in `model`, so two replies of the same text are still told apart (unless the
    # conversation gives a reply a `model` of its own: the very same reply twice).
    return [ChatResult(call["reply"]["text"], call["reply"]["finish_reason"], call["reply"]["usage"],
                       model=call["reply"].get("model", f"scripted, round {n}"))
            for n, call in enumerate(script, start=1)]


def _named(value: Any, replies: list[ChatResult], at: int | None = None) -> str:
    """A returned value in a few words: which of the model's replies it is, or what it is instead. `at`: the reply
    expected (1, 2, …); a value equal to that one is named by it, so of a reply recorded twice each is its own."""
    if at is not None and 0 < at <= len(replies) and (value is replies[at - 1] or (
            isinstance(value, ChatResult) and value == replies[at - 1])):
        return f"reply {at}"
    for n, reply in enumerate(replies, start=1):
        if value is reply or (isinstance(value, ChatResult) and value == reply):
            return f"reply {n}"
    if isinstance(value, ChatResult):
        return "a new ChatResult"  # made anew, or a reply changed on the way: equal to none of the model's
    return f"{type(value).__name__} {_brief(value, 24)}"


# What each outcome sentence below means the answer did, and what to do instead (a failure shows the outcome
# cut to a few words, then this advice).
_ADVICE = {
    "new ChatResult": "Hand back the model's reply itself (the same object), not a new ChatResult made from it.",
    "changed": "Leave the message list as it was given: the loop goes on with it.",
    "messages": "Pass the message list on as it is.",
    "options": "Pass every option on: self.llm.chat(messages, **options).",
    "returned": "Return the model's reply as it is (the ChatResult, not its text).",
    "times": "Call the model once per call of chat().",
    "item(s)": "Keep one per call, whatever it holds.",
    "not a list": "Keep them in a list.",
    "answered": "Hand back the next reply on each call, whatever the messages.",
    "now": "Copy the list (list(replies)) or keep a position in it, so the recorder's replies stay.",
    "another order": "Keep them in the order of the calls: add each one at the end (append).",
}


def _advice(args: tuple, expected: str, got: str) -> str | None:
    if got == expected:
        return None  # the failure is not in the outcome (the framework's own message says what it is)
    kept = ".usages" if "usage" in expected else ".replies"
    if " of two" in got or " more, from " in got:
        if args[0] == "replays, two at once":
            return "Each Replayer keeps its own place in the replies: on self, not on the class."
        if default := re.search(r"the default (\w+)=\[\]", got):  # see _made_once
            return (f"A default ({default.group(1)}=[]) is one list, made once, that every instance shares: make a new "
                    f"one in __init__ (self{kept} = []).")
        if _OUTSIDE in got:
            return f"A list made outside the class is shared by every instance: make one in __init__ (self{kept} = [])."
        if " of two" in got:
            return f"Each object keeps its own list: self{kept} = [] in __init__, not a list on the class."
        return f"A list made in the class body is shared by every instance: make it in __init__ (self{kept} = [])."
    if got.startswith("item "):
        kept = "reply.usage itself (a dict)" if "usage" in expected else "the reply itself (the ChatResult)"
        return f"Keep {kept}, as it came."
    return next((advice for word, advice in _ADVICE.items() if word in got), None)


def _passed_on(wrapper: Any, model: _Playback, script: list, replies: list[ChatResult]) -> str:
    """Drive `wrapper` through the conversation: did each call reach the model as it was made (the same messages,
    the same options) and come back as the model's reply? Else what the first call that did not got instead. The
    outcome is a few words, so a failure shows the difference, not two long message lists."""
    for n, call in enumerate(script, start=1):
        made = copy.deepcopy(call)  # the call as it was made (an answer that changes its input is told so apart)
        returned = wrapper.chat(call["messages"], **call["options"])
        if call["messages"] != made["messages"]:
            return f"call {n} changed its messages"
        call = made
        if len(model.sent) != n:
            return f"call {n}: the model called {len(model.sent)} times"
        messages, options = model.sent[-1]
        options = {key: value for key, value in options.items() if value is not None}  # None: left out
        if messages != call["messages"]:
            return f"call {n}: {len(messages)} messages of {len(call['messages'])}"
        if options != call["options"]:
            return f"call {n}: options {_brief(options, 24)}"
        if (named := _named(returned, replies, n)) != f"reply {n}":
            return f"call {n} returned {named}"
    return f"{len(script)} call(s) passed on, replies returned"


def _kept(kept: Any, wanted: list, what: str, script: list, made: Any = None, attr: str = "") -> str:
    """What a list kept across the conversation holds, against `wanted` (one item per call), in a few words.
    `made`: the object that keeps it, as its .`attr` (to tell where a list it shares was made)."""
    if isinstance(kept, str):
        return kept
    if not isinstance(kept, list):
        return f"a {type(kept).__name__}, not a list"
    calls = len(script)
    if len(kept) > calls and kept[len(kept) - calls:] == wanted:
        return f"{len(kept) - calls} more, from {_made_once(made, attr) or 'an earlier object'}"
    if len(kept) != calls:
        return f"{len(kept)} item(s) for {calls} call(s)"
    if kept != wanted and _same_items(kept, wanted):
        return f"the {calls} {what} in another order"
    for n, (have, want) in enumerate(zip(kept, wanted), start=1):
        if have is not want and have != want:
            return f"item {n}: {_brief(have, 30)}"
    return f"{calls} {what}, in order"  # "3 usage(s), in order"


# How _made_once names a shared list that is neither on the class nor a default of __init__'s.
_OUTSIDE = "a list outside the class"


def _made_once(made: Any, attr: str) -> str:
    """Where the list `made`.`attr` that every object shares was made, told from the object, in a few words for an
    outcome: a default value of __init__'s (usages=[]: one list, made when def ran), or outside the class (a
    module's list); "" when it is on the class (in its body, or set there by __init__) or cannot be told."""
    if made is None:
        return ""
    try:
        shared = getattr(made, attr)
        if any(shared is vars(cls).get(attr) for cls in type(made).__mro__):
            return ""  # on the class: the advice's own words
        parameters = inspect.signature(type(made).__init__).parameters.values()
        default = next((p.name for p in parameters if p.default is shared), None)
    except Exception:  # noqa: BLE001 - the learner's object, read as far as it can be
        return ""
    return f"the default {default}=[]" if default else _OUTSIDE


def _same_items(kept: list, wanted: list) -> bool:
    """Whether `kept` holds `wanted`'s items, each once, in any order (a list kept newest first)."""
    left = list(wanted)
    for item in kept:
        match = next((n for n, want in enumerate(left) if item is want or item == want), None)
        if match is None:
            return False
        del left[match]
    return not left


def _two_kept(make: Callable[[Any], Any], attr: str, what: str, script: list) -> str:
    """Two objects alive at once over one model: the first takes call 1, the second is made after it, then the
    two take the other calls in turn. Does each hold its own calls' items (a list on the class does not)? What
    one object alone gets wrong is said as that."""
    replies = _replies_of(script)
    wanted = [reply.usage if attr == "usages" else reply for reply in replies]
    alone = make(_Playback(replies))
    for call in script:
        alone.chat(call["messages"], **call["options"])
    outcome = _kept(getattr(alone, attr, f"no .{attr} attribute"), wanted, what, script, alone, attr)
    if not outcome.endswith(", in order"):
        return outcome
    model = _Playback(replies)
    objects = [make(model)]
    objects[0].chat(script[0]["messages"], **script[0]["options"])
    objects.append(make(model))
    for n, call in enumerate(script[1:], start=1):
        objects[n % 2].chat(call["messages"], **call["options"])
    for which, kept in enumerate(getattr(made, attr, None) for made in objects):
        if not isinstance(kept, list):
            return _kept(kept if kept is not None else f"no .{attr} attribute", wanted[which::2], what,
                         script[which::2])
        # Each item named by its call (1, 2, …), so a failure shows whose calls an object holds in a few words.
        calls = [next((n for n, want in enumerate(wanted, start=1) if have is want or have == want), "?")
                 for have in kept]
        if calls != list(range(which + 1, len(script) + 1, 2)):
            return (f"the {('first', 'second')[which]} of two keeps calls {calls}, not "
                    f"{list(range(which + 1, len(script) + 1, 2))}"
                    + (f", from {where}" if (where := _made_once(objects[which], attr)) else ""))
    return f"two objects, each its own {what}"


def _two_replayed(Replayer: type, script: list) -> str:
    """Two Replayers, each of its own copy of one recording, asked in turn: each hands back every reply in order
    (a place in the replies kept on the class does not)."""
    replies = _replies_of(script)
    alone = Replayer(list(replies))  # what one Replayer alone gets wrong is said as that, not as two objects' fault
    for n, call in enumerate(script, start=1):
        if (name := _named(alone.chat(call["messages"], **call["options"]), replies, n)) != f"reply {n}":
            return f"call {n} answered with {name}"
    players = [Replayer(list(replies)), Replayer(list(replies))]
    for n in range(1, len(script) + 1):
        for which, player in enumerate(players):
            name = _named(player.chat(script[n - 1]["messages"], **script[n - 1]["options"]), replies, n)
            if name != f"reply {n}":
                return f"the {('first', 'second')[which]} of two: call {n} answered with {name}"
    return f"two objects, each {len(script)} reply(s), in order"


def _show_script(args: tuple) -> str:
    script = args[-1]
    first = script[0]
    two = "two objects at once, " if args[0].endswith("two at once") else ""
    return (f"{two}{len(script)} call(s); call 1 with {_brief(first['options'], 36)}, the model replying "
            f"{_brief(first['reply']['text'], 24)}")


# -- exercise 1 ----------------------------------------------------------------------------------
class _CountingLlm:
    """06, exercise 1's answer (the solution's): passes every call on and keeps each reply's usage."""

    def __init__(self, llm: Any):
        self.llm = llm
        self.usages: list[dict] = []

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        reply = self.llm.chat(messages, **options)
        self.usages.append(reply.usage)
        return reply


def _counting_run(CountingLlm: type) -> Callable[[str, list], str]:
    """A conversation driven through one new CountingLlm: were the calls passed on, or what does .usages hold
    afterwards (which of the two is `aspect`, so a failure names the sentence it breaks)."""
    def run(aspect: str, script: list) -> str:
        replies = _replies_of(script)
        model = _Playback(replies)
        counting = CountingLlm(model)
        if aspect == "passes on":
            return _passed_on(counting, model, script, replies)
        if aspect == "keeps, two at once":
            return _two_kept(CountingLlm, "usages", "usage(s)", script)
        for call in script:
            counting.chat(call["messages"], **call["options"])
        usages = getattr(counting, "usages", "no .usages attribute")
        return _kept(usages, [reply.usage for reply in replies], "usage(s)", script, counting, "usages")
    return run


def _conversations(aspect: str, sizes: range, **kinds: bool) -> Callable[[random.Random], Iterator[tuple]]:
    def inputs(rng: random.Random) -> Iterator[tuple]:
        for calls in sizes:
            yield (aspect, _conversation(rng, calls, **kinds))
    return inputs


def _two_at_once(aspect: str, sizes: range) -> Callable[[random.Random], Iterator[tuple]]:
    """The conversations of `aspect`, then three through two objects alive at once (drawn from a generator of
    their own, so the inputs of the rules after this one stay as they were)."""
    def inputs(rng: random.Random) -> Iterator[tuple]:
        yield from _conversations(aspect, sizes)(rng)
        two = random.Random(f"{aspect}, two at once")
        for calls in (2, 3, 5):
            yield (f"{aspect}, two at once", _conversation(two, calls))
    return inputs


def _retried_conversations(aspect: str = "keeps") -> Iterator[tuple]:
    """The same messages sent twice (a loop that retries): two calls, so two usages or two replies kept, and the
    model asked twice (drawn from a generator of their own)."""
    retried = random.Random(f"{aspect}, a retry")
    for calls in (2, 4):
        yield (aspect, _conversation(retried, calls, retry=True))


def _long_conversations(aspect: str) -> Iterator[tuple]:
    """Conversations of 11 and 12 calls, longer than the loop's ten rounds: every call's item is kept or replayed,
    not only the first or last ten (drawn from a generator of their own)."""
    longer = random.Random(f"{aspect}, twelve calls")
    for calls in (11, 12):
        yield (aspect, _conversation(longer, calls))


def _same_reply_twice(aspect: str = "keeps") -> Iterator[tuple]:
    """A retry that got the very same reply (the same text, usage and model): two calls, so two replies kept, equal
    as they are, and replayed, each in its turn (drawn from a generator of their own)."""
    twice = random.Random(f"{aspect}, the same reply twice")
    for calls in (2, 3):
        script = _conversation(twice, calls, retry=True)
        same = {**script[0]["reply"], "model": "scripted"}
        script[0]["reply"], script[1]["reply"] = same, dict(same)
        yield (aspect, script)


def _replies_kept(rng: random.Random) -> Iterator[tuple]:
    yield from _two_at_once("keeps", range(1, 9))(rng)
    yield from _retried_conversations()
    yield from _long_conversations("keeps")
    yield from _same_reply_twice()


def _replies_replayed(rng: random.Random) -> Iterator[tuple]:
    yield from _two_at_once("replays", range(1, 11))(rng)
    yield from _long_conversations("replays")
    yield from _same_reply_twice("replays")


def _calls_passed_on(sizes: range) -> Callable[[random.Random], Iterator[tuple]]:
    """The conversations of "passes on", then two that retry a call (a wrapper that answers a retry from a cache of
    its own does not pass that call on)."""
    def inputs(rng: random.Random) -> Iterator[tuple]:
        yield from _conversations("passes on", sizes)(rng)
        yield from _retried_conversations("passes on")
    return inputs


def _two_kinds_of_usage(rng: random.Random) -> Iterator[tuple]:
    yield from _conversations("keeps", range(2, 9))(rng)
    for calls in (2, 3, 5):
        yield ("keeps", _conversation(rng, calls, same_usage=True))
    for calls in (1, 3, 4):
        yield ("keeps", _conversation(rng, calls, empty_usage=True))
    two = random.Random("keeps, two at once")
    for calls in (2, 3, 5):
        yield ("keeps, two at once", _conversation(two, calls))
    yield from _retried_conversations()
    yield from _long_conversations("keeps")


COUNTING_RULES = (
    Rule("chat(messages, **options) passes the call on (the same messages, every option) and returns the model's "
         "reply as it is", _calls_passed_on(range(1, 13)), _advice),
    Rule("it keeps each reply.usage, in order, in a list .usages of its own (an empty one, or two equal ones, "
         "too)",
         _two_kinds_of_usage, _advice),
)


@grades("Exercise 1", spec=Spec(COUNTING_RULES))
def check_counting_llm(CountingLlm: type | None) -> None:
    """06, exercise 1: a wrapper that passes every call on and keeps each reply's usage."""
    exercise = "Exercise 1"
    if CountingLlm is None:
        return _not_attempted(exercise, "Write class CountingLlm in the cell above.")
    if not isinstance(CountingLlm, type):
        _fail(exercise, f"expected a class, got {type(CountingLlm).__name__}: write `class CountingLlm:` in the "
                        "answer cell")
    tried = agree_on(exercise, "check_counting_llm", COUNTING_RULES, _counting_run(CountingLlm),
                     _counting_run(_CountingLlm), call="CountingLlm(llm).chat(...)",
                     show=_show_script)
    return _passed(exercise, f"{tried} generated conversations (1 to 12 calls each, Chinese and English, any "
                             "options): every call passes through, and every round's usage is kept.")


# What the lesson's LoopResult holds, as _compare_replay reads it.
_LOOP_RESULT_FIELDS = {"answer": (str, type(None)), "reason": (str,), "rounds": (int,), "calls": (list, tuple),
                       "messages": (list,)}


def _not_a_loop_result(result: Any) -> str | None:
    """What is missing from `result` for it to be read as the lesson's LoopResult, or None."""
    for name, kinds in _LOOP_RESULT_FIELDS.items():
        if not isinstance(getattr(result, name, None), kinds):
            return f"its {name} is {_brief(getattr(result, name, None), 30)}, not a {kinds[0].__name__}"
    return None


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
        problems.append(f"reason {shown(mine.reason)} vs {shown(theirs.reason)}")
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


# -- exercise 2 ----------------------------------------------------------------------------------
class _Recorder:
    """06, exercise 2's answer (the solution's): passes every call on and keeps the replies."""

    def __init__(self, llm: Any):
        self.llm = llm
        self.replies: list[ChatResult] = []

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        reply = self.llm.chat(messages, **options)
        self.replies.append(reply)
        return reply


class _Replayer:
    """06, exercise 2's answer (the solution's): answers with the recorded replies, in order."""

    def __init__(self, replies: list[ChatResult]):
        self.replies = list(replies)

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        return self.replies.pop(0)


def _record_replay_run(Recorder: type, Replayer: type) -> Callable[[str, list], str]:
    """A conversation through one new Recorder (were the calls passed on, what does .replies hold), or the same
    replies handed to one new Replayer and asked for in the conversation's calls."""
    def run(aspect: str, script: list) -> str:
        replies = _replies_of(script)
        if aspect == "keeps, two at once":
            return _two_kept(Recorder, "replies", "reply(s)", script)
        if aspect == "replays, two at once":
            return _two_replayed(Replayer, script)
        if aspect in ("passes on", "keeps"):
            model = _Playback(replies)
            recorder = Recorder(model)
            if aspect == "passes on":
                return _passed_on(recorder, model, script, replies)
            for call in script:
                recorder.chat(call["messages"], **call["options"])
            return _kept(getattr(recorder, "replies", "no .replies attribute"), replies, "reply(s)", script, recorder,
                         "replies")
        given = list(replies)
        replayer = Replayer(given)
        # Asked with the conversation's messages backwards: a replayer answers by position, not by what it is asked.
        answered = [_named(replayer.chat(call["messages"], **call["options"]), replies, n)
                    for n, call in enumerate(script[::-1], start=1)]
        if aspect == "replays":
            wrong = [f"call {n} answered with {name}" for n, name in enumerate(answered, start=1)
                     if name != f"reply {n}"]
            return wrong[0] if wrong else f"{len(script)} reply(s), in order"
        return "the list as it was" if given == replies else f"the list now holds {len(given)} of {len(replies)}"
    return run


RECORD_REPLAY_RULES = (
    Rule("Recorder(llm).chat(messages, **options) passes every call on (the same messages, every option) and "
         "returns the model's reply as it is", _calls_passed_on(range(1, 9)), _advice),
    Rule("Recorder keeps each reply (the reply itself, not its text) in a list .replies of its own, in order",
         _replies_kept, _advice),
    Rule("Replayer(replies) answers every call with the next recorded reply, in order, whatever it is asked (two "
         "Replayers each their own)", _replies_replayed, _advice),
    Rule("Replayer does not use up the list it is given: the recorder's .replies stays as it was, to replay again",
         _conversations("leaves the list", range(1, 5)), _advice),
)


_SAME_RUN = ("given the same replies, your loop (through your Recorder) and ReActAgent (through your Replayer) make "
             "the same calls, messages and answer, up to a reply cut by max_tokens or an empty one (five scripted "
             "runs, then your configured model)")


@grades("Exercise 2", spec=Spec(RECORD_REPLAY_RULES, extra=(_SAME_RUN,)))
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
    for name, cls in (("Recorder", Recorder), ("Replayer", Replayer)):
        if not isinstance(cls, type):
            _fail(exercise, f"{name}: expected a class, got {type(cls).__name__}: write `class {name}:` in the "
                            "answer cell")
    tried = agree_on(exercise, "check_record_replay", RECORD_REPLAY_RULES, _record_replay_run(Recorder, Replayer),
                     _record_replay_run(_Recorder, _Replayer), call="your Recorder and Replayer", show=_show_script)
    parcel = "帮我看看订单 88231 的快递到哪了。"
    sources = [(label, ScriptedModel(script), parcel) for label, script in SCRIPTS.items()]
    if llm is not None:
        if not isinstance(questions, (list, tuple)) or not all(isinstance(q, str) and q.strip() for q in questions):
            _fail(exercise, "questions should be a list of questions (text) for your model, got "
                            f"{_brief(questions, 40)}")
        sources += [(f"{getattr(llm, 'model', 'your model')}: {question}", llm, question) for question in questions]
    lines = []
    for label, source, question in sources:
        recorder = _instance(exercise, Recorder, source)
        mine = _run(exercise, "run_loop(...) with your Recorder", run_loop, question, recorder,
                    shop_registry(_fresh_shop()), verbose=False)
        if (wrong := _not_a_loop_result(mine)) is not None:
            _fail(exercise, f"run_loop returned {_brief(mine, 40)}: {wrong}. Pass the lesson's run_loop, which "
                            "returns a LoopResult")
        replies = getattr(recorder, "replies", None)
        if not replies:
            _fail(exercise, f"{label}: after the run, recorder.replies is {shown(replies)}: keep every reply")
        replayer = _instance(exercise, Replayer, replies)
        agent = ReActAgent(replayer, shop_registry(_fresh_shop()))
        theirs = _run(exercise, "ReActAgent(Replayer(...)).run(...)", agent.run, question)
        lines.append(_compare_replay(label, mine, theirs, exercise))
    return _passed(exercise, f"{tried} generated conversations recorded and replayed as the spec says; then "
                             "your loop and ReActAgent on the same replies:\n  " + "\n  ".join(lines))
