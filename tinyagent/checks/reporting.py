"""How every check reports: not attempted yet, passed, or `ExerciseFailed` with what is wrong; and the helper
that calls the learner's code, so that an exception in it becomes a failure that names the call."""

from __future__ import annotations

import functools
import json
import re
import sys
import sysconfig
import threading
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from tinyagent.clock import COURSE_NOW, fixed_clock
from tinyagent.shop import Shop

# A failure as the learner sees it in a notebook: at most this many lines of at most this many columns, so
# that no line wraps again in a notebook's output area and the message stays one glance long.
FAILURE_LINES = 6
FAILURE_COLUMNS = 100
_HEAD = "ExerciseFailed: "


class ExerciseFailed(AssertionError):
    """The learner's answer is wrong; the message says what was expected and what came back.

    In IPython (a notebook, JupyterLab) it shows as that message alone, in a few short lines, instead of a
    traceback into the checks: IPython prints what `_render_traceback_()` returns when an exception has it.
    The cell still fails, so Run All stops there."""

    def _render_traceback_(self) -> list[str]:
        return failure_lines(str(self))


def failure_lines(message: str) -> list[str]:
    """`message` as the lines a notebook shows: "ExerciseFailed: " in red, then the message wrapped at
    FAILURE_COLUMNS (a Chinese character takes two columns), cut to FAILURE_LINES with a note if longer."""
    lines: list[str] = []
    for n, paragraph in enumerate(message.splitlines() or [""]):
        # No more of a paragraph than the lines could show (a character takes a column or more): a learner's
        # answer quoted whole, a megabyte long, still shows at once.
        part = paragraph[: FAILURE_LINES * FAILURE_COLUMNS + 1]
        lines += _wrap(part, FAILURE_COLUMNS, first=len(_HEAD) if n == 0 else 0)
        if len(lines) > FAILURE_LINES:
            break
    if len(lines) > FAILURE_LINES:
        lines = [*lines[: FAILURE_LINES - 1], "… (the rest is cut: print(sys.last_value) shows the whole message)"]
    lines[0] = f"\x1b[1;31m{_HEAD.rstrip()}\x1b[0m {lines[0]}"
    return lines


def shown(value: Any) -> str:
    """repr(value), or, when the learner's value cannot be shown (its __repr__ raises or returns no string, an
    int of more than 4,300 digits, nesting deeper than Python recurses), a line that says so: a failure that
    quotes it must still be a failure, never an exception from the check."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - whatever repr raised, the value is the learner's
        return f"<a {type(value).__name__} that cannot be shown: repr() raised {type(exc).__name__}>"
    return text if isinstance(text, str) else f"<a {type(value).__name__} whose repr() is no string>"


def said(exc: BaseException) -> str:
    """str(exc), or what it was when its __str__ raises: the message of an exception the learner's code raised."""
    try:
        text = str(exc)
    except Exception as failed:  # noqa: BLE001 - the exception is the learner's
        return f"<its message cannot be shown: str() raised {type(failed).__name__}>"
    return text if isinstance(text, str) else "<its message is no string>"


def _brief(value: Any, columns: int = 60) -> str:
    """`value` as a failure quotes it: a string as its repr (so line ends show as \\n), cut in the middle to
    about `columns` columns when longer, so one sample never fills the learner's screen."""
    text = shown(value)
    if len(text) <= columns and _columns(text) <= columns:  # a longer text cannot fit: no need to count it
        return text
    return _cut_middle(text, columns * 2 // 3, columns // 3 - 2)


def _cut_middle(text: str, head_columns: int, tail_columns: int) -> str:
    """`text` without its middle: as much of its start as fits in `head_columns` columns and of its end as fits
    in `tail_columns`, with " … " where it was cut."""
    head, tail = "", ""
    for ch in text:
        if _columns(head + ch) > head_columns:
            break
        head += ch
    for ch in reversed(text):
        if _columns(tail + ch) > tail_columns:
            break
        tail = ch + tail
    return f"{head} … {tail}"


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _wrap(paragraph: str, width: int, first: int = 0) -> list[str]:
    """Greedy wrap at spaces, counting display columns; a word wider than a line is broken where it must be.
    `first`: columns the first line already holds."""
    lines, line, used = [], "", first
    for word in re.split(r"(?<= )", paragraph):  # keep each space with the word before it
        while _columns(word) > width - used:
            if line:
                lines.append(line.rstrip())
                line, used = "", 0
                continue
            cut, columns = 0, 0  # the word alone is too wide: take as many characters as fit
            while cut < len(word) and columns + _columns(word[cut]) <= width - used:
                columns += _columns(word[cut])
                cut += 1
            lines.append(word[:cut])
            word, used = word[cut:], 0
        line += word
        used += _columns(word)
    return [*lines, line.rstrip()]


def classroom_only(settings: Any, why: str) -> bool:
    """True on the classroom model: in this process, or served under its own name `classroom` (a JupyterHub room's
    service, `python -m tinyagent classroom`). On a real model, say which check is skipped and why, and return False.

    Use it as `if classroom_only(settings, "a real model words its replies its own way"):`."""
    if settings.classroom:
        return True
    print(f"skipped on a real model: {why}")
    return False


# -- how every check reports ---------------------------------------------------------------------
def _not_attempted(exercise: str, hint: str) -> None:
    print(f"{exercise}: not attempted yet. {hint}")


def _passed(exercise: str, why: str) -> None:
    print(f"{exercise}: passed. {why}")


def _fail(exercise: str, what: str) -> None:
    raise ExerciseFailed(f"{exercise}: {what}")


# The lines of Python one call of the learner's code may run before it fails as a loop that does not end (a loop
# that appends fills the memory, and the kernel dies, long before anyone presses Interrupt): STEPS through `_run`;
# through `agree_on`, a number sized from the reference's lines on the same input, and never fewer than STEPS. Past
# its lines a call is stopped only once it has also run SECONDS: a right answer that waits for its threads in a busy
# loop (`while not all(f.done() for f in futures): pass`) runs lines as fast as the machine lets it, not as its
# work grows. A million lines take a fraction of a second, so a runaway is stopped in about SECONDS. The seconds are
# the processor's, spent by this process (time.process_time), not the wall clock's: on a hub's loaded machine a
# process gets a share of a core, and that busy-waiting answer took four times as long by the clock, and failed.
STEPS = 1_000_000
SECONDS = 2.0
_CLOCK_EVERY = 65_536  # lines run between two looks at the clock, once past the budget


class _Runaway(BaseException):
    """The answer ran past its budget of lines: a BaseException, so that its own `except Exception` does not
    swallow it and loop on."""


class _Lines:
    """`function`, run under a trace function (sys.settrace, and threading.settrace for the threads it starts) that
    counts the lines of Python it runs, its own and all it calls, in `ran`; past `budget` lines and SECONDS (if a
    budget is given) it is stopped with `_Runaway`, raised in the learner's own lines (never inside Python's or the
    package's, whose locks and pools must stay whole for the stop to come back through them). A tracer or profiler
    already set (a debugger, coverage, cProfile) is left alone: then nothing is counted (`ran` stays None) and there
    is no budget."""

    def __init__(self, function: Callable[..., Any], budget: int | None = None):
        self.function, self.budget, self.ran = function, budget, None

    def __call__(self, *args: Any) -> Any:
        if sys.gettrace() is not None or sys.getprofile() is not None:
            return self.function(*args)
        budget = self.budget if self.budget is not None else float("inf")
        ran, began, look_at, over, swallowed, done = 0, time.process_time(), budget, False, False, False
        caller = sys._getframe()
        at: dict[Any, int] = {}  # once over: the line each of the learner's frames was last seen at
        raised: dict[Any, int] = {}  # the line each of them was last stopped at

        def start(frame: Any, event: str, arg: Any) -> Any:
            return None if done else line

        def line(frame: Any, event: str, arg: Any) -> Any:
            nonlocal ran, look_at, over
            if done:  # a thread the call started, still running after it returned: no longer counted
                sys.settrace(None)
                return None
            if event == "line":
                ran += 1
                if ran > look_at:
                    look_at = ran + _CLOCK_EVERY
                    over = time.process_time() - began >= SECONDS
                    if over:
                        _remember_lines(frame, caller, at)
                if over and _learners(frame.f_code):
                    # Raised where the learner's code goes back to a loop's head (a line not after the last), or
                    # starts a function: outside any `try` inside the loop, whose `except:` would swallow it. In a
                    # frame whose `except:` swallowed it all the same (a `try` around the loop), at the first line
                    # before the one it was raised at: the `try` itself, or the head of a loop around it.
                    now, last, at[frame] = frame.f_lineno, at.get(frame), frame.f_lineno
                    if frame in raised:
                        stop = now < raised[frame]
                    else:
                        stop = now <= last if last is not None else not swallowed
                    if stop:
                        raised[frame] = now
                        if sys.getprofile() is not rearm:
                            sys.setprofile(rearm)
                        raise _Runaway
            return line

        def rearm(frame: Any, event: str, arg: Any) -> None:
            # The stop was swallowed after all (a `try` around the loop): CPython drops a trace function that
            # raises, and the loop would run on untraced for ever. A profile function is not dropped (it never
            # raises) and sees the calls the loop makes (len, append): it sets the tracer again, and the stop is
            # raised again at the head of a loop around that `try`.
            nonlocal swallowed
            if done:
                sys.setprofile(None)
            elif sys.gettrace() is None:
                swallowed = True
                sys.settrace(start)
                _remember_lines(frame, caller, at)
                while frame is not None and frame is not caller:  # the frames running now get no "call" event
                    frame.f_trace = line
                    frame = frame.f_back

        threads_tracer = threading.gettrace()
        sys.settrace(start)
        threading.settrace(start)  # a pool's threads count into the same budget; a stop there comes back as result()
        try:
            value = self.function(*args)
        except BaseException:
            if not over:
                raise
        finally:
            done = True
            sys.setprofile(None)
            sys.settrace(None)
            threading.settrace(threads_tracer)
            self.ran = ran
            at.clear()  # the frames of a runaway, and all they appended: a thread left running still holds `line`
            raised.clear()
        if over:  # it swallowed the stop, and returned or raised something else
            raise _Runaway
        return value


def _remember_lines(frame: Any, caller: Any, at: dict[Any, int]) -> None:
    """The line each frame from `frame` out to `caller` (or its thread's first) is at, into `at`."""
    while frame is not None and frame is not caller:
        at[frame] = frame.f_lineno
        frame = frame.f_back


def _learners(code: Any) -> bool:
    """Whether `code` is the learner's (neither this package's nor Python's own)."""
    return not code.co_filename.startswith(_NOT_THE_LEARNERS)


def _run(exercise: str, what: str, function: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call the learner's code; an exception in it becomes a failure that names the call, and so does a loop that
    does not end (past STEPS lines of Python and SECONDS)."""
    try:
        return _Lines(functools.partial(function, **kwargs), budget=STEPS)(*args)
    except ExerciseFailed:
        raise
    except KeyboardInterrupt:
        stopped_while(exercise, what)
        raise
    except _Runaway:
        _fail(exercise, f"{what} did not stop within {STEPS:,} steps: does its loop end?")
    except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
        _fail(exercise, f"{what} raised {type(exc).__name__}: {said(exc)}")


def stopped_while(exercise: str, what: str, given: str | None = None) -> None:
    """Kernel > Interrupt while the learner's code ran (`what`, on the input `given` when the check knows it): in
    a notebook, a failure that says where it was stopped, since code that never returns usually loops on one
    input. Elsewhere (pytest, a script) this returns and the caller re-raises: Ctrl-C must stop a test run, not
    fail one test."""
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        on, where = (f" on {given}", " on that input") if given is not None else ("", "")
        _fail(exercise, f"you stopped the check while {what} was running{on}. If it never returns, look for a "
                        f"loop that does not end{where}.")


# Where the package and Python's own modules live (and "<frozen importlib...>"): a frame anywhere else is the
# learner's code, a notebook cell's included.
_NOT_THE_LEARNERS = tuple({"<frozen", str(Path(__file__).resolve().parents[1]), *(
    str(Path(sysconfig.get_paths()[key]).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib"))})
_SIGNATURE = re.compile(r"^([\w.]+)\(\) (?:takes|missing|got an unexpected)")

Check = TypeVar("Check", bound=Callable[..., None])


def grades(exercise: str, spec: Any = None) -> Callable[[Check], Check]:
    """Mark a check as grading `exercise`: an exception that the learner's code raised, or a method their class
    lacks, becomes a failure that says so, never an exception from inside the check. Any other exception
    (the check's own bug) goes on as it is. `spec` (a `generated.Spec`): what the check tries, kept on the check
    as `check.spec` for the table of checks."""

    def decorate(check: Check) -> Check:
        @functools.wraps(check)
        def graded(*args: Any, **kwargs: Any) -> None:
            try:
                return check(*args, **kwargs)
            except ExerciseFailed:
                raise
            except SystemExit as exc:  # sys.exit() in the learner's code: not an Exception, so nothing below saw it
                if _learners_frame(exc.__traceback__) is None:
                    raise
                _fail(exercise, f"your code called sys.exit() (SystemExit: {said(exc)}): an answer returns its "
                                "result instead")
            except KeyboardInterrupt as exc:  # stopped in the learner's code, where no _run or agree_on saw it
                if (frame := _learners_frame(exc.__traceback__)) is not None:
                    stopped_while(exercise, f"your {frame.tb_frame.f_code.co_name} (line {frame.tb_lineno})")
                raise
            except Exception as exc:  # sorted below: the learner's mistake, or re-raised
                what = learners_mistake(exc)
                if what is None:
                    raise
                _fail(exercise, what)

        graded.spec = spec  # type: ignore[attr-defined]
        return graded  # type: ignore[return-value]

    return decorate


def learners_mistake(exc: BaseException) -> str | None:
    """What the learner's code did wrong to raise `exc`, in a sentence; None when the check itself failed."""
    frame = _learners_frame(exc.__traceback__)
    if frame is not None:
        where = f" (in {frame.tb_frame.f_code.co_name}, line {frame.tb_lineno})"
        return f"your code raised {type(exc).__name__}: {said(exc)}{where}"
    if isinstance(exc, AttributeError) and exc.obj is not None and not _ours(type(exc.obj)):
        owner = (exc.obj if isinstance(exc.obj, type) else type(exc.obj)).__name__
        return (f"your {owner} has no {exc.name!r}, which the exercise asks for: give {owner} a method or "
                f"attribute {exc.name}")
    if isinstance(exc, TypeError) and (match := _SIGNATURE.match(str(exc))):
        return f"{match.group(1)}() is called as the exercise says, and it does not take that: {exc}"
    return None


def _learners_frame(tb: TracebackType | None) -> TracebackType | None:
    """The innermost frame of `tb` that is the learner's code (neither this package nor Python's own)."""
    found = None
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_NOT_THE_LEARNERS):
            found = tb
        tb = tb.tb_next
    return found


def _ours(cls: type) -> bool:
    return all(klass.__module__.split(".")[0] in ("tinyagent", "builtins") for klass in cls.__mro__)


def _fresh_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock(COURSE_NOW))


def _instance(exercise: str, cls: Any, *args: Any, **kwargs: Any) -> Any:
    if not isinstance(cls, type):
        _fail(exercise, f"expected a class, got {type(cls).__name__}: write `class ...:` in the answer cell")
    return _run(exercise, f"{cls.__name__}({', '.join(map(repr, args))})", cls, *args, **kwargs)


def _json_or_none(text: Any) -> Any:
    """`text` read as JSON, or None when it is not JSON (for a hint that asks whether an answer wrote the same data
    as other text)."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None


def _json(exercise: str, text: Any, where: str) -> Any:
    if not isinstance(text, str):
        _fail(exercise, f"{where} returned {type(text).__name__}, not a string: a tool returns text")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python reads
        _fail(exercise, f"{where} returned text that is not JSON: {_brief(text[:120], 130)}")

