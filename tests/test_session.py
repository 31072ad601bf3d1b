"""Sessions across run() calls: memory strategies, token counts per turn, long-term facts about the user.

Run against the classroom model and the real shop; the store backends have their own suite
(tests/test_session_store.py).
"""

from __future__ import annotations

import sqlite3

import pytest

from tinyagent import ChatResult, FunctionCallingAgent, LlmClient, LlmConnectionError, ReActAgent, fixed_clock
from tinyagent.events import LlmCall
from tinyagent.memory.session import Session, Turn
from tinyagent.memory.session_memory import FullHistory, SlidingWindow, SummaryMemory, summary_request
from tinyagent.memory.session_store import SessionStoreError, SqliteSessionStore
from tinyagent.memory.user_facts import UserFacts, facts_message
from tinyagent.protocols.token_count import classroom_counter, token_counter
from tinyagent.shop import Shop, shop_registry

CLOCK = fixed_clock("2026-06-30T19:05:23")
THREE_TURNS = ("Hi, my order is 88231.", "Where is it?", "Then refund it.")
# The order and its fault in turn 1, two turns about other things, then the request that needs turn 1.
FIVE_TURNS = ("Hi, my order is 88231. The vacuum won't charge any more.", "Where is it?",
              "How does an exchange work?", "Which day is it today?", "Then refund it.")


def new_agent(shop: Shop | None = None, model: str = "classroom", cls=ReActAgent):
    return cls(LlmClient.classroom(model), shop_registry(shop or Shop(":memory:", clock=CLOCK)))


def converse(questions, memory=None, shop=None, **options) -> tuple[Session, list]:
    session = Session(new_agent(shop), memory=memory, **options)
    return session, [session.ask(question) for question in questions]


# --- the three-turn conversation ---------------------------------------------------------------------------


def test_turns_two_and_three_work_only_because_of_memory():
    _, results = converse(THREE_TURNS)
    where, refund = results[1], results[2]
    assert [c.name for c in where.trace.tool_calls] == ["queryOrder", "queryLogistics"]
    assert "SF1234567890" in where.answer
    assert [c.name for c in refund.trace.tool_calls] == ["queryOrder", "getCurrentTime", "searchKnowledge"]
    assert "7-day no-reason return period" in refund.answer  # signed 8 days ago, no fault given: not yet

    _, results = converse(THREE_TURNS, memory=SlidingWindow(0))
    for result in results[1:]:
        assert result.trace.tool_calls == [] and "order number" in result.answer


def test_a_session_keeps_questions_and_answers_not_the_inner_rounds():
    session, results = converse(THREE_TURNS[:2])
    history = session.history()
    assert history == [
        {"role": "user", "content": THREE_TURNS[0]}, {"role": "assistant", "content": results[0].answer},
        {"role": "user", "content": THREE_TURNS[1]}, {"role": "assistant", "content": results[1].answer},
    ]
    assert not any("Observation" in m["content"] or "Thought" in m["content"] for m in history)
    # ... while the run itself had its rounds: they are in its trace, not in the session
    assert results[1].trace.rounds == 3


def test_each_turn_records_what_it_cost_in_tokens():
    counter = token_counter()
    session, results = converse(THREE_TURNS)
    turns = session.turns()
    assert [t.number for t in turns] == [1, 2, 3]
    assert turns[0].history_tokens == 0  # nothing to remember yet
    for turn, result in zip(turns, results):
        calls = result.trace.of_type(LlmCall)
        assert turn.rounds == len(calls) and turn.reason == result.reason and turn.answer == result.answer
        assert turn.tools == tuple(c.name for c in result.trace.tool_calls)
        assert turn.prompt_tokens == counter.chat(list(calls[0].messages))  # the first request, as sent
        assert turn.tokens_sent == sum(counter.chat(list(c.messages)) for c in calls)
    history = session.last_history
    assert turns[2].history_tokens == counter.chat(history) - counter.chat([]) > 0
    assert turns[0].history_tokens < turns[1].history_tokens < turns[2].history_tokens  # full history grows


def test_the_counter_can_be_chosen():
    counter = classroom_counter()
    session, results = converse(THREE_TURNS[:1], counter=counter)
    first = results[0].trace.of_type(LlmCall)[0]
    assert session.turns()[0].prompt_tokens == counter.chat(list(first.messages)) == first.usage["prompt_tokens"]


# --- what each memory keeps and drops ---------------------------------------------------------------------


def test_full_history_keeps_every_turn_and_the_refund_goes_through():
    shop = Shop(":memory:", clock=CLOCK)
    session, results = converse(FIVE_TURNS, memory=FullHistory(), shop=shop)
    assert len(session.last_history) == 8
    assert "RF202606300001" in results[-1].answer
    assert [r["orderId"] for r in shop.refunds()] == ["88231"]


def test_a_sliding_window_drops_the_order_given_in_turn_one():
    shop = Shop(":memory:", clock=CLOCK)
    session, results = converse(FIVE_TURNS, memory=SlidingWindow(2), shop=shop)
    assert session.last_history == [m for t in session.turns()[2:4] for m in t.messages()]
    assert results[-1].trace.tool_calls == [] and "order number" in results[-1].answer
    assert shop.refunds() == []
    later = [t.history_tokens for t in session.turns()]
    whole, _ = converse(FIVE_TURNS, shop=Shop(":memory:", clock=CLOCK))  # the same turns, every one remembered
    assert later[:3] == [t.history_tokens for t in whole.turns()][:3]  # the first two turns fit the window
    assert later[4] < whole.turns()[4].history_tokens  # the fifth carries two turns, not four


@pytest.mark.parametrize("n", [0, 1, 3, 10])
def test_a_sliding_window_keeps_exactly_the_last_n_turns(n):
    session, _ = converse(THREE_TURNS[:2] + ("What's today's date?",), memory=SlidingWindow(n))
    kept = session.turns()[max(0, 3 - n):]
    assert session.history() == [m for turn in kept for m in turn.messages()]


def test_a_window_size_must_be_a_whole_number():
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match="whole number"):
            SlidingWindow(bad)
        with pytest.raises(ValueError, match="whole number"):
            SummaryMemory(window=bad)


def test_the_summary_keeps_the_order_and_the_fault_and_the_refund_goes_through():
    shop = Shop(":memory:", clock=CLOCK)
    memory = SummaryMemory(window=2)
    session, results = converse(FIVE_TURNS, memory=memory, shop=shop)
    summary = session.last_history[0]
    assert summary["role"] == "system"
    assert summary["content"] == (
        "Summary of the earlier conversation (turns 1-2):\n"
        "Orders: 88231\nTracking numbers: SF1234567890\nFaults reported: The vacuum won't charge any more\n"
        "Asked about: a fault; where the parcel is"
    )
    assert session.last_history[1:] == [m for t in session.turns()[2:4] for m in t.messages()]
    assert "RF202606300001" in results[-1].answer
    refund = shop.refunds()[0]
    assert refund["orderId"] == "88231" and "The vacuum won't charge any more" in refund["reason"]
    # one summarizing call per turn that left the window: before turn 4 (turn 1) and turn 5 (turn 2)
    assert len(memory.calls) == 2 and memory.failures == []


def test_the_summary_is_written_incrementally():
    seen = []

    class Recording:
        def chat(self, messages, **options):
            seen.append(messages)
            return ChatResult(f"summary {len(seen)}", "stop")

    memory = SummaryMemory(llm=Recording(), window=1)
    session, _ = converse(THREE_TURNS[:1] + ("What's today's date?", "Thanks!"), memory=memory)
    session.history()
    turns = session.turns()
    # turn 1 leaves the window before turn 3 is asked, turn 2 at the history() after it; turn 3 stays whole
    assert [m[1]["content"] for m in seen] == [
        summary_request(turns[0:1])[1]["content"],
        summary_request(turns[1:2], previous="summary 1")[1]["content"],
    ]
    assert "Summary so far:\nsummary 1\n" in seen[1][1]["content"] and THREE_TURNS[0] not in seen[1][1]["content"]
    assert session.store.summary(session.id) == (2, "summary 2")
    assert session.history()[1:] == turns[2].messages() and len(seen) == 2  # nothing new to fold in


def test_a_failed_summary_loses_no_turn_and_is_tried_again():
    class Down:
        calls = 0

        def chat(self, messages, **options):
            Down.calls += 1
            if Down.calls == 1:
                raise LlmConnectionError("cannot reach the model")
            return ChatResult("Orders: 88231", "stop")

    memory = SummaryMemory(llm=Down(), window=1)
    session, _ = converse(THREE_TURNS[:2], memory=memory)  # turn 2 starts with 1 turn: nothing to summarize
    history = session.history()  # turn 1 now leaves the window, and the call fails
    assert memory.failures == ["cannot reach the model"]
    assert history == [m for t in session.turns() for m in t.messages()]  # every turn, whole
    history = session.history()
    assert history[0]["content"].endswith("Orders: 88231") and len(history) == 3


def test_a_summary_cut_at_max_tokens_or_empty_is_not_kept():
    class Answers:
        def __init__(self, reply):
            self.reply = reply

        def chat(self, messages, **options):
            return self.reply

    for reply in (ChatResult("Orders: 882", "length"), ChatResult("   ", "stop")):
        memory = SummaryMemory(llm=Answers(reply), window=0)
        session, _ = converse(THREE_TURNS[:1], memory=memory)
        assert session.history() == session.turns()[0].messages()
        assert session.store.summary(session.id) is None and len(memory.failures) == 1


def test_a_summary_no_shorter_than_the_turns_is_not_kept():
    class Wordy:
        def chat(self, messages, **options):
            return ChatResult("S " * 50000, "stop")

    memory = SummaryMemory(llm=Wordy(), window=1)
    session, _ = converse(THREE_TURNS, memory=memory)
    whole = [m for t in session.turns()[:2] for m in t.messages()]
    assert session.last_history == whole  # turns 1 and 2 whole, no 50,000-token summary in front of them
    assert session.turns()[-1].history_tokens < 1000
    assert session.store.summary(session.id) is None
    assert memory.failures[-1].startswith("the summary came back no shorter than what it would replace")


def test_a_summarizer_that_fails_any_way_loses_no_turn():
    class Broken:
        def __init__(self, reply):
            self.reply = reply

        def chat(self, messages, **options):
            if isinstance(self.reply, Exception):
                raise self.reply
            return self.reply

    for reply, failure in ((RuntimeError("boom"), "the summarizing call failed: RuntimeError: boom"),
                           (ChatResult(None, "stop"),
                            "the summarizing call returned ChatResult, not a ChatResult with text"),
                           ("a summary", "the summarizing call returned str, not a ChatResult with text")):
        memory = SummaryMemory(llm=Broken(reply), window=1)
        session, results = converse(THREE_TURNS, memory=memory)
        assert session.last_history == [m for t in session.turns()[:2] for m in t.messages()]
        assert memory.failures == [failure]  # turn 1 left the window before turn 3
        assert "7-day no-reason return period" in results[-1].answer  # turn 3 still knew the order of turn 1


def test_the_summary_is_in_the_questions_language():
    memory = SummaryMemory(window=1)
    session, results = converse(("订单 88231 的扫地机充不进电了", "它现在到哪了？", "那帮我退款吧"), memory=memory)
    summary = session.last_history[0]["content"]
    assert summary.startswith("之前对话的摘要（第 1-1 轮）：\n订单：88231\n")
    assert "反映的故障：扫地机充不进电" in summary
    assert "RF202606300001" in results[-1].answer


def test_a_function_calling_agent_keeps_a_session_too():
    session = Session(new_agent(cls=FunctionCallingAgent), memory=SlidingWindow(2))
    session.ask(THREE_TURNS[0])
    result = session.ask(THREE_TURNS[1])
    assert [c.name for c in result.trace.tool_calls] == ["queryOrder", "queryLogistics"]


# --- the session object ------------------------------------------------------------------------------------


def test_a_session_is_checked_when_made_and_asked():
    agent = new_agent()
    with pytest.raises(TypeError, match="run"):
        Session(object())
    with pytest.raises(ValueError, match="user_id"):
        Session(agent, facts=UserFacts())
    with pytest.raises(TypeError, match="history"):
        Session(agent, memory=object())
    with pytest.raises(ValueError, match="non-empty"):
        Session(agent).ask("  ")
    with pytest.raises(ValueError, match="facts"):
        Session(agent).remember("I live in Hangzhou.")


def test_sessions_sharing_a_store_are_kept_apart(tmp_path):
    store = SqliteSessionStore(tmp_path / "s.db")
    one, two = Session(new_agent(), store=store), Session(new_agent(), store=store)
    one.ask(THREE_TURNS[0])
    result = two.ask(THREE_TURNS[1])
    assert one.id != two.id and result.trace.tool_calls == []  # two never heard of 88231
    assert sorted(store.session_ids()) == sorted([one.id, two.id])


def test_turns_added_by_another_session_object_are_seen():
    store = SqliteSessionStore()
    one = Session(new_agent(), store=store)
    one.ask(THREE_TURNS[0])
    two = Session(new_agent(), store=store, session_id=one.id)  # another worker serving the same session
    two.ask(THREE_TURNS[1])
    assert [t.question for t in one.turns()] == list(THREE_TURNS[:2])


def test_a_turn_is_a_pair_of_messages():
    assert Turn("q", "a").messages() == [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


# --- long-term facts ---------------------------------------------------------------------------------------


@pytest.fixture
def facts():
    kept = UserFacts()
    for user, text in [("u1", "I live in Hangzhou."), ("u1", "My usual order is 88231."),
                       ("u1", "I prefer SF Express."), ("u2", "My usual order is 88232."),
                       ("u2", "我住在上海。"), ("u1", "我家的扫地机放在客厅。")]:
        kept.remember(user, text)
    return kept


def test_recall_ranks_the_users_own_facts_by_shared_words(facts):
    found = facts.recall("u1", "Where is my usual order?")
    assert [f.text for f in found] == ["My usual order is 88231."]  # u2's usual order is not u1's
    assert found[0].score > 0
    assert [f.text for f in facts.recall("u2", "Where is my usual order?")] == ["My usual order is 88232."]
    assert [f.text for f in facts.recall("u1", "扫地机在哪个房间？")] == ["我家的扫地机放在客厅。"]
    assert [f.text for f in facts.recall("u2", "上海今天下雨吗")] == ["我住在上海。"]


def test_recall_finds_words_not_meanings(facts):
    # "home" and "live" share no word: what an embedding (vector) search would add
    assert facts.recall("u1", "Will it rain at home tonight?") == []
    assert facts.recall("u1", "") == [] and facts.recall("u1", "?!") == []


def test_recall_puts_the_best_match_first_and_stops_at_the_limit(facts):
    facts.remember("u1", "My usual order ships with SF Express.")
    found = facts.recall("u1", "usual order SF Express", limit=2)
    assert [f.text for f in found] == ["My usual order ships with SF Express.", "I prefer SF Express."]
    assert found[0].score >= found[1].score
    assert facts.recall("u1", "usual order", limit=0) == []


def test_a_fact_is_kept_once_listed_and_forgotten(facts):
    again = facts.remember("u1", "  I live in Hangzhou.  ")
    assert again.id == facts.facts("u1")[0].id and len(facts.facts("u1")) == 4
    assert facts.forget("u2", again.id) is False  # not u2's to forget
    assert facts.forget("u1", again.id) is True
    assert [f.text for f in facts.facts("u1")] == ["My usual order is 88231.", "I prefer SF Express.",
                                                   "我家的扫地机放在客厅。"]
    assert facts.recall("u1", "Where do I live? Hangzhou") == []


def test_a_fact_must_be_short_text(facts):
    for bad in ("", "  ", None, "x" * 501):
        with pytest.raises(ValueError):
            facts.remember("u1", bad)


def test_facts_outlive_the_session_and_reach_the_model(tmp_path):
    path = tmp_path / "facts.db"
    with UserFacts(path) as kept:
        first = Session(new_agent(), facts=kept, user_id="u1")
        first.ask("Hi, my order is 88231.")
        first.remember("My usual order is 88231.")
        first.remember("I live in Hangzhou.")
    with UserFacts(path) as kept:  # a new session, another day: its own history is empty
        later = Session(new_agent(), facts=kept, user_id="u1")
        result = later.ask("Where is my usual order?")
    assert later.last_history == [facts_message([kept_fact("My usual order is 88231.")], "en")]
    assert later.last_history[0]["content"] == (
        "What this customer told us in earlier sessions (most relevant first):\n- My usual order is 88231."
    )
    assert [c.name for c in result.trace.tool_calls] == ["queryOrder", "queryLogistics"]
    without = Session(new_agent()).ask("Where is my usual order?")
    assert without.trace.tool_calls == [] and "order number" in without.answer


def kept_fact(text):
    from tinyagent.memory.user_facts import Fact

    return Fact(0, text)


def test_facts_come_before_the_memory_in_the_history(facts):
    session = Session(new_agent(), facts=facts, user_id="u1", memory=SlidingWindow(1))
    session.ask("Hi!")
    history = session.history("What is my usual order doing?")
    assert history[0]["role"] == "system" and "88231" in history[0]["content"]
    assert history[1:] == session.turns()[0].messages()


@pytest.mark.parametrize("bad", ["   ", "x" * 201, 42, "s\ud800"])
def test_a_bad_session_id_is_refused_before_anything_runs(bad):
    # it was refused only when the turn was stored: after the run, with its refund written, and the turn lost
    with pytest.raises(ValueError, match="session id"):
        Session(new_agent(), session_id=bad)


def test_a_question_holding_a_lone_surrogate_is_stored_as_the_agent_read_it():
    # the agent repaired its copy, the session stored the original: UnicodeEncodeError after the run
    session = Session(new_agent())
    session.ask("帮我看看订单 88231 的快递到哪了。\ud800")
    assert session.turns()[0].question == "帮我看看订单 88231 的快递到哪了。\ufffd"


def test_an_answer_holding_a_lone_surrogate_is_stored_repaired_not_lost_after_the_tools_ran():
    # A client other than LlmClient (which repairs its replies) sent half an emoji: the refund ran, then storing the
    # turn raised UnicodeEncodeError, and the session never learnt what was done.
    class HalfAnEmoji:
        model = "scripted"

        def __init__(self):
            self.replies = ['Thought: refund\nAction: applyRefund\nAction Input: {"orderId": "88231", "reason": "x"}',
                            "Thought: done\nFinal Answer: refunded \ud83d"]

        def chat(self, messages, **options):
            return ChatResult(self.replies.pop(0), "stop")

    clock = fixed_clock("2026-06-30T19:05:23")
    shop = Shop(":memory:", clock=clock)
    session = Session(ReActAgent(HalfAnEmoji(), shop_registry(shop, clock)))
    session.ask("refund 88231")
    assert [row["orderId"] for row in shop.refunds()] == ["88231"]
    (turn,) = session.turns()
    assert turn.answer == "refunded \ufffd" and turn.tools == ("applyRefund",)


def test_facts_with_a_lone_surrogate_are_kept_and_recalled_and_a_bad_limit_is_refused():
    facts = UserFacts()
    facts.remember("u1", "My usual order is 88231.\ud800")
    assert [f.text for f in facts.recall("u1", "order 88231 \ud800")] == ["My usual order is 88231.\ufffd"]
    with pytest.raises(ValueError, match="limit"):
        facts.recall("u1", "order", limit=2.5)


@pytest.mark.parametrize("user_id, same_user", [(" alice ", "alice"), ("bob\ud800", "bob\ud800")],
                         ids=["spaces", "lone-surrogate"])
def test_a_user_id_is_read_as_remember_kept_it(user_id, same_user):
    # remember() kept the id stripped and with its surrogate replaced; recall(), facts() and forget() used it as
    # given: " alice " found nothing, and "bob\ud800" raised UnicodeEncodeError from SQLite.
    facts = UserFacts()
    kept = facts.remember(user_id, "Prefers SF express delivery.")
    assert [f.text for f in facts.recall(same_user, "express delivery")] == ["Prefers SF express delivery."]
    assert facts.facts(user_id) == facts.facts(same_user) == [kept]
    assert facts.forget(same_user, kept.id) and facts.facts(user_id) == []
    with pytest.raises(ValueError, match="user_id must be a non-empty string"):
        facts.facts("  ")


# --- a run the session cannot keep: the answer still reaches the caller ----------------------------------------

REFUND = 'Thought: refund\nAction: applyRefund\nAction Input: {"orderId": "88231", "reason": "x"}'


class RefundThen:
    """A scripted model: the refund, then `then`."""

    model = "scripted"

    def __init__(self, then):
        self.replies = [REFUND, then]

    def chat(self, messages, **options):
        return ChatResult(self.replies.pop(0), "stop")


def refund_session(then, **options) -> tuple[Session, Shop]:
    shop = Shop(":memory:", clock=CLOCK)
    return Session(ReActAgent(RefundThen(then), shop_registry(shop, CLOCK)), **options), shop


def test_a_store_that_fails_after_the_run_still_returns_the_answer_and_says_why(tmp_path, monkeypatch):
    # Another connection held the file's write lock: ask() raised SessionStoreError after the refund was written,
    # last_result stayed None, and the caller never saw the answer that reports the refund.
    monkeypatch.setattr("tinyagent.memory.session_store.BUSY_TIMEOUT_SECONDS", 0.1)
    path = tmp_path / "sessions.db"
    session, shop = refund_session("Thought: done\nFinal Answer: refund done", store=SqliteSessionStore(path))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.warns(UserWarning, match="the answer was not stored in the session: the session store .* is busy") as said:
            result = session.ask("refund 88231")
    finally:
        holder.rollback()
        holder.close()
    assert result.answer == "refund done" and session.last_result is result
    assert f"the session store {path} is busy" in session.store_error and said[0].category.__name__ == "TurnNotStored"
    assert [row["orderId"] for row in shop.refunds()] == ["88231"] and session.turns() == []


def test_a_store_error_without_a_message_is_named_by_its_class_and_the_answer_still_comes_back():
    # A store of the learner's own may raise its error with no words: the first line of "" was an IndexError,
    # raised over the answer that reports the refund.
    class SilentStore(SqliteSessionStore):
        def append_turn(self, session_id, turn):
            raise SessionStoreError()

    session, shop = refund_session("Thought: done\nFinal Answer: refund done", store=SilentStore(":memory:"))
    with pytest.warns(UserWarning, match="the answer was not stored in the session: SessionStoreError"):
        result = session.ask("refund 88231")
    assert result.answer == "refund done" and session.store_error == "SessionStoreError"
    assert [row["orderId"] for row in shop.refunds()] == ["88231"]
