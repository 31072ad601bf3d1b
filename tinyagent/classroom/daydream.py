"""Lesson 04: what the model types when nothing stops it after `Action Input:`.

A language model writes one token after another. Having written an Action, the likeliest next line is
"Observation: ...", so without a stop sequence it writes one: plausible, confident and false, because
the tool was never called. Then it carries on as if that were true, step after step, to a Final Answer.

This module writes that run-on. The observations come from `imagine_observation` (made up, never
looked up), and the next steps from `plan_hasty`: the same planners, except that in the refund
scenario the daydreaming model skips the date and policy checks and goes straight to applyRefund,
then promises the customer a refund id that no database has ever seen.

The imagined refund id has a 3-digit sequence (RF20260629001, the first article's); the shop issues 4-digit ones
(RF202606300001), so an invented id can never be mistaken for a real one.
"""

from __future__ import annotations

import json

from tinyagent.classroom.conversation import Conversation, Step
from tinyagent.classroom.intents import detect_intent
from tinyagent.classroom.planning import Answer, Call
from tinyagent.classroom.render import action_text, final_text
from tinyagent.classroom.scenarios import plan_hasty
from tinyagent.classroom.weather_and_files import find_city

IMAGINED_REFUND_ID = "RF20260629001"
MAX_IMAGINED_STEPS = 6  # a real model also runs out of breath (or of max_tokens) eventually


def continue_without_stop(conv: Conversation, call: Call) -> str:
    """The text after the real step: invented Observations and the steps they lead to, up to a Final Answer."""
    parts = []
    for _ in range(MAX_IMAGINED_STEPS):
        observation = imagine_observation(conv, call)
        parts.append(f"Observation: {observation}\n")
        conv = conv.with_step(Step(call.tool, call.input, observation, kind=call.kind))
        step = plan_hasty(conv)
        if isinstance(step, Answer):
            parts.append(final_text(step.thought, step.answer))
            break
        call = step.calls[0]
        parts.append(action_text(step.thought, call.tool, call.input))
    return "".join(parts)


def imagine_observation(conv: Conversation, call: Call) -> str:
    """A made-up tool result for `call`: the right shape, invented values (never the shop's real data)."""
    return json.dumps(_imagined_data(conv, call), ensure_ascii=False, separators=(",", ":"))


def _imagined_data(conv: Conversation, call: Call) -> object:
    if call.kind == "order":
        order_id = str(call.args.get("orderId", ""))
        data = {
            "orderId": order_id,
            "product": conv.say("比特 S10 Pro 扫地机", "Bit S10 Pro robot vacuum"),
            "price": 1999,
            "status": conv.say("已签收", "delivered"),
        }
        # It invents what it needs next: a parcel question needs a tracking number. (No signing date: the
        # imagined order has nothing to check a return window against, and the model does not notice.)
        if detect_intent(conv) in ("logistics", "order_status"):
            data["trackingNo"] = f"SF{order_id}{order_id}"[:12]
        return data
    if call.kind == "logistics":
        return {
            "trackingNo": call.args.get("trackingNo", ""),
            "carrier": conv.say("顺丰速运", "SF Express"),
            "status": conv.say("已签收", "delivered"),
            "traces": [
                {
                    "time": "2026-06-21 16:30:00",
                    "desc": conv.say("快件已由本人签收", "Signed for by the recipient"),
                }
            ],
        }
    if call.kind == "refund":
        return {
            "success": True,
            "refundId": IMAGINED_REFUND_ID,
            "message": conv.say("退款已提交", "Refund submitted"),
        }
    if call.kind == "time":
        return {"currentTime": "2026-06-25T10:00:00"}
    if call.kind == "knowledge":
        return {
            "matched": conv.say("退换货政策", "Return policy"),
            "content": conv.say(
                "签收后 30 天内均可无理由退货，退款 1-3 个工作日到账。",
                "Any item can be returned within 30 days of delivery, no questions asked.",
            ),
        }
    if call.kind == "weather":
        city = call.args.get("city") or find_city(conv.request) or ""
        return {"city": city, "weather": conv.say("晴", "sunny"), "temperature": "26℃"}
    if call.kind == "write_file":
        return {"success": True, "message": conv.say("写入成功", "file written")}
    return {"success": True}
