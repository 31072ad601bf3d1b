"""The shop's after-sales knowledge base, and how `searchKnowledge` ranks it.

Ranking is SQLite's own: an FTS5 table ordered by `bm25()`. The one trick is tokenizing Chinese. FTS5's
default `unicode61` tokenizer splits on spaces and punctuation, and Chinese has neither between words, so a
whole sentence would become one token. Instead we feed FTS5 text that is already split:

- every run of Han characters becomes its overlapping two-character pieces ("签收次日" -> "签收 收次 次日"),
  because most Chinese words are two characters long and a bigram index finds them without a dictionary;
- every Latin word or number is kept, lower-cased ("Warranty" -> "warranty").

A query goes through the same function, and its pieces are joined with OR: an entry that shares more (and
rarer) pieces with the question scores better. Each entry also carries English keywords, because an English
question can only match English words.

Since lesson 16 the same index also holds imported documents, cut into chunks (chunking.py, documents.py):
`search_passages` returns both kinds as `Passage`s, a chunk with its document, section and position, so an
answer can cite it. `search` is the shape the default searchKnowledge has always shown.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import unicodedata
from dataclasses import dataclass

SECTION_SEPARATOR = " › "


@dataclass(frozen=True)
class KnowledgeEntry:
    """One policy: a Chinese title and text for the customer, English keywords so English questions find it,
    and the same policy in English (`title_en`, `content_en`). searchKnowledge returns the Chinese text, as the
    shop stores it; a model answering in English says it in English, as the classroom model does from these."""

    title: str
    content: str
    keywords: str = ""
    title_en: str = ""
    content_en: str = ""


# The day limits are written "N 天" (in English "N days") on purpose: the classroom model reads them out of the
# Observation.
KNOWLEDGE_BASE: tuple[KnowledgeEntry, ...] = (
    KnowledgeEntry(
        title="七天无理由退货政策",
        content="签收次日起 7 天内，商品完好、配件齐全、不影响二次销售，可申请无理由退货，寄回运费由买家承担；"
        "开封试用不影响退货，人为损坏的商品不适用。",
        keywords="return returns no reason seven 7 days unused complete accessories policy",
        title_en="Seven-day no-reason returns",
        content_en="Within 7 days from the day after delivery, an item that is undamaged, complete with its "
        "accessories and fit to be sold again can be returned without a reason; the buyer pays the "
        "shipping back. Opening it to try it out is fine; an item the buyer damaged cannot be returned "
        "this way.",
    ),
    KnowledgeEntry(
        title="质量问题退换货",
        content="签收次日起 15 天内出现性能故障（质量问题，例如扫地机不回充、无法开机、异响），经售后检测确认后"
        "可退货或换货，往返运费由商家承担；超过 15 天、在保修期内可免费维修。",
        keywords="quality problem defect faulty broken not charging return exchange 15 days inspection policy",
        title_en="Quality problems: returns and exchanges",
        content_en="Within 15 days from the day after delivery, a performance fault (a quality problem, such as a "
        "robot vacuum that does not go back to its dock, will not turn on or makes a grinding noise) can "
        "be returned or exchanged once the after-sales team confirms it; the shop pays the shipping both "
        "ways. After those 15 days, it is repaired free of charge within the warranty.",
    ),
    KnowledgeEntry(
        title="保修政策",
        content="整机保修 1 年（365 天），自签收次日起计算，保修期内的非人为故障免费维修；"
        "边刷、滤网、尘袋等耗材不在保修范围内，进水、摔落等人为损坏需付费维修。",
        keywords="warranty guarantee one year 365 days free repair consumables",
        title_en="Warranty",
        content_en="The whole machine has a 1-year (365-day) warranty, counted from the day after delivery; faults "
        "the customer did not cause are repaired free of charge within it. Consumables such as side "
        "brushes, filters and dust bags are not covered; damage from water or a fall is repaired for a "
        "fee.",
    ),
    KnowledgeEntry(
        title="配送与运费",
        content="全场满 99 元包邮，不满 99 元收取运费 8 元；现货商品下单后 48 小时内发货，"
        "默认使用顺丰速运或圆通速递，发货后可凭运单号查询物流。",
        keywords="shipping delivery time how long free shipping fee courier dispatch 48 hours tracking",
        title_en="Shipping and fees",
        content_en="Shipping is free on orders of 99 yuan or more; orders under 99 yuan pay 8 yuan. Items in stock "
        "ship within 48 hours of the order, by SF Express or YTO Express, and can be tracked with the "
        "tracking number once shipped.",
    ),
    KnowledgeEntry(
        title="退款到账时间",
        content="退款审核通过后 1-3 个工作日原路退回到付款账户；信用卡退款以发卡银行入账时间为准，"
        "退款进度可凭退款单号查询。",
        keywords="refund money back how long time arrive business days payment account",
        title_en="When a refund arrives",
        content_en="Once a refund is approved, the money goes back to the account it was paid from within 1-3 "
        "business days; for a credit card, the issuing bank's posting date applies. Follow a refund with "
        "its refund id.",
    ),
    KnowledgeEntry(
        title="换货流程",
        content="先提交换货申请，售后检测确认后将商品寄回，仓库收到退件后 48 小时内发出同型号新品；"
        "换货仅限同型号、同规格的商品，想换其他型号需先办理退款再重新下单。",
        keywords="exchange replacement replace swap process steps same model",
        title_en="How an exchange works",
        content_en="Apply for an exchange first; once the after-sales check confirms it, send the item back, and the "
        "warehouse ships a new one of the same model within 48 hours of receiving it. Exchanges are for "
        "the same model and specification only: for another model, get a refund and place a new order.",
    ),
    KnowledgeEntry(
        title="发票开具",
        content="订单签收后可在“我的订单”中申请电子增值税普通发票，开具后发送到预留邮箱；"
        "订单退款后发票同时作废。",
        keywords="invoice receipt fapiao tax vat email",
        title_en="Invoices",
        content_en="Once an order is delivered, apply for an electronic VAT invoice under \"My orders\"; it is sent to "
        "the email address on the account. When an order is refunded, its invoice is cancelled too.",
    ),
    KnowledgeEntry(
        title="取消订单",
        content="订单发货前可随时取消，取消后款项全额原路返回；已发货的订单无法取消，可拒收快件，"
        "或签收后按售后政策申请退换。",
        keywords="cancel cancellation order not shipped yet before shipping reject parcel",
        title_en="Cancelling an order",
        content_en="An order can be cancelled at any time before it ships, and the full amount goes back the way it "
        "was paid; a shipped order cannot be cancelled: refuse the parcel, or return it after delivery "
        "under the after-sales policy.",
    ),
)

# The shape of the tables. 2: imported documents share the index (lesson 16). A new value rebuilds old files.
INDEX_LAYOUT = 2

# Han characters: CJK Unified Ideographs (U+4E00-U+9FFF) and Extension A (U+3400-U+4DBF).
HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]+")
_LATIN_WORD = re.compile(r"[a-z0-9]+")


def han_runs(text: str) -> list[str]:
    """The runs of Han characters in `text`, in order: "签收次日起 7 天" gives ["签收次日起", "天"]."""
    return HAN_RUN.findall(text)


# Words that appear in almost every English question and say nothing about the topic.
_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "at", "be", "can", "do", "does", "for", "have", "how", "i", "in", "is", "it",
    "me", "my", "of", "on", "or", "the", "to", "what", "when", "where", "will", "with", "you",
})


def search_terms(text: str) -> list[str]:
    """Split text the way the index does: Han bigrams (a lone Han character stays itself) and Latin words.

    >>> search_terms("签收次日起 7 天 Warranty")
    ['签收', '收次', '次日', '日起', '天', '7', 'warranty']
    """
    text = unicodedata.normalize("NFKC", text)  # ｗａｒｒａｎｔｙ and ７ as a Chinese keyboard's full-width mode types them
    terms: list[str] = []
    for run in han_runs(text):
        if len(run) == 1:
            terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    terms.extend(_LATIN_WORD.findall(text.lower()))
    return terms


def match_query(question: str) -> str:
    """Turn a question into an FTS5 MATCH expression: its distinct terms, quoted, joined with OR.

    Returns "" when nothing searchable is left (only punctuation or stop words).
    Each term is quoted, so FTS5 reads it as a string and nothing in it as query syntax. (The terms are lower-case
    letters, digits and Han characters, and FTS5's operators AND, OR, NOT and NEAR are upper-case, so a term such
    as "or" would not be one anyway.)
    """
    return " OR ".join(_fts_term(term) for term in query_terms(question))


def query_terms(question: str) -> list[str]:
    """The distinct terms of a question, stop words left out, in the order they first appear."""
    seen: dict[str, None] = {}  # a dict keeps first-seen order, so the expression is stable
    for term in search_terms(question):
        if term not in _STOP_WORDS:
            seen.setdefault(term)
    return list(seen)


def _fts_term(term: str) -> str:
    # The index holds bigrams, so a lone Han character ("退") matches as a prefix ("退货", "退款", ...).
    if len(term) == 1 and HAN_RUN.fullmatch(term):
        return f'"{term}"*'
    return f'"{term}"'


def create_index(
    conn: sqlite3.Connection, entries: tuple[KnowledgeEntry, ...] | None = None, schema: str = "main"
) -> None:
    """(Re)build the knowledge tables in `conn`: `knowledge` holds the text, `knowledge_fts` the terms.

    `entries` defaults to `KNOWLEDGE_BASE`. The caller owns the transaction. The fingerprint of what was
    indexed (`knowledge_hash`) is stored beside it, so `index_is_current` can tell whether a database made
    by another version needs rebuilding: a database must not keep serving stale policies, and one that is
    current must not be written to at all (it may be read-only). `schema="temp"` builds a private copy for
    this connection alone, which hides the file's own tables: how a read-only database serves fresh policies.

    Imported documents (lesson 16, documents.py) share the tables: each of their chunks is a `knowledge` row
    with a `knowledge_sources` row naming its document, section and position. A rebuild replaces the
    built-in entries, keeps the chunks, and splits every row into terms again.
    """
    entries = KNOWLEDGE_BASE if entries is None else entries
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {schema}.knowledge ("
        " id INTEGER PRIMARY KEY, title TEXT NOT NULL, content TEXT NOT NULL, keywords TEXT NOT NULL)"
    )
    # Two columns so bm25() can weigh a hit in the title above a hit in the body.
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.knowledge_fts USING fts5(title, body)")
    conn.execute(f"CREATE TABLE IF NOT EXISTS {schema}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    _create_document_tables(conn, schema)
    if schema == "temp":
        _copy_documents_from_main(conn)
    # The built-in entries are the rows that no document owns.
    conn.execute(
        f"DELETE FROM {schema}.knowledge WHERE id NOT IN (SELECT knowledge_id FROM {schema}.knowledge_sources)"
    )
    conn.execute(f"DELETE FROM {schema}.knowledge_fts")
    for entry in entries:  # ids 1, 2, ... in a new database: the order ties are broken in
        conn.execute(
            f"INSERT INTO {schema}.knowledge (title, content, keywords) VALUES (?, ?, ?)",
            (entry.title, entry.content, entry.keywords),
        )
    rows = conn.execute(
        f"SELECT k.id, k.title, k.content, k.keywords, s.section FROM {schema}.knowledge AS k"
        f" LEFT JOIN {schema}.knowledge_sources AS s ON s.knowledge_id = k.id ORDER BY k.id"
    ).fetchall()
    for rowid, title, content, keywords, section in rows:
        heading = title if section is None else f"{title} {section}"
        conn.execute(
            f"INSERT INTO {schema}.knowledge_fts (rowid, title, body) VALUES (?, ?, ?)",
            (rowid, *indexed_terms(heading, f"{content} {keywords}")),
        )
    conn.execute(
        f"INSERT OR REPLACE INTO {schema}.meta (key, value) VALUES ('knowledge_hash', ?)", (knowledge_hash(entries),)
    )


def _create_document_tables(conn: sqlite3.Connection, schema: str) -> None:
    """`documents`: one row per imported document; `knowledge_sources`: where each chunk comes from."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {schema}.documents ("
        " name TEXT PRIMARY KEY, title TEXT NOT NULL, fingerprint TEXT NOT NULL,"
        " chunks INTEGER NOT NULL, imported_at TEXT NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {schema}.knowledge_sources ("
        " knowledge_id INTEGER PRIMARY KEY, document TEXT NOT NULL, section TEXT NOT NULL, position INTEGER NOT NULL)"
    )


def _copy_documents_from_main(conn: sqlite3.Connection) -> None:
    """A private (temp) index must hold the file's imported documents too, or they would vanish from search."""
    tables = {row[0] for row in conn.execute("SELECT name FROM main.sqlite_schema WHERE type = 'table'")}
    if not {"knowledge", "documents", "knowledge_sources"} <= tables:
        return
    conn.execute("DELETE FROM temp.knowledge")
    conn.execute("DELETE FROM temp.knowledge_sources")
    conn.execute("DELETE FROM temp.documents")
    conn.execute("INSERT INTO temp.documents SELECT * FROM main.documents")
    conn.execute("INSERT INTO temp.knowledge_sources SELECT * FROM main.knowledge_sources")
    conn.execute(
        "INSERT INTO temp.knowledge SELECT * FROM main.knowledge"
        " WHERE id IN (SELECT knowledge_id FROM main.knowledge_sources)"
    )


def indexed_terms(title: str, body: str) -> tuple[str, str]:
    """The title and body text that go into the FTS5 table: terms separated by spaces."""
    return " ".join(search_terms(title)), " ".join(search_terms(body))


def _indexed(entry: KnowledgeEntry) -> tuple[str, str]:
    return indexed_terms(entry.title, f"{entry.content} {entry.keywords}")


def knowledge_hash(entries: tuple[KnowledgeEntry, ...] | None = None) -> str:
    """A fingerprint of the index `entries` make: their text and the terms it is split into.

    Hashing the terms too means a change to `search_terms` (how text is tokenized) also rebuilds the index;
    hashing `INDEX_LAYOUT` means a database made before the tables changed is rebuilt into the new ones.
    """
    entries = KNOWLEDGE_BASE if entries is None else entries
    digest = hashlib.sha256(f"tables {INDEX_LAYOUT}\0".encode())
    for entry in entries:
        for text in (entry.title, entry.content, entry.keywords, *_indexed(entry)):
            digest.update(text.encode() + b"\0")
    return digest.hexdigest()


def index_is_current(conn: sqlite3.Connection, entries: tuple[KnowledgeEntry, ...] | None = None) -> bool:
    """Whether `conn` already holds the index `entries` make (read only: it never writes)."""
    try:
        row = conn.execute("SELECT value FROM main.meta WHERE key = 'knowledge_hash'").fetchone()
    except sqlite3.OperationalError:  # no meta table: a new database, or one made before the hash was kept
        return False
    return row is not None and row[0] == knowledge_hash(entries)


TITLE_WEIGHT = 2.0  # a question that names the topic ("保修") should find the entry titled with it first


@dataclass(frozen=True)
class Passage:
    """One search result: a built-in entry, or a chunk of an imported document with where it comes from.

    title:    the entry's title, or the document's title
    content:  the text
    score:    higher is better, 3 decimals: minus SQLite's bm25, or the re-rank score after `rerank.py`
    bm25:     minus SQLite's bm25, whatever ordered the results
    document: the document's name ("zh/returns.md"); None for a built-in entry
    section:  the heading path ("质量问题退换货 › 期限与检测"); "" for an entry or text before any heading
    position: the chunk's place in its document, from 1; None for an entry
    """

    title: str
    content: str
    score: float
    bm25: float
    document: str | None = None
    section: str = ""
    position: int | None = None

    @property
    def source(self) -> str | None:
        """Where the passage comes from, as one short key: "zh/returns.md#5" (None for a built-in entry)."""
        return None if self.document is None else f"{self.document}#{self.position}"

    def as_result(self) -> dict:
        """The dict the default searchKnowledge shows: {"title", "content", "score"}, as before lesson 16.

        A chunk's title names its section too ("退换货政策 › 质量问题退换货"), the only place that shape has for it.
        """
        title = f"{self.title}{SECTION_SEPARATOR}{self.section}" if self.section else self.title
        return {"title": title, "content": self.content, "score": self.score}

    def as_cited(self) -> dict:
        """The dict the citing searchKnowledge shows: the title, section and source to name, then the text."""
        return {"title": self.title, "section": self.section, "source": self.source, "content": self.content,
                "score": self.score}


# Which rows a search may return: everything, only chunks of imported documents, or only built-in entries.
SCOPES = {
    "all": "",
    "documents": " AND s.document IS NOT NULL",
    "entries": " AND s.document IS NULL",
}


def search_passages(conn: sqlite3.Connection, question: str, limit: int = 3, scope: str = "all") -> list[Passage]:
    """The best `limit` passages for `question`, best first, ranked by bm25 (title hits weigh double)."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    expression = match_query(question)
    if not expression or limit < 1:
        return []
    rows = conn.execute(
        "SELECT k.title, k.content, bm25(knowledge_fts, ?, 1.0) AS rank, s.document, s.section, s.position"
        " FROM knowledge_fts JOIN knowledge AS k ON k.id = knowledge_fts.rowid"
        " LEFT JOIN knowledge_sources AS s ON s.knowledge_id = k.id"
        f" WHERE knowledge_fts MATCH ?{SCOPES[scope]} ORDER BY rank, k.id LIMIT ?",
        (TITLE_WEIGHT, expression, limit),
    ).fetchall()
    return [
        Passage(title, content, round(-rank, 3), round(-rank, 3), document, section or "", position)
        for title, content, rank, document, section, position in rows
    ]


def english_version(title: str) -> KnowledgeEntry | None:
    """The built-in entry titled `title` (its Chinese title), when it has an English version; else None."""
    return next((entry for entry in KNOWLEDGE_BASE if entry.title == title and entry.title_en), None)


def search(conn: sqlite3.Connection, question: str, limit: int = 3) -> list[dict]:
    """The best `limit` entries for `question`, best first, as {"title", "content", "score"} dicts.

    `score` is minus SQLite's bm25 (which is lower-is-better), rounded to 3 decimals: higher is better, and
    the same question always prints the same numbers.
    """
    return [passage.as_result() for passage in search_passages(conn, question, limit)]
