"""Lesson 25, defence (c): least privilege. A task gets only the tools its skill needs, so a planted instruction
finds nothing to call.

A question about a parcel needs queryOrder and queryLogistics; nothing it could be talked into should be able to
write a refund or send a message. Lesson 17's skills already say which tools each kind of request needs
(`shop/skills/*.md`), and lesson 21's specialists each run on their skill's `SkillRegistry`: that is least privilege
per agent, with no new code. For one agent, this module scopes each run to one skill with two parts, both reusing
the `SkillRegistry` of lesson 17:

    OfferOnly(skill)   request: the system prompt lists only the skill's tools (and function calling sends only
                       theirs)
    RunOnly(skill)     act: a call to any other tool is answered by the skill registry's error, and does not run

    agent = ReActAgent(llm, tools, parts=least_privilege(shop_skills()["logistics"]))

What it cannot do: a task whose skill holds the write tool (a refund request has applyRefund) can still be talked
into using it on the wrong order; that is defence (b)'s and (d)'s work. And "read-only" is about the shop's tables,
not about what leaves: a tool the skill allows still sends its input where it goes (getWeather's city to the
weather page's host, a hostile MCP server's tool its arguments to that server), so a planted "look up the weather
for <the customer's phone>" carries the phone out under every defence here.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any, ClassVar

from tinyagent.architectures.skills import Skill
from tinyagent.events import Event
from tinyagent.registry import ToolResult
from tinyagent.tools import Action


def as_skill(skill: Skill | Iterable[str]) -> Skill:
    """A lesson 17 skill, or one made of tool names only (no instructions)."""
    if isinstance(skill, Skill):
        return skill
    names = (skill,) if isinstance(skill, str) else tuple(skill)
    return Skill("only " + ", ".join(names), "the tools this task needs", names, "")


class OfferOnly:
    """The request part: the system prompt (or the `tools` of function calling) offers only the skill's tools.
    The ReAct prompt's tool list is narrowed where it stands, so a rule another part added (FencedData's) stays; a
    `system_prompt` given to the agent is the author's own text and is sent as it is (RunOnly still refuses)."""

    slot: ClassVar[str] = "request"

    def __init__(self, skill: Skill | Iterable[str], inner: Any = None):
        self.skill = as_skill(skill)
        self.inner = inner

    def around(self, inner: Any) -> OfferOnly:
        return OfferOnly(self.skill, inner)

    def build(self, run: Any, closing: bool = False) -> tuple[list[dict], dict]:
        messages, options = self.inner.build(run, closing)
        allowed = set(self.skill.tools)
        if options.get("tools"):
            options = {**options, "tools": [t for t in options["tools"] if t["function"]["name"] in allowed]}
        elif messages and messages[0].get("role") == "system" and not run.agent.system_prompt:
            whole = run.agent.prompt_for(run.lang)
            scoped = run.agent.prompt_for(run.lang, self.skill.scope(run.agent.tools))
            content = str(messages[0].get("content") or "")
            # Only the prompt's own text is swapped: what another part added to it (defence (a)'s rule) stays.
            content = content.replace(whole, scoped, 1) if whole in content else scoped
            messages = [{**messages[0], "content": content}, *messages[1:]]
        return messages, options

    def __repr__(self) -> str:
        return f"OfferOnly({self.skill.name!r}, {self.inner!r})"


class RunOnly:
    """The act part: a call outside the skill gets the skill registry's error in its place (it does not run)."""

    slot: ClassVar[str] = "act"

    def __init__(self, skill: Skill | Iterable[str], inner: Any = None):
        self.skill = as_skill(skill)
        self.inner = inner

    def around(self, inner: Any) -> RunOnly:
        return RunOnly(self.skill, inner)

    def _outside(self, run: Any, actions: list[Action], ready: list[ToolResult | None]) -> list[ToolResult | None]:
        scoped = self.skill.scope(run.agent.tools)
        return [done or (scoped.run(a) if a.tool_name.strip() not in self.skill.tools else None)
                for a, done in zip(actions, ready)]

    def __call__(self, run: Any, step: int, actions: list[Action], ready: list[ToolResult | None]
                 ) -> Generator[Event, None, Iterable[ToolResult]]:
        return (yield from self.inner(run, step, actions, self._outside(run, actions, ready)))

    def perform(self, run: Any, actions: list[Action], ready: list[ToolResult | None]) -> Iterable[ToolResult]:
        return self.inner.perform(run, actions, self._outside(run, actions, ready))

    def __repr__(self) -> str:
        return f"RunOnly({self.skill.name!r}, {self.inner!r})"


def least_privilege(skill: Skill | Iterable[str]) -> list[Any]:
    """Both parts for one skill: `parts=[*least_privilege(skill), ...]`."""
    return [OfferOnly(skill), RunOnly(skill)]
