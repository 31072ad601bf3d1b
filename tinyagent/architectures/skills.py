"""Lesson 17: skills. A skill is a Markdown file: a front matter naming it and the tools it may use, and a body
of instructions. Activated, it is all the model sees: its instructions in the prompt, its tools in the list,
and a registry that refuses every other tool with an Observation.

    ---
    name: logistics
    description: Where a parcel is, for an order id or a tracking number
    tools: [queryOrder, queryLogistics]
    ---
    Look the order up first to get its tracking number, then the parcel's traces. ...

The front matter is the small part of YAML a skill needs, read here without a YAML library (the core keeps
its two dependencies). What `read_front_matter` accepts, and nothing else:

    key: value              a plain value, or one in 'single' or "double" quotes (the quotes are removed)
    key: [a, b, "c d"]      a list on one line (items plain or quoted, separated by commas)
    key:                    a list over the next lines, one "- item" a line (indented or not)
      - a
    # a comment             a whole-line comment, or " # ..." after a plain value; blank lines

Keys are `name` (one word: letters, digits, - and _), `description` and `tools` (a non-empty list), all
three required; any other key is refused, so a misspelt one (`tool:`) is an error, not a silent default.
Every mistake is a `SkillError` of one line that names the file and the line: `logistics.md:4: ...`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from tinyagent.errors import TinyAgentError
from tinyagent.events import Event, event_kind
from tinyagent.prompts import build_system_prompt
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.tools import Action

SKILL_LABEL = {"en": "[Skill: {name}] tools: {tools}", "zh": "[技能：{name}] 可用工具：{tools}"}  # in a printed trace


@event_kind
class SkillActivated(Event):
    """Lesson 17 (skills.py): a skill is active; the model is offered only `tools`, and the registry refuses the
    others. `reason` says why it is active: the router gives the skill's description, `ask --skill` says "--skill"."""

    kind: ClassVar[str] = "skill_activated"
    name: str = ""
    tools: tuple[str, ...] = ()
    reason: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        lines = [SKILL_LABEL[lang].format(name=self.name, tools=", ".join(self.tools) or "-")]
        return lines + ([self.reason] if self.reason else [])


SKILL_KEYS = ("name", "description", "tools")
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_ITEM_LINE = re.compile(r"^\s*-\s+(.*)$|^\s*-$")
MAX_SKILL_BYTES = 64_000  # a page of instructions, not a book: a bigger file is a mistake


class SkillError(TinyAgentError, ValueError):
    """A skill file that cannot be read: one line, "<file>:<line>: what is wrong"."""


@dataclass(frozen=True)
class Skill:
    """A skill read from its file: who it is, the tools it allows, and the instructions it gives the model."""

    name: str
    description: str
    tools: tuple[str, ...]
    instructions: str
    source: str = ""

    def scope(self, registry: ToolRegistry) -> SkillRegistry:
        """`registry` limited to this skill's tools (raises SkillError if the skill names one it lacks)."""
        return SkillRegistry(registry, self)

    def system_prompt(self, registry: ToolRegistry, lang: str = "en") -> str:
        """The ReAct prompt with only this skill's tools, followed by its instructions."""
        heading = {"en": f"Active skill: {self.name}", "zh": f"当前技能：{self.name}"}[lang]
        return f"{build_system_prompt(self.scope(registry), lang)}\n\n{heading}\n{self.instructions}"


class SkillRegistry(ToolRegistry):
    """A registry with only a skill's tools. The prompt lists only them (`build_tool_list`), and an Action that
    names another tool of the full registry comes back as an error Observation saying it is outside the skill."""

    def __init__(self, registry: ToolRegistry, skill: Skill):
        missing = [name for name in skill.tools if name not in registry]
        if missing:
            raise SkillError(f"{skill.source or skill.name}: skill {skill.name!r} names tools the registry does not "
                             f"have: {', '.join(missing)} (it has: {', '.join(registry.names)})")
        super().__init__([registry.get(name) for name in skill.tools])
        self.skill = skill
        self.outside = [name for name in registry.names if name not in skill.tools]

    def _run(self, action: Action | None) -> ToolResult:
        # A name that is not text (a native call's 5) is no tool's: the base registry says no name was found.
        name = action.tool_name.strip() if action is not None and isinstance(action.tool_name, str) else ""
        if name in self.outside:
            return ToolResult(error_observation(
                f"tool {name} is not available: the active skill {self.skill.name!r} allows only "
                f"{', '.join(self.names)}", available_tools=self.names), error=True)
        return super()._run(action)


# -- reading a skill file -------------------------------------------------------------------------------
def read_front_matter(text: str, source: str = "<skill>") -> tuple[dict[str, str | list[str]], str, int]:
    """(the front matter's keys and values, the body, the body's first line number). Raises SkillError."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{source}:1: a skill starts with a front matter: a line '---', then 'name: ...'")
    data: dict[str, str | list[str]] = {}
    open_list: str | None = None  # the key whose "- item" lines are being read
    for number, line in enumerate(lines[1:], start=2):
        stripped = line.strip()
        if stripped == "---":
            return data, "\n".join(lines[number:]).strip(), number + 1
        if not stripped or stripped.startswith("#"):
            continue
        item = _ITEM_LINE.match(line)
        if item is not None:
            if open_list is None:
                raise SkillError(f"{source}:{number}: a '- item' line must follow a 'key:' line with no value")
            data[open_list].append(_scalar(item.group(1) or "", source, number))
            continue
        key_line = _KEY_LINE.match(stripped if not line[:1].isspace() else "")
        if key_line is None:
            raise SkillError(f"{source}:{number}: expected 'key: value', got {_shorten(stripped)!r}")
        key, value = key_line.group(1), (key_line.group(2) or "").strip()
        if key in data:
            raise SkillError(f"{source}:{number}: {key!r} appears twice")
        if value == "":
            data[key], open_list = [], key
            continue
        open_list = None
        data[key] = _flow_list(value, source, number) if value.startswith("[") else _scalar(value, source, number)
    raise SkillError(f"{source}:{len(lines) + 1}: the front matter has no closing '---' line")


def _scalar(value: str, source: str, number: int) -> str:
    value = value.strip()
    if value[:1] in ("'", '"'):
        # "..." may hold \" and the other escapes of JSON strings; '...' holds text as it is (YAML's '' aside).
        quoted = re.match(r'"((?:[^"\\]|\\.)*)"' if value[0] == '"' else r"'([^']*)'", value)
        if quoted is None:
            raise SkillError(f"{source}:{number}: a quote {value[0]} is not closed")
        rest = value[quoted.end():].strip()
        if rest and not rest.startswith("#"):
            raise SkillError(f"{source}:{number}: text after the closing quote: {_shorten(rest)!r}")
        if value[0] == "'":
            return quoted.group(1)
        try:
            return json.loads(quoted.group(0))
        except ValueError:
            raise SkillError(f"{source}:{number}: a backslash escape that is not valid in a quoted value") from None
    if value[:1] in ("{", "&", "*", "!", "|", ">", "%", "@", "`"):
        raise SkillError(f"{source}:{number}: {value[0]!r} starts YAML this reader does not support; quote the value")
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()


def _flow_list(value: str, source: str, number: int) -> list[str]:
    close = value.rfind("]")
    if close < 0 or (value[close + 1:].strip() and not value[close + 1:].strip().startswith("#")):
        raise SkillError(f"{source}:{number}: a list opened with '[' must close with ']' on the same line")
    inner = value[1:close]
    if "[" in inner or "]" in inner:
        raise SkillError(f"{source}:{number}: a list inside a list is not supported")
    items, current, quote = [], "", None
    for ch in inner:  # split at commas outside quotes
        if quote is None and ch == ",":
            items.append(current)
            current = ""
            continue
        if ch in ("'", '"') and (quote is None or quote == ch):
            quote = None if quote == ch else ch
        current += ch
    items.append(current)
    if len(items) == 1 and not items[0].strip():
        return []
    if any(not item.strip() for item in items):
        raise SkillError(f"{source}:{number}: an empty item in the list (two commas, or a comma at an end)")
    return [_scalar(item, source, number) for item in items]


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_skill(text: str, source: str = "<skill>") -> Skill:
    """A Skill from the text of a skill file (`source` names it in errors). Raises SkillError."""
    data, body, body_line = read_front_matter(text, source)
    lines = text.splitlines()

    def line_of(key: str) -> int:
        return next((n for n, line in enumerate(lines, start=1) if line.startswith(f"{key}:")), 1)

    for key in data:
        if key not in SKILL_KEYS:
            raise SkillError(f"{source}:{line_of(key)}: unknown key {key!r}; a skill has {', '.join(SKILL_KEYS)}")
    for key in SKILL_KEYS:
        if key not in data:
            raise SkillError(f"{source}:{body_line - 1}: the front matter has no {key!r}")
    name, description, tools = data["name"], data["description"], data["tools"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise SkillError(f"{source}:{line_of('name')}: name must be one word (letters, digits, - and _), got {name!r}")
    if not isinstance(description, str) or not description:
        raise SkillError(f"{source}:{line_of('description')}: description must be a sentence, not empty or a list")
    if isinstance(tools, str) or not tools:
        raise SkillError(f"{source}:{line_of('tools')}: tools must be a non-empty list, e.g. [queryOrder, queryLogistics]")
    for tool in tools:
        if not tool or any(ch.isspace() for ch in tool):
            raise SkillError(f"{source}:{line_of('tools')}: {tool!r} is not a tool name (one word)")
    if len(set(tools)) != len(tools):
        raise SkillError(f"{source}:{line_of('tools')}: a tool is listed twice")
    if not body:
        raise SkillError(f"{source}:{body_line}: the skill has no instructions after the front matter")
    return Skill(name, description, tuple(tools), body, source)


def load_skill(path: str | Path) -> Skill:
    """Read one skill file (UTF-8 Markdown). Raises SkillError naming the file."""
    path = Path(path)
    source = path.name
    try:
        if path.stat().st_size > MAX_SKILL_BYTES:
            raise SkillError(f"{source}:1: the file is larger than {MAX_SKILL_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillError(f"{source}:1: no such file: {path}") from None
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise SkillError(f"{source}:{line}: not UTF-8 text (save the file as UTF-8)") from None
    except OSError as error:
        raise SkillError(f"{source}:1: cannot read it: {error.strerror or error}") from None
    return parse_skill(text, source)


def load_skills(folder: str | Path) -> dict[str, Skill]:
    """Every `*.md` skill in `folder`, by name, in file-name order. Raises SkillError for the first bad one,
    or for two files with the same skill name."""
    skills: dict[str, Skill] = {}
    for path in sorted(Path(folder).glob("*.md")):
        skill = load_skill(path)
        if skill.name in skills:
            raise SkillError(f"{path.name}:1: skill {skill.name!r} is also defined in {skills[skill.name].source}")
        skills[skill.name] = skill
    return skills


def shop_skills() -> dict[str, Skill]:
    """The shop's skills, shipped with the package (tinyagent/shop/skills/)."""
    from tinyagent.shop.skills import SKILL_FOLDER

    return load_skills(SKILL_FOLDER)
