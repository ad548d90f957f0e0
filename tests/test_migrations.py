"""Schema migrations: an index built by the oldest schema upgrades in place to exactly the schema a
new index gets, on DuckDB and on PostgreSQL; each migration is frozen once shipped; only
migrations that need data the database lacks cause a re-index."""

from __future__ import annotations

import ast
import hashlib
import inspect
import shutil
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage import migrations, schema
from docsym.storage.directory.writer import IndexWriter
from docsym.storage.migrations import DuckDBMigrator, Migration, Migrator, migration
from tests import pdf_factory
from tests.conftest import new_database

SCHEMA_VERSION = migrations.MIGRATIONS[-1].version  # the version this docsym writes

# The index as the first docsym wrote it (schema version 1, commit cc039b0): the oldest schema
# this docsym upgrades. Written out, not derived, so nothing of today's code shapes it.
V1_INDEX = """
CREATE TABLE docsym_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
INSERT INTO docsym_meta VALUES ('schema_version', '1');
CREATE TABLE documents (doc_id VARCHAR PRIMARY KEY, path VARCHAR NOT NULL, file_name VARCHAR,
    format VARCHAR, sha256 VARCHAR, size_bytes BIGINT, page_count INTEGER, title VARCHAR,
    authors VARCHAR[], abstract VARCHAR, year INTEGER, venue VARCHAR, doi VARCHAR,
    arxiv_id VARCHAR, has_text BOOLEAN, tldr VARCHAR, indexed_at TIMESTAMP);
CREATE TABLE pages (page_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL, page_number INTEGER,
    width DOUBLE, height DOUBLE, text VARCHAR, has_text BOOLEAN, summary VARCHAR);
CREATE INDEX idx_pages_doc_id ON pages (doc_id);
CREATE TABLE sections (section_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL,
    parent_id VARCHAR, ordinal INTEGER, level INTEGER, number VARCHAR, title VARCHAR,
    content VARCHAR, summary VARCHAR, page_start INTEGER, page_end INTEGER, bbox DOUBLE[],
    source VARCHAR);
CREATE INDEX idx_sections_doc_id ON sections (doc_id);
CREATE TABLE chunks (chunk_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL, section_id VARCHAR,
    ordinal INTEGER, text VARCHAR, page_number INTEGER, page_end INTEGER, token_count INTEGER);
CREATE INDEX idx_chunks_doc_id ON chunks (doc_id);
CREATE TABLE tables (table_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL, section_id VARCHAR,
    ordinal INTEGER, page_number INTEGER, bbox DOUBLE[], label VARCHAR, caption VARCHAR,
    html VARCHAR, n_rows INTEGER, n_cols INTEGER, header_rows INTEGER, header_cols INTEGER,
    summary VARCHAR);
CREATE INDEX idx_tables_doc_id ON tables (doc_id);
CREATE TABLE table_cells (cell_id VARCHAR PRIMARY KEY, table_id VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL, row INTEGER, col INTEGER, row_span INTEGER, col_span INTEGER,
    text VARCHAR, value DOUBLE, unit VARCHAR, is_col_header BOOLEAN, is_row_header BOOLEAN,
    row_path VARCHAR[], col_path VARCHAR[], page_number INTEGER, bbox DOUBLE[]);
CREATE INDEX idx_table_cells_table_id ON table_cells (table_id);
CREATE INDEX idx_table_cells_doc_id ON table_cells (doc_id);
CREATE TABLE images (image_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL, section_id VARCHAR,
    ordinal INTEGER, page_number INTEGER, bbox DOUBLE[], label VARCHAR, caption VARCHAR,
    summary VARCHAR);
CREATE INDEX idx_images_doc_id ON images (doc_id);
CREATE TABLE equations (equation_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL,
    section_id VARCHAR, ordinal INTEGER, page_number INTEGER, bbox DOUBLE[], number VARCHAR,
    text VARCHAR);
CREATE INDEX idx_equations_doc_id ON equations (doc_id);
CREATE TABLE doc_references (reference_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL,
    ordinal INTEGER, label VARCHAR, text VARCHAR, year INTEGER, doi VARCHAR, arxiv_id VARCHAR,
    page_number INTEGER);
CREATE INDEX idx_doc_references_doc_id ON doc_references (doc_id);
CREATE TABLE tree_nodes (node_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL,
    parent_id VARCHAR, ordinal INTEGER, depth INTEGER, node_type VARCHAR, title VARCHAR,
    page_start INTEGER, page_end INTEGER, ref_table VARCHAR, ref_id VARCHAR);
CREATE INDEX idx_tree_nodes_doc_id ON tree_nodes (doc_id);
"""

V1_ROWS = """
INSERT INTO documents (doc_id, path, file_name, format, sha256, size_bytes, page_count, title,
    authors, year, has_text, indexed_at) VALUES
    ('0a1b2c3d4e5f6071', '/papers/dense.pdf', 'dense.pdf', 'pdf', 'aa11', 52814, 2,
     'Dense Passage Retrieval', ['V. Karpukhin', 'B. Oguz'], 2020, true, '2026-11-21 08:00:00'),
    ('1b2c3d4e5f607182', '/papers/scan.pdf', 'scan.pdf', 'pdf', 'bb22', 9120, 1, NULL, NULL,
     NULL, false, '2026-11-21 08:01:00');
INSERT INTO pages VALUES
    ('0a1b2c3d4e5f6071-p1', '0a1b2c3d4e5f6071', 1, 612, 792, 'Open-domain QA needs retrieval.',
     true, 'Retrieval for QA.'),
    ('0a1b2c3d4e5f6071-p2', '0a1b2c3d4e5f6071', 2, 612, 792, 'Results.', true, NULL),
    ('1b2c3d4e5f607182-p1', '1b2c3d4e5f607182', 1, 595.3, 841.9, NULL, false, NULL);
INSERT INTO sections VALUES ('0a1b2c3d4e5f6071-s0', '0a1b2c3d4e5f6071', NULL, 0, 1, '1',
    'Introduction', 'Open-domain QA needs retrieval.', NULL, 1, 1, [72.0, 90.5, 540.0, 104.0],
    'layout');
INSERT INTO chunks VALUES ('0a1b2c3d4e5f6071-c0', '0a1b2c3d4e5f6071', '0a1b2c3d4e5f6071-s0', 0,
    'Open-domain QA needs retrieval.', 1, 1, 9);
INSERT INTO tables VALUES ('0a1b2c3d4e5f6071-t0', '0a1b2c3d4e5f6071', '0a1b2c3d4e5f6071-s0', 0,
    2, [72.0, 300.0, 540.0, 420.0], 'Table 1', 'Table 1: Top-20 accuracy.', '<table></table>',
    2, 2, 1, 1, NULL);
INSERT INTO table_cells VALUES ('0a1b2c3d4e5f6071-t0-r1c1', '0a1b2c3d4e5f6071-t0',
    '0a1b2c3d4e5f6071', 1, 1, 1, 1, '78.4', 78.4, NULL, false, false, ['DPR'], ['Top-20'], 2,
    [300.0, 340.0, 330.0, 352.0]);
INSERT INTO tree_nodes VALUES ('0a1b2c3d4e5f6071-n0', '0a1b2c3d4e5f6071', NULL, 0, 0,
    'document', 'Dense Passage Retrieval', 1, 2, 'documents', '0a1b2c3d4e5f6071');
"""

# The PostgreSQL store as it first shipped (schema version 5, commit 72baee9): the oldest store this
# docsym upgrades, in PostgreSQL's types, with an index on every doc_id.
V5_STORE = """
CREATE TABLE docsym_meta (key text PRIMARY KEY, value text);
INSERT INTO docsym_meta VALUES ('schema_version', '5');
CREATE TABLE documents (doc_id text PRIMARY KEY, path text NOT NULL, file_name text, format text,
    sha256 text, size_bytes bigint, page_count integer, title text, authors text[],
    abstract text, year integer, venue text, doi text, arxiv_id text, has_text boolean,
    tldr text, indexed_at timestamp);
CREATE TABLE pages (page_id text PRIMARY KEY, doc_id text NOT NULL, page_number integer,
    width double precision, height double precision, text text, has_text boolean, ocr boolean,
    ocr_confidence double precision, summary text, label text);
CREATE TABLE sections (section_id text PRIMARY KEY, doc_id text NOT NULL, parent_id text,
    ordinal integer, level integer, number text, title text, content text, summary text,
    page_start integer, page_end integer, bbox double precision[], source text,
    boxes double precision[][]);
CREATE TABLE chunks (chunk_id text PRIMARY KEY, doc_id text NOT NULL, section_id text,
    ordinal integer, text text, page_number integer, page_end integer, token_count integer,
    bbox double precision[]);
CREATE TABLE sentences (sentence_id text PRIMARY KEY, doc_id text NOT NULL,
    chunk_id text NOT NULL, section_id text, ordinal integer NOT NULL, text text NOT NULL,
    char_start integer NOT NULL, char_end integer NOT NULL, page_number integer,
    bbox double precision[], continued boolean NOT NULL);
CREATE TABLE tables (table_id text PRIMARY KEY, doc_id text NOT NULL, section_id text,
    ordinal integer, page_number integer, bbox double precision[], label text, caption text,
    html text, n_rows integer, n_cols integer, header_rows integer, header_cols integer,
    summary text, confidence double precision, doubts text[]);
CREATE TABLE table_cells (cell_id text PRIMARY KEY, table_id text NOT NULL, doc_id text NOT NULL,
    row integer, col integer, row_span integer, col_span integer, text text,
    value double precision, unit text, is_col_header boolean, is_row_header boolean,
    row_path text[], col_path text[], page_number integer, bbox double precision[]);
CREATE TABLE images (image_id text PRIMARY KEY, doc_id text NOT NULL, section_id text,
    ordinal integer, page_number integer, bbox double precision[], label text, caption text,
    summary text);
CREATE TABLE equations (equation_id text PRIMARY KEY, doc_id text NOT NULL, section_id text,
    ordinal integer, page_number integer, bbox double precision[], number text, text text);
CREATE TABLE doc_references (reference_id text PRIMARY KEY, doc_id text NOT NULL,
    ordinal integer, label text, text text, year integer, doi text, arxiv_id text,
    page_number integer);
CREATE TABLE tree_nodes (node_id text PRIMARY KEY, doc_id text NOT NULL, parent_id text,
    ordinal integer, depth integer, node_type text, title text, page_start integer,
    page_end integer, ref_table text, ref_id text);
CREATE TABLE entities (entity_id text PRIMARY KEY, doc_id text NOT NULL, name text,
    entity_type text, aliases text[], description text, mention_count integer,
    node_count integer, page_number integer);
CREATE TABLE relations (relation_id text PRIMARY KEY, doc_id text NOT NULL, source_id text,
    target_id text, relation text, weight integer, evidence_node_ids text[], evidence text,
    page_number integer);
CREATE TABLE entity_links (link_id text PRIMARY KEY, entity_id text NOT NULL,
    node_id text NOT NULL, doc_id text NOT NULL, mention_count integer, page_number integer);
CREATE TABLE table_summaries (summary_id text PRIMARY KEY, table_id text NOT NULL,
    doc_id text NOT NULL, axis text, level integer, path text[], text text, page_number integer,
    bbox double precision[], cell_count integer);
CREATE INDEX idx_documents_doc_id ON documents (doc_id);
CREATE INDEX idx_pages_doc_id ON pages (doc_id);
CREATE INDEX idx_sections_doc_id ON sections (doc_id);
CREATE INDEX idx_chunks_doc_id ON chunks (doc_id);
CREATE INDEX idx_sentences_doc_id ON sentences (doc_id);
CREATE INDEX idx_sentences_chunk_id ON sentences (chunk_id);
CREATE INDEX idx_tables_doc_id ON tables (doc_id);
CREATE INDEX idx_table_cells_table_id ON table_cells (table_id);
CREATE INDEX idx_table_cells_doc_id ON table_cells (doc_id);
CREATE INDEX idx_images_doc_id ON images (doc_id);
CREATE INDEX idx_equations_doc_id ON equations (doc_id);
CREATE INDEX idx_doc_references_doc_id ON doc_references (doc_id);
CREATE INDEX idx_tree_nodes_doc_id ON tree_nodes (doc_id);
CREATE INDEX idx_entities_doc_id ON entities (doc_id);
CREATE INDEX idx_relations_doc_id ON relations (doc_id);
CREATE INDEX idx_relations_source_id ON relations (source_id);
CREATE INDEX idx_relations_target_id ON relations (target_id);
CREATE INDEX idx_entity_links_doc_id ON entity_links (doc_id);
CREATE INDEX idx_entity_links_entity_id ON entity_links (entity_id);
CREATE INDEX idx_entity_links_node_id ON entity_links (node_id);
CREATE INDEX idx_table_summaries_table_id ON table_summaries (table_id);
CREATE INDEX idx_table_summaries_doc_id ON table_summaries (doc_id);
INSERT INTO documents (doc_id, path, file_name, format, page_count, title, has_text) VALUES
    ('0a1b2c3d4e5f6071', '/papers/dense.pdf', 'dense.pdf', 'pdf', 1, 'Dense Passage Retrieval',
     true);
INSERT INTO pages VALUES ('0a1b2c3d4e5f6071-p1', '0a1b2c3d4e5f6071', 1, 612, 792,
    'Open-domain QA needs retrieval.', true, false, NULL, NULL, 'i');
INSERT INTO sections (section_id, doc_id, title, boxes) VALUES ('0a1b2c3d4e5f6071-s0',
    '0a1b2c3d4e5f6071', 'Introduction', '{{1, 72, 90.5, 540, 104}}');
"""

# Each shipped migration's code (decorator and body, without docstring, comments or layout).
# An index already at a version never runs that migration again, so editing it would leave
# such indexes behind: change the schema with a new migration instead.
FROZEN = {
    1: "4c3f0dd66843eb61",
    2: "10a67b49100a0e43",
    3: "09a7e126a59196f7",
    4: "de24a7540335e373",
    5: "d058ea7bd6cfaf17",
    6: "32e2aac3a1fa9dc9",
    7: "a4125b5a4da39390",
    8: "5332299ef7abc915",
    9: "fe4b773f6243e01b",
    10: "bc6131111a52a1c0",
}


def _meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    row = con.execute(f"SELECT value FROM {schema.META_TABLE} WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]


def _duckdb_shape(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """Per table: each column's type and nullability, the primary key and the indexes (name ->
    columns), which an upgrade must reproduce. Column order is left out: added columns come last."""
    shape: dict[str, dict[str, Any]] = {}
    for table, column, data_type, nullable in con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
        "WHERE NOT internal"
    ).fetchall():
        entry = shape.setdefault(table, {"columns": {}, "indexes": {}})
        entry["columns"][column] = (data_type, nullable)
    for table, columns in con.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
        "WHERE constraint_type = 'PRIMARY KEY'"
    ).fetchall():
        shape[table]["primary key"] = columns
    for table, name, expressions in con.execute(
        "SELECT table_name, index_name, expressions FROM duckdb_indexes()"
    ).fetchall():
        shape[table]["indexes"][name] = expressions
    return shape


def _new_duckdb_shape(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The schema a new index gets, straight from storage/schema.py."""
    with duckdb.connect(str(tmp_path / "new.duckdb")) as con:
        migrations.upgrade(con)
        return _duckdb_shape(con)


def _digest(m: Migration) -> str:
    function = ast.parse(textwrap.dedent(inspect.getsource(m.change))).body[0]
    assert isinstance(function, ast.FunctionDef)
    body = function.body[1:] if ast.get_docstring(function) else function.body
    # unparse, not dump: its text is the same on every Python, whatever the layout was
    code = "\n".join(ast.unparse(node) for node in [*function.decorator_list, *body])
    return hashlib.sha256(code.encode()).hexdigest()[:16]


# -- the index directory (DuckDB) ----------------------------------------------------------------


@pytest.fixture(scope="module")
def oldest_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index directory whose index.duckdb holds the oldest schema and a few rows."""
    root = tmp_path_factory.mktemp("oldest") / "index"
    root.mkdir()
    with duckdb.connect(str(root / "index.duckdb")) as con:
        con.execute(V1_INDEX)
        con.execute(V1_ROWS)
    return root


@pytest.fixture(scope="module")
def upgraded_index(oldest_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """That index opened by today's writer, as ``docsym index`` opens it, and published."""
    root = tmp_path_factory.mktemp("upgraded") / "index"
    shutil.copytree(oldest_index, root)
    with IndexWriter(root) as writer:
        assert writer.needs_reindex
    return root / "index.duckdb"


def test_an_index_of_the_oldest_schema_gains_todays_columns_and_keeps_its_rows(
    oldest_index: Path, upgraded_index: Path
) -> None:
    with (
        duckdb.connect(str(oldest_index / "index.duckdb"), read_only=True) as old,
        duckdb.connect(str(upgraded_index), read_only=True) as new,
    ):
        shape = _duckdb_shape(new)
        for table in (*schema.TABLES, *schema.RECORDS):
            want = {c.name: (c.type, c.nullable) for c in table.columns}
            assert shape[table.name]["columns"] == want, table.name
        comments = dict(
            new.execute(
                "SELECT table_name || '.' || column_name, comment FROM duckdb_columns() "
                "WHERE NOT internal AND table_name <> ?",
                [schema.META_TABLE],
            ).fetchall()
        )
        described = {
            f"{t.name}.{c.name}": c.description
            for t in (*schema.TABLES, *schema.RECORDS)
            for c in t.columns
        }
        assert comments == described
        old_shape = _duckdb_shape(old)
        for table, entry in old_shape.items():
            if table == schema.META_TABLE:
                continue
            columns = ", ".join(entry["columns"])
            query = f"SELECT {columns} FROM {table} ORDER BY 1"
            assert new.execute(query).fetchall() == old.execute(query).fetchall(), table
        # What the migrations fill in: nothing the database cannot compute. New views stay
        # empty and new columns NULL until the re-index they ask for, which stays recorded.
        for table in schema.TABLES:
            had = old_shape.get(table.name, {"columns": {}})["columns"]
            for column in [c.name for c in table.columns if c.name not in had]:
                filled = new.execute(
                    f"SELECT count(*) FROM {table.name} WHERE {column} IS NOT NULL"
                )
                assert filled.fetchone() == (0,), f"{table.name}.{column}"
        assert int(_meta(new, "schema_version")) == SCHEMA_VERSION
        assert _meta(new, migrations.PENDING_REINDEX) == "1"


def test_an_upgraded_index_has_the_schema_of_a_new_one(upgraded_index: Path, tmp_path: Path):
    """What catches a migration that drifted from storage/schema.py: a type, a constraint or an
    index the upgrade gives differently from a new index."""
    with duckdb.connect(str(upgraded_index), read_only=True) as con:
        assert _duckdb_shape(con) == _new_duckdb_shape(tmp_path)


def test_the_migrations_alone_build_todays_schema(tmp_path: Path) -> None:
    """Every step from an empty database: the first migrations, which no index runs any more,
    still state what the views were."""
    with duckdb.connect() as con:
        migrations.apply(DuckDBMigrator(con), 0, migrations.MIGRATIONS)
        built = _duckdb_shape(con)
    new = _new_duckdb_shape(tmp_path)
    del new[schema.META_TABLE]  # bookkeeping, not a migration's
    assert built == new


def test_a_shipped_migration_never_changes() -> None:
    versions = [m.version for m in migrations.MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))
    digests = {m.version: _digest(m) for m in migrations.MIGRATIONS}
    assert digests == FROZEN, (
        "a shipped migration changed: indexes already past it will never run it again; "
        "restore it and add a new migration (a new one's digest is added to FROZEN)"
    )


def test_a_new_database_is_created_at_the_newest_version(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "new.duckdb")) as con:
        done = migrations.upgrade(con)
        assert done == migrations.Upgrade(SCHEMA_VERSION, SCHEMA_VERSION, False)
        assert int(_meta(con, "schema_version")) == SCHEMA_VERSION
        for table in (*schema.TABLES, *schema.RECORDS):
            con.execute(f"SELECT {', '.join(c.name for c in table.columns)} FROM {table.name}")


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real index of a synthetic two-page PDF, built by the current schema."""
    root = tmp_path_factory.mktemp("migrations")
    folder = root / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf")
    assert index_paths([folder], root / "index").ok
    return root / "index" / "index.duckdb"


def test_an_added_column_keeps_the_index(built_index: Path, tmp_path: Path) -> None:
    """As a previous docsym left it: one column fewer and the version before. A migration that
    adds the column brings it back without touching the rows or asking for a re-index."""
    copy = tmp_path / "index.duckdb"
    shutil.copyfile(built_index, copy)

    def m011_venue(m: Migrator) -> None:
        """documents.venue"""
        m.add_column("documents", "venue", "VARCHAR")

    extra = Migration.of(m011_venue)
    newest = extra.version
    with duckdb.connect(str(copy)) as con:
        before = con.execute("SELECT doc_id, title FROM documents").fetchall()
        chunks = con.execute("SELECT count(*) FROM chunks").fetchone()
        con.execute("ALTER TABLE documents DROP COLUMN venue")
        done = migrations.upgrade(con, (*migrations.MIGRATIONS, extra))
        assert done == migrations.Upgrade(newest - 1, newest, reindex=False)
        assert con.execute("SELECT doc_id, title FROM documents").fetchall() == before
        assert con.execute("SELECT count(*) FROM chunks").fetchone() == chunks
        assert con.execute("SELECT venue FROM documents").fetchall() == [(None,)] * len(before)
        comment = con.execute(
            "SELECT comment FROM duckdb_columns() WHERE table_name = 'documents' "
            "AND column_name = 'venue'"
        ).fetchone()[0]
        assert comment == schema.table("documents").column("venue").description
        with pytest.raises(migrations.SchemaTooNewError, match="newer than this docsym"):
            migrations.upgrade(con)  # this docsym only knows the versions before `extra`


def test_a_new_view_asks_for_a_reindex_until_it_is_done(built_index: Path, tmp_path: Path):
    copy = tmp_path / "index.duckdb"
    shutil.copyfile(built_index, copy)

    @migration(reindex=True)
    def m011_a_view(m: Migrator) -> None:
        """a view of notes"""
        m.create_table("notes", {"note_id": "VARCHAR PRIMARY KEY", "doc_id": "VARCHAR NOT NULL"})

    known = (*migrations.MIGRATIONS, m011_a_view)
    with duckdb.connect(str(copy)) as con:
        assert migrations.upgrade(con, known).reindex
        con.execute("SELECT count(*) FROM notes")
        # A run killed before re-indexing: the next upgrade still asks for it.
        assert migrations.upgrade(con, known).reindex
        migrations.reindex_done(con)
        assert not migrations.upgrade(con, known).reindex


def test_an_index_from_schema_version_1_is_upgraded_and_reindexed(tmp_path: Path) -> None:
    """The real path from version 1 (before the entity graph): tables are created, and the
    pipeline re-indexes the documents once so they gain entities."""
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf", marker="BM25")  # an identifier: an entity
    index = tmp_path / "index"
    index_paths([folder], index)
    with duckdb.connect(str(index / "index.duckdb")) as con:
        for name in ("entities", "relations", "entity_links", "table_summaries"):
            con.execute(f"DROP TABLE {name}")
        con.execute(f"UPDATE {schema.META_TABLE} SET value = '1' WHERE key = 'schema_version'")
    report = index_paths([folder], index)
    assert [Path(p).name for p in report.updated] == ["a.pdf"]
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        assert int(_meta(con, "schema_version")) == SCHEMA_VERSION
        assert _meta(con, migrations.PENDING_REINDEX) is None
        assert con.execute("SELECT count(*) FROM entities").fetchone()[0] > 0
    assert index_paths([folder], index).unchanged


A_CELL = ("0a1b2c3d4e5f6071-t0-r1c1", "0a1b2c3d4e5f6071-t0", "0a1b2c3d4e5f6071", "41")


def _as_version_7(m: Migrator, con) -> None:
    """table_cells and pages as docsym wrote them before version 8: no A1 addresses, no sheet
    names as page labels; that version recorded."""
    m.drop_column("table_cells", "address")
    con.execute(
        "UPDATE pages SET label = NULL WHERE doc_id IN "
        "(SELECT doc_id FROM documents WHERE format = 'xlsx')"
    )
    con.execute(f"UPDATE {schema.META_TABLE} SET value = '7' WHERE key = 'schema_version'")


def _workbook(path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Ponds"
    for row in (["Pond", "Geese"], ["North", 41], ["South", 17]):
        sheet.append(row)
    book.save(path)


def test_an_index_of_version_7_reindexes_its_spreadsheets_only(tmp_path: Path) -> None:
    """Only the XLSX parser knows a cell's address and a sheet's name: the spreadsheets are
    indexed again, once; the PDF is not read again."""
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf")
    _workbook(folder / "ponds.xlsx")
    index = tmp_path / "index"
    assert index_paths([folder], index).ok
    with duckdb.connect(str(index / "index.duckdb")) as con:
        _as_version_7(DuckDBMigrator(con), con)
    report = index_paths([folder], index)
    assert [Path(p).name for p in report.updated] == ["ponds.xlsx"]
    assert [Path(p).name for p in report.unchanged] == ["a.pdf"]
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        assert int(_meta(con, "schema_version")) == SCHEMA_VERSION
        assert _meta(con, migrations.PENDING_REINDEX) is None
        found = con.execute("SELECT text FROM table_cells WHERE address = 'B2'").fetchall()
        assert found == [("41",)]
        assert con.execute("SELECT label FROM pages WHERE label = 'Ponds'").fetchall()
    assert len(index_paths([folder], index).unchanged) == 2


def test_an_index_without_spreadsheets_upgrades_to_version_8_without_a_reindex(
    built_index: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "index.duckdb"
    shutil.copyfile(built_index, copy)
    with duckdb.connect(str(copy)) as con:
        _as_version_7(DuckDBMigrator(con), con)
        done = migrations.upgrade(con)
        assert done == migrations.Upgrade(7, SCHEMA_VERSION, reindex=False)
        assert (
            con.execute("SELECT count(*) FROM table_cells WHERE address IS NOT NULL").fetchone()[0]
            == 0
        )


def test_what_is_left_to_reindex_joins_what_each_upgrade_asks() -> None:
    assert migrations.pending_after("xlsx", None) == "xlsx"
    assert migrations.pending_after("xlsx", "pptx") == "pptx,xlsx"
    assert migrations.pending_after("xlsx", migrations.EVERY_DOCUMENT) == "1"
    assert migrations.pending_after(migrations.EVERY_DOCUMENT, "xlsx") == "1"
    assert migrations.pending_after(None, None) is None


# Where entity and relation ids are held, and SQL turning today's into those of before version 7.
ID_COLUMNS = {
    "entities": ("entity_id",),
    "relations": ("relation_id", "source_id", "target_id"),
    "entity_links": ("link_id", "entity_id"),
}
TO_OLD_IDS = r"regexp_replace(regexp_replace({0}, '-ent([0-9]+)', '-e\1'), '-rel([0-9]+)$', '-r\1')"


def _graph_ids(con) -> dict[str, list[tuple]]:
    return {
        table: sorted(con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall())
        for table, columns in ID_COLUMNS.items()
    }


def _make_ids_old(con) -> None:
    """The graph's ids as docsym wrote them before version 7, and that version recorded."""
    for table, columns in ID_COLUMNS.items():
        sets = ", ".join(f"{c} = {TO_OLD_IDS.format(c)}" for c in columns)
        con.execute(f"UPDATE {table} SET {sets}")
    con.execute(f"UPDATE {schema.META_TABLE} SET value = '6' WHERE key = 'schema_version'")


def test_old_entity_and_relation_ids_are_rewritten_with_their_vector_keys(tmp_path: Path):
    """Version 7 gave entities and relations prefixes of their own: an index of version 6 gets
    today's ids in every column and in vectors.sqlite, without a re-index."""
    from docsym.storage import ids
    from docsym.storage.directory import vectors

    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf", marker="BM25")
    index = tmp_path / "index"
    assert index_paths([folder], index).ok
    with duckdb.connect(str(index / "index.duckdb")) as con:
        today = _graph_ids(con)
        _make_ids_old(con)
        old = _graph_ids(con)
    assert today["entities"] and old != today
    assert {ids.kind_of(e) for (e,) in old["entities"]} == {"equation"}  # what -e<n> meant
    assert [ids.current(e, "entity") for (e,) in old["entities"]] == [
        e for (e,) in today["entities"]
    ]
    con = vectors.connect(index / "vectors.sqlite")
    con.execute(
        "UPDATE entries SET primary_key = replace(primary_key, '-ent', '-e') "
        "WHERE table_name = 'entities'"
    )
    con.execute("DELETE FROM meta WHERE key LIKE 'rekeyed.%'")  # version 6 recorded no rekey
    con.close()

    report = index_paths([folder], index)
    assert report.unchanged and not report.updated  # no re-index: the ids are rewritten
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        assert _graph_ids(con) == today
        assert int(_meta(con, "schema_version")) == SCHEMA_VERSION
        assert _meta(con, migrations.PENDING_REINDEX) is None
    con = vectors.connect(index / "vectors.sqlite", readonly=True)
    keys = con.execute(
        "SELECT primary_key FROM entries WHERE table_name = 'entities' AND died IS NULL"
    ).fetchall()
    con.close()
    assert sorted(keys) == today["entities"]


# -- steps a later schema may take: rename, drop, backfill ----------------------------------------


@migration()
def m011_notes(m: Migrator) -> None:
    """notes, a table no view has, to reshape"""
    m.create_table(
        "notes",
        {
            "note_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "body": "VARCHAR",
            "kind": "VARCHAR",
            "draft": "BOOLEAN",
        },
        indexes=("doc_id", "kind"),
    )


@migration()
def m012_notes_reshaped(m: Migrator) -> None:
    """body renamed text, kind renamed category (an indexed column), draft dropped, and a new
    column filled from the rows"""
    m.rename_column("notes", "body", "text")
    m.rename_column("notes", "kind", "category")
    m.drop_column("notes", "draft")
    m.add_column("notes", "chars", "INTEGER")
    m.execute("UPDATE notes SET chars = length(text)")


NOTES = [("n1", "d1", "short", "aside", True), ("n2", "d1", "a longer note", "summary", False)]
RESHAPED = [("n1", "d1", "short", "aside", 5), ("n2", "d1", "a longer note", "summary", 13)]


def test_columns_are_renamed_dropped_and_backfilled_on_an_indexed_table(tmp_path: Path) -> None:
    """DuckDB alters no column of a table with an index: the step lifts the indexes and puts
    them back on the renamed column, as PostgreSQL keeps them."""
    with duckdb.connect(str(tmp_path / "index.duckdb")) as con:
        migrations.upgrade(con)
        migrations.upgrade(con, (*migrations.MIGRATIONS, m011_notes))
        con.executemany("INSERT INTO notes VALUES (?, ?, ?, ?, ?)", NOTES)
        done = migrations.upgrade(con, (*migrations.MIGRATIONS, m011_notes, m012_notes_reshaped))
        reshaped = (m011_notes.version, m012_notes_reshaped.version)
        assert (done.from_version, done.to_version) == reshaped
        notes = _duckdb_shape(con)["notes"]
        assert list(notes["columns"]) == ["note_id", "doc_id", "text", "category", "chars"]
        assert notes["indexes"] == {"idx_notes_doc_id": "[doc_id]", "idx_notes_kind": "[category]"}
        query = "SELECT note_id, doc_id, text, category, chars FROM notes ORDER BY note_id"
        assert con.execute(query).fetchall() == RESHAPED


# -- the PostgreSQL store ----------------------------------------------------------------------


def _pg_shape(con) -> dict[str, dict[str, Any]]:
    """Per table: each column's type and nullability, and its indexes with their definitions."""
    shape: dict[str, dict[str, Any]] = {}
    for table, column, data_type, not_null in con.execute(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' "
        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum"
    ).fetchall():
        entry = shape.setdefault(table, {"columns": {}, "indexes": {}})
        entry["columns"][column] = (data_type, not not_null)
    for table, name, definition in con.execute(
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
    ).fetchall():
        shape[table]["indexes"][name] = definition
    return shape


def _new_pg_shape(pg_server) -> dict[str, dict[str, Any]]:
    import psycopg

    from docsym.storage.postgres.schema_setup import ensure_schema

    with psycopg.connect(new_database(pg_server, "migrate_new")) as con:
        ensure_schema(con)
        return _pg_shape(con)


def test_a_store_of_the_oldest_schema_upgrades_to_a_new_stores_schema(pg_server) -> None:
    psycopg = pytest.importorskip("psycopg")
    from docsym.storage.postgres.schema_setup import ensure_schema

    url = new_database(pg_server, "migrate_oldest")
    with psycopg.connect(url) as con:
        con.execute(V5_STORE)
    rows = "SELECT doc_id, path, title FROM documents ORDER BY doc_id"
    with psycopg.connect(url) as con:
        before = {q: con.execute(q).fetchall() for q in (rows, "SELECT * FROM pages")}
        boxes = con.execute("SELECT section_id, boxes FROM sections").fetchall()
        assert not ensure_schema(con)  # versions 6 to 8 need no re-index
    with psycopg.connect(url) as con:
        assert _pg_shape(con) == _new_pg_shape(pg_server)
        for query, found in before.items():
            # pages gained no column since version 5: its rows come back whole
            assert con.execute(query).fetchall() == found
        assert con.execute("SELECT section_id, boxes FROM sections").fetchall() == boxes
        assert con.execute("SELECT path_bytes FROM documents").fetchall() == [(None,)]
        version = con.execute(
            f"SELECT value FROM {schema.META_TABLE} WHERE key = 'schema_version'"
        ).fetchone()
        assert int(version[0]) == SCHEMA_VERSION
        too_new = f"store schema version {SCHEMA_VERSION}"
        with pytest.raises(migrations.SchemaTooNewError, match=too_new):
            ensure_schema(con, migrations.MIGRATIONS[:6])


def test_a_store_of_version_6_gets_todays_entity_and_relation_ids(pg_server) -> None:
    """The store's rows and its entries' keys, in the migration's transaction."""
    psycopg = pytest.importorskip("psycopg")
    from docsym.storage.postgres.schema_setup import ensure_schema

    url = new_database(pg_server, "migrate_ids")
    with psycopg.connect(url) as con:
        ensure_schema(con)
        con.execute(
            "INSERT INTO entities (entity_id, doc_id, name) VALUES "
            "('0a1b2c3d4e5f6071-ent0', '0a1b2c3d4e5f6071', 'DPR'), "
            "('0a1b2c3d4e5f6071-ent1', '0a1b2c3d4e5f6071', 'BM25')"
        )
        con.execute(
            "INSERT INTO relations (relation_id, doc_id, source_id, target_id, relation) VALUES "
            "('0a1b2c3d4e5f6071-rel0', '0a1b2c3d4e5f6071', '0a1b2c3d4e5f6071-ent0', "
            "'0a1b2c3d4e5f6071-ent1', 'co_occurs')"
        )
        con.execute(
            "INSERT INTO entity_links (link_id, entity_id, node_id, doc_id) VALUES "
            "('0a1b2c3d4e5f6071-ent1-n3', '0a1b2c3d4e5f6071-ent1', '0a1b2c3d4e5f6071-n3', "
            "'0a1b2c3d4e5f6071')"
        )
        con.execute(
            "INSERT INTO entries (table_name, column_name, primary_key, doc_id, text, keyword, "
            "tsv, length) VALUES ('entities', 'name', '0a1b2c3d4e5f6071-ent1', "
            "'0a1b2c3d4e5f6071', 'BM25', false, ''::tsvector, 0)"
        )
        today = _graph_ids(con)
        _make_ids_old(con)
        con.execute(
            "UPDATE entries SET primary_key = replace(primary_key, '-ent', '-e') "
            "WHERE table_name = 'entities'"
        )
        con.commit()
        assert _graph_ids(con) != today
        version = con.execute("SELECT version FROM store_state").fetchone()[0]
        assert not ensure_schema(con)
        assert _graph_ids(con) == today
        keys = con.execute("SELECT primary_key FROM entries WHERE table_name = 'entities'")
        assert keys.fetchall() == [("0a1b2c3d4e5f6071-ent1",)]
        assert con.execute("SELECT version FROM store_state").fetchone()[0] == version + 1


def test_a_store_of_version_7_reindexes_its_spreadsheets_only(pg_server) -> None:
    psycopg = pytest.importorskip("psycopg")
    from docsym.storage.postgres.schema_setup import PostgresMigrator, ensure_schema
    from docsym.storage.postgres.writer import PostgresWriter

    url = new_database(pg_server, "migrate_addresses")
    with psycopg.connect(url) as con:
        ensure_schema(con)
        con.execute(
            "INSERT INTO documents (doc_id, path, format) VALUES "
            "('0a1b2c3d4e5f6071', '/d/a.pdf', 'pdf'), ('1b2c3d4e5f607182', '/d/b.xlsx', 'xlsx')"
        )
        values = ", ".join(f"'{v}'" for v in A_CELL)
        con.execute(f"INSERT INTO table_cells (cell_id, table_id, doc_id, text) VALUES ({values})")
        _as_version_7(PostgresMigrator(con), con)
        con.commit()
        assert ensure_schema(con)
        found = con.execute("SELECT cell_id, address FROM table_cells").fetchall()
        assert found == [(A_CELL[0], None)]
    with PostgresWriter(url) as writer:
        assert writer.needs_reindex
        assert writer.reindex_doc_ids() == {"1b2c3d4e5f607182"}
        writer.reindex_done()
    with PostgresWriter(url) as writer:
        assert not writer.needs_reindex and writer.reindex_doc_ids() == set()


def test_the_migrations_alone_build_todays_store_schema(pg_server) -> None:
    psycopg = pytest.importorskip("psycopg")
    from docsym.storage.postgres.schema_setup import PostgresMigrator

    with psycopg.connect(new_database(pg_server, "migrate_steps")) as con:
        migrations.apply(PostgresMigrator(con), 0, migrations.MIGRATIONS)
        built = _pg_shape(con)
    new = {name: entry for name, entry in _new_pg_shape(pg_server).items() if name in built}
    assert set(new) == {t.name for t in (*schema.TABLES, *schema.RECORDS)}
    assert built == new


def test_store_columns_are_renamed_dropped_and_backfilled(pg_server) -> None:
    psycopg = pytest.importorskip("psycopg")
    from docsym.storage.postgres.schema_setup import ensure_schema

    with psycopg.connect(new_database(pg_server, "migrate_reshape")) as con:
        ensure_schema(con)
        ensure_schema(con, (*migrations.MIGRATIONS, m011_notes))
        con.cursor().executemany("INSERT INTO notes VALUES (%s, %s, %s, %s, %s)", NOTES)
        ensure_schema(con, (*migrations.MIGRATIONS, m011_notes, m012_notes_reshaped))
        notes = _pg_shape(con)["notes"]
        assert list(notes["columns"]) == ["note_id", "doc_id", "text", "category", "chars"]
        assert notes["indexes"]["idx_notes_kind"].endswith("(category)")
        query = "SELECT note_id, doc_id, text, category, chars FROM notes ORDER BY note_id"
        assert con.execute(query).fetchall() == RESHAPED
