"""`ContextBudget` (lesson 13): no request the agent sends is over the budget, over a long session, in both
protocols, closing calls included; the answers stay right; the live conversation stays whole; what is folded
keeps its facts; a conversation that cannot fit ends with a named reason, never a request over the budget."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import (
    ChatResult,
    LlmCall,
    LlmClient,
    Observation,
    ReActAgent,
    StepCap,
    Stopped,
    fixed_clock,
)
from tinyagent.errors import TinyAgentError
from tinyagent.memory.context_budget import (
    BudgetedRequest,
    ContextBudget,
    ContextBudgetError,
    called_tools,
    request_tokens,
)
from tinyagent.memory.observation_folding import ids_and_numbers, is_folded
from tinyagent.memory.plain_turns import next_history, run_turns
from tinyagent.memory.tool_filter import ToolFilter
from tinyagent.protocols.function_calling import FunctionCallingAgent
from tinyagent.protocols.token_count import classroom_counter, token_counter
from tinyagent.robustness.stop_rules import StopRules
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.long_session import LONG_SESSION
from tinyagent.shop.tool_hints import SHOP_TOOL_HINTS
from tinyagent.tools import Action

CLOCK = fixed_clock("2026-06-30T19:05:23")
QUESTIONS = [task.question for task in LONG_SESSION]


class Recorder:
    """Passes every call on to the model and keeps what was sent: the messages and the `tools`."""

    def __init__(self, llm):
        self.llm = llm
        self.model = getattr(llm, "model", "")
        self.sent: list[tuple[list[dict], list[dict] | None]] = []

    def chat(self, messages, **options):
        self.sent.append(([dict(m) for m in messages], options.get("tools")))
        return self.llm.chat(messages, **options)


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


def registry():
    return shop_registry(Shop(":memory:", clock=CLOCK))


def shop_budget(tokens: int, **options) -> ContextBudget:
    return ContextBudget(tokens, tool_filter=ToolFilter(SHOP_TOOL_HINTS), **options)


AGENTS = {"text ReAct": ReActAgent, "function calling": FunctionCallingAgent}


# -- the budget holds, and the answers stay right ----------------------------------------------------------
@pytest.mark.parametrize("protocol", AGENTS)
@pytest.mark.parametrize("tokens", [1500, 2500])
def test_no_request_is_over_the_budget_over_the_30_turn_session(llm, protocol, tokens):
    recorder = Recorder(llm)
    budget = shop_budget(tokens)
    results = run_turns(AGENTS[protocol](recorder, registry(), parts=[BudgetedRequest(budget)]), QUESTIONS)

    sent = [budget.count(messages, tools) for messages, tools in recorder.sent]
    assert max(sent) <= tokens, max(sent)
    logged = [budget.count(list(call.messages)) for r in results for call in r.trace.of_type(LlmCall)]
    assert len(logged) == len(sent) and max(logged) <= tokens  # the trace records what was sent
    assert [task.name for task, r in zip(LONG_SESSION, results) if not task.answered(r.answer)] == []
    # It had work to do: the same session without the budget sends requests several times its size.
    plain = Recorder(llm)
    run_turns(AGENTS[protocol](plain, registry()), QUESTIONS)
    assert max(budget.count(m, t) for m, t in plain.sent) > 3 * tokens
    assert len(plain.sent) == len(recorder.sent)  # the same steps, turn by turn


def test_the_budget_counts_with_cl100k_when_quicktok_is_installed():
    pytest.importorskip("quicktok")
    budget = ContextBudget(1000)
    assert budget.counter.exact and budget.counter.name.startswith("cl100k_base")
    assert budget.count([{"role": "user", "content": "订单 88231 到哪了？"}]) == token_counter().chat(
        [{"role": "user", "content": "订单 88231 到哪了？"}])


def test_the_closing_call_of_a_stop_rule_is_fitted_too(llm):
    recorder = Recorder(llm)
    budget = shop_budget(1200)
    agent = ReActAgent(recorder, registry(), parts=[BudgetedRequest(budget), StopRules([StepCap(2)])])
    results = run_turns(agent, QUESTIONS[:8])
    assert any(r.reason == "max_steps" and r.trace.end.answer for r in results)  # a closing call was made
    assert max(budget.count(m, t) for m, t in recorder.sent) <= 1200


def test_the_live_conversation_stays_whole_while_the_requests_are_folded(llm):
    results = run_turns(ReActAgent(llm, registry(), parts=[BudgetedRequest(shop_budget(1500))]), QUESTIONS[:10])
    last = results[-1]
    sent = [m for call in last.trace.of_type(LlmCall) for m in call.messages]
    assert any(is_folded(m["content"].removeprefix("Observation: ")) for m in sent if m["role"] == "user")
    assert not any(is_folded(m["content"].removeprefix("Observation: ")) for m in last.messages)
    assert len(last.messages) > max(len(call.messages) for call in last.trace.of_type(LlmCall))
    # Every earlier turn's messages are in the history the last run was given, whole.
    for earlier in results[:-1]:
        for observation in earlier.trace.of_type(Observation):
            assert {"role": "user", "content": f"Observation: {observation.text}"} in last.messages


# -- how a request is fitted ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def conversation(llm):
    """Five turns of the long session, whole, then a refund request with two steps taken."""
    turns = run_turns(ReActAgent(llm, registry()), QUESTIONS[1:5] + QUESTIONS[7:8])
    history = next_history(turns[-1])
    run = ReActAgent(llm, registry()).start("Please refund order 88234, I never used it.", history)
    for _ in range(8):  # two rounds: LlmCall, Parsed, ToolCall, Observation each
        run.advance()
    return run


def question_at(run):
    """Where the run's question is in its messages: the request a budget fits around."""
    return len(run.messages) - 1 - next(i for i, m in enumerate(reversed(run.messages)) if m["content"] == run.question)


def fit(run, tokens, **options):
    budget = shop_budget(tokens, **options)
    return budget.fit(run.messages, run.agent.tools, request_index=question_at(run),
                      system_prompt=lambda tools: run.agent.prompt_for(run.lang, tools))


def test_fitting_folds_then_shortens_then_drops_then_folds_this_turn(conversation):
    whole = fit(conversation, 100_000)
    assert (whole.folded, whole.shortened, whole.dropped) == (0, 0, 0)
    assert whole.tokens == whole.whole_tokens and len(whole.offered) == 5  # the history called every tool

    stages = []
    for tokens in range(whole.tokens, 0, -25):
        try:
            fitted = fit(conversation, tokens)
        except ContextBudgetError:
            break
        assert fitted.tokens <= tokens
        stage = ("fold earlier" if fitted.folded and not fitted.shortened and not fitted.dropped else
                 "shorten" if fitted.shortened and not fitted.dropped else
                 "drop" if fitted.dropped else "nothing")
        if not stages or stages[-1] != stage:
            stages.append(stage)
    assert stages == ["nothing", "fold earlier", "shorten", "drop"]
    smallest = fitted
    assert smallest.dropped == 5 and smallest.shortened == 0
    # The system prompt, the request and this turn's steps are always there.
    assert smallest.messages[0]["role"] == "system"
    assert smallest.messages[1]["content"] == "Please refund order 88234, I never used it."
    assert len(smallest.messages) == len(conversation.messages) - question_at(conversation) + 1


def test_this_turns_observations_are_folded_last_and_the_latest_never():
    search = registry().execute(Action("searchKnowledge", "退货 政策"))
    messages = [
        {"role": "system", "content": "You are a shop assistant. Tools: 1. searchKnowledge - Search policies."},
        {"role": "user", "content": "What are the return rules?"},
        {"role": "assistant", "content": "Thought: search\nAction: searchKnowledge\nAction Input: 退货 政策"},
        {"role": "user", "content": f"Observation: {search}"},
        {"role": "assistant", "content": "Thought: again\nAction: searchKnowledge\nAction Input: 退货"},
        {"role": "user", "content": f"Observation: {search}"},
    ]
    budget = ContextBudget(request_tokens(messages) - 1)
    fitted = budget.fit(messages)
    assert fitted.folded == 1 and is_folded(fitted.messages[3]["content"].removeprefix("Observation: "))
    assert fitted.messages[5] == messages[5]  # the latest Observation stays whole
    with pytest.raises(ContextBudgetError):
        ContextBudget(fitted.tokens - 1).fit(messages)


def test_folding_keeps_the_ids_and_numbers_the_model_was_shown(conversation):
    whole = fit(conversation, 100_000)
    folded = next(fit(conversation, t) for t in range(whole.tokens, 0, -10) if fit(conversation, t).folded >= 3)
    assert folded.shortened == folded.dropped == 0
    before = {i for m in whole.messages[1:] for i in ids_and_numbers(m["content"])}
    after = {i for m in folded.messages[1:] for i in ids_and_numbers(m["content"])}
    assert before - after == set()
    assert {"RF202606300001", "SF1234567890", "YT2468013579", "343"} <= after


def test_a_system_message_in_the_history_is_never_dropped(conversation):
    summary = {"role": "system", "content": "Summary of earlier turns: the customer's order 88231 was refunded."}
    messages = [conversation.messages[0], summary, *conversation.messages[1:]]
    smallest = None
    for tokens in range(1000, 0, -10):
        try:
            smallest = shop_budget(tokens).fit(
                messages, conversation.agent.tools, request_index=question_at(conversation) + 1,
                system_prompt=lambda tools: conversation.agent.prompt_for("en", tools))
        except ContextBudgetError as exc:
            assert "pinned system messages" in str(exc)
            break
    assert smallest.dropped == 5 and smallest.messages[1] == summary


def test_a_callers_own_system_prompt_is_sent_as_it_is(llm):
    own = "You are Bit Mall's assistant. Tools:\n1. queryOrder - Look up an order.\n2. getCurrentTime - The time."
    recorder = Recorder(llm)
    agent = ReActAgent(recorder, registry(), system_prompt=own, parts=[BudgetedRequest(shop_budget(5000))])
    agent.run("What time is it now?")
    assert all(messages[0]["content"] == own for messages, _ in recorder.sent)


def test_function_calling_sends_only_the_offered_tools(llm):
    recorder = Recorder(llm)
    result = FunctionCallingAgent(recorder, registry(), parts=[BudgetedRequest(shop_budget(5000))]).run("What time is it now?")
    assert [[spec["function"]["name"] for spec in tools] for _, tools in recorder.sent] == [["getCurrentTime"]] * 2
    assert result.answer == "It is 19:05 on Tuesday, 30 June 2026."


# -- when nothing fits ----------------------------------------------------------------------------------
def test_a_request_that_cannot_fit_is_an_error_that_names_its_sizes():
    messages = [{"role": "system", "content": "Be brief. Tools: 1. queryOrder - Look up an order."},
                {"role": "user", "content": "Where is order 88231? " * 200}]
    with pytest.raises(ContextBudgetError) as caught:
        ContextBudget(300).fit(messages)
    message = str(caught.value)
    assert message.startswith(f"even the smallest request is {request_tokens(messages)} tokens (system prompt ")
    assert "the request " in message and "over the context budget of 300" in message
    assert token_counter().name in message
    assert isinstance(caught.value, TinyAgentError)


def test_the_budgets_error_lives_in_lesson_13s_module_not_in_lesson_03s_errors():
    # It sat in errors.py, the module lesson 03 builds: its answer key held a lesson 13 error no lesson before 13 knows.
    import tinyagent.errors

    assert ContextBudgetError.__module__ == "tinyagent.memory.context_budget"
    assert not hasattr(tinyagent.errors, "ContextBudgetError")


def test_the_agent_stops_with_context_budget_and_never_sends_an_oversized_request(llm):
    recorder = Recorder(llm)
    agent = ReActAgent(recorder, registry(), parts=[BudgetedRequest(shop_budget(400))])
    result = agent.run("订单 88231 的扫地机不回充了，" + "麻烦尽快处理，" * 100 + "帮我退款")
    assert result.reason == "context_budget" and not result.ok
    assert result.answer == "抱歉，这段对话太长了，我已经跟不上了。请开始一段新的对话。"
    assert isinstance(result.trace.end, Stopped) and "over the context budget of 400" in result.trace.end.detail
    assert recorder.sent == []  # the first request did not fit: the model was never called
    assert "[Stopped: context_budget]" in result.trace.format("en")


def test_a_run_that_outgrows_the_budget_stops_before_the_call_that_would_pass_it(llm):
    recorder = Recorder(llm)
    budget = shop_budget(700)
    result = ReActAgent(recorder, registry(), parts=[BudgetedRequest(budget)]).run(QUESTIONS[3])  # the refund
    assert result.reason == "context_budget"
    assert recorder.sent and max(budget.count(m, t) for m, t in recorder.sent) <= 700
    assert "RF202606300001" not in result.answer


def test_a_stopped_turn_leaves_its_polite_answer_in_the_history(llm):
    budget = shop_budget(600)
    results = run_turns(ReActAgent(llm, registry(), parts=[BudgetedRequest(budget)]), [QUESTIONS[0], QUESTIONS[3]])
    assert results[1].reason == "context_budget"
    assert next_history(results[1])[-1] == {"role": "assistant", "content": results[1].answer}


# -- counting -------------------------------------------------------------------------------------------
def test_the_count_is_the_classroom_models_prompt_tokens_under_its_rule(llm):
    counter = classroom_counter()
    for protocol, agent_class in AGENTS.items():
        result = agent_class(llm, registry()).run(QUESTIONS[3])
        calls = result.trace.of_type(LlmCall)
        tools = agent_class(llm, registry()).tool_specs("en") if protocol == "function calling" else None
        for call in calls:
            assert request_tokens(list(call.messages), tools, counter) == call.usage["prompt_tokens"], protocol
        if tools:  # the conversation holds tool calls, and they count
            assert any(m.get("tool_calls") for m in calls[-1].messages)


def test_for_plain_messages_the_count_is_the_counters_chat_rule():
    messages = [{"role": "system", "content": "You help customers."},
                {"role": "user", "content": "订单 88231 到哪了？ Where is it?"}]
    for counter in (token_counter(), classroom_counter()):
        assert request_tokens(messages, None, counter) == counter.chat(messages)
        assert request_tokens([], None, counter) == counter.chat([])


def test_tool_calls_and_tools_add_their_text():
    counter = token_counter()
    call = {"id": "call_1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId":"88231"}'}}
    with_call = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    tools = [{"type": "function", "function": {"name": "queryOrder", "parameters": {"type": "object"}}}]
    base = counter.chat([{"role": "assistant", "content": ""}])
    assert request_tokens(with_call, None, counter) == base + counter.text("queryOrder") + counter.text(
        '{"orderId":"88231"}')
    assert request_tokens(with_call, tools, counter) == request_tokens(with_call, None, counter) + counter.text(
        json.dumps(tools, ensure_ascii=False))


# Messages as a chat request may hold them: text, no content, or a list of content parts (text and images).
_WORDS = st.text(alphabet="ab 7:{}退款\n.", max_size=12)
_PART = st.one_of(st.builds(lambda text: {"type": "text", "text": text}, _WORDS),
                  st.just({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}))
_MESSAGE = st.builds(
    lambda role, content, name: {"role": role, "content": content, **({"name": name} if name else {})},
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.one_of(st.none(), _WORDS, st.lists(_PART, max_size=5)),
    st.one_of(st.none(), st.sampled_from(["ana", "shop_bot"])),
)
# One budget per counter for every example: what it remembers of one message must not be taken for another's.
_BUDGETS = [ContextBudget(10**6, counter=counter) for counter in (token_counter(), classroom_counter())]


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGE, max_size=6))
def test_the_count_is_the_counters_chat_rule_for_text_and_content_parts(messages):
    for budget in _BUDGETS:
        counter = budget.counter
        assert request_tokens(messages, None, counter) == counter.chat(messages), counter.name
        assert budget.count(messages) == counter.chat(messages), counter.name


def test_content_parts_count_each_part_as_the_classroom_model_does(llm):
    # 600 words in parts: "hello" and "world" are a token each, not one "helloworld...". The earlier turn is over the
    # budget on its own, so it goes, and no request the server counts is over 700.
    counter = classroom_counter()
    parts = [{"type": "text", "text": word} for word in ["hello", "world"] * 300]
    history = [{"role": "user", "content": parts}, {"role": "assistant", "content": "Final Answer: ok"}]
    agent = ReActAgent(llm, registry(), parts=[BudgetedRequest(ContextBudget(700, counter=counter))])
    result = agent.run("Where is order 88231?", history=history)
    calls = result.trace.of_type(LlmCall)
    assert calls and result.reason == "final_answer"
    for call in calls:
        assert call.usage["prompt_tokens"] <= 700
        assert request_tokens(list(call.messages), None, counter) == call.usage["prompt_tokens"]


def test_content_the_budget_cannot_count_is_refused_not_sent_as_nothing():
    for content in ({"text": "hello"}, 12345678, ["hello"], [{"type": "text", "text": 5}]):
        messages = [{"role": "user", "content": "Where is order 88231?"}, {"role": "assistant", "content": content}]
        with pytest.raises(ValueError, match="role 'assistant' has content the context budget cannot count"):
            request_tokens(messages)
        with pytest.raises(ValueError, match="cannot count"):
            ContextBudget(700).fit(messages, request_index=0)


def test_called_tools_reads_text_actions_and_native_calls():
    messages = [
        {"role": "assistant", "content": "Thought: look\nAction: queryOrder\nAction Input: 88231"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "getCurrentTime", "arguments": "{}"}}]},
        {"role": "user", "content": "Action: applyRefund"},  # a user's text is no call
        {"role": "assistant", "content": "Thought: again\nAction: queryOrder\nAction Input: 88232"},
    ]
    assert called_tools(messages) == ["queryOrder", "getCurrentTime"]
    assert called_tools(messages, registry()) == ["queryOrder", "getCurrentTime"]


def test_a_budget_must_be_a_positive_whole_number():
    for bad in (0, -5, 2.5, True, "1000", None):
        with pytest.raises(ValueError, match="max_tokens"):
            ContextBudget(bad)


def test_the_summary_says_what_was_done(conversation):
    fitted = fit(conversation, 1000)
    line = fitted.summary()
    assert line.startswith(f"{fitted.tokens} of 1000 tokens (whole: {fitted.whole_tokens}); 4 tools offered")
    assert f"{fitted.dropped} turns dropped" in line


def test_without_a_budget_the_whole_conversation_is_sent():
    replies = iter([ChatResult("Thought: t\nAction: getCurrentTime\nAction Input: ", "stop"),
                    ChatResult("Thought: t\nFinal Answer: 19:05", "stop")])

    class Scripted:
        model = "scripted"

        def __init__(self):
            self.sent = []

        def chat(self, messages, **options):
            self.sent.append(list(messages))
            return next(replies)

    scripted = Scripted()
    result = ReActAgent(scripted, registry()).run("What time is it?", [{"role": "user", "content": "hi"},
                                                                      {"role": "assistant", "content": "Hello!"}])
    assert scripted.sent[-1] == result.messages[:-1] and result.answer == "19:05"


def test_a_budget_that_narrows_the_tool_list_keeps_what_another_part_added_to_the_prompt():
    # the budget rebuilt the system prompt for the tools it offers, and dropped lesson 25's fence rule from it
    from tinyagent import LlmCall, LlmClient, ReActAgent, fixed_clock
    from tinyagent.defences.fenced_data import FENCE_RULE, FencedData
    from tinyagent.memory.context_budget import BudgetedRequest, ContextBudget
    from tinyagent.memory.tool_filter import ToolFilter
    from tinyagent.shop import Shop, shop_registry
    from tinyagent.shop.tool_hints import SHOP_TOOL_HINTS

    clock = fixed_clock("2026-06-30T19:05:23")
    with Shop(":memory:", clock=clock) as shop:
        budget = ContextBudget(100_000, tool_filter=ToolFilter(SHOP_TOOL_HINTS))
        agent = ReActAgent(LlmClient.classroom(), shop_registry(shop, clock),
                           parts=[FencedData(), BudgetedRequest(budget)])
        result = agent.run("帮我看看订单 88231 的快递到哪了。")
    prompts = [call.messages[0]["content"] for call in result.trace.of_type(LlmCall)]
    assert prompts and all(prompt.endswith(FENCE_RULE["zh"]) for prompt in prompts)
    assert all("applyRefund" not in prompt for prompt in prompts)  # and the list is still the narrowed one


def test_a_worked_example_before_the_budget_leaves_the_current_turn_at_the_question(llm):
    # WithExample puts four example messages before the history: the question's place in run.messages pointed into
    # an earlier turn of what was built, the filter scored an Observation, and the refund was never offered.
    from tinyagent.protocols.constrained_decoding import WithExample

    questions = ["I ordered a floor washer last week, order 88232. Where is it now?", "What is your invoice policy?",
                 "My robot vacuum from order 88231 will not go back to its dock any more, please refund it."]
    with Shop(":memory:", clock=CLOCK) as shop:
        agent = ReActAgent(llm, shop_registry(shop, CLOCK), parts=[WithExample(), BudgetedRequest(shop_budget(4000))])
        history = next_history(run_turns(agent, questions[:2])[-1])
        run = agent.start(questions[2], history)
        result = run.finish()
        assert [r["refundId"] for r in shop.refunds()] == ["RF202606300001"]
        scores = ToolFilter(SHOP_TOOL_HINTS).scores(questions[2], agent.tools)
    assert "RF202606300001" in result.answer
    assert run.parts.request.fits and all(fit.selection.scores == scores for fit in run.parts.request.fits)


@pytest.mark.parametrize("protocol", AGENTS)
def test_a_fenced_observation_is_folded_inside_its_fence(llm, protocol):
    # with FencedData before the budget, a fenced Observation was folded as plain text: the fold mark before the
    # fence, the JSON cut after 60 characters with its keys gone, and the closing </data> cut off
    from tinyagent.defences.fenced_data import FencedData, unfence
    from tinyagent.memory.observation_folding import strip_fold_mark

    recorder = Recorder(llm)
    agent = AGENTS[protocol](recorder, registry(), parts=[FencedData(), BudgetedRequest(shop_budget(2500))])
    results = run_turns(agent, QUESTIONS[:10])
    assert [task.name for task, r in zip(LONG_SESSION, results) if not task.answered(r.answer)] == []
    observations = [m["content"].removeprefix("Observation: ") for messages, _ in recorder.sent for m in messages
                    if m["role"] == "tool" or (m["content"] or "").startswith("Observation: ")]
    fenced = [unfence(text) for text in observations]
    assert observations and None not in fenced  # every one still a whole fence
    folded = [inside for inside, _ in fenced if is_folded(inside)]
    assert folded and all(isinstance(json.loads(strip_fold_mark(inside)), dict) for inside in folded)


CUSTOMER_OBSERVATION = [
    {"role": "system", "content": "You are a shop assistant."},
    {"role": "user", "content": "Where is order 88232?"},
    {"role": "assistant", "content": "Thought: look\nAction: queryOrder\nAction Input: 88232"},
    {"role": "user", "content": "Observation: " + json.dumps({"orderId": "88232", "trackingNo": "YT2468013579",
                                                              "status": "运输中", "note": "x" * 300})},
    {"role": "assistant", "content": "Thought: done\nFinal Answer: It is in transit, tracking YT2468013579."},
    {"role": "user", "content": "Observation: my parcel arrived with a cracked screen, order 88232. I want a refund."},
    {"role": "assistant", "content": "Thought: ok\nFinal Answer: I am sorry; I have noted the cracked screen on 88232."},
    {"role": "user", "content": "What did I tell you was wrong with my parcel?"},
]


def test_a_customers_message_that_starts_with_observation_is_a_turn_of_its_own():
    # it was taken for a tool result: the two turns merged, and shortening kept the first request with the second
    # turn's answer, the customer's words gone
    customer, answer = CUSTOMER_OBSERVATION[5]["content"], CUSTOMER_OBSERVATION[6]["content"]
    fits = []
    for tokens in range(request_tokens(CUSTOMER_OBSERVATION), 0, -5):
        try:
            fits.append(ContextBudget(tokens).fit(CUSTOMER_OBSERVATION))
        except ContextBudgetError:
            break
    for fitted in fits:
        sent = [m["content"] for m in fitted.messages]
        assert (customer in sent) == (answer in sent), fitted.summary()  # one turn: kept or dropped together
    assert any(fitted.dropped == 1 and customer in [m["content"] for m in fitted.messages] for fitted in fits)


def test_a_question_that_starts_with_observation_stays_the_current_turns_request():
    # the run's own question is the customer's: FencedData fenced it as data, and the budget folded it
    from tinyagent.defences.fenced_data import FencedData

    question = "Observation: " + "my order 88231 has not arrived, and I have waited for it for a long time. " * 4
    replies = iter([ChatResult("Thought: t\nAction: searchKnowledge\nAction Input: 退货 政策", "stop"),
                    ChatResult("Thought: t\nAction: queryOrder\nAction Input: 88231", "stop"),
                    ChatResult("Thought: t\nFinal Answer: It is on its way.", "stop")])

    class Scripted:
        model = "scripted"

        def chat(self, messages, **options):
            return next(replies)

    run = ReActAgent(Scripted(), registry(), parts=[FencedData(), BudgetedRequest(ContextBudget(10_000))])
    result = run.run(question)
    assert result.answer == "It is on its way."
    sent = [call.messages for call in result.trace.of_type(LlmCall)]
    assert len(sent) == 3 and all(messages[1]["content"] == question for messages in sent)
    messages = result.messages[:-1]  # the question, two steps and their Observations
    fitted = ContextBudget(request_tokens(messages) - 1).fit(messages, request_index=1)
    assert fitted.messages[1]["content"] == question and fitted.folded == 1  # the first Observation instead


@pytest.mark.parametrize("agent_class", [ReActAgent, FunctionCallingAgent], ids=["text", "function"])
def test_the_tool_filter_never_offers_a_tool_a_part_before_it_took_away(agent_class):
    # Lesson 25's least privilege offered the logistics skill's tools; the budget's filter chose among the agent's
    # whole registry and offered applyRefund again, and the refund was written.
    from tinyagent.architectures.skills import shop_skills
    from tinyagent.defences.least_privilege import OfferOnly

    shop = Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))
    budget = BudgetedRequest(ContextBudget(100_000, tool_filter=ToolFilter(SHOP_TOOL_HINTS)))
    agent = agent_class(LlmClient.classroom(), shop_registry(shop, fixed_clock("2026-06-30T19:05:23")),
                        parts=[OfferOnly(shop_skills()["logistics"]), budget])  # the order the budget asks for
    result = agent.run("我上周买的扫地机不回充了，修不好我想退。订单号 88231。")
    assert [call.name for call in result.trace.tool_calls] == ["queryOrder"] and shop.refunds() == []
