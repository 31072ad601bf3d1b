"""Lesson 15 (real tools): a safe arithmetic evaluator, and the workspace's path check."""

from __future__ import annotations

import ast
import gc
import math
import operator
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades, shown

# (expression, value): what a safe evaluator must compute (the first of the generated inputs).
SAFE_EVAL_VALUES = [
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("-(2 - 5)", 3), ("- -4", 4), ("7 / 2", 3.5), ("(1 + 2) ** 3", 27),
    ("2 ** -1", 0.5), ("2 ** 100", 2**100), ("2 ** -100", 2**-100), ("1999 * 0.85", 1699.15), ("10 - 2 - 3", 5),
]
# (expression, what it is): what a safe evaluator must refuse with ValueError, quickly, running nothing.
SAFE_EVAL_REFUSALS = [
    ("len('abc')", "a function call"),
    ("__import__('os').getcwd()", "a call reaching the operating system"),
    ("().__class__", "an attribute"),
    ("x + 1", "a name"),
    ("'ab' * 3", "text"),
    ("True + 1", "True (a bool is not a number here)"),
    ("[1, 2]", "a list"),
    ("1 if 2 else 3", "an if-expression"),
    ("3 > 2", "a comparison"),
    ("6 % 4", "the operator %, which is not in the list"),
    ("1 / 0", "a division by zero"),
    ("2 ** 101", "an exponent over 100"),
    ("10 ** 1000", "an exponent over 100 (a 1001-digit number)"),
    # The exponent as it is computed, not as it is written: a guard that reads only a literal lets
    # 10 ** (10 ** 99) through, and hangs. This one is small enough to come back if it gets through.
    ("2 ** (10 * 11)", "an exponent of 110 that is not written as one number"),
    ("2 ** -101", "an exponent of -101 (over 100 in size)"),
    ("7 // 2", "the operator //, which is not in the list"),
    ("2j", "a complex number (only int and float)"),
]

_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.Pow: operator.pow}


def _safe_eval(text: str) -> int | float:
    """15, exercise 1's answer (the solution's behaviour): a whitelist of nodes, both limits checked before the
    operation runs."""

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise ValueError("division by zero")
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError(f"the exponent {right} is over 100")
            if isinstance(node.op, ast.Pow) and left == 0 and right < 0:
                raise ValueError("division by zero (0 to a negative power)")
            return _ARITHMETIC[type(node.op)](left, right)
        raise ValueError(f"{type(node).__name__} is not allowed: only numbers and + - * / **")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {text}") from None
    return value(tree.body)


class ValueErrorWithoutMessage(Exception):
    """A ValueError with no message: the tool turns the message into the Observation, so it must say something."""


class PowerComputedFirst(Exception):
    """A refusal that came only after the power was worked out: on a bigger exponent it would not come at all."""


# The CPU time a refusal of a power may take. Refusing costs a parse and a walk of a short expression (well under a
# millisecond); working out the power of _powers_never_computed's int first costs about a second, and the calling
# thread's CPU time (not the clock's) does not grow on a busy machine. The garbage collector is off for the call: a
# collection of the whole process's objects (0.4 s in a test run holding many) is not the answer's work.
REFUSAL_SECONDS = 0.25


def _with_message(safe_eval: Callable[[str], Any]) -> Callable[[str], Any]:
    """`safe_eval`, with a refusal that says nothing, or a refusal of a power that came only after the power was
    computed (it took more than REFUSAL_SECONDS of CPU), turned into a failure of its own."""

    def run(text: str) -> Any:
        collecting = gc.isenabled()
        gc.disable()
        began = time.thread_time()
        try:
            return safe_eval(text)
        except ValueError as refusal:
            took = time.thread_time() - began
            if "**" in text and took > REFUSAL_SECONDS:
                raise PowerComputedFirst(f"{text} was worked out ({took:.1f} s of CPU) before it was refused: check "
                                         "the exponent first, and a bigger one would hang") from None
            if not str(refusal).strip():
                raise ValueErrorWithoutMessage("say what is refused: the tool turns the message into the "
                                               "Observation the model reads") from None
            raise
        finally:
            if collecting:
                gc.enable()

    return run


class _Compared:
    """A number as the check compares it: two ints exactly; where either is a float, both to 12 significant
    digits (so 1999 * 0.85 computed another way still agrees, and 2 ** 44.0 may come back as the int
    17592186044416). Shown as the number itself."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Compared):
            return NotImplemented
        mine, theirs = self.value, other.value
        if any(isinstance(number, float) for number in (mine, theirs)):
            return _to_12_digits(mine) == _to_12_digits(theirs)
        return bool(mine == theirs)

    def __repr__(self) -> str:
        return shown(self.value)


def _to_12_digits(value: Any) -> Any:
    """`value` as a float to 12 significant digits; an int too big for a float (or anything not a number) as
    it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    try:
        return float(f"{float(value):.12g}")
    except OverflowError:
        return value


def _a_number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"it returned {_brief(value, 40)}: return the number, an int or a float"
    return None


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
def _number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.55:
        return str(rng.choice((rng.randint(1, 9), rng.randint(10, 99), rng.randint(100, 99999))))
    if kind < 0.85:
        return f"{rng.randint(0, 999)}.{rng.randint(1, 99)}"
    return str(rng.randint(10**12, 10**15))


def _expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return _number(rng)
    form = rng.random()
    if form < 0.15:
        return f"-{_expression(rng, depth - 1)}" if rng.random() < 0.5 else f"-({_expression(rng, depth - 1)})"
    if form < 0.25:
        return f"({_expression(rng, depth - 1)})"
    if form < 0.35:  # a small power: base and exponent kept small so the value stays short
        return f"{rng.randint(2, 12)} ** {rng.choice(('', '-'))}{rng.randint(0, 9)}"
    op = rng.choice(("+", "-", "*", "/"))
    left, right = _expression(rng, depth - 1), _expression(rng, depth - 1)
    return f"{left} {op} {right}" if rng.random() < 0.6 else f"({left}) {op} ({right})"


def _computable(rng: random.Random) -> Iterator[tuple]:
    for text, _ in SAFE_EVAL_VALUES:
        yield (text,)
    made = 0
    while made < 24:
        text = _expression(rng, rng.randint(1, 3))
        try:
            _safe_eval(text)
        except (ValueError, ArithmeticError):
            continue  # a zero under a division: the other rules try those
        made += 1
        yield (text,)
    for base, exponent in ((2, 100), (2, -100), (-3, 100), (1.5, 100), (7, 99)):  # 100 is not over 100
        yield (f"({base}) ** {exponent}",)
    yield (f"{rng.randint(2, 9)} ** (50 + 50)",)
    yield (f"{rng.randint(2, 9)} ** {rng.randint(1, 60)}.0",)
    for text in ("1e3 + 1", "1_000 * 2", ".5 - 2.", "2.5E-3 * 4"):  # int and float constants as Python writes them
        yield (text,)
    # long, with many operations, deeply bracketed: the spec sets no limit on any of them
    for text in ("1999 * 0.85 + 299 * 0.9 + 59 * 2 - 100 + (88 + 12) * 3 - 15 / 3",
                 "1 - (2 - (3 - (4 - (5 - (6 - (7 - (8 - (9 - 10))))))))",
                 " + ".join(f"{n} * 1.5" for n in range(1, 16)), "-(-(-(-(-(-(-(-(-(-(-(-(7))))))))))))"):
        yield (text,)
    # longer still: a cap on the text's length (200, 500 characters) or the brackets' depth is not the spec's
    yield (" + ".join(f"{n} * 1.5" for n in range(1, 81)),)
    yield ("(" * 40 + "1 + 2" + ") * 2" * 40,)


def _names_calls_attributes(rng: random.Random) -> Iterator[tuple]:
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    for text in ("len('abc')", "__import__('os').getcwd()", "().__class__", "x + 1", f"abs(-{a})", f"({a}).real",
                 f"price * {a}", f"价格 * {b}", f"max({a}, {b})", f"{a} + y", "pi", f"int('{a}')",
                 f"(lambda: {a})()"):
        yield (text,)


def _other_constants(rng: random.Random) -> Iterator[tuple]:
    a = rng.randint(2, 99)
    for text in ("'ab' * 3", f"'{a}'", f"True + {a}", "False", f"{a}j", f"{a} + 2j", "None", f"b'{a}'",
                 f"'订单' * {a}"):
        yield (text,)


def _other_operators(rng: random.Random) -> Iterator[tuple]:
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    for text in (f"{a} % {b}", f"{a} // {b}", f"{a} > {b}", f"{a} == {b}", f"{a} & {b}", f"{a} << {b}",
                 f"~{a}", f"not {a}", f"{a} and {b}", f"[{a}, {b}]", f"{a}, {b}", f"{a} if {b} else 0",
                 f"({a} + {b}) % 7", f"-({a} // {b})", f"{{{a}: {b}}}", f"{a} @ {b}"):
        yield (text,)


def _not_one_expression(rng: random.Random) -> Iterator[tuple]:
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    for text in ("", "   ", f"{a} +", f"({a} + {b}", f"{a} {b}", f"{a}; {b}", f"{a} + {b}; __import__('os')",
                 f"x = {a}", f"{a} +* {b}", "计算 1 + 1"):
        yield (text,)


def _divisions_by_zero(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        a, b = rng.randint(1, 99999), rng.randint(1, 999)
        yield (f"{a} / 0",)
        yield (rng.choice((f"{a} / ({b} - {b})", f"({a} + 1) / ({b} * 0)", f"{a} / 0.0", f"{a} / -0",
                           f"{a} / (0.5 - 0.5)", f"-{a} / ({b} - {b}) * 2")),)
    yield ("0 / 0",)
    for text in ("0 ** -1", "0.0 ** -2", "(5 - 5) ** -3"):  # 0 to a negative power is 1 / 0 ** n
        yield (text,)


def _big_powers(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        yield (f"{rng.randint(2, 99)} ** {rng.randint(101, 999)}",)
        yield (f"{rng.randint(2, 9)} ** -{rng.randint(101, 999)}",)
    yield ("10 ** 1000",)
    for _ in range(2):  # the exponent is computed, not written as one number (10 ** (10 ** 99) would hang)
        x = rng.randint(11, 20)
        yield (f"2 ** ({x} * {rng.randint(11, 15)})",)
    yield ("2 ** 2 ** 7",)
    yield (f"{rng.randint(2, 9)} ** 100.5",)
    yield (f"2 ** -(50 + {rng.randint(51, 99)})",)
    for text in ("1.5 ** 1000", "0.5 ** 200", "1 ** 1000", "(-1) ** 101", "0 ** 1000", "1.0 ** -101"):
        yield (text,)  # the exponent alone decides: a float base, or 0, 1 and -1, are refused too


def _big_bases(rng: random.Random) -> Iterator[tuple]:
    """Powers whose exponent is 100 or less in size: computed, however big the base or the result."""
    for text in ("12 ** 99", "99999 ** 30", "(-123456789) ** 50", "1000000000000 ** 100", "12.5 ** 100",
                 "99 ** -100"):
        yield (text,)


def _powers_never_computed(rng: random.Random) -> Iterator[tuple]:
    """Powers over the limit whose value does not fit a float: computed first (then refused), they raise
    OverflowError; refused before they are computed, ValueError. And an int power, which never overflows but
    costs about a second of CPU to work out (a result of 11 million bits): refused after that, it took too long."""
    for text in ("10.0 ** 400", "2.5 ** 1000", "(-10.0) ** 401", "1e10 ** 101", "2 ** 1024.5"):
        yield (text,)
    base = rng.choice((3, 5, 7, 11, 13))  # odd: a power of 2 (or one with many factors 2) is worked out faster
    yield (f"{base} ** {round(11_000_000 / math.log2(base), -3):.0f}",)


def _zero_bases(rng: random.Random) -> Iterator[tuple]:
    for text in ("0 ** 0", "0.0 ** 0", "(5 - 5) ** 0", "0 ** 0.5", "0 ** 1", "-0 ** 2"):
        yield (text,)


def _unary_plus(rng: random.Random) -> Iterator[tuple]:
    for text in ("+3", "+(2 - 5)", "-+3", "2 * +3", "+2 ** 2", "+-1.5"):
        yield (text,)


SAFE_EVAL_RULES = (
    Rule("numbers (int and float), + - * / and ** (an exponent of 100 or less in size: 2 ** 100 and 2 ** -100 "
         "too), unary minus and brackets are computed, at any length", _computable),
    Rule("a name, a call or an attribute is refused with a ValueError that has a message, never run",
         _names_calls_attributes),
    Rule("a constant that is not an int or a float (text, True, a complex number) is refused", _other_constants),
    Rule("any other operator or expression (% //, a comparison, a list) is refused",
         _other_operators),
    Rule("a division by zero is refused with ValueError, however the zero is written", _divisions_by_zero),
    Rule("a power whose exponent is over 100 in size is refused, however the exponent is written, whatever the "
         "base", _big_powers),
    Rule("text that is not one expression (empty, cut short, two statements) is refused with ValueError too",
         _not_one_expression),
    Rule("only the exponent's size is limited: a big base, or a big result, is computed when the exponent is "
         "100 or less", _big_bases),
    Rule("0 to a power of 0 or more is computed (0 ** 0 is 1)", _zero_bases),
    Rule("unary plus is computed as unary minus is (+3 is 3)", _unary_plus),
    Rule("a power whose exponent is over 100 is refused, not computed: the exponent is checked before the power is "
         "worked out (10.0 ** 400 is a ValueError, never an OverflowError; a huge int power is refused at once)",
         _powers_never_computed),
)


@grades("Exercise 1", spec=Spec(SAFE_EVAL_RULES))
def check_safe_eval(safe_eval: Callable[[str], float] | None) -> None:
    """15, exercise 1: an arithmetic evaluator that walks the ast with a whitelist, never `eval`."""
    exercise = "Exercise 1"
    if safe_eval is None:
        return _not_attempted(exercise, "Write def safe_eval(text) in the cell above.")
    if not callable(safe_eval):
        _fail(exercise, f"safe_eval should be a function, got {type(safe_eval).__name__}")
    tried = agree_on(exercise, "check_safe_eval", SAFE_EVAL_RULES, _with_message(safe_eval), _safe_eval,
                     shape=_a_number, read=_Compared, call="safe_eval(text)")
    return _passed(exercise, f"{tried} generated expressions: numbers, brackets and + - * / ** computed; names, "
                             "calls, attributes, text, other operators, huge powers and division by zero refused "
                             "with ValueError.")


def _workspace_traps(root: Any) -> tuple[Any, list[tuple[str, bool, str]]]:
    """A workspace with traps around it, and (path, inside?, what it is) for each case (the package's readFile
    is held to these in the tests; the check's generated workspaces hold the same traps and more)."""
    root = Path(root)
    workspace, outside, evil = root / "workspace", root / "outside", root / "workspace-evil"
    for folder in (workspace / "notes", outside, evil):
        folder.mkdir(parents=True)
    (workspace / "notes" / "todo.txt").write_text("mine")
    (outside / "secret.txt").write_text("not yours")
    (evil / "x.txt").write_text("not yours either")
    (workspace / "shared").symlink_to(outside, target_is_directory=True)
    (workspace / "secret-link.txt").symlink_to(outside / "secret.txt")
    (workspace / "alias").symlink_to(workspace / "notes", target_is_directory=True)
    (workspace / "dangling.txt").symlink_to(outside / "not-there-yet.txt")
    cases = [
        ("notes/todo.txt", True, "a file inside"),
        ("notes/new.txt", True, "a new file inside (it does not exist yet)"),
        ("./notes//todo.txt", True, "a file inside, written with ./ and //"),
        ("notes", True, "a folder inside"),
        ("../outside/secret.txt", False, "a path that goes up with .."),
        ("notes/../../outside/secret.txt", False, "a path that goes up with .. in the middle"),
        ("../workspace-evil/x.txt", False, "a folder outside whose name starts with the workspace's name"),
        ("/etc/passwd", False, "an absolute path"),
        (str(outside / "secret.txt"), False, "an absolute path to a file outside"),
        ("shared/secret.txt", False, "a path through a link to a folder outside"),
        ("secret-link.txt", False, "a link to a file outside"),
        ("dangling.txt", False, "a link to a file outside that does not exist yet"),
        ("notes/../notes/todo.txt", False, "a path with .. in it, even one that comes back inside"),
        ("alias/todo.txt", False, "a path through a link, even one that points inside"),
        ("~/notes/todo.txt", False, "a path that starts with ~ (the home folder)"),
        ("\\notes\\todo.txt", False, "a path that starts with \\ (absolute on Windows)"),
        ("C:notes/todo.txt", False, "a path with a drive letter (it holds a ':')"),
        ("notes\\todo.txt", False, "a path that holds a \\ (folders are separated with /)"),
    ]
    return workspace, cases


def _inside_workspace(workspace: Any, path: str) -> bool:
    """15, exercise 2's answer (the solution's behaviour): the text rules first, then every step on the disk. A \\
    anywhere is refused, as the package's `check_relative_path` refuses it (on Windows it separates folders, so
    `notes\\..\\..\\secret.txt` would go up)."""
    if not path or path.startswith(("/", "~")) or "\\" in path or ":" in path:
        return False
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        return False
    current = Path(workspace)
    for part in parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


# A workspace as data, so that generated inputs stay plain: (kind, path, link target) entries under a root
# that holds `workspace/`, `outside/` and a look-alike `workspace-evil/`. A link's target is a path under the
# root ("outside/secret.txt", "workspace/notes"); {root} in a path to judge stands for the root's real path.
# An entry ("place", name) puts the workspace in a folder of that name: two layouts with the same place are one
# workspace changed between two calls, rebuilt where it stands (same path) when the other layout is asked about.
Layout = tuple[tuple[str, ...], ...]


def _build(root: Path, layout: Layout) -> Path:
    for folder in ("workspace", "outside", "workspace-evil"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "outside" / "secret.txt").write_text("not yours")
    (root / "workspace-evil" / "x.txt").write_text("not yours either")
    for kind, place, *target in layout:
        where = root / "workspace" / place
        where.parent.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            where.mkdir(exist_ok=True)
        elif kind == "file":
            where.write_text("mine", encoding="utf-8")
        elif kind == "link":  # to a folder or a file, there or not
            aim = root / target[0]
            where.symlink_to(aim, target_is_directory=aim.is_dir())
    return root / "workspace"


def _listing(root: Path) -> list[tuple[str, str]]:
    """What the root holds, links not followed: (path, what it is) for every entry."""
    found = []
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            entry = Path(folder, name)
            kind = f"link to {os.readlink(entry)}" if entry.is_symlink() else "folder" if entry.is_dir() else \
                f"file of {entry.stat().st_size}"
            found.append((str(entry.relative_to(root)), kind))
    return sorted(found)


@dataclass(frozen=True)
class _Changed:
    """The answer changed the workspace it was asked about: what is there now that was not, or is gone."""

    made: tuple[str, ...]
    gone: tuple[str, ...]


class _Workspaces:
    """The workspaces of the layouts asked about, each built once in `scratch` (and again after an answer
    changed it). A change shows in the modification times of the folders, which are cheap to read."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.built: dict[Layout, tuple[Path, list[tuple[str, str]], list[int]]] = {}

    def root(self, layout: Layout) -> Path:
        if layout not in self.built:
            place = next((entry[1] for entry in layout if entry[0] == "place"), None)
            if place is None:
                root = self.scratch / f"root{len(os.listdir(self.scratch))}"
            else:  # the same workspace as it is now: what stood there before is taken down first
                root = self.scratch / f"place-{place}"
                self.built = {other: built for other, built in self.built.items() if built[0] != root}
                shutil.rmtree(root, ignore_errors=True)
            _build(root, layout)
            self.built[layout] = (root, _listing(root), self._times(root))
        return self.built[layout][0]

    def change(self, layout: Layout) -> _Changed | None:
        root, before, times = self.built[layout]
        if self._times(root) == times:
            return None
        del self.built[layout]
        after = _listing(root)
        return _Changed(tuple(sorted(path for path, _ in set(after) - set(before))),
                        tuple(sorted(path for path, _ in set(before) - set(after))))

    @staticmethod
    def _times(root: Path) -> list[int]:
        return [os.stat(folder).st_mtime_ns for folder, _, _ in os.walk(root)]


def _judged(answer: Callable[[Any, str], Any], workspaces: _Workspaces, *, watch: bool = True
            ) -> Callable[[Layout, str], Any]:
    """`answer(workspace, path)` on the workspace `layout` describes; when `watch`, a workspace the answer
    changed is the outcome (no rule asks for a change)."""

    def run(layout: Layout, path: str) -> Any:
        root = workspaces.root(layout)
        got = answer(root / "workspace", path.replace("{root}", str(root)))
        return (workspaces.change(layout) if watch else None) or got

    return run


def _true_or_false(value: Any) -> str | None:
    if isinstance(value, _Changed):
        what = f"made {value.made[0]}" if value.made else f"removed {value.gone[0]}" if value.gone else \
            "wrote in a folder, then took it away"
        return f"it changed the workspace ({what[:60]}): only look, the spec asks for a True or False"
    if not isinstance(value, bool):
        return f"it returned {_brief(value, 40)}: return True or False"
    return None


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
_NAMES = ("notes", "笔记", "docs", "报告 2026", "data", "草稿", "v1.2", "a..b", "..hidden", "~draft", "orders",
          "订单", "my files", "x")


def _name(rng: random.Random, ending: str = "") -> str:
    return f"{rng.choice(_NAMES)}{rng.randint(1, 99) if rng.random() < 0.3 else ''}{ending}"


def _from_top(path: str) -> str:
    """`path` without a leading /; a name may start with ~ inside, but a path may not (~ is the home folder)."""
    path = path.lstrip("/")
    return f"_{path}" if path.startswith("~") else path


def _layout(rng: random.Random, links: bool = True) -> tuple[Layout, list[str], list[str]]:
    """A random workspace: a few folders and files, and (when `links`) links of every kind at random places.
    Returns the layout, the paths of its plain entries, and the paths of its links."""
    entries: list[tuple[str, ...]] = []
    plain: list[str] = []
    folders = [""]
    for _ in range(rng.randint(2, 4)):
        folder = _from_top(f"{rng.choice(folders)}/{_name(rng)}")
        if folder in plain:
            continue
        entries.append(("dir", folder))
        plain.append(folder)
        folders.append(folder)
        file = f"{folder}/{_name(rng, rng.choice(('.txt', '.md', '.json')))}"
        if file not in plain:
            entries.append(("file", file))
            plain.append(file)
    linked: list[str] = []
    if links:
        for target in rng.sample(("outside", "outside/secret.txt", "outside/not-there-yet.txt", "workspace",
                                  f"workspace/{plain[0]}", "workspace-evil"), rng.randint(2, 4)):
            place = f"{rng.choice(folders)}/link-{_name(rng)}".lstrip("/")
            if place not in linked and place not in plain:
                entries.append(("link", place, target))
                linked.append(place)
    return tuple(entries), plain, linked


def _inside_paths(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        layout, plain, _ = _layout(rng)
        for _ in range(2):
            there = rng.choice(plain)
            new = _from_top(f"{rng.choice(plain[:1] + [''])}/{_name(rng, '.txt')}")  # not made yet
            deeper = f"{there}/{_name(rng)}/{_name(rng, '.md')}"
            written = rng.choice((f"./{there}", there.replace("/", "//"), f"{there}/", f"./{there}/"))
            for path in (there, new, deeper, written):
                yield (layout, path)


def _absolute_paths(rng: random.Random) -> Iterator[tuple]:
    layout, plain, _ = _layout(rng, links=False)
    for there in rng.sample(plain, 2):
        for path in (f"/{there}", f"{{root}}/workspace/{there}", f"~/{there}", "~", f"\\{there}",
                     f"C:{there}", f"{there}:backup", "/etc/passwd", "{root}/outside/secret.txt"):
            yield (layout, path)
    for path in ("~root/.ssh/id_rsa", "~alice", "~draft/notes.txt"):  # ~name is that user's home folder
        yield (layout, path)


def _dotted_paths(rng: random.Random) -> Iterator[tuple]:
    layout, plain, _ = _layout(rng, links=False)
    for _ in range(3):
        there, up = rng.choice(plain), rng.choice(plain)
        back = "/".join([*up.split("/"), *[".."] * up.count("/"), "..", *there.split("/")])  # comes back inside
        for path in ("../outside/secret.txt", "../workspace-evil/x.txt", f"{up}/../../outside/secret.txt", back,
                     f"./../{there}", f"{there}/..", ".."):
            yield (layout, path)
    for path in ("a..b.txt", f"{plain[0]}/v1..2/x.txt", "..hidden/x.md", "...txt"):  # dots in a name: no '..' part
        yield (layout, path)


def _linked_paths(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):
        layout, _, linked = _layout(rng)
        for link in linked:
            yield (layout, rng.choice((link, f"{link}/{_name(rng, '.txt')}", f"./{link}")))
        first = linked[0]
        yield (layout, f"{first}2/{_name(rng, '.txt')}")  # a name that only starts like a link's is no link
    # through a link to a folder, to a file that is there (the path exists), or two steps past it: a step before
    # the path's end, or before its folder, is a link
    layout = (("dir", "notes"), ("file", "notes/todo.txt"), ("link", "shared", "outside"),
              ("link", "notes/共享", "outside"), ("link", "alias", "workspace/notes"))
    for path in ("shared/secret.txt", "notes/共享/secret.txt", "./alias/todo.txt", "shared/草稿/new.txt"):
        yield (layout, path)


def _empty_and_dot(rng: random.Random) -> Iterator[tuple]:
    """The empty path names nothing; `.` (or `./`) names the workspace itself, which is inside."""
    layout, _, _ = _layout(rng, links=False)
    for path in ("", ".", "./"):
        yield (layout, path)

def _changed_paths(rng: random.Random) -> Iterator[tuple]:
    """One workspace asked about twice, a folder on the path made a link in between (and, in another, a link
    made a folder): the answer is the disk's at each call, never one kept from before."""
    for n, link_first in enumerate((False, True, False)):
        layout, plain, _ = _layout(rng, links=False)
        folder = plain[0]
        path = rng.choice((f"{folder}/{_name(rng, '.txt')}", folder))
        as_link = tuple(("link", folder, rng.choice(("outside", "outside/secret.txt", "workspace-evil")))
                        if entry == ("dir", folder) else entry
                        for entry in layout if not entry[1].startswith(f"{folder}/"))
        before, after = (as_link, layout) if link_first else (layout, as_link)
        yield ((("place", f"changed{n}"), *before), path)
        yield ((("place", f"changed{n}"), *after), path)


def _backslashed_paths(rng: random.Random) -> Iterator[tuple]:
    """A \\ inside a path, not at its start: refused as the package's tools refuse it. Fixed inputs (no draw from
    `rng`), a workspace where each path would otherwise be fine."""
    layout = (("dir", "notes"), ("file", "notes/todo.txt"), ("dir", "笔记"))
    for path in ("notes\\todo.txt", "notes\\new.txt", "笔记\\草稿.md", "notes/a\\b.txt", "notes\\",
                 "notes\\..\\..\\outside\\secret.txt", "..\\outside\\secret.txt"):
        yield (layout, path)


def _why_changed(args: tuple, expected: Any, got: Any) -> str | None:
    """What the changed entry (the first after the place) was when the same workspace was asked about before."""
    if got == expected or not isinstance(got, bool):
        return None
    kind, folder, *_ = args[0][1]
    was, now = ("a link", "a folder") if kind == "dir" else ("a folder", "a link")
    return f"— {shown(folder)} was {was} when this workspace was asked about before, and is {now} now: look at " \
           "the disk at each call."


def _why(args: tuple, expected: Any, got: Any) -> str | None:
    """Why the path is refused or allowed, by the rule that settles it."""
    if got == expected or not isinstance(got, bool):
        return None
    layout, path = args
    if not path:
        return "— an empty path names nothing: False."
    if path.strip("/") == ".":
        return "— '.' is the workspace itself, which is inside: True."
    if expected:
        return "— nothing in it is absolute, '..' or a link: allow it (it need not exist yet)."
    if path.startswith(("/", "{root}")):
        return "— it starts with /."
    for mark, what in (("~", "the home folder"), ("\\", "absolute on Windows")):
        if path.startswith(mark):
            return f"— it starts with {mark} ({what})."
    if ":" in path:
        return "— it holds a ':' (a drive letter, C:)."
    if "\\" in path:
        return "— it holds a \\: folders are separated with /, and a \\ anywhere is refused."
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        return "— '..' is a part of it: refused, wherever it would lead."
    links = {place for kind, place, *_ in layout if kind == "link"}
    on_the_way = next(("/".join(parts[:n]) for n in range(1, len(parts) + 1) if "/".join(parts[:n]) in links), "")
    return f"— {shown(on_the_way)} on the way is a symbolic link." if on_the_way else None


def _show_judged(args: tuple) -> str:
    layout, path = args
    parts = [part for part in path.split("/") if part not in ("", ".")]
    on_the_way = [f"{place} -> {target[0]}" for kind, place, *target in layout
                  if kind == "link" and place.split("/") == parts[: place.count("/") + 1]]
    return f"{shown(path)}" + (f" (the link {_brief(on_the_way[0], 60)})" if on_the_way else "")


WORKSPACE_RULES = (
    Rule("a path inside the workspace is allowed, to something that exists or not yet (./ and // are fine)",
         _inside_paths, _why),
    Rule("no absolute path: one that starts with /, ~ or \\, or holds a :", _absolute_paths, _why),
    Rule("no .. part at all, even one that would come back inside (dots within a name are no .. part)",
         _dotted_paths, _why),
    Rule("no symbolic link on the way, file or folder, wherever it points", _linked_paths, _why),
    Rule("an empty path names nothing (False); `.` names the workspace itself (True)", _empty_and_dot, _why),
    Rule("each call looks at the disk as it is then (a folder may have become a link since an earlier call, or a "
         "link a folder)", _changed_paths, _why_changed),
    Rule("no \\ anywhere in it (folders are separated with /): notes\\todo.txt is refused", _backslashed_paths, _why),
)


@grades("Exercise 2", spec=Spec(WORKSPACE_RULES))
def check_inside_workspace(inside_workspace: Callable[[Any, str], bool] | None) -> None:
    """15, exercise 2: the sandbox's path check, on generated workspaces with traps (links, .., a look-alike)."""
    exercise = "Exercise 2"
    if inside_workspace is None:
        return _not_attempted(exercise, "Write def inside_workspace(workspace, path) in the cell above.")
    if not callable(inside_workspace):
        _fail(exercise, f"inside_workspace should be a function, got {type(inside_workspace).__name__}")
    with tempfile.TemporaryDirectory() as scratch:
        workspaces = _Workspaces(Path(scratch))
        tried = agree_on(exercise, "check_inside_workspace", WORKSPACE_RULES, _judged(inside_workspace, workspaces),
                         _judged(_inside_workspace, workspaces, watch=False), shape=_true_or_false,
                         call="inside_workspace(workspace, path)", show=_show_judged)
    return _passed(exercise, f"{tried} paths in generated workspaces judged like the package's file tools: no '..', "
                             "no absolute path, no link on the way, wherever it points.")
