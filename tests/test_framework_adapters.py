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
