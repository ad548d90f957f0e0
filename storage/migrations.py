"""Numbered changes to the DuckDB schema, so an index built by an older docsym upgrades in place.

A new index is created at the newest version straight from ``storage/schema.py``. An existing one
gets every migration after the version it records, in order, inside the writer's transaction-safe
copy (``storage/writer.py``), so a killed upgrade leaves the published index as it was.

Steps name what changed, not how it is typed: ``CreateTable("entities")`` and
``AddColumn("pages", "label")`` take the type, constraints and description from the schema
module, so nothing is declared twice. A migration whose new data the database cannot compute (a
new view, a column only the parser can fill) is flagged ``reindex``: the next ``docsym index``
run re-indexes every document (until then the new table is empty, the new column NULL), and the
flag stays recorded until that re-index has finished.

Adding a column to a view: add the field to its row class in ``storage/schema.py``, then append
``Migration(N + 1, "what and why", (AddColumn(table, column),), reindex=...)`` here.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from docsym.storage import schema

PENDING_REINDEX = "reindex_pending"


@dataclass(frozen=True)
class CreateTable:
    table: str

    def statements(self) -> list[str]:
        return schema.create_table(schema.table(self.table))


@dataclass(frozen=True)
class AddColumn:
    table: str
    column: str

    def statements(self) -> list[str]:
        c = schema.table(self.table).column(self.column)
        return [f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS {c.name} {c.type}"]


Step = CreateTable | AddColumn


@dataclass(frozen=True)
class Migration:
    version: int
    summary: str
    steps: tuple[Step, ...]
    reindex: bool = False  # the new structure needs data only a re-index can give


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "the document views",
        tuple(
            CreateTable(name)
            for name in (
                "documents",
                "pages",
                "sections",
                "chunks",
                "tables",
                "table_cells",
                "images",
                "equations",
                "doc_references",
                "tree_nodes",
            )
        ),
    ),
    Migration(
        2,
        "the entity graph (entities, relations, entity_links) and row/column summaries of tables",
        (
            CreateTable("entities"),
            CreateTable("relations"),
            CreateTable("entity_links"),
            CreateTable("table_summaries"),
        ),
        reindex=True,
    ),
    Migration(
        3,
        "citable evidence: sentences with page boxes, chunk and section boxes, page labels",
        (
            CreateTable("sentences"),
            AddColumn("chunks", "bbox"),
            AddColumn("sections", "boxes"),
            AddColumn("pages", "label"),
        ),
        reindex=True,
    ),
    Migration(
        4,
        "a confidence and the doubts behind it for every table's structure",
        (AddColumn("tables", "confidence"), AddColumn("tables", "doubts")),
        reindex=True,
    ),
    Migration(
        5,
        "scanned pages read by OCR, with the mean confidence of what was read",
        (AddColumn("pages", "ocr"), AddColumn("pages", "ocr_confidence")),
        reindex=True,  # scans indexed before had no text: read them now
    ),
    Migration(
        6,
        "the exact bytes of a path that is not readable text (names that are not UTF-8)",
        (AddColumn("documents", "path_bytes"),),  # such names could not be indexed before
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


class SchemaTooNewError(RuntimeError):
    """The index was written by a newer docsym than this one."""


@dataclass(frozen=True)
class Upgrade:
    from_version: int
    to_version: int
    reindex: bool  # documents must be indexed again (now, or left from an unfinished upgrade)


def upgrade(
    con: duckdb.DuckDBPyConnection, migrations: tuple[Migration, ...] = MIGRATIONS
) -> Upgrade:
    """Bring the database at ``con`` to the newest version of ``migrations``."""
    newest = migrations[-1].version
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {schema.META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)"
    )
    recorded = read_meta(con, "schema_version")
    is_new = recorded is None and not _has_table(con, "documents")
    # Indexes older than version records hold the first views only.
    version = newest if is_new else int(recorded or 1)
    if version > newest:
        raise SchemaTooNewError(
            f"index schema version {version} is newer than this docsym ({newest}); upgrade docsym"
        )
    reindex = False
    for migration in migrations:
        if migration.version > version:
            for step in migration.steps:
                for statement in step.statements():
                    con.execute(statement)
            reindex |= migration.reindex
    for statement in schema.ddl():  # a new index; and descriptions may have improved
        con.execute(statement)
    write_meta(con, "schema_version", str(newest))
    if reindex and _count(con, "documents"):
        write_meta(con, PENDING_REINDEX, "1")
    return Upgrade(version, newest, read_meta(con, PENDING_REINDEX) == "1")


def reindex_done(con: duckdb.DuckDBPyConnection) -> None:
    """Record that every document now has the rows of the current schema."""
    con.execute(f"DELETE FROM {schema.META_TABLE} WHERE key = ?", [PENDING_REINDEX])


def read_meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A value of the index's own bookkeeping (docsym_meta), None if unset."""
    row = con.execute(f"SELECT value FROM {schema.META_TABLE} WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]


def write_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute(f"INSERT OR REPLACE INTO {schema.META_TABLE} VALUES (?, ?)", [key, value])


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchone()
    return bool(found and found[0])


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
