"""GBNF, llama.cpp's grammar language: writing it, and checking which texts a grammar allows (lesson 23).

A grammar is a list of rules, `root` first; the server samples only tokens that keep the reply inside it:

    root   ::= "Thought: " line "\\nAction: queryOrder\\nAction Input: " id
    line   ::= [^\\n]{1,120}
    id     ::= "88231" | "88232"

What a rule's right side may hold, as llama.cpp reads it: "literals" (with \\n, \\t, \\", \\\\, \\xHH, \\uHHHH),
[character classes] ([^...] for the complement, a-z for a range), other rules by name, ( groups ), `|` between
alternatives, and `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` after an element. `# ...` is a comment.

The writing half (`literal`, `char_class`) escapes text so that it means itself, and `rule_name` makes any text
a name a rule may have. The checking half
(`parse_grammar`, `Grammar.accepts`) is a small matcher for the same language, so a test can ask whether a
grammar allows a text without a model: every rule is a set of end positions from a start position,
computed once and remembered. It is a checker, not a sampler, and fine for the short texts of a step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from tinyagent.errors import TinyAgentError

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_RULE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_SPACES = re.compile(r"[ \t]*")  # what llama.cpp skips between an element and its `*`, `+`, `?` or `{m,n}`
MAX_GROUP_DEPTH = 100  # ( groups ) inside each other: past this the reader would run out of Python's stack
# llama.cpp's MAX_REPETITION_THRESHOLD (src/llama-grammar.cpp): it expands {m,n} into a rule per repeat and refuses a
# sequence once the product of its repeat counts (n, or m when there is no n; 1 for *, + and ?) reaches it.
MAX_REPETITIONS = 2000


class GrammarError(TinyAgentError, ValueError):
    """A grammar this module cannot read (and llama.cpp would refuse), or one that cannot be written for a tool's
    schema (constrained_decoding.py): says where and why. A run whose grammar cannot be built ends with
    Stopped("grammar"), this polite answer, and the message as its detail (loop_parts.stopped_on_error)."""

    stop_reason: ClassVar[str] = "grammar"
    answer: ClassVar[dict[str, str]] = {
        "en": "Sorry, I cannot use my tools for this request right now. Please try again later.",
        "zh": "抱歉，我现在无法为这个请求使用工具，请稍后再试。",
    }


def literal(text: str) -> str:
    """`text` as a GBNF string literal that matches exactly it: quotes and backslashes escaped, control
    characters written as escapes; any other character (Chinese included) stays as it is."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def rule_name(text: str) -> str:
    """`text` made into a rule name that both llama.cpp and `parse_grammar` read: ASCII letters, digits and `-`,
    starting with a letter. Each run of other characters (quotes, `::=`, `|`, `#`, NUL, Chinese, emoji) becomes one
    `-`; a name that would start with a digit gets "rule-" before it, and one with nothing left is "rule". Two texts
    can give the same name (`a_b`, `a|b`): a grammar that needs both keeps them apart
    (constrained_decoding.RuleBook)."""
    name = re.sub(r"[^A-Za-z0-9-]+", "-", text).strip("-")
    return name if _RULE_NAME.fullmatch(name) else f"rule-{name}".rstrip("-")


def char_class(chars: str, negate: bool = False) -> str:
    r"""A character class of exactly these characters (or all others with `negate`): a quote, a backslash and a
    newline, negated, give `[^\"\\\n]`. A character that does not print (a control character, U+2028) is written
    as an escape, so the grammar's text shows it."""
    return f"[{'^' if negate else ''}{''.join(map(_class_char, chars))}]"


def _class_char(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch in "]-^[":
        return "\\" + ch
    if not ch.isprintable():
        code = ord(ch)
        return f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"
    return ch


# -- the matcher ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Lit:
    text: str


@dataclass(frozen=True)
class _Class:
    ranges: tuple[tuple[int, int], ...]
    negate: bool

    def has(self, ch: str) -> bool:
        inside = any(lo <= ord(ch) <= hi for lo, hi in self.ranges)
        return inside != self.negate


@dataclass(frozen=True)
class _Ref:
    name: str


@dataclass(frozen=True)
class _Seq:
    items: tuple


@dataclass(frozen=True)
class _Alt:
    options: tuple


@dataclass(frozen=True)
class _Repeat:
    item: object
    low: int
    high: int | None  # None: no upper bound


@dataclass
class Grammar:
    """A parsed grammar: its rules by name (the text's order kept) and `accepts(text)`."""

    rules: dict[str, object] = field(default_factory=dict)
    source: str = ""

    def accepts(self, text: str, rule: str = "root") -> bool:
        """True when `rule` (root by default) can produce exactly `text`."""
        if rule not in self.rules:
            raise GrammarError(f"the grammar has no rule {rule!r}")
        try:
            return len(text) in _Matcher(self.rules, text).ends(_Ref(rule), 0)
        except RecursionError:  # each rule named inside another is a level of Python's stack
            raise GrammarError("the grammar's rules lead through one another too deep for this checker (a chain of "
                               "some hundreds of rules): name fewer rules in a row") from None

    def __str__(self) -> str:
        return self.source


def parse_grammar(source: str) -> Grammar:
    """Read GBNF text into a `Grammar`. Raises GrammarError for what llama.cpp would refuse too: a rule
    used but never defined, no `root`, an unclosed literal, class or group, a bad repetition or one too big
    (MAX_REPETITIONS)."""
    grammar = Grammar(source=source)
    for name, body, line_no in _rule_texts(source):
        if name in grammar.rules:
            raise GrammarError(f"line {line_no}: rule {name!r} is defined twice")
        reader = _Reader(body, line_no)
        grammar.rules[name] = reader.alternatives()
        if reader.pos != len(body):
            raise GrammarError(f"line {line_no}: unexpected {body[reader.pos:][:20]!r} in rule {name!r}")
    if "root" not in grammar.rules:
        raise GrammarError("the grammar has no root rule")
    for name, node in grammar.rules.items():
        for used in _names_in(node):
            if used not in grammar.rules:
                raise GrammarError(f"rule {name!r} uses {used!r}, which is not defined")
    return grammar


@dataclass
class _RuleText:
    """One rule's text as it is read, line by line."""

    name: str
    body: str  # its right side so far
    line_no: int  # the line it starts on
    open_groups: int  # how many ( its right side leaves open so far

    def goes_on(self) -> bool:
        """Whether the next line may continue it, as llama.cpp reads a rule: after `::=`, after `|`, inside ( )."""
        return not self.body or self.body.endswith("|") or self.open_groups > 0


def _rule_texts(source: str):
    """(name, right side, line number) per rule; a line that does not start a rule continues the last, where
    llama.cpp lets a rule go on: after its `::=`, after a `|`, or inside ( ). Anywhere else a new line ends the
    rule, and llama.cpp reads the next line as a new one (`root ::= [A-Z]{2}` then `[0-9]{10}` is refused)."""
    rules: list[_RuleText] = []
    # Lines end at "\n" only, as llama.cpp reads them: splitlines() also broke a literal at U+2028 or U+0085.
    for line_no, line in enumerate(source.split("\n"), start=1):
        stripped = _strip_comment(line).strip()
        if not stripped:
            continue
        head = re.match(r"([A-Za-z][A-Za-z0-9-]*)\s*::=\s*", stripped)
        if head:
            body = stripped[head.end():]
            rules.append(_RuleText(head.group(1), body, line_no, _open_groups(body)))
        elif rules and rules[-1].goes_on():
            rules[-1].body += " " + stripped
            rules[-1].open_groups += _open_groups(stripped)
        elif rules:
            raise GrammarError(f"line {line_no}: a new line ends rule {rules[-1].name!r} here (llama.cpp goes on to "
                               f"the next line only after `::=` or `|`, or inside ( )): {stripped[:30]!r}")
        else:
            raise GrammarError(f"line {line_no}: expected `name ::= ...`, got {stripped[:30]!r}")
    return [(rule.name, rule.body, rule.line_no) for rule in rules]


def _bare(text: str):
    """(index, character) of each character of `text` outside literals and classes, escapes skipped."""
    quote = bracket = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"' and not bracket:
            quote = not quote
        elif ch == "[" and not quote:
            bracket = True
        elif ch == "]" and not quote:
            bracket = False
        elif not quote and not bracket:
            yield i, ch
        i += 1


def _strip_comment(line: str) -> str:
    """The line without a `#` comment (a # inside a literal or a class is not one)."""
    return next((line[:i] for i, ch in _bare(line) if ch == "#"), line)


def _open_groups(text: str) -> int:
    """How many ( groups ) `text` opens and does not close (fewer than none when it closes more)."""
    return sum((ch == "(") - (ch == ")") for _, ch in _bare(text))


def _names_in(node) -> set[str]:
    if isinstance(node, _Ref):
        return {node.name}
    if isinstance(node, _Seq):
        return set().union(*map(_names_in, node.items))
    if isinstance(node, _Alt):
        return set().union(*map(_names_in, node.options))
    if isinstance(node, _Repeat):
        return _names_in(node.item)
    return set()


class _Reader:
    def __init__(self, text: str, line_no: int):
        self.text, self.pos, self.line_no = text, 0, line_no
        self.depth = 0  # how many ( groups ) the reader is inside

    def fail(self, why: str) -> GrammarError:
        return GrammarError(f"line {self.line_no}: {why}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def alternatives(self):
        options = [self.sequence()]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def sequence(self):
        items = []
        repeats = 1  # the product of this sequence's repeat counts, as llama.cpp counts them (MAX_REPETITIONS)
        while True:
            self.skip()
            if self.pos >= len(self.text) or self.text[self.pos] in "|)":
                return items[0] if len(items) == 1 else _Seq(tuple(items))
            item = self.postfix(self.element())
            repeat = item
            while isinstance(repeat, _Repeat):  # "a"{2}{3} is a repeat of a repeat: each one counts
                repeats *= repeat.high or repeat.low or 1
                repeat = repeat.item
            if repeats >= MAX_REPETITIONS:
                raise self.fail(f"repeats multiply to {repeats} in one sequence; llama.cpp refuses {MAX_REPETITIONS} "
                                "or more (its MAX_REPETITION_THRESHOLD): use smaller counts")
            items.append(item)

    def element(self):
        ch = self.text[self.pos]
        if ch == '"':
            return _Lit(self.quoted())
        if ch == "[":
            return self.char_class()
        if ch == "(":
            self.pos += 1
            self.depth += 1
            if self.depth > MAX_GROUP_DEPTH:
                raise self.fail(f"groups are nested more than {MAX_GROUP_DEPTH} deep")
            inner = self.alternatives()
            self.depth -= 1
            self.skip()
            if self.pos >= len(self.text) or self.text[self.pos] != ")":
                raise self.fail("a group ( is never closed")
            self.pos += 1
            return inner
        name = _RULE_NAME.match(self.text, self.pos)
        if name is None:
            raise self.fail(f"unexpected {self.text[self.pos:][:20]!r}")
        self.pos = name.end()
        return _Ref(name.group())

    def postfix(self, item):
        while self.pos < len(self.text):
            # llama.cpp skips spaces after an element, so an operator may stand apart from it: [A-Z] {2}
            after = _SPACES.match(self.text, self.pos).end()
            ch = self.text[after: after + 1]
            if ch and ch in "*+?{":
                self.pos = after
            if ch and ch in "*+?":
                self.pos += 1
                item = _Repeat(item, 1 if ch == "+" else 0, None if ch in "*+" else 1)
            elif ch == "{":
                braces = re.match(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}", self.text[self.pos:])
                if braces is None:
                    raise self.fail("a repetition should read {m}, {m,} or {m,n}")
                self.pos += braces.end()
                low = int(braces.group(1))
                high = low if braces.group(2) is None else (int(braces.group(3)) if braces.group(3) else None)
                if high is not None and high < low:
                    raise self.fail(f"the repetition {{{low},{high}}} asks for fewer than it needs")
                item = _Repeat(item, low, high)
            else:
                return item
        return item

    def char(self) -> str:
        """One character of a literal or a class, escapes read."""
        ch = self.text[self.pos]
        if ch != "\\":
            self.pos += 1
            return ch
        code = self.text[self.pos + 1: self.pos + 2]
        simple = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "[": "[", "]": "]", "-": "-", "^": "^"}
        if code in simple:
            self.pos += 2
            return simple[code]
        width = {"x": 2, "u": 4, "U": 8}.get(code)
        digits = self.text[self.pos + 2: self.pos + 2 + (width or 0)]
        if width is None or not re.fullmatch(r"[0-9a-fA-F]+", digits or "-") or len(digits) != width:
            raise self.fail(f"unknown escape {self.text[self.pos:self.pos + 2]!r}")
        if int(digits, 16) > 0x10FFFF:  # chr() would refuse it: past the last code point Unicode has
            raise self.fail(f"the escape {self.text[self.pos:self.pos + 2 + width]!r} is past Unicode's last "
                            "character, \\U0010FFFF")
        self.pos += 2 + width
        return chr(int(digits, 16))

    def quoted(self) -> str:
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text):
                raise self.fail("a literal \" is never closed")
            if self.text[self.pos] == '"':
                self.pos += 1
                return "".join(out)
            out.append(self.char())

    def char_class(self) -> _Class:
        self.pos += 1
        negate = self.text[self.pos: self.pos + 1] == "^"
        self.pos += negate
        ranges = []
        while True:
            if self.pos >= len(self.text):
                raise self.fail("a character class [ is never closed")
            if self.text[self.pos] == "]":
                self.pos += 1
                return _Class(tuple(ranges), negate)
            low = self.char()
            high = low
            if self.text[self.pos: self.pos + 1] == "-" and self.text[self.pos + 1: self.pos + 2] not in ("]", ""):
                self.pos += 1
                high = self.char()
            ranges.append((ord(low), ord(high)))


class _Matcher:
    """Where each part of the grammar can end in `text` when it starts at a position, remembered."""

    def __init__(self, rules: dict, text: str):
        self.rules, self.text = rules, text
        self.ends = lru_cache(maxsize=None)(self._ends)

    def _ends(self, node, pos: int) -> frozenset[int]:
        text = self.text
        if isinstance(node, _Lit):
            return frozenset({pos + len(node.text)}) if text.startswith(node.text, pos) else frozenset()
        if isinstance(node, _Class):
            return frozenset({pos + 1}) if pos < len(text) and node.has(text[pos]) else frozenset()
        if isinstance(node, _Ref):
            return self.ends(self.rules[node.name], pos)
        if isinstance(node, _Seq):
            here = frozenset({pos})
            for item in node.items:
                here = frozenset(end for start in here for end in self.ends(item, start))
                if not here:
                    break
            return here
        if isinstance(node, _Alt):
            return frozenset(end for option in node.options for end in self.ends(option, pos))
        if isinstance(node, _Repeat):
            reached = {pos} if node.low == 0 else set()
            frontier, count = {pos}, 0
            while frontier and (node.high is None or count < node.high):
                count += 1
                step = {end for start in frontier for end in self.ends(node.item, start)
                        if end != start or count <= node.low}
                if step == frontier and count < node.low:
                    count = node.low  # the same places again (the item matched empty text): so up to `low`
                frontier = step
                if count >= node.low:
                    new = frontier - reached
                    reached |= frontier
                    if node.high is None:
                        frontier = new  # an unbounded repeat only needs the places it has not been
            return frozenset(reached)
        raise TypeError(f"not a grammar node: {node!r}")
