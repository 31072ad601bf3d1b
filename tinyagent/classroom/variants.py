"""The classroom model's variants: the careful default, and misbehaviour on request, chosen by model name.

Every variant plans with the same careful planner (`scenarios.plan`); they differ in how they write
the step down, or in which step they choose. Each is deterministic, so a lesson can show one failure
and then the fix that handles it, with the same output on every run.

| model | what it does | lessons |
| --- | --- | --- |
| `classroom` | The careful assistant: one `Thought` / `Action` / `Action Input` per reply, only tools the prompt lists, answers from what the Observations really said. Without a stop sequence it runs on with invented Observations to a confident (false) `Final Answer`. | 00, 03, 04, 06–09, 12–19 |
| `classroom-sloppy` | Same plan, sloppy format a strict line scanner trips on and a tolerant parser reads. By round: 1 Markdown bold keys (`**Action:** queryOrder`), 2 lower-case keys (`action:`), 3 full-width colons (`Action：`), 4 `Action:` inside the Thought (before the real `Action:` line), 5 the input, or the answer, in a code fence; then again from 1. | 05, 09, 11, 18 |
| `classroom-no-final` | Normal tool steps, but the last reply is the answer in plain prose: no `Thought`, no `Final Answer:`, no `Action`. | 06 (the fallback), 18 |
| `classroom-loop` | Repeats its first action (e.g. `queryOrder` 88231) every round, whatever the Observations say. | 06, 09, 10 (repeat detection, step cap), 18 |
| `classroom-rephrase` | Asks for its first action again every round, worded anew each time: `88231`, `"88231"`, `` `88231` ``, `{"orderId":"88231"}`, `'88231'`, then in a code fence, then from the start. Never the same Action twice in six rounds, never a new Observation. | 10 (no progress), 18 |
| `classroom-wrong-tool` | First calls a tool that does not exist (`checkOrder`, `getTime`, ...); reads the error Observation and its list of available tools, corrects itself and carries on normally. | 02, 09, 10, 18 |
| `classroom-verbose` | Writes a Thought of several hundred tokens before every step, so a small `max_tokens` cuts the reply (`finish_reason: "length"`). | 10 (token budget, `length`), 18 |
| `classroom-ignores-stop` | The text of `classroom`, but the server does not apply `stop` (like some providers), so the invented continuation comes back unless the client cuts it. | 04, 18 |
| `classroom-split-stop` | The text of `classroom-ignores-stop` (`stop` not applied), and when it streams, every stop string it types is split across two chunks at its middle (`... Observ` then `ation: ...`): a client that looks for the stop string in each chunk alone misses it. | 14, 18 |
| `classroom-bad-args` | The first call to each tool gets its arguments wrong: with several arguments it leaves the last one out (`{"order_id": "88231"}` without `reason`); with one id it writes it as the wrong JSON type (`{"order_id": 88231}` where the tool's example shows a string, a string where it shows a number). It reads the error Observation, says what was wrong, and calls again as the error's example shows. | 07, 09, 18 |
| `classroom-forgets-action` | Its first reply to a request is a `Thought` and nothing else: no `Action`, no `Final Answer` (a botched step). From the next round on, whatever it was told, it writes every step in full. | 11, 18, 20 |
| `classroom-gullible` | Follows an instruction planted in what it reads (a tool's description, an Observation: a passage, an order's field, a page) that asks for a refund of an order or a message to an address: does it first, once, then serves the customer as `classroom`. Text fenced as data (`<data source=...>`) it does not obey (gullible.py). | 18, 25 |

In function-calling mode (`tools` in the request) every variant returns `tool_calls`: the format
variants (sloppy, no-final, ignores-stop, split-stop, forgets-action) behave like `classroom` there, `classroom-loop`
repeats its calls, `classroom-wrong-tool` first calls the non-existent tool, `classroom-verbose` sends its
long thought as the message content next to the calls (max_tokens cuts the two together, as text), and
`classroom-bad-args` makes the same mistakes in
its arguments (the wrong type judged by the tool's `parameters`) and fixes them after the error.
`classroom-rephrase` repeats its calls there (JSON arguments have one wording).

Asked to stop and give its best answer from what it knows (the closing call of lesson 10's stop rules),
every variant answers the same careful way: see wrap_up.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace

from tinyagent.classroom.conversation import Conversation
from tinyagent.classroom.daydream import continue_without_stop, imagine_observation
from tinyagent.classroom.gullible import gullible_step
from tinyagent.classroom.planning import Act, Answer, Call, json_example_in, rename_arguments, sentence
from tinyagent.classroom.render import action_text, step_text
from tinyagent.classroom.reply import Reply, ToolCallRequest
from tinyagent.classroom.scenarios import plan
from tinyagent.classroom.small_talk import chat_reply

MODELS: dict[str, str] = {
    "classroom": "The careful shop assistant: one ReAct step per reply, answers from real Observations.",
    "classroom-sloppy": "Same plan, sloppy format: **bold** or lower-case keys, full-width colons, fences.",
    "classroom-no-final": "Ends with a plain-prose answer instead of 'Final Answer:'.",
    "classroom-loop": "Repeats its first action every round, whatever the Observations say.",
    "classroom-rephrase": "Asks for its first action again every round, worded anew: nothing new comes back.",
    "classroom-wrong-tool": "First calls a tool that does not exist, then corrects itself from the error.",
    "classroom-verbose": "Writes a Thought of several hundred tokens before every step.",
    "classroom-ignores-stop": "The text of 'classroom', but the server ignores the stop sequence for it.",
    "classroom-split-stop": "Ignores the stop sequence too, and streams every stop string split across two chunks.",
    "classroom-bad-args": "First call to each tool: a field left out or an id of the wrong type; then fixed.",
    "classroom-forgets-action": "Its first reply is a Thought with no Action; then it writes every step in full.",
    "classroom-gullible": "Follows instructions planted in tool descriptions and Observations, unless fenced as data.",
}

# The table above, as text (tests/test_classroom_behaviour.py checks its rows): everything from its header to its last row.
VARIANTS_TABLE: str = re.search(r"^\| model \|.*?(?=\n\n)", __doc__, re.MULTILINE | re.DOTALL).group()


# --- turning a step into a Reply ------------------------------------------------------------------------


def build_reply(
    conv: Conversation, step: Act | Answer, text_of: Callable[[Act | Answer], str] = step_text
) -> Reply:
    """The Reply for `step`: tool_calls in function calling; otherwise the text, which, for an Action,
    runs on with invented Observations (the server's stop sequence is what cuts them off)."""
    if conv.native:
        if isinstance(step, Act):
            return Reply(None, tuple(ToolCallRequest(c.tool, native_arguments(conv, c)) for c in step.calls))
        return Reply(step.answer)
    text = text_of(step)
    if isinstance(step, Act):
        text += continue_without_stop(conv, step.calls[0])
    return Reply(text)


def native_arguments(conv: Conversation, call: Call) -> dict:
    """`call.args` as the tool's JSON Schema wants them: its property names, and numbers where it asks."""
    schema = conv.schemas.get(call.tool) or {}
    properties = schema.get("properties") or {}
    arguments = rename_arguments(call.args, list(properties), schema.get("required"))
    for name, value in arguments.items():
        spec = properties.get(name)
        wanted = spec.get("type") if isinstance(spec, dict) else None
        if wanted in ("integer", "number") and isinstance(value, str) and value.isdigit():
            arguments[name] = int(value)  # "88231" -> 88231 for `order_id: int`
    return arguments


# --- the variants -------------------------------------------------------------------------------------


def careful(conv: Conversation) -> Reply:
    """`classroom`."""
    return build_reply(conv, plan(conv))


def ignores_stop(conv: Conversation) -> Reply:
    """`classroom-ignores-stop`: the same Reply, flagged so the server does not cut it at `stop`."""
    return replace(careful(conv), ignores_stop=True)


def split_stop(conv: Conversation) -> Reply:
    """`classroom-split-stop`: the same Reply, flagged so the server does not cut it at `stop` and splits
    each stop string across two chunks when it streams (server.split_stop_text)."""
    return replace(careful(conv), splits_stop=True)


# In this order so that "Action: inside the Thought" lands on an action step (the refund's round 4,
# applyRefund), where a parser must still take the real Action line below it, and not the tool named
# in the Thought.
SLOPPY_STYLES = (
    "bold keys",
    "lower-case keys",
    "full-width colons",
    "Action: inside the Thought",
    "fenced input",
)


def sloppy(conv: Conversation) -> Reply:
    """`classroom-sloppy`: round n uses SLOPPY_STYLES[(n - 1) % 5]."""
    style = SLOPPY_STYLES[conv.rounds % len(SLOPPY_STYLES)]
    return build_reply(conv, plan(conv), lambda step: sloppy_text(conv, step, style))


def sloppy_text(conv: Conversation, step: Act | Answer, style: str) -> str:
    """The step written in one of the sloppy styles (see SLOPPY_STYLES)."""
    if isinstance(step, Act):
        fields = [
            ("Thought", step.thought),
            ("Action", step.calls[0].tool),
            ("Action Input", step.calls[0].input),
        ]
    else:
        fields = [("Thought", step.thought), ("Final Answer", step.answer)]
    end = "\n" if isinstance(step, Act) else ""

    if style == "bold keys":
        lines = [f"**{key}:** {value}".rstrip() for key, value in fields]
    elif style == "lower-case keys":
        lines = [f"{key.lower()}: {value}".rstrip() for key, value in fields]
    elif style == "full-width colons":
        lines = [f"{key}：{value}".rstrip() for key, value in fields]
    elif style == "fenced input":
        # The last field (the input, or the answer) inside a Markdown code fence, as chat models like to.
        key, value = fields[-1]
        fence = "```json" if value.startswith(("{", "[")) else "```"
        lines = [f"{k}: {v}" for k, v in fields[:-1]] + [f"{key}:", fence, value, "```"]
    else:  # "Action: inside the Thought": the keyword in prose, on the Thought's line
        previous = conv.steps[-1].tool if conv.steps else None
        if isinstance(step, Act):
            aside = (
                conv.say(
                    f"上一步的 Action: {previous} 已经有结果了。",
                    f"The Action: {previous} before has its result.",
                )
                if previous
                else conv.say(
                    f"我打算用 Action: {fields[1][1]} 来做。", f"I plan to use Action: {fields[1][1]}."
                )
            )
        else:
            aside = (
                conv.say(f"不需要再 Action: {previous} 了。", f"No need for another Action: {previous}.")
                if previous
                else conv.say("不需要任何 Action: 直接回答。", "No Action: needed, I answer directly.")
            )
        fields[0] = ("Thought", fields[0][1] + conv.say("", " ") + aside)
        lines = [f"{key}: {value}".rstrip() for key, value in fields]
    return "\n".join(lines) + end


def no_final(conv: Conversation) -> Reply:
    """`classroom-no-final`: the answer comes as bare prose, with no Thought and no 'Final Answer:'."""
    step = plan(conv)
    if isinstance(step, Answer) and not conv.native:
        return Reply(step.answer)
    return build_reply(conv, step)


LOOP_REPEATS_WHEN_UNSTOPPED = 3


def loop(conv: Conversation) -> Reply:
    """`classroom-loop`: whatever happened, do again what the first round did."""
    first = plan(replace(conv, steps=(), rounds=0))
    if isinstance(first, Answer) or conv.native:
        return build_reply(conv, first)
    # Unstopped, it loops in its own text too: the same step after every invented Observation.
    step = step_text(first)
    observation = f"Observation: {imagine_observation(conv, first.calls[0])}\n"
    return Reply(step + (observation + step) * (LOOP_REPEATS_WHEN_UNSTOPPED - 1))


# How `classroom-rephrase` words the same input, round by round (then from the start again).
REPHRASINGS = ("plain", "double quotes", "backticks", "JSON", "single quotes", "code fence")
REPHRASE_THOUGHTS = (
    ("为了确认无误，换个写法再查一次。", "To be sure, let me ask again, written another way."),
    ("也许换一种写法能查到更多信息。", "Maybe another wording brings more information."),
    ("再核对一遍。", "Let me double-check."),
)


def rephrase(conv: Conversation) -> Reply:
    """`classroom-rephrase`: the first round's action again, its input worded anew every round."""
    first = plan(replace(conv, steps=(), rounds=0))
    if isinstance(first, Answer) or conv.native:
        return build_reply(conv, first)
    call = first.calls[0]
    style = REPHRASINGS[conv.rounds % len(REPHRASINGS)]
    thought = first.thought if conv.rounds == 0 else conv.say(*REPHRASE_THOUGHTS[conv.rounds % len(REPHRASE_THOUGHTS)])
    # The fenced input starts on the line after "Action Input:", as chat models write fences.
    text = action_text(thought, call.tool, reworded(call, style)).replace("Action Input: \n", "Action Input:\n")
    return Reply(text + continue_without_stop(conv, call))


def reworded(call: Call, style: str) -> str:
    """The call's input in one of the REPHRASINGS; the tools read every one of them as the same input."""
    value = call.input
    if style == "double quotes":
        return f'"{value}"'
    if style == "backticks":
        return f"`{value}`"
    if style == "JSON":
        return json.dumps(call.args, ensure_ascii=False, separators=(",", ":"))
    if style == "single quotes":
        return f"'{value}'"
    if style == "code fence":
        return f"\n```\n{value}\n```"
    return value


WRONG_NAMES = {
    "order": "checkOrder",
    "logistics": "trackParcel",
    "refund": "refundOrder",
    "knowledge": "searchPolicy",
    "time": "getTime",
    "weather": "getWeather",
    "write_file": "saveFile",
}


def wrong_tool(conv: Conversation) -> Reply:
    """`classroom-wrong-tool`: the first call goes to a tool that does not exist; then it corrects itself."""
    step = plan(conv)
    if not conv.steps and isinstance(step, Act):
        calls = tuple(replace(c, tool=_wrong_name(conv, c)) for c in step.calls)
        return build_reply(conv, Act(step.thought, calls))
    last = conv.steps[-1] if conv.steps else None
    if last is not None and last.tool not in conv.tools and not last.ran:
        available = _available_tools(conv, last)
        correction = conv.say(
            f"{last.tool} 这个工具不存在，可用的工具是 {'、'.join(available)}。",
            f"There is no tool called {last.tool}; the available tools are {', '.join(available)}.",
        )
        if isinstance(step, Act):
            correction += conv.say(f"改用 {step.calls[0].tool}。", f" I use {step.calls[0].tool} instead.")
            step = Act(f"{correction}{conv.say('', ' ')}{step.thought}", step.calls)
        else:
            step = Answer(f"{correction}{conv.say('', ' ')}{step.thought}", step.answer)
    return build_reply(conv, step)


def _wrong_name(conv: Conversation, call: Call) -> str:
    name = WRONG_NAMES.get(call.kind, call.tool + "V2")
    return name if name not in conv.tools else name + "V2"


def _available_tools(conv: Conversation, step) -> list[str]:
    """The tool names the error Observation listed, or else the ones offered."""
    data = step.data
    listed = data.get("available_tools") if isinstance(data, dict) else None
    if isinstance(listed, list) and listed:
        return [str(name) for name in listed]
    return list(conv.tools)


def verbose(conv: Conversation) -> Reply:
    """`classroom-verbose`: a very long Thought before every step (a budget for max_tokens to cut)."""
    step = plan(conv)
    ramble = long_thought(conv)
    if isinstance(step, Act):
        step = Act(f"{ramble}{step.thought}", step.calls)
    else:
        step = Answer(f"{ramble}{step.thought}", step.answer)
    reply = build_reply(conv, step)
    if conv.native and reply.tool_calls:
        return Reply(step.thought, reply.tool_calls)  # the thought goes out as content beside the calls
    return reply


def long_thought(conv: Conversation) -> str:
    """Several hundred tokens of going over the situation again, built from the conversation."""
    tools = conv.say("；", "; ").join(
        conv.say(f"{name}（{' '.join(desc.split())}）", f"{name} ({' '.join(desc.split())})")
        for name, desc in conv.tools.items()
    )
    # One line only: a line break inside a Thought could start a line with a keyword.
    seen = conv.say("；", "; ").join(
        f"{s.tool} -> {' '.join(s.observation.split())}" for s in conv.steps if s.observation
    )
    request = sentence(" ".join(conv.request.split()))
    if conv.zh:
        return (
            f"让我把情况从头到尾仔细梳理一遍，免得遗漏。用户的原话是：「{request}」。"
            f"我手上可以使用的工具有：{tools or '没有'}。"
            f"到目前为止我已经得到的信息有：{seen or '还没有任何工具结果'}。"
            "在决定下一步之前，我想先确认几件事情。第一，用户真正想要的结果是什么，是想知道一个事实，还是想让我办成一件事？"
            "第二，我现在掌握的信息里，哪些是工具真实返回的，哪些只是我的推测？推测的内容绝对不能当成事实告诉用户。"
            "第三，下一步调用哪个工具最合适，它需要什么样的输入，输入的格式是否符合工具说明里的要求？"
            "第四，如果工具返回错误，我应该如何向用户如实说明，而不是编造一个看起来合理的结果？"
            "第五，我的回答是否使用了用户的语言，语气是否礼貌、简洁、清楚？"
            "第六，有没有必要一次问清楚所有问题，还是应该一步一步来，每一步都根据真实的观察结果再做判断？"
            "把这些都想清楚以后，我认为最稳妥的做法仍然是按照计划一步一步推进，每一步只调用一个工具，"
            "拿到真实结果之后再决定后面的动作。好，下面是这一步的具体考虑："
        )
    return (
        "Let me go over the whole situation again from the beginning, carefully, so that nothing is missed. "
        f'The customer wrote: "{request}". '
        f"The tools I can use are: {tools or 'none'}. "
        f"What I have learnt so far: {seen or 'no tool results yet'}. "
        "Before deciding on the next step I want to be sure of a few things. First, what result does the customer "
        "really want: to know a fact, or to have something done? Second, which of the things I know were really "
        "returned by a tool, and which are only my guesses? A guess must never be presented to the customer as a "
        "fact. Third, which tool is the right one for the next step, what input does it need, and does my input "
        "match the format its description asks for? Fourth, if the tool reports an error, how do I explain that "
        "honestly instead of making up a result that merely looks plausible? Fifth, am I answering in the "
        "customer's language, politely, briefly and clearly? Sixth, should I try to settle everything at once, or "
        "go one step at a time and judge each step by what was actually observed? Having thought all of this "
        "through, I still believe the safest course is to follow the plan one step at a time, calling one tool "
        "per step and deciding what to do next only after I have seen its real result. So, for this step: "
    )


def bad_args(conv: Conversation) -> Reply:
    """`classroom-bad-args`: the first call to each tool has a mistake in its arguments (see `mistaken`);
    after the tool's error Observation the careful planner writes them as the error's example shows, and
    the Thought says what the error was."""
    step = plan(conv)
    if not isinstance(step, Act):
        return build_reply(conv, step)
    first = [not any(s.tool == c.tool for s in conv.steps) for c in step.calls]
    if conv.native:
        return Reply(None, tuple(
            ToolCallRequest(c.tool, _mistaken_native(conv, c) if new else native_arguments(conv, c))
            for c, new in zip(step.calls, first)
        ))
    calls = tuple(mistaken(conv, c) if new else c for c, new in zip(step.calls, first))
    last = conv.steps[-1] if conv.steps else None
    thought = step.thought
    if last is not None and last.input_error and last.tool == calls[0].tool:
        thought = conv.say(
            f"{last.tool} 拒绝了刚才的输入：{last.error}。照它给的示例改正后再调用一次。",
            f"{last.tool} rejected my input: {last.error}. I write it as its example shows and call it again. ",
        ) + thought
    return build_reply(conv, Act(thought, calls))


def mistaken(conv: Conversation, call: Call) -> Call:
    """The call with the mistake a model makes in its arguments, for text ReAct:

    several arguments   the last one left out, the rest as a JSON object (a missing field)
    one id (digits)     a JSON object with the id as a number where the tool's example shows a string,
                        or as a string where it shows a number (a wrong type)
    anything else       unchanged
    """
    example = json_example_in(conv.tools.get(call.tool, ""))
    if len(call.args) >= 2:
        kept = dict(list(call.args.items())[:-1])
        return replace(call, args=kept, json_example=call.json_example if call.json_example is not None else example or {})
    value = next(iter(call.args.values()), None)
    if not isinstance(value, str) or not value.isdigit():
        return call
    key = next(iter(rename_arguments(call.args, list(example or {}))))
    wanted = (example or {}).get(key)
    flipped = "0" if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) else 0
    return replace(call, json_example={key: flipped})


def _mistaken_native(conv: Conversation, call: Call) -> dict:
    """The same mistakes in function-calling arguments: the wrong type judged by the tool's schema."""
    arguments = native_arguments(conv, call)
    if len(arguments) >= 2:
        return dict(list(arguments.items())[:-1])
    if len(arguments) == 1:
        key, value = next(iter(arguments.items()))
        spec = ((conv.schemas.get(call.tool) or {}).get("properties") or {}).get(key)
        wanted = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return {key: str(value)}
        if isinstance(value, str) and value.isdigit() and wanted not in ("integer", "number"):
            return {key: int(value)}
    return arguments


def forgets_action(conv: Conversation) -> Reply:
    """`classroom-forgets-action`: the first reply to a request stops after its Thought."""
    step = plan(conv)
    if conv.rounds == 0 and isinstance(step, Act) and not conv.native:
        return Reply(f"Thought: {step.thought}\n")
    return build_reply(conv, step)


def gullible(conv: Conversation) -> Reply:
    """`classroom-gullible`: a planted instruction first, then the careful plan (gullible.py)."""
    return build_reply(conv, gullible_step(conv))


VARIANTS: dict[str, Callable[[Conversation], Reply]] = {
    "classroom": careful,
    "classroom-sloppy": sloppy,
    "classroom-no-final": no_final,
    "classroom-loop": loop,
    "classroom-rephrase": rephrase,
    "classroom-wrong-tool": wrong_tool,
    "classroom-verbose": verbose,
    "classroom-ignores-stop": ignores_stop,
    "classroom-split-stop": split_stop,
    "classroom-bad-args": bad_args,
    "classroom-forgets-action": forgets_action,
    "classroom-gullible": gullible,
}


def chat(conv: Conversation) -> Reply:
    """Plain chat (no tools declared): every variant answers the same short text."""
    return Reply(chat_reply(conv))
