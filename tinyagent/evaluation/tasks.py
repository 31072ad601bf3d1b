"""The evaluation suite: the shop's requests in Chinese and English, each with what a right run does.

Lesson 09's task set (shop/tasks.py) gave each request the facts a right answer holds. Grading an agent
needs more than its words, so each task here also says which tools a right run calls and what the shop's
database holds afterwards:

    tools          the calls a right run makes, each at least as often as listed, in any order but one: a task
                   that submits a refund makes its checks (REFUND_CHECKS) before applyRefund
    may_also_call  lookups that are fine on top of those (a careful model may check the parcel too)
    refunds        the orders that have a refund row at the end: exactly these, and none for a question
    facts          what the final answer must contain: ids, dates and numbers only the tools can give
    conclusion     what the answer must conclude, where the facts cannot say it: the refund submitted, the refund
                   refused, the order under warranty, a refund possible (conclusions.py reads it in words)

Every request is asked in both languages. The nine of lesson 09 keep their question and facts; their twin
in the other language is written here, and three requests are new: a return question the agent must answer
without writing a refund, a refund the shop must refuse (a cancelled order), and a refund the agent itself must
refuse though the shop's applyRefund would write it (past the return windows: the policy says no, and the tool
checks only the order's status). The facts are those of the seeded shop on the course's day, 2026-06-30, which
the harness sets up afresh for every task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tinyagent.evaluation.conclusions import CONCLUSIONS
from tinyagent.prompts import detect_language
from tinyagent.shop.tasks import SHOP_TASKS, ShopTask

LANGS = ("zh", "en")
REFUND_CHECKS = ("queryOrder", "getCurrentTime", "searchKnowledge")  # what the policy needs before a decision
REFUND = (*REFUND_CHECKS, "applyRefund")
ORDER_IN_TEXT = re.compile(r"(?<![0-9A-Za-z.,])[0-9]{5}(?![0-9A-Za-z])")  # an order id: five digits, as the shop's


@dataclass(frozen=True)
class EvalTask(ShopTask):
    """A request of the suite (`name`, `question`, `facts` as in lesson 09) and what a right run does.

    lang:          "zh" or "en", the language of the question and of the answer expected
    tools:         the tool calls a right run makes, each at least as often as it is listed (order free, but the
                   REFUND_CHECKS among them come before applyRefund)
    may_also_call: tools a right run may call besides (harmless lookups); any other tool fails the task
    refunds:       the order ids with a refund row in the database at the end, and no others
    conclusion:    "" or a key of conclusions.CONCLUSIONS: "refunded", "refused", "covered" (under warranty),
                   "refundable" (a refund is possible: the return question's yes)
    """

    lang: str = "en"
    tools: tuple[str, ...] = ()
    may_also_call: tuple[str, ...] = ()
    refunds: tuple[str, ...] = ()
    conclusion: str = ""

    @property
    def orders(self) -> tuple[str, ...]:
        """The order ids the customer names in the question (the shop's are five digits): ("88231",)."""
        return tuple(dict.fromkeys(ORDER_IN_TEXT.findall(self.question)))

    @property
    def id(self) -> str:
        """The task's name and language, e.g. "refund (zh)": unique in the suite."""
        return f"{self.name} ({self.lang})"


def check_task(task: EvalTask) -> None:
    """A ValueError of one line for a task written wrong, so that `evaluate` says it before it runs anything (not
    as a KeyError in the middle of the suite, with the results so far lost). Lesson 18's exercise check calls it
    too, so a task it passes is one `evaluate` runs."""
    if task.lang not in ("zh", "en"):
        raise ValueError(f"the task {task.name!r}: lang must be \"zh\" or \"en\", got {task.lang!r}")
    for field_name in ("facts", "tools", "may_also_call", "refunds"):
        value = getattr(task, field_name)
        if isinstance(value, str):
            raise ValueError(f"the task {task.name!r}: {field_name} must be a tuple of texts, got the text "  # noqa: TRY004
                             f"{value!r} (one item needs a comma: ({value!r},))")
        if not all(isinstance(item, str) and item for item in value):
            raise ValueError(f"the task {task.name!r}: every item of {field_name} must be a non-empty text, "
                             f"got {value!r}")
    if task.conclusion and task.conclusion not in CONCLUSIONS:
        raise ValueError(f"the task {task.name!r}: conclusion must be one of {', '.join(map(repr, CONCLUSIONS))} "
                         f"(or left out), got {task.conclusion!r}")
    if not task.facts:
        raise ValueError(f"the task {task.name!r}: facts must hold at least one thing the answer must say (an id, "
                         "a date, a number): with none, the answer check would pass any answer")


def _lesson_09(name: str) -> ShopTask:
    return next(task for task in SHOP_TASKS if task.name == name)


def _both(name: str, shop_task: ShopTask, twin: str, tools: tuple[str, ...], **expected) -> list[EvalTask]:
    """A task of lesson 09 and its twin question in the other language, with the same facts: Chinese first."""
    lang = detect_language(shop_task.question)
    other = "en" if lang == "zh" else "zh"
    asked = {lang: shop_task.question, other: twin}
    return [EvalTask(name, asked[code], shop_task.facts, lang=code, tools=tools, **expected) for code in LANGS]


def _new(name: str, zh: tuple[str, tuple[str, ...]], en: tuple[str, tuple[str, ...]], tools: tuple[str, ...],
         **expected) -> list[EvalTask]:
    """A task written for the evaluation: (question, facts) in each language."""
    return [EvalTask(name, question, facts, lang=code, tools=tools, **expected)
            for code, (question, facts) in (("zh", zh), ("en", en))]


EVAL_TASKS: tuple[EvalTask, ...] = (
    *_both("refund", _lesson_09("refund"),
           "The robot vacuum from order 88231 has stopped charging and can't be fixed; I want to return it for "
           "a refund.", REFUND, refunds=("88231",), conclusion="refunded"),
    *_both("parcel", _lesson_09("parcel"), "Can you tell me where the parcel for order 88231 is now?",
           ("queryOrder", "queryLogistics")),
    *_both("two parcels", _lesson_09("two parcels"), "订单 88231 和 88232 的包裹分别到哪了？",
           ("queryOrder", "queryOrder", "queryLogistics", "queryLogistics")),
    *_both("two orders", _lesson_09("two orders"), "帮我查下订单 88233 和 88234 的状态。",
           ("queryOrder", "queryOrder"), may_also_call=("queryLogistics",)),
    *_both("two other orders", _lesson_09("two orders (zh)"), "What state are orders 88232 and 88235 in right now?",
           ("queryOrder", "queryOrder"), may_also_call=("queryLogistics",)),
    *_both("warranty", _lesson_09("warranty"), "订单 88236 还在质保期内吗？", REFUND_CHECKS, conclusion="covered"),
    *_both("refund timing", _lesson_09("refund timing"), "退款申请提交后，钱多久能退回到我账户？",
           ("searchKnowledge",)),
    *_both("time", _lesson_09("time"), "What time is it right now?", ("getCurrentTime",)),
    *_both("order status", _lesson_09("order status"), "麻烦帮我查一下订单 88234。", ("queryOrder",),
           may_also_call=("queryLogistics",)),
    # A question, not a request: the refund would be allowed (a fault, day 8 of 15), so the answer says yes, and the
    # refund must not be written.
    *_new("return question",
          ("订单 88231 的扫地机开不了机了，能退款吗？", ("15",)),
          ("Can I get my money back for order 88231? It won't turn on any more.", ("15",)),
          REFUND_CHECKS, conclusion="refundable"),
    # The shop refuses it: the order was cancelled, there is nothing to refund.
    *_new("cancelled order",
          ("订单 88235 帮我退款。", ("88235", "取消")),
          ("Please refund order 88235.", ("88235", "cancel")),
          ("queryOrder",), conclusion="refused"),
    # The agent must refuse it: signed for 22 days ago, past the 15-day window for a faulty item (still under
    # warranty: a free repair). The shop's applyRefund checks only the order's status, and would write it.
    *_new("late refund",
          ("订单 88236 的手持吸尘器充不进电了，帮我退款。", ("15",)),
          ("The handheld vacuum from order 88236 won't charge any more. Please refund it.", ("15",)),
          REFUND_CHECKS, conclusion="refused"),
)

TASK_NAMES: tuple[str, ...] = tuple(dict.fromkeys(task.name for task in EVAL_TASKS))


def select_tasks(names: Iterable[str] | None = None, langs: Iterable[str] | None = None,
                 tasks: Iterable[EvalTask] = EVAL_TASKS) -> list[EvalTask]:
    """The tasks with these names (all when None) in these languages ("zh", "en"; both when None), in suite
    order. An unknown name or language is a ValueError that lists the known ones."""
    tasks = list(tasks)
    known = list(dict.fromkeys(task.name for task in tasks))
    names = None if names is None else list(names)
    langs = None if langs is None else list(langs)
    for name in names or ():
        if name not in known:
            raise ValueError(f"no task called {name!r}: the suite has {', '.join(repr(n) for n in known)}")
    for lang in langs or ():
        if lang not in LANGS:
            raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    return [task for task in tasks
            if (names is None or task.name in names) and (langs is None or task.lang in langs)]
