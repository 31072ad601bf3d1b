"""Text that can always be printed, saved and sent: lone UTF-16 surrogates replaced.

JSON may spell half of a UTF-16 pair on its own ("\\ud800"), and Python's json module turns it into a
str that cannot be encoded as UTF-8: printing it, saving it or sending it raises UnicodeEncodeError,
far from where it came in. tinyagent repairs text where it enters (a model's reply, a tool's result,
the question, a request about to be sent) by replacing each lone surrogate with U+FFFD, the
replacement character. The meaning is already lost at that point; the run goes on.

`one_line` is for text a person must read as it is, one line of it (what a gate asks, what an outbox sent): a
line break, a terminal's escape sequence or a bidi override in it is shown, not obeyed.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # how JSON spells one: \\ud800 to \\udfff


def json_may_hold_surrogates(text: str) -> bool:
    """Whether JSON `text` may decode to a str with a surrogate: only a \\uD800-\\uDFFF escape spells one
    (text decoded from UTF-8 holds none). False lets a reader skip `replace_lone_surrogates` on what it decoded,
    which walks every value: a streamed reply is read chunk by chunk, dozens of times a reply."""
    return "\\u" in text and _ESCAPED_SURROGATE.search(text) is not None


LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a valid pair, decoded, is one character above U+FFFF


def holds_surrogate(text: str) -> bool:
    """Whether `text` holds a lone surrogate (a valid pair decoded from JSON is one character, not two)."""
    return LONE_SURROGATE.search(text) is not None


def replace_lone_surrogates(value: Any) -> Any:
    """`value` with every str in it (dict keys too, at any depth) made encodable as UTF-8.

    A high and a low surrogate side by side are joined into the one character they spell; any other
    surrogate becomes U+FFFD. Values that hold no surrogate come back as they are.
    """
    if isinstance(value, str):
        if not holds_surrogate(value):
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {replace_lone_surrogates(key): replace_lone_surrogates(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(replace_lone_surrogates(item) for item in value)
    return value


# Characters a text may hold that would end a line or change how one reads, in Unicode's categories: Cc
# (controls: \n, \r, \x85, ESC, which a terminal obeys), Zl and Zp (U+2028, U+2029, which str.splitlines and
# many viewers break on), Cf (format: the bidi overrides that reorder what is shown) and Cs (a lone surrogate,
# which cannot even be printed).
HIDDEN_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cf", "Cs"})
KEPT = frozenset({"\u200d"})  # the zero-width joiner holds emoji such as 👩‍💻 together
SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """`text` as one line that shows what it holds: a newline as \\n, a backslash as \\\\, other hidden
    characters as \\xNN, \\uNNNN or \\UNNNNNNNN, as Python writes them; everything else (Chinese, emoji) as it
    is. The invisible tag characters (U+E0020 to U+E007F) are hidden characters too, though a few flags, such as
    England's, are made with them: they can carry text a reader does not see."""
    return "".join(_shown(ch) for ch in text)


def terminal_text(text: str) -> str:
    """`text` as a terminal or a notebook may print it: its lines and tabs as they are, every other hidden character
    escaped as `one_line` escapes it. A model's reply, a tool's result or a server's error message may hold ESC
    sequences that clear the screen or move the cursor, a carriage return that writes over the line, or a bidi
    override: printed raw, they could hide what the run did (a refund) behind text of their own."""
    return "".join(ch if ch in "\n\t" or not _hidden(ch) else SHORT_ESCAPES.get(ch) or _escape(ch) for ch in text)


def hidden_character(text: str) -> str | None:
    """The first character of `text` that a reader would not see as written, or None: a NUL, a terminal's escape,
    a bidi override, a lone surrogate, anything `terminal_text` escapes. Whitespace (a line break, a tab) is seen,
    and is not one. For text that is kept or sent (a message, a refund's reason), where such a character would
    reach its reader unseen."""
    return next((ch for ch in text if not ch.isspace() and terminal_text(ch) != ch), None)


def json_shown(value: Any) -> str:
    """`value` as JSON a person reads (a question put to them, a log line): Chinese and emoji as they are, and every
    hidden character (a bidi override that would reorder what is shown, a tag character) as its JSON escape, which
    any JSON reader reads back as the same character. json.dumps(ensure_ascii=False) escapes only the controls below
    U+0020."""
    text = json.dumps(value, ensure_ascii=False)
    return "".join(json.dumps(ch)[1:-1] if _hidden(ch) else ch for ch in text)


def _hidden(ch: str) -> bool:
    return ch not in KEPT and unicodedata.category(ch) in HIDDEN_CATEGORIES


def _shown(ch: str) -> str:
    if ch in SHORT_ESCAPES:
        return SHORT_ESCAPES[ch]
    return _escape(ch) if _hidden(ch) else ch


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def utf8_json_text(raw: bytes) -> str:
    """A request body of JSON as text, read as UTF-8 (a byte order mark before it skipped), or UnicodeDecodeError:
    RFC 8259 says JSON exchanged between systems MUST be UTF-8, and every client of the course's servers sends it.
    json.loads, given bytes, also reads UTF-16 and UTF-32 when its NULs say so (and UTF-16 without NULs in the
    first bytes is still valid UTF-8): both servers take what json.detect_encoding reads as UTF-8, and only that."""
    encoding = json.detect_encoding(raw)
    if encoding not in ("utf-8", "utf-8-sig"):
        raise UnicodeDecodeError(encoding, raw, 0, min(len(raw), 4), "JSON is exchanged in UTF-8 only")
    return raw.decode(encoding)
