"""The corpus index as a whole: every view filled, chunks fit the model, the tree is consistent,
scans are recorded without text, and the schema's descriptions reach the database."""

from __future__ import annotations

from docsym.storage import schema
from tests.conftest import doc_id_of

DPR = "2004.04906v3_dpr.pdf"


def test_every_corpus_pdf_is_indexed_and_scans_are_flagged(corpus_index, corpus_db) -> None:
    _, report = corpus_index
    assert report.failed == []
    scans = {p.rsplit("/", 1)[-1] for p in report.no_text}
    assert {"small_ocr_zh_scan.pdf", "table-multi-row-column-cells.pdf"} <= scans
    rows = corpus_db.execute(
        "SELECT file_name, has_text, page_count FROM documents WHERE NOT has_text"
    ).fetchall()
    assert {r[0] for r in rows} == scans
    pages = corpus_db.execute(
        "SELECT count(*) FROM pages p JOIN documents d USING (doc_id) "
        "WHERE d.file_name = 'small_ocr_zh_scan.pdf' AND NOT p.has_text"
    ).fetchone()[0]
    assert pages == 8  # recorded page by page, so they can still be viewed


def test_chunks_fit_the_model_window_and_keep_their_place(corpus_db) -> None:
    worst, empty, bad_pages = corpus_db.execute(
        "SELECT max(token_count), count(*) FILTER (WHERE length(trim(text)) = 0), "
        "count(*) FILTER (WHERE page_end < page_number) FROM chunks"
    ).fetchone()
    assert worst <= 256 and empty == 0 and bad_pages == 0
    orphan_sections = corpus_db.execute(
        "SELECT count(*) FROM chunks c LEFT JOIN sections s USING (section_id) "
        "WHERE c.section_id IS NOT NULL AND s.section_id IS NULL"
    ).fetchone()[0]
    assert orphan_sections == 0


def test_chunks_lose_no_text(corpus_db) -> None:
    """Every word of DPR's page text is in a chunk, a section title, a table or a caption."""
    doc = doc_id_of(corpus_db, DPR)
    chunk_words = corpus_db.execute(
        "SELECT sum(len(string_split_regex(trim(text), '\\s+'))) FROM chunks WHERE doc_id = ?",
        [doc],
    ).fetchone()[0]
    page_words = corpus_db.execute(
        "SELECT sum(len(string_split_regex(trim(text), '\\s+'))) FROM pages WHERE doc_id = ?",
        [doc],
    ).fetchone()[0]
    # Table bodies and heading lines are left out of chunks on purpose; the rest must be there.
    assert chunk_words >= 0.8 * page_words


def test_tree_is_consistent(corpus_db) -> None:
    bad_parent = corpus_db.execute(
        "SELECT count(*) FROM tree_nodes n LEFT JOIN tree_nodes p ON n.parent_id = p.node_id "
        "WHERE n.parent_id IS NOT NULL AND (p.node_id IS NULL OR p.doc_id <> n.doc_id "
        "OR n.depth <> p.depth + 1 OR p.ordinal >= n.ordinal)"
    ).fetchone()[0]
    assert bad_parent == 0
    roots = corpus_db.execute(
        "SELECT count(*) = (SELECT count(*) FROM documents) FROM tree_nodes "
        "WHERE node_type = 'document' AND parent_id IS NULL"
    ).fetchone()[0]
    assert roots
    for table, key in (("chunks", "chunk_id"), ("tables", "table_id"), ("sections", "section_id")):
        missing = corpus_db.execute(
            f"SELECT count(*) FROM {table} v LEFT JOIN tree_nodes n "
            f"ON n.ref_table = '{table}' AND n.ref_id = v.{key} WHERE n.node_id IS NULL"
        ).fetchone()[0]
        assert missing == 0, f"{table} rows missing from the tree"
    leaves_outside = corpus_db.execute(
        "SELECT count(*) FROM tree_nodes n JOIN tree_nodes p ON n.parent_id = p.node_id "
        "WHERE p.node_type = 'section' AND (n.page_start < p.page_start OR n.page_end > p.page_end)"
    ).fetchone()[0]
    assert leaves_outside == 0


def test_dpr_table_2_cell_by_header_paths(corpus_db) -> None:
    value = corpus_db.execute(
        "SELECT c.value FROM table_cells c JOIN documents d USING (doc_id) "
        "WHERE d.file_name = ? AND c.row_path = ['Multi', 'BM25 + DPR'] "
        "AND c.col_path = ['Top-100', 'TREC']",
        [DPR],
    ).fetchall()
    assert value == [(94.1,)]


def test_schema_descriptions_reach_the_database(corpus_db) -> None:
    comments = dict(
        corpus_db.execute(
            "SELECT table_name || '.' || column_name, comment FROM duckdb_columns() "
            "WHERE schema_name = 'main'"
        ).fetchall()
    )
    for table in schema.TABLES:
        for column in table.columns:
            assert comments[f"{table.name}.{column.name}"] == column.description
    text = schema.describe()
    assert all(f"- {c.name} " in text for t in schema.TABLES for c in t.columns)
    assert ("chunks", "text") in schema.encodable_columns()
