"""Importing documents into the knowledge base (tinyagent/shop/documents.py): what is stored, what replacing
means, and that a bad file or a failure half-way leaves the knowledge base exactly as it was."""

import sqlite3

import pytest

from tinyagent import fixed_clock
from tinyagent.shop import Shop, ShopError, ShopReadOnlyError, knowledge
from tinyagent.shop import documents as documents_module
from tinyagent.shop.chunking import Chunk, chunk_document
from tinyagent.shop.documents import MAX_DOCUMENT_BYTES, DocumentError, ImportResult
from tinyagent.shop.knowledge import KNOWLEDGE_BASE, create_index, search_passages
from tinyagent.shop.policies import POLICY_FOLDER

CLOCK = fixed_clock("2026-06-30T19:05:23")

RETURNS_V1 = """# 退换货政策

## 七天无理由退货

签收次日起 7 天内可以无理由退货。

## 以旧换新

旧机可以折价 100 元换购新机。
"""

RETURNS_V2 = """# 退换货政策

## 七天无理由退货

签收次日起 7 天内可以无理由退货，开封试用不影响。
"""


@pytest.fixture
def shop():
    with Shop(":memory:", clock=CLOCK) as shop:
        yield shop


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "zh").mkdir()
    (tmp_path / "zh" / "returns.md").write_text(RETURNS_V1, encoding="utf-8")
    (tmp_path / "hours.txt").write_text("客服时间\n\n每天 9:00-21:00 在线。", encoding="utf-8")
    (tmp_path / "notes.json").write_text("{}", encoding="utf-8")  # not a document: skipped in a folder
    return tmp_path


def rows(shop) -> dict[str, int]:
    """How many rows each knowledge table holds: what a failed import must leave untouched."""
    conn = shop._conn
    return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("knowledge", "knowledge_fts", "knowledge_sources", "documents")}


def passages(shop, query, **options):
    return [(p.document, p.section, p.content) for p in shop.search_passages(query, 5, scope="documents", **options)]


# -- importing -----------------------------------------------------------------------------------------
def test_a_folder_is_imported_with_names_below_it_and_only_its_documents(shop, folder):
    results = shop.import_documents(folder)
    assert results == [ImportResult("hours.txt", "客服时间", 1, "added"),
                       ImportResult("zh/returns.md", "退换货政策", 2, "added")]
    assert shop.documents() == [
        {"document": "hours.txt", "title": "客服时间", "chunks": 1, "importedAt": "2026-06-30T19:05:23"},
        {"document": "zh/returns.md", "title": "退换货政策", "chunks": 2, "importedAt": "2026-06-30T19:05:23"},
    ]
    assert rows(shop)["knowledge"] == len(KNOWLEDGE_BASE) + 3


def test_hidden_folders_such_as_notebook_checkpoints_are_not_documents(shop, folder):
    (folder / "zh" / ".ipynb_checkpoints").mkdir()
    (folder / "zh" / ".ipynb_checkpoints" / "returns-checkpoint.md").write_text(RETURNS_V2, encoding="utf-8")
    (folder / ".draft.md").write_text("# 草稿\n\n未发布。", encoding="utf-8")
    assert [r.document for r in shop.import_documents(folder)] == ["hours.txt", "zh/returns.md"]


def test_the_same_folder_named_twice_is_imported_once(shop, folder):
    assert [r.document for r in shop.import_documents(folder, folder)] == ["hours.txt", "zh/returns.md"]


def test_a_single_file_is_named_by_its_file_name(shop, folder):
    assert shop.import_documents(folder / "zh" / "returns.md")[0].document == "returns.md"


def test_a_chunk_is_found_with_its_document_section_and_position(shop, folder):
    shop.import_documents(folder)
    found = shop.search_passages("以旧换新", 1, scope="documents")[0]
    assert (found.title, found.document, found.section, found.position, found.source) == (
        "退换货政策", "zh/returns.md", "以旧换新", 2, "zh/returns.md#2")
    assert found.content == "旧机可以折价 100 元换购新机。"


def test_the_section_heading_alone_finds_a_chunk_that_never_repeats_it(shop, tmp_path):
    (tmp_path / "p.md").write_text("# 配送政策\n\n## 包邮门槛\n\n满 99 元免运费。", encoding="utf-8")
    shop.import_documents(tmp_path / "p.md")
    assert passages(shop, "包邮") == [("p.md", "包邮门槛", "满 99 元免运费。")]


def test_the_default_search_shows_a_chunk_in_its_old_shape_with_the_section_in_the_title(shop, folder):
    shop.import_documents(folder)
    [hit] = shop.search_knowledge("以旧换新", 1)
    assert list(hit) == ["title", "content", "score"] and hit["score"] > 0
    assert (hit["title"], hit["content"]) == ("退换货政策 › 以旧换新", "旧机可以折价 100 元换购新机。")


def test_scopes_keep_documents_and_built_in_entries_apart(shop, folder):
    shop.import_documents(folder)
    entries = shop.search_passages("退货", 10, scope="entries")
    chunks = shop.search_passages("退货", 10, scope="documents")
    assert entries and all(p.document is None and p.source is None for p in entries)
    assert chunks and all(p.document == "zh/returns.md" for p in chunks)
    everything = shop.search_passages("退货", 10)
    assert {p.content for p in everything} == {p.content for p in entries + chunks}
    with pytest.raises(ValueError, match="scope"):
        shop.search_passages("退货", scope="files")


def test_the_policy_documents_import_in_both_languages(shop):
    results = shop.import_documents(POLICY_FOLDER)
    assert [r.document for r in results] == [
        "en/returns.md", "en/service-hours.txt", "en/shipping.md", "en/warranty.md",
        "zh/returns.md", "zh/service-hours.txt", "zh/shipping.md", "zh/warranty.md"]
    assert {r.status for r in results} == {"added"}
    assert all(r.chunks >= 1 for r in results)


# -- importing again -----------------------------------------------------------------------------------
def test_importing_an_unchanged_document_writes_nothing(shop, folder):
    shop.import_documents(folder)
    before, changes = rows(shop), shop._conn.total_changes
    assert [r.status for r in shop.import_documents(folder)] == ["unchanged", "unchanged"]
    assert rows(shop) == before and shop._conn.total_changes == changes


def test_a_changed_document_replaces_all_its_chunks_and_leaves_nothing_stale(shop, folder):
    shop.import_documents(folder)
    (folder / "zh" / "returns.md").write_text(RETURNS_V2, encoding="utf-8")
    results = shop.import_documents(folder)
    assert [(r.document, r.chunks, r.status) for r in results] == [("hours.txt", 1, "unchanged"),
                                                                   ("zh/returns.md", 1, "replaced")]
    assert passages(shop, "以旧换新") == []  # the section that was removed is gone
    assert passages(shop, "无理由退货") == [("zh/returns.md", "七天无理由退货", "签收次日起 7 天内可以无理由退货，开封试用不影响。")]
    assert rows(shop) == {"knowledge": len(KNOWLEDGE_BASE) + 2, "knowledge_fts": len(KNOWLEDGE_BASE) + 2,
                          "knowledge_sources": 2, "documents": 2}


def test_the_same_text_cut_another_way_is_a_change_and_a_cut_that_changes_nothing_is_not(shop, tmp_path):
    path = tmp_path / "long.md"
    path.write_text("# 长\n\n## 质量问题\n\n" + "签收次日起十五天内出现性能故障的属于质量问题。" * 3, encoding="utf-8")
    assert shop.import_documents(path)[0].chunks == 1
    assert shop.import_documents(path, size=30, overlap=5)[0].status == "replaced"
    assert shop.documents()[0]["chunks"] > 1
    assert shop.import_documents(path, size=30, overlap=5)[0].status == "unchanged"
    assert shop.import_documents(path, size=1000, overlap=0)[0].status == "replaced"  # one chunk again


def test_a_document_can_be_removed(shop, folder):
    shop.import_documents(folder)
    assert shop.remove_document("zh/returns.md") is True
    assert shop.remove_document("zh/returns.md") is False
    assert passages(shop, "无理由退货 以旧换新") == []
    assert rows(shop)["knowledge"] == len(KNOWLEDGE_BASE) + 1


def test_hand_made_chunks_import_like_any_others(shop):
    chunks = [Chunk("manual.md", "手册", ("退货",), 1, "七天内可退。"), Chunk("manual.md", "手册", (), 2, "其他。")]
    assert shop.import_chunks(chunks) == [ImportResult("manual.md", "手册", 2, "added")]
    assert passages(shop, "可退") == [("manual.md", "退货", "七天内可退。")]


@pytest.mark.parametrize("chunks, says", [
    ([Chunk("m.md", "T", (), 2, "x")], "positions"),
    ([Chunk("m.md", "T", (), 1, "x"), Chunk("m.md", "U", (), 2, "y")], "same title"),
    ([Chunk("m.md", "T", (), 1, "  ")], "no text"),
    ([Chunk(" ", "T", (), 1, "x")], "needs a name"),
    ([], "no chunks"),
])
def test_chunks_that_cannot_be_a_document_are_refused(shop, chunks, says):
    before = rows(shop)
    with pytest.raises(DocumentError, match=says):
        shop.import_chunks(chunks)
    assert rows(shop) == before


# -- bad input: one clear error, nothing imported --------------------------------------------------------
def bad_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, content, says", [
    ("gbk.md", "退货政策".encode("gbk"), "not UTF-8 text (byte 0 cannot be read); save it as UTF-8"),
    ("empty.md", "", "the document is empty"),
    ("blank.txt", " \n\t\n", "the document is empty"),
    ("headings.md", "# Title\n\n## A\n\n## B\n", "headings but no text"),
    ("binary.md", "text\0more", "NUL characters"),
    ("policy.pdf", "%PDF-1.7", "only Markdown (.md) and plain-text (.txt)"),
])
def test_a_bad_document_is_refused_with_one_line_naming_it(shop, tmp_path, name, content, says):
    path = bad_file(tmp_path, name, content)
    with pytest.raises(DocumentError) as caught:
        shop.import_documents(path)
    message = str(caught.value)
    assert says in message and str(path) in message and "\n" not in message


def test_a_missing_path_and_an_empty_folder_are_refused(shop, tmp_path):
    with pytest.raises(DocumentError, match="no such file or folder"):
        shop.import_documents(tmp_path / "missing.md")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DocumentError, match="holds no .md or .txt documents"):
        shop.import_documents(tmp_path / "empty")
    with pytest.raises(DocumentError, match="at least one"):
        shop.import_documents()


def test_a_huge_document_is_refused_before_it_is_read(shop, tmp_path, monkeypatch):
    import os

    path = bad_file(tmp_path, "huge.md", "# 大\n\n" + "退货" * (MAX_DOCUMENT_BYTES // 4))
    assert path.stat().st_size > MAX_DOCUMENT_BYTES
    with pytest.raises(DocumentError, match=r"bytes is more than the 1,000,000 a document may have"):
        shop.import_documents(path)
    # The refusal must come from the size the file system gives, before any read: code that read the whole file
    # and then refused it (decode_document says the same) would load it, whichever way it read. So a small, valid
    # document whose stat() says one byte too many must be refused too, with the size stat() gave.
    small = bad_file(tmp_path, "small.md", "# 运费\n\n满 99 元包邮。\n")
    real_stat = type(small).stat

    def stat(self, **options):
        info = real_stat(self, **options)
        if self.name != small.name:
            return info
        fields = list(info[:10])
        fields[6] = MAX_DOCUMENT_BYTES + 1  # st_size; st_mode stays that of a regular file
        return os.stat_result(fields)

    monkeypatch.setattr(type(small), "stat", stat)
    with pytest.raises(DocumentError, match=r"1,000,001 bytes is more than the 1,000,000 a document may have"):
        shop.import_documents(small)
    assert shop.documents() == []


def test_something_that_is_not_a_regular_file_is_refused(shop, tmp_path):
    import os

    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(DocumentError, match="not a regular file"):
        shop.import_documents(fifo)


def test_a_link_in_a_folder_to_a_file_outside_it_is_refused_and_one_inside_is_read(shop, folder, tmp_path_factory):
    # The .md check looked at the link's name: a folder of documents could pull any readable file into the search.
    secret = tmp_path_factory.mktemp("elsewhere") / "key.txt"
    secret.write_text("the teacher's key: sk-not-a-document\n", encoding="utf-8")
    (folder / "notes.md").symlink_to(secret)
    with pytest.raises(DocumentError, match=r"notes\.md: a link to .*key\.txt, outside the folder"):
        shop.import_documents(folder)
    assert shop.documents() == [] and not shop.search_passages("sk-not-a-document", 5, scope="documents")
    (folder / "notes.md").unlink()
    inside = next(folder.rglob("*.md"))
    (folder / "again.md").symlink_to(inside)
    assert "again.md" in [result.document for result in shop.import_documents(folder)]


def test_a_byte_order_mark_and_windows_line_ends_are_read(shop, tmp_path):
    path = bad_file(tmp_path, "bom.md", "\ufeff# 标题\r\n\r\n## 运费\r\n\r\n满 99 元包邮。\r\n".encode())
    shop.import_documents(path)
    assert passages(shop, "包邮") == [("bom.md", "运费", "满 99 元包邮。")]
    assert shop.documents()[0]["title"] == "标题"


def test_one_bad_file_in_a_folder_means_no_file_of_it_is_imported(shop, folder):
    shop.import_documents(folder)
    before = rows(shop)
    (folder / "zh" / "returns.md").write_text(RETURNS_V2, encoding="utf-8")  # would be a replacement
    (folder / "zz-bad.md").write_bytes(b"\xff\xfe bad")
    with pytest.raises(DocumentError, match="zz-bad.md"):
        shop.import_documents(folder)
    assert rows(shop) == before
    assert passages(shop, "以旧换新")  # the old version is still there, whole


def test_two_documents_with_one_name_in_one_call_are_refused(shop, folder, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    (other / "zh").mkdir()
    (other / "zh" / "returns.md").write_text(RETURNS_V2, encoding="utf-8")
    with pytest.raises(DocumentError, match="two documents would be named 'zh/returns.md'") as refused:
        shop.import_documents(folder, other)
    assert shop.documents() == []
    # The advice must not be "one call each": the second call would replace the first, named the same.
    assert "separate" not in str(refused.value) and "rename one" in str(refused.value)


def test_a_failure_half_way_through_writing_rolls_the_whole_import_back(shop, folder, monkeypatch):
    shop.import_documents(folder / "zh")
    before = rows(shop)
    (folder / "zh" / "returns.md").write_text(RETURNS_V2, encoding="utf-8")
    real, calls = documents_module.indexed_terms, []

    def fails_on_the_second_chunk(title, body):
        calls.append(title)
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real(title, body)

    monkeypatch.setattr(documents_module, "indexed_terms", fails_on_the_second_chunk)
    with pytest.raises(sqlite3.OperationalError):
        shop.import_documents(folder)  # hours.txt is written first, then returns.md fails half-way
    assert len(calls) == 2
    assert rows(shop) == before
    assert [d["document"] for d in shop.documents()] == ["returns.md"]
    assert passages(shop, "以旧换新")  # the first version, whole


def test_a_read_only_shop_refuses_an_import(shop, folder):
    shop.read_only = True
    with pytest.raises(ShopReadOnlyError):
        shop.import_documents(folder)


def test_a_document_error_is_a_shop_error_and_a_value_error():
    assert issubclass(DocumentError, ShopError) and issubclass(DocumentError, ValueError)


# -- documents in a database file ----------------------------------------------------------------------
def test_imported_documents_survive_reopening_and_a_rebuild_of_the_built_in_entries(tmp_path, folder, monkeypatch):
    path = tmp_path / "shop.db"
    with Shop(path, clock=CLOCK) as shop:
        shop.import_documents(folder)
    changed = (*KNOWLEDGE_BASE, knowledge.KnowledgeEntry("以旧换新活动", "活动已结束。", "trade in"))
    monkeypatch.setattr(knowledge, "KNOWLEDGE_BASE", changed)
    with Shop(path, clock=CLOCK) as shop:  # the built-in entries changed: the index is rebuilt on opening
        assert [d["document"] for d in shop.documents()] == ["hours.txt", "zh/returns.md"]
        assert passages(shop, "折价") == [("zh/returns.md", "以旧换新", "旧机可以折价 100 元换购新机。")]
        assert [p.title for p in shop.search_passages("活动已结束", 1, scope="entries")] == ["以旧换新活动"]
        assert rows(shop)["knowledge"] == len(changed) + 3


def test_a_database_made_before_documents_existed_is_rebuilt_with_their_tables(tmp_path, folder):
    path = tmp_path / "old.db"
    Shop(path).close()
    with sqlite3.connect(path) as conn:  # as lessons 00-11's version left it: no document tables
        conn.execute("DROP TABLE documents")
        conn.execute("DROP TABLE knowledge_sources")
        conn.execute("UPDATE meta SET value = 'the hash of the old layout' WHERE key = 'knowledge_hash'")
    conn.close()
    with Shop(path, clock=CLOCK) as shop:
        assert shop.search_knowledge("warranty")[0]["title"] == "保修政策"
        shop.import_documents(folder)
        assert passages(shop, "折价")


def test_a_private_temp_index_keeps_the_imported_documents(shop, folder):
    shop.import_documents(folder)
    create_index(shop._conn, schema="temp")  # what a read-only file with a stale index gets
    found = search_passages(shop._conn, "折价", 1, scope="documents")
    assert [(p.document, p.section) for p in found] == [("zh/returns.md", "以旧换新")]
    assert shop._conn.execute("SELECT COUNT(*) FROM temp.knowledge").fetchone()[0] == len(KNOWLEDGE_BASE) + 3


def test_the_chunks_of_the_import_are_the_chunker_s(shop, folder):
    shop.import_documents(folder / "zh", size=20, overlap=5)
    stored = [p.content for p in sorted(shop.search_passages("退货 以旧换新 折价 无理由", 20, scope="documents"),
                                        key=lambda p: p.position)]
    assert stored == [chunk.text for chunk in chunk_document("returns.md", RETURNS_V1, size=20, overlap=5)]


def test_the_policy_documents_ship_with_the_package():
    # They are data files, which setuptools leaves out of a wheel unless pyproject.toml's package-data names them.
    from fnmatch import fnmatch
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = project["tool"]["setuptools"]["package-data"]["tinyagent.shop.policies"]
    files = [path.relative_to(POLICY_FOLDER).as_posix() for path in POLICY_FOLDER.rglob("*")
             if path.suffix in (".md", ".txt")]
    assert len(files) == 8
    assert [name for name in files if not any(fnmatch(name, pattern) for pattern in patterns)] == []
