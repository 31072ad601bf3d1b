"""The shop's everyday scenarios: order status, where is my parcel, policy questions, the time.

(The refund, which needs real reasoning, has its own module: refund.py.) Each planner checks what it
still needs, calls the tool that gets it, and answers from what the Observations said: the tracking
number comes from queryOrder, the latest trace from queryLogistics, the answer to a policy question
from the top knowledge-base entry (naming its document and section when the result gives them:
citations.py). An error Observation is quoted, never papered over.
"""

from __future__ import annotations

import re

from tinyagent.classroom.citations import name_of, top_cited
from tinyagent.classroom.conversation import Conversation
from tinyagent.classroom.intents import has_fault
from tinyagent.classroom.planning import (
    WEEKDAYS_EN,
    WEEKDAYS_ZH,
    Act,
    Answer,
    Order,
    act,
    call,
    read_now,
    read_order,
    read_parcel,
    top_knowledge,
)
from tinyagent.classroom.refund import answer_order_error, plan_refund
from tinyagent.classroom.small_talk import cannot
from tinyagent.classroom.vocabulary import LOGISTICS, REFUND


def plan_refund_request(conv: Conversation) -> Act | Answer:
    return plan_refund(conv, conv.order_ids[0])


def plan_return_question(conv: Conversation) -> Act | Answer:
    """ "Can I return 88231?": the refund's checks, then an answer (and an offer), never the refund itself."""
    return plan_refund(conv, conv.order_ids[0], mode="question")


def plan_fault_report(conv: Conversation) -> Act | Answer:
    """ "88231 won't charge": the refund's checks, then what the rules allow, and a question: which one?"""
    return plan_refund(conv, conv.order_ids[0], mode="report")


def plan_warranty(conv: Conversation) -> Act | Answer:
    """ "Is 88231 still under warranty?": the order, today's date and the policy, then the days left."""
    return plan_refund(conv, conv.order_ids[0], mode="warranty")


def plan_order_status(conv: Conversation) -> Act | Answer:
    """queryOrder for each order asked about, then a summary of each."""
    ids = conv.order_ids
    if conv.tool_for("order") is None:
        return cannot(conv, f"查询订单 {ids[0]}", f"look up order {ids[0]}")
    missing = [i for i in ids if conv.result("order", i) is None]
    if missing:
        done = [i for i in ids if i not in missing]
        if done:
            thought = conv.say(
                f"订单 {done[-1]} 已查到，接着查订单 {missing[0]}。",
                f"Order {done[-1]} is done; next, order {missing[0]}.",
            )
        elif len(ids) > 1:
            thought = conv.say(
                f"用户问了订单 {'、'.join(ids)} 的状态，逐个查询，先查订单 {ids[0]}。",
                f"The customer asks about orders {', '.join(ids)}. One at a time: order {ids[0]} first.",
            )
        else:
            thought = conv.say(
                f"用户想知道订单 {ids[0]} 的状态，查一下订单详情。",
                f"The customer asks for the status of order {ids[0]}. I look the order up.",
            )
        return act(conv, thought, [call(conv, "order", orderId=i) for i in missing])

    if len(ids) == 1 and conv.result("order", ids[0]).error:
        return answer_order_error(conv, ids[0], conv.result("order", ids[0]).error)
    lines = [_order_summary(conv, i) for i in ids]
    return Answer(
        conv.say("订单信息已经查到，可以回复用户了。", "I have the order details, so I can answer."),
        "\n".join(lines),
    )


def _order_summary(conv: Conversation, order_id: str) -> str:
    step = conv.result("order", order_id)
    if step.error:
        return conv.say(
            f"订单 {order_id}：没有查到（系统返回：{step.error}），请核对订单号。",
            f"Order {order_id}: not found (the system said: {step.error}). Please check the number.",
        )
    order = read_order(step, order_id)
    name = _order_name(conv, order_id, order.product)
    if conv.zh:
        parts = [f"{name}当前状态：{order.status}" if order.status else name.rstrip()]
        if order.order_time:
            parts.append(f"下单时间 {order.order_time}")
        if order.sign_time:
            parts.append(f"{order.sign_time} 签收")
        parts.append(f"运单号 {order.tracking_no}" if order.tracking_no else "还没有运单号")
        return "，".join(parts) + "。"
    parts = [f"{name} is {order.status}" if order.status else name]
    if order.order_time:
        parts.append(f"ordered on {order.order_time}")
    if order.sign_time:
        parts.append(f"signed for on {order.sign_time}")
    parts.append(f"tracking number {order.tracking_no}" if order.tracking_no else "no tracking number yet")
    return ", ".join(parts) + "."


def plan_logistics(conv: Conversation) -> Act | Answer:
    """queryOrder for the tracking numbers, queryLogistics for the traces, then the latest trace of each."""
    ids, given = conv.order_ids, conv.tracking_numbers
    # 1. the orders, for their tracking numbers (the parcel tool needs those, not order ids)
    if ids and conv.tool_for("order") is None and not given:
        return cannot(conv, f"查询订单 {ids[0]} 的运单号", f"find the tracking number of order {ids[0]}")
    missing_orders = [i for i in ids if conv.tool_for("order") and conv.result("order", i) is None]
    if missing_orders:
        return act(
            conv,
            _order_thought(conv, ids, missing_orders[0]),
            [call(conv, "order", orderId=i) for i in missing_orders],
        )
    if len(ids) == 1 and not given and conv.result("order", ids[0]).error:
        return answer_order_error(conv, ids[0], conv.result("order", ids[0]).error)

    # 2. the parcels
    parcels = {}  # tracking number -> the order id it belongs to (None when the user gave the number)
    for order_id in ids:
        step = conv.result("order", order_id)
        if step and not step.error and read_order(step, order_id).tracking_no:
            parcels[read_order(step, order_id).tracking_no] = order_id
    for number in given:
        parcels.setdefault(number, None)
    if conv.tool_for("logistics"):
        missing = [n for n in parcels if conv.result("logistics", n) is None]
        if missing:
            return act(
                conv,
                _parcel_thought(conv, parcels, missing[0]),
                [call(conv, "logistics", trackingNo=n) for n in missing],
            )

    # 3. the answer
    lines = [_parcel_summary(conv, order_id) for order_id in ids]
    lines += [_trace_summary(conv, n, None) for n, owner in parcels.items() if owner is None]
    fetched = [conv.result("logistics", n) for n in parcels]
    single = (
        read_parcel(fetched[0], "") if len(fetched) == 1 and fetched[0] and not fetched[0].error else None
    )
    failed = [step for step in fetched if step and step.error]
    if failed:  # the answer reports the error: so must the Thought, which never claims the traces are in
        thought = conv.say(
            "查物流时系统返回了错误，这次没拿到轨迹，如实告诉用户。" if len(failed) == len(fetched)
            else "有的物流查询返回了错误，能查到的照实说，查不到的也如实告诉用户。",
            "The tracking system returned an error, so I have no traces this time; I tell the customer so."
            if len(failed) == len(fetched)
            else "Some tracking lookups returned an error: I give what I found and say what I could not find.",
        )
    elif single and single.latest:
        thought = conv.say(
            f"物流轨迹已经拿到，最新一条是 {single.latest[0]} {single.latest[1]}，可以回复用户了。",
            f"I have the traces; the latest is {single.latest[0]} {single.latest[1]}. I can answer.",
        )
    else:
        thought = conv.say("需要的信息都齐了，可以回复用户了。", "I have everything I need, so I can answer.")
    greeting = conv.say("您好！", "") if len(lines) == 1 else ""
    return Answer(thought, greeting + "\n".join(lines))


def _order_thought(conv: Conversation, ids: list[str], next_id: str) -> str:
    done = [i for i in ids if conv.result("order", i) is not None]
    if done:
        return conv.say(
            f"订单 {done[-1]} 已查到。接着查订单 {next_id}。",
            f"Order {done[-1]} is done; next, order {next_id}.",
        )
    if len(ids) > 1:
        return conv.say(
            f"用户同时问了订单 {' 和 '.join(ids)} 的物流。查物流要先拿到运单号，每次只调用一个工具，先查订单 {ids[0]}。",
            f"The customer asks about the parcels of orders {' and '.join(ids)}. Tracking needs tracking numbers, "
            f"and I call one tool at a time, so I start with order {ids[0]}.",
        )
    return conv.say(
        f"用户想知道订单 {next_id} 的快递到了哪里。查物流要用运单号，用户只给了订单号，所以先查订单拿到运单号。",
        f"The customer wants to know where the parcel for order {next_id} is. Tracking needs the tracking number, "
        "and I only have the order id, so I look the order up first.",
    )


def _parcel_thought(conv: Conversation, parcels: dict[str, str | None], number: str) -> str:
    order_id = parcels[number]
    if order_id is None:
        return conv.say(
            f"用户给了运单号 {number}，直接查物流轨迹。",
            f"The customer gave the tracking number {number}, so I track it directly.",
        )
    order = read_order(conv.result("order", order_id), order_id)
    done = [n for n in parcels if conv.result("logistics", n) is not None]
    if done:
        return conv.say(
            f"运单 {done[-1]} 的轨迹已拿到。接着查订单 {order_id} 的运单 {number}。",
            f"I have the traces of {done[-1]}. Next, tracking number {number} of order {order_id}.",
        )
    status = conv.say(f"，订单状态：{order.status}", f" (status: {order.status})") if order.status else ""
    return conv.say(
        f"订单 {order_id} 的运单号是 {number}{status}。用运单号查物流轨迹。",
        f"Order {order_id} has tracking number {number}{status}. I track the parcel with it.",
    )


def _parcel_summary(conv: Conversation, order_id: str) -> str:
    step = conv.result("order", order_id)
    if step is None:  # no order tool, but the user also gave tracking numbers
        return conv.say(f"订单 {order_id}：我查不到订单信息。", f"Order {order_id}: I cannot look orders up.")
    if step.error:
        return conv.say(
            f"订单 {order_id}：没有查到（系统返回：{step.error}），请核对订单号。",
            f"Order {order_id}: not found (the system said: {step.error}). Please check the number.",
        )
    order = read_order(step, order_id)
    if not order.tracking_no:
        return _untracked_summary(conv, order)
    return _trace_summary(conv, order.tracking_no, order_id, order.product)


def _untracked_summary(conv: Conversation, order: Order) -> str:
    """An order with no tracking number: why, when its status says (cancelled, not shipped yet); what it says
    otherwise. A missing status says nothing: the order may have shipped, and the answer does not guess."""
    name = _order_name(conv, order.order_id, order.product)
    if order.stage == "cancelled":
        return conv.say(f"{name}已取消，没有物流信息。", f"{name} was cancelled, so there is no parcel to track.")
    if order.stage == "unshipped":
        return conv.say(
            f"{name}还没有发货（状态：{order.status}），暂时没有物流信息，发货后会生成运单号。",
            f"{name} has not shipped yet (status: {order.status}), so there is no tracking information; a tracking "
            "number appears once it ships.",
        )
    if order.status:
        return conv.say(
            f"{name}当前状态：{order.status}，但订单信息里没有运单号，我查不了物流。",
            f"{name} is {order.status}, but the order gives no tracking number, so I cannot track the parcel.",
        )
    return conv.say(
        f"{name.rstrip()}：订单信息里既没有状态也没有运单号，我说不准它是否已发货，也查不了物流。",
        f"{name}: the order gives neither its status nor a tracking number, so I cannot tell whether it has "
        "shipped, nor track the parcel.",
    )


def _order_name(conv: Conversation, order_id: str, product: str | None) -> str:
    """ "Order 88231 (the product)", or "Order 88231" when the order did not say what it holds (in Chinese with a
    space after the id, as the words that follow it are written: "订单 88231 当前状态")."""
    if not product:
        return conv.say(f"订单 {order_id} ", f"Order {order_id}")
    return conv.say(f"订单 {order_id}（{product}）", f"Order {order_id} ({product})")


def _trace_summary(conv: Conversation, number: str, order_id: str | None, product: str | None = None) -> str:
    whose = _order_name(conv, order_id, product) if order_id else conv.say(f"运单 {number}", f"Parcel {number}")
    step = conv.result("logistics", number)
    if step is None:
        return conv.say(
            f"{whose}的运单号是 {number}，我这里查不到物流轨迹。",
            f"{whose} has tracking number {number}, but I cannot fetch its traces here.",
        )
    if step.error:
        return conv.say(
            f"{whose}的运单 {number} 暂时查不到物流（系统返回：{step.error}）。",
            f"{whose}: tracking number {number} has no traces yet (the system said: {step.error}).",
        )
    parcel = read_parcel(step, number)
    latest = conv.say(
        f"最新动态：{parcel.latest[0]} {parcel.latest[1]}。" if parcel.latest else "暂无轨迹。",
        f"Latest update: {parcel.latest[0]} {parcel.latest[1]}." if parcel.latest else "No traces yet.",
    )
    if conv.zh:
        by = f"由{parcel.carrier}配送，" if parcel.carrier else ""
        status = f"，当前状态：{parcel.status}" if parcel.status else ""
        return f"{whose}{by}运单号 {number}{status}。{latest}"
    by = f" is with {parcel.carrier}" if parcel.carrier else ""
    status = f", status: {parcel.status}" if parcel.status else ""
    return f"{whose}{by}, tracking number {number}{status}. {latest}"


def plan_need_order_id(conv: Conversation) -> Answer:
    if REFUND.found_in(conv.request):
        task = conv.say("办理退款", "handle the refund")
    elif has_fault(conv.request) or not LOGISTICS.found_in(conv.request):
        task = conv.say("处理售后问题", "look into it")
    else:
        task = conv.say("查询物流", "track it")
    return Answer(
        conv.say(
            f"用户想{task}，但没有给订单号。没有订单号查不了，先请用户提供。",
            f"The customer wants me to {task}, but gave no order number. I need it first.",
        ),
        conv.say(
            f"好的，请提供您的订单号（5 位数字），我马上为您{task}。",
            f"Sure. Please give me your order number (5 digits) and I will {task} right away.",
        ),
    )


def plan_policy(conv: Conversation) -> Act | Answer:
    """A question about the rules: searchKnowledge, then answer from the top result."""
    if conv.tool_for("knowledge") is None:
        return cannot(conv, "查询售后政策", "look up the after-sales policy")
    step = conv.result("knowledge")
    if step is None:
        query = re.sub(r"[？?！!。.，,]+", " ", conv.request).strip()
        return act(
            conv,
            conv.say(
                f"这是售后政策问题，到知识库里查：{query}。",
                f'This is a policy question, so I search the knowledge base for "{query}".',
            ),
            [call(conv, "knowledge", query=query)],
        )
    if step.error:  # the search failed: that is not "nothing found", and the customer is told which
        return Answer(
            conv.say(f"知识库查询失败（系统返回：{step.error}），不能凭空回答。",
                     f"The knowledge search failed (the system said: {step.error}); I will not guess."),
            conv.say(f"抱歉，售后知识库暂时查不了（系统返回：{step.error}）。请稍后再问，或联系人工客服。",
                     f"Sorry, I could not search our after-sales policies just now (the system said: {step.error}). "
                     "Please ask again later, or contact a human agent."),
        )
    top = top_knowledge(step)
    cited = top_cited(step)
    if cited is not None:  # the result names its document and section: so does the answer (lesson 16)
        return Answer(
            conv.say(
                f"知识库里最相关的段落出自{name_of(conv, cited)}（{cited.source}），按它回答，并注明出处。",
                f"The best match comes from {name_of(conv, cited)} ({cited.source}); I answer from it and name "
                "the source.",
            ),
            conv.say(f"根据{name_of(conv, cited)}：{cited.content}", f"According to {name_of(conv, cited)}: {cited.content}"),
        )
    if top is None:
        return Answer(
            conv.say(
                "知识库里没有找到相关条目，不能凭空回答。",
                "The knowledge base has nothing on this; I will not guess.",
            ),
            conv.say(
                "抱歉，售后知识库里没有找到相关说明。建议换个说法再问，或联系人工客服。",
                "Sorry, I found nothing about that in our after-sales policies. Try asking in other words, "
                "or contact a human agent.",
            ),
        )
    title, content = top
    english = None if conv.zh else _in_english(title, content)
    if english is not None:  # the shop's policy is Chinese; an English answer says it in English, as a model would
        return Answer(
            f'The best match in the knowledge base is "{title}" ({english[0]}); it is in Chinese, so I answer from '
            "it in English.",
            f'According to our policy "{english[0]}": {english[1]}',
        )
    return Answer(
        conv.say(
            f"知识库里最相关的条目是《{title}》，按它回答。"
            if title
            else "知识库里找到了相关说明，按它回答。",
            f'The best match in the knowledge base is "{title}"; I answer from it.'
            if title
            else "The knowledge base has an entry on this; I answer from it.",
        ),
        conv.say(
            f"根据《{title}》：{content}" if title else content,
            f'According to our policy "{title}": {content}' if title else content,
        ),
    )


def _in_english(title: str | None, content: str) -> tuple[str, str] | None:
    """(title, text) in English of the shop's built-in policy the Observation showed word for word, else None:
    only a text it really read is put into English, never one it would have to make up."""
    if not title:
        return None
    from tinyagent.shop.knowledge import english_version  # read only for an English policy answer

    entry = english_version(title)
    return (entry.title_en, entry.content_en) if entry is not None and entry.content == content else None


def plan_time(conv: Conversation) -> Act | Answer:
    if conv.tool_for("time") is None:
        return cannot(conv, "查询当前时间", "tell the time")
    step = conv.result("time")
    if step is None:
        return act(
            conv,
            conv.say(
                "用户问现在的时间。我自己不知道当前时间，需要调用工具获取。",
                "The user asks for the time. I cannot know it myself, so I ask the clock tool.",
            ),
            [call(conv, "time")],
        )
    now = read_now(step)
    if now is None:
        return Answer(
            conv.say("时间工具没有返回有效的时间。", "The clock tool returned no usable time."),
            conv.say(
                f"抱歉，暂时获取不到当前时间（工具返回：{step.observation}）。",
                f"Sorry, I could not get the current time (the tool said: {step.observation}).",
            ),
        )
    day, clock = now
    return Answer(
        conv.say(
            f"工具返回当前时间 {day} {clock}，可以回答了。",
            f"The tool says it is {day} {clock}. I can answer.",
        ),
        conv.say(
            f"现在是 {day.year} 年 {day.month} 月 {day.day} 日（{WEEKDAYS_ZH[day.weekday()]}）{clock}。",
            f"It is {clock} on {WEEKDAYS_EN[day.weekday()]}, {day.strftime('%d %B %Y').lstrip('0')}.",
        ),
    )
