"""Lesson 08 (prompt design): a lean system prompt, and which text has fewer tokens."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _not_attempted,
    _passed,
    _run,
    grades,
    shown,
)
from tinyagent.classroom.tool_list import names_in_one_of, read_tool_list
from tinyagent.prompts import build_system_prompt
from tinyagent.protocols.prompt_variants import VARIANTS
from tinyagent.protocols.token_count import token_counter
from tinyagent.registry import ToolRegistry
from tinyagent.shop import shop_registry
from tinyagent.toolkit.pickup import pickup_tool
from tinyagent.tools import FunctionTool

LEAN_SHARE = 0.75  # the lean prompt's budget: this share of the default prompt's tokens
LEAN_KEYS = ("Thought:", "Action:", "Action Input:", "Final Answer:")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAN_RUN = re.compile(_HAN.pattern + "+")
# Scripts written without spaces between words: each character counts as a word, as a Han character does.
_UNSPACED = re.compile(_HAN.pattern[:-1] + r"\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af]")
_WORD = re.compile(r"[^\W\d_]+")  # a run of letters, in any script
# French's l' d' qu' j' before a word (l'Observation): a sign of French, not an English word.
_ELISION = re.compile(r"(?<![^\W\d_])(?:[ldjLDJ]|[qQ]u)['’](?=[^\W\d_])")
# The words a learner who writes the prompt in another language can hardly do without: its commonest small words,
# and its words for what a tool prompt says (tool, reply, input, result, then, comes back). Words that are English
# too (die, as, per, son, pour, con, van, met, ton, par, usa, com) are left out; a word with an accent needs no
# place here (any letter outside ASCII counts), so only its spelling without one is listed.
_SMALL_WORDS = {
    "French": "avec puis et les des du une un le la est sont vous votre vos tu tes nous ne pas que qui dans sur ou au "
              "aux ce cette ces mais chaque outil outils reponse reponds repondez repondre entree sortie resultat "
              "ensuite alors quand utilise utilisez revient arrete arretez",
    "Spanish": "el los las una del por es cada entonces luego herramienta herramientas respuesta responde responder "
               "entrada resultado usar vuelve despues cuando su muy siempre nunca",
    "Portuguese": "uma da das ferramenta ferramentas resposta responda depois entao volta nao voce",
    "Italian": "il gli della poi strumento strumenti risposta rispondi ingresso risultato ogni sono che",
    "German": "und mit der das ein eine einen einem dann zum zur nicht oder ist sind sie du dein deine jede jeden "
              "jedes werkzeug werkzeuge antwort antworte antworten eingabe ergebnis kommt zurueck nur wenn auf fuer "
              "zu nach verwende benutze danach immer stopp bitte dem",
    "Dutch": "het een voor gereedschap antwoord antwoorden invoer resultaat terug elke niet",
}
_OTHER_LANGUAGES = frozenset(word for words in _SMALL_WORDS.values() for word in words.split())


def _own_words(prompt: str, registry: ToolRegistry) -> str:
    """The prompt without the tools' descriptions, their names, the four keys and the word Observation: the words
    the learner wrote around them."""
    own = prompt
    for tool in registry:
        own = own.replace(tool.describe("en"), " ")
    for word in (*registry.names, *LEAN_KEYS, "Observation"):
        own = own.replace(word, " ")
    return own


def _not_english(prompt: str, registry: ToolRegistry) -> list[str]:
    """The first words of the prompt's own words (`_own_words`) that are not English, when there are more of them
    than English words; [] when the prompt is English (or more English than not: a Chinese example in an English
    sentence is English).

    Not English: a character of a script written without spaces (Chinese, Japanese, Korean: each counts), a word
    with a letter outside ASCII (Répondez, Werkzeug's zurück, Инструменты), one of `_OTHER_LANGUAGES`' words, and
    French's l' d' qu'. Every other ASCII word counts as English, since no English dictionary comes with Python: a
    prompt in another language written in plain ASCII with none of those words (Indonesian, French without its
    accents or its small words) reads as English here."""
    own = _own_words(prompt, registry)
    foreign: list[str] = []
    weight = english = 0  # how many words are not English, and how many are
    for word in _WORD.findall(own):
        unspaced = len(_UNSPACED.findall(word))
        if unspaced or not word.isascii() or word.lower() in _OTHER_LANGUAGES:
            foreign.append(word)
            weight += unspaced or 1
            english += len(_WORD.findall(_UNSPACED.sub(" ", word))) if unspaced else 0  # "use中文": use is English
        else:
            english += 1
    for mark in _ELISION.findall(own):  # l, d, qu: counted as English words above
        foreign.append(mark)
        weight, english = weight + 1, english - 1
    return list(dict.fromkeys(foreign)) if weight > english else []


def _foreign_words(words: list[str]) -> str:
    """How a failure names the words that are not English: Chinese, quoting the first, when each is Chinese
    characters; else up to three of them."""
    if all(_HAN_RUN.fullmatch(word) for word in words):
        return f"Chinese ({shown(words[0])})"
    return f"not English ({', '.join(shown(word) for word in words[:3])})"


def _shared_line(prompt: str, registry: ToolRegistry) -> str | None:
    """The first tool that has no line of its own (one tool per line): each tool needs a line holding its name, as a
    word, and its description, that no tool before it took. None: every tool has one."""
    lines, taken = prompt.splitlines(), set()
    for tool in registry:
        described = tool.describe("en").splitlines()[0] if tool.describe("en") else ""
        named = re.compile(rf"(?<![\w]){re.escape(tool.name)}(?![\w])")
        line = next((n for n, text in enumerate(lines) if n not in taken and described in text and named.search(text)),
                    None)
        if line is None:
            return tool.name
        taken.add(line)
    return None


def _unread_line(prompt: str, registry: ToolRegistry, found: list[str]) -> str | None:
    """The first line that holds one tool's name and description, no other tool's, which the reader did not find:
    written one per line, but in a shape the reader does not know (`name | description`, `name = description`).
    None: no such line (the tools share lines, or a description is missing)."""
    for tool in registry:
        if tool.name in found:
            continue
        described = tool.describe("en").splitlines()[0] if tool.describe("en") else ""
        line = next((text for text in prompt.splitlines() if tool.name in text and described in text
                     and not any(other.name in text.replace(described, "") for other in registry
                                 if other.name != tool.name)), None)
        if line is not None:
            return line.strip()
    return None


def _one_of_line(prompt: str, names: list[str]) -> tuple[str, list[str]] | None:
    """The prompt's "one of [a, b, c]" line and the names it lists, when they are not the registry's `names`: a
    tool-list reader takes that line for the list of which names are tools, whatever the lines above it say. None:
    no such line, or it names exactly the tools."""
    named = names_in_one_of(prompt)
    if not named or sorted(named) == sorted(names):
        return None
    line = next((text for text in prompt.splitlines() if names_in_one_of(text) == named), "")
    return line.strip(), named


def _wrote_description(tool, prompt: str) -> bool:
    """The prompt holds tool.description where describe("en") belongs: the description, and not the words
    describe("en") adds after it (a describe("en") cut short holds those, and is not tool.description)."""
    described = tool.describe("en")
    added = described[len(tool.description):][:8] if described.startswith(tool.description) else ""
    return tool.description in prompt and not (added.strip() and tool.description + added in prompt)


def _second_registry():
    """Tools the lean prompt has never seen: a prompt written for the shop's five alone fails here."""
    return ToolRegistry([
        FunctionTool("checkStock", "Units in stock for a product. Input: the product name, e.g. S10 Pro.",
                     lambda text: '{"stock": 3}'),
        FunctionTool("getCurrentTime", "The current date and time. Input: none (empty).",
                     lambda text: "2026-06-30 19:05:23"),
    ])


def _lean_prompt(tools: ToolRegistry) -> str:
    """08, exercise 1's answer (the solution's): `name: description` lines and the keys, nothing around them."""
    listed = "".join(f"{tool.name}: {tool.describe('en')}\n" for tool in tools)
    return ("Tools:\n" + listed + "Reply with\nThought: ...\nAction: <a tool>\nAction Input: <its input>\n"
            "then stop: the Observation comes back. To answer:\nThought: ...\nFinal Answer: ...\n")


# -- exercise 1's inputs, drawn from its spec: registries as (name, English description, Chinese one) ---------
_VERBS = ("check", "get", "lookup", "send", "cancel", "list", "track", "query", "book", "convert")
_NOUNS = ("Stock", "Weather", "Invoice", "Coupon", "Address", "Parcel", "Refund", "Member", "Rate", "Ticket")
_SAYS = ("Units in stock for a product. Input: the product name, e.g. S10 Pro.",
         "The weather for a city. Input: the city, e.g. 上海 or Berlin.",
         "Send an invoice by e-mail. Input: JSON, e.g. {\"orderId\": \"88231\", \"email\": \"a@b.cn\"}.",
         "Cancel an order that has not shipped. Input: the order id, e.g. 41277.",
         "Convert an amount: 100 USD → CNY. Input: amount and currencies, e.g. 100 USD CNY.",
         "查询会员积分。Input: 会员号，例如 M-2026-0042。",
         "List the coupons of a member (at most 10). Input: none (empty).",
         "Track a parcel. Input: its number, e.g. YT2468013579 or JD0012345678.",
         "The current date and time. Input: none (empty).",
         "Book a repair visit; says the first free slot (09:00–18:00). Input: the order id.")


_LONG = "Search the after-sales policies: returns, exchanges, repairs and warranty. " * 3 + "Input: keywords."


def _tool_name(rng: random.Random, taken: set[str]) -> str:
    while True:
        verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
        name = rng.choice((f"{verb}{noun}", f"{verb}_{noun.lower()}", f"{verb}{noun}{rng.randint(2, 99)}"))
        if name not in taken:
            taken.add(name)
            return name


def _registry_of(rng: random.Random, size: int, says: tuple[str, ...] = _SAYS) -> tuple[tuple[str, str], ...]:
    taken: set[str] = set()
    return tuple((_tool_name(rng, taken), rng.choice(says)) for _ in range(size))


def _tools_never_shown(rng: random.Random) -> Iterator[tuple]:
    for size in (1, 1, 2, 2, 3, 3, 4, 5, 5, 6):
        yield (_registry_of(rng, size),)


_ODD = ("退货政策：签收后 7 天内可无理由退货。Input: 关键词。", "Ünïcödé ✓ café — naïve “quotes”. Input: text.",
        "Input: a number: 1. 2. 3. Then: done.", "Rate a product 1–5 ★. Input: JSON, e.g. {\"stars\": 4}.",
        "Look up an order (订单) and its trackingNo. Input: the order id, e.g. 88231.")


def _odd_descriptions(rng: random.Random) -> Iterator[tuple]:
    for size in (1, 2, 3, 4, 5, 6):
        yield (_registry_of(rng, size, _ODD + _SAYS),)
    # Whitespace of a description's own is part of it too: two spaces after a full stop, a full-width space between
    # Chinese sentences (" ".join(text.split()) makes both one space).
    yield ((("trackParcel", "Track a parcel.  Input: the tracking number, e.g. SF1234567890."),
            ("searchPolicy", "查退货政策。\u3000Input: 关键词，如 退货。")),)


class _ForTheBudget(tuple):
    """A registry the budget's sentence draws: judged on the budget alone, so that a prompt over it is told that
    sentence, and one that cuts a description is told the sentence on descriptions (by the other rules)."""


def _many_or_few(rng: random.Random) -> Iterator[tuple]:
    for (tools,) in _for_the_budget(rng):
        yield (_ForTheBudget(tools),)


def _for_the_budget(rng: random.Random) -> Iterator[tuple]:
    # The budget is a share of the default prompt, so it can be met while the words around the list outweigh
    # the list: past about seven tools the descriptions alone, word for word, take more than 75%. Not tried.
    for size in (1, 2, 6):
        yield (_registry_of(rng, size),)
    for size in (1, 2, 3):
        yield (_registry_of(rng, size, (_LONG, *_SAYS)),)
    # The long description above is drawn by chance, and was drawn for none of them: registries whose first
    # description is long, for sure; then the sizes not tried yet.
    yield from _long_first(rng)
    for size in (3, 4, 5):
        yield (_registry_of(rng, size),)
    for size in (1, 6):  # and descriptions in Chinese or odd Unicode, which a tokenizer may count dearly
        yield (_registry_of(rng, size, _ODD + _SAYS),)


def _long_first(rng: random.Random) -> Iterator[tuple]:
    for size in (1, 2, 3):
        first, *rest = _registry_of(rng, size)
        yield (((first[0], _LONG), *rest),)


@dataclass(frozen=True)
class _Verdict:
    """What is wrong with a prompt for a registry, in the spec's words (nothing: it holds to the spec)."""

    problems: tuple[str, ...] = ()

    def __repr__(self) -> str:  # the first problem: a failure shows one
        return self.problems[0] if self.problems else "the spec held"


def _registry(tools: tuple[tuple[str, str], ...]) -> ToolRegistry:
    return ToolRegistry([FunctionTool(name, says, lambda text: "{}") for name, says in tools])


def _judged(lean_prompt: Callable) -> Callable[[tuple], _Verdict]:
    """The answer as agree_on calls it: its prompt for the registry `tools`, judged sentence by sentence (a
    `_ForTheBudget` registry on the budget alone)."""
    counter = token_counter()

    def judge(tools: tuple[tuple[str, str], ...]) -> _Verdict:
        registry = _registry(tools)
        prompt = lean_prompt(registry)
        if not isinstance(prompt, str):
            return _Verdict((f"it returned {type(prompt).__name__}, not the prompt's text",))
        problems = []
        names = [name for name, _ in tools]
        if registry.names != names:  # judged on the tools it was given, not on what it left of them
            problems.append("it changed the registry it was given")
            registry = _registry(tools)
        if isinstance(tools, _ForTheBudget):  # the budget's own sentence: judged on the budget alone
            budget = int(counter.text(build_system_prompt(registry, "en")) * LEAN_SHARE)
            if (used := counter.text(prompt)) > budget:
                problems.append(f"{used} tokens, over the budget of {budget}")
            return _Verdict(tuple(problems))
        if lost := [tool.name for tool in registry if tool.describe("en") not in prompt]:
            more = f" and {len(lost) - 1} more" if len(lost) > 1 else ""
            problems.append(f"no description of {shown(lost[0])}{more}")
        if keys := [key for key in LEAN_KEYS if key not in prompt]:
            problems.append(f"no key {shown(keys[0])}")
        if "Observation" not in prompt:
            problems.append("no word Observation")
        if foreign := _not_english(prompt, registry):
            problems.append(f"its own words are {_foreign_words(foreign)}, where English was asked for")
        if sorted(found := list(read_tool_list(prompt).tools)) != sorted(names):  # in any order: the spec says none
            if _one_of_line(prompt, names):
                problems.append('its "one of [...]" line names other tools')
            elif len(found) != len(names):
                problems.append(f"a tool-list reader finds {len(found)} tools, not {len(names)}")
            else:
                extra = next(name for name in found if name not in names)
                problems.append(f"the tool list reads {shown(extra)}, not "
                                f"{shown(next(name for name in names if name not in found))}")
        if not problems and (shared := _shared_line(prompt, registry)) is not None:
            problems.append(f"{shown(shared)} is not on a line of its own with its description")
        return _Verdict(tuple(problems))

    return judge


def _spaces_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """For a prompt that holds a description only once its whitespace is evened out: the spaces it changed."""
    (tools,) = args
    if not (isinstance(got, _Verdict) and got.problems and got.problems[0].startswith("no description of")):
        return None
    if any("  " in says or "\u3000" in says for _, says in tools):
        return ("A description's own spaces are part of it (two after a full stop, a full-width one): keep them, "
                "do not even them out.")
    return None


def _spec_held(tools: tuple[tuple[str, str], ...]) -> _Verdict:
    """The reference: a prompt the spec asks for has nothing wrong with it (the solution's has nothing)."""
    return _Verdict()


def _show_tools(args: tuple) -> str:
    (tools,) = args
    return f"{len(tools)} tool(s) {_brief([name for name, _ in tools], 100)}"


LEAN_RULES = (
    Rule("every tool's description word for word, one tool per line, for tools it has never seen (1 to 6)",
         _tools_never_shown),
    Rule("descriptions in Chinese, with odd Unicode, colons or numbers, kept word for word",
         _odd_descriptions, hint=_spaces_hint),
    Rule("at most 75% of the default prompt's tokens, for one tool or six, short descriptions or long",
         _many_or_few),
    Rule("a long description (three sentences, over 200 characters) kept word for word too, not cut short",
         _long_first),
)


LEAN_FIXED = ("with the shop's tools, two other tools and lesson 07's typed schedulePickup (its describe(\"en\") "
              "adds the schema): the descriptions, English around them, the four keys, the word Observation, one "
              "tool per line (any order) and the budget, each with its own message")


@grades("Exercise 1", spec=Spec(LEAN_RULES, extra=(LEAN_FIXED,)))
def check_lean_prompt(lean_prompt: Callable | None) -> None:
    """08, exercise 1: an English prompt within 75% of the default's tokens that keeps what a model needs."""
    exercise = "Exercise 1"
    if lean_prompt is None:
        return _not_attempted(exercise, "Write def lean_prompt(tools) in the cell above.")
    if not callable(lean_prompt):
        _fail(exercise, f"lean_prompt should be a function of the registry, got {type(lean_prompt).__name__}")
    counter = token_counter()

    def holds(label: str, registry: ToolRegistry) -> tuple[int, int]:
        """Each sentence of the spec, with its own message, on one fixed registry: (tokens used, default's)."""
        names = registry.names
        prompt = _run(exercise, f"lean_prompt(<{label}>)", lean_prompt, registry)
        if registry.names != names:
            _fail(exercise, f"with {label}, lean_prompt changed the registry it was given (it now holds "
                            f"{registry.names}): the prompt describes the tools, it does not add or remove any")
        if not isinstance(prompt, str):
            _fail(exercise, f"lean_prompt returned {type(prompt).__name__}, not the prompt's text")
        lost = [tool.name for tool in registry if tool.describe("en") not in prompt]
        if lost and all(_wrote_description(tool, prompt) for tool in registry if tool.name in lost):
            _fail(exercise, f"with {label} the descriptions of {lost} are missing: you wrote tool.description; "
                            "the spec asks for tool.describe(\"en\"), which adds what input the tool takes")
        if lost:
            _fail(exercise, f"with {label} the descriptions of {lost} are missing (each must appear word for "
                            "word): they say what input each tool takes. Build the list from `tools`, and "
                            "cut the words around it instead")
        if foreign := _not_english(prompt, registry):
            _fail(exercise, f"with {label}, the words around the tools are {_foreign_words(foreign)}: the spec "
                            "asks for an English prompt (only a description may hold another language)")
        keys = [key for key in LEAN_KEYS if key not in prompt]
        if keys:
            _fail(exercise, f"the keys {keys} are missing: the parser reads only lines that start with them, "
                            "so the prompt must show each one")
        if "Observation" not in prompt:
            _fail(exercise, "say that the tool's result comes back as an Observation: otherwise the model "
                            "cannot know that it should stop after Action Input")
        found = list(read_tool_list(prompt).tools)
        if sorted(found) != sorted(registry.names):  # in any order: the spec asks for none
            if one_of := _one_of_line(prompt, registry.names):
                line, named = one_of
                _fail(exercise, f"with {label}, your line {_brief(line, 60)} tells a tool-list reader which names are "
                                f"tools, and it names {_brief(named, 60)}, expected {registry.names}: build that line "
                                "from `tools` too, or leave it out")
            extra = [name for name in found if name not in registry.names]
            if extra and all(name in found for name in registry.names):  # the list is right; another line reads as one
                come = "comes" if len(extra) == 1 else "come"
                _fail(exercise, f"with {label}, a tool-list reader finds {found} in your prompt, expected "
                                f"{registry.names}: {', '.join(map(repr, extra))} {come} from lines shaped like "
                                "the list's entries (`Word: text`), which read as tools too; write the prompt's other "
                                "lines otherwise")
            unread = _unread_line(prompt, registry, found)
            said = f"its line {_brief(unread, 60)} is in no shape it reads; " if unread else ""
            _fail(exercise, f"with {label}, a tool-list reader finds {found} in your prompt, expected "
                            f"{registry.names}: {said}write one tool per line as `name: description`, numbered "
                            "(`1. name - description`), or as a Markdown list or table")
        if (shared := _shared_line(prompt, registry)) is not None:
            _fail(exercise, f"with {label}, {shown(shared)} is not on a line of its own with its description: one tool "
                            "per line, `name: description`")
        default = counter.text(build_system_prompt(registry, "en"))
        budget, used = int(default * LEAN_SHARE), counter.text(prompt)
        if used > budget:
            _fail(exercise, f"with {label} your prompt has {used} tokens and the default {default}: the "
                            f"budget is {budget} ({LEAN_SHARE:.0%}). Which words around the tools can go?")
        return used, default

    with _fresh_shop() as shop:
        sizes = [holds(label, registry) for label, registry in (
            ("the shop's tools", shop_registry(shop)), ("two other tools", _second_registry()))]
    tried = agree_on(exercise, "check_lean_prompt", LEAN_RULES, _judged(lean_prompt), _spec_held,
                     call="lean_prompt(tools)", show=_show_tools)
    # a typed tool, whose describe("en") adds its input's schema to its description
    holds("lesson 07's schedulePickup", ToolRegistry([pickup_tool()]))
    (used, default), _ = sizes
    return _passed(exercise, f"{used} tokens instead of {default} ({used / default:.0%}), with every tool's "
                             f"description and every key kept, and for {tried} generated registries too. Run the "
                             "agent with it and watch the refund.")


def shorter_pairs() -> dict[str, dict[str, str]]:
    """08, exercise 2's three pairs of texts, by pair and by option."""
    with _fresh_shop() as shop:
        registry = shop_registry(shop)
        return {
            "system prompt": {"en": build_system_prompt(registry, "en"), "zh": build_system_prompt(registry, "zh")},
            "question": {
                "en": "The robot vacuum I bought last week no longer goes back to its dock. "
                      "If it can't be fixed, I want a refund. Order number 88231.",
                "zh": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。",
            },
            "json or example": {name: VARIANTS[name].system_prompt(registry, "en")
                                for name in ("json", "one-shot-prompt")},
        }


SHORTER_HINTS = {
    "system prompt": "the Chinese prompt has half the characters; is a Chinese character cheaper than an "
                     "English word?",
    "question": "count words in one and characters in the other: about one token each",
    "json or example": "five tool definitions with their schemas, or one short conversation: "
                       "which holds more text?",
}


@grades("Exercise 2", spec=Spec(fixed=(
    "a prediction about three fixed pairs of texts: nothing to generate; each choice is compared with the "
    "lesson's counter's count of both texts, measured on the spot")))
def check_shorter_predictions(shorter: dict | None) -> None:
    """08, exercise 2: for each pair, which text has fewer tokens (measured here with the lesson's counter)."""
    exercise = "Exercise 2"
    if shorter is None:
        return _not_attempted(exercise, 'Set shorter to a dict such as {"system prompt": "en", ...}.')
    pairs = shorter_pairs()
    if not isinstance(shorter, dict) or set(shorter) != set(pairs):
        _fail(exercise, f"shorter should be a dict with the keys {list(pairs)}, got {shown(shorter)}")
    counter = token_counter()
    counts = {pair: {option: counter.text(text) for option, text in texts.items()} for pair, texts in pairs.items()}
    wrong = []
    for pair, options in counts.items():
        if not isinstance(shorter[pair], str) or shorter[pair] not in options:
            _fail(exercise, f"shorter[{shown(pair)}] should be one of {list(options)}, got {shown(shorter[pair])}")
        if options[shorter[pair]] > min(options.values()):
            wrong.append(f"{pair}: not {shown(shorter[pair])} ({SHORTER_HINTS[pair]})")
    if wrong:
        _fail(exercise, f"{len(wrong)} of {len(pairs)} wrong. " + "; ".join(wrong))
    lines = [
        f"{pair}: " + ", ".join(f"{option} {count} tokens ({len(pairs[pair][option])} characters)"
                                for option, count in options.items())
        for pair, options in counts.items()
    ]
    return _passed(exercise, f"measured with {counter.name}:\n  " + "\n  ".join(lines))
