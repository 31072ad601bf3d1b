"""The shop agent as an OpenAI-compatible chat model: `POST /v1/chat/completions` and `GET /v1/models`.

Any client or chat UI that speaks OpenAI's Chat Completions API (the official `openai` package, LangChain's
`ChatOpenAI`, a chat front end pointed at a base URL) can then talk to the shop agent: the conversation goes in as
`messages`, the agent's final answer comes back as the assistant's message, and the whole trace rides along in an
extra field, `tinyagent` (reason, rounds, trace), which such clients keep and ignore.

What the endpoint is, and is not:

* Stateless, as OpenAI's API is: the conversation is the `messages` the client sends. The last one is the
  customer's question (a `user` message); earlier `user` and `assistant` messages are the history the agent
  reads. `system` and `developer` messages are not passed on: the agent keeps its own prompt and tools.
* One model, `tinyagent-shop`: the shop agent with its own tools. A request that brings tools of its own, asks
  for several choices or for a response format is refused with a 400 that says so (it would be answered as if it
  had been honoured, otherwise).
* `max_tokens` (or `max_completion_tokens`) bounds the answer the client reads: cut after that many tokens by the
  classroom model's documented rule, with `finish_reason: "length"`, as the API does. The run is not cut short.
* Fields that only tune how a model samples, reasons, caches or is billed (`temperature`, `seed`,
  `reasoning_effort`, `service_tier`, `prompt_cache_key`, ...) are taken and ignored; fields that ask for
  something the agent cannot give (`logit_bias` with entries, `logprobs`, `top_logprobs`, an audio modality) are
  refused with a 400 that names them.
* `stream: true` sends `chat.completion.chunk` events as the API does: the role, then the answer in pieces once
  the run has ended (the agent's Thoughts are not the answer), then a chunk with `finish_reason` and the
  `tinyagent` field, then (with `stream_options.include_usage`) a usage chunk, then `data: [DONE]`.
  `POST /agent/stream` is the stream of the agent's own events.
* A refund waits for a person's yes as on every route (`GET /agent/approvals` lists it; `--auto-approve` for a
  demonstration): a chat client has no way to answer it in its own conversation.
"""

from __future__ import annotations

import json
import time
from typing import Any

MODEL = "tinyagent-shop"
# OpenAI's fields this endpoint reads, or takes and ignores because they do not change what is asked: they tune
# a sampler, a reasoning budget, a cache or a billing tier of a model, and the agent runs its own model. A client
# library sets some of them by default, so refusing them would refuse the client.
ACCEPTED = ("model", "messages", "stream", "stream_options", "temperature", "top_p", "max_tokens",
            "max_completion_tokens", "n", "stop", "user", "metadata", "seed", "presence_penalty",
            "frequency_penalty", "store", "tools", "tool_choice", "response_format", "parallel_tool_calls",
            "logprobs", "top_logprobs", "logit_bias", "modalities", "reasoning_effort", "service_tier",
            "prompt_cache_key")
PIECE_CHARS = 24  # the answer streamed in pieces of about this many characters


class ChatRequestError(ValueError):
    """A chat request the endpoint cannot answer: `code` for programs, the message for a person."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def models_json(created: int) -> dict:
    return {"object": "list", "data": [{"id": MODEL, "object": "model", "created": created, "owned_by": "tinyagent"}]}


def read_chat_request(data: dict) -> tuple[str, list[dict], bool]:
    """(the question, the history before it, whether to stream) from an OpenAI chat request's JSON."""
    model = data.get("model")
    if model is None:
        raise ChatRequestError("missing_model", f"the request names no model: ask for {MODEL!r} (GET /v1/models "
                               "lists it)")
    if model != MODEL:
        raise ChatRequestError("model_not_found", f"the model {str(model)[:60]!r} is not served here: ask for "
                               f"{MODEL!r} (GET /v1/models lists it)")
    if data.get("tools") or data.get("tool_choice") not in (None, "none", "auto"):
        raise ChatRequestError("tools_not_supported", f"{MODEL} is the shop agent with its own tools: leave "
                               "out tools and tool_choice")
    if data.get("response_format") not in (None, {"type": "text"}):
        raise ChatRequestError("response_format_not_supported", f"{MODEL} answers in text: leave out "
                               "response_format")
    if data.get("logit_bias") not in (None, {}):
        raise ChatRequestError("logit_bias_not_supported", f"{MODEL} cannot bias tokens: its answer comes from an "
                               "agent's run on a model of its own tokenizer; leave out logit_bias")
    # `is`, not `in (None, False)`: in Python 0 == False, so `"logprobs": 0` passed
    logprobs = data.get("logprobs")
    if not (logprobs is None or logprobs is False):
        raise ChatRequestError("logprobs_not_supported", f"{MODEL} has no log probabilities to give: its answer "
                               "is an agent's final answer, not one sample; leave out logprobs and top_logprobs")
    # Of any value, 0 too: OpenAI's API takes top_logprobs only beside "logprobs": true, which is refused above, so
    # a request that works here works on a real model too (the classroom model refuses it the same way).
    if data.get("top_logprobs") is not None:
        raise ChatRequestError("logprobs_not_supported", f"{MODEL} has no log probabilities to give, and "
                               'top_logprobs is only allowed with "logprobs": true; leave out top_logprobs')
    if data.get("modalities") not in (None, ["text"]):
        raise ChatRequestError("modalities_not_supported", f'{MODEL} answers in text only: send "modalities": '
                               '["text"], or leave it out')
    if data.get("n") is not None and not _whole(data["n"], 1):
        raise ChatRequestError("n_not_supported", f"{MODEL} gives one answer per request: leave out n, or send 1")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise ChatRequestError("bad_stream", '"stream" must be true or false')
    _check_unused_fields(data)
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ChatRequestError("missing_messages", '"messages" must be a non-empty list, its last message the '
                               'customer\'s question: [{"role": "user", "content": "..."}]')
    turns = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("system", "developer", "user", "assistant"):
            raise ChatRequestError("bad_message", f"messages[{i}] must be an object whose role is user, assistant "
                                   "or system (tool messages belong to a client's own tools)")
        if message["role"] in ("user", "assistant"):
            turns.append({"role": message["role"], "content": _text(message.get("content"), i)})
    if not turns or turns[-1]["role"] != "user" or not turns[-1]["content"].strip():
        raise ChatRequestError("missing_question", "the last user or assistant message must be the customer's "
                               "question, a user message with text")
    return turns[-1]["content"], turns[:-1], stream


# The fields the shop agent takes and does not use (its own run decides), each with the JSON it must be, as OpenAI's
# API says: a client's mistake in one of them gets a 400 naming it, as any other model's server would answer.
_NUMBER, _WHOLE, _TEXT, _OBJECT, _YES_NO = "a number", "a whole number", "a string", "an object", "true or false"
UNUSED_FIELDS = {"temperature": _NUMBER, "top_p": _NUMBER, "presence_penalty": _NUMBER, "frequency_penalty": _NUMBER,
                 "seed": _WHOLE, "user": _TEXT, "reasoning_effort": _TEXT, "service_tier": _TEXT,
                 "prompt_cache_key": _TEXT, "metadata": _OBJECT, "stream_options": _OBJECT, "store": _YES_NO,
                 "parallel_tool_calls": _YES_NO, "stop": "a string or a list of strings"}


def _whole(value: Any, number: int) -> bool:
    """`value` is the JSON whole number `number` (JSON's true is no number, though Python's True == 1)."""
    return isinstance(value, int) and not isinstance(value, bool) and value == number


def _check_unused_fields(data: dict) -> None:
    for name, kind in UNUSED_FIELDS.items():
        value = data.get(name)
        if value is not None and not _fits(value, kind):
            raise ChatRequestError(f"bad_{name}", f'"{name}" must be {kind}, got {json.dumps(value)[:60]}')


def _fits(value: Any, kind: str) -> bool:
    if kind in (_NUMBER, _WHOLE):  # JSON's true is no number (Python's bool is an int)
        number = (int, float) if kind == _NUMBER else int
        return isinstance(value, number) and not isinstance(value, bool)
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _OBJECT:
        return isinstance(value, dict)
    if kind == _YES_NO:
        return isinstance(value, bool)
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))


def answer_limit(data: dict) -> int | None:
    """The client's `max_completion_tokens` or `max_tokens` (the smaller if both), or None; a 400 if not 1 or more."""
    limits = []
    for name in ("max_tokens", "max_completion_tokens"):
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ChatRequestError("bad_max_tokens", f'"{name}" must be a whole number of 1 or more, got {value!r}')
        limits.append(value)
    return min(limits) if limits else None


def cut_answer(answer: str, limit: int | None) -> tuple[str, str]:
    """The answer a client with a token limit gets, and the finish_reason: cut after its `limit`-th token by the
    classroom model's documented rule (classroom/tokens.py), "length" when cut, as the API says so. The run itself
    is not cut short: the limit bounds what the client reads, not what the agent does (a refund made on the way is
    made)."""
    from tinyagent.classroom.tokens import truncate_to_tokens

    if limit is None:
        return answer, "stop"
    cut = truncate_to_tokens(answer, limit)
    return cut, "stop" if cut == answer else "length"


def _text(content: Any, i: int) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text"
                                         and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise ChatRequestError("bad_content", f"messages[{i}].content must be text (a string, or a list of "
                           '{"type": "text", "text": ...} parts)')


def usage_of(result) -> dict:
    """The run's tokens, every model call summed: what this one chat answer cost."""
    from tinyagent.events import LlmCall

    totals = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for call in result.trace.of_type(LlmCall):
        for name in totals:
            value = (call.usage or {}).get(name)
            totals[name] += value if isinstance(value, int) else 0
    return totals


def extra_json(outcome_data: dict) -> dict:
    """The `tinyagent` field: what the agent did, for a client that wants more than the answer."""
    return {key: outcome_data[key] for key in ("reason", "ok", "rounds", "trace", "warning") if key in outcome_data}


def completion_json(completion_id: str, created: int, answer: str, usage: dict, extra: dict,
                    finish: str = "stop") -> dict:
    return {"id": completion_id, "object": "chat.completion", "created": created, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": finish,
                         "logprobs": None}],
            "usage": usage, "tinyagent": extra}


def completion_chunks(completion_id: str, created: int, answer: str, usage: dict, extra: dict,
                      include_usage: bool, finish: str = "stop") -> list[bytes]:
    """The SSE events of a streamed answer, each `data: <chunk>` and a blank line, `data: [DONE]` last."""
    def chunk(delta: dict, finish: str | None = None, **more: Any) -> dict:
        return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": MODEL,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **more}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": answer[i:i + PIECE_CHARS]}) for i in range(0, len(answer), PIECE_CHARS)]
    chunks.append(chunk({}, finish, tinyagent=extra))
    if include_usage:  # as the API sends it when asked: a last chunk with no choices and the usage
        chunks.append({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": MODEL,
                       "choices": [], "usage": usage})
    events = [b"data: " + json.dumps(c, ensure_ascii=False).encode("utf-8") + b"\n\n" for c in chunks]
    return [*events, b"data: [DONE]\n\n"]


def now() -> int:
    return int(time.time())
