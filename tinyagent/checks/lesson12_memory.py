"""Lesson 12 (memory): the first and the last turns, and a window measured in tokens."""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import islice
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
from tinyagent.llm_client import LlmClient
from tinyagent.memory.session import Session, message_tokens
from tinyagent.memory.session_store import SqliteSessionStore, Turn
from tinyagent.shop import shop_registry


class _TurnsOnly:
    """A stand-in for a Session that a memory reads: its turns, an id, a store and a language. What else a memory
    asks of it is answered with what a memory reads, in the lesson's words (`exercise`: whose check asks). `store`:
    the `_Store` it is kept in, the same object on every call, as a real Session's is."""

    def __init__(self, turns: list, exercise: str, session_id: str = "check", store: _Store | None = None):
        self._turns, self.exercise, self.id, self.lang = list(turns), exercise, session_id, "en"
        self.store = store if store is not None else _Store()
        self.store.keeps(self)

    def now_holds(self, turns: list) -> _TurnsOnly:
        """This stand-in with the turns its session holds now: a real Session is one object however its turns
        change (one more each question, none after `store.delete(id)`), so a memory that keeps something by the
        session object, not only by its id, is asked as a Session would ask it."""
        self._turns = list(turns)
        self.store.keeps(self)  # again: a delete forgot it
        return self

    def turns(self) -> list:
        return list(self._turns)

    def history(self, question: str | None = None) -> list:
        _fail(self.exercise, "your history(session) called session.history(), which asks the session's memory, so on "
                             "a real session it calls your history again, without end: read the turns with "
                             "session.turns(), which lists them oldest first")

    def __getattr__(self, name: str) -> Any:  # only for names the stand-in lacks
        raise AttributeError(f"a session has no {name!r} for a memory: session.turns() lists its turns, oldest first")


class _Store:
    """The stand-ins' store, one object for every call on the sessions kept in it, as a real store is:
    `store.turns(id)` lists the turns of the session last asked about under that id, as a real Session's store
    lists what `session.turns()` does (a memory may read them either way), and `delete(id)` forgets them; everything
    else is a real store's own."""

    def __init__(self) -> None:
        self._store, self._sessions = SqliteSessionStore(), {}

    def keeps(self, session: _TurnsOnly) -> None:
        self._sessions[session.id] = session

    def turns(self, session_id: str) -> list:
        session = self._sessions.get(session_id)
        return session.turns() if session is not None else self._store.turns(session_id)

    def delete(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._store.delete(session_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_store"], name)


# -- the answers, as each exercise's solution behaves ----------------------------------------------
def _first_and_last(turns: list, last: int) -> list[dict]:
    """12, exercise 1's answer: turn 1, then the last `last` turns without it, oldest first."""
    kept = turns[:1] + turns[max(1, len(turns) - last):]
    return [message for turn in kept for message in turn.messages()]


def _token_window(turns: list, budget: int) -> list[dict]:
    """12, exercise 2's answer: the latest whole turns whose messages fit `budget` (message_tokens), no gaps."""
    kept: list[dict] = []
    for turn in reversed(turns):
        candidate = turn.messages() + kept
        if message_tokens(candidate) > budget:
            break
        kept = candidate
    return kept


# -- how an answer is run and what is compared -----------------------------------------------------
class _TurnNumbers(list):
    """A history read back as the numbers of the turns it holds, each as its question then its answer."""

    def __repr__(self) -> str:
        return f"turns {list(self)}"


class _Recorded(tuple):
    """The texts of a session whose memory gave each run only the last `window` turns (a `_Recorded` of them is
    what `_turns_of` reads `history_tokens` from)."""

    window: int = 0


def _recorded(texts: tuple, window: int) -> _Recorded:
    recorded = _Recorded(texts)
    recorded.window = window
    return recorded


def _turns_of(texts: tuple) -> list:
    """The turns of a session that remembered everything: each carries the tokens of the turns before it as its
    `history_tokens`, as a real session records them, so an answer that takes that for a turn's own size fails.
    For a `_Recorded` session, the tokens of the last `window` turns before it, as a windowed memory records them."""
    turns: list = []
    for n, (question, answer) in enumerate(texts, start=1):
        given = turns[max(0, len(turns) - texts.window):] if isinstance(texts, _Recorded) else turns
        before = [message for turn in given for message in turn.messages()]
        turns.append(Turn(question, answer, number=n, history_tokens=message_tokens(before) if before else 0))
    return turns


_KEYS = ("role", "content")  # a message's keys, as turn.messages() gives them


class _NotTurns(list):
    """Messages that are not whole turns of the session, shown as (role, the start of the content); `why` says
    how: "roles" (not a user message then an assistant one), "foreign" (words the session does not hold) or
    "keys" (a key beside role and content: each message shown with its other keys too)."""

    def __init__(self, messages: list[dict], why: str):
        super().__init__((m.get("role"), _brief(m.get("content"), 16)) if why != "keys" else
                         (m.get("role"), {key: value for key, value in m.items() if key not in _KEYS})
                         for m in messages)
        self.why = why


class _KeysRead(tuple):
    """The texts of a session whose history is read with its messages' keys: role and content, as turn.messages()
    gives them, and no other (`_read_back` reads only those two of every other session)."""


def _read_back(messages: Any, turns: list, keys: bool = False) -> Any:
    """`messages` as the turn numbers they are (a `_TurnNumbers`), a `_NotTurns` when they are not whole turns
    of this session (or, with `keys`, when a message has a key beside role and content), or as they are when
    they are not a list of dicts."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return messages
    if keys and any(set(m) - set(_KEYS) for m in messages):
        return _NotTurns(messages, "keys")
    pairs = {(turn.question, turn.answer): turn.number for turn in turns}
    numbers = _TurnNumbers()
    for i in range(0, len(messages), 2):
        pair = messages[i : i + 2]
        if [m.get("role") for m in pair] != ["user", "assistant"]:
            return _NotTurns(messages, "roles")
        said = (pair[0].get("content"), pair[1].get("content"))
        number = pairs.get(said) if all(isinstance(text, str) for text in said) else None  # a list is no key
        if number is None:
            return _NotTurns(messages, "foreign")
        numbers.append(number)
    return numbers


def _grown(memory_class: Any, argument: int, texts: tuple, exercise: str) -> Any:
    """One memory, asked as a Session asks it: after every turn of a conversation that grows to `texts`; what
    it gives for the whole conversation, read back as turn numbers."""
    memory, turns = memory_class(argument), _turns_of(texts)
    session = _TurnsOnly([], exercise)
    for count in range(len(turns)):
        memory.history(session.now_holds(turns[:count]))
    return _read_back(memory.history(session.now_holds(turns)), turns, isinstance(texts, _KeysRead))


class _InTurn(tuple):
    """What one memory gave two sessions asked in turn (see _in_turn), each read back as turn numbers; shown as
    the numbers, or "not its turns"."""

    def __repr__(self) -> str:
        return ", ".join(f"{asked} {list(got) if isinstance(got, _TurnNumbers) else 'not its turns'}"
                         for asked, got in zip(("B", "A again", "A grown"), self))


def _in_turn(history: Any, texts: tuple, other: tuple) -> _InTurn:
    """`history(turns, session_id)` asked as a service with two customers asks one memory: session A as it grows to
    all but its last turn, then session B as it grows, then A again, then A with its last turn; what it gave B (once
    whole), A again and A grown."""
    a, b = _turns_of(texts), _turns_of(other)
    for count in range(len(a)):
        history(a[:count], "a")
    for count in range(len(b)):
        history(b[:count], "b")
    return _InTurn((_read_back(history(b, "b"), b), _read_back(history(a[:-1], "a"), a),
                    _read_back(history(a, "a"), a)))


class _SameId(tuple):
    """Session B's texts, when B has session A's id: an application chooses its sessions' ids
    (`Session(..., session_id=...)`), so two stores may each hold a session "a", and a session deleted
    (`store.delete`) may be made again with its id. B then lives in a store of its own."""


class _Remade(_SameId):
    """Session B's texts, when B has session A's id in A's store: A is deleted (`store.delete`) before B is made, and
    B before A is made again, so the store and the id are the same for both."""


def _one_memory(memory_class: Any, exercise: str) -> Any:
    """The answer as agree_on calls it: on one session (`texts`), as _grown; on two (`other` too), as _in_turn,
    with one memory for both sessions, and one store (two when B has A's id: a `_SameId`; one again, the session of
    that id deleted when the other is asked, for a `_Remade`)."""

    def asked(argument: int, texts: tuple, other: tuple | None = None) -> Any:
        if other is None:
            return _grown(memory_class, argument, texts, exercise)
        memory, store, last = memory_class(argument), _Store(), ["a"]
        remade = isinstance(other, _Remade)
        stores = {"a": store, "b": _Store() if isinstance(other, _SameId) and not remade else store}
        ids = {"a": "a", "b": "a" if isinstance(other, _SameId) else "b"}
        # one stand-in per id in a store, as one Session object goes on asking after its id's turns were deleted
        sessions = {(ids[name], id(stores[name])): _TurnsOnly([], exercise, ids[name], stores[name]) for name in ids}

        def history(turns: list, session: str) -> Any:
            if remade and session != last[0]:
                store.delete("a")  # the other session of that id, before this one is made with it
            last[0] = session
            return memory.history(sessions[ids[session], id(stores[session])].now_holds(turns))

        return _in_turn(history, texts, other)

    return asked


def _reference(answer: Any) -> Any:
    """The reference as agree_on calls it: `answer(turns, argument)` on one session, or on two in turn."""

    def asked(argument: int, texts: tuple, other: tuple | None = None) -> Any:
        if other is None:
            return _read_back(answer(_turns_of(texts), argument), _turns_of(texts), isinstance(texts, _KeysRead))
        return _in_turn(lambda turns, session_id: answer(turns, argument), texts, other)

    return asked


def _history_shape(value: Any) -> str | None:
    if isinstance(value, _InTurn):
        return next(filter(None, map(_history_shape, value)), None)
    if isinstance(value, (_TurnNumbers, _NotTurns)):
        return None
    if not isinstance(value, list):
        return f"history(session) returned {type(value).__name__}: return a list of message dicts"
    return (f"history(session) returned {_brief(value, 40)}: return message dicts (turn.messages() gives a "
            "turn's two)")


def _pairs_hint(got: Any) -> str | None:
    if isinstance(got, _NotTurns) and got.why == "keys":
        return "Each message has role and content only, as turn.messages() gives them: add no other key."
    if isinstance(got, _NotTurns) and got.why == "roles":
        return "Each turn is a user message, then an assistant one, as turn.messages() gives them."
    if isinstance(got, _NotTurns):
        return "Those are not this session's turns: read them from session.turns() on every call."
    return None


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_QUESTIONS = ("Hello, my order number is {id} and the robot vacuum won't charge any more.", "Has it been delivered?",
              "What is your exchange policy?", "What's today's date?", "OK, then refund it please.", "订单 {id} 到哪了？",
              "扫地机充不进电了，怎么办？", "发票怎么开？", "Thanks! 🙂", "还有，运费谁出？", "Can I change the address to Müllerstraße 5?",
              "ok", "好的")
_ANSWERS = ("Order {id} (比特 S10 Pro 扫地机) was signed for on 2026-06-22.", "You're welcome.", "Anything else?",
            "订单 {id} 由顺丰速运配送，运单号 SF{n}，最新：2026-06-22 11:35:00 快件已由本人签收。",
            "先提交换货申请，售后检测确认后将商品寄回，仓库收到退件后 48 小时内发出同型号新品。", "It is 30 June 2026.",
            "已为您提交退款申请，退款单号 RF2026{n}，预计 1-3 个工作日到账。", "Within 7 days of signing, for any reason.",
            "好的，还有其他问题吗？")


def _conversation(rng: random.Random, count: int) -> tuple:
    """`count` turns of (question, answer), no two alike (a read-back names each turn by its words)."""
    texts: list[tuple[str, str]] = []
    while len(texts) < count:
        question = rng.choice(_QUESTIONS).format(id=rng.randint(10000, 99999))
        answer = rng.choice(_ANSWERS).format(id=rng.randint(10000, 99999), n=rng.randint(10**9, 10**10 - 1))
        if (question, answer) not in texts:
            texts.append((question, answer))
    return tuple(texts)


def _short_sessions(rng: random.Random) -> Iterator[tuple]:
    for count in range(4):
        for last in (0, 1, 2, 3):
            yield (last, _conversation(rng, count))


def _long_sessions(rng: random.Random) -> Iterator[tuple]:
    for _ in range(12):
        count = rng.randint(4, 14)
        yield (rng.choice((1, 2, 3, 5, 10, count - 1, count, count + 2)), _conversation(rng, count))


def _last_zero(rng: random.Random) -> Iterator[tuple]:
    for count in (4, 7, 11):
        yield (0, _conversation(rng, count))


def _first_and_last_hint(args: tuple, expected: Any, got: Any) -> str | None:
    last, texts = args
    if (why := _pairs_hint(got)) or not isinstance(got, _TurnNumbers):
        return why
    if len(got) != len(set(got)):
        return "A turn that is both the first and among the last is given once."
    if last == 0 and len(got) > 1:
        return "With last=0 only the first turn is kept: careful, turns[-0:] is the whole list."
    if got != sorted(got):
        return "Oldest first: the model reads the conversation in the order it happened."
    if texts and 1 not in got:
        return "Turn 1 is missing: it is where a customer says who they are and which order it is."
    return None


def _two_conversations(rng: random.Random) -> tuple[tuple, tuple]:
    """Sessions A (2 to 9 turns) and B (1 to 9), no turn of one like a turn of the other."""
    count = rng.randint(2, 9)
    texts = _conversation(rng, count + rng.randint(1, 9))
    return texts[:count], texts[count:]


def _one_memory_two_sessions(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        yield (rng.choice((0, 1, 2, 3, 5)), *_two_conversations(rng))


_ASKED_IN_TURN = ("session B, after session A", "session A again, after B", "session A, one turn longer")


def _in_turn_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if not isinstance(got, _InTurn):
        return None
    asked, want, have = next(item for item in zip(_ASKED_IN_TURN, expected, got) if item[1] != item[2])
    why = "turns not its own" if isinstance(have, _NotTurns) else f"turns {list(have)}, not {list(want)}"
    if isinstance(args[2], _Remade):  # the lines a failure shows are full: the numbers above say where
        return "(B had A's id: keep no session's turns on self, not even by store, id or session)"
    if isinstance(args[2], _SameId):
        return "(B had A's id: keep no session's turns on self, not even by id)"
    return f"(for {asked}: {why}; keep no session's turns on self)"


def _same_id_two_sessions(rng: random.Random) -> Iterator[tuple]:
    """Sessions A and B with the same id, B in a store of its own, then in A's store (each deleted before the other
    is made); drawn from a generator of their own, so the other rules' inputs stay as they were."""
    own = random.Random("lesson 12: two sessions, one id")
    for same_id in (_SameId, _Remade):
        for _ in range(4):
            a, b = _two_conversations(own)
            yield (own.choice((0, 1, 2, 3, 5)), a, same_id(b))


def _keys_of_messages(budgets: bool) -> Iterator[tuple]:
    """Sessions whose history is read with its messages' keys; drawn from a generator of their own (the shared one
    draws the other rules' inputs). `budgets`: the argument is a budget that fits them all (exercise 2), else
    `last`."""
    rng = random.Random("lesson 12: role and content, no other key")
    for count, last in ((1, 1), (3, 0), (5, 2)):
        texts = _KeysRead(_conversation(rng, count))
        yield ((_costs(texts)[-1] if budgets else last), texts)


FIRST_AND_LAST_RULES = (
    Rule("the first turn and the last `last` turns, each once, oldest first", _short_sessions, _first_and_last_hint),
    Rule("the same in a long conversation, whatever `last` is", _long_sessions, _first_and_last_hint),
    Rule("`last=0` keeps the first turn only", _last_zero, _first_and_last_hint),
    Rule("one memory, many sessions: asked for session A, then B, then A again, each gets its own first and last "
         "turns", _one_memory_two_sessions, _in_turn_hint),
    Rule("each message as turn.messages() gives it: role and content, no other key",
         lambda rng: _keys_of_messages(budgets=False), _first_and_last_hint),
    Rule("one memory, many sessions, two with one id too (in two stores, or one deleted and made again): each gets "
         "its own first and last turns", _same_id_two_sessions, _in_turn_hint),
)


def _sessions_shown(args: tuple, name: str) -> str:
    argument, texts, *other = args
    if other:
        same = " with A's id" if isinstance(other[0], _SameId) else ""
        same += ", in A's store (A deleted first)" if isinstance(other[0], _Remade) else ""
        return f"session A of {len(texts)} turns, then session B of {len(other[0])}{same}, {name}={argument}"
    recorded = f" (recorded with a window of {texts.window} turns)" if isinstance(texts, _Recorded) else ""
    return f"a session of {len(texts)} turn{'' if len(texts) == 1 else 's'}{recorded}, {name}={argument}"


FIVE_TURN_CONVERSATION = (
    "Hello, my order number is 88231 and the robot vacuum won't charge any more.",
    "Has it been delivered?",
    "What is your exchange policy?",
    "What's today's date?",
    "OK, then refund it please.",
)


@grades("Exercise 1", spec=Spec(FIRST_AND_LAST_RULES, extra=(
    "in a five-turn session on the classroom model with FirstAndLast(1), turn 5 still knows the order of turn 1",)))
def check_first_and_last(FirstAndLast: type | None) -> None:
    """12, exercise 1: a memory that keeps the first turn and the last `last` turns."""
    exercise = "Exercise 1"
    if FirstAndLast is None:
        return _not_attempted(exercise, "Write class FirstAndLast in the cell above.")
    _instance(exercise, FirstAndLast, 1)  # a class, and one that can be built
    tried = agree_on(exercise, "check_first_and_last", FIRST_AND_LAST_RULES, _one_memory(FirstAndLast, exercise),
                     _reference(_first_and_last),
                     shape=_history_shape, call="FirstAndLast(last).history(session)",
                     show=lambda args: _sessions_shown(args, "last"))
    # In a real session on the classroom model: turn 5 needs the order and the fault from turn 1.
    shop = _fresh_shop()
    session = Session(ReActAgent(LlmClient.classroom(), shop_registry(shop)), memory=_instance(exercise, FirstAndLast, 1))
    for question in FIVE_TURN_CONVERSATION:
        _run(exercise, f"session.ask({shown(question)})", session.ask, question)
    if [r["orderId"] for r in shop.refunds()] != ["88231"]:
        _fail(exercise, "in a five-turn session with FirstAndLast(1), the refund asked for in turn 5 was not "
                        f"written; the last run was given: {session.last_history}")
    return _passed(exercise, f"{tried} generated sessions: the first turn and the last ones, each once, oldest first; "
                             "in a five-turn session turn 5 still knew the order and the fault from turn 1, and the "
                             "refund went through.")


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
def _costs(texts: tuple) -> list[int]:
    """costs[k]: the tokens of the latest k turns' messages (message_tokens)."""
    turns = _turns_of(texts)
    return [message_tokens([m for turn in turns[len(turns) - k:] for m in turn.messages()]) for k in
            range(len(turns) + 1)]


def _at_the_edges(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        texts = _conversation(rng, rng.randint(2, 12))
        costs = _costs(texts)
        k = rng.randint(1, len(texts))
        for budget in (costs[k] - 1, costs[k], costs[k] + 1):  # one token short, exactly, one to spare
            yield (budget, texts)


def _big_and_small_budgets(rng: random.Random) -> Iterator[tuple]:
    yield (50, ())
    for budget in (0, 1):
        yield (budget, _conversation(rng, rng.randint(1, 4)))
    for _ in range(3):
        texts = _conversation(rng, rng.randint(1, 8))
        yield (_costs(texts)[-1] + rng.randint(0, 300), texts)


def _a_big_turn_in_between(rng: random.Random) -> Iterator[tuple]:
    long_answer = "，".join(rng.choice(_ANSWERS).format(id=rng.randint(10000, 99999), n=rng.randint(10**9, 10**10 - 1))
                           for _ in range(6))
    for _ in range(4):  # an old turn too big to fit, older small ones that would: no hole in the conversation
        texts = list(_conversation(rng, rng.randint(4, 8)))
        at = rng.randint(1, len(texts) - 2)
        texts[at] = (texts[at][0], long_answer)
        costs = _costs(tuple(texts))
        after = len(texts) - at - 1  # the turns after the big one
        yield (costs[after] + rng.randint(0, costs[after + 1] - costs[after] - 1), tuple(texts))


def _token_window_hint(args: tuple, expected: Any, got: Any) -> str | None:
    budget, texts = args
    if (why := _pairs_hint(got)) or not isinstance(got, _TurnNumbers) or not (got or expected):
        return why
    turns = _turns_of(texts)
    if got and (cost := message_tokens([m for number in got for m in turns[number - 1].messages()])) > budget:
        return f"Those messages cost {cost} tokens (message_tokens), over the budget."
    if got != sorted(got):
        return "Oldest first: the model reads the conversation in the order it happened."
    if got and (got != list(range(got[0], got[-1] + 1)) or got[-1] != len(turns)):
        return ("Keep the latest turns without gaps: once a turn does not fit, the older ones are dropped too "
                "(a conversation with a hole in it reads wrong).")
    if len(got) < len(expected):
        # the numbers, not a guess at the slip: `<` for `<=`, and counting characters, look the same at the edge
        fits = (got[0] if got else len(turns) + 1) - 1
        whole = message_tokens([m for turn in turns[fits - 1:] for m in turn.messages()])
        span = f"turn {fits} costs" if fits == len(turns) else f"turns {fits} to {len(turns)} cost"
        within = "exactly max_tokens, which fits (<=)" if whole == budget else f"within max_tokens={budget}"
        return f"Turn {fits} fits too: {span} {whole} tokens by message_tokens(), {within}."
    return "Count the whole with message_tokens(messages), not characters: Chinese and English differ."


def _one_budget_many_sessions(rng: random.Random) -> Iterator[tuple]:
    budget, count = rng.randint(150, 400), rng.randint(4, 7)
    for _ in range(4):
        yield (budget, _conversation(rng, count))


def _one_window_two_sessions(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        yield (rng.randint(120, 400), *_two_conversations(rng))


def _long_and_all_fits(rng: random.Random) -> Iterator[tuple]:
    # the other rules' sessions have at most 12 turns, and only those of 8 or fewer ever fit whole: a window that
    # looks at the last 8 or 10 turns only passed
    for count in (11, 15, 20):
        texts = _conversation(rng, count)
        yield (_costs(texts)[-1] + rng.choice((0, 0, 40)), texts)


def _same_numbers_other_costs(rng: random.Random) -> Iterator[tuple]:
    # session A's turns are long, B's (one turn fewer) short; max_tokens is exactly all of B: a turn's token count
    # kept on self by its number (A's turn 2 for B's turn 2) gives B too few turns, or too many
    long_answer = "，".join(rng.choice(_ANSWERS).format(id=rng.randint(10000, 99999), n=rng.randint(10**9, 10**10 - 1))
                           for _ in range(3))
    for _ in range(3):
        count = rng.randint(3, 6)
        texts = _conversation(rng, 2 * count + 1)
        a = tuple((question, long_answer + str(n)) for n, (question, _) in enumerate(texts[:count + 1]))
        b = texts[count + 1:]
        yield (_costs(b)[-1], a, b)


def _recorded_by_a_window(rng: random.Random) -> Iterator[tuple]:
    # turns as a session with a 2-turn window records them: history_tokens stops growing, so the difference of
    # two turns' history_tokens is no turn's size (it is one only when every earlier turn was given)
    for _ in range(3):
        texts = _conversation(rng, rng.randint(5, 9))
        costs = _costs(texts)
        yield (costs[rng.randint(3, len(texts))], _recorded(texts, 2))


def _recorded_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if (why := _pairs_hint(got)) or not isinstance(got, _TurnNumbers):
        return why
    return "history_tokens is what the memory gave its run (here the last 2 turns), not the turn's size."


def _costs_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if not isinstance(got, _InTurn):
        return None
    asked = next(asked for asked, want, have in zip(_ASKED_IN_TURN, expected, got) if want != have)
    if isinstance(args[2], _Remade):  # the lines a failure shows are full: the numbers above say where
        return "(B had A's id: keep nothing of a session on self, not even by store, id or session)"
    if isinstance(args[2], _SameId):
        return "(B had A's id: keep nothing of a session on self, not even by id)"
    return f"(for {asked}: keep nothing of a session on self, not even its token counts)"


def _same_id_other_costs(rng: random.Random) -> Iterator[tuple]:
    """_same_numbers_other_costs and _one_window_two_sessions, with B under A's id in a store of its own, then in A's
    store (each deleted before the other is made): a window or a turn's tokens kept on self by session.id (and the
    store, and turn number) gives B A's. Drawn from a generator of their own."""
    own = random.Random("lesson 12: two windows, one id")
    for same_id in (_SameId, _Remade):
        for budget, a, b in (*_same_numbers_other_costs(own), *islice(_one_window_two_sessions(own), 2)):
            yield (budget, a, same_id(b))


TOKEN_WINDOW_RULES = (
    Rule("as many of the latest whole turns as fit in `max_tokens`, oldest first", _at_the_edges, _token_window_hint),
    Rule("everything when it all fits; nothing when the latest turn does not", _big_and_small_budgets,
         _token_window_hint),
    Rule("stop at the first turn that does not fit (no hole)", _a_big_turn_in_between, _token_window_hint),
    Rule("each session is windowed on its own turns (one budget, many sessions)", _one_budget_many_sessions,
         _token_window_hint),
    Rule("one memory, many sessions: asked for session A, then B, then A again, each is windowed on its own turns",
         _one_window_two_sessions, _in_turn_hint),
    Rule("as many turns as fit, however many: a long conversation (11 to 20 turns) that all fits is kept whole",
         _long_and_all_fits, _token_window_hint),
    Rule("one memory, many sessions: a turn's tokens are its own session's",
         _same_numbers_other_costs, _costs_hint),
    Rule("a turn's size is message_tokens(turn.messages()), not history_tokens", _recorded_by_a_window,
         _recorded_hint),
    Rule("each message as turn.messages() gives it: role and content, no other key",
         lambda rng: _keys_of_messages(budgets=True), _token_window_hint),
    Rule("one memory, many sessions, two with one id too (in two stores, or one deleted and made again): each is "
         "windowed on its own turns", _same_id_other_costs, _costs_hint),
)


@grades("Exercise 2", spec=Spec(TOKEN_WINDOW_RULES))
def check_token_window(TokenWindow: type | None) -> None:
    """12, exercise 2: a memory that keeps as many of the latest whole turns as fit a token budget."""
    exercise = "Exercise 2"
    if TokenWindow is None:
        return _not_attempted(exercise, "Write class TokenWindow in the cell above.")
    _instance(exercise, TokenWindow, 100)  # a class, and one that can be built
    tried = agree_on(exercise, "check_token_window", TOKEN_WINDOW_RULES, _one_memory(TokenWindow, exercise),
                     _reference(_token_window),
                     shape=_history_shape, call="TokenWindow(max_tokens).history(session)",
                     show=lambda args: _sessions_shown(args, "max_tokens"))
    return _passed(exercise, f"{tried} generated sessions and budgets, many right at a turn's edge or next to it: "
                             "the latest whole turns that fit, oldest first, never over the budget.")
