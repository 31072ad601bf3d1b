"""How many small mistakes each exercise check catches: mutation testing of the worked solutions.

    .venv/bin/python benchmarks/check_mutants.py [NN ...] [--show]

For each solutions notebook (all, or the lessons named by number), runs its code cells in a Python process of its own
(an IPython shell, offline, in a throwaway folder), then for every check cell that is given a function or a class, or a
value written out (a grammar, a list of predictions, a dict of lessons), makes mutants of that definition and of the
notebook's own helpers it uses (functions, classes, and constants: strings, regular expressions, tuples of words): one
small edit each, of the kinds a learner makes (`<` for `<=`, `and` for `or`, a number one off, `strip()` left out or
made `lstrip()`, `find` for `rfind`, a key without its colon, a regex without its anchor or lookaround, a word dropped
from a tuple, a branch left out, `break` made `pass`). Each mutant is given to the check in place of the original.
Prints, for each check, how many mutants it was given and how many it failed ("killed"); `--show` prints each mutant it
passed.

A mutant the check passes is one of two things: a mistake the check misses (it behaves differently on an input
the exercise's prose covers: a gap to close in the check), or a mutant that behaves as the original does on every
such input (`lstrip()` for `strip()` before `startswith`, say). Telling them apart is a person's work:
docs/benchmarks.md ("Exercise checks against mutants") lists what the survivors were and what was done.
A mutant that loops is stopped after 30 s and counts as killed (the check never passes it).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import difflib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tinyagent.command_options import OneLineParser

SOLUTIONS = Path(__file__).resolve().parent.parent / "notebooks" / "solutions"
MUTANT_SECONDS = 30

SWAPPED_COMPARISONS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                       ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
DROPPED_METHODS = {"strip", "lstrip", "rstrip", "lower", "upper", "casefold"}  # x.strip() -> x
SWAPPED_METHODS = {"strip": ("lstrip", "rstrip"), "lstrip": ("strip",), "rstrip": ("strip",), "find": ("rfind",),
                   "rfind": ("find",), "index": ("rindex",), "partition": ("rpartition",),
                   "rpartition": ("partition",), "startswith": ("endswith",), "endswith": ("startswith",),
                   "search": ("match",), "match": ("search", "fullmatch"), "fullmatch": ("match",)}
SWAPPED_BUILTINS = {"any": "all", "all": "any", "max": "min", "min": "max"}
# Pieces of a regular expression (or any string) a learner leaves out or writes another way.
STRING_EDITS = (("^", ""), ("$", ""), ("(?<!\\d)", ""), ("(?!\\d)", ""), ("\\s*", "\\s?"), ("\\s*", ""),
                ("+", "*"), ("[.)]", "[.]"), ("\\b", ""), ("{5}", "{5,}"), ("(?i)", ""))


def edits(node: ast.AST) -> list[tuple]:
    """The one-edit mutations of this node alone (not of its children)."""
    if isinstance(node, ast.Compare):
        return [("comparison", i, SWAPPED_COMPARISONS[type(op)]) for i, op in enumerate(node.ops)
                if type(op) in SWAPPED_COMPARISONS]
    if isinstance(node, ast.BoolOp):
        return [("and/or",)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [("not dropped",)]
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return [("constant", not node.value)]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [("constant", node.value + 1), ("constant", node.value - 1)]
    if isinstance(node, ast.Constant) and type(node.value) is str and 0 < len(node.value) < 200:
        return [("constant", text) for text in sorted(string_variants(node.value))]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and 1 < len(node.elts) <= 12 and all(
            isinstance(element, ast.Constant) for element in node.elts):
        return [("element dropped", i) for i in range(len(node.elts))]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        dropped = [("call dropped",)] if node.func.attr in DROPPED_METHODS and not node.args else []
        return dropped + [("method", name) for name in SWAPPED_METHODS.get(node.func.attr, ())]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SWAPPED_BUILTINS:
        return [("builtin", SWAPPED_BUILTINS[node.func.id])]
    if isinstance(node, (ast.Break, ast.Continue)):
        return [("made pass",)]
    if isinstance(node, ast.If):
        return [("branch dropped",)] + ([("else dropped",)] if node.orelse else [])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return [("+/-",)]
    return []


def string_variants(text: str) -> set[str]:
    found = {text[:-1]} if text.endswith(":") else set()  # a key without its colon
    found |= {text.lower(), text.rstrip()}
    found |= {text.replace(old, new, 1) for old, new in STRING_EDITS if old in text}
    return found - {text}


def sites(tree: ast.AST) -> list[tuple[ast.AST, tuple]]:
    """Every (node, edit) of a tree, in a fixed order (a walk of the tree)."""
    return [(node, edit) for node in ast.walk(tree) for edit in edits(node)]


def mutant(tree: ast.AST, k: int) -> ast.AST:
    """A copy of `tree` with its k-th edit made."""
    tree = copy.deepcopy(tree)
    node, edit = sites(tree)[k]
    kind, *how = edit
    if kind == "comparison":
        node.ops[how[0]] = how[1]()
    elif kind == "and/or":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "constant":
        node.value = how[0]
    elif kind == "element dropped":
        del node.elts[how[0]]
    elif kind == "method":
        node.func.attr = how[0]
    elif kind == "builtin":
        node.func.id = how[0]
    elif kind == "branch dropped":
        node.test = ast.Constant(False)
    elif kind == "else dropped":
        node.orelse = []
    elif kind == "+/-":
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    else:  # the edits that put another node in this one's place
        new = {"not dropped": lambda: node.operand, "call dropped": lambda: node.func.value,
               "made pass": ast.Pass}[kind]()
        tree = _replaced(tree, node, new)
    return ast.fix_missing_locations(tree)


def _replaced(tree: ast.AST, old: ast.AST, new: ast.AST) -> ast.AST:
    class Replace(ast.NodeTransformer):
        def generic_visit(self, node):
            return new if node is old else super().generic_visit(node)

    return Replace().visit(tree)


def _constant_like(value: ast.AST) -> bool:
    """A helper constant worth mutating: a string, a tuple of words, a compiled regular expression."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return all(isinstance(element, ast.Constant) for element in value.elts)
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "compile"
            and bool(value.args) and isinstance(value.args[0], ast.Constant))


def _literal(value: ast.AST) -> bool:
    """A value written out whole (a string, a number, a dict or list of them): an answer a check may be given."""
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class MutantTimeout(BaseException):  # not an Exception: the check must not catch it as the learner's error
    pass


def _alarm(signum, frame):
    raise MutantTimeout()


def mutate_notebook(path: Path, show: bool) -> list[tuple[str, str, int, int]]:
    """Run the notebook's cells, then every mutant of every checked definition; (check, definition, mutants,
    survivors) for each."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    calls = []
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for source in cells:
            shell.run_cell(source)
            calls += re.findall(r"^(check_\w+)\((.*)\)\s*$", source, re.MULTILINE)
    definitions: dict[str, ast.stmt] = {}
    literals: dict[str, ast.Assign] = {}  # answers that are a value written out (a grammar, a dict of lessons)
    for source in cells:
        for node in ast.parse(shell.transform_cell(source)).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                definitions[node.name] = node
                literals.pop(node.name, None)  # the last definition of a name is the one the check is given
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if isinstance(definitions.get(name), (ast.FunctionDef, ast.ClassDef)):
                    del definitions[name]
                if _constant_like(node.value):
                    definitions[name] = node
                if _literal(node.value):
                    literals[name] = node
    signal.signal(signal.SIGALRM, _alarm)
    results = []
    for check, arguments in calls:
        # a check given a function or a class, or a value written out: its mutants are the answer's own edits
        answers = [name for name in re.findall(r"\w+", arguments)
                   if isinstance(definitions.get(name), (ast.FunctionDef, ast.ClassDef)) or name in literals]
        answered = {name: literals.get(name, definitions.get(name)) for name in answers}
        helpers = sorted({node.id for answer in answers for node in ast.walk(answered[answer])
                          if isinstance(node, ast.Name) and node.id in definitions} - set(answers))
        for name in answers + helpers:
            original = answered.get(name) or definitions[name]
            survivors = count = 0
            edits_made = [edit for _, edit in sites(original)]
            for k, edit in enumerate(edits_made):
                changed = mutant(original, k)
                # the answers are defined again beside a changed helper, so that they use it
                module = ast.Module(body=[changed, *(answered[a] for a in answers if a != name)], type_ignores=[])
                namespace = dict(shell.user_ns)
                try:
                    exec(compile(module, f"<mutant {k} of {name}>", "exec"), namespace)  # noqa: S102 - the point
                except Exception:  # noqa: BLE001, S112 - a mutant that cannot even be defined is no answer
                    continue
                count += 1
                if _passes(f"{check}({arguments})", namespace):
                    survivors += 1
                    if show:
                        print(f"  {check}: mutant {k} of {name} ({edit[0]}) passed:")
                        before, after = ast.unparse(original).splitlines(), ast.unparse(changed).splitlines()
                        for line in difflib.unified_diff(before, after, lineterm="", n=0):
                            if line[:1] in "+-" and line[:3] not in ("+++", "---"):
                                print(f"      {line[:150]}")
            results.append((check, name, count, survivors))
            print(f"{path.stem} {check} {name}: {count} mutants, {count - survivors} killed", flush=True)
    return results


def _passes(call: str, namespace: dict) -> bool:
    printed = io.StringIO()
    signal.alarm(MUTANT_SECONDS)
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            eval(call, namespace)
    except MutantTimeout:
        return False
    except BaseException:  # noqa: BLE001 - the check failed it, or the mutant broke: either way not passed
        return False
    finally:
        signal.alarm(0)
    return ": passed." in printed.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default: every solutions notebook)")
    parser.add_argument("--show", action="store_true", help="print every mutant a check passed")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a single notebook, in a process of its own
    args = parser.parse_args(argv)
    if args.one:
        os.environ["TINYAGENT_OFFLINE"] = "1"
        with tempfile.TemporaryDirectory() as folder:
            os.chdir(folder)  # a mutant that writes a file (a path one character off) writes it here
            mutate_notebook(Path(args.one), args.show)
        return 0
    notebooks = sorted(SOLUTIONS.glob("*.ipynb"))
    if args.lessons:
        known = {path.name[:2] for path in notebooks}
        unknown = [number for number in args.lessons if number.zfill(2) not in known]
        if unknown:  # a typo must not quietly check the other lessons only
            print(f"error: no solutions notebook for lessons {' '.join(unknown)}: there are {', '.join(sorted(known))}",
                  file=sys.stderr)
            return 2
        notebooks = [path for path in notebooks if path.name[:2] in {n.zfill(2) for n in args.lessons}]
    total = killed = 0
    for path in notebooks:
        command = [sys.executable, __file__, "--one", str(path), *(["--show"] if args.show else [])]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        output = done.stdout
        print(output, end="", flush=True)
        if done.returncode != 0:
            print(f"{path.stem}: stopped ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}", flush=True)
        for count, dead in re.findall(r": (\d+) mutants, (\d+) killed$", output, re.MULTILINE):
            total, killed = total + int(count), killed + int(dead)
    print(f"in all: {total} mutants, {killed} killed ({killed / max(total, 1):.0%}), {total - killed} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
