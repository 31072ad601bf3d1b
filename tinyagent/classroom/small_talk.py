"""Answers that need no tool: hello, who are you, what is ReAct, a polite no, and plain chat.

Plain chat is what the model says when the request offers no tools at all (lesson 03's first call): a
short reply, no ReAct format. It knows very little, and says so: it is a scripted teaching model, and
the honest answer to most questions is to point at a real one.
"""

from __future__ import annotations

from tinyagent.classroom.conversation import Conversation, tool_kind
from tinyagent.classroom.intents import is_greeting
from tinyagent.classroom.planning import Answer
from tinyagent.classroom.vocabulary import IDENTITY, LOGISTICS, REFUND

# --- what the assistant can do --------------------------------------------------------------------------

CAPABILITIES = {
    "order": ("查询订单", "look up orders"),
    "logistics": ("查询物流", "track parcels"),
    "refund": ("申请退款", "request refunds"),
    "knowledge": ("解答售后政策", "answer after-sales policy questions"),
    "time": ("查询当前时间", "tell the current time"),
    "weather": ("查询天气", "check the weather"),
    "write_file": ("把内容写入文件", "write text to a file"),
    "read_file": ("读取工作区里的文件", "read files in the workspace"),
    "list_files": ("列出工作区里的文件", "list the files in the workspace"),
    "calculator": ("做算术", "do arithmetic"),
}
SHOP_KINDS = ("order", "logistics", "refund", "knowledge")


def capabilities(conv: Conversation) -> str:
    """What the offered tools let the assistant do, as a list in the user's language."""
    phrases = []
    for name in conv.tools:
        zh, en = CAPABILITIES.get(tool_kind(name) or "", (f"使用 {name}", f"use {name}"))
        phrases.append(conv.say(zh, en))
    if not phrases:
        return conv.say("和您聊聊", "chat")
    if conv.zh:
        return "、".join(phrases)
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def who_i_am(conv: Conversation) -> str:
    if any(conv.tool_for(kind) for kind in SHOP_KINDS):
        return conv.say("比特严选的客服助手", "the customer-service assistant of Bit Mall")
    return conv.say("一个会使用工具的助手", "an assistant that uses tools")


def cannot(conv: Conversation, what_zh: str, what_en: str) -> Answer:
    """The answer when the tool a plan needs was not offered: say so, never pretend."""
    return Answer(
        conv.say(
            f"要{what_zh}，但工具列表里没有能做这件事的工具。",
            f"To {what_en} I would need a tool I was not given.",
        ),
        conv.say(
            f"抱歉，我现在没有办法{what_zh}。我可以帮您：{capabilities(conv)}。",
            f"Sorry, I have no way to {what_en} here. I can {capabilities(conv)}.",
        ),
    )


# --- no tool needed -----------------------------------------------------------------------------------


def plan_about_react(conv: Conversation) -> Answer:
    return Answer(
        conv.say(
            "这是关于 ReAct 的概念问题，不需要调用工具。", "A question about ReAct itself: no tool needed."
        ),
        REACT_DEFINITION[conv.lang],
    )


REACT_DEFINITION = {
    "en": "A ReAct agent is a loop in which a language model alternates between reasoning about the task "
    "(Thought), calling a tool (Action) and reading what the tool returned (Observation), until it can "
    "give a Final Answer.",
    "zh": "ReAct 智能体让大模型在一个循环里交替推理（Thought）、调用工具（Action）、阅读工具结果（Observation），"
    "直到能给出最终答案（Final Answer）。",
}


def plan_identity(conv: Conversation) -> Answer:
    return Answer(
        conv.say("用户问我是谁，不需要调用工具。", "The user asks who I am: no tool needed."),
        conv.say(
            f"我是 tinyagent 的课堂模型（classroom model）：一个按固定规则回答的教学模型，不是真正的大语言模型。"
            f"在这里我扮演{who_i_am(conv)}，可以帮您：{capabilities(conv)}。",
            f"I am the tinyagent classroom model: a scripted teaching model, not a real language model. Here "
            f"I play {who_i_am(conv)}, and I can {capabilities(conv)}.",
        ),
    )


def plan_greeting(conv: Conversation) -> Answer:
    return Answer(
        conv.say("用户在打招呼，不需要调用工具。", "The user says hello: no tool needed."),
        conv.say(
            f"您好！我是{who_i_am(conv)}，可以帮您：{capabilities(conv)}。请问有什么可以帮您？",
            f"Hello! I am {who_i_am(conv)}. I can {capabilities(conv)}. How can I help?",
        ),
    )


def plan_decline(conv: Conversation) -> Answer:
    return Answer(
        conv.say(
            "这个请求和我的职责无关，手上的工具也帮不上忙。应该礼貌地说明，并告诉用户我能做什么。",
            "This request is outside my job, and none of my tools can help. I decline politely and say what "
            "I can do.",
        ),
        conv.say(
            f"抱歉，这件事我帮不上忙。我是{who_i_am(conv)}，可以帮您：{capabilities(conv)}。",
            f"Sorry, I can't help with that. I am {who_i_am(conv)}; I can {capabilities(conv)}.",
        ),
    )


def plan_thanks(conv: Conversation) -> Answer:
    return Answer(
        conv.say("用户在道谢，不需要调用工具。", "The user says thank you: no tool needed."),
        conv.say("不客气！还有其他需要帮忙的，随时告诉我。", "You're welcome! Let me know if there is anything else."),
    )


def plan_clarify(conv: Conversation) -> Answer:
    """About the shop, but the model cannot tell what is asked: it says so and asks, it does not guess."""
    return Answer(
        conv.say(
            "用户说的和购物有关，但我没看懂具体想做什么。不能猜，也不能贸然调用工具，先问清楚。",
            "This is about the shop, but I cannot tell what the customer wants. I will not guess or call a tool; "
            "I ask.",
        ),
        conv.say(
            f"抱歉，我没太明白您想办什么。我可以帮您：{capabilities(conv)}。"
            "请告诉我您想做哪一件，需要订单的话请附上订单号（5 位数字）。",
            f"Sorry, I did not understand what you would like me to do. I can {capabilities(conv)}. Tell me "
            "which one, with the order number (5 digits) if it is about an order.",
        ),
    )


# --- plain chat: no tools offered ---------------------------------------------------------------------


def chat_reply(conv: Conversation) -> str:
    text = conv.request
    if "react" in text.lower():
        return REACT_DEFINITION[conv.lang]
    if IDENTITY.found_in(text):
        return conv.say(
            "我是 tinyagent 的课堂模型（classroom model）：一个按固定规则回答的教学模型，不是真正的大语言模型。"
            "给我一个列出工具的 ReAct 系统提示词，我就扮演比特严选的客服助手。",
            "I am the tinyagent classroom model: a scripted teaching model, not a real language model. Give me a "
            "ReAct system prompt that lists tools, and I play the Bit Mall customer-service assistant.",
        )
    if is_greeting(text):
        return conv.say(
            "你好！我是 tinyagent 的课堂模型。可以问我什么是 ReAct 智能体，或者把比特严选的工具交给我，让我处理一个客户请求。",
            "Hello! I am the tinyagent classroom model. Ask me what a ReAct agent is, or give me the Bit Mall "
            "tools and a customer request.",
        )
    if conv.order_ids or REFUND.found_in(text) or LOGISTICS.found_in(text):
        return conv.say(
            "这个我查不了：这次请求里没有提供任何工具，而我不会编造订单数据。请在系统提示词里列出比特严选的工具再问我。",
            "I cannot look that up: this request offers no tools, and I do not make up order data. List the Bit "
            "Mall tools in the system prompt and ask again.",
        )
    return conv.say(
        "我是 tinyagent 的课堂模型，一个教学用的脚本模型，只会几件事：解释 ReAct 智能体，以及在给了工具时扮演比特严选的客服。"
        "想问别的问题，请在 .env 里配置一个真实的模型。",
        "I am the tinyagent classroom model, a scripted teaching model that knows only a few things: what a ReAct "
        "agent is, and how to play the Bit Mall assistant when it is given tools. For anything else, configure a "
        "real model in .env.",
    )
