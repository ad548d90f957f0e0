"""Numbered changes to the index schema, so an index built by an older docsym upgrades in place.

A new index is created at the newest version straight from ``storage/schema.py``. An existing one
gets every migration after the version it records, in order: inside the writer's transaction-safe
copy for DuckDB (``storage/directory/writer.py``), inside one transaction for the shared
PostgreSQL store (``storage/postgres/schema_setup.py``), so a killed upgrade leaves the index as
it was.

Each migration is a function ``mNNN_what(m)`` that states its change literally through a
``Migrator``: the tables it creates with every column and type, the columns it adds, renames or
drops, the rows it backfills. It never reads ``storage/schema.py`` and never changes once
shipped, so renaming or dropping a column later cannot break the steps before it (as simonw/llm's
``m001...`` functions). Types are written as DuckDB names them; the PostgreSQL migrator
translates them. Descriptions are not part of a migration: after migrating, every table's and
column's comment is written again from today's schema.

A migration whose new data the database cannot compute (a new view, a column only the parser can
fill) is flagged ``reindex``: the next ``docsym index`` run re-indexes every document (until then
the new table is empty, the new column NULL), and the flag stays recorded until that re-index has
finished. A flag naming formats (``reindex=("xlsx",)``) re-indexes only the documents of those
formats, for what only their parser fills.

Changing a view: change its row class in ``storage/schema.py``, then append a migration here and
to ``MIGRATIONS``::

    @migration(reindex=True)
    def m009_page_rotation(m: Migrator) -> None:
        \"\"\"the angle a scanned page was turned by before it was read\"\"\"
        m.add_column("pages", "rotation", "INTEGER")

``tests/test_migrations.py`` upgrades an index of the oldest schema and compares it with a new one.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from docsym.storage import schema

PENDING_REINDEX = "reindex_pending"  # what is left to index again: EVERY_DOCUMENT, or formats
EVERY_DOCUMENT = "1"
_FORMAT = re.compile(r"[a-z0-9]+")

# What a migration asks to index again: nothing (False), every document (True), or the documents
# of some formats (("xlsx",)).
Reindex = bool | tuple[str, ...]


class Migrator(ABC):
    """The steps a migration may take, as SQL for one engine; ``run`` executes a statement."""

    @abstractmethod
    def run(self, statement: str) -> None: ...

    def sql_type(self, duckdb_type: str) -> str:
        """A column type in this engine's words (migrations write DuckDB's)."""
        return duckdb_type

    def create_table(
        self, table: str, columns: dict[str, str], indexes: tuple[str, ...] = ()
    ) -> None:
        """``columns`` maps each name to its type and constraint, e.g. "VARCHAR PRIMARY KEY".
        IF NOT EXISTS: some old indexes already hold a table their version did not record."""
        body = ", ".join(f"{name} {self._column(spec)}" for name, spec in columns.items())
        self.run(f"CREATE TABLE IF NOT EXISTS {table} ({body})")
        for column in indexes:
            self.create_index(table, column)

    def create_index(self, table: str, column: str) -> None:
        self.run(f"CREATE INDEX IF NOT EXISTS idx_{table}_{column} ON {table} ({column})")

    def add_column(self, table: str, column: str, sql_type: str) -> None:
        """A nullable column: the rows already there hold NULL until backfilled or re-indexed."""
        self.run(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {self.sql_type(sql_type)}")

    def rename_column(self, table: str, old: str, new: str) -> None:
        self.run(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")

    def drop_column(self, table: str, column: str) -> None:
        """The column, its values and any index on it."""
        self.run(f"ALTER TABLE {table} DROP COLUMN IF EXISTS {column}")

    def execute(self, sql: str) -> None:
        """A backfill or other data change, in SQL both engines read alike."""
        self.run(sql)

    @abstractmethod
    def rekey_entries(self, table: str, expression: str) -> None:
        """Give the vector-store entries of ``table``'s rows the key ``expression`` (SQL over
        ``primary_key``), where this database holds them."""

    def _column(self, spec: str) -> str:
        sql_type, _, constraint = spec.partition(" ")
        return f"{self.sql_type(sql_type)} {constraint}".rstrip()


class DuckDBMigrator(Migrator):
    """The steps on an index directory's DuckDB file."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def run(self, statement: str) -> None:
        self.con.execute(statement)

    def rekey_entries(self, table: str, expression: str) -> None:
        """Nothing here: an index directory keeps its entries in ``vectors.sqlite``, which its
        writer rekeys at the start of the run (``DirectorySink.stale``, in
        ``storage/directory/sink.py``) and publishes with the migrated rows."""

    # DuckDB alters no column of a table that has an index ("entries depend on it"): the
    # table's indexes are lifted and put back, following the column as PostgreSQL's do.
    def rename_column(self, table: str, old: str, new: str) -> None:
        indexes = self._lift_indexes(table)
        super().rename_column(table, old, new)
        for name, columns in indexes:
            self._put_index(name, table, [new if c == old else c for c in columns])

    def drop_column(self, table: str, column: str) -> None:
        indexes = self._lift_indexes(table)
        super().drop_column(table, column)
        for name, columns in indexes:
            if column not in columns:  # PostgreSQL drops an index with its column
                self._put_index(name, table, columns)

    def _lift_indexes(self, table: str) -> list[tuple[str, list[str]]]:
        found = self.con.execute(
            "SELECT index_name, expressions FROM duckdb_indexes() WHERE table_name = ?", [table]
        ).fetchall()
        for name, _ in found:
            self.run(f"DROP INDEX {name}")
        return [(name, _index_columns(expressions)) for name, expressions in found]

    def _put_index(self, name: str, table: str, columns: list[str]) -> None:
        self.run(f"CREATE INDEX {name} ON {table} ({', '.join(columns)})")


def _index_columns(expressions: str) -> list[str]:
    """The columns of DuckDB's ``duckdb_indexes().expressions``, e.g. '[doc_id, "row"]'."""
    return [e.strip().strip('"') for e in expressions.strip("[]").split(",") if e.strip()]


Change = Callable[[Migrator], None]


@dataclass(frozen=True)
class Migration:
    version: int
    summary: str
    change: Change
    reindex: Reindex = False  # the new structure needs data only a re-index can give

    @classmethod
    def of(cls, change: Change, reindex: Reindex = False) -> Migration:
        """The migration a function states: its version from its name (m007_... is 7), its
        summary from its docstring."""
        found = re.fullmatch(r"m(\d{3})_\w+", change.__name__)
        if found is None or not change.__doc__:
            raise ValueError(f"a migration is a function mNNN_what with a docstring, not {change}")
        return cls(int(found[1]), " ".join(change.__doc__.split()), change, reindex)


def migration(reindex: Reindex = False) -> Callable[[Change], Migration]:
    return lambda change: Migration.of(change, reindex)


# -- the migrations: never edit one that has shipped; append a new one ---------------------------


@migration()
def m001_document_views(m: Migrator) -> None:
    """the document views"""
    m.create_table(
        "documents",
        {
            "doc_id": "VARCHAR PRIMARY KEY",
            "path": "VARCHAR NOT NULL",
            "file_name": "VARCHAR",
            "format": "VARCHAR",
            "sha256": "VARCHAR",
            "size_bytes": "BIGINT",
            "page_count": "INTEGER",
            "title": "VARCHAR",
            "authors": "VARCHAR[]",
            "abstract": "VARCHAR",
            "year": "INTEGER",
            "venue": "VARCHAR",
            "doi": "VARCHAR",
            "arxiv_id": "VARCHAR",
            "has_text": "BOOLEAN",
            "tldr": "VARCHAR",
            "indexed_at": "TIMESTAMP",
        },
    )
    m.create_table(
        "pages",
        {
            "page_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "page_number": "INTEGER",
            "width": "DOUBLE",
            "height": "DOUBLE",
            "text": "VARCHAR",
            "has_text": "BOOLEAN",
            "summary": "VARCHAR",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "sections",
        {
            "section_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "parent_id": "VARCHAR",
            "ordinal": "INTEGER",
            "level": "INTEGER",
            "number": "VARCHAR",
            "title": "VARCHAR",
            "content": "VARCHAR",
            "summary": "VARCHAR",
            "page_start": "INTEGER",
            "page_end": "INTEGER",
            "bbox": "DOUBLE[]",
            "source": "VARCHAR",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "chunks",
        {
            "chunk_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "section_id": "VARCHAR",
            "ordinal": "INTEGER",
            "text": "VARCHAR",
            "page_number": "INTEGER",
            "page_end": "INTEGER",
            "token_count": "INTEGER",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "tables",
        {
            "table_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "section_id": "VARCHAR",
            "ordinal": "INTEGER",
            "page_number": "INTEGER",
            "bbox": "DOUBLE[]",
            "label": "VARCHAR",
            "caption": "VARCHAR",
            "html": "VARCHAR",
            "n_rows": "INTEGER",
            "n_cols": "INTEGER",
            "header_rows": "INTEGER",
            "header_cols": "INTEGER",
            "summary": "VARCHAR",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "table_cells",
        {
            "cell_id": "VARCHAR PRIMARY KEY",
            "table_id": "VARCHAR NOT NULL",
            "doc_id": "VARCHAR NOT NULL",
            "row": "INTEGER",
            "col": "INTEGER",
            "row_span": "INTEGER",
            "col_span": "INTEGER",
            "text": "VARCHAR",
            "value": "DOUBLE",
            "unit": "VARCHAR",
            "is_col_header": "BOOLEAN",
            "is_row_header": "BOOLEAN",
            "row_path": "VARCHAR[]",
            "col_path": "VARCHAR[]",
            "page_number": "INTEGER",
            "bbox": "DOUBLE[]",
        },
        indexes=("table_id", "doc_id"),
    )
    m.create_table(
        "images",
        {
            "image_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "section_id": "VARCHAR",
            "ordinal": "INTEGER",
            "page_number": "INTEGER",
            "bbox": "DOUBLE[]",
            "label": "VARCHAR",
            "caption": "VARCHAR",
            "summary": "VARCHAR",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "equations",
        {
            "equation_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "section_id": "VARCHAR",
            "ordinal": "INTEGER",
            "page_number": "INTEGER",
            "bbox": "DOUBLE[]",
            "number": "VARCHAR",
            "text": "VARCHAR",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "doc_references",
        {
            "reference_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "ordinal": "INTEGER",
            "label": "VARCHAR",
            "text": "VARCHAR",
            "year": "INTEGER",
            "doi": "VARCHAR",
            "arxiv_id": "VARCHAR",
            "page_number": "INTEGER",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "tree_nodes",
        {
            "node_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "parent_id": "VARCHAR",
            "ordinal": "INTEGER",
            "depth": "INTEGER",
            "node_type": "VARCHAR",
            "title": "VARCHAR",
            "page_start": "INTEGER",
            "page_end": "INTEGER",
            "ref_table": "VARCHAR",
            "ref_id": "VARCHAR",
        },
        indexes=("doc_id",),
    )


@migration(reindex=True)
def m002_entity_graph(m: Migrator) -> None:
    """the entity graph (entities, relations, entity_links) and row/column summaries of tables"""
    m.create_table(
        "entities",
        {
            "entity_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "name": "VARCHAR",
            "entity_type": "VARCHAR",
            "aliases": "VARCHAR[]",
            "description": "VARCHAR",
            "mention_count": "INTEGER",
            "node_count": "INTEGER",
            "page_number": "INTEGER",
        },
        indexes=("doc_id",),
    )
    m.create_table(
        "relations",
        {
            "relation_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "source_id": "VARCHAR",
            "target_id": "VARCHAR",
            "relation": "VARCHAR",
            "weight": "INTEGER",
            "evidence_node_ids": "VARCHAR[]",
            "evidence": "VARCHAR",
            "page_number": "INTEGER",
        },
        indexes=("doc_id", "source_id", "target_id"),
    )
    m.create_table(
        "entity_links",
        {
            "link_id": "VARCHAR PRIMARY KEY",
            "entity_id": "VARCHAR NOT NULL",
            "node_id": "VARCHAR NOT NULL",
            "doc_id": "VARCHAR NOT NULL",
            "mention_count": "INTEGER",
            "page_number": "INTEGER",
        },
        indexes=("doc_id", "entity_id", "node_id"),
    )
    m.create_table(
        "table_summaries",
        {
            "summary_id": "VARCHAR PRIMARY KEY",
            "table_id": "VARCHAR NOT NULL",
            "doc_id": "VARCHAR NOT NULL",
            "axis": "VARCHAR",
            "level": "INTEGER",
            "path": "VARCHAR[]",
            "text": "VARCHAR",
            "page_number": "INTEGER",
            "bbox": "DOUBLE[]",
            "cell_count": "INTEGER",
        },
        indexes=("table_id", "doc_id"),
    )


@migration(reindex=True)
def m003_citable_evidence(m: Migrator) -> None:
    """citable evidence: sentences with page boxes, chunk and section boxes, page labels"""
    m.create_table(
        "sentences",
        {
            "sentence_id": "VARCHAR PRIMARY KEY",
            "doc_id": "VARCHAR NOT NULL",
            "chunk_id": "VARCHAR NOT NULL",
            "section_id": "VARCHAR",
            "ordinal": "INTEGER NOT NULL",
            "text": "VARCHAR NOT NULL",
            "char_start": "INTEGER NOT NULL",
            "char_end": "INTEGER NOT NULL",
            "page_number": "INTEGER",
            "bbox": "DOUBLE[]",
            "continued": "BOOLEAN NOT NULL",
        },
        indexes=("doc_id", "chunk_id"),
    )
    m.add_column("chunks", "bbox", "DOUBLE[]")
    m.add_column("sections", "boxes", "DOUBLE[][]")
    m.add_column("pages", "label", "VARCHAR")


@migration(reindex=True)
def m004_table_confidence(m: Migrator) -> None:
    """a confidence and the doubts behind it for every table's structure"""
    m.add_column("tables", "confidence", "DOUBLE")
    m.add_column("tables", "doubts", "VARCHAR[]")


@migration(reindex=True)  # scans indexed before had no text: read them now
def m005_ocr(m: Migrator) -> None:
    """scanned pages read by OCR, with the mean confidence of what was read"""
    m.add_column("pages", "ocr", "BOOLEAN")
    m.add_column("pages", "ocr_confidence", "DOUBLE")


@migration()  # such names could not be indexed before: no document lacks its value
def m006_path_bytes(m: Migrator) -> None:
    """the exact bytes of a path that is not readable text (names that are not UTF-8)"""
    m.add_column("documents", "path_bytes", "BLOB")


@migration()
def m007_entity_relation_ids(m: Migrator) -> None:
    """entity ids '<doc_id>-ent<n>' and relation ids '<doc_id>-rel<n>', which had the prefixes of
    equations (-e<n>) and references (-r<n>): rewritten wherever they are held, numbers kept"""
    entity = r"regexp_replace({}, '^([^-]+)-e([0-9]+)', '\1-ent\2')"
    for table, column in (
        ("entities", "entity_id"),
        ("relations", "source_id"),
        ("relations", "target_id"),
        ("entity_links", "entity_id"),
        ("entity_links", "link_id"),
    ):
        m.execute(f"UPDATE {table} SET {column} = {entity.format(column)}")
    m.execute(
        r"UPDATE relations SET relation_id = "
        r"regexp_replace(relation_id, '^([^-]+)-r([0-9]+)$', '\1-rel\2')"
    )
    m.rekey_entries("entities", entity.format("primary_key"))


# Only the XLSX parser can fill it (and the sheets' names as page labels): spreadsheets only are
# indexed again, not every PDF.
@migration(reindex=("xlsx",))
def m008_cell_addresses(m: Migrator) -> None:
    """the A1 address of a spreadsheet cell in its sheet ('C7')"""
    m.add_column("table_cells", "address", "VARCHAR")


@migration()
def m009_failed_files(m: Migrator) -> None:
    """the files a run could not index, with why, until a later run reads them"""
    m.create_table(
        "failed_files",
        {
            "path": "VARCHAR PRIMARY KEY",
            "path_bytes": "BLOB",
            "file_name": "VARCHAR",
            "outcome": "VARCHAR NOT NULL",
            "reason": "VARCHAR NOT NULL",
            "recorded_at": "TIMESTAMP NOT NULL",
        },
    )


@migration()  # NULL until a document is indexed again: no library is re-read for it
def m010_year_source(m: Migrator) -> None:
    """where a document's year was read: printed on its first pages, its arXiv id or DOI, or
    the file's creation date"""
    m.add_column("documents", "year_from", "VARCHAR")


MIGRATIONS: tuple[Migration, ...] = (
    m001_document_views,
    m002_entity_graph,
    m003_citable_evidence,
    m004_table_confidence,
    m005_ocr,
    m006_path_bytes,
    m007_entity_relation_ids,
    m008_cell_addresses,
    m009_failed_files,
    m010_year_source,
)


class SchemaTooNewError(RuntimeError):
    """The index was written by a newer docsym than this one."""


def apply(
    migrator: Migrator, recorded: int, known: tuple[Migration, ...], what: str = "index"
) -> str | None:
    """Run every migration of ``known`` after version ``recorded``; what they ask to index again
    (a ``PENDING_REINDEX`` value), None for nothing. ``what`` names the database in the refusal
    (index or store)."""
    newest = known[-1].version
    if recorded > newest:
        raise SchemaTooNewError(
            f"{what} schema version {recorded} is newer than this docsym ({newest}); upgrade docsym"
        )
    later = [m for m in known if m.version > recorded]
    for m in later:
        m.change(migrator)
    return _scope([m.reindex for m in later])


def _scope(flags: list[Reindex]) -> str | None:
    """The ``PENDING_REINDEX`` value that covers every flag: EVERY_DOCUMENT, 'pptx,xlsx' (the
    documents of those formats), or None."""
    if any(flag is True for flag in flags):
        return EVERY_DOCUMENT
    formats = sorted({f for flag in flags if isinstance(flag, tuple) for f in flag})
    return ",".join(formats) or None


def _flags(scope: str | None) -> list[Reindex]:
    """The flags a ``PENDING_REINDEX`` value stands for (the inverse of ``_scope``)."""
    if not scope:
        return []
    return [True] if scope == EVERY_DOCUMENT else [tuple(scope.split(","))]


def pending_after(scope: str | None, pending: str | None) -> str | None:
    """What is left to index again once migrations asking for ``scope`` ran over an index that
    still had ``pending`` from an unfinished upgrade."""
    return _scope(_flags(pending) + _flags(scope))


def documents_to_reindex(con: Any, scope: str | None) -> set[str]:
    """The doc ids ``scope`` (a ``PENDING_REINDEX`` value) asks to index again; ``con`` is a
    DuckDB or psycopg connection."""
    if not scope:
        return set()
    sql = "SELECT doc_id FROM documents"
    if scope != EVERY_DOCUMENT:
        formats = scope.split(",")
        if not all(_FORMAT.fullmatch(f) for f in formats):
            raise ValueError(f"{PENDING_REINDEX} holds {scope!r}, not format names")
        sql += " WHERE format IN (" + ", ".join(f"'{f}'" for f in formats) + ")"
    return {doc_id for (doc_id,) in con.execute(sql).fetchall()}


@dataclass(frozen=True)
class Upgrade:
    from_version: int
    to_version: int
    reindex: bool  # documents must be indexed again (now, or left from an unfinished upgrade)


def upgrade(con: duckdb.DuckDBPyConnection, known: tuple[Migration, ...] = MIGRATIONS) -> Upgrade:
    """Bring the DuckDB index at ``con`` to the newest version of ``known``."""
    newest = known[-1].version
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {schema.META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)"
    )
    recorded = read_meta(con, "schema_version")
    is_new = recorded is None and not _has_table(con, "documents")
    # Indexes older than version records hold the first views only.
    version = newest if is_new else int(recorded or 1)
    if is_new:
        for statement in schema.ddl():
            con.execute(statement)
        scope = None
    else:
        scope = apply(DuckDBMigrator(con), version, known)
        for statement in schema.comments():  # descriptions may have improved
            con.execute(statement)
    write_meta(con, "schema_version", str(newest))
    if documents_to_reindex(con, scope):
        write_meta(con, PENDING_REINDEX, pending_after(scope, read_meta(con, PENDING_REINDEX)))
    return Upgrade(version, newest, read_meta(con, PENDING_REINDEX) is not None)


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
