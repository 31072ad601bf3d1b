"""Cutting a document into passages that a search can find and a model can read whole (lesson 16).

Two cuts, in this order:

1. **By headings.** A Markdown document is split at its `#` headings. Each piece keeps the path of headings
   above it ("质量问题退换货 › 期限与检测"), so a passage that never repeats its topic is still found by it,
   and an answer can say which section it quotes. The first `# ` heading, when no other heading comes
   before it, is the document's title, not a section. Only ATX headings (`#` to `######` at the start of a
   line) count, and never inside a fenced code block; a plain-text document has no headings.
2. **By size.** A section longer than `size` characters is cut into pieces of at most `size` characters.
   A cut goes where the text allows: a paragraph break first, then a line break, the end of a sentence
   (。！？!?；; or a full stop before a space), a clause (，,、：:), a space, and only then anywhere. It is never
   earlier than half of `size`, so pieces do not come out tiny. Each piece after the first starts up to
   `overlap` characters before the previous one ended (at the start of a sentence, clause or word inside
   that stretch, if there is one; exactly `overlap` characters back in Chinese with no punctuation), so a
   sentence cut in two is whole in the next piece when it began within those `overlap` characters. A cut
   falls inside a sentence only when no sentence ends in the last half of a piece: a sentence longer than
   that (200 characters at the defaults) arrives in two halves, however long the overlap.

Sizes count characters, not tokens: a Chinese character is one character and about one token, an English
word about five characters and one token (lesson 08 counts tokens exactly). Headings are not counted in
`size`: they travel beside the text, as the chunk's `section`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tinyagent.shop.knowledge import SECTION_SEPARATOR

# The defaults for the shop's policy documents: most sections fit in one chunk, a long one is cut.
CHUNK_CHARS = 400
OVERLAP_CHARS = 80

# The heading's text is everything after its marks; a closing run of #s is taken off by hand (heading_of): a lazy
# text followed by optional spaces and #s made a line of 32,000 spaces take 7 s, a square of its length.
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")

# Where a cut may go, best first: the text may end right after one of these.
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LINE = re.compile(r"\n")
_SENTENCE = re.compile(r"[。！？!?；;]|\.(?=\s)")
_CLAUSE = re.compile(r"[，,、：:]")
_SPACE = re.compile(r"\s")
_BOUNDARIES = (_PARAGRAPH, _LINE, _SENTENCE, _CLAUSE, _SPACE)


@dataclass(frozen=True)
class Section:
    """The text under one heading path (an empty path: text before the first section heading)."""

    path: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Chunk:
    """One passage of a document, as it is stored and searched.

    document: the document's name ("zh/returns.md"): importing it again replaces all its chunks
    title:    the document's title ("退换货政策")
    section:  the heading path above the text, outermost first ("质量问题退换货", "期限与检测")
    position: the chunk's place in the document, from 1
    text:     the passage itself
    """

    document: str
    title: str
    section: tuple[str, ...]
    position: int
    text: str

    @property
    def heading(self) -> str:
        """The section path as one line: "质量问题退换货 › 期限与检测" ("" before the first heading)."""
        return SECTION_SEPARATOR.join(self.section)


def markdown_sections(text: str) -> tuple[str | None, list[Section]]:
    """The document's title (its leading `# ` heading, or None) and its sections, in order.

    A heading starts a new section; a section with no text of its own (a heading directly followed by a
    subheading) is left out, but its heading stays in the paths below it.
    """
    title: str | None = None
    path: list[tuple[int, str]] = []  # (level, heading) from the outermost down
    sections: list[Section] = []
    lines: list[str] = []
    fence: str | None = None
    seen_heading = False

    def close() -> None:
        body = "\n".join(lines).strip()
        if body:
            sections.append(Section(tuple(name for _, name in path), body))
        lines.clear()

    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if marker and (fence is None or marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence)):
            fence = marker.group(1) if fence is None else None
            lines.append(line)
            continue
        heading = None if fence else heading_of(line)
        if heading is None:
            lines.append(line)
            continue
        level, name = heading
        if level == 1 and not seen_heading and title is None:
            title = name  # the document's title: text above it (rare) stays a section without a path
            seen_heading = True
            close()
            continue
        seen_heading = True
        close()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, name))
    close()
    return title, sections


def heading_of(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line ("## 期限与检测 ##" is (2, "期限与检测")), or None for any other line. A
    closing run of #s counts only after a space ("C#" stays "C#") and when text is left before it ("# #" is "#")."""
    found = _HEADING.match(line)
    if found is None:
        return None
    text = found.group(2).rstrip(" \t")
    before_closing = text.rstrip("#")
    if before_closing != text and before_closing.strip() and before_closing[-1] in " \t":
        text = before_closing
    return len(found.group(1)), text.strip()


def text_sections(text: str) -> tuple[str | None, list[Section]]:
    """A plain-text document: its first line is the title when it is short and a blank line follows it."""
    head, blank, rest = text.strip().partition("\n")
    if blank and rest.startswith(("\n", "\r\n")) and 0 < len(head.strip()) <= 80:
        return head.strip(), [Section((), rest.strip())] if rest.strip() else []
    return None, [Section((), text.strip())] if text.strip() else []


def split_spans(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[tuple[int, int]]:
    """Where to cut `text`: (start, end) of each piece, in order, as the module docstring says.

    Every piece is at most `size` characters; together they cover the whole text; each piece after the
    first starts inside the last `overlap` characters of the one before.
    """
    check_sizes(size, overlap)
    spans: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > size:
        end = _cut(text, start + max(1, size // 2), start + size)
        spans.append((start, end))
        start = max(_overlap_start(text, max(end - overlap, start + 1), end), start + 1)
    spans.append((start, len(text)))
    return spans


def check_sizes(size: int, overlap: int) -> None:
    """`size` and `overlap` as `split_spans` needs them, or ValueError saying what is wrong."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 20:
        raise ValueError(f"a chunk size is a whole number of characters, at least 20; got {size!r}")
    if not isinstance(overlap, int) or isinstance(overlap, bool) or not 0 <= overlap <= size // 2:
        default = f" (the default, {OVERLAP_CHARS}: give a smaller overlap with this size)" \
            if overlap == OVERLAP_CHARS else ""
        raise ValueError(f"the overlap must be between 0 and half the chunk size ({size // 2}); got {overlap!r}"
                         f"{default}")


def _cut(text: str, earliest: int, latest: int) -> int:
    """The end of a piece: right after the best boundary in text[earliest:latest], the last one of its kind."""
    for boundary in _BOUNDARIES:
        ends = [match.end() for match in boundary.finditer(text, earliest - 1, latest)]
        if ends:
            return ends[-1]
    return latest


def _overlap_start(text: str, earliest: int, end: int) -> int:
    """Where the next piece starts: the first sentence, clause or word start at or after `earliest`."""
    if earliest >= end:
        return end
    for boundary in _BOUNDARIES:
        starts = [match.end() for match in boundary.finditer(text, earliest - 1, end) if earliest <= match.end() < end]
        if starts:
            return starts[0]
    return earliest


def split_text(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
    """`text` cut into pieces as `split_spans` says, each without the whitespace at its ends."""
    return [piece for start, end in split_spans(text, size, overlap) if (piece := text[start:end].strip())]


def chunk_document(
    name: str,
    text: str,
    *,
    kind: str = "markdown",
    title: str | None = None,
    size: int = CHUNK_CHARS,
    overlap: int = OVERLAP_CHARS,
) -> list[Chunk]:
    """The chunks of one document: sections by heading (Markdown), then pieces of at most `size` characters.

    `kind` is "markdown" or "text". The title is `title` if given, else the one the document states,
    else `name` without its folder and extension.
    """
    check_sizes(size, overlap)
    if kind not in ("markdown", "text"):
        raise ValueError(f'a document is "markdown" or "text", got {kind!r}')
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # a Windows file's headings are headings too
    stated, sections = markdown_sections(text) if kind == "markdown" else text_sections(text)
    title = title or stated or _stem(name)
    pieces = [(section.path, piece) for section in sections for piece in split_text(section.text, size, overlap)]
    return [Chunk(name, title, path, position, piece) for position, (path, piece) in enumerate(pieces, start=1)]


def _stem(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base.strip(".") else base
