"""Reading the model's text: the line scanner of lesson 05 and `Final Answer` extraction.

The model writes lines that start with a keyword:

    Thought: ...
    Action: queryOrder
    Action Input: 88231

`parse_step` scans them line by line. Two traps it handles:

* Prefix ambiguity. "Action Input: 88231" also starts with "Action", so a scanner that tests a bare
  "Action" first reads the tool name as "Input: 88231". Here every key ends in its colon, so none is the
  start of another; the keys are kept longest first all the same, so a looser key added later stays safe.
* Keywords inside prose. Only a keyword at the *start* of a line counts, so "Thought: I will use
  Action: queryOrder" is a thought, not an action.

One key is the exception, as in the first article: "Final Answer:" counts wherever it appears, and the answer
runs to the end of the text. That forgives a model that starts its answer mid-line, at a price that
lesson 05 shows: a Thought that merely mentions "Final Answer:" ends the run.

This parser is strict on purpose: a later lesson builds a forgiving one for sloppy models.
"""

from __future__ import annotations

from dataclasses import dataclass

from tinyagent.tools import Action

FINAL_ANSWER = "Final Answer:"

# Longest first: with the colons no key starts another, and a looser one added later cannot fall into the prefix trap.
_KEYS = ("Action Input:", "Final Answer:", "Observation:", "Thought:", "Action:")


@dataclass(frozen=True, repr=False)
class ParsedStep:
    """What one reply says. Exactly one of `action` / `final_answer` is set, or neither.

    rule names what the parser decided, so traces can say why:
      "final_answer"  the reply holds "Final Answer:" (anywhere, even mid-line)
      "action"        the reply has an "Action:" line (and maybe "Action Input:")
      "no_format"     neither: the agent falls back to treating the text as the answer
    A more forgiving reader may name rules of its own, and what it repaired in parentheses:
    "action (Markdown around keys)".

    error says what is wrong when nothing usable was found (this strict parser never sets it).
    """

    thought: str
    action: Action | None
    final_answer: str | None
    rule: str
    error: str | None = None

    def __repr__(self) -> str:
        # `error` is shown only when there is one, so a strict parse prints as it did in lesson 05.
        error = "" if self.error is None else f", error={self.error!r}"
        return (
            f"ParsedStep(thought={self.thought!r}, action={self.action!r}, "
            f"final_answer={self.final_answer!r}, rule={self.rule!r}{error})"
        )


def split_keyed_lines(text: str) -> list[tuple[str | None, str]]:
    """Group the text into (key, value) sections; a line with no key continues the section above.

    A value may span lines (a multi-line Thought, JSON input written over several lines).
    Text before the first key gets the key None.
    """
    sections: list[tuple[str | None, list[str]]] = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        key = next((k for k in _KEYS if stripped.startswith(k)), None)
        if key is not None:
            sections.append((key, [stripped[len(key):].strip()]))
        elif sections:
            sections[-1][1].append(line.rstrip())
        else:
            sections.append((None, [line.rstrip()]))
    return [(key, "\n".join(lines).strip()) for key, lines in sections]


def extract_final_answer(text: str) -> str | None:
    """The text after "Final Answer:" (to the end of the reply), or None if there is none."""
    index = (text or "").find(FINAL_ANSWER)
    if index < 0:
        return None
    return text[index + len(FINAL_ANSWER):].strip()


def parse_step(text: str) -> ParsedStep:
    """Parse one model reply into a thought and either an Action or a final answer."""
    sections = split_keyed_lines(text)
    thought = "\n".join(value for key, value in sections if key == "Thought:" and value)

    # Checked first, like the first article: a reply that reaches "Final Answer:" is an answer.
    final = extract_final_answer(text)
    if final is not None:
        return ParsedStep(thought, None, final, "final_answer")

    # The last "Action:" line wins, and the input is the "Action Input:" that follows it.
    tool_name, tool_input, seen_action = "", "", False
    for key, value in sections:
        if key == "Action:":
            tool_name, tool_input, seen_action = value, "", True
        elif key == "Action Input:" and seen_action:
            tool_input = value
        elif key == "Observation:":
            break  # anything after an Observation the model wrote itself is not this step
    if tool_name:
        return ParsedStep(thought, Action(tool_name, tool_input), None, "action")
    return ParsedStep(thought, None, None, "no_format")
