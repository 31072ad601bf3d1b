"""`POST /v1/responses`: OpenAI's Responses API, as a translation to and from a chat completion.

The openai client's `client.responses.create` and the OpenAI Agents SDK's default model speak it. The
classroom model has one way of deciding what to say, so this module only changes the envelope:

    Responses request  ──to_chat_body──>  chat completion body  ──the server's usual path──>  Answer
    Answer  ──response_json / response_events──>  a `response` object, or its stream of named events

What maps to what:

    instructions                          a system message first
    input: "text"                         one user message
    input: [{"role", "content"}, ...]     messages (content parts input_text / output_text become text)
    {"type": "function_call", ...}        an assistant message's tool_calls (consecutive calls: one message)
    {"type": "function_call_output", ...} a tool message
    tools: [{"type": "function", ...}]    tools (the classroom model has only function tools)
    tool_choice, max_output_tokens        tool_choice, max_tokens
    parallel_tool_calls                   parallel_tool_calls
    text.format                           response_format (json_schema, json_object, text)

Nothing is stored: `previous_response_id` is refused with a 400 that says to send the whole input.
"""

from __future__ import annotations

import json
import re

from tinyagent.classroom.tokens import split_tokens

TOKENS_PER_CHUNK = 3
PART_TYPES = ("input_text", "output_text", "text")
NOT_TEXT_PARTS = ("input_image", "input_file", "input_audio")  # what a model that reads more than text takes
SKIPPED_ITEMS = ("reasoning",)  # what a reasoning model wrote to itself: nothing the classroom model reads
FORMAT_TYPES = ("text", "json_object", "json_schema")
# The chat route's names of the fields to_chat_body fills, by the name the Responses request gave them.
CHAT_TO_RESPONSES = {"max_tokens": "max_output_tokens", "response_format": "text.format"}
JSON_KINDS = {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}


class ResponsesRequestError(ValueError):
    """A Responses request the API refuses (the server answers 400). `param` names the field."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def to_chat_body(body: dict) -> dict:
    """The chat completion body that asks the classroom model what `body` (a Responses request) asks."""
    if not isinstance(body, dict):
        raise ResponsesRequestError("The request body must be a JSON object.")
    if body.get("previous_response_id") is not None:
        raise ResponsesRequestError(
            "The classroom model stores no responses: send the whole conversation in 'input' instead of "
            "'previous_response_id'.", "previous_response_id")
    messages: list[dict] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise ResponsesRequestError("'instructions' must be a string.", "instructions")
        messages.append({"role": "system", "content": instructions})
    messages += _messages(body.get("input"))
    chat: dict = {"model": body.get("model"), "messages": messages}
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif choice is not None:
        chat["tool_choice"] = choice
    if "parallel_tool_calls" in body:  # the chat route's field of the same name: one call a turn when False
        chat["parallel_tool_calls"] = body["parallel_tool_calls"]
    limit = body.get("max_output_tokens")
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ResponsesRequestError(f"'max_output_tokens' must be an integer of 1 or more, got {limit!r}.",
                                        "max_output_tokens")
        chat["max_tokens"] = limit
    text = body.get("text")
    if text is not None:
        if not isinstance(text, dict):
            raise ResponsesRequestError("'text' must be an object such as {\"format\": {\"type\": \"text\"}}.", "text")
        if text.get("format") is not None:
            chat["response_format"] = _response_format(text["format"])
    return chat


def _messages(items: object) -> list[dict]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise ResponsesRequestError("'input' must be a string or a non-empty array of input items.", "input")
    messages: list[dict] = []
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise ResponsesRequestError(f"'{where}' must be an object.", where)
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"), where, "content")})
        elif kind == "function_call":
            call = {"id": _string(item, "call_id", where), "type": "function",
                    "function": {"name": _string(item, "name", where), "arguments": _string(item, "arguments", where)}}
            last = messages[-1] if messages else None
            if last and last["role"] == "assistant" and last.get("tool_calls") and last["content"] is None:
                last["tool_calls"].append(call)  # parallel calls: one assistant turn
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _text(item.get("output"), where, "output")})
        elif kind not in SKIPPED_ITEMS:
            raise ResponsesRequestError(
                f"'{where}.type' is {kind!r}: the classroom model reads messages, function_call and "
                "function_call_output items.", where)
    _check_outputs(messages)
    return messages


def _check_outputs(messages: list[dict]) -> None:
    """Every function_call item needs a function_call_output item for its call_id, as the API requires (the chat
    route then checks where each stands)."""
    answered = {message["tool_call_id"] for message in messages if message["role"] == "tool"}
    for message in messages:
        for call in message.get("tool_calls") or ():
            if call["id"] not in answered:
                raise ResponsesRequestError(f"No tool output found for function call {call['id']}: send a "
                                            "function_call_output item with that call_id after it.", "input")


def _string(item: dict, name: str, where: str) -> str:
    """A function_call item's field, which the API requires as a string: `arguments` too, as JSON text (the chat
    completions route also takes an object there, the Responses API does not)."""
    value = item.get(name)
    if not isinstance(value, str):
        shown = "missing" if value is None else JSON_KINDS.get(type(value), "not a string")
        hint = " (the call's arguments as JSON text, e.g. '{\"orderId\": \"88231\"}')" if name == "arguments" else ""
        raise ResponsesRequestError(f"'{where}.{name}' must be a string{hint}; it is {shown}.", f"{where}.{name}")
    return value


def _text(content: object, where: str, field: str) -> str:
    """The text of an item's `field` (its content, or a call's output): a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_part_text(part, f"{where}.{field}[{j}]") for j, part in enumerate(content)]
        if all(isinstance(text, str) for text in texts):
            return "".join(texts)
    raise ResponsesRequestError(f"'{where}' must hold a string or a list of text parts.", where)


def _part_text(part: object, where: str) -> str | None:
    """A content part's text ("" for a refusal the model made earlier; None when it has no text string). An image,
    a file or audio is refused, as OpenAI refuses it to a text-only model, rather than dropped unseen; a type the
    API does not have is refused by its name."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in PART_TYPES:
        return part.get("text")
    if kind == "refusal":
        return ""
    if kind in NOT_TEXT_PARTS:
        raise ResponsesRequestError(f"'{where}' is a part of type '{kind}', but the classroom model reads text only: "
                                    "send what it should read as an 'input_text' part.", where)
    if isinstance(kind, str):
        raise ResponsesRequestError(f"'{where}' has the type {kind!r}, which no content part has: send the text as a "
                                    "part of type 'input_text'.", where)
    return None


def _tools(tools: object) -> list[dict]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise ResponsesRequestError("'tools' must be an array of tools.", "tools")
    found = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise ResponsesRequestError(
                f"'tools[{index}]' is a {kind!r} tool: the classroom model has only function tools.", f"tools[{index}]")
        parameters = tool.get("parameters")  # checked with the chat route's tools (tool_list.read_native_tools)
        function = {"name": tool.get("name"), "description": tool.get("description") or "",
                    "parameters": {"type": "object", "properties": {}} if parameters is None else parameters}
        if "strict" in tool:  # a forced call to a strict tool it cannot fill is a refusal (tool_choice.forced_call)
            function["strict"] = tool["strict"]
        found.append({"type": "function", "function": function})
    return found


def _response_format(form: object) -> dict:
    """`text.format` as the chat route's `response_format`; the fields the Responses API requires, checked."""
    kind = form.get("type") if isinstance(form, dict) else None
    if kind not in FORMAT_TYPES:
        raise ResponsesRequestError(f"'text.format' must be an object whose 'type' is one of {', '.join(FORMAT_TYPES)}.",
                                    "text.format")
    if kind == "json_schema":
        for key, kind_of, wanted in (("name", str, "a string"), ("schema", dict, "a JSON Schema object")):
            if not isinstance(form.get(key), kind_of):
                raise ResponsesRequestError(f"'text.format.{key}' must be {wanted} for a json_schema format.",
                                            f"text.format.{key}")
        return {"type": "json_schema",
                "json_schema": {key: form[key] for key in ("name", "schema", "strict", "description") if key in form}}
    return {"type": kind}


def in_responses_terms(message: str, param: str | None) -> tuple[str, str | None]:
    """An error the chat route wrote for the translated request, with its field named as the Responses request
    names it (`tools[1].function.parameters` is `tools[1].parameters`, `response_format` is `text.format`)."""
    if param is None:
        return message, None
    if param.startswith("messages"):  # the messages are input's items, numbered otherwise (instructions come first)
        for chat_name, own_name in (("'messages'", "'input'"), ("'response_format'", "'text.format'")):
            message = message.replace(chat_name, own_name)
        return message, "input"
    renamed = re.sub(r"^tools\[(\d+)\]\.function\b", r"tools[\1]", param)
    renamed = CHAT_TO_RESPONSES.get(renamed, renamed)
    return message.replace(param, renamed), renamed


# --- writing the response ------------------------------------------------------------------------------


def output_items(digest: str, answer) -> list[dict]:
    """The response's `output`: a message (its text, or its refusal), then each function call. Each is "completed",
    but the one that `max_output_tokens` cut while it was being typed, which is "incomplete" (and the last)."""
    content, refusal, tool_calls = answer.content, answer.refusal, answer.tool_calls
    items = []
    if content or refusal or not tool_calls:
        part = ({"type": "refusal", "refusal": refusal} if refusal
                else {"type": "output_text", "text": content or "", "annotations": [], "logprobs": []})
        items.append({"type": "message", "id": f"msg_{digest[:24]}", "status": "completed", "role": "assistant",
                      "content": [part]})
    for call in tool_calls:
        items.append({"type": "function_call", "id": "fc_" + call["id"].removeprefix("call_"), "status": "completed",
                      "call_id": call["id"], "name": call["function"]["name"],
                      "arguments": call["function"]["arguments"]})
    if answer.last_item_cut:
        items[-1]["status"] = "incomplete"
    return items


def response_json(body: dict, digest: str, model: str, created: int, answer, status: str | None = None) -> dict:
    """The `response` object for `answer` (the server's Answer for the translated request)."""
    cut = answer.finish_reason == "length"
    usage = answer.usage
    tools = body.get("tools") or []
    return {
        "id": f"resp_{digest[:24]}",
        "object": "response",
        "created_at": created,
        "status": status or ("incomplete" if cut else "completed"),
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut and status is None else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": model,
        "output": [] if status == "in_progress" else output_items(digest, answer),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": tools,
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "metadata": body.get("metadata") or {},
        "usage": None if status == "in_progress" else {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"],
        },
    }


def response_events(body: dict, digest: str, model: str, created: int, answer) -> list[dict]:
    """The stream of a response, as the API sends it: created, in_progress, each output item added, its text
    or arguments in deltas, done, and response.completed with the whole response (response.incomplete when
    `max_output_tokens` cut it). Each event is named by its `type` and numbered by `sequence_number`."""
    events: list[dict] = []

    def emit(kind: str, **fields) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    emit("response.created", response=response_json(body, digest, model, created, answer, "in_progress"))
    emit("response.in_progress", response=response_json(body, digest, model, created, answer, "in_progress"))
    for index, item in enumerate(output_items(digest, answer)):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            part = item["content"][0]
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "content": []})
            empty = {**part, "text": ""} if part["type"] == "output_text" else {**part, "refusal": ""}
            emit("response.content_part.added", **where, content_index=0, part=empty)
            if part["type"] == "output_text":
                for piece in _pieces(part["text"]):
                    emit("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
                emit("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[])
            else:
                emit("response.refusal.delta", **where, content_index=0, delta=part["refusal"])
                emit("response.refusal.done", **where, content_index=0, refusal=part["refusal"])
            emit("response.content_part.done", **where, content_index=0, part=part)
        else:
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "arguments": ""})
            for piece in _pieces(item["arguments"]):
                emit("response.function_call_arguments.delta", **where, delta=piece)
            emit("response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    final = response_json(body, digest, model, created, answer)
    emit("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    return events


def _pieces(text: str) -> list[str]:
    tokens = split_tokens(text)
    return ["".join(tokens[i : i + TOKENS_PER_CHUNK]) for i in range(0, len(tokens), TOKENS_PER_CHUNK)]


def encode_body(chat: dict) -> bytes:
    return json.dumps(chat, ensure_ascii=False).encode("utf-8")
