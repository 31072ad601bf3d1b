"""tinyagent.frameworks (lesson 20): each framework's adapter runs the refund with the shop's real tools, and
what it reports (model calls, requests, tokens) is what the classroom model actually received and returned."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.framework_shop import REFUND_ID, REFUND_REQUEST, need
from tinyagent.classroom.server import ClassroomServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEYS = ("tinyagent", "tinyagent-function", "langchain", "langchain-classic", "llama-index", "llama-index-react", "smolagents", "pydantic-ai",
        "agents-sdk")


@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


def frameworks():
    need("langchain")  # the extra as a whole: every adapter below needs it
    from tinyagent import frameworks

    if not all(frameworks.available(key) for key in KEYS):
        need("no such framework: the frameworks extra is incomplete")
    return frameworks


def test_the_table_lists_every_adapter():
    assert tuple(frameworks().FRAMEWORKS) == KEYS


@pytest.mark.parametrize("key", KEYS)
def test_each_framework_refunds_and_the_wire_holds_exactly_what_the_server_received(classroom, key):
    fw = frameworks()
    with classroom.recording() as log:
        run = fw.run_framework(key, REFUND_REQUEST, base_url=classroom.base_url)
    assert run.error is None and REFUND_ID in run.answer
    assert [(r["orderId"], r["refundId"]) for r in run.refunds] == [("88231", REFUND_ID)]
    assert [u.name for u in run.tool_uses].count("applyRefund") == 1
    assert not any(u.error for u in run.tool_uses)
    # the client-side record and the server's log agree, call for call and body for body
    assert run.model_calls == len(log) >= 4
    assert [c.body for c in run.calls] == [r.body for r in log]
    assert run.first_request_size > 500  # a system prompt or a tool list, and the question


@pytest.mark.parametrize("key", ["tinyagent", "langchain", "pydantic-ai"])
def test_a_request_that_timed_out_is_counted_and_marked_unanswered(key):
    fw = frameworks()
    with ClassroomServer(tokens_per_second=40) as slow, slow.recording() as log:  # slower than the client waits
        run = fw.run_framework(key, REFUND_REQUEST, base_url=slow.base_url, timeout=1.0, max_steps=4)
    assert run.model_calls == len(log) >= 1
    assert [c.body for c in run.calls] == [r.body for r in log]
    assert [c.answered for c in run.calls] == [True] * (len(log) - 1) + [False]
    assert not run.calls[-1].usage_returned and run.calls[-1].asked == ()


def test_the_wire_keeps_nothing_of_a_request_once_it_is_gone():
    import gc

    import httpx

    from tinyagent.frameworks.wire import Wire

    wire = Wire()
    with (ClassroomServer(tokens_per_second=40) as slow, wire.client(timeout=0.5) as client,
          pytest.raises(httpx.TimeoutException)):
        client.post(slow.chat_url, json={"model": "classroom", "messages": [{"role": "user", "content": "hi"}]})
    gc.collect()
    assert [c.answered for c in wire.calls] == [False] and len(wire._pending) == 0


@pytest.mark.parametrize("key", ["langchain", "smolagents", "pydantic-ai", "agents-sdk"])
def test_tokens_are_the_usage_the_classroom_model_returned(classroom, key):
    from openai import OpenAI

    fw = frameworks()
    run = fw.run_framework(key, REFUND_REQUEST, base_url=classroom.base_url)
    assert run.usage_known
    # send the first request again, unchanged, with the official client: the same prompt costs the same
    body = dict(run.calls[0].body)
    body.pop("stream", None)
    body.pop("stream_options", None)
    again = OpenAI(base_url=classroom.base_url, api_key="x", max_retries=0).chat.completions.create(**body)
    assert run.calls[0].prompt_tokens == again.usage.prompt_tokens > 0
    assert run.prompt_tokens > run.calls[0].prompt_tokens  # later rounds are counted too


@pytest.mark.parametrize("key", ["langchain-classic", "llama-index"])
def test_a_framework_that_streams_without_usage_says_tokens_are_unknown(classroom, key):
    run = frameworks().run_framework(key, REFUND_REQUEST, base_url=classroom.base_url)
    assert run.calls[0].body.get("stream") is True
    assert not run.usage_known and run.tokens == 0


def test_a_framework_that_raises_gives_a_run_with_the_error(classroom):
    run = frameworks().run_framework("pydantic-ai", REFUND_REQUEST, base_url=classroom.base_url,
                                     model="no-such-model")
    assert run.answer is None and "404" in run.error and "no-such-model" in run.error
    assert run.refunds == []


def test_the_loop_model_hits_each_frameworks_limit_and_writes_no_refund(classroom):
    fw = frameworks()
    for key in ("langchain", "smolagents", "agents-sdk"):
        run = fw.run_framework(key, REFUND_REQUEST, base_url=classroom.base_url, model="classroom-loop",
                               max_steps=3)
        assert run.refunds == []
        assert 3 <= run.model_calls <= 5, (key, run.model_calls)  # stopped near its limit, not run away


def test_an_unknown_framework_names_the_known_ones():
    with pytest.raises(ValueError, match="langchain, langchain-classic"):
        frameworks().run_framework("autogen", "hi", base_url="http://127.0.0.1:9")
    # The suite names the framework before it runs one: a mistyped key was a bare KeyError there.
    from tinyagent.frameworks.suite import evaluate_framework

    for call in (lambda: evaluate_framework("langchian", base_url="http://127.0.0.1:9"),
                 lambda: frameworks().available("langchian"), lambda: frameworks().framework_name("langchian")):
        with pytest.raises(ValueError, match="no framework 'langchian': choose one of tinyagent, "):
            call()


def test_the_suite_through_a_framework_is_graded_by_lesson_18s_checks(classroom):
    from tinyagent.frameworks.suite import evaluate_framework

    right = evaluate_framework("langchain", base_url=classroom.base_url, names=["refund", "cancelled order"],
                               langs=["en"])
    assert [r.passed for r in right.results] == [True, True]
    wrong = evaluate_framework("langchain", base_url=classroom.base_url, model="classroom-loop",
                               names=["refund"], langs=["en"], max_steps=3)
    (failed,) = wrong.results
    assert not failed.passed and not failed.checks["database"].passed
    assert "was called" in failed.checks["tools"].detail  # the repeated queryOrder, named


@pytest.mark.parametrize("key, protocol", [("tinyagent", "text"), ("tinyagent-function", "function")])
def test_a_tinyagent_run_its_step_cap_ended_is_graded_as_lesson_18_grades_it(classroom, key, protocol):
    # The step cap's apology is the run's answer, but not the model's: the suite must not grade it as one.
    from tinyagent import LlmClient
    from tinyagent.evaluation import evaluate
    from tinyagent.frameworks.suite import evaluate_framework

    chosen = {"names": ["refund"], "langs": ["en"], "max_steps": 3}
    (suite,) = evaluate_framework(key, base_url=classroom.base_url, model="classroom-loop", **chosen).results
    (own,) = evaluate(LlmClient(classroom.chat_url, None, "classroom-loop"), protocol, progress=False,
                      **chosen).results
    assert suite.reason == own.reason == "max_steps"
    assert suite.checks["answer"].passed is own.checks["answer"].passed is False
    assert "ended with max_steps" in suite.checks["answer"].detail


def test_a_tinyagent_run_that_could_not_reach_the_model_is_graded_as_llm_error():
    from tinyagent.frameworks.suite import outcome_of

    with ClassroomServer(tokens_per_second=40) as slow:  # the reply takes longer than the client waits
        run = frameworks().run_framework("tinyagent", REFUND_REQUEST, base_url=slow.base_url, timeout=1.0)
    assert run.error is None and run.answer  # the loop's polite message, handed back as its answer
    assert run.reason == outcome_of(run).reason == "llm_error"


@pytest.mark.parametrize("key", ["langchain-classic", "smolagents"])
def test_a_framework_that_answers_at_its_step_cap_says_it_stopped_there(classroom, key):
    fw = frameworks()
    capped = fw.run_framework(key, REFUND_REQUEST, base_url=classroom.base_url, model="classroom-loop", max_steps=3)
    assert capped.error is None and capped.answer  # langchain-classic's stop sentence, smolagents' last reply
    assert capped.reason == "max_steps"
    done = fw.run_framework(key, REFUND_REQUEST, base_url=classroom.base_url)
    assert done.reason == "final_answer" and REFUND_ID in done.answer


def test_importing_the_adapters_loads_no_framework():
    code = ("import sys, tinyagent.frameworks, tinyagent.frameworks.suite; "
            "print([m for m in ('langchain', 'langchain_core', 'llama_index', 'smolagents', 'pydantic_ai', "
            "'agents', 'openai') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# What each framework does with a tool that raises (tool_errors="raise"): lesson 20's table of hidden failures.
RAISES_TO_THE_CALLER = ("langchain", "langchain-classic", "pydantic-ai")
HANDS_IT_TO_THE_MODEL = ("llama-index", "llama-index-react", "agents-sdk", "smolagents")


@pytest.mark.parametrize("key", RAISES_TO_THE_CALLER + HANDS_IT_TO_THE_MODEL)
def test_a_raising_tool_either_reaches_the_caller_or_is_handed_to_the_model(classroom, key):
    run = frameworks().run_framework(key, "Where is the parcel for order 99999?", base_url=classroom.base_url,
                                     tool_errors="raise", max_steps=3)
    assert run.tool_uses[0].name == "queryOrder" and run.tool_uses[0].error
    if key in RAISES_TO_THE_CALLER:
        assert run.answer is None and run.error.startswith("ToolFailed")
        assert run.model_calls == 1  # nothing went back to the model
    else:
        assert run.error is None and run.answer  # the caller gets an answer, and no word of the exception
        assert any("订单不存在" in str(c.body) for c in run.calls[1:])  # the model was shown it instead


def test_the_agents_sdk_wrapped_tool_error_is_read_as_the_tools_error(classroom):
    run = frameworks().run_framework("agents-sdk", "Where is the parcel for order 99999?",
                                     base_url=classroom.base_url, tool_errors="raise")
    assert "could not find order 99999" in run.answer and "None" not in run.answer


def test_a_request_is_read_for_its_prompt_tools_and_observations(classroom):
    from tinyagent.frameworks.reading import message_roles, observation_place, system_prompt, tool_listing

    fw = frameworks()
    seen = {}
    for key in ("langchain", "langchain-classic", "llama-index-react", "agents-sdk"):
        run = fw.run_framework(key, REFUND_REQUEST, base_url=classroom.base_url)
        first, last = run.calls[0], run.calls[-1]
        seen[key] = (bool(system_prompt(first)), tool_listing(first), observation_place(first),
                     observation_place(last), message_roles(last).split()[0])
    assert seen == {
        "langchain": (False, "`tools` field: 5 JSON Schemas", "-", "role 'tool' messages", "user"),
        "langchain-classic": (False, "user message: 'name(text) - description' lines", "-",
                              "inside the one user message (the scratchpad)", "user"),
        "llama-index-react": (True, "system prompt: '> Tool Name: … Tool Args: {…}' blocks", "-",
                              "user messages 'Observation: …'", "system"),
        "agents-sdk": (True, "`tools` field: 5 JSON Schemas", "-", "role 'tool' messages", "system"),
    }


def test_a_tool_error_in_a_frameworks_own_words_is_read_as_the_tools_error():
    from tinyagent.classroom.conversation import Step

    wrapped = 'An error occurred while running the tool. Please try again. Error: {"error":"订单不存在：99999"}'
    assert Step("queryOrder", "99999", wrapped).error == wrapped
    # JSON that merely mentions the words is a result, not a failure
    assert Step("searchKnowledge", "q", '{"results":[{"content":"an error occurred in shipping"}]}').error is None
    assert Step("queryOrder", "88231", "Order 88231 is signed for.").error is None


def test_every_client_the_wire_makes_checks_certificates_with_one_context():
    # Read once per process (tls_context): a fresh context per client read the whole CA bundle for every run.
    import ssl

    from tinyagent.frameworks.wire import Wire, tls_context

    wire = Wire()
    for client in (wire.client(), wire.async_client(), Wire().client()):
        context = client._transport._pool._ssl_context
        assert context is tls_context()
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_tinyagents_session_skips_proxies_on_this_machine_only():
    # As LlmClient's own session: a proxy never applies to loopback, and a real provider is reached as the
    # environment says (HTTPS_PROXY behind a company's proxy), as the other frameworks' httpx clients reach it.
    from tinyagent.frameworks.wire import Wire

    assert Wire().requests_session("http://127.0.0.1:8000/v1").trust_env is False
    assert Wire().requests_session("https://api.deepseek.com/v1").trust_env is True


# -- the order of the tool uses ---------------------------------------------------------------------------------
SLOW_TOOL = "getCurrentTime"  # the classroom model asks for it first, beside searchKnowledge, in one reply


@pytest.mark.parametrize("key", KEYS)
def test_tools_asked_in_one_reply_are_listed_in_the_models_order_whichever_finishes_first(classroom, key,
                                                                                          monkeypatch):
    """LangChain, LlamaIndex, smolagents, pydantic-ai and the Agents SDK run one reply's tool calls at once and
    log them as they finish. The first of two asked together is made to finish last: the run still lists them
    as the model asked, so lesson 20's table reads the same on every run."""
    import time

    from tinyagent.frameworks.shop_functions import ToolLog

    run_tool = ToolLog.run

    def slow_first(self, registry, name, text):
        if name == SLOW_TOOL:
            time.sleep(0.3)
        return run_tool(self, registry, name, text)

    monkeypatch.setattr(ToolLog, "run", slow_first)
    run = frameworks().run_framework(key, REFUND_REQUEST, base_url=classroom.base_url)
    assert [u.name for u in run.tool_uses] == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    asked = [name for call in run.calls for name, _ in call.asked if name != "final_answer"]
    assert asked in ([], [u.name for u in run.tool_uses])  # a ReAct framework's replies are text: none asked


def use(name, text=""):
    from tinyagent.evaluation.grading import ToolUse

    return ToolUse(name, text, False, "ok")


def test_uses_are_put_in_the_asked_order_by_name_and_then_by_arguments():
    from tinyagent.frameworks.shop_functions import in_asked_order

    finished = [use("queryOrder", "1"), use("searchKnowledge", "refund"), use("getCurrentTime")]
    asked = [("queryOrder", '{"orderId": "1"}'), ("getCurrentTime", "{}"), ("searchKnowledge", '{"query": "x"}')]
    assert [u.name for u in in_asked_order(finished, asked)] == ["queryOrder", "getCurrentTime", "searchKnowledge"]
    # two calls of one tool in one reply are told apart by their arguments: one value, or several
    two = [use("queryOrder", "2"), use("queryOrder", "1")]
    asked = [("queryOrder", '{"orderId": "1"}'), ("queryOrder", '{"orderId": 2}')]
    assert [u.input for u in in_asked_order(two, asked)] == ["1", "2"]
    second = use("applyRefund", '{"orderId": "2", "reason": "b"}')
    first = use("applyRefund", '{"orderId": "1", "reason": "a"}')
    asked = [("applyRefund", '{"reason": "a", "orderId": "1"}'), ("applyRefund", '{"orderId": "2", "reason": "b"}')]
    assert in_asked_order([second, first], asked) == [first, second]


def test_a_use_no_reply_asked_for_stays_after_and_an_asked_call_that_never_ran_is_passed_over():
    from tinyagent.frameworks.shop_functions import in_asked_order

    uses = [use("searchKnowledge", "b"), use("queryOrder", "1"), use("searchKnowledge", "a")]
    asked = [("applyRefund", "{}"), ("queryOrder", "not JSON"), ("searchKnowledge", '{"query": "a"}')]
    assert [(u.name, u.input) for u in in_asked_order(uses, asked)] == [
        ("queryOrder", "1"), ("searchKnowledge", "a"), ("searchKnowledge", "b")]
    assert in_asked_order(uses, []) == uses  # text replies (a ReAct framework): the log's own order


def function_call(name, arguments, **more):
    return {**more, "function": {"name": name, "arguments": arguments}}


def test_the_wire_reads_the_tool_calls_of_every_kind_of_reply():
    import json

    from tinyagent.frameworks.wire import tool_calls_in

    def sse(*events):
        return "".join(f"data: {json.dumps(event)}\n\n" for event in events).encode() + b"data: [DONE]\n\n"

    def delta(*calls):
        return {"choices": [{"delta": {"tool_calls": list(calls)}}]}

    expected = (("getCurrentTime", "{}"), ("searchKnowledge", '{"query": "x"}'))
    message = {"role": "assistant", "tool_calls": [function_call(*expected[0], id="a", type="function"),
                                                   function_call(*expected[1], id="b", type="function")]}
    assert tool_calls_in(json.dumps({"choices": [{"message": message}]}).encode()) == expected
    # streamed: each call's name once, its arguments in pieces, the two calls' deltas interleaved
    streamed = sse(delta(function_call("getCurrentTime", "", index=0)),
                   delta(function_call("searchKnowledge", '{"que', index=1)),
                   delta({"index": 0, "function": {"arguments": "{}"}}),
                   delta({"index": 1, "function": {"arguments": 'ry": "x"}'}}),
                   {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    assert tool_calls_in(streamed) == expected
    items = [{"type": "reasoning"}] + [{"type": "function_call", "name": n, "arguments": a} for n, a in expected]
    assert tool_calls_in(json.dumps({"output": items}).encode()) == expected
    assert tool_calls_in(sse({"type": "response.created", "response": {"output": []}},
                             {"type": "response.completed", "response": {"output": items}})) == expected
    text_only = {"choices": [{"message": {"role": "assistant", "content": "Thought: ..."}}]}
    for reply in (json.dumps(text_only).encode(), b"", b"<html>502</html>", b"[1, 2]", b'{"choices": "x"}'):
        assert tool_calls_in(reply) == ()


@pytest.mark.parametrize("reply", [
    {"usage": {"prompt_tokens": "many", "completion_tokens": None}, "choices": {"0": {}}},
    {"usage": [1, 2], "response": "done", "choices": [{"delta": "text"}]},
    {"choices": [{"message": {"tool_calls": {"name": "queryOrder"}}}]},
    {"choices": [{"message": {"tool_calls": ["queryOrder", None, {"function": "queryOrder"}]}}]},
    {"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {"name": 7, "arguments": {"orderId": 1}}}]}}]},
    {"response": {"output": ["text", None, {"type": "function_call", "name": None, "arguments": {"a": 1}}]}},
    {"choices": 5, "output": {"type": "function_call"}},
    {"usage": {"prompt_tokens": float("inf"), "completion_tokens": float("nan")}},  # json.loads reads both
])
def test_a_reply_of_the_wrong_shape_is_read_as_far_as_it_goes_and_never_stops_the_framework(reply):
    """The wire reads every reply in the framework's own HTTP hook: an error there would fail the run."""
    import json

    from tinyagent.frameworks.wire import Wire, tool_calls_in, usage_in

    content = json.dumps(reply).encode()
    usage = usage_in(content)
    assert usage is None or all(isinstance(count, int) for count in usage)
    for name, arguments in tool_calls_in(content):
        assert isinstance(name, str) and isinstance(arguments, str)
    wire = Wire()
    wire._answered(wire._sent_body("/v1/chat/completions", b'{"model": "m"}'), content)
    assert len(wire.calls) == 1


def test_a_reply_nested_too_deep_to_parse_is_read_as_holding_nothing():
    from tinyagent.frameworks.wire import Wire, tool_calls_in, usage_in

    deep = b"[" * 100_000 + b"]" * 100_000  # RecursionError in json.loads, inside the framework's HTTP hook
    assert usage_in(deep) is None and tool_calls_in(deep) == ()
    wire = Wire()
    wire._answered(wire._sent_body("/v1/chat/completions", b'{"model": "m"}'), b"data: " + deep + b"\n\n")
    assert len(wire.calls) == 1


def test_odd_fields_keep_what_they_say():
    import json

    from tinyagent.frameworks.wire import tool_calls_in, usage_in

    assert usage_in(b'{"usage": {"prompt_tokens": "12", "completion_tokens": "x"}}') == (12, 0)
    streamed = {"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {"name": "queryOrder",
                                                                                 "arguments": {"orderId": 1}}}]}}]}
    assert tool_calls_in(json.dumps(streamed).encode()) == (("queryOrder", '{"orderId": 1}'),)
