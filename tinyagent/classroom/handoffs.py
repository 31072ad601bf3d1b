"""Lesson 21: the classroom model as a triage agent, and as a specialist that hands a request back.

    triage      offered handoff tools (handOffTo<Name>, each described with "(tools: a, b)"): hands the request,
                in the customer's words, to the specialist with the fewest tools that cover what it needs
                (plan_and_reflect.NEEDS; the first listed on a tie, as lesson 17's skill chooser does);
                reads the specialist's answer and passes it on; after a hand-back, hands on to the next
                specialist that fits, or says what cannot be done. A request that needs no shop tool it
                answers itself, as the careful model does.
    specialist  offered handBack beside its tools: when the request needs a kind of tool it was not given,
                it hands the request back with one sentence saying what is missing, instead of answering.
"""

from __future__ import annotations

import re

from tinyagent.classroom.conversation import Conversation, tool_kind
from tinyagent.classroom.intents import detect_intent
from tinyagent.classroom.plan_and_reflect import NEEDS, listed_tools
from tinyagent.classroom.planning import Act, Answer, Call

_TOOLS_NOTE = re.compile(r"[(（](?:tools|工具)\s*[:：]\s*([^)）]*)[)）]")
_KIND_NAMES = {"order": "queryOrder", "logistics": "queryLogistics", "refund": "applyRefund",
               "knowledge": "searchKnowledge", "time": "getCurrentTime"}


def plan_handoffs(conv: Conversation) -> Act | Answer | None:
    """The triage's or a specialist's next step; None when the conversation is neither's."""
    handoffs = {name: text for name, text in conv.tools.items() if tool_kind(name) == "handoff"}
    if handoffs:
        return _triage(conv, handoffs)
    back = conv.tool_for("handback")
    return _hand_back(conv, back) if back is not None else None


def _triage(conv: Conversation, handoffs: dict[str, str]) -> Act | Answer | None:
    tried = [step for step in conv.steps if step.kind == "handoff" and step.ran]
    if tried and isinstance(tried[-1].data, dict) and tried[-1].data.get("answer"):
        said = tried[-1].data
        return Answer(conv.say(f"{said.get('agent')} 专员已经答复，我把它的答复转告顾客。",
                               f"The {said.get('agent')} agent has answered; I pass its answer on."),
                      str(said["answer"]))
    needed = NEEDS.get(detect_intent(conv))
    if needed is None and not tried:
        return None  # no shop tool needed (a greeting, a question outside the shop): the careful model answers
    used = {step.tool for step in tried}
    fits = sorted((count, listed, name) for listed, (name, count) in enumerate(_covering(handoffs, needed or set()))
                  if name not in used)
    if not fits:
        note = str(tried[-1].data.get("handed_back", "")) if tried and isinstance(tried[-1].data, dict) else ""
        return Answer(conv.say("没有哪位专员能处理这个请求，如实告诉顾客。", "No specialist can handle this; I say so."),
                      conv.say(f"抱歉，这个请求我们现在处理不了。{note}", f"Sorry, we cannot handle this request now. {note}")
                      .strip())
    target = fits[0][2]
    who = target.removeprefix("handOffTo").lower()
    if tried:
        thought = conv.say(f"上一位专员把请求交回了：{tried[-1].data.get('handed_back', '')}。改交给 {who}。",
                           f"The last specialist handed it back ({tried[-1].data.get('handed_back', '')}); "
                           f"I hand it to {who} instead.")
    else:
        tools = ", ".join(sorted(_KIND_NAMES.get(kind, kind) for kind in needed))
        thought = conv.say(f"这个请求需要 {tools}，{who} 专员有这些工具，我把顾客的原话转交给它。",
                           f"This request needs {tools}; the {who} agent has them, so I hand it the "
                           "customer's words.")
    return Act(thought, (Call("handoff", target, {"content": conv.request}),))


def _covering(handoffs: dict[str, str], needed: set[str]) -> list[tuple[str, int]]:
    """The handoff tools whose specialist's tools (their description's "(tools: ...)") cover the kinds `needed`,
    in the order listed, each with how many tools its specialist has."""
    found = []
    for name, text in handoffs.items():
        note = _TOOLS_NOTE.search(text)
        tools = listed_tools(note.group(1)) if note else []
        if needed <= {tool_kind(tool) for tool in tools}:
            found.append((name, len(tools)))
    return found


def _hand_back(conv: Conversation, back: str) -> Act | Answer | None:
    """A specialist hands back a request that needs a kind of tool it was not given; None when it has them."""
    done = conv.result("handback")
    if done is not None:  # alone, outside a team, handBack ran: say where the request must go
        return Answer(conv.say("我已经把请求交回。", "I have handed the request back."),
                      conv.say("这个请求不归我处理，已经交回分诊。", "This request is not mine to handle; I handed it back."))
    needed = NEEDS.get(detect_intent(conv))
    offered = {tool_kind(name) for name in conv.tools}
    missing = sorted((needed or set()) - offered)
    if not missing:
        return None
    names = ", ".join(_KIND_NAMES.get(kind, kind) for kind in missing)
    note = conv.say(f"这个请求需要 {names}，我没有这些工具。", f"This request needs {names}, which I do not have.")
    return Act(conv.say(f"要处理这个请求得用 {names}，但我的工具里没有，交回分诊。",
                        f"Handling this needs {names}, which is not among my tools: I hand it back."),
               (Call("handback", back, {"content": note}),))
