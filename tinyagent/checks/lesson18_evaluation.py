"""Lesson 18 (evaluation): a task of your own, and which checks each variant fails."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tinyagent.checks.generated import Spec
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades, shown
from tinyagent.evaluation import CHECKS, EvalTask, RunOutcome, ToolUse, evaluate, grade
from tinyagent.evaluation.tasks import check_task
from tinyagent.llm_client import LlmClient
from tinyagent.protocols.protocol_comparison import run_on_fresh_shop

# Exercise 1's request: order 88234 was signed for 3 days before the course's day, within the 7-day
# no-reason window, so a right run checks the order, the date and the policy, then writes the refund.
EVAL_EXERCISE_REQUEST = "Order 88234 arrived three days ago and I have not used it. Please refund it."


@grades("Exercise 1", spec=Spec(fixed="one fixed request, named by the exercise: the learner's task is graded on the "
                                       "careful model's run of it (which must pass) and on seven wrong runs made "
                                       "from that run (each must fail), not on inputs of the learner's code; its tools, "
                                       "may_also_call, refunds and facts must be tuples of non-empty strings (a "
                                       "one-item tuple keeps its comma), with a fact or more, or evaluate() refuses "
                                       "the task"))
def check_eval_task(my_task: Any) -> None:
    """18, exercise 1: an EvalTask for EVAL_EXERCISE_REQUEST that the careful model's run passes and that
    fails each wrong run: no refund written, a refund without the checks, the wrong order, an invented id."""
    exercise = "Exercise 1"
    if my_task is None:
        return _not_attempted(exercise, "Set my_task = EvalTask(...) in the cell above.")
    if not isinstance(my_task, EvalTask):
        _fail(exercise, f"my_task should be an EvalTask(name, question, facts, lang=..., tools=..., refunds=...), "
                        f"got {type(my_task).__name__}")
    if my_task.question != EVAL_EXERCISE_REQUEST:
        _fail(exercise, f"the question should be the request above, exactly: {shown(EVAL_EXERCISE_REQUEST)}")
    if my_task.lang != "en":
        _fail(exercise, f"lang says which language the customer wrote in, and expects the answer in: 'en' here, "
                        f"got {shown(my_task.lang)}")

    for field in ("tools", "may_also_call", "refunds", "facts"):
        _tuple_of_strings(exercise, field, getattr(my_task, field))
    try:  # a task the harness refuses is refused here too, in its words: evaluate() would never run it
        check_task(my_task)
    except ValueError as refused:
        empty = " An empty fact is in every answer, so it would check nothing." if "" in my_task.facts else ""
        _fail(exercise, f"evaluate() would refuse your task: {refused}.{empty}")
    for field in ("tools", "may_also_call", "refunds", "facts"):  # 'queryOrder ' fails a right run, and its
        # failure reads oddly: "queryOrder  was not called; queryOrder was called"
        if spaced := [item for item in getattr(my_task, field) if item != item.strip()]:
            _fail(exercise, f"{field} holds {shown(spaced[0])}, with spaces around it: a tool's name, an order id or "
                            f"a fact is written without them, {shown(spaced[0].strip())}")

    # The careful classroom model gets it right (tests/test_exercises.py shows it): its run must pass.
    result, refunds = run_on_fresh_shop(my_task.question, "text", LlmClient.classroom())
    right = RunOutcome.from_run(result, refunds)
    # the refund id the shop issued, named: the answer is cut to fit a failure, and the id may be in the part cut
    written = ", ".join(f"refund {row['refundId']} for order {row['orderId']}" for row in refunds) or "no refund"
    for name, check in grade(my_task, right).items():
        if not check.passed:
            _fail(exercise, f"the careful model's run is right (it called {' → '.join(u.name for u in right.tool_calls)}, "
                            f"wrote {written} and answered {_brief(right.answer)}), but it fails "
                            f"your task's {name} check: {_brief(check.detail, 120)[1:-1]}. Fix what your task expects there.")

    refund_call = next(use for use in right.tool_calls if use.name == "applyRefund")
    lookups = tuple(use for use in right.tool_calls if use.name != "applyRefund")
    wrong_runs = (
        (replace(right, tool_calls=lookups, refunds=(),
                 answer="Order 88234 is within the 7-day no-reason return period, so it can be refunded."),
         "a run that never wrote the refund (no applyRefund call, no row in the refunds table)",
         "Say which refund the database must hold (refunds) and which tools a right run calls (tools)"),
        (replace(right, tool_calls=(refund_call,)),
         "a run that refunded without looking up the order, the date and the policy",
         "List in tools every call a right run makes, not only the one that writes"),
        # "checks the order, the date and the policy": each lookup is required, not a harmless extra
        *((replace(right, tool_calls=(*(use for use in lookups if use.name != skipped), refund_call)),
           f"a run that refunded without calling {skipped}",
           "List in tools every lookup a right run makes: may_also_call is for harmless extras, not for the checks")
          for skipped in ("queryOrder", "getCurrentTime", "searchKnowledge")),
        (replace(right, tool_calls=(*lookups, ToolUse("applyRefund", '{"orderId": "88231", "reason": "unused"}')),
                 refunds=("88231",)),
         "a run that refunded order 88231 instead of 88234",
         "Say which order's refund the database must hold (refunds)"),
        (replace(right, answer=right.answer.replace("RF202606300001", "RF20260630001")),
         "a run whose answer gives a refund id the shop never issued (RF20260630001)",
         "Put in facts what only the shop can give: the refund id it issued"),
    )
    for outcome, what, fix in wrong_runs:
        if all(check.passed for check in grade(my_task, outcome).values()):
            _fail(exercise, f"your task passes {what}. {fix}.")
    return _passed(exercise, "the careful model's run passes your task, and each wrong run fails it: no refund "
                             "written, a refund without the checks, the wrong order, an invented refund id.")


def _tuple_of_strings(exercise: str, field: str, value: Any) -> None:
    """`field` of the task holds names or ids, several of them: a tuple (or list) of strings. A lone string is
    most likely a one-item tuple written without its comma, ("88234") for ("88234",); read as it is, each of its
    characters would be a name or id of its own."""
    if isinstance(value, str):
        _fail(exercise, f"{field} is the string {_brief(value, 40)}, not a tuple: a tuple of one item needs its "
                        f"comma, ({shown(value)},)")
    if not isinstance(value, (tuple, list)) or not all(isinstance(item, str) for item in value):
        _fail(exercise, f"{field} should be a tuple of strings, got {_brief(value, 50)}")


def _same_keys(exercise: str, predicted_failures: dict) -> None:
    """A prediction for each variant and for nothing else: the keys missing and those that are no variant named,
    not the whole dict shown (four sets of names hide the one key that is wrong)."""
    missing = [model for model in VARIANT_BEHAVIOUR if model not in predicted_failures]
    extra = [key for key in predicted_failures if key not in VARIANT_BEHAVIOUR]
    if not missing and not extra:
        return
    says = [f"no prediction for {', '.join(map(shown, missing))}"] if missing else []
    if extra:
        named = ", ".join(_brief(key, 40) for key in extra)
        says.append(f"{named} is not one of the variants" if len(extra) == 1 else
                    f"{named} are not among the variants")
        if not missing:  # the missing names show the variants' names; with none missing, say them
            says[-1] += f" ({', '.join(VARIANT_BEHAVIOUR)})"
    if any(isinstance(key, str) and f"classroom-{key}" in VARIANT_BEHAVIOUR for key in extra):
        says.append("each variant's name begins with classroom-")
    _fail(exercise, f"predicted_failures: {'; '.join(says)}.")


# Exercise 2: the variants to predict, and what each does on the English refund with text ReAct.
VARIANT_BEHAVIOUR = {
    "classroom-no-final": "it calls the right tools and its last reply holds the refund id, but in plain prose: "
                          "no 'Final Answer:' line",
    "classroom-wrong-tool": "its first call goes to a tool that does not exist; it reads the error, corrects "
                            "itself and carries on to the right refund and answer",
    "classroom-loop": "it asks for the order again every round, whatever it is told, until the step cap; each "
                      "reply is a well-formed step",
    "classroom-forgets-action": "its first reply is a Thought with no Action, which lesson 06's strict loop "
                                "takes as the answer (the fallback): the run ends there",
}


@grades("Exercise 2", spec=Spec(fixed="a prediction of what a run shows: the checks each of the four fixed variants "
                                       "fails on the English refund, compared with an evaluation run by the check"))
def check_variant_failures(predicted_failures: dict | None) -> None:
    """18, exercise 2: which of the four checks each variant fails on the English refund (text ReAct),
    measured on the spot."""
    exercise = "Exercise 2"
    if predicted_failures is None:
        return _not_attempted(exercise, "Set predicted_failures to a dict: variant -> the set of checks it fails.")
    if not isinstance(predicted_failures, dict):
        _fail(exercise, f"predicted_failures should be a dict with the keys {', '.join(VARIANT_BEHAVIOUR)}, "
                        f"got {_brief(predicted_failures, 60)}")
    _same_keys(exercise, predicted_failures)
    for model, predicted in predicted_failures.items():
        if not isinstance(predicted, (set, frozenset, list, tuple)) or not all(isinstance(name, str) and name in CHECKS
                                                                                for name in predicted):
            _fail(exercise, f"{model}: give a set of check names from {', '.join(CHECKS)} (set() for none), "
                            f"got {shown(predicted)}")
    for model, behaviour in VARIANT_BEHAVIOUR.items():
        report = evaluate(LlmClient.classroom(model), names=["refund"], langs=["en"], progress=False)
        failed = set(report.results[0].failed_checks)
        predicted = set(predicted_failures[model])
        if predicted != failed:
            missing, extra = sorted(failed - predicted, key=CHECKS.index), sorted(predicted - failed, key=CHECKS.index)
            says = "; ".join(part for part in (
                f"it also fails {', '.join(missing)}" if missing else "",
                f"it passes {', '.join(extra)}" if extra else "") if part)
            _fail(exercise, f"{model}: {says}. What it does: {behaviour}. Which checks read what went wrong?")
    return _passed(exercise, "each check reads one thing: a misstep in the calls fails tools alone, a reply in "
                             "the wrong shape fails format alone, and a run that never does the work fails the "
                             "tools, the database and the answer together.")
