"""Importing Markdown and plain-text documents into the shop's knowledge base (lesson 16).

    shop.import_documents("docs/policies")       # every .md and .txt file below the folder
    shop.import_documents("notes/returns.md")    # one file

A document is read, checked and cut into chunks (chunking.py) before anything is written, and all the
documents of one call are written in one transaction: a bad file anywhere means nothing of the call is
imported, never half a document. Each chunk becomes a row of the same index the built-in entries live in
(knowledge.py), with its document, section and position beside it.

A document is known by its name: its path below the folder given (`zh/returns.md`), or the file's own name
when a file is given. Importing a name again replaces that document's chunks, all of them, so nothing
stale survives (a document that shrank loses its old tail); importing it unchanged writes nothing. What
"unchanged" means is the fingerprint of its chunks: the same text cut another way is a change too.

Refused, each with a one-line `DocumentError` that names the file: a path that does not exist, a folder
with no documents in it, a file that is not .md/.markdown/.txt, one larger than `MAX_DOCUMENT_BYTES`, one
that is not UTF-8 text, and one with no text to index.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tinyagent.shop.chunking import CHUNK_CHARS, OVERLAP_CHARS, SECTION_SEPARATOR, Chunk, chunk_document
from tinyagent.shop.knowledge import indexed_terms
from tinyagent.shop.shop_errors import ShopError

# The largest document accepted. The shop's policies are a few kilobytes; a megabyte is a book. Anything
# bigger is more likely a wrong file (a log, a database dump) than a policy, and would hold the shop's write
# lock while thousands of chunks are indexed.
MAX_DOCUMENT_BYTES = 1_000_000

KINDS = {".md": "markdown", ".markdown": "markdown", ".txt": "text"}


class DocumentError(ShopError, ValueError):
    """A document cannot be imported; the message names it and says why, in one line."""


@dataclass(frozen=True)
class ImportResult:
    """What importing one document did. status: "added", "replaced" or "unchanged"."""

    document: str
    title: str
    chunks: int
    status: str


def document_files(path: str | os.PathLike[str]) -> list[tuple[Path, str]]:
    """(file, name) for `path`: the file itself, or every document below a folder, sorted by name.

    Hidden files and folders (a name starting with "."), such as JupyterLab's `.ipynb_checkpoints` copies,
    are not documents of the folder. A link in the folder to a file outside it is refused: a folder of documents
    from anyone could otherwise make any file this process can read (a key, a password file) searchable.
    """
    path = Path(path)
    if not path.exists():
        raise DocumentError(f"{path}: no such file or folder")
    if path.is_dir():
        found = sorted(
            (file, file.relative_to(path).as_posix())
            for file in path.rglob("*")
            if file.suffix.lower() in KINDS and file.is_file()
            and not any(part.startswith(".") for part in file.relative_to(path).parts)
        )
        if not found:
            raise DocumentError(f"{path}: the folder holds no .md or .txt documents")
        inside = path.resolve()
        for file, _ in found:
            if not file.resolve().is_relative_to(inside):
                raise DocumentError(f"{file}: a link to {file.resolve()}, outside the folder; import that file by its "
                                    "own name if it is a document")
        return [(file, name) for file, name in found]
    return [(path, path.name)]


def read_document(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(kind, text) of one document file, or `DocumentError` saying why it cannot be imported."""
    path = Path(path)
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise DocumentError(f"{path}: only Markdown (.md) and plain-text (.txt) documents can be imported")
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError(f"{path}: not a regular file")
        if info.st_size > MAX_DOCUMENT_BYTES:  # checked before reading: a huge file is never loaded
            raise DocumentError(
                f"{path}: {info.st_size:,} bytes is more than the {MAX_DOCUMENT_BYTES:,} a document may have;"
                " split it into smaller documents"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise DocumentError(f"{path}: no such file") from None
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return kind, decode_document(data, str(path))


def decode_document(data: bytes, where: str) -> str:
    """The bytes as text: UTF-8 (a leading byte-order mark is dropped), line ends made plain."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"{where}: {len(data):,} bytes is more than the {MAX_DOCUMENT_BYTES:,} a document "
                            "may have; split it into smaller documents")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{where}: not UTF-8 text (byte {exc.start} cannot be read); save it as UTF-8") from None
    if "\0" in text:
        raise DocumentError(f"{where}: holds NUL characters, so it is not a text document")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def load_documents(
    paths: Iterable[str | os.PathLike[str]], size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS
) -> list[Chunk]:
    """Read, check and chunk every document `paths` name, without writing anything; the chunks in order."""
    chunks: list[Chunk] = []
    seen: dict[str, Path] = {}
    for path in paths:
        for file, name in document_files(path):
            if name in seen:
                if seen[name].resolve() == file.resolve():
                    continue  # the same file named twice (a folder and a file in it): imported once
                # Not "import them one at a time": the second import would replace the first, named the same.
                raise DocumentError(f"{file}: two documents would be named {name!r} ({seen[name]} and {file});"
                                    " rename one, or import a folder that holds both (each name then starts"
                                    " with the folder it is in)")
            seen[name] = file
            kind, text = read_document(file)
            chunks.extend(chunks_of(name, text, kind, size, overlap, where=str(file)))
    return chunks


def chunks_of(name: str, text: str, kind: str = "markdown", size: int = CHUNK_CHARS,
              overlap: int = OVERLAP_CHARS, where: str | None = None) -> list[Chunk]:
    """The chunks of a document given as text, or `DocumentError` if it has nothing to index."""
    if not text.strip():
        raise DocumentError(f"{where or name}: the document is empty")
    chunks = chunk_document(name, text, kind=kind, size=size, overlap=overlap)
    if not chunks:
        raise DocumentError(f"{where or name}: the document has headings but no text under them")
    return chunks


def fingerprint(chunks: Sequence[Chunk]) -> str:
    """What a document's chunks hold (title, sections, positions, text): equal only for the same import."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(json.dumps([chunk.title, chunk.section, chunk.position, chunk.text],
                                 ensure_ascii=False).encode() + b"\0")
    return digest.hexdigest()


def store_documents(conn: sqlite3.Connection, chunks: Sequence[Chunk], now: str) -> list[ImportResult]:
    """Write the chunks, document by document, replacing what each document had. The caller owns the transaction."""
    by_document: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_document.setdefault(chunk.document, []).append(chunk)
    results = []
    for name, own in by_document.items():
        _check_chunks(name, own)
        results.append(_store_one(conn, name, own, now))
    return results


def _check_chunks(name: str, chunks: list[Chunk]) -> None:
    if not name.strip():
        raise DocumentError("a document needs a name")
    positions = [chunk.position for chunk in chunks]
    if positions != list(range(1, len(chunks) + 1)):
        raise DocumentError(f"{name}: chunk positions must be 1, 2, 3, ... in order; got {positions[:10]}")
    if len({chunk.title for chunk in chunks}) != 1:
        raise DocumentError(f"{name}: every chunk of a document must carry the same title")
    if any(not chunk.text.strip() for chunk in chunks):
        raise DocumentError(f"{name}: a chunk has no text")


def _store_one(conn: sqlite3.Connection, name: str, chunks: list[Chunk], now: str) -> ImportResult:
    title, mark = chunks[0].title, fingerprint(chunks)
    row = conn.execute("SELECT fingerprint FROM documents WHERE name = ?", (name,)).fetchone()
    if row is not None and row[0] == mark:
        return ImportResult(name, title, len(chunks), "unchanged")
    delete_document(conn, name)
    conn.execute(
        "INSERT INTO documents (name, title, fingerprint, chunks, imported_at) VALUES (?, ?, ?, ?, ?)",
        (name, title, mark, len(chunks), now),
    )
    for chunk in chunks:
        heading = SECTION_SEPARATOR.join(chunk.section)
        rowid = conn.execute(
            "INSERT INTO knowledge (title, content, keywords) VALUES (?, ?, '')", (chunk.title, chunk.text)
        ).lastrowid
        conn.execute(
            "INSERT INTO knowledge_sources (knowledge_id, document, section, position) VALUES (?, ?, ?, ?)",
            (rowid, name, heading, chunk.position),
        )
        conn.execute(
            "INSERT INTO knowledge_fts (rowid, title, body) VALUES (?, ?, ?)",
            (rowid, *indexed_terms(f"{chunk.title} {heading}", chunk.text)),
        )
    return ImportResult(name, title, len(chunks), "added" if row is None else "replaced")


def delete_document(conn: sqlite3.Connection, name: str) -> bool:
    """Remove a document and every chunk of it. True if there was one. The caller owns the transaction."""
    ids = [row[0] for row in conn.execute("SELECT knowledge_id FROM knowledge_sources WHERE document = ?", (name,))]
    for rowid in ids:
        conn.execute("DELETE FROM knowledge_fts WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM knowledge WHERE id = ?", (rowid,))
    conn.execute("DELETE FROM knowledge_sources WHERE document = ?", (name,))
    return conn.execute("DELETE FROM documents WHERE name = ?", (name,)).rowcount > 0


def list_documents(conn: sqlite3.Connection) -> list[dict]:
    """Every imported document, by name: {"document", "title", "chunks", "importedAt"}."""
    rows = conn.execute("SELECT name, title, chunks, imported_at FROM documents ORDER BY name").fetchall()
    return [{"document": name, "title": title, "chunks": chunks, "importedAt": at} for name, title, chunks, at in rows]
