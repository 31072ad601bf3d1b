"""The words the classroom model listens for: one named list per thing a customer can say, in Chinese and English.

This is where a new phrase goes. A lesson whose learners say "退不了吗" or "it keeps beeping" adds the
words to the list they belong to, and a line to the phrasings table in docs/classroom-model.md; the
rules that combine the lists (intents.py) and the tests (tests/test_classroom_understanding.py) stay
as they are. Matching is plain substring search on the lower-cased request (`Words.found_in`): no
regular expressions, so importing this module costs nothing and a list reads like a list.

Both languages are always searched: customers mix them ("88231 can I 退货吗").
"""

from __future__ import annotations

from typing import NamedTuple


class Words(NamedTuple):
    """A list of phrases, Chinese and English, for one thing a customer can say."""

    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()  # lower case

    def found_in(self, text: str) -> bool:
        low = f" {text.lower()} "  # padded, so " rain" can insist on the start of a word ("drains" is not rain)
        return any(word in text for word in self.zh) or any(word in low for word in self.en)

    def first_in(self, text: str) -> str | None:
        """The first phrase of the list (in list order) that the text contains, or None."""
        low = f" {text.lower()} "
        return next((w for w in self.zh if w in text), None) or next((w for w in self.en if w in low), None)


# One line per group of phrases reads better than one line per phrase, so the formatter leaves these alone.
# fmt: off

# --- what the customer wants -----------------------------------------------------------------------------

# Money back, or the item back to the shop. (A question about the rules, "怎么退货?", is told apart by
# RULE_QUESTION; "can I return it?" by ASKS_WHETHER.)
REFUND = Words(
    zh=("退款", "退货", "退钱", "想退", "要退", "退掉", "退了", "退回", "退换", "能退", "可以退", "退吗", "退不退",
        "退得了", "退一下", "把钱", "钱退", "返还"),
    en=("refund", "money back", "return it", "return this", "return the", "return my", "return order",
        "to return", "a return", "returned", "returning", "return for", "send it back", "send back",
        "sent back", "take it back", "reimburse", "returnable", "return request", "request a return",
        "want to return", "like to return"),
)
# The customer asks whether something is possible, rather than asking for it to be done.
ASKS_WHETHER = Words(
    zh=("吗", "能不能", "可不可以", "能否", "是否", "行不行", "还能", "还可以"),
    en=("can i", "could i", "may i", "am i able", "is it possible", "is it still possible", "is it too late",
        "still returnable", "eligible", "can it be returned", "can this be returned", "can it still",
        "is a return", "is that possible", "possible to"),
)
# ... unless they also ask for it to be done: then it is a request, politely put.
ASKS_FOR_ACTION = Words(
    zh=("帮我", "给我", "请帮", "请给", "请为", "请直接", "请尽快", "麻烦", "申请", "我要", "直接", "办理", "处理一下"),
    en=("please", "can you", "could you", "would you", "i want", "i'd like", "i would like", "i need",
        "go ahead", "process", "submit", "i demand"),
)
# When the money arrives: a question for the policy, not a new refund.
REFUND_TIMING = Words(
    zh=("到账", "多久到", "几天到", "什么时候到账", "退款进度", "钱什么时候", "多久能收到钱", "多久退回"),
    en=("refund take", "refunds take", "money back take", "when will i get my money", "when do i get my money",
        "when will the refund", "when will my refund", "refund arrive", "refund to arrive", "refund show up",
        "refund status", "how long until my refund", "how long for a refund", "how long does a refund"),
)
WARRANTY = Words(
    zh=("保修", "质保", "保内", "过保", "保修期"),
    en=("warranty", "guarantee", "guaranteed", "covered"),
)
LOGISTICS = Words(
    zh=("快递", "物流", "到哪", "发货", "送到", "运单", "配送", "包裹", "寄到", "在路上", "还没到", "没收到",
        "还没收到", "什么时候到", "几时到", "到货", "派送", "签收了没"),
    en=("where is", "where's", "track", "deliver", "shipping", "shipped", "parcel", "package", "arrive",
        "shipment", "courier", "in transit", "on its way", "on the way", "dispatch", "hasn't come",
        "not received", "haven't received", "not arrived"),
)
STATUS = Words(
    zh=("状态", "订单", "详情", "情况", "进度"),
    en=("status", "order", "details", "look up", "check on"),
)
TIME = Words(
    zh=("几点", "时间", "几号", "日期", "星期几", "礼拜几", "周几"),
    en=("what time", "the time", "what day", "the date", "today's date", "what's the date", "current time",
        "time is it", "which day"),
)
POLICY = Words(
    zh=("政策", "规则", "无理由", "保修", "质保", "售后", "换货", "到账", "运费", "包邮", "发票", "规定", "流程"),
    en=("policy", "policies", "warranty", "guarantee", "exchange", "invoice", "return", "cancel", "shipping fee",
        "free shipping", "rules", "how do returns", "receipt"),
)
# Words that turn refund or parcel words without an order number into a question about the rules.
RULE_QUESTION = Words(
    zh=("怎么", "如何", "多久", "多长", "多少", "几天", "政策", "规则", "无理由", "运费", "包邮", "规定", "流程"),
    en=("how", "what", "when", "policy", "fee", "cost", "rules"),
)

# --- why they want it back ----------------------------------------------------------------------------------

# Symptoms of a fault. Chinese: (what to look for, how to say it after the product), specific ones first,
# "修不好" last: the phrase becomes the reason written into the refund ("扫地机不回充").
FAULT_SYMPTOMS_ZH = (
    ("不回充", "不回充"), ("回不了充电座", "回不了充电座"), ("找不到充电座", "找不到充电座"), ("不回座", "不回充电座"),
    ("回不去充电座", "回不了充电座"), ("不能回充", "不回充"), ("无法回充", "不回充"), ("不充电", "不充电"),
    ("充不进电", "充不进电"), ("充不上电", "充不上电"), ("充不了电", "充不了电"), ("无法充电", "无法充电"),
    ("开不了机", "开不了机"), ("无法开机", "无法开机"), ("不开机", "不开机"), ("打不开", "打不开"),
    ("启动不了", "启动不了"), ("不启动", "不启动"), ("不吸", "不吸尘"), ("吸力变小", "吸力变小"),
    ("不出水", "不出水"), ("漏水", "漏水"), ("异响", "有异响"), ("噪音", "噪音很大"), ("响声", "有异常响声"),
    ("冒烟", "冒烟"), ("发烫", "发烫"), ("过热", "过热"), ("死机", "死机"), ("黑屏", "黑屏"), ("报错", "报错"),
    ("坏了", "坏了"), ("坏掉", "坏了"), ("损坏", "损坏"), ("故障", "出了故障"), ("失灵", "失灵"), ("不能用", "不能用"),
    ("用不了", "用不了"), ("不工作", "不工作"), ("停止工作", "停止工作"), ("罢工", "罢工"), ("不动了", "不动了"),
    ("没反应", "没反应"), ("质量问题", "有质量问题"), ("修不好", "坏了，修不好"),
)
FAULT_SYMPTOMS_EN = Words(en=(
    "won't charge", "wont charge", "doesn't charge", "does not charge", "not charging", "no longer charges",
    "stopped charging", "can't charge", "cannot charge", "won't hold a charge", "battery dies", "battery drains",
    "stopped working", "not working", "doesn't work", "does not work", "won't work", "no longer works",
    "won't turn on", "wont turn on", "doesn't turn on", "won't start", "won't power on", "won't switch on",
    "dead", "broken", "broke", "faulty", "defective", "malfunction", "fault", "quality problem",
    "makes a noise", "makes noise", "making noise", "making a noise", "noisy", "grinding", "rattling",
    "squeaking", "buzzing", "clicking noise", "loud noise", "strange noise", "weird noise", "smoke", "smoking",
    "overheat", "leaks", "leaking", "error code", "keeps crashing", "no suction", "lost suction", "not sucking",
    "won't move", "doesn't move", "stopped moving", "keeps beeping", "cracked", "damaged",
))
# Docking is a fault only when the sentence says it does not happen: "dock" and a negation in one clause.
DOCK_WORDS = Words(zh=("充电座", "回充", "基座"), en=("dock", "charging base", "charging station", "home base"))
NEGATIONS = Words(
    zh=("不", "没", "无法", "回不", "找不到"),
    # Searched in the clause with a space added at each end, so " not " does not match "another".
    en=("n't", "wont ", " will not ", " does not ", " no longer ", " not ", "cannot", " never ", "stopped",
        " fails", " failed", "unable"),
)
# A reason that is explicitly not a fault: the no-reason return rules apply.
NO_FAULT_REASON = Words(
    zh=("不想要", "不喜欢", "不要了", "买错", "拍错", "后悔", "不合适", "用不上", "不需要了", "多买了", "闲置"),
    en=("don't like", "do not like", "don't want", "do not want", "changed my mind", "change of mind",
        "no longer need", "don't need", "do not need", "by mistake", "not what i expected", "too big",
        "too small", "found it cheaper", "never used", "unused"),
)
# Something is wrong, but not what: the model asks instead of deciding.
VAGUE_PROBLEM = Words(
    zh=("有问题", "有点问题", "不太对", "不对劲", "毛病", "怪怪的", "不正常", "不好用", "不满意"),
    en=("problem", "issue", "not right", "isn't right", "acting up", "acting weird", "weird", "strange",
        "something wrong", "something's wrong", "trouble", "not happy", "unhappy"),
)

# --- small talk -----------------------------------------------------------------------------------------

WEATHER = Words(zh=("天气", "带伞", "下雨"), en=("weather", "umbrella", " rain ", " rain?", " rain.", "raining", "rainy"))
# Lesson 21's closed loop: a meeting in the calendar, and a reminder to send.
MEETING = Words(zh=("开会", "会议", "日程", "会面"), en=("meeting", "calendar", "appointment"))
REMIND = Words(zh=("提醒",), en=("remind",))
WRITE = Words(zh=("写入", "写到", "写进", "保存", "存到"), en=("write", "save", "put"))
# Lesson 15's tools: reading a file, listing the workspace, arithmetic.
READ = Words(zh=("读", "打开", "看看", "看一下", "内容", "显示"),
             en=("read", "show me", "open", "what's in", "what is in", "contents of", "content of", "cat "))
LIST_FILES = Words(zh=("有哪些文件", "有什么文件", "列出", "文件列表", "哪些文件"),
                   en=("list the files", "list files", "what files", "which files", "files are in", "files in the"))
CALCULATE = Words(zh=("计算", "算一下", "算算", "算出", "等于多少", "是多少", "多少钱", "等于几"),
                  en=("calculate", "compute", "what is", "what's", "how much is", "work out", "equals"))
IDENTITY = Words(
    zh=("你是谁", "你叫什么", "什么模型", "哪个模型"),
    en=("who are you", "what are you", "your name", "which model", "what model"),
)
THANKS = Words(zh=("谢谢", "多谢", "感谢"), en=("thank you", "thanks", "cheers"))
GREETINGS_ZH = ("你好", "您好", "嗨", "哈喽", "在吗")
GREETINGS_EN = ("hello", "hi", "hey", "good morning", "good afternoon", "good evening")
# Words that say the request is about the shop, even when the model cannot tell what is asked.
SHOP_TOPIC = Words(
    zh=("订单", "商品", "买的", "下单", "扫地机", "洗地机", "吸尘器", "净化器", "体脂秤", "售后", "客服", "东西"),
    en=("order", "purchase", "bought", "item", "product", "vacuum", "purifier", "scale", "mop", "delivery"),
)

# --- what they bought -------------------------------------------------------------------------------------

PRODUCTS_ZH = ("扫地机", "洗地机", "吸尘器", "空气净化器", "耳机", "手表", "手机", "平板", "音箱", "键盘", "鼠标", "显示器")
PRODUCTS_EN = ("robot vacuum", "vacuum", "air purifier", "headphones", "earbuds", "watch", "phone", "tablet", "speaker")
CITIES = ("北京", "上海", "广州", "深圳", "杭州", "成都", "南京", "武汉", "西安", "重庆", "天津", "苏州",
          "Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Hangzhou", "London", "Paris", "Tokyo", "New York")
# fmt: on
