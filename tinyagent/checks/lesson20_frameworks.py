"""Lesson 20's checks: reading the Observations out of any framework's request, and naming the lesson that
built each framework part."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import (
    _brief,
    _columns,
    _cut_middle,
    _fail,
    _not_attempted,
    _passed,
    grades,
    shown,
)

_QUESTION = "Order 88231: my robot vacuum won't charge any more. Please refund it."
_ORDER = ('{"orderId":"88231","product":"比特 S10 Pro 扫地机","price":1999,"signTime":"2026-06-22",'
          '"status":"已签收","trackingNo":"SF1234567890"}')
_TIME = '{"currentTime":"2026-06-30T19:05:23","weekday":"星期二"}'
_CALL = {"id": "call_1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId":"88231"}'}}
_CALL_2 = {"id": "call_2", "type": "function", "function": {"name": "getCurrentTime", "arguments": "{}"}}
_STEP_1 = "Thought: I look the order up first.\nAction: queryOrder\nAction Input: 88231"
_STEP_2 = "Thought: Now today's date.\nAction: getCurrentTime\nAction Input: "
_FORMAT = ("Use the following format:\n\nQuestion: the input question you must answer\nThought: think\n"
           "Action: the action to take\nAction Input: the input to the action\n"
           "Observation: the result of the action\n... (this can repeat N times)\n"
           "Final Answer: the final answer\n\nBegin!\n\n")

# (what the request is, its JSON body, the Observations it carries in order): the shapes lesson 20 recorded
OBSERVATION_CASES: list[tuple[str, dict, list[str]]] = [
    ("a first request: nothing observed yet",
     {"model": "m", "messages": [{"role": "system", "content": "You are a shop assistant."},
                                 {"role": "user", "content": _QUESTION}]}, []),
    ("native calls: role 'tool' messages (LangChain, LlamaIndex FunctionAgent, pydantic-ai, the Agents SDK)",
     {"model": "m", "messages": [
         {"role": "user", "content": _QUESTION},
         {"role": "assistant", "content": None, "tool_calls": [_CALL]},
         {"role": "tool", "tool_call_id": "call_1", "content": _ORDER},
         {"role": "assistant", "content": "", "tool_calls": [_CALL_2]},
         {"role": "tool", "tool_call_id": "call_2", "content": _TIME}]}, [_ORDER, _TIME]),
    ("text ReAct: user messages 'Observation: …' (tinyagent, LlamaIndex ReActAgent)",
     {"model": "m", "messages": [
         {"role": "system", "content": "Tools: queryOrder, getCurrentTime.\nObservation: what a tool returned"},
         {"role": "user", "content": _QUESTION},
         {"role": "assistant", "content": _STEP_1}, {"role": "user", "content": f"Observation: {_ORDER}"},
         {"role": "assistant", "content": _STEP_2}, {"role": "user", "content": f"Observation: {_TIME}"}]},
     [_ORDER, _TIME]),
    ("content as a list of parts, 'Observation:' on a line of its own (smolagents ToolCallingAgent)",
     {"model": "m", "messages": [
         {"role": "system", "content": [{"type": "text", "text": "You are an expert assistant."}]},
         {"role": "user", "content": [{"type": "text", "text": f"New task:\n{_QUESTION}"}]},
         {"role": "assistant", "content": [{"type": "text", "text": "Calling tools:\n[{'name': 'queryOrder'}]"}]},
         {"role": "user", "content": [{"type": "text", "text": f"Observation:\n{_ORDER}"}]}]}, [_ORDER]),
    ("one user message: the prompt, its format example, then the scratchpad (LangChain classic AgentExecutor)",
     {"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
         f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the order up first.\n"
         f"Action: queryOrder\nAction Input: 88231\nObservation: {_ORDER}\nThought: Now today's date.\n"
         f"Action: getCurrentTime\nAction Input: \nObservation: {_TIME}\nThought:")}]}, [_ORDER, _TIME]),
    ("the Responses API: function_call_output items in `input` (the Agents SDK's default model)",
     {"model": "m", "instructions": "You are a shop assistant.", "input": [
         {"role": "user", "content": _QUESTION},
         {"type": "function_call", "call_id": "call_1", "name": "queryOrder", "arguments": '{"orderId":"88231"}'},
         {"type": "function_call_output", "call_id": "call_1", "output": _ORDER}]}, [_ORDER]),
]


def _text_of(content: Any) -> str:
    """A message's text: a string, or its parts' text joined with newlines (the solution's reading)."""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def observations_reference(body: dict) -> list[str]:
    """Exercise 1's answer, as the lesson's solution reads a request: the tools' results, in the order sent."""
    return _observations(body)


def _observations(body: dict, text_of: Callable[[Any], str] = _text_of, strip: bool = True,
                  customers: tuple[str, ...] = ("user",)) -> list[str]:
    """observations_reference, or (for a failure's hint) a mistaken reading of it: `text_of` reading a message's
    text another way, `strip=False` looking for the label before the text is stripped, `customers` the roles
    whose messages are read as user messages are (a system prompt's or the model's too)."""
    return [text for text, _ in _results_in(body, text_of, strip, customers)]


def _results_in(body: dict, text_of: Callable[[Any], str] = _text_of, strip: bool = True,
                customers: tuple[str, ...] = ("user",)) -> Iterator[tuple[str, bool]]:
    """_observations' results, each with whether the spec says its very text: a user message's text after its label
    (stripped) and a Responses item's output. Of a tool's content and a line of the whole prompt it says no more than
    "its content" and "the text after the label": white space around those is the answer's to keep or strip."""
    for item in body.get("messages", body.get("input", [])):
        if item.get("type") == "function_call_output":  # the Responses API
            yield ("" if item["output"] is None else item["output"]), True  # None: a tool that returned nothing
            continue
        text = text_of(item.get("content"))
        text = text.strip() if strip else text
        if item.get("role") == "tool":
            yield text, False
        elif item.get("role") in customers and text.startswith("Observation:"):
            yield text[len("Observation:"):].strip(), True
        elif item.get("role") in customers and "\nQuestion:" in "\n" + text:  # one prompt with its scratchpad
            scratchpad = ("\n" + text).rsplit("\nQuestion:", 1)[1]  # after its last Question: line, the first too
            yield from ((line[len("Observation:"):].strip(), False) for line in scratchpad.splitlines()
                        if line.startswith("Observation:"))


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_TOOLS = ("queryOrder", "getCurrentTime", "queryLogistics", "searchKnowledge", "applyRefund", "lookupInvoice",
          "checkStock")
_QUESTIONS = ("Order {id}: my robot vacuum won't charge any more. Please refund it.", "订单 {id} 的快递到哪了？",
              "我的订单{id}三天前签收了，没用过，能退吗？", "Where is parcel SF{sf}?", "Is order {id} still in stock?")
_SYSTEMS = ("You are a shop assistant.", "Tools: queryOrder, getCurrentTime.\nObservation: what a tool returned",
            "你是一个网店客服。", "You are an expert assistant.\nQuestion: the task\nObservation: a tool's result")


# results that hold the label themselves: only the first `Observation:` of a message or line is the label
_QUOTING = '{"answer":"Observation: the parcel left Hangzhou"}'
_FAQ = "FAQ: a line Observation: shows the tool's result"


def _result(rng: random.Random) -> str:
    """One tool's result as the shop's tools write it: JSON (Chinese kept), or a short text or error."""
    order, sf = str(rng.randint(10000, 99999)), f"SF{rng.randint(10**9, 10**10 - 1)}"
    return rng.choice((
        json.dumps({"orderId": order, "product": rng.choice(("比特 S10 Pro 扫地机", "USB-C cable", "保温杯")),
                    "price": rng.choice((1999, 39, 129.5, 12000)), "status": rng.choice(("已签收", "运输中", "shipped")),
                    "trackingNo": sf}, ensure_ascii=False, separators=rng.choice(((",", ":"), (", ", ": ")))),
        json.dumps({"currentTime": f"2026-06-{rng.randint(10, 30)}T{rng.randint(10, 23)}:05:23",
                    "weekday": rng.choice(("星期二", "Tuesday"))}, ensure_ascii=False),
        json.dumps({"trackingNo": sf, "carrier": "顺丰速运", "events": ["已揽收", "运输中", "派送中"]}, ensure_ascii=False),
        f'{{"error": "order {order} not found"}}',
        f"Refund RF2026063000{rng.randint(10, 99)} submitted for order {order}.",
        "七天无理由退货：签收后 7 天内，商品未使用可退。",
    ))


def _results(rng: random.Random, low: int = 1, high: int = 4) -> list[str]:
    return [_result(rng) for _ in range(rng.randint(low, high))]


def _question(rng: random.Random) -> str:
    return rng.choice(_QUESTIONS).format(id=rng.randint(10000, 99999), sf=rng.randint(10**9, 10**10 - 1))


def _call(n: int, rng: random.Random) -> dict:
    name = rng.choice(_TOOLS)
    return {"id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps({"orderId": str(rng.randint(10000, 99999))})}}


def _parts(text: str, rng: random.Random) -> list[dict]:
    """`text` as content parts: the text part alone, or after an empty text part or a part with no text."""
    before = rng.choice(([], [], [{"type": "text", "text": ""}], [{"type": "image_url", "image_url": {"url": "x.png"}}]))
    return [*before, {"type": "text", "text": text}]


def _head(rng: random.Random, *, parts: bool = False) -> list[dict]:
    question = _question(rng)
    messages = [{"role": "system", "content": rng.choice(_SYSTEMS)}] if rng.random() < 0.7 else []
    return [*messages, {"role": "user", "content": _parts(question, rng) if parts else question}]


def _native(rng: random.Random) -> Iterator[tuple]:
    yield (OBSERVATION_CASES[1][1],)
    for _ in range(10):
        messages, n = _head(rng), 0
        for group in range(rng.randint(1, 3)):  # one assistant turn may call several tools at once
            calls = [_call(n := n + 1, rng) for _ in range(rng.randint(1, 3))]
            messages.append({"role": "assistant", "content": rng.choice((None, "", "Let me check.")),
                             "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": call["id"], "content": _result(rng)} for call in calls]
        if rng.random() < 0.5:
            messages.append({"role": "assistant", "content": "订单已签收。"})
            messages.append({"role": "user", "content": "Thanks! And the invoice?"})
        yield ({"model": "m", "messages": messages},)
    # a tool that returned a JSON string, quotes and all: the content as sent, its quotes too
    yield ({"model": "m", "messages": [
        {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": None, "tool_calls": [_CALL, _CALL_2]},
        {"role": "tool", "tool_call_id": "call_1", "content": '"退款已提交"'},
        {"role": "tool", "tool_call_id": "call_2", "content": "'ok'"}]},)


def _empty_results(rng: random.Random) -> Iterator[tuple]:
    # a tool that returned nothing: its empty content is still one result, in its place
    yield ({"model": "m", "messages": [
        {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": None, "tool_calls": [_CALL, _CALL_2]},
        {"role": "tool", "tool_call_id": "call_1", "content": ""},
        {"role": "tool", "tool_call_id": "call_2", "content": _TIME}]},)
    # content null in the JSON (None), as a client may send a tool's empty result: "" too, not 'None'
    yield ({"model": "m", "messages": [
        {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": None, "tool_calls": [_CALL_2, _CALL]},
        {"role": "tool", "tool_call_id": "call_2", "content": _TIME},
        {"role": "tool", "tool_call_id": "call_1", "content": None}]},)


def _text_react(rng: random.Random) -> Iterator[tuple]:
    yield (OBSERVATION_CASES[2][1],)
    for _ in range(10):
        messages = _head(rng)
        for result in _results(rng):
            tool = rng.choice(_TOOLS)
            messages.append({"role": "assistant", "content": f"Thought: I call {tool}.\nAction: {tool}\n"
                                                             f"Action Input: {rng.randint(10000, 99999)}"})
            if rng.random() < 0.3:  # a result of several lines: all of it is the result
                result = json.dumps(json.loads(result), ensure_ascii=False, indent=2) if result.startswith("{") else \
                    f"{result}\n(2 lines)"
            space = rng.choice((" ", " ", "\n", "  "))
            messages.append({"role": "user", "content": f"Observation:{space}{result}{rng.choice(('', '', chr(10)))}"})
        if rng.random() < 0.4:  # the model quoting the label is not a result; a user's question is not either
            messages.append({"role": "assistant", "content": "Observation: I made this up"})
            messages.append({"role": "user", "content": "What does Observation: mean here?"})
        yield ({"model": "m", "messages": messages},)
    # the label with nothing between it and the result: the text after it is all of the result
    yield ({"model": "m", "messages": [{"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
                                       {"role": "user", "content": f"Observation:{_ORDER}"}]},)
    # a result that itself holds the label: all the text after the first one is the result
    yield ({"model": "m", "messages": [{"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
                                       {"role": "user", "content": f"Observation: {_QUOTING}"}]},)
    # a customer's message that begins with the word but not the label (no colon right after it) is no result
    yield ({"model": "m", "messages": [{"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
                                       {"role": "user", "content": f"Observation: {_ORDER}"},
                                       {"role": "assistant", "content": "Final Answer: it was signed for on 22 June."},
                                       {"role": "user", "content": "Observations from me: the box came crushed."}]},)
    # nor does one that begins with "Questions": it holds no Question: line, so it is not a whole prompt either
    yield ({"model": "m", "messages": [{"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
                                       {"role": "user", "content": f"Observation: {_ORDER}"},
                                       {"role": "assistant", "content": "Final Answer: it was signed for on 22 June."},
                                       {"role": "user", "content": "Questions first: is a crushed box covered?"}]},)
    # the label counts as written, case and all: a customer's message that begins "observation:" is no result
    for said in ("observation: 盒子压坏了", "OBSERVATION: the box came crushed, and the charger is missing."):
        yield ({"model": "m", "messages": [
            {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
            {"role": "user", "content": f"Observation: {_ORDER}"},
            {"role": "assistant", "content": "Final Answer: it was signed for on 22 June."},
            {"role": "user", "content": said}]},)
    # and its colon as written: "Observation：" (a full-width colon, as Chinese text writes it) is no label
    yield ({"model": "m", "messages": [
        {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
        {"role": "user", "content": f"Observation: {_ORDER}"},
        {"role": "assistant", "content": "Final Answer: it was signed for on 22 June."},
        {"role": "user", "content": "Observation：盒子压坏了，充电器也没有。"}]},)


def _content_parts(rng: random.Random) -> Iterator[tuple]:
    yield (OBSERVATION_CASES[3][1],)
    for _ in range(10):
        messages = _head(rng, parts=True)
        for result in _results(rng):
            messages.append({"role": "assistant", "content": _parts(f"Calling tools:\n[{{'name': '{rng.choice(_TOOLS)}'}}]",
                                                                    rng)})
            if rng.random() < 0.5:
                messages.append({"role": "user", "content": _parts(f"Observation:\n{result}", rng)})
            elif rng.random() < 0.7 or len(result) < 2:  # a tool message's content may come as parts too
                messages.append({"role": "tool", "tool_call_id": "c", "content": _parts(result, rng)})
            else:  # or as two text parts, one result: their text joined with a newline
                at = rng.randint(1, len(result) - 1)
                messages.append({"role": "tool", "tool_call_id": "c", "content": [
                    {"type": "text", "text": result[:at]}, {"type": "text", "text": result[at:]}]})
        yield ({"model": "m", "messages": messages},)
    # the label and the result in two text parts: the message's text is both parts'
    yield ({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": _QUESTION}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Calling tools:\n[{'name': 'queryOrder'}]"}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation:"}, {"type": "text", "text": _ORDER}]}]},)
    # a result in two text parts: one result, its parts' text joined with newlines
    yield ({"model": "m", "messages": [
        {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": None, "tool_calls": [_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "Order 88231: signed for."},
                                                               {"type": "text", "text": _ORDER}]}]},)
    yield ({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": _QUESTION}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Calling tools:\n[{'name': 'searchKnowledge'}]"}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation: 七天无理由退货："},
                                     {"type": "text", "text": "签收后 7 天内，商品未使用可退。"}]}]},)


_FORMAT = ("Use the following format:\n\nQuestion: the input question you must answer\nThought: think\n"
           "Action: the action to take\nAction Input: the input to the action\n"
           "Observation: the result of the action\n... (this can repeat N times)\n"
           "Final Answer: the final answer\n\nBegin!\n\n")


def _whole_prompt(rng: random.Random) -> Iterator[tuple]:
    yield (OBSERVATION_CASES[4][1],)
    for _ in range(10):
        scratchpad = [f"Question: {_question(rng)}"]
        for result in _results(rng, 0, 4):
            tool = rng.choice(_TOOLS)
            scratchpad += [f"Thought: I call {tool}.", f"Action: {tool}", f"Action Input: {rng.randint(10000, 99999)}",
                           f"Observation: {result}"]
        prompt = rng.choice(("Answer as best you can.\n\n", "尽力回答。\n\n")) + _FORMAT
        if rng.random() < 0.4:  # an example of a whole run above the real question: its lines are not results
            prompt += f"Example:\nQuestion: {_question(rng)}\nObservation: {_result(rng)}\nFinal Answer: ok\n\n"
        yield ({"model": "m", "stop": ["\nObservation"],
                "messages": [{"role": "user", "content": prompt + "\n".join(scratchpad) + "\nThought:"}]},)
    # an Observation: line with nothing between the label and the result
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the order up first.\n"
        f"Action: queryOrder\nAction Input: 88231\nObservation:{_ORDER}\nThought:")}]},)
    # an Observation: line whose result holds the label itself
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look it up.\n"
        f"Action: searchKnowledge\nAction Input: Observation\nObservation: {_FAQ}\nThought:")}]},)


def _responses(rng: random.Random) -> Iterator[tuple]:
    yield (OBSERVATION_CASES[5][1],)
    for _ in range(8):
        items: list[dict] = [{"role": "user", "content": _question(rng)}]
        for n, result in enumerate(_results(rng), 1):
            name = rng.choice(_TOOLS)
            items.append({"type": "function_call", "call_id": f"call_{n}", "name": name, "arguments": "{}"})
            items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": result})
        yield ({"model": "m", "instructions": rng.choice(_SYSTEMS), "input": items},)
    # an output is taken as sent, with the spaces and line ends around it (a tool's text often ends in "\n")
    for output in (f"{_ORDER}\n", "  已签收 "):
        yield ({"model": "m", "input": [
            {"role": "user", "content": _QUESTION},
            {"type": "function_call", "call_id": "call_1", "name": "queryOrder", "arguments": '{"orderId":"88231"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": output}]},)


def _nothing_observed(rng: random.Random) -> Iterator[tuple]:
    yield (OBSERVATION_CASES[0][1],)
    yield ({"model": "m", "messages": []},)
    yield ({"model": "m", "input": [{"role": "user", "content": _question(rng)}]},)
    for _ in range(3):
        yield ({"model": "m", "messages": _head(rng, parts=rng.random() < 0.5)},)


def _list_of_strings(value: object) -> str | None:
    if isinstance(value, list) and all(isinstance(text, str) for text in value):
        return None
    return f"it returned {_brief(value, 30)}: return a list of strings, each result as the request carries it"


def _stripped(found: list[str]) -> list[str]:
    # white space around a result is not part of it (anything not a string is left for the shape's message)
    return [text.strip() if isinstance(text, str) else text for text in found]


def _right_after_the_label(body: dict, result: str) -> bool:
    """Whether a message of `body` has `result` right after 'Observation:', with no space between."""
    return any(f"Observation:{result}" in _text_of(item.get("content"))
               for item in body.get("messages", body.get("input", [])) if isinstance(item, dict))


def _first_difference(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """What differs, in words: how many results were found, or the first one read otherwise; and when the count
    and order are right but a result is the same JSON written again, say so rather than blame count or order."""
    if len(got) < len(expected) and _stripped(got) == list(dict.fromkeys(_stripped(expected))):
        return "It dropped a result that repeats one: two alike are two results."
    if len(got) > len(expected) and (role := _read_as_the_customers(args[0], got)):
        return f"{role} message holds no results: only user and tool messages do."
    if len(expected) != len(got):
        return f"It found {len(got)} result(s), expected {len(expected)}."
    for place, (given, want, have) in enumerate(zip(got, _stripped(expected), _stripped(got))):
        if want == have != given:  # compared as given: where the spec says the text after the label is stripped
            return f"Result {place + 1} keeps white space around it: the text after the label is stripped."
        if want == "" and have == "None":
            return f"Result {place + 1}: content None (null) is a tool that returned nothing, \"\", not 'None'."
        if want != have and want[1:] == have and _right_after_the_label(args[0], want):
            return f"Result {place + 1} lost its first character: cut len('Observation:'), 12, then strip."
        if want != have:
            try:
                same = json.loads(want) == json.loads(have)
            except (ValueError, TypeError):
                same = False
            if same:
                return f"Result {place + 1} was parsed and dumped again: return its text as sent."
            if "Observation:" in want:
                return f"Result {place + 1}: the result holds Observation: too; cut only the label at the start."
            if want != want.strip("\"'") and want.strip("\"'") == have:
                return f"Result {place + 1} lost its quotes: return the content as sent, quotes and all."
            if _first_line_only(args[0], want, have):
                return f"Result {place + 1} is its first line only: keep all its lines."
            if want in _stripped(got):
                return f"Result {place + 1} is another result: not in the order sent."
            return f"Result {place + 1} differs."
    return None


def _first_line_only(body: dict, want: str, have: str) -> bool:
    """Whether `have` is the first line alone of the text after a message's label, where the result (`want`) is all
    of it: the label alone on its line gives ''."""
    for item in body.get("messages", []):
        text = _text_of(item.get("content")).strip()
        if text.startswith("Observation:"):
            after = text[len("Observation:"):]
            if after.strip() == want != have == (after.splitlines() or [""])[0].strip():
                return True
    return False


def _read_as_the_customers(body: dict, got: list[str]) -> str | None:
    """The role ("system", "assistant", or both) whose messages the answer read as user messages, when its results
    are exactly that reading's; else None."""
    for roles in (("system",), ("assistant",), ("system", "assistant")):
        if _stripped(got) == _stripped(_observations(body, customers=("user", *roles))):
            return "An assistant" if roles == ("assistant",) else f"A {' or '.join(roles)}"
    return None


def _label_in_another_case(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """_first_difference, and where the answer took a user message that begins with the label in another case
    ("observation:") for a result, that."""
    others = [_text_of(item.get("content")).strip() for item in args[0].get("messages", [])
              if item.get("role") == "user"]
    if len(got) > len(expected) and any(text.lower().startswith("observation:") and not text.startswith(
            "Observation:") for text in others):
        return "The label is Observation: as written: 'observation: …' is the customer's."
    if len(got) > len(expected) and any(text.startswith("Observation：") for text in others):
        return "'Observation：' (a full-width colon) is no label."
    return _first_difference(args, expected, got)


def _empty_result_dropped(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """_first_difference, and where the answer left out an empty result, that."""
    if "" in expected and len(got) < len(expected) and [text for text in expected if text] == _stripped(got):
        return "It left out an empty result: a tool message's content is a result, '' too."
    return _first_difference(args, expected, got)


def _one_text_part(content: Any, last: bool) -> str:
    """One part's text of a message's content (its last, or its first that is not empty): a mistaken reading."""
    if not isinstance(content, list):
        return _text_of(content)
    texts = [part.get("text", "") for part in content if isinstance(part, dict)]
    if last:
        return texts[-1] if texts else ""
    return next((text for text in texts if text), "")


def _parts_joined(content: Any, joiner: str) -> str:
    """A message's text with its parts' text joined by `joiner`: a mistaken reading unless `joiner` is a newline."""
    if not isinstance(content, list):
        return _text_of(content)
    return joiner.join(part.get("text", "") for part in content if isinstance(part, dict))


def _parts_read_wrong(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """_first_difference, and where the answer reads as one part only would, joins the parts with no newline, or
    looks for the label before stripping the text, that."""
    body, have = args[0], _stripped(got)
    if any(have == _stripped(_observations(body, lambda content, last=last: _one_text_part(content, last)))
           for last in (True, False)):
        return "It read one text part of a message: a message's text is all its parts' text."
    for joiner in ("", " "):
        if have == _stripped(_observations(body, lambda content, joiner=joiner: _parts_joined(content, joiner))):
            return f"It joined the parts' text with {joiner!r}: join them with newlines, \"\\n\".join(...)."
    if have == _stripped(_observations(body, strip=False)):
        return "Strip, then look for Observation: (an empty first part adds a newline)."
    return _first_difference(args, expected, got)


def _lines_of_the_prompt(rng: random.Random) -> Iterator[tuple]:
    """The whole prompt again: a result holding `Question:` in its line, a Thought line quoting the label, and a
    result's next lines starting "Questions" and "Observations" are neither a Question: line nor an Observation:
    line."""
    faq = '{"faq": "Question: can I return it? Answer: within 7 days of signing."}'
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the policy up.\n"
        f"Action: searchKnowledge\nAction Input: 退货\nObservation: {faq}\nThought:")}]},)
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the order up first.\n"
        f"Action: queryOrder\nAction Input: 88231\nObservation: {_ORDER}\n"
        "Thought: the Observation: above says it was signed for.\nAction: getCurrentTime\nAction Input: \n"
        f"Observation: {_TIME}\nThought:")}]},)
    # a result's next lines beginning with the words but not the labels: neither a Question: nor an Observation: line
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the policy up.\n"
        "Action: searchKnowledge\nAction Input: 退货\nObservation: 七天无理由退货\n"
        "Questions on a return: ask within 7 days of signing.\nObservations of damage need a photo.\n"
        f"Thought: now the order.\nAction: queryOrder\nAction Input: 88231\nObservation: {_ORDER}\nThought:")}]},)
    # nor the labels indented, as a result's next lines may be: a line is those lines by how it starts, unstripped
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the policy up.\n"
        "Action: searchKnowledge\nAction Input: 退货\nObservation: 七天无理由退货，例如：\n"
        "  Question: 拆封了还能退吗？\n  Observation: 未使用即可。\n"
        f"Thought: now the order.\nAction: queryOrder\nAction Input: 88231\nObservation: {_ORDER}\nThought:")}]},)
    # nor the labels in lower case, as a result's next lines may begin: the labels count as written, case and all
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the policy up.\n"
        "Action: searchKnowledge\nAction Input: 退货\nObservation: 七天无理由退货\n"
        "question: can I return an opened box?\nobservation: only an unused one.\n"
        f"Thought: now the order.\nAction: queryOrder\nAction Input: 88231\nObservation: {_ORDER}\nThought:")}]},)


def _prompt_lines_read_wrong(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """_first_difference, and where the answer read a line by what it holds rather than how it starts, or read the
    lines stripped, that."""
    body = args[0]
    unindented = {**body, "messages": [{**message, "content": "\n".join(
        line.strip() for line in message["content"].splitlines())} for message in body.get("messages", [])]}
    if got != expected and _stripped(got) == _stripped(_observations(unindented)):
        return "An indented line is no Question: or Observation: line: do not strip() the lines."
    if len(got) > len(expected):
        return "It read a line that does not start with Observation: as a result."
    if len(got) < len(expected):
        return "It took a line not starting with Question: for the last Question: line."
    return _first_difference(args, expected, got)


def _empty_observations(rng: random.Random) -> Iterator[tuple]:
    """A tool that returned nothing, in the other shapes: a label with nothing after it is an empty result, in its
    place (as an empty tool message is)."""
    yield ({"model": "m", "messages": [
        {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
        {"role": "user", "content": "Observation: "}, {"role": "assistant", "content": "Thought: again.\nAction: t"},
        {"role": "user", "content": f"Observation: {_TIME}"}]},)
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: {_QUESTION}\nThought: I look the order up first.\n"
        "Action: queryOrder\nAction Input: 88231\nObservation:\nThought: nothing; again.\nAction: queryOrder\n"
        f"Action Input: 88231\nObservation: \nThought: the time.\nAction: getCurrentTime\nAction Input: \n"
        f"Observation: {_TIME}\nThought:")}]},)
    yield ({"model": "m", "input": [
        {"role": "user", "content": _QUESTION},
        {"type": "function_call", "call_id": "call_1", "name": "queryOrder", "arguments": '{"orderId":"88231"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": ""},
        {"type": "function_call", "call_id": "call_2", "name": "getCurrentTime", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_2", "output": _TIME}]},)
    yield ({"model": "m", "input": [
        {"role": "user", "content": _QUESTION},
        {"type": "function_call", "call_id": "call_1", "name": "queryOrder", "arguments": '{"orderId":"88231"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": None}]},)


def _empty_observation_missed(args: tuple, expected: list[str], got: list[str]) -> str | None:
    if got != expected and "" in expected:
        return "A label (or output) with nothing after it is an empty result: \"\", in its place."
    return _first_difference(args, expected, got)


def _prompt_from_its_question(rng: random.Random) -> Iterator[tuple]:
    """The whole prompt with no instructions above its Question: line: that line is the prompt's first."""
    for _ in range(4):
        lines = [f"Question: {_question(rng)}"]
        for result in _results(rng):
            tool = rng.choice(_TOOLS)
            lines += [f"Thought: I call {tool}.", f"Action: {tool}", f"Action Input: {rng.randint(10000, 99999)}",
                      f"Observation: {result}"]
        yield ({"model": "m", "stop": ["\nObservation"],
                "messages": [{"role": "user", "content": "\n".join(lines) + "\nThought:"}]},)


def _label_after_spaces(rng: random.Random) -> Iterator[tuple]:
    """A user message whose text starts with spaces or a line end before `Observation:`: stripped, it begins with
    the label, so it is a result."""
    for space in (" ", "\n", "  \n", "\t"):
        yield ({"model": "m", "messages": [
            {"role": "user", "content": _question(rng)}, {"role": "assistant", "content": _STEP_1},
            {"role": "user", "content": f"{space}Observation: {_result(rng)}"}]},)


def _prompt_without_stop(rng: random.Random) -> Iterator[tuple]:
    """The whole prompt in a request with no `stop` field (or another stop): it is known by its text alone."""
    yield ({key: value for key, value in OBSERVATION_CASES[4][1].items() if key != "stop"},)
    for stop in (None, ["Observation:"]):
        lines = [f"Question: {_question(rng)}"]
        for result in _results(rng):
            tool = rng.choice(_TOOLS)
            lines += [f"Thought: I call {tool}.", f"Action: {tool}", f"Action Input: {rng.randint(10000, 99999)}",
                      f"Observation: {result}"]
        body = {"model": "m", "messages": [{"role": "user", "content": _FORMAT + "\n".join(lines) + "\nThought:"}]}
        yield ({**body, "stop": stop} if stop else body,)


def _prompt_known_by_stop(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """_first_difference, and where the answer read no whole prompt in a request without LangChain classic's
    stop, that."""
    if not got and expected:
        stop = args[0].get("stop")
        return f"A whole prompt is known by its text alone, not by the stop sent ({shown(stop) if stop else 'none here'})."
    return _first_difference(args, expected, got)


def _results_with_the_labels_letters(rng: random.Random) -> Iterator[tuple]:
    """Results that begin with letters the label holds too (o, b, s, e, r, v, a, t, i, n: order, no, in transit,
    Observation itself), right after the label or after its space: cut once, the label leaves them whole. Fixed
    inputs, nothing drawn from `rng`."""
    for result in ("order 88231 not found", "not found", "in transit since 06-20", "Observation noted: 已签收"):
        for space in (" ", ""):
            yield ({"model": "m", "messages": [
                {"role": "user", "content": _QUESTION}, {"role": "assistant", "content": _STEP_1},
                {"role": "user", "content": f"Observation:{space}{result}"}]},)
    yield ({"model": "m", "stop": ["\nObservation"], "messages": [{"role": "user", "content": (
        f"Answer as best you can.\n\n{_FORMAT}Question: 订单 88231 到哪了？\nThought: 先查订单。\n"
        "Action: queryOrder\nAction Input: 88231\nObservation: in transit\nThought: 再查物流。\n"
        "Action: queryLogistics\nAction Input: SF1234567890\nObservation:arriving on 06-24\nThought:")}]},)
    yield ({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": _QUESTION}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Calling tools:\n[{'name': 'queryOrder'}]"}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation: "}, {"type": "text", "text": "no order"}]}]},)


def _label_cut_as_letters(args: tuple, expected: list[str], got: list[str]) -> str | None:
    """_first_difference, and where a result lost first letters that the label holds too (lstrip's set), that."""
    for want, have in zip(_stripped(expected), _stripped(got)):
        if isinstance(have, str) and any(want != have == want.lstrip(chars).strip()
                                         for chars in ("Observation:", "Observation: ")):
            return (f"Result {_brief(want, 20)} lost its first letters: lstrip() strips any of the label's letters, "
                    "not the label. Cut len('Observation:') characters, then strip.")
    return _first_difference(args, expected, got)


def _first_line_missed(args: tuple, expected: list[str], got: list[str]) -> str | None:
    if got == [] and expected:
        return "The prompt's first line is a line too: a prompt may start with its Question: line."
    return _first_difference(args, expected, got)


OBSERVATION_RULES = (
    Rule("a message with role \"tool\": its content, each one, in the order sent", _native, _first_difference),
    Rule("a user message that begins with Observation: gives all the text after the label", _text_react,
         _label_in_another_case),
    Rule("content that is a list of parts rather than a string: read the parts' text, joined with newlines",
         _content_parts, _parts_read_wrong),
    Rule("a user message holding the whole prompt: Observation: lines after its last Question:", _whole_prompt,
         _first_difference),
    Rule("the Responses API's input: each function_call_output item's output", _responses, _first_difference),
    Rule("[] when the request carries no result", _nothing_observed, _first_difference),
    Rule("a message with role \"tool\": its content, an empty one too (content \"\" or None gives \"\")", _empty_results,
         _empty_result_dropped),
    Rule("the whole prompt: only lines that start with Question: or Observation: are those lines",
         _lines_of_the_prompt, _prompt_lines_read_wrong),
    Rule("a tool that returned nothing is an empty result in every shape: `Observation:` alone, or an output of None, "
         "gives \"\"",
         _empty_observations, _empty_observation_missed),
    Rule("the whole prompt: its last Question: line may be its first line, with nothing above it",
         _prompt_from_its_question, _first_line_missed),
    Rule("a user message is read stripped: spaces or a line end before Observation: still make it a result",
         _label_after_spaces, _first_difference),
    Rule("the whole prompt is known by its text alone: a request with no stop field (or another stop) is read the "
         "same", _prompt_without_stop, _prompt_known_by_stop),
    Rule("the label is cut once, as a prefix: a result that begins with letters the label holds too (order, not "
         "found, in transit) keeps them", _results_with_the_labels_letters, _label_cut_as_letters),
)


def _show_request(args: tuple) -> str:
    """A request as a failure shows it: each message's role (or item's type) and the start of its text, a list of
    parts as a list, the whole cut in the middle when long; the results are where the shapes differ."""
    body = args[0]
    key = "messages" if "messages" in body else "input"
    said = []
    for item in body[key]:
        if "content" not in item:  # a Responses item
            said.append(f"{item['type']} {_start(item.get('output', item.get('name')))}")
        elif item.get("tool_calls"):
            said.append(f"{item['role']} calls {', '.join(call['function']['name'] for call in item['tool_calls'])}")
        elif isinstance(item["content"], list):
            parts = [_start(part["text"]) if part.get("type") == "text" else part.get("type", "?")
                     for part in item["content"]]
            said.append(f"{item['role']} [{', '.join(parts)}]")
        elif len(body[key]) == 1:  # one message holding the whole prompt: its end is the scratchpad
            said.append(f"{item['role']} {_brief(item['content'], 50)}")
        else:
            said.append(f"{item['role']} {_start(item['content'])}")
    return _cut(f"{key}: {' | '.join(said) or '(none)'}", 80)


def _start(text: Any, columns: int = 14) -> str:
    """The start of a message's text, quoted, with … when there is more."""
    if not isinstance(text, str):
        return shown(text)
    start = ""
    for ch in text:
        if _columns(start + ch) > columns:
            return shown(start) + "…"
        start += ch
    return shown(start)


def _cut(text: str, columns: int) -> str:
    """`text` cut in the middle to about `columns` columns, with … where it was cut (as _brief cuts a value)."""
    if _columns(text) <= columns:
        return text
    return _cut_middle(text, columns // 2, columns // 2 - 3)


def _as_compared(answer: Callable[..., Any]) -> Callable[..., Any]:
    """`answer`, returning a copy of the list it returns (an answer that hands back one module-level list each call
    would otherwise change its own first answer too, and the state it keeps would not show), stripped where the
    spec leaves white space to the answer (`_results_in`): a user message's result is compared as returned, so it
    must come stripped as the spec says. Anything else (a generator, which cannot be copied) comes back as it is,
    for the shape's message."""

    def run(body: Any) -> Any:
        exact = [said for _, said in _results_in(body)]  # read before the answer can change the body
        found = answer(body)
        if not isinstance(found, list):
            return found
        if len(found) != len(exact):  # a count that is wrong already: that is the failure, whatever the spaces
            exact = [False] * len(found)
        return [text.strip() if isinstance(text, str) and not said else copy.deepcopy(text)
                for text, said in zip(found, exact)]

    return run


@grades("Exercise 1", spec=Spec(OBSERVATION_RULES))
def check_observations_in(observations_in: Callable[[dict], list[str]] | None) -> None:
    """20, exercise 1: the learner's `observations_in(body)` finds every Observation, in requests of every shape
    the lesson recorded (OBSERVATION_CASES among them) drawn with random results, tools and lengths."""
    exercise = "Exercise 1"
    if observations_in is None:
        return _not_attempted(exercise, "Write def observations_in(body): ... returning a list of strings.")
    if not callable(observations_in):
        _fail(exercise, f"observations_in should be a function, got {type(observations_in).__name__}")
    tried = agree_on(exercise, "check_observations_in", OBSERVATION_RULES, _as_compared(observations_in),
                     observations_reference, shape=_list_of_strings, call="observations_in(body)",
                     show=_show_request)
    return _passed(exercise, f"{tried} generated requests read: the same tool results travel as tool messages, as "
                             "user text, inside one prompt and as Responses items.")


# each framework's name -> what the part does (the hint a wrong answer gets); the lesson it maps to below
FRAMEWORK_PARTS: dict[str, str] = {
    "AgentExecutor": "LangChain classic's loop: call the model, parse, run the tool, append the Observation",
    "bind_tools": "LangChain: send the tools' JSON Schemas in the request's `tools` field",
    "StructuredTool.from_function": "LangChain: a tool's JSON Schema from a function's type hints and docstring",
    "max_iterations": "AgentExecutor: give up after so many rounds",
    "handle_parsing_errors": "AgentExecutor: a reply it cannot read goes back to the model as an Observation",
    "checkpointer": "LangGraph: keep a conversation's messages between runs, in memory or a database",
    'stop=["\\nObservation"]': "create_react_agent: cut the reply before the model writes its own Observation",
    "interrupt": "LangGraph: pause the run before a step until a person says yes",
}
_LESSONS = {"AgentExecutor": 6, "bind_tools": 9, "StructuredTool.from_function": 7, "max_iterations": 10,
            "handle_parsing_errors": 11, "checkpointer": 12, 'stop=["\\nObservation"]': 4, "interrupt": 15}


@grades("Exercise 2", spec=Spec(fixed="a lookup of a fixed table: the lesson number of each of FRAMEWORK_PARTS' eight "
                                       "names, compared with the lesson that built that part"))
def check_part_lessons(part_lessons: dict | None) -> None:
    """20, exercise 2: the lesson number (an int) that built each part of FRAMEWORK_PARTS."""
    exercise = "Exercise 2"
    if part_lessons is None:
        return _not_attempted(exercise, "Set part_lessons to a dict: framework name -> lesson number.")
    if not isinstance(part_lessons, dict):
        _fail(exercise, f"part_lessons should be a dict with exactly the keys of FRAMEWORK_PARTS "
                        f"({', '.join(FRAMEWORK_PARTS)}), got {shown(part_lessons)}")
    # The lesson prints stop=["\nObservation"] with a backslash and an n; typed into a string literal as shown, the
    # \n is a line break. Either spelling names the same part.
    part_lessons = {key.replace("\n", "\\n") if isinstance(key, str) else key: value
                    for key, value in part_lessons.items()}
    missing = [name for name in FRAMEWORK_PARTS if name not in part_lessons]
    extra = [key for key in part_lessons if key not in FRAMEWORK_PARTS]
    if missing or extra:
        said = "; ".join([*([f"missing {', '.join(map(shown, missing))}"] if missing else []),
                          *([f"not one of its names: {', '.join(map(shown, extra))}"] if extra else [])])
        _fail(exercise, f"part_lessons should have exactly the keys of FRAMEWORK_PARTS ({', '.join(FRAMEWORK_PARTS)}): "
                        f"{said}")
    for name, lesson in part_lessons.items():
        if not isinstance(lesson, int) or isinstance(lesson, bool):
            _fail(exercise, f"{name}: give the lesson's number as an int (e.g. 3), got {shown(lesson)}")
    wrong = [name for name in FRAMEWORK_PARTS if part_lessons[name] != _LESSONS[name]]
    if wrong:
        # what a part does for the first two only: eight of them would run past the lines a failure shows
        said = "; ".join(f"{name} is not lesson {part_lessons[name]}'s part ({FRAMEWORK_PARTS[name]})"
                         for name in wrong[:2])
        more = "; also wrong: " + ", ".join(f"{name} ({part_lessons[name]})" for name in wrong[2:]) if wrong[2:] else ""
        _fail(exercise, f"{len(wrong)} of {len(FRAMEWORK_PARTS)} wrong: {said}{more}")
    return _passed(exercise, "every one of these names is a part you built by hand, from the stop sequence (04) "
                             "to the gate before a refund (15).")
