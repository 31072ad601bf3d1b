"""Grading on generated inputs: the learner's answer and the check's reference run side by side on many inputs
drawn from the exercise's spec, and the answer must agree with the reference on every one.

A check that tries an answer on the lesson's own example and on the mistakes someone thought of passes any answer
that is right on those inputs (a tool name written in, a cache, the first line read only). Property-based testing
and hidden-test graders answer that the same way, and so does this module: each sentence of an exercise's spec is
a `Rule` with a generator of inputs (seeded, so a failure is the same on every run), and `agree_on` runs

- every input once, in the rules' order, on one answer in one process (so state kept between calls shows);
- the first inputs again, in reverse order, after all the others: the second call must give what the first gave;
- each input on a copy of its arguments, and the copy must come back unchanged unless the spec says otherwise.

A failure names the sentence the answer breaks and shows the smallest input (of those tried for that sentence)
that breaks it, in a few lines. A check's rules are kept on the check (`check.spec`), so
`spec_table()` lists what each check tries, and a test holds `docs/authoring-notebooks.md` to it.
"""

from __future__ import annotations

import contextlib
import copy
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tinyagent.checks.reporting import (
    STEPS,
    ExerciseFailed,
    _brief,
    _columns,
    _fail,
    _learners_frame,
    _Lines,
    _Runaway,
    learners_mistake,
    said,
    shown,
    stopped_while,
)

# "at 0x7f3a..." in the repr of an object without a repr of its own: two such answers look the same without it.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# How many of the first inputs are asked again (in reverse order) to find state kept between calls.
AGAIN = 12
# Plain data a check can compare after a call; anything else (a shop, a class) is not checked for changes.
_PLAIN = (str, int, float, bool, type(None), bytes)
# Through `agree_on`, the learner's answer may run STEPS_PER_LINE times the lines the reference runs on the same
# input (so that a right answer however slow, quadratic where the reference is linear, passes), and never fewer
# than STEPS: see `reporting._Lines`.
STEPS_PER_LINE = 50


@dataclass(frozen=True)
class Rule:
    """One sentence of an exercise's spec and the inputs that test it.

    `sentence`: the spec's words, as a failure quotes them ("each tool message is read, not only the first").
    `inputs(rng)`: the arguments to try, each a tuple; drawn from `rng` (seeded per check) where they vary.
    `hint(args, expected, got)`: a few words on what the answer most likely did, or None (optional)."""

    sentence: str
    inputs: Callable[[random.Random], Iterable[tuple]]
    hint: Callable[[tuple, Any, Any], str | None] | None = None


@dataclass(frozen=True)
class Outcome:
    """What one call did: returned `value`, or raised an exception of type `raised`."""

    value: Any = None
    raised: type[BaseException] | None = None

    def shown(self) -> str:
        return f"raised {self.raised.__name__}" if self.raised else _brief(self.value, 40)


@dataclass
class Tally:
    """One check's run of `agree_on`, for `recording()`: inputs tried, and the failure if there was one."""

    check: str
    inputs: int = 0
    failure: str | None = None


_recordings: list[list[Tally]] = []


@contextlib.contextmanager
def recording() -> Iterator[list[Tally]]:
    """Collect a `Tally` for every `agree_on` run inside the block (a test reads how many inputs each check tried
    and that the solution disagreed on none)."""
    tallies: list[Tally] = []
    _recordings.append(tallies)
    try:
        yield tallies
    finally:
        _recordings.remove(tallies)


def cases(rules: Sequence[Rule], seed: str) -> list[tuple[Rule, tuple]]:
    """Every (rule, arguments) pair of `rules`, drawn with one generator seeded by `seed` (the check's name)."""
    rng = random.Random(seed)
    return [(rule, tuple(args)) for rule in rules for args in rule.inputs(rng)]


def agree_on(
    exercise: str,
    check: str,
    rules: Sequence[Rule],
    mine: Callable[..., Any],
    reference: Callable[..., Any],
    *,
    shape: Callable[[Any], str | None] | None = None,
    read: Callable[[Any], Any] = lambda value: value,
    call: str = "your answer",
    unchanged: bool = True,
    again: bool = True,
    show: Callable[[tuple], str] | None = None,
) -> int:
    """Run `mine` and `reference` on every input of `rules`; fail on the first rule `mine` breaks. Returns how
    many inputs were tried.

    `shape(value)`: what is wrong with the form of a value `mine` returned ("should be a list of strings"), or
    None; checked before comparing. `read(value)`: what of a returned value is compared (both sides).
    `call`: how the failure names the learner's code (`"my_parse_plan(text)"`). `unchanged`: arguments of plain
    data must come back as they were given. `again`: the first inputs are asked again, in reverse order.
    `show(args)`: the input as a failure shows it (default: the one argument, or the tuple, cut short).
    Each call of `mine` may run `_budget` lines of Python (sized from the reference on the same input), and
    `_Lines`' SECONDS once past them, before it fails as a loop that does not end."""
    tally = Tally(check)
    for tallies in _recordings:
        tallies.append(tally)
    show = show or _show
    tried = cases(rules, check)
    tally.inputs = len(tried)
    first: dict[int, Outcome] = {}
    budgets: dict[int, int | None] = {}  # input's index -> the lines `mine` may run on it
    broken: dict[int, list[tuple[int, str]]] = {}  # rule's index -> (input size, what went wrong)
    form_only = True  # every input that failed failed on the form of what was returned (`shape`), not its value
    changed: list[tuple[int, str]] = []  # (input size, the input and what it became): no rule's, every exercise's
    expected_kind = ""  # the kind of value the reference returned ("a list"), once it returned one that is not None
    kinds: list[tuple[str | None, str | None, bool]] = []  # (the reference's kind, the answer's, agreed), both returned
    rule_index = {id(rule): n for n, rule in enumerate(rules)}
    try:
        for n, (rule, args) in enumerate(tried):
            counted = _Lines(reference)
            expected = _call(counted, args)
            budgets[n] = steps = _budget(counted.ran)
            if expected.raised is not None and not issubclass(expected.raised, Exception):
                raise RuntimeError(f"the reference of {check} raised {expected.raised.__name__}")
            if not expected_kind and expected.raised is None and expected.value is not None:
                expected_kind = _kind(expected.value)
            given = copy.deepcopy(args)
            got = _call_answer(mine, given, exercise, call, partial(show, args), steps=steps)
            first[n] = got
            wrong = _disagreement(expected, got, shape, read)
            of_form = wrong is not None and _form_of(got, expected, shape) == wrong
            form_only = form_only and (wrong is None or of_form)
            if expected.raised is None and got.raised is None and None not in (expected.value, got.value):
                kinds.append((_plain_kind(expected.value), _plain_kind(got.value), wrong is None))
            if wrong is None and unchanged and _plain(args) and _differ(given, args) is not False:
                # _show, not show: a check's own show is made for inputs as given, not as an answer left them
                changed.append((len(repr(args)), f"{show(args)}\nwhich it left as {_show(given)}"))
            # a rule's hint reads the values it compares: none for a result of the wrong form (a dict for a pair)
            if wrong is not None and got.raised is None and not of_form and (why := _hint(rule, args, expected, got)):
                wrong = f"{wrong} {why}"
            if wrong is not None:
                broken.setdefault(rule_index[id(rule)], []).append((len(repr(args)), f"{show(args)}\n{wrong}"))
        if broken:
            not_equal = _kept_between_calls(exercise, call, [0, 1, 2], tried, first, mine, read, show, budgets)
            if expected_kind and all(got.raised is None and got.value is None for got in first.values()):
                # No rule's fault: the answer gives nothing back, whatever it is given (it prints, say).
                _fail(exercise, f"{call} returned None for every input, where {expected_kind} was expected: return "
                                "the answer (print only shows a value, and the function still returns None)")
            index = min(broken)
            _, smallest = min(broken[index], key=lambda item: item[0])
            if kinds and all(ours and theirs and theirs != ours and not agreed for ours, theirs, agreed in kinds):
                # No rule's fault either: a value of another kind every time (a dict for JSON text, a tuple for a
                # list); the first rule's sentence would point at the wrong thing.
                answered = " or ".join(sorted({theirs for _, theirs, _ in kinds}))
                wanted = " or ".join(sorted({ours for ours, _, _ in kinds}))
                _fail(exercise, f"{call} returned {answered} each time it should return {wanted}. "
                                f"Smallest failing input: {smallest}")
            if form_only:
                # No rule's fault: what it returns has the wrong form (a list it was given, a mutated one), and
                # the first rule's sentence would send the learner to what it got right.
                _fail(exercise, f"{call} returns a result of another form than the spec asks. "
                                f"Smallest failing input: {smallest}")
            if not_equal:
                _fail(exercise, not_equal)
            _fail(exercise, f"the spec says: {rules[index].sentence}\n{call} does not hold to it. "
                            f"Smallest failing input: {smallest}")
        if changed:
            _, smallest = min(changed, key=lambda item: item[0])
            _fail(exercise, f"{call}: it changed the input it was given, which the spec does not ask it to: work on "
                            f"a copy. Smallest input it changed: {smallest}")
        if again and (not_equal := _kept_between_calls(exercise, call, reversed(range(min(AGAIN, len(tried)))),
                                                       tried, first, mine, read, show, budgets)):
            _fail(exercise, not_equal)
    except ExerciseFailed as failure:
        tally.failure = str(failure)
        raise
    return tally.inputs


def _kind(value: Any) -> str:
    """How a failure names the kind of a value: "a list", "an int", "a generator"."""
    name = "generator" if isinstance(value, Iterator) else type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


_PLAIN_TYPES = (str, bytes, bool, int, float, list, tuple, dict, set, frozenset)


def _plain_kind(value: Any) -> str | None:
    """_kind for Python's own kinds of value (and generators); None for a class of the lesson's or the learner's,
    whose name need not be the reference's (lesson 11's `Step` for `ParsedStep`)."""
    return _kind(value) if type(value) in _PLAIN_TYPES or isinstance(value, Iterator) else None


def _kept_between_calls(exercise: str, call: str, indices: Iterable[int], tried: list[tuple[Rule, tuple]],
                        first: dict[int, Outcome], mine: Callable[..., Any], read: Callable[[Any], Any],
                        show: Callable[[tuple], str], budgets: dict[int, int | None]) -> str | None:
    """Ask `mine` again on inputs it answered before: an answer that differs from its first one means state kept
    between calls, which is the failure to report, whatever else went wrong. An answer that only looks the same
    (NaN, an object without __eq__) is no state: what to say of it is returned, for the caller to say after a
    value of the wrong kind (a float where a tuple was expected), which explains it better."""
    for n in indices:
        if n not in first or isinstance(first[n].value, Iterator):
            continue  # a generator is never equal to another: its answer is judged on its contents, not here
        if first[n].raised is None and not _readable(read, first[n].value):
            continue  # an answer of the wrong form (None for a list): that is the failure to report, not state
        args = tried[n][1]
        got = _call_answer(mine, copy.deepcopy(args), exercise, call, partial(show, args), mistakes=False,
                           steps=budgets.get(n))
        if _disagreement(first[n], got, None, read) is not None:
            if first[n].raised is None and got.raised is None and _looks_the_same(first[n].value, got.value):
                return (f"asked again, {call} gave an answer that looks the same but is not == to the first (NaN, or "
                        f"an object without __eq__): return plain values.\nThe input: {show(args)}\n"
                        f"Both times {got.shown()}")
            _fail(exercise, f"called again on an input it had answered before, {call} gave a different answer: "
                            "it keeps something between calls (a module-level list, a cache).\n"
                            f"The input: {show(args)}\nFirst {first[n].shown()}, then {got.shown()}")


def _looks_the_same(first: Any, again: Any) -> bool:
    """Two answers whose whole reprs match, but for the addresses in them: not state kept, but values that are not
    equal to themselves (NaN) or that compare by identity (an object without __eq__)."""
    return _ADDRESS.sub("", shown(first)) == _ADDRESS.sub("", shown(again))


def _readable(read: Callable[[Any], Any], value: Any) -> bool:
    try:
        read(value)
    except Exception:  # noqa: BLE001 - `read` is written for values of the right form only
        return False
    return True


def _call_answer(mine: Callable[..., Any], args: tuple, exercise: str, call: str, given: Callable[[], str], *,
                 mistakes: bool = True, steps: int | None = None) -> Outcome:
    """`_call` on the learner's answer; interrupted in a notebook, out of memory, or past `steps` lines of Python
    (and `_Lines`' SECONDS), a failure that names the input it ran on (`given()`, made only then). `mistakes`: a
    method their class lacks, or a wrong signature, fails the check at once."""
    try:
        return _call(_Lines(mine, budget=steps), args, exercise if mistakes else None)
    except KeyboardInterrupt:
        stopped_while(exercise, call, given())
        raise
    except MemoryError as exc:
        # Its traceback holds the answer's frames, and they hold what filled the memory: let them go before anything
        # else is allocated (a failure kept there raises MemoryError again, from the check).
        exc.__traceback__ = None
        ran = "ran out of memory"
    except _Runaway:
        ran = f"did not stop within {steps:,} steps"
    raise ExerciseFailed(f"{exercise}: {call} {ran} on {given()}: does its loop end?")


def _budget(reference_ran: int | None) -> int | None:
    """The lines of Python the answer may run on an input the reference ran `reference_ran` lines on; None (no
    budget) where they could not be counted."""
    return None if reference_ran is None else max(STEPS, STEPS_PER_LINE * reference_ran)


def _call(function: Callable[..., Any], args: tuple, exercise: str | None = None) -> Outcome:
    """Call `function(*args)`; an exception is an outcome (the reference raises where the spec says to), but
    for MemoryError, which the caller reports."""
    try:
        value = function(*args)
    except (ExerciseFailed, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - an exception is what the call did; compared with the reference's
        if exercise is not None and _learners_frame(exc.__traceback__) is None and (why := learners_mistake(exc)):
            _fail(exercise, why)  # a method their class lacks, or a signature the exercise does not call it with
        return Outcome(raised=type(exc), value=exc)
    try:  # a copy: an answer that hands back the same list every call must not change its first answer later
        return Outcome(value=copy.deepcopy(value))
    except Exception:  # noqa: BLE001 - a value that cannot be copied is kept as it is
        return Outcome(value=value)


def _disagreement(expected: Outcome, got: Outcome, shape: Callable[[Any], str | None] | None,
                  read: Callable[[Any], Any]) -> str | None:
    """What differs between the reference's outcome and the answer's, in a sentence; None when they agree."""
    if expected.raised is not None:
        if got.raised is not None and issubclass(got.raised, expected.raised):
            return None
        if got.raised is not None and got.raised.__name__ == expected.raised.__name__:
            return (f"it raised a {got.raised.__name__} of its own: raise the one from {expected.raised.__module__} "
                    f"(import it)")
        if got.raised is not None:
            return f"expected {expected.raised.__name__}, it raised {got.raised.__name__}: {said(got.value)}"
        return f"expected {expected.raised.__name__}, it returned {_brief(got.value, 50)}"
    if got.raised is not None:
        return f"it raised {got.raised.__name__}: {said(got.value)}; expected {_brief(read(expected.value), 50)}"
    try:
        wrong = shape(got.value) if shape is not None else None
    except Exception as exc:  # noqa: BLE001 - `shape` reads values of any form; one it cannot read is the answer's
        return f"its result cannot be read ({type(exc).__name__} reading it): {_brief(got.value, 50)}"
    if wrong is not None:
        return wrong
    want = read(expected.value)
    try:
        have = read(got.value)
    except Exception:  # noqa: BLE001 - a value `read` cannot take is a wrong value, not the check's error
        return f"expected {_brief(want, 50)}, got {_brief(got.value, 50)}"
    differ = _differ(want, have)
    if differ is None:
        return f"its result cannot be compared with the expected one (== raised): {_brief(have, 50)}"
    return _expected_got(want, have) if differ else None


def _form_of(got: Outcome, expected: Outcome, shape: Callable[[Any], str | None] | None) -> str | None:
    """What `shape` says of the answer's returned value (when both returned), or None."""
    if shape is None or got.raised is not None or expected.raised is not None:
        return None
    try:
        return shape(got.value)
    except Exception:  # noqa: BLE001 - as in _disagreement: a value shape cannot read is no form it names
        return None


def _differ(want: Any, have: Any) -> bool | None:
    """Whether `have` differs from `want` (`!=`); None when comparing them raised (a list that holds itself,
    an __eq__ that raises, a result whose truth cannot be told)."""
    try:
        return bool(want != have)
    except Exception:  # noqa: BLE001 - the learner's value made the comparison fail
        return None


def _expected_got(want: Any, have: Any, columns: int = 50) -> str:
    """"expected …, got …", each cut short as failures quote values; where both cuts read the same (the
    difference is in the part cut out), each is shown from a little before the first character that differs."""
    shown_want, shown_have = _brief(want, columns), _brief(have, columns)
    a, b = shown(want), shown(have)
    if a == b:  # a value shown as a summary ("2 messages"): the check's hint says what differs
        return f"expected {shown_want}, got {shown_have}, not the same ones"
    if shown_want == shown_have:
        at = next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        start = max(0, at - columns // 3)
        shown_want, shown_have = _window(a, start, columns), _window(b, start, columns)
    return f"expected {shown_want}, got {shown_have}"


def _window(text: str, start: int, columns: int) -> str:
    """`text` from `start`, as many characters as fill `columns`, with … where it was cut."""
    end, used = start, 0
    while end < len(text) and used + _columns(text[end]) <= columns:
        used += _columns(text[end])
        end += 1
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _hint(rule: Rule, args: tuple, expected: Outcome, got: Outcome) -> str | None:
    if rule.hint is None or expected.raised is not None:
        return None
    try:
        return rule.hint(args, expected.value, got.value)
    except Exception:  # noqa: BLE001 - a hint that cannot be worked out is left out
        return None


def _show(args: tuple) -> str:
    return _brief(args[0] if len(args) == 1 else args, 70)


def _plain(value: Any) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):
        return all(_plain(key) and _plain(item) for key, item in value.items())
    return False


# -- what every check tries, as a table ----------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """What a check tries: its rules (generated inputs), or, for a check with no generated inputs, why not."""

    rules: tuple[Rule, ...] = ()
    fixed: str = ""
    extra: tuple[str, ...] = field(default=())  # sentences the check tests on fixed inputs beside the rules


def spec_of(check: Callable[..., Any]) -> Spec | None:
    return getattr(check, "spec", None)


def spec_table() -> str:
    """The Markdown table of every check: its lesson, the generated inputs it tries and the spec sentences."""
    from tinyagent import checks

    rows = ["| Check | Inputs | Spec sentences it covers |", "|---|---:|---|"]
    for module, names in checks._LESSONS.items():
        for name in names:
            if not name.startswith("check_"):
                continue
            spec = spec_of(getattr(checks, name))
            if spec is None:
                rows.append(f"| {module[6:8]} `{name}` | ? | (no spec recorded) |")
                continue
            count = str(len(cases(spec.rules, name))) if spec.rules else "—"
            sentences = [rule.sentence for rule in spec.rules] + list(spec.extra)
            said = "; ".join(sentences) or spec.fixed
            rows.append(f"| {module[6:8]} `{name}` | {count} | {said.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)
