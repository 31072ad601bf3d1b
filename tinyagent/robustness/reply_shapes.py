"""Real failure shapes of ReAct replies: lesson 11's regression table, and the cases of its tests.

Each shape is one reply as some model really writes it (where it was seen is in `source`), for the
refund or the parcel request of the course. Lesson 11 prints how `parse_step` and `parse_tolerant` read
every one; tests/test_tolerant_parser.py pins what the tolerant parser must make of each. A new failure
seen in the wild becomes a new row here, and a test.
"""

from __future__ import annotations

from typing import NamedTuple


class ReplyShape(NamedTuple):
    name: str
    text: str
    source: str
    finish_reason: str = "stop"


_REFUND_INPUT = '{"orderId":"88231","reason":"质量问题：扫地机不回充"}'

REPLY_SHAPES: tuple[ReplyShape, ...] = (
    ReplyShape("well-formed", "Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n",
               "the format the prompt asks for"),
    ReplyShape("Markdown bold keys", "**Thought:** I need the order first.\n**Action:** queryOrder\n"
               "**Action Input:** 88231\n", "chat models that format everything; classroom-sloppy round 1"),
    ReplyShape("lower-case keys", "thought: the order is signed.\naction: getCurrentTime\naction input:\n",
               "small models; classroom-sloppy round 2"),
    ReplyShape("full-width colons", "Thought：需要看售后政策。\nAction：searchKnowledge\nAction Input：扫地机 退货 政策\n",
               "a Chinese keyboard; classroom-sloppy round 3"),
    ReplyShape("Action: inside the Thought", "Thought: The Action: searchKnowledge before has its result.\n"
               f"Action: applyRefund\nAction Input: {_REFUND_INPUT}\n", "classroom-sloppy round 4; lesson 05"),
    ReplyShape("input in a code fence", f"Thought: I can submit it.\nAction: applyRefund\nAction Input:\n```json\n"
               f"{_REFUND_INPUT}\n```\n", "chat models showing JSON; the second article strips ```json"),
    ReplyShape("answer in a code fence", "Thought: The refund went through.\nFinal Answer:\n```\n"
               "Refund RF202606300001 has been submitted.\n```", "classroom-sloppy round 5"),
    ReplyShape("whole reply in a fence", "```\nThought: I need the order first.\nAction: queryOrder\n"
               "Action Input: 88231\n```", "chat models that treat the format as code"),
    ReplyShape("Action: tool[arg]", "Thought: I need the order first.\nAction: queryOrder[88231]",
               "the ReAct paper's Search[...] style, older LangChain prompts"),
    ReplyShape("Action 1: numbered", "Thought 1: I need the order first.\nAction 1: queryOrder\n"
               "Action Input 1: 88231", "the ReAct paper's numbered steps"),
    ReplyShape("tool name in backticks", "Thought: I need the order first.\nAction: `queryOrder`\n"
               "Action Input: 88231", "Markdown habits"),
    ReplyShape("tool name + comment", "Thought: I need the order first.\nAction: queryOrder (to see when it "
               "was signed for)\nAction Input: 88231", "models that explain themselves"),
    ReplyShape("tool name in lower case", "Thought: I need the order first.\nAction: queryorder\n"
               "Action Input: 88231", "small models"),
    ReplyShape("article 2: Reason / ActionInput", "Reason: 用户要退款，先查订单。\nAction: queryOrder\nActionInput: 88231",
               "the second article's prompt spells the keys this way"),
    ReplyShape("article 2: keys on one line", f"Reason: 签收第 8 天，可以退。 Action: applyRefund ActionInput: {_REFUND_INPUT}",
               "the second article's example output"),
    ReplyShape("article 2: FinalAnswer", "Reason: 退款已提交。 FinalAnswer: 退款申请已提交，退款单号 RF202606300001。",
               "the second article's example output"),
    ReplyShape("JSON agent", 'Thought: I need the order first.\n```json\n{"action": "queryOrder", '
               '"action_input": "88231"}\n```', "LangChain's JSON and structured-chat agents"),
    ReplyShape("JSON agent: Final Answer", '{"action": "Final Answer", "action_input": "Your parcel was signed '
               'for on 22 June."}', "LangChain's JSON agent"),
    ReplyShape("tool call as JSON", '<tool_call>\n{"name": "queryOrder", "arguments": {"orderId": "88231"}}\n'
               "</tool_call>", "small models trained on function calling, given a text prompt"),
    ReplyShape("CRLF line ends", "Thought: The refund went through.\r\nFinal Answer: Refund RF202606300001 "
               "is submitted.\r\nIt arrives in 1-3 working days.", "Windows-born text, some proxies"),
    ReplyShape("cut by max_tokens", "Thought: I need the order first.\nAction: queryOrder\nAction Input: 882",
               "a small max_tokens; classroom-verbose", finish_reason="length"),
    ReplyShape("Action and Final Answer", f"Thought: It is faulty, so I refund it.\nAction: applyRefund\n"
               f"Action Input: {_REFUND_INPUT}\nFinal Answer: Your refund RF20260629001 is on its way.",
               "a model typing past its Action (lesson 04)"),
    ReplyShape("invented Observation", f"Thought: It is faulty, so I refund it.\nAction: applyRefund\n"
               f"Action Input: {_REFUND_INPUT}\nObservation: {{\"refundId\":\"RF20260629001\"}}\n"
               "Thought: Done.\nFinal Answer: Your refund RF20260629001 is on its way.",
               "a server that ignores stop (lesson 04)"),
    ReplyShape("Final Answer: in a Thought", "Thought: Too early for a Final Answer: I need the order first.\n"
               "Action: queryOrder\nAction Input: 88231", "lesson 05"),
    ReplyShape("Action: None", "Thought: No tool is needed.\nAction: None\nFinal Answer: Hello! How can I help?",
               "models that fill in every key"),
    ReplyShape("Thought only", "Thought: I should look the order up first.", "classroom-forgets-action"),
    ReplyShape("two steps in one reply", "Thought: Order, then parcel.\nAction: queryOrder\nAction Input: 88231\n"
               "Action: queryLogistics\nAction Input: SF1234567890", "models that plan ahead in one reply"),
    ReplyShape("Chinese keys", "思考：先查订单。\n行动：queryOrder\n行动输入：88231", "a Chinese prompt, keys translated"),
    ReplyShape("plain prose", "您好，您的包裹已于 6 月 22 日签收。", "classroom-no-final; lesson 06's fallback"),
    ReplyShape("empty reply", "", "a model that said nothing"),
)
