"""Grading one run: four checks, each of which a wrong run can fail.

    outcome = RunOutcome.from_run(result, shop.refunds())     # what happened, read from the trace and the shop
    checks = grade(task, outcome)                            # {"tools": Check, "database": ..., ...}

tools     the calls the task needs were made (each at least as often as listed), a refund only after the task's
          checks (REFUND_CHECKS: the order, the date, the policy; the other calls in any order), queryOrder and
          applyRefund on the customer's orders (the ids in the question; the tracking number and the search query
          are not read), no other tool was called (except the task's `may_also_call`), none came back with an
          error, no call was repeated (alike as the tool reads its input: {"orderId": "88231"} is 88231), and
          applyRefund was called at most once
database  the refunds table holds a row for exactly the task's `refunds`: none for a question
answer    the run ended with an answer (not a stop), holding every fact as a fact (see `holds_fact`: 15 as the
          whole number 15, not inside 1.15 or 2015, nor beside a hedge; a word such as cancel where no negation is
          next to it), reaching the task's conclusion if it has one (conclusions.py: the refund submitted, the
          refund refused, the order under warranty, a refund possible), in the customer's language, naming no
          refund id the refunds table does not hold, no order the customer did not name (five digits), and, in a
          task that writes no refund, not saying one was submitted when none was (`claims_refund`, a word check)
format    every reply followed the protocol: each one could be read, none ended at max_tokens (a reply cut there is
          unreadable, whatever its first lines said), none had to be cut at the stop sequence (the model wrote past
          its turn, into an Observation), and the answer came as a Final Answer rather than as prose the loop's
          fallback took

A task passes when all four pass. Three checks read behaviour, what the run did: tools (the calls and, for
queryOrder and applyRefund, their order ids), database (the refunds table) and format (the replies). The answer
check reads words: it finds the facts, the order ids and the refund words as substrings, and reads a claim in its
clause, with the words next to it, and the yes or no an answer opens with (conclusions.py): so "no refund was
submitted" and "the refund might be approved" are no claim that one was, "the refund was not declined" is no
refusal, "No, not covered" beside the warranty task's right 343 days fails, "No, you cannot return it" fails the
return question, and "Maybe SF1234567890?" does not state the id. It still cannot read what a sentence means: a
negation more than six words from its claim, in a clause of its own or about something else next to it is misread,
a conclusion worded in words its lists do not hold is not found, and a fact counts wherever it stands (the right
number for another thing, "signed for 15 days ago", holds the return window's 15). The outcome is plain data, so a
test can build a wrong run by hand and see each check fail.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tinyagent.agent import AgentResult
from tinyagent.evaluation.conclusions import SUBMITTED, conclusion_problem, hedged_at, read_claim, word_claim
from tinyagent.evaluation.tasks import ORDER_IN_TEXT, REFUND_CHECKS, EvalTask
from tinyagent.events import LlmCall, Observation, Parsed, ToolCall
from tinyagent.protocols.protocol_comparison import parse_failures
from tinyagent.robustness.tolerant_parser import FormatObservation
from tinyagent.shop.tools import (
    ORDER_ID,
    TRACKING_NO,
    BadInput,
    read_one_id,
    read_refund_input,
    read_search_query,
)
from tinyagent.trace import Trace

CHECKS = ("tools", "database", "answer", "format")
ANSWERED = ("final_answer", "fallback")  # the reasons a run ends with the model's own answer
# Tests of a tool name, each True for a call that routes the run rather than uses a tool: such a call is no tool use of
# the run. A later lesson whose agents pass a request on through tools of their own adds its test here, from a module
# of its own that tinyagent.evaluation imports (lesson 21's handoffs: handoff_calls.py).
ROUTING_CALLS: list[Callable[[str], bool]] = []


@dataclass(frozen=True)
class ToolUse:
    """One tool call: its input, whether its result was an error, and the result the model read."""

    name: str
    input: str
    error: bool = False
    result: str = ""

    def __str__(self) -> str:
        text = " ".join(self.input.split())
        return f"{self.name}({text if len(text) <= 60 else text[:59] + '…'})"


@dataclass(frozen=True)
class RunOutcome:
    """What a run did, as the checks read it.

    tool_calls:         every call, in order, with whether it failed
    refunds:            the order ids of the refunds table's rows after the run
    answer, reason:     what the customer got, and why the run ended ("final_answer", "fallback", "max_steps", ...)
    unreadable_replies: replies the agent could not read as a step (protocol_comparison.parse_failures),
                        and replies that ended at max_tokens (the model had not finished: its step is not one)
    client_cuts:        replies the client cut at the stop sequence because the server sent text past it
    cut_replies:        of the unreadable replies, those that ended at max_tokens (finish_reason "length")
    refund_ids:         the refund ids of the refunds table's rows after the run (None: not read, as in an
                        outcome built by hand): an answer naming another refund id names a refund never written
    repaired_replies:   replies read only after a forgiving parser repaired them (lesson 11: its rule names the
                        repairs in parentheses, "action (Markdown around keys)")
    replies:            the model's replies (None: not counted, as in an outcome built by hand); with none, the
                        format check has nothing to pass
    """

    tool_calls: tuple[ToolUse, ...] = ()
    refunds: tuple[str, ...] = ()
    answer: str | None = None
    reason: str = "final_answer"
    unreadable_replies: int = 0
    client_cuts: int = 0
    cut_replies: int = 0
    refund_ids: tuple[str, ...] | None = None
    repaired_replies: int = 0
    replies: int | None = None

    @classmethod
    def from_run(cls, result: AgentResult, refunds: list[dict]) -> RunOutcome:
        """Read an agent's result and the shop's refunds (`Shop.refunds()`) after it."""
        trace = result.trace
        uses = []
        rounds = dict.fromkeys((call.step, call.agent) for call in trace.tool_calls)  # several agents: lesson 21
        for step, agent in (rounds if any(agent for _, agent in rounds) else sorted(rounds)):
            # A round's calls, then their results in the same order (one each, in either protocol). An
            # Observation that answers a botched reply (FormatObservation) belongs to no call. A call that routes the
            # run (ROUTING_CALLS) is not one of the shop's tools: it is not counted.
            calls = [e for e in trace.of_type(ToolCall) if (e.step, e.agent) == (step, agent)]
            results = [e for e in trace.of_type(Observation)
                       if (e.step, e.agent) == (step, agent) and not isinstance(e, FormatObservation)]
            # .strip(): the registry runs the name without the spaces around it, so "applyRefund " ran applyRefund
            uses += [ToolUse(call.name.strip(), call.input, bool(obs.error), obs.text)
                     for call, obs in zip(calls, results) if not routes(call.name)]
        return cls(
            tool_calls=tuple(uses),
            refunds=tuple(sorted(str(row["orderId"]) for row in refunds)),
            answer=result.answer,
            reason=result.reason,
            unreadable_replies=unreadable_replies(trace),
            client_cuts=sum(call.client_cut for call in trace.of_type(LlmCall)),
            cut_replies=sum(call.finish_reason == "length" for call in trace.of_type(LlmCall)),
            refund_ids=tuple(sorted(str(row["refundId"]) for row in refunds if "refundId" in row)),
            repaired_replies=sum(parsed.rule.endswith(")") for parsed in trace.of_type(Parsed)),
            replies=len(trace.of_type(LlmCall)),
        )


def routes(tool_name: str) -> bool:
    """True when a call of `tool_name` routes the run (one of ROUTING_CALLS says so), rather than uses a tool."""
    return any(test(tool_name) for test in ROUTING_CALLS)


def unreadable_replies(trace: Trace) -> int:
    """The replies of a run that could not be read as a step: those the parser could not read
    (protocol_comparison.parse_failures), and those that ended at max_tokens, which the parser may have read a
    first half of (a model cut off mid-step has not written a step). Each reply counts once."""
    cut = {call.step for call in trace.of_type(LlmCall) if call.finish_reason == "length"}
    unread = {parsed.step for parsed in trace.of_type(Parsed) if parse_failures(Trace([parsed]))}
    return parse_failures(trace) + len(cut - unread)


@dataclass(frozen=True)
class Check:
    """One check's verdict, and in a few words why."""

    passed: bool
    detail: str


def grade(task: EvalTask, outcome: RunOutcome) -> dict[str, Check]:
    """Every check of CHECKS on one run, in that order."""
    return {
        "tools": check_tools(task, outcome),
        "database": check_database(task, outcome),
        "answer": check_answer(task, outcome),
        "format": check_format(outcome),
    }


def _verdict(problems: list[str], fine: str) -> Check:
    return Check(False, "; ".join(problems)) if problems else Check(True, fine)


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def check_tools(task: EvalTask, outcome: RunOutcome) -> Check:
    """The calls the task needs, nothing it does not allow, no failed call, no call made twice alike (as the tool
    reads it), no second applyRefund, a refund only after the task's REFUND_CHECKS, and queryOrder and applyRefund
    for the task's orders only."""
    called = Counter(use.name for use in outcome.tool_calls)
    problems = []
    for name, needed in Counter(task.tools).items():
        if called[name] == 0:
            problems.append(f"{name} was not called")
        elif called[name] < needed:
            problems.append(f"{name} was called {_times(called[name])}, the task needs it {_times(needed)}")
    allowed = set(task.tools) | set(task.may_also_call)
    for name in called:
        if name not in allowed:
            problems.append(f"{name} was called, which this task must not call" if name == "applyRefund"
                            else f"{name} was called, which this task does not need")
    problems += [f"{use} came back with an error" for use in outcome.tool_calls if use.error]
    # The ids are read for the order looked up and the order refunded, not for the parcel tracked nor the query.
    for use in outcome.tool_calls:
        if use.error or use.name not in ("queryOrder", "applyRefund"):
            continue  # a call that failed fails the check already
        order = call_arguments(use.name, use.input)
        if use.name == "queryOrder" and task.orders and order not in task.orders:
            problems.append(f"{use} looked up another order than the customer's ({', '.join(task.orders)})")
        if use.name == "applyRefund" and task.refunds and order not in task.refunds:
            problems.append(f"{use} refunded another order than the task's ({', '.join(task.refunds)})")
    names = [use.name for use in outcome.tool_calls]
    if "applyRefund" in task.tools and "applyRefund" in names:  # the order, the date and the policy first
        before = names[:names.index("applyRefund")]
        late = [name for name in REFUND_CHECKS if name in task.tools and called[name] and name not in before]
        if late:
            problems.append(f"applyRefund came before {', '.join(late)}: a refund is submitted only after the "
                            "order, the date and the policy are checked")
    # Alike as the tool reads them: {"orderId": "88231"} and 88231 are one lookup. A retry after an error is not
    # a repeat (the error fails the run already).
    first = {}
    repeats = Counter()
    for use in outcome.tool_calls:
        if use.error:
            continue
        key = (use.name, call_arguments(use.name, use.input))
        first.setdefault(key, use)
        repeats[key] += 1
    problems += [f"{first[key]} was called {_times(n)}" for key, n in repeats.items() if n > 1]
    refunds_made = called["applyRefund"]  # once per order: a second call for another order fails too
    if refunds_made > max(1, len(task.refunds)) and not any(n > 1 for (name, _), n in repeats.items()
                                                            if name == "applyRefund"):
        problems.append(f"applyRefund was called {_times(refunds_made)}: a refund is submitted once per order")
    fine = " → ".join(use.name for use in outcome.tool_calls) or "no tool, as the task needs"
    return _verdict(problems, fine)


def call_arguments(name: str, text: str) -> str:
    """A tool call's input as the shop's tool reads it, so that two spellings of one call compare equal:
    the order id of queryOrder and applyRefund (tools.read_one_id, tools.read_refund_input), the tracking
    number of queryLogistics, the query of searchKnowledge; getCurrentTime reads nothing. An input the tool
    cannot read, or another tool's, is its text with the spaces evened out."""
    try:
        if name == "queryOrder":
            return read_one_id(text, ORDER_ID)
        if name == "queryLogistics":
            return read_one_id(text, TRACKING_NO).upper()
        if name == "applyRefund":  # its order: a second refund for one order is a repeat, whatever its reason
            try:
                return read_refund_input(text)[0]
            except BadInput:  # no reason, say: the order id may still be there
                return read_one_id(text, ORDER_ID)
        if name == "searchKnowledge":
            return " ".join(read_search_query(text).split())
        if name == "getCurrentTime":
            return ""
    except BadInput:
        pass
    return " ".join(text.split())


def check_database(task: EvalTask, outcome: RunOutcome) -> Check:
    """The refunds table holds a row for exactly the task's orders."""
    expected, found = sorted(task.refunds), sorted(outcome.refunds)
    problems = [f"no refund was written for {order}" for order in expected if order not in found]
    problems += [f"a refund was written for {order}, which the task does not ask for"
                 for order in found if order not in expected]
    if not problems and len(found) != len(expected):
        problems.append(f"{len(found)} refund rows, the task needs {len(expected)}")
    fine = f"one refund row, for {', '.join(expected)}" if expected else "no refund written"
    if len(expected) > 1:
        fine = f"{len(expected)} refund rows, for {', '.join(expected)}"
    return _verdict(problems, fine)


def check_answer(task: EvalTask, outcome: RunOutcome) -> Check:
    """An answer (not a stop), holding every fact, in the language the customer wrote in."""
    if outcome.reason not in ANSWERED or not outcome.answer:
        return Check(False, f"the run ended with {outcome.reason}, not with an answer of the model's own")
    problems = [f"it does not say {fact}" for fact in task.facts if not holds_fact(outcome.answer, fact)]
    if task.conclusion and (wrong := conclusion_problem(task.conclusion, outcome.answer)):
        problems.append(wrong)
    if outcome.refund_ids is not None:  # a refund the answer reports must be one the shop wrote
        named = dict.fromkeys(_REFUND_ID.findall(unicodedata.normalize("NFKC", outcome.answer).upper()))
        problems += [f"it names the refund {rid}, which was never written" for rid in named
                     if rid not in outcome.refund_ids]
    answer = unicodedata.normalize("NFKC", outcome.answer)
    problems += [f"it names order {order}, which the customer did not ask about"
                 for order in dict.fromkeys(ORDER_IN_TEXT.findall(answer)) if order not in task.orders]
    if not task.refunds and not outcome.refunds and claims_refund(answer):  # (a refund task fails its database)
        problems.append("it says a refund was submitted, and the refunds table holds none")
    language = written_in(outcome.answer, quoted=[use.result for use in outcome.tool_calls])
    if language not in (task.lang, None):
        problems.append(f"it is written in {LANGUAGE_NAMES[language]}; the customer wrote in "
                        f"{LANGUAGE_NAMES[task.lang]}")
    return _verdict(problems, f"holds {', '.join(task.facts)}")


def claims_refund(answer: str) -> bool:
    """Whether `answer` says a refund was submitted, or hedges that it was: "your refund has been submitted", "退款已
    提交", "your refund may have been submitted"; not "no refund was submitted", not "Shall I submit the refund?"
    (conclusions.SUBMITTED, read in its clause). A word check: "your money is on its way" says nothing to it."""
    return any(reading in ("said", "hedged") for reading in read_claim(answer, SUBMITTED))


def holds_fact(answer: str, fact: str) -> bool:
    """Whether `answer` states `fact` as the fact it is, not as a piece of something longer:

    a number (15, 343)        as a whole number: not inside 2015, 1.15, 1.1.15 or 15,000, not in 15.5
    a date (2026-06-22)       as that date: 2026-06-22, 2026-6-22, 2026/6/22, 2026.06.22, 2026年6月22日 (or 6月22日,
                              6月22号), June 22, 2026, June 22nd 2026, Jun. 22, 2026, 22 June 2026, and without the
                              year (June 22, 22 June, 6月22日) unless another year is beside it
    a range, a time (1-3, 19:05)  whole: not inside 11-30 or 19:055; 1–3, 1—3, 1~3 and 1到3 say 1-3 too,
                              19点05分, 7:05 pm and 晚上7点05分 say 19:05
    an id (SF1234567890)      as a whole word: not inside SF12345678901
    a word (cancel, 取消)      as a word's beginning may be ("cancelled" says cancel), where it is said: not with a
                              negation next to it ("not cancelled", 未取消), nor hedged or asked ("Shall I cancel
                              it?"): conclusions.read_claim

    The answer is read NFKC-normalised, so full-width digits and letters (３４３, ＳＦ1234567890, 19：05) are the
    plain ones. A number, a date, a time or an id counts where no hedge is in its clause (conclusions.hedged_at):
    "Maybe SF1234567890?" and "好像还剩 343 天" do not hold it, "not within the 15 days" holds 15.
    """
    if not answer:
        return False
    answer = unicodedata.normalize("NFKC", answer)
    if not re.search(r"\d", fact):
        return "said" in read_claim(answer, word_claim(fact))
    return any(not hedged_at(answer, found.start()) for pattern in fact_patterns(fact)
               for found in re.finditer(pattern, answer, re.IGNORECASE))


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_NUMBER_EDGE_BEFORE = r"(?<![0-9A-Za-z])(?<![0-9][.,\-])"  # a comma between digits groups thousands: 3,343
_NUMBER_EDGE_AFTER = r"(?![0-9A-Za-z])(?![.,\-:][0-9])"


def fact_patterns(fact: str) -> list[str]:
    """The regular expressions any one of which finds `fact` in an answer (see `holds_fact`)."""
    date = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", fact)
    if date:
        year, month, day = date.groups()
        m, d = int(month), int(day)
        month_name = f"{_MONTHS[m - 1][:3]}(?:{_MONTHS[m - 1][3:]}|\\.)?"  # June, Jun or Jun.
        nth = "(?:st|nd|rd|th)?"
        no_other_year = r"(?!,?\s*[0-9])"  # "June 22" alone, not "June 22, 2025"
        spellings = [f"{year}-0?{m}-0?{d}", f"{year}/0?{m}/0?{d}", f"{year}\\.0?{m}\\.0?{d}",
                     f"{year}年0?{m}月0?{d}[日号]", f"(?<![0-9]年)(?<![0-9]年 )0?{m}月0?{d}[日号]",  # 6月22日 alone too
                     f"{month_name} 0?{d}{nth},? {year}", f"0?{d}{nth} {month_name},? {year}",
                     f"{month_name} 0?{d}{nth}{no_other_year}", f"0?{d}{nth} (?:of )?{month_name}{no_other_year}"]
        return [_NUMBER_EDGE_BEFORE + s + _NUMBER_EDGE_AFTER for s in spellings]
    if re.fullmatch(r"\d+", fact):
        return [_NUMBER_EDGE_BEFORE + fact + _NUMBER_EDGE_AFTER]
    span = re.fullmatch(r"(\d+)-(\d+)", fact)
    if span:
        low, high = span.groups()
        return [_NUMBER_EDGE_BEFORE + low + r"\s?[-–—~～至到]\s?" + high + _NUMBER_EDGE_AFTER,
                _NUMBER_EDGE_BEFORE + low + r" to " + high + _NUMBER_EDGE_AFTER]
    if re.fullmatch(r"\d+:\d+", fact):
        hour, minute = fact.split(":")
        # On a twelve-hour clock too: 19:05 is 7:05 pm, 晚上7点05分; 09:05 is 9:05 am, 上午9点05分.
        h = int(hour) % 12 or 12
        pm = int(hour) >= 12
        english = r"\s?(?:pm|p\.m\.)" if pm else r"\s?(?:am|a\.m\.)"
        chinese = "(?:下午|晚上|傍晚|中午)" if pm else "(?:上午|早上|凌晨|清晨)"
        return [_NUMBER_EDGE_BEFORE + fact + r"(?![0-9])", _NUMBER_EDGE_BEFORE + f"{hour}[点點]{minute}(?![0-9])",
                _NUMBER_EDGE_BEFORE + f"0?{h}:{minute}{english}(?![A-Za-z])",
                chinese + f"\\s?0?{h}(?:[点點]|:){minute}(?![0-9])"]
    if re.search(r"\d", fact):  # an id: a whole word
        return [r"(?<![0-9A-Za-z])" + re.escape(fact) + r"(?![0-9A-Za-z])"]
    return [re.escape(fact)]


def check_format(outcome: RunOutcome) -> Check:
    """Every reply readable, none cut at the stop sequence, and a Final Answer rather than the fallback."""
    if outcome.replies == 0:  # a model that never answered followed no protocol
        return Check(False, "the model never replied: no reply to check")
    problems = []
    # The reply the fallback took is one of the unreadable ones (no Action, no Final Answer): said once, below.
    n = outcome.unreadable_replies - (outcome.reason == "fallback")
    cut = outcome.cut_replies
    if n > 0:
        why = "" if not cut else f" ({cut} ended at max_tokens)" if cut < n else " (cut at max_tokens)"
        problems.append(f"{n} {'reply' if n == 1 else 'replies'} could not be read as a step{why}")
    if outcome.client_cuts:
        n = outcome.client_cuts
        problems.append(f"{n} {'reply' if n == 1 else 'replies'} ran past the stop sequence and had to be cut")
    if outcome.reason == "fallback":
        problems.append("the answer came as prose the fallback took, not as a Final Answer")
    fine = "every reply followed the protocol"
    if outcome.repaired_replies:
        n = outcome.repaired_replies
        fine = f"every reply could be read, {n} of them only once the parser had repaired {'it' if n == 1 else 'them'}"
    return _verdict(problems, fine)


LANGUAGE_NAMES = {"zh": "Chinese", "en": "English"}
_REFUND_ID = re.compile(r"(?<![0-9A-Z])RF[0-9]{12}(?![0-9A-Z])")  # as the shop writes them: RF + day + 4 digits


def written_in(text: str, quoted: Iterable[str] = ()) -> str | None:
    """"zh" or "en": the language the writer of `text` used; None when it holds no word at all (ids and dates only).

    An answer quotes the shop: an English one the product, the carrier or a policy in Chinese ("比特 S10 Pro 扫地机"), a
    Chinese one the ids (SF1234567890) or a product's Latin name ("AirPure"). So the Han characters and the Latin
    words copied from `quoted` (the tools' results) do not count, nor do ids (words with a digit); what is left,
    the writer's own Han characters against the letters of its own Latin words, says which language it wrote in.
    When every word was copied, the copied words decide: an English customer answered only with the shop's Chinese
    ("SF1234567890 已签收") got no English. It tells the two scripts apart, no more: Spanish counts as English here,
    and Japanese kanji as Chinese (the suite's customers write Chinese or English).
    """
    quoted = list(quoted)
    copied = {word.lower() for source in quoted for word in _LATIN_WORD.findall(source)}
    own_han = sum(len(run) for run in _HAN_RUN.findall(text) if not any(run in source for source in quoted))
    latin = sum(len(word) for word in _LATIN_WORD.findall(text) if word.lower() not in copied)
    if own_han == latin == 0:  # every word copied: an answer with no English word is not English, and the same
        own_han = sum(len(run) for run in _HAN_RUN.findall(text))  # for Chinese, so the copied words decide
        latin = sum(len(word) for word in _LATIN_WORD.findall(text))
    if own_han == latin == 0:
        return None
    return "zh" if own_han >= latin else "en"


_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
# A word of Latin letters only: "SF1234567890", "S10" and "2026-06-22" are ids and dates, in no language.
_LATIN_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]+(?![A-Za-z0-9])")
