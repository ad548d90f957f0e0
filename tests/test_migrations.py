"""Schema migrations: an index built by an older schema upgrades in place; only migrations that
need data the database lacks cause a re-index."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage import migrations, schema
from docsym.storage.migrations import AddColumn, CreateTable, Migration
from tests import pdf_factory


def _meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    row = con.execute(f"SELECT value FROM {schema.META_TABLE} WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real index of a synthetic two-page PDF, built by the current schema."""
    root = tmp_path_factory.mktemp("migrations")
    folder = root / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf")
    assert index_paths([folder], root / "index").ok
    return root / "index" / "index.duckdb"


def test_a_new_database_is_created_at_the_newest_version(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "new.duckdb")) as con:
        done = migrations.upgrade(con)
        assert done == migrations.Upgrade(
            migrations.SCHEMA_VERSION, migrations.SCHEMA_VERSION, False
        )
        assert int(_meta(con, "schema_version")) == migrations.SCHEMA_VERSION
        for table in schema.TABLES:
            con.execute(f"SELECT {', '.join(c.name for c in table.columns)} FROM {table.name}")


def test_an_added_column_keeps_the_index(built_index: Path, tmp_path: Path) -> None:
    """As a previous docsym left it: one column fewer and the version before. A migration that
    adds the column brings it back without touching the rows or asking for a re-index."""
    copy = tmp_path / "index.duckdb"
    shutil.copyfile(built_index, copy)
    newest = migrations.SCHEMA_VERSION + 1
    extra = Migration(newest, "documents.venue", (AddColumn("documents", "venue"),))
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
    newest = migrations.SCHEMA_VERSION + 1
    extra = Migration(newest, "a view", (CreateTable("table_summaries"),), reindex=True)
    with duckdb.connect(str(copy)) as con:
        con.execute("DROP TABLE table_summaries")
        assert migrations.upgrade(con, (*migrations.MIGRATIONS, extra)).reindex
        con.execute("SELECT count(*) FROM table_summaries")
        # A run killed before re-indexing: the next upgrade still asks for it.
        assert migrations.upgrade(con, (*migrations.MIGRATIONS, extra)).reindex
        migrations.reindex_done(con)
        assert not migrations.upgrade(con, (*migrations.MIGRATIONS, extra)).reindex


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
        assert int(_meta(con, "schema_version")) == migrations.SCHEMA_VERSION
        assert _meta(con, migrations.PENDING_REINDEX) is None
        assert con.execute("SELECT count(*) FROM entities").fetchone()[0] > 0
    assert index_paths([folder], index).unchanged
