"""Stop rules (tinyagent/robustness/stop_rules.py): each rule on scripted traces, their composition (order, which
reason wins), and the agent's loop with them: the closing call, warnings, tool timeouts."""

from __future__ import annotations

import json
import threading

import pytest

from tinyagent import (
    Action,
    AuthenticationError,
    ChatResult,
    Final,
    FunctionTool,
    LimitReached,
    LlmCall,
    NoProgress,
    Observation,
    Parsed,
    ReActAgent,
    RepeatedAction,
    StepCap,
    Stop,
    Stopped,
    StopRules,
    TokenBudget,
    ToolCall,
    ToolRegistry,
    ToolTimeout,
    Trace,
    WallClock,
    recommended_stop_rules,
)
from tinyagent.loop_parts import StepLimit
from tinyagent.registry import ToolResult
from tinyagent.robustness.stop_rules import AFTER_REPLY, CutOff, Warn, action_key, normalize

ORDER = '{"orderId":"88231","status":"已签收","trackingNo":"SF1"}'


def trace_of(*events, lang="en") -> Trace:
    return Trace(list(events), lang=lang)


def round_events(step, name="queryOrder", tool_input="88231", observation=ORDER, error=False, usage=None):
    """The four events of one tool round."""
    return [
        LlmCall(step, text=f"Action: {name}\nAction Input: {tool_input}", finish_reason="stop", usage=usage or {}),
        Parsed(step, "thinking", name, tool_input, None, "action"),
        ToolCall(step, name, tool_input),
        Observation(step, observation, error),
    ]


def reply_events(step, name="queryOrder", tool_input="88231", finish_reason="stop", text=None):
    """The first two events of a round: the reply and what was parsed (before any tool runs)."""
    return [
        LlmCall(step, text=text or f"Action: {name}\nAction Input: {tool_input}", finish_reason=finish_reason),
        Parsed(step, "thinking", name, tool_input, None, "action"),
    ]


# -- StepCap ----------------------------------------------------------------------------------------------
def test_step_cap_fires_once_n_rounds_have_run():
    rule = StepCap(3)
    events = []
    for step in (1, 2):
        events += round_events(step)
        assert rule.check(trace_of(*events)) is None
    events += round_events(3)
    stop = rule.check(trace_of(*events))
    assert stop.reason == "max_steps" and stop.values == {"n": 3}
    assert stop.message("en").startswith("Sorry, I could not finish this within 3 steps")


@pytest.mark.parametrize("rule", [lambda: StepCap(0), lambda: StepCap(2.5), lambda: TokenBudget(-1),
                                  lambda: WallClock(0), lambda: NoProgress(0), lambda: RepeatedAction(-1),
                                  lambda: ToolTimeout(0), lambda: ToolTimeout(1, per_tool={"x": 0}),
                                  lambda: StepCap(True), lambda: ToolTimeout(1, per_tool=["applyRefund"]),
                                  lambda: ToolTimeout(1, per_tool={1: 5})])
def test_rules_refuse_settings_that_make_no_sense(rule):
    with pytest.raises(ValueError, match="must be"):
        rule()


# -- CutOff -----------------------------------------------------------------------------------------------
def test_cut_off_stops_on_a_reply_cut_at_max_tokens_with_todays_detail():
    text = "Thought: checking\nAction: queryOrder\nAction Input: 882"
    stop = CutOff().check(trace_of(*reply_events(1, text=text, finish_reason="length")))
    assert stop == Stop("length", detail=f"cut off after: {text!r}")
    assert CutOff().check(trace_of(*reply_events(1))) is None
    assert CutOff.when == AFTER_REPLY


# -- TokenBudget ------------------------------------------------------------------------------------------
def usage(prompt, completion):
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def test_token_budget_stops_when_the_next_call_would_certainly_pass_it():
    first = round_events(1, usage=usage(300, 50))
    second = round_events(2, usage=usage(450, 50))
    rule = TokenBudget(1000)
    assert rule.check(trace_of()) is None  # nothing spent, nothing to go by
    assert rule.check(trace_of(*first)) is None  # 350 spent, the next at least 350: 700 <= 1000
    stop = rule.check(trace_of(*first, *second))  # 850 spent, the next at least 500: 1350 > 1000
    assert stop.reason == "token_budget"
    assert "850 tokens spent in 2 model calls" in stop.detail and "at least about 500 more" in stop.detail
    assert TokenBudget(1350).check(trace_of(*first, *second)) is None  # exactly on the budget: go on


def test_token_budget_estimates_a_call_without_usage_and_says_so():
    call = LlmCall(1, messages=({"role": "user", "content": "x" * 600},), text="y" * 100, usage={})
    stop = TokenBudget(1000).check(trace_of(call))
    assert stop.reason == "token_budget" and "estimated" in stop.detail  # 700 + 700 > 1000
    assert TokenBudget(1400).check(trace_of(call)) is None


# -- WallClock --------------------------------------------------------------------------------------------
class ManualClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_wall_clock_counts_from_its_first_check_and_fires_at_the_limit():
    clock = ManualClock()
    rule = WallClock(60, clock=clock)
    assert rule.check(trace_of()) is None  # starts the clock
    clock.now += 59.9
    assert rule.check(trace_of()) is None
    clock.now += 0.1
    stop = rule.check(trace_of())
    assert stop.reason == "timeout" and stop.detail == "60.0 s since the first model call; the limit is 60 s"


def test_a_wall_clock_under_a_second_shows_the_time_it_took_beside_its_limit():
    clock = ManualClock()
    rule = WallClock(0.01, clock=clock)
    rule.check(trace_of())
    clock.now += 0.04  # read "0.0 s since the first model call; the limit is 0.01 s"
    assert rule.check(trace_of()).detail == "0.040 s since the first model call; the limit is 0.01 s"


def test_a_fresh_wall_clock_starts_again():
    clock = ManualClock()
    rule = WallClock(10, clock=clock)
    rule.check(trace_of())
    clock.now += 30
    assert rule.check(trace_of()) is not None
    assert rule.fresh().check(trace_of()) is None


# -- NoProgress -------------------------------------------------------------------------------------------
def test_no_progress_fires_after_n_rounds_that_brought_nothing_new():
    rule = NoProgress(3)
    events = round_events(1)
    for step, tool_input in ((2, '"88231"'), (3, "`88231`")):  # varied actions, the same answer
        events += round_events(step, tool_input=tool_input)
        assert rule.check(trace_of(*events)) is None
    events += round_events(4, tool_input='{"orderId": "88231"}')
    stop = rule.check(trace_of(*events))
    assert stop.reason == "no_progress" and stop.values == {"n": 3}
    assert "round 2: the same as round 1; round 3: the same as round 1; round 4: the same as round 1" in stop.detail


def test_no_progress_counts_rounds_when_a_round_holds_several_calls():
    # Function calling: round 2 made two calls, both repeating round 1. Counted call by call, NoProgress(3) fired after
    # two stale rounds, naming round 2 twice.
    rule = NoProgress(3)
    events = [*round_events(1), *round_events(2), Observation(2, ORDER)]
    assert rule.check(trace_of(*events)) is None
    events += round_events(3)
    assert rule.check(trace_of(*events)) is None
    events += [*round_events(4, observation='{"error":"x"}', error=True), Observation(4, ORDER)]
    stop = rule.check(trace_of(*events))
    assert stop.detail == ("no new information in the last 3 rounds (round 2: the same as round 1, the same as round 1; "
                           "round 3: the same as round 1; round 4: an error, the same as round 1)")
    # one new result in a round is new information
    assert rule.check(trace_of(*events, *round_events(5), Observation(5, '{"trackingNo":"SF1"}'))) is None


def test_no_progress_counts_errors_and_resets_on_new_information():
    rule = NoProgress(2)
    events = [*round_events(1), *round_events(2, observation='{"error":"x"}', error=True)]
    assert rule.check(trace_of(*events)) is None
    fresh = [*events, *round_events(3, name="queryLogistics", observation='{"trackingNo":"SF1"}')]
    assert rule.check(trace_of(*fresh)) is None  # round 3 brought something new
    stale = [*events, *round_events(3, observation='{"error":"y"}', error=True)]
    assert "round 2: an error; round 3: an error" in rule.check(trace_of(*stale)).detail


def test_no_progress_sees_the_same_json_in_another_key_order_or_spacing_as_nothing_new():
    reordered = '{ "trackingNo": "SF1", "status": "已签收", "orderId": "88231" }'
    events = [*round_events(1), *round_events(2, observation=reordered)]
    assert NoProgress(1).check(trace_of(*events)).reason == "no_progress"
    assert normalize(" a   b\n c ") == "a b c"


# -- RepeatedAction ---------------------------------------------------------------------------------------
def test_repeated_action_warns_first_then_stops():
    rule = RepeatedAction()
    events = [*round_events(1)]
    assert rule.check(trace_of(*events, *reply_events(2, name="queryLogistics", tool_input="SF1"))) is None
    warn = rule.check(trace_of(*events, *reply_events(2)))
    assert isinstance(warn, Warn)
    warning = json.loads(warn.text)
    assert warning["stop_rule"] == "repeated_action" and "queryOrder(88231) already ran in round 1" in warning["error"]
    events += [*reply_events(2), ToolCall(2, "queryOrder", "88231"), Observation(2, warn.text, True)]
    stop = rule.check(trace_of(*events, *reply_events(3)))
    assert stop == Stop("repeated_action", detail="queryOrder(88231) asked for again after 1 warning (rounds 1, 2, 3)")


def test_repeated_action_compares_inputs_after_normalizing():
    events = round_events(1, name="applyRefund", tool_input='{"orderId": "88231", "reason": "broken"}')
    again = reply_events(2, name="applyRefund", tool_input='{"reason":"broken","orderId":"88231"}')
    assert isinstance(RepeatedAction().check(trace_of(*events, *again)), Warn)
    other = reply_events(2, name="applyRefund", tool_input='{"orderId": "88232", "reason": "broken"}')
    assert RepeatedAction().check(trace_of(*events, *other)) is None
    assert action_key(" queryOrder ", " 88231 ") == action_key("queryOrder", "88231")
    assert action_key("queryOrder", '"88231"') != action_key("queryOrder", "88231")  # a JSON string, not a number


def test_repeated_action_with_no_warnings_stops_at_the_first_repeat_and_warns_in_chinese():
    events = round_events(1)
    assert RepeatedAction(warnings=0).check(trace_of(*events, *reply_events(2))).reason == "repeated_action"
    warn = RepeatedAction().check(trace_of(*events, *reply_events(2), lang="zh"))
    assert "在第 1 轮已经执行过" in json.loads(warn.text)["error"]


def test_repeated_action_ignores_a_final_answer():
    final = [LlmCall(2, text="Final Answer: ok"), Parsed(2, "", None, None, "ok", "final_answer")]
    assert RepeatedAction().check(trace_of(*round_events(1), *final)) is None


# -- ToolTimeout ------------------------------------------------------------------------------------------
def test_a_tool_past_its_time_becomes_an_error_and_its_thread_runs_on():
    release, done = threading.Event(), []

    def hanging(text):
        release.wait(30)  # a backend that answers only when the test lets it
        done.append(text)
        return "late"

    registry = ToolRegistry([FunctionTool("slow", "hangs", hanging)])
    rule = ToolTimeout(0.05)
    try:
        result = rule.run_tool(registry, Action("slow", "x"))
        assert result.error
        data = json.loads(result.text)
        assert data["stop_rule"] == "tool_timeout" and "did not answer within 0.05 s" in data["error"]
        assert "may still finish" in data["error"] and done == []
        assert len(rule.abandoned) == 1 and rule.abandoned[0].daemon
    finally:
        release.set()
    assert rule.join_abandoned(30) is True
    assert done == ["x"] and rule.abandoned == []  # the tool did its work after the loop gave up on it


def test_a_tool_within_its_time_answers_normally_and_per_tool_limits_apply():
    registry = ToolRegistry([FunctionTool("fast", "answers", lambda text: f"ok {text}")])
    rule = ToolTimeout(0.01, per_tool={"fast": 30})
    assert rule.run_tool(registry, Action("fast", "1")).text == "ok 1"
    assert rule.run_tool(registry, Action("nope", "")).error  # the registry's own error, not a timeout
    assert rule.abandoned == []


# -- composition ------------------------------------------------------------------------------------------
def stuck_trace():
    """Three rounds of the same answer: NoProgress(2) and StepCap(3) both fire before round 4."""
    return trace_of(*round_events(1), *round_events(2, tool_input='"88231"'), *round_events(3, tool_input="`88231`"))


def test_the_first_stop_in_list_order_wins():
    assert StopRules([NoProgress(2), StepCap(3)]).before_call(stuck_trace()).reason == "no_progress"
    assert StopRules([StepCap(3), NoProgress(2)]).before_call(stuck_trace()).reason == "max_steps"


def test_a_stop_beats_a_warning_whatever_the_order():
    events = [*round_events(1), *reply_events(2, finish_reason="length")]  # a cut reply that repeats
    assert StopRules([RepeatedAction(), CutOff()]).after_reply(trace_of(*events)).reason == "length"
    warned = StopRules([RepeatedAction()]).after_reply(trace_of(*events))  # a warning stands in for the action
    assert isinstance(warned, ToolResult) and warned.error and "repeated action" in warned.text


def test_rules_are_asked_only_at_their_own_moment():
    events = [*round_events(1), *reply_events(2, finish_reason="length")]
    assert StopRules([CutOff()]).before_call(trace_of(*events)) is None
    assert StopRules([StepCap(1)]).after_reply(trace_of(*events)) is None


def test_mounted_rules_keep_the_agents_step_cap_and_cutoff_and_keep_yours():
    llm, tools = ScriptedLlm(ANSWER), registry()
    default = ReActAgent(llm, tools, max_steps=7).stop_rules
    assert isinstance(default, StepLimit) and default.max_steps == 7
    mine = ReActAgent(llm, tools, max_steps=7, parts=[StopRules([NoProgress(2)])]).stop_rules
    assert [type(r) for r in mine.rules] == [NoProgress, StepCap, CutOff] and mine.closing_call is True
    assert mine.rules[1].max_steps == 7
    own_cap = ReActAgent(llm, tools, max_steps=7, parts=[StopRules([StepCap(3), CutOff()])]).stop_rules
    assert [r.max_steps for r in own_cap.rules if isinstance(r, StepCap)] == [3]
    unclosed = ReActAgent(llm, tools, parts=[StopRules([NoProgress()], closing_call=False)]).stop_rules
    assert unclosed.closing_call is False


def test_bad_rules_are_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="check"):
        StopRules([object()])
    with pytest.raises(TypeError, match="list of rules"):
        StopRules("max_steps")

    class Sloppy:
        def check(self, trace):
            return True

    with pytest.raises(TypeError, match="must return Stop, Warn or None"):
        StopRules([Sloppy()]).before_call(trace_of())


def test_recommended_rules_put_the_diagnoses_first():
    reasons = [type(rule).__name__ for rule in recommended_stop_rules()]
    assert reasons == ["RepeatedAction", "NoProgress", "TokenBudget", "WallClock", "StepCap", "CutOff", "ToolTimeout"]


# -- the agent's loop with rules --------------------------------------------------------------------------
class ScriptedLlm:
    """Replies in order (the last repeats); an Exception in the script is raised. Records requests."""

    model = "scripted"

    def __init__(self, *replies, finish_reasons=None):
        self.replies, self.requests = list(replies), []
        self.finish_reasons = list(finish_reasons or [])

    def chat(self, messages, *, stop=None, max_tokens=None):
        self.requests.append([dict(m) for m in messages])
        n = len(self.requests) - 1
        reply = self.replies[min(n, len(self.replies) - 1)]
        if isinstance(reply, Exception):
            raise reply
        finish = self.finish_reasons[n] if n < len(self.finish_reasons) else "stop"
        return ChatResult(reply, finish, usage(100 * (n + 1), 20))


ACT = "Thought: look it up.\nAction: queryOrder\nAction Input: 88231\n"
ANSWER = "Thought: enough.\nFinal Answer: Order 88231 was signed for."


def registry(calls=None):
    def query(text):
        if calls is not None:
            calls.append(text)
        return ORDER

    return ToolRegistry([FunctionTool("queryOrder", "Look up an order.", query)])


def test_without_stop_rules_the_loop_ends_as_in_lesson_06():
    llm = ScriptedLlm(ACT)
    result = ReActAgent(llm, registry(), max_steps=3).run("Where is 88231?")
    assert result.reason == "max_steps" and len(llm.requests) == 3
    assert result.trace.events[-1] == Stopped(3, "max_steps", result.answer)
    assert not result.trace.of_type(LimitReached) and result.messages[-1]["content"] == f"Observation: {ORDER}"


def test_a_stop_rule_ends_with_the_models_best_answer_from_one_closing_call():
    llm = ScriptedLlm(ACT, ACT, ACT, ANSWER)
    calls = []
    result = ReActAgent(llm, registry(calls), parts=[StopRules([StepCap(3)])]).run("Where is 88231?")
    assert result.reason == "max_steps" and result.answer == "Order 88231 was signed for." and not result.ok
    assert isinstance(result.trace.end, Final) and result.trace.end.step == 4
    assert [type(e).__name__ for e in result.trace.events[-4:]] == ["LimitReached", "LlmCall", "Parsed", "Final"]
    closing = llm.requests[-1][-1]
    assert closing["role"] == "user" and "the limit of 3 rounds is reached" in closing["content"]
    assert "Do not call any more tools" in closing["content"] and len(calls) == 3
    assert result.messages[-1] == {"role": "assistant", "content": ANSWER}


@pytest.mark.parametrize("closing_reply, finish, why", [
    (AuthenticationError("bad key"), "stop", "the closing call failed: bad key"),
    (ACT, "stop", "asked for a tool (queryOrder) instead of answering"),
    ("Thought: I will explain at length", "length", "cut at max_tokens"),
    ("   ", "stop", "the reply was empty"),
])
def test_a_closing_call_without_an_answer_ends_with_the_polite_message(closing_reply, finish, why):
    llm = ScriptedLlm(ACT, ACT, closing_reply, finish_reasons=["stop", "stop", finish])
    result = ReActAgent(llm, registry(), parts=[StopRules([StepCap(2)])], lang="zh").run("88231 到哪了？")
    end = result.trace.end
    assert isinstance(end, Stopped) and end.reason == "max_steps" and why in end.detail
    assert end.answer == "抱歉，这个问题我走了 2 步仍没有处理完。请换个说法或补充一些信息，我再试一次。"


def test_a_closing_reply_in_prose_is_taken_as_the_answer():
    llm = ScriptedLlm(ACT, "It was signed for on 22 June.")
    result = ReActAgent(llm, registry(), parts=[StopRules([StepCap(1)])]).run("Where is 88231?")
    assert result.trace.end == Final(2, "It was signed for on 22 June.", "max_steps")


def test_closing_call_can_be_turned_off():
    llm = ScriptedLlm(ACT)
    result = ReActAgent(llm, registry(), parts=[StopRules([RepeatedAction()], closing_call=False)]).run("88231?")
    assert result.trace.end == Stopped(3, "repeated_action", result.answer,
                                       detail="queryOrder(88231) asked for again after 1 warning (rounds 1, 2, 3)")
    assert result.answer.startswith("Sorry, I kept trying the same step") and len(llm.requests) == 3


def test_a_warned_repeat_is_not_run_and_the_model_reads_the_warning():
    calls = []
    llm = ScriptedLlm(ACT, ACT, ANSWER)
    result = ReActAgent(llm, registry(calls), parts=[StopRules([RepeatedAction()])]).run("Where is 88231?")
    assert result.reason == "final_answer" and calls == ["88231"]
    warning = llm.requests[2][-1]["content"]
    assert warning.startswith("Observation: {") and "already ran in round 1" in warning
    assert result.trace.of_type(Observation)[1].error


def test_the_reply_is_judged_before_the_budget_when_both_would_stop_the_same_round():
    # Round 2's reply is cut (length) and, after it, the budget would also be spent: length wins.
    llm = ScriptedLlm(ACT, "Thought: cut", ANSWER, finish_reasons=["stop", "length", "stop"])
    result = ReActAgent(llm, registry(), parts=[StopRules([TokenBudget(300)])]).run("88231?")
    assert [e.reason for e in result.trace.of_type(LimitReached)] == ["length"]


def test_a_budget_stops_before_the_call_that_would_pass_it():
    llm = ScriptedLlm(ACT, ACT, ACT, ANSWER)
    result = ReActAgent(llm, registry(), parts=[StopRules([TokenBudget(400)])]).run("88231?")
    # usage per call: 120, 220 (... 340 after two, and the next would need 220 more)
    assert result.reason == "token_budget" and result.trace.of_type(LimitReached)[0].step == 2
    assert len(llm.requests) == 3  # two rounds and the closing call


def test_the_wall_clock_reads_the_injected_clock():
    clock = ManualClock()

    class SlowModel(ScriptedLlm):
        def chat(self, messages, **options):
            clock.now += 25  # every reply "takes" 25 s
            return super().chat(messages, **options)

    llm = SlowModel(ACT, ACT, ACT, ACT, ANSWER)
    result = ReActAgent(llm, registry(), parts=[StopRules([WallClock(60, clock=clock)])]).run("88231?")
    limit = result.trace.of_type(LimitReached)[0]
    assert limit.reason == "timeout" and limit.step == 3 and limit.detail.startswith("75.0 s")


def test_a_tool_timeout_is_an_observation_and_the_run_goes_on():
    release = threading.Event()
    slow = FunctionTool("queryOrder", "Look up an order.", lambda text: (release.wait(30), ORDER)[1])
    rule = ToolTimeout(0.05)
    try:
        result = ReActAgent(ScriptedLlm(ACT, ANSWER), ToolRegistry([slow]), parts=[StopRules([rule])]).run("88231?")
    finally:
        release.set()
    assert result.reason == "final_answer"
    observation = result.trace.of_type(Observation)[0]
    assert observation.error and "did not answer within 0.05 s" in observation.text
    assert rule.join_abandoned(30)  # the agent's rules share the list with the rule we built


def test_each_run_gets_fresh_rules():
    llm = ScriptedLlm(ACT, ACT, ANSWER, ACT, ACT, ANSWER)
    agent = ReActAgent(llm, registry(), parts=[StopRules([RepeatedAction()])])
    first, second = agent.run("88231?"), agent.run("88231?")
    assert first.reason == second.reason == "final_answer"  # the second run got its own warning too


def test_a_stopped_trace_prints_its_reason_in_both_languages_and_survives_json():
    llm = ScriptedLlm(ACT, ACT, ANSWER)
    result = ReActAgent(llm, registry(), parts=[StopRules([NoProgress(1)])]).run("Where is 88231?")
    text = result.trace.format("en")
    assert "[Limit reached: no_progress] no new information\nno new information in the last 1 rounds" in text
    assert "[Final answer - after a limit] Order 88231 was signed for." in text
    zh = result.trace.format("zh")
    assert "[到达限制：no_progress] 没有新的信息" in zh and "[最终答复-到达限制后]" in zh
    assert Trace.from_json(result.trace.to_json()).events == result.trace.events


def test_a_rule_written_as_a_plain_class_works_in_the_agent():
    class AtMostTwoCalls:  # no base class: anything with check(trace) is a rule
        def check(self, trace):
            return Stop("two_calls") if len(trace.of_type(LlmCall)) >= 2 else None

    result = ReActAgent(ScriptedLlm(ACT, ACT, ANSWER), registry(), parts=[StopRules([AtMostTwoCalls()])]).run("88231?")
    assert result.reason == "two_calls" and "a limit was reached (two_calls)" in result.messages[-2]["content"]
    assert Stop("two_calls").message("zh") == "抱歉，我在处理完之前不得不停下（two_calls）。请再试一次。"


@pytest.mark.parametrize("reply", ["Thought: x\nFinal Answer:", "Thought: x\nFinal Answer:   \n"])
def test_a_closing_reply_whose_final_answer_is_empty_brings_no_answer(reply):
    # it fell through to the prose fallback, and the customer got the reply's raw text as the answer
    from tinyagent.parser import parse_step
    from tinyagent.robustness.stop_rules import closing_answer

    assert closing_answer(reply, "stop", parse_step(reply)) == (None, "the Final Answer was empty")


def test_two_lists_of_rules_compose_and_a_part_that_wraps_rules_is_not_thrown_away():
    from tinyagent import LlmClient, ReActAgent, ToolRegistry
    from tinyagent.architectures.handoffs import OwnEvents

    # The second list replaced the first: RepeatedAction was gone, and a looping model ran to the step cap.
    agent = ReActAgent(LlmClient.classroom(), ToolRegistry(), parts=[StopRules([RepeatedAction()]),
                                                                     StopRules([TokenBudget(100_000)])])
    kinds = [type(rule) for rule in agent.stop_rules.rules]
    assert kinds == [TokenBudget, RepeatedAction, StepCap, CutOff]
    # StopRules over OwnEvents (lesson 21) was a TypeError about a StepLimit not being iterable.
    with pytest.raises(TypeError, match=r"StopRules would throw away OwnEvents\(.*\), which holds the stop_rules slot"):
        ReActAgent(LlmClient.classroom(), ToolRegistry(), parts=[OwnEvents(), StopRules([RepeatedAction()])])
