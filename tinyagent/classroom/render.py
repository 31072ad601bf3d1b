"""How the careful classroom model writes a step: the exact text format the ReAct prompt asks for.

    Thought: <reasoning>
    Action: <tool>
    Action Input: <input>

or, when it is done,

    Thought: <why it can answer now>
    Final Answer: <the reply>

Each key starts its own line. An Action step ends with a newline, so that whatever the model goes on to
type (an invented "Observation:", in lesson 04) also starts a line of its own: a stop sequence then cuts
exactly after "Action Input: ...\\n".
"""

from __future__ import annotations

from tinyagent.classroom.planning import Act, Answer


def action_text(thought: str, tool: str, tool_input: str) -> str:
    lines = [f"Thought: {thought}", f"Action: {tool}", f"Action Input: {tool_input}".rstrip()]
    return "\n".join(lines) + "\n"


def final_text(thought: str, answer: str) -> str:
    return f"Thought: {thought}\nFinal Answer: {answer}"


def step_text(step: Act | Answer) -> str:
    """The careful text of a step (in text ReAct an Act makes only its first call)."""
    if isinstance(step, Act):
        first = step.calls[0]
        return action_text(step.thought, first.tool, first.input)
    return final_text(step.thought, step.answer)
