"""`serve` speaks OpenAI's Chat Completions API over the shop agent (serving/openai_chat.py): the official
`openai` client, which nobody here wrote, gets the agent's answer plain and streamed, and the trace beside it."""

from __future__ import annotations

import sqlite3

import pytest
import requests

from tests.serving_process import PATIENCE, serve_process

openai = pytest.importorskip("openai")

LOGISTICS = "帮我看看订单 88231 的快递到哪了。"
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with serve_process(tmp_path_factory.mktemp("serve-openai"), "--auto-approve") as running:
        yield running


@pytest.fixture(scope="module")
def client(service):
    return openai.OpenAI(base_url=service.url + "/v1", api_key="unused", timeout=PATIENCE, max_retries=0)


def test_the_openai_client_gets_the_agents_answer_and_its_trace(client):
    completion = client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": LOGISTICS}])
    answer = completion.choices[0].message.content
    assert "SF1234567890" in answer and "已签收" in answer
    assert completion.choices[0].finish_reason == "stop" and completion.model == "tinyagent-shop"
    extra = completion.model_extra["tinyagent"]
    assert extra["reason"] == "final_answer" and extra["rounds"] == 3
    tools = [event["name"] for event in extra["trace"]["events"] if event["type"] == "tool_call"]
    assert tools == ["queryOrder", "queryLogistics"]
    assert completion.usage.prompt_tokens > 0 and completion.usage.total_tokens > completion.usage.prompt_tokens


def test_the_streamed_answer_is_the_same_answer_in_pieces(client):
    plain = client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": LOGISTICS}])
    chunks = list(client.chat.completions.create(model="tinyagent-shop", stream=True,
                                                 stream_options={"include_usage": True},
                                                 messages=[{"role": "user", "content": LOGISTICS}]))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 1 and "".join(pieces) == plain.choices[0].message.content
    finished = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finished] == ["stop"]
    assert finished[0].model_extra["tinyagent"]["reason"] == "final_answer"
    assert chunks[-1].usage.total_tokens == plain.usage.total_tokens  # the same run, counted the same way


def test_earlier_messages_are_the_history_the_agent_reads(client):
    history = [{"role": "system", "content": "You are a pirate."},  # not passed on: the agent keeps its own prompt
               {"role": "user", "content": "你好"}, {"role": "assistant", "content": "您好！请问有什么可以帮您？"},
               {"role": "user", "content": LOGISTICS}]
    completion = client.chat.completions.create(model="tinyagent-shop", messages=history)
    first = next(e for e in completion.model_extra["tinyagent"]["trace"]["events"] if e["type"] == "llm_call")
    sent = [(m["role"], m["content"]) for m in first["messages"]]
    assert sent[1:] == [("user", "你好"), ("assistant", "您好！请问有什么可以帮您？"), ("user", LOGISTICS)]
    assert "pirate" not in sent[0][1]


def test_a_refund_through_the_chat_endpoint_is_written_once_and_answered(client, service):
    completion = client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": REFUND}])
    assert "RF202606300001" in completion.choices[0].message.content
    with sqlite3.connect(service.folder / "shop.sqlite3") as db:
        assert [row[0] for row in db.execute("SELECT order_id FROM refunds")] == ["88231"]


def test_the_models_list_names_the_one_model(client):
    assert [model.id for model in client.models.list()] == ["tinyagent-shop"]


@pytest.mark.parametrize("options, error, says", [
    ({"model": "gpt-4o"}, "NotFoundError", "not served here"),
    ({"tools": [{"type": "function", "function": {"name": "x", "parameters": {"type": "object"}}}]},
     "BadRequestError", "its own tools"),
    ({"n": 2}, "BadRequestError", "one answer per request"),
    ({"response_format": {"type": "json_object"}}, "BadRequestError", "answers in text"),
    ({"messages": [{"role": "assistant", "content": "hi"}]}, "BadRequestError", "customer's question"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "BadRequestError", "must be text"),
])
def test_a_request_the_agent_cannot_honour_is_a_json_4xx_that_says_why(client, options, error, says):
    body = {"model": "tinyagent-shop", "messages": [{"role": "user", "content": LOGISTICS}], **options}
    with pytest.raises(getattr(openai, error)) as raised:
        client.chat.completions.create(**body)
    assert says in raised.value.body["message"]


def test_the_chat_endpoint_is_guarded_like_the_others(service):
    body = {"model": "tinyagent-shop", "messages": [{"role": "user", "content": LOGISTICS}]}
    url = service.url + "/v1/chat/completions"
    cross_site = requests.post(url, json=body, headers={"Origin": "https://evil.example"}, timeout=PATIENCE)
    assert cross_site.status_code == 403 and cross_site.json()["error"]["code"] == "cross_site"
    as_form = requests.post(url, data="model=tinyagent-shop", timeout=PATIENCE,
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert as_form.status_code == 415
    rebinding = requests.post(url, json=body, headers={"Host": "evil.example"}, timeout=PATIENCE)
    assert rebinding.status_code == 403
    unknown = requests.post(url, json={**body, "query": "x"}, timeout=PATIENCE)
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_field"


@pytest.mark.parametrize("options", [
    {"reasoning_effort": "low"}, {"service_tier": "auto"}, {"prompt_cache_key": "course-42"}, {"logit_bias": {}},
    {"logprobs": False}, {"modalities": ["text"]}, {"temperature": 0, "top_p": 1, "seed": 7},
    {"stop": "Observation:"}, {"stop": ["Observation:"]}, {"metadata": {"class": "4b"}, "store": False},
])
def test_fields_that_do_not_change_what_is_asked_are_taken_and_ignored(client, options):
    completion = client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": LOGISTICS}],
                                                **options)
    assert "SF1234567890" in completion.choices[0].message.content
    assert completion.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("options, code", [
    ({"logit_bias": {"1734": 5}}, "logit_bias_not_supported"),
    ({"logprobs": True}, "logprobs_not_supported"),
    ({"logprobs": True, "top_logprobs": 3}, "logprobs_not_supported"),
    ({"modalities": ["text", "audio"]}, "modalities_not_supported"),
    ({"max_tokens": 0}, "bad_max_tokens"),
    ({"max_completion_tokens": "12"}, "bad_max_tokens"),
    # Taken and not used, but a client's mistake in one is said, as any model's server says it (it was a 200).
    ({"temperature": "hot"}, "bad_temperature"),
    ({"top_p": True}, "bad_top_p"),
    ({"seed": 1.5}, "bad_seed"),
    ({"stop": {"a": 1}}, "bad_stop"),
    ({"stop": ["Observation:", 3]}, "bad_stop"),
    ({"stream_options": "x"}, "bad_stream_options"),
    ({"metadata": ["x"]}, "bad_metadata"),
    ({"store": "yes"}, "bad_store"),
    # Python's True == 1 and False == 0: these passed as n 1 and as no log probabilities
    ({"n": True}, "n_not_supported"),
    ({"logprobs": 0}, "logprobs_not_supported"),
    ({"logprobs": False, "top_logprobs": False}, "logprobs_not_supported"),
    # OpenAI's API refuses top_logprobs of any value, 0 too, without "logprobs": true (as the classroom model does);
    # both were taken here
    ({"top_logprobs": 0, "logprobs": False}, "logprobs_not_supported"),
    ({"top_logprobs": 0}, "logprobs_not_supported"),
])
def test_fields_that_ask_for_what_the_agent_cannot_give_are_refused_by_name(client, options, code):
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": LOGISTICS}],
                                       **options)
    assert raised.value.body["code"] == code
    assert next(iter(options)).split("_")[0] in raised.value.body["message"]


def test_top_logprobs_without_logprobs_true_is_a_400_naming_it(client):
    # the 400 says which field to leave out, as OpenAI's and the classroom model's do
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": LOGISTICS}],
                                       top_logprobs=0, logprobs=False)
    assert raised.value.status_code == 400 and "top_logprobs" in raised.value.body["message"]


def test_max_tokens_bounds_the_answer_the_client_reads(client):
    from tinyagent.classroom.tokens import count_tokens

    whole = client.chat.completions.create(model="tinyagent-shop", messages=[{"role": "user", "content": LOGISTICS}])
    answer = whole.choices[0].message.content
    assert whole.choices[0].finish_reason == "stop" and count_tokens(answer) > 5
    for limit in (1, 5):
        cut = client.chat.completions.create(model="tinyagent-shop", max_tokens=limit,
                                             messages=[{"role": "user", "content": LOGISTICS}])
        text = cut.choices[0].message.content
        assert cut.choices[0].finish_reason == "length"
        assert count_tokens(text) == limit and answer.startswith(text)
    roomy = client.chat.completions.create(model="tinyagent-shop", max_completion_tokens=count_tokens(answer),
                                           messages=[{"role": "user", "content": LOGISTICS}])
    assert roomy.choices[0].message.content == answer and roomy.choices[0].finish_reason == "stop"
    chunks = list(client.chat.completions.create(model="tinyagent-shop", max_tokens=5, stream=True,
                                                 messages=[{"role": "user", "content": LOGISTICS}]))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert count_tokens(streamed) == 5 and answer.startswith(streamed)
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400", "-1E999"])
def test_a_number_json_does_not_allow_is_a_json_400_naming_it(service, constant):
    # Python's json reads NaN; the temperature it sat in is unused, so it was accepted: JSON (and OpenAI's API) has not.
    body = ('{"model": "tinyagent-shop", "messages": [{"role": "user", "content": "hi"}], '
            f'"temperature": {constant}}}')
    answer = requests.post(service.url + "/v1/chat/completions", data=body, timeout=PATIENCE,
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    # 1e400 is JSON's grammar, but Python reads it as inf, and an answer that echoed it would say Infinity
    said = "is not JSON" if "e" not in constant.lower() else "is beyond a float's range"
    assert error["code"] == "malformed_json" and f"{constant} {said}" in error["message"]


@pytest.mark.parametrize(("body", "code"), [
    (b"", "empty_body"),
    (b'{"model": "tinyagent-shop", "messages": [{"role": "user", "content": "hi"}], "seed": ' + b"7" * 5000 + b"}",
     "number_too_long"),
    (b'{"model": "tinyagent-shop", "messages": [{"role": "user", "content": "hi\\u0000"}]}', "control_character"),
    (('{"model": "tinyagent-shop", "messages": [{"role": "user", "content": "' + "x" * 4001 + '"}]}').encode(),
     "query_too_long"),
])
def test_a_chat_clients_mistake_is_told_in_the_chat_requests_own_terms(service, body, code):
    # These answers once asked for a "query" field, which a chat request has not (the agent's own routes have it)
    answer = requests.post(service.url + "/v1/chat/completions", data=body, timeout=PATIENCE,
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code, answer.text
    message = answer.json()["error"]["message"]
    assert '"query"' not in message and ("messages" in message or "the last user message" in message), message
