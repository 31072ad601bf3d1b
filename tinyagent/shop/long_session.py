"""A scripted 30-turn customer conversation, for lesson 13's context budget and its benchmark.

One customer, English and Chinese, one request after another in the same conversation: parcels, a refund
for a fault, refund timing, order details, warranty, a question and then "go ahead", policies, an unknown
order, small talk. Each turn is a `ShopTask`: the request and the facts a right answer holds (ids, numbers,
dates only the shop's tools give), on the seeded shop of the course's day (2026-06-30), the turns asked in
this order (the second refund is RF202606300002 because the first one was RF202606300001).

Some turns lean on earlier ones: "那就帮我退了吧" refunds the order the turn before asked about, which the
model finds only in the conversation. The requests are worded afresh, not taken from the phrasings
tests/test_classroom_understanding.py checks.
"""

from __future__ import annotations

from tinyagent.shop.tasks import ShopTask

LONG_SESSION: tuple[ShopTask, ...] = (
    ShopTask("hello", "Hello, is anyone there?", ("Bit Mall",)),
    ShopTask("parcel", "I ordered a floor washer last week, order 88232. Where is it now?",
             ("YT2468013579", "上海转运中心")),
    ShopTask("time", "What time is it now?", ("19:05",)),
    ShopTask("refund", "My robot vacuum from order 88231 will not go back to its dock any more, please refund it.",
             ("RF202606300001",)),
    ShopTask("refund timing", "So when will the refund arrive in my account?", ("1-3",)),
    ShopTask("not shipped", "And order 88233, has it been shipped yet?", ("88233", "not shipped")),
    ShopTask("order", "Could you look up order 88234 for me?", ("ZT5566778899", "2026-06-27")),
    ShopTask("warranty", "Is order 88236 still covered by the warranty?", ("343",)),
    ShopTask("policy", "What are your rules for no-reason returns?", ("7 days",)),
    ShopTask("cancelled", "Please refund order 88235 too.", ("88235", "cancelled")),
    ShopTask("thanks", "Thank you!", ("welcome",)),
    ShopTask("parcel (zh)", "88232 的快递现在到哪了？", ("YT2468013579", "上海转运中心")),
    ShopTask("order (zh)", "帮我查一下订单 88236 的详情", ("JD0098765432", "2026-06-08")),
    ShopTask("date (zh)", "今天几号？", ("30",)),
    ShopTask("return question (zh)", "88234 我买错了，想退，可以吗？", ("7 天无理由",)),
    ShopTask("go ahead (zh)", "那就帮我退了吧", ("RF202606300002",)),
    ShopTask("tracking number", "Where is parcel ZT5566778899 now?", ("ZT5566778899", "09:20")),
    ShopTask("invoice", "What's your invoice policy?", ("VAT invoice",)),
    ShopTask("shipping fee (zh)", "运费怎么算？", ("99",)),
    ShopTask("order again", "Please check on order 88231 again.", ("SF1234567890", "2026-06-22")),
    ShopTask("track", "Track SF1234567890 please.", ("SF1234567890", "11:35")),
    ShopTask("logistics (zh)", "88231 的物流信息再发我一下", ("SF1234567890", "11:35")),
    ShopTask("exchange (zh)", "我还想换个货，换货流程是怎样的？", ("48 小时",)),
    ShopTask("unknown order", "Can order 99999 be found?", ("99999",)),
    ShopTask("weekday", "What day of the week is it?", ("Tuesday",)),
    ShopTask("status (zh)", "订单 88233 现在什么状态？", ("待发货",)),
    ShopTask("warranty again", "Is order 88231 within the warranty period?", ("357",)),
    ShopTask("thanks (zh)", "谢谢，辛苦了", ("不客气",)),
    ShopTask("parcel again", "One more: where is order 88236's package?", ("JD0098765432", "10:02")),
    ShopTask("goodbye", "Goodbye, thanks for the help!", ("welcome",)),
)
