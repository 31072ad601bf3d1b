"""The API key kept out of a reply that arrives in pieces (lesson 14).

A server that echoes the key may split it across two chunks: "...your key is sk-au" then "dit-SECRET...".
`redact` on each chunk alone misses it, as looking for a stop string in each piece alone misses one split the same
way (streamed_stops.py). Two ways to take it out, each the same as `redact` on the whole text:

    SplitKeyRedactor       the text as it is shown: holds back the end of a piece that could be the key's start
    redact_across_chunks   the chunks a reply keeps (`ChatResult.raw`): the key taken out field by field

streaming.py's ReplyStream uses both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tinyagent.errors import MIN_SECRET_CHARS, redact


class SplitKeyRedactor:
    """`redact` for text that arrives in pieces. A server that echoes the key may split it across two chunks
    ("...your key is sk-au" then "dit-SECRET..."), where redacting each chunk alone misses it. As StopCutter holds
    back the start of a stop string, this holds back the end of a piece when it could be the start of the key, until
    the next piece (or the end) shows what it is; the rest of the piece is released at once. Joined, everything
    `feed` and `finish` return equals `redact(whole_text, secret)`, however the text was split.
    """

    def __init__(self, secret: str | None):
        self.secret = secret if secret and len(secret) >= MIN_SECRET_CHARS else ""  # as redact leaves it alone
        self.held = ""

    def feed(self, piece: str) -> str:
        """Take the next piece; return the text that is now safe to release (maybe "")."""
        if not self.secret:
            return piece
        text = redact(self.held + piece, self.secret)
        keep = self._possible_start(text)
        self.held = text[keep:]
        return text[:keep]

    def finish(self) -> str:
        """The text is over: what was held back is not the key, and is released."""
        text, self.held = self.held, ""
        return text

    def _possible_start(self, text: str) -> int:
        """The first position from which the rest of `text` begins the key (len(text) if none does)."""
        secret = self.secret
        at = text.find(secret[0], max(len(text) - len(secret) + 1, 0))
        while at != -1 and not secret.startswith(text[at:]):
            at = text.find(secret[0], at + 1)
        return len(text) if at == -1 else at


def redact_across_chunks(chunks: list[dict], secret: str | None) -> list[dict]:
    """`chunks` (decoded, each already redacted alone) with the key taken out where it falls across them too, in
    place. A field that comes in pieces (the content, a tool call's arguments, a reasoning model's thinking) holds a
    piece in each chunk, at the same place; its pieces joined are its text. A key split across them, "sk-au" at the
    end of one and "dit-SECRET" at the start of the next, is taken out as `redact` takes it out of the joined text:
    "***" where it starts, nothing in the pieces it goes on into. So the chunks, joined field by field, say what the
    reply's text and tool calls say, and hold no more of the key than they do."""
    if not secret or len(secret) < MIN_SECRET_CHARS:  # as redact leaves it alone
        return chunks
    fields: dict[tuple, list[tuple[Any, Any]]] = {}  # each field's pieces, in order: (the dict or list, the key)
    for chunk in chunks:
        for place, holder in _strings_of(chunk):
            fields.setdefault(place, []).append(holder)
    for pieces in fields.values():
        _redact_pieces(pieces, secret)
    return chunks


def _strings_of(chunk: dict) -> Iterator[tuple[tuple, tuple[Any, Any]]]:
    """Each string in `chunk` in the order it is written: its place, the same in every chunk (the keys to it; for
    an item of a list, its `index` (a choice, a tool call), or else its `type` (a part of the content), or else its
    position), and where it is held (the dict or list, and its key or position there)."""
    below: list[tuple[tuple, Any, Any]] = [((), None, chunk)]  # a stack, not recursion: a chunk may be nested deep
    while below:
        place, holder, value = below.pop()
        if isinstance(value, str):
            yield place, holder
            continue
        if isinstance(value, dict):
            inside = [(key, key, item) for key, item in value.items()]
        elif isinstance(value, list):
            inside = [(_list_place(n, item), n, item) for n, item in enumerate(value)]
        else:
            continue
        for name, key, item in reversed(inside):  # taken from the stack in the order they are written
            below.append(((*place, name), (value, key), item))


def _list_place(position: int, item: Any) -> Any:
    """What names an item of a list in every chunk: see _strings_of."""
    if isinstance(item, dict):
        if type(item.get("index")) is int:
            return ("index", item["index"])
        if isinstance(item.get("type"), str):
            return ("type", item["type"])
    return position


def _redact_pieces(pieces: list[tuple[Any, Any]], secret: str) -> None:
    """Rewrite the strings `holder[key]`, the pieces of one text in order, so that they join to `redact` of their
    joined text: each occurrence of the key, as str.replace finds them (left to right, none overlapping), becomes
    "***" in the piece where it starts, and is left out of the pieces it goes on into."""
    texts = [holder[key] for holder, key in pieces]
    joined = "".join(texts)
    if secret not in joined:  # the common case: no key, or only whole ones within a chunk, already redacted
        return
    starts, at = [], joined.find(secret)
    while at != -1:
        starts.append(at)
        at = joined.find(secret, at + len(secret))
    start, first = 0, 0  # where the piece starts in the joined text; the first occurrence not over before it
    for (holder, key), text in zip(pieces, texts, strict=True):
        end = start + len(text)
        while first < len(starts) and starts[first] + len(secret) <= start:
            first += 1
        kept, here, n = [], start, first
        while n < len(starts) and starts[n] < end:  # the occurrences in this piece, whole or in part
            kept.append(joined[here:max(starts[n], start)])
            if starts[n] >= start:
                kept.append("***")
            here = min(starts[n] + len(secret), end)
            n += 1
        if n > first:  # a piece no occurrence touches is left as it is
            holder[key] = "".join(kept) + joined[here:end]
        start = end
