"""Lessons 08 and 09: a lean prompt whose own words are French, Spanish or German passed as English; the lesson's
sentence on `Steps: ...` lines said more than the tool-list reader does; and an answer run in a capped pool of threads
took `patience` s a turn to fail. Each wrong answer fails with a message that names the mistake; right answers pass."""

from __future__ import annotations

import asyncio
import functools
import json
import time

from tests.test_exercises import fails, lean_prompt, passes, tool_messages, tool_messages_with
from tinyagent.checks import check_lean_prompt, check_tool_messages


# -- 08, exercise 1: an English prompt ------------------------------------------------------------------------------
def _listed(tools) -> str:
    return "".join(f"{tool.name}: {tool.describe('en')}\n" for tool in tools)


def _around(heading: str, tail: str):
    """A lean prompt with the solution's shape: `heading`, the tools one per line, then `tail` (the keys)."""
    return lambda tools: heading + _listed(tools) + tail


def test_08_lean_prompt_whose_own_words_are_another_language_fails():
    french = _around("Outils :\n", "Répondez avec\nThought: ...\nAction: <un outil>\nAction Input: <son entrée>\n"
                     "puis arrêtez : l'Observation revient. Pour répondre :\nThought: ...\nFinal Answer: ...\n")
    spanish = _around("Herramientas\n", "Responde con\nThought: ...\nAction: <herramienta>\nAction Input: <entrada>\n"
                      "y para: la Observation vuelve. Para responder:\nThought: ...\nFinal Answer: ...\n")
    german = _around("Werkzeuge:\n", "Antworte so\nThought: ...\nAction: <ein Werkzeug>\nAction Input: <Eingabe>\n"
                     "dann stopp: die Observation kommt zurück. Zum Antworten:\nThought: ...\nFinal Answer: ...\n")
    # written without accents: its small words still tell
    plain_french = _around("Outils:\n", "Reponds avec\nThought: ...\nAction: <un outil>\nAction Input: <son entree>\n"
                           "puis stop: l'Observation revient. Pour repondre:\nThought: ...\nFinal Answer: ...\n")
    russian = _around("Инструменты\n", "Отвечай так\nThought: ...\nAction: <инструмент>\nAction Input: <ввод>\n"
                      "потом стоп: вернётся Observation. Ответ:\nThought: ...\nFinal Answer: ...\n")
    japanese = _around("ツール\n", "こう答えて\nThought: ...\nAction: <ツール>\nAction Input: <入力>\n"
                       "それから止まる、Observation が返る。回答は\nThought: ...\nFinal Answer: ...\n")
    fails(check_lean_prompt, french, says="the words around the tools are not English ('Outils', 'Répondez', 'avec')")
    fails(check_lean_prompt, spanish, says="are not English ('Herramientas', 'Responde', 'herramienta')")
    fails(check_lean_prompt, german, says="are not English ('Werkzeuge', 'Antworte', 'ein')")
    fails(check_lean_prompt, plain_french, says="are not English ('Outils', 'Reponds', 'avec')")
    fails(check_lean_prompt, russian, says="are not English ('Инструменты', 'Отвечай', 'так')")
    fails(check_lean_prompt, japanese, says="are not English ('ツール', 'こう答えて', '入力')")
    for answer in (french, spanish, german, russian, japanese):
        fails(check_lean_prompt, answer, says="the spec asks for an English prompt")
    chinese = _around("工具：\n", "格式：\nThought: …\nAction: 工具名\nAction Input: 输入\n"
                      "然后停下，等 Observation。回答：\nThought: …\nFinal Answer: …\n")
    fails(check_lean_prompt, chinese, says="the words around the tools are Chinese ('工具')")


def test_08_lean_prompts_worded_every_english_way_pass():
    keys = "Thought: ...\nAction: <tool>\nAction Input: <input>\n"
    terse = _around("Tools:\n", f"Format:\n{keys}Observation: <result>\n... then\nThought: ...\nFinal Answer: ...\n")
    wordy = _around("Use these tools:\n", f"Write\n{keys}and stop: you get the Observation.\nAt the end, "
                    "Final Answer: ...\n")

    def numbered(tools):
        listed = "".join(f"{n}. {tool.name} - {tool.describe('en')}\n" for n, tool in enumerate(tools, 1))
        return listed + f"{keys}Don’t write the Observation: it’s the tool’s, e.g. JSON.\nFinal Answer: ...\n"

    def bullets(tools):
        listed = "".join(f"- {tool.name}: {tool.describe('en')}\n" for tool in tools)
        return f"Tools:\n{listed}One tool at a time; wait for its Observation.\n{keys}Finish with\nFinal Answer: ...\n"

    in_their_language = _around("Tools:\n", f"{keys}Wait for the Observation. Reply in the customer's language "
                                "(中文 or English):\nFinal Answer: ...\n")
    for answer in (lean_prompt, terse, wordy, numbered, bullets, in_their_language):
        assert passes(check_lean_prompt, answer), answer


# -- 08, exercise 1: the sentence on `Steps: ...` lines, as the reader does it ---------------------------------------
def _replaced(old: str, new: str):
    """The solution's prompt with `old` replaced by `new`."""
    return lambda tools: lean_prompt(tools).replace(old, new)


def test_08_steps_line_reads_as_a_tool_only_where_the_exercise_says():
    below = _replaced("Reply with\n", "Steps: think, act, answer.\nReply with\n")
    above = _replaced("Tools:\n", "Tools:\nSteps: think, act, answer.\n")  # right above the first tool
    paired = _replaced("Reply with\n", "Steps: think, act, answer.\nLimits: one tool a reply.\nReply with\n")
    # alone below the list the reader does not take it for a tool: the exercise no longer says it does
    assert passes(check_lean_prompt, below)
    fails(check_lean_prompt, above, says="'Steps' comes from lines shaped like the list's entries (`Word: text`)")
    fails(check_lean_prompt, paired, says="'Steps', 'Limits' come from lines shaped like the list's entries")


# -- 09, exercise 1: calls run in turns fail in `patience` s, once ---------------------------------------------------
def _answered(message, run_tool, results):
    calls = message["tool_calls"]
    return [{"role": "tool", "tool_call_id": call["id"], "content": text} for call, text in zip(calls, results)]


def _one(call, run_tool):
    """One call's content, as the solution answers it, in the thread it is called in."""
    try:
        arguments = json.loads(call["function"]["arguments"] or "{}")
    except ValueError as error:
        return json.dumps({"error": f"the arguments are not valid JSON: {error}"})
    if not isinstance(arguments, dict):
        return json.dumps({"error": "the arguments are not a JSON object"})
    try:
        return run_tool(call["function"]["name"], arguments)
    except Exception as error:  # noqa: BLE001 - a failing tool is an error the model reads
        return json.dumps({"error": f"{type(error).__name__}: {error}"}, ensure_ascii=False)


eight_threads = tool_messages_with(workers=lambda calls: 8)  # enough for the reply of five calls, not for 33


def with_asyncio(message, run_tool):  # asyncio.to_thread: asyncio's own pool, min(32, cpus + 4) threads
    async def gathered():
        return await asyncio.gather(*(asyncio.to_thread(_one, call, run_tool) for call in message["tool_calls"]))

    return _answered(message, run_tool, asyncio.run(gathered()))


def _seconds_to_fail(answer, patience: float, says: str) -> float:
    start = time.monotonic()
    fails(functools.partial(check_tool_messages, patience=patience), answer, says=says)
    return time.monotonic() - start


def test_09_a_pool_of_threads_too_small_fails_within_patience_once():
    patience = 2.0
    # 32 queryOrder calls in turns of 8: each turn waited `patience` s of its own, 4 turns in all
    took = _seconds_to_fail(eight_threads, patience, "a pool of fewer than 33 threads runs the calls in turns")
    assert took < 3 * patience, took


def test_09_asyncio_answer_is_told_about_asyncio_and_fails_within_patience_once():
    patience = 2.0
    took = _seconds_to_fail(with_asyncio, patience, "asyncio runs the calls in its own pool of threads")
    assert took < 3 * patience, took
    fails(functools.partial(check_tool_messages, patience=0.5), with_asyncio, says="passed to loop.run_in_executor")


def test_09_solution_still_passes():
    assert passes(check_tool_messages, tool_messages)
