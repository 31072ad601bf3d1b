"""Lesson 20's checks: reading the Observations out of any framework's request, and naming the lesson that
built each framework part."""

from __future__ import annotations

import json

from tinyagent.checks.reporting import _fail, _not_attempted, _passed, _run

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


def check_observations_in(observations_in) -> None:
    """20, exercise 1: the learner's `observations_in(body)` finds every Observation in every recorded shape."""
    exercise = "Exercise 1"
    if observations_in is None:
        return _not_attempted(exercise, "Write def observations_in(body): ... returning a list of strings.")
    if not callable(observations_in):
        _fail(exercise, f"observations_in should be a function, got {type(observations_in).__name__}")
    for what, body, expected in OBSERVATION_CASES:
        given = json.loads(json.dumps(body, ensure_ascii=False))  # a copy: the answer may not change the case
        got = _run(exercise, f"observations_in(<{what}>)", observations_in, given)
        if not isinstance(got, list) or not all(isinstance(text, str) for text in got):
            _fail(exercise, f"on {what}: return a list of strings, got {got!r}")
        if [text.strip() for text in got] != expected:
            _fail(exercise, f"on {what}: expected {len(expected)} Observation(s), in order, "
                            f"{[text[:40] + '…' for text in expected]}, got {[t[:40] + '…' for t in got]}")
    return _passed(exercise, f"all {len(OBSERVATION_CASES)} shapes read: the same tool results travel as tool "
                             "messages, as user text, inside one prompt and as Responses items.")


# each framework's name -> what the part does (the hint a wrong answer gets); the lesson it maps to below
FRAMEWORK_PARTS: dict[str, str] = {
    "AgentExecutor": "LangChain classic's loop: call the model, parse, run the tool, append the Observation",
    "bind_tools": "LangChain: send the tools' JSON Schemas in the request's `tools` field",
    "with_structured_output": "LangChain: a reply that must be JSON under a schema, validated",
    "max_iterations": "AgentExecutor: give up after so many rounds",
    "handle_parsing_errors": "AgentExecutor: a reply it cannot read goes back to the model as an Observation",
    "checkpointer": "LangGraph: keep a conversation's messages between runs, in memory or a database",
    'stop=["\\nObservation"]': "create_react_agent: cut the reply before the model writes its own Observation",
    "interrupt": "LangGraph: pause the run before a step until a person says yes",
}
_LESSONS = {"AgentExecutor": 6, "bind_tools": 9, "with_structured_output": 7, "max_iterations": 10,
            "handle_parsing_errors": 11, "checkpointer": 12, 'stop=["\\nObservation"]': 4, "interrupt": 15}


def check_part_lessons(part_lessons) -> None:
    """20, exercise 2: the lesson number (an int) that built each part of FRAMEWORK_PARTS."""
    exercise = "Exercise 2"
    if part_lessons is None:
        return _not_attempted(exercise, "Set part_lessons to a dict: framework name -> lesson number.")
    if not isinstance(part_lessons, dict) or set(part_lessons) != set(FRAMEWORK_PARTS):
        _fail(exercise, f"part_lessons should be a dict with exactly the keys of FRAMEWORK_PARTS "
                        f"({', '.join(FRAMEWORK_PARTS)}), got {part_lessons!r}")
    for name, lesson in part_lessons.items():
        if not isinstance(lesson, int) or isinstance(lesson, bool):
            _fail(exercise, f"{name}: give the lesson's number as an int (e.g. 3), got {lesson!r}")
    wrong = [name for name in FRAMEWORK_PARTS if part_lessons[name] != _LESSONS[name]]
    if wrong:
        said = "; ".join(f"{name} is not lesson {part_lessons[name]}'s part ({FRAMEWORK_PARTS[name]})"
                         for name in wrong)
        _fail(exercise, f"{len(wrong)} of {len(FRAMEWORK_PARTS)} wrong: {said}")
    return _passed(exercise, "every one of these names is a part you built by hand, from the stop sequence (04) "
                             "to the gate before a refund (15).")
