"""How the classroom model counts tokens: one simple rule, used for `usage` and for `max_tokens`.

The rule:

- a run of ASCII letters and digits is one token ("Observation", "88231", "SF1234567890");
- every other character that is not whitespace is one token on its own: each Chinese character
  ("退" is one token, "退款" two), each punctuation mark (":" "，" "{"), each emoji;
- whitespace is free: it counts for nothing, and belongs to the token that follows it.

So "Action Input: 88231" is 4 tokens (Action, Input, :, 88231) and "订单号 88231。" is 5.

This approximates, but is not, a real tokenizer. Real models split text into sub-word pieces learnt
from data (a long English word is often several tokens, a Chinese character often one or two), and
every model family splits differently. What lessons need from a count is that it is stable, easy to
check by hand, and grows with the text the way a real one does; this rule is all three.

A conversation costs more than its text: see `count_prompt_tokens` for the per-message overhead.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

# One match = one token. The ASCII run comes first so that "88231" is one token, not five.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9]+|\S")

# Like real chat formats, each message pays a little for its role and the markers around it, and the
# reply pays for the marker that starts it. (OpenAI's own guide counts 3 and 3 for its chat models.)
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3


# Every request of a conversation re-sends the same system prompt and earlier messages: remembering
# their counts makes the server's token counting cost only the new message. Only texts up to
# MEMO_MAX_CHARS are remembered (the shop's system prompt is about 1,000 characters in English, 500 in
# Chinese): the memo keeps each text as its key, and 4096 distinct multi-megabyte messages would
# otherwise stay in memory.
MEMO_MAX_CHARS = 2048


def count_tokens(text: str | None) -> int:
    """The number of tokens in `text` under the rule above (0 for None or "")."""
    if not text:
        return 0
    if len(text) > MEMO_MAX_CHARS:
        return _count(text)
    return _remembered_count(text)


@lru_cache(maxsize=4096)
def _remembered_count(text: str) -> int:
    return _count(text)


def _count(text: str) -> int:
    return sum(1 for _ in TOKEN_PATTERN.finditer(text))


def split_tokens(text: str) -> list[str]:
    """`text` in pieces of one token each, whitespace kept, so that "".join(pieces) == text.

    Each piece is the whitespace before a token plus the token; trailing whitespace joins the last
    piece. This is what the server "generates" one piece at a time when it streams.
    """
    pieces: list[str] = []
    start = 0
    for match in TOKEN_PATTERN.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    if start < len(text):  # whitespace after the last token (or a text that is only whitespace)
        if pieces:
            pieces[-1] += text[start:]
        else:
            pieces.append(text[start:])
    return pieces


def truncate_to_tokens(text: str, limit: int) -> str:
    """`text` cut right after its `limit`-th token (whitespace after that token dropped).

    A text with `limit` tokens or fewer comes back unchanged, so `truncate_to_tokens(t, n) != t`
    tells you the limit was hit.
    """
    if limit < 0:
        raise ValueError(f"limit must be 0 or more, got {limit}")
    if limit == 0:
        return text if TOKEN_PATTERN.search(text) is None else ""
    for i, match in enumerate(TOKEN_PATTERN.finditer(text), start=1):
        if i == limit:
            end = match.end()
            return text if TOKEN_PATTERN.search(text, end) is None else text[:end]
    return text


def count_message_tokens(message: dict) -> int:
    """Tokens for one chat message: its text (and any tool calls it carries), plus the overhead."""
    total = TOKENS_PER_MESSAGE
    content = message.get("content")
    if isinstance(content, str):
        total += count_tokens(content)
    elif isinstance(content, list):  # content parts: [{"type": "text", "text": "..."}, ...]
        total += sum(count_tokens(_text(part, "text")) for part in content)
    tool_calls = message.get("tool_calls")
    for call in tool_calls if isinstance(tool_calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        total += count_tokens(_text(function, "name")) + count_tokens(_text(function, "arguments"))
    return total


def _text(part: object, key: str) -> str:
    """part[key] when part is a dict and that is a string, else "": requests are not to be trusted."""
    value = part.get(key) if isinstance(part, dict) else None
    return value if isinstance(value, str) else ""


def count_prompt_tokens(messages: list[dict], tools: list | None = None) -> int:
    """The `prompt_tokens` of a request: every message with its overhead, the reply's start, and the
    `tools` definitions (their JSON text), which a real model also reads as part of its prompt."""
    total = TOKENS_PER_REPLY + sum(count_message_tokens(m) for m in messages if isinstance(m, dict))
    if tools:
        total += count_tokens(json.dumps(tools, ensure_ascii=False))
    return total
