"""An index directory's DuckDB rows in segments, so a publish costs what changed, not the library.

A publish used to copy the whole database file and rename the copy over ``index.duckdb``: at
200 papers a 500 MB index, at 10,000 papers gigabytes on every publish, which a watched folder
makes frequent. Now the rows live in a list of immutable segment files, oldest (largest) first,
and the writer works on a small *head*; readers see the union of the segments.

- **At rest, a small index is one file**, ``index.duckdb``, exactly as before: a run that ends
  with the whole index under DOCSYM_CONSOLIDATE_MB folds its segments back into it.
- **A publish** copies the head only. Once the head reaches DOCSYM_SEGMENT_MB it is *frozen*:
  renamed into ``segments/`` (no copy) and a new empty head started. Frozen segments are merged
  geometrically (the newest into the one before once it reaches ``1 / MERGE_RATIO`` of its
  size), so there are O(log n) segments and each row is copied O(log n) times in all.
- **The manifest** (``segments.json``, replaced atomically) lists the published segments; with
  none, ``index.duckdb`` alone is the index. Its replacement is the moment of publishing, as
  the rename of ``index.duckdb`` is for a single file.
- **Removals are tombstones**: a document written or removed in a newer segment hides its rows
  in older ones, through the newer segment's ``docsym_gone`` table. Tables without a ``doc_id``
  (the index's meta and failed-file records) are read from the newest segment only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from docsym.runtime.settings import get_settings
from docsym.storage import schema
from docsym.storage.paths import IndexPaths

MB = 1 << 20
MERGE_RATIO = 4  # a segment merges into the older one once it is a quarter of its size
GONE_TABLE = "docsym_gone"
GONE_DDL = f"CREATE TABLE IF NOT EXISTS {GONE_TABLE} (doc_id VARCHAR PRIMARY KEY)"
# The views' tables: those with a doc_id are the union of the segments; the rest (meta, failed
# files) are the newest segment's.
DOC_TABLES: tuple[str, ...] = tuple(t.name for t in schema.TABLES)
NEWEST_ONLY: tuple[str, ...] = (schema.META_TABLE, *(t.name for t in schema.RECORDS))
# A segment's meta key saying its rows are in document order whole, not only in runs: set when a
# run's end writes it so (``write_in_document_order``), gone once a merge adds rows to it.
IN_ORDER_KEY = "rows_in_document_order"


@dataclass(frozen=True)
class Published:
    """What readers see: segment files oldest first (one: ``index.duckdb`` with no manifest)."""

    files: tuple[Path, ...]
    manifest: bool  # listed by segments.json, rather than index.duckdb alone


def published(paths: IndexPaths) -> Published:
    """The published segments (none when nothing was published yet)."""
    try:
        listed = json.loads(paths.manifest.read_text())["segments"]
    except FileNotFoundError:
        single = (paths.duckdb,) if paths.duckdb.exists() else ()
        return Published(single, manifest=False)
    return Published(tuple(paths.root / name for name in listed), manifest=True)


def write_manifest(paths: IndexPaths, files: list[Path]) -> None:
    """Publish ``files`` as the index, atomically (the old manifest's readers keep theirs)."""
    names = [str(f.relative_to(paths.root)) for f in files]
    staging = paths.root / f".{paths.manifest.name}.publish"
    with open(staging, "w") as out:
        json.dump({"segments": names}, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(staging, paths.manifest)


def segment_path(paths: IndexPaths, generation: int, serial: int) -> Path:
    """A new segment's file: named by the generation that made it, never reused."""
    return paths.segments / f"g{generation:08d}-{serial}.duckdb"


def library_views(catalogs: list[str], gone: dict[str, bool], *, writer: bool = False) -> list[str]:
    """CREATE VIEW statements over attached segments ``catalogs`` (oldest first): each doc table
    the union of the segments' rows less those hidden by a newer segment's tombstones, each
    other table the newest segment's. ``gone[c]``: whether segment ``c`` holds tombstones.
    For the ``writer``, whose head is the newest segment, temporary views of the doc tables
    only: they shadow the head's tables for reads, and its writes name the head's."""
    create = "CREATE OR REPLACE TEMP VIEW" if writer else "CREATE VIEW"
    statements = []
    for table in DOC_TABLES:
        parts = []
        for n, catalog in enumerate(catalogs):
            hidden = _hidden(catalogs, gone, n)
            where = f" WHERE doc_id NOT IN ({hidden})" if hidden else ""
            parts.append(f"SELECT * FROM {catalog}.{table}{where}")
        # By name: a file migrated from an older schema orders its columns otherwise.
        statements.append(f"{create} {table} AS {' UNION ALL BY NAME '.join(parts)}")
    if not writer:
        newest = catalogs[-1]
        statements += [f"{create} {t} AS SELECT * FROM {newest}.{t}" for t in NEWEST_ONLY]
    return statements


def count_statements(catalogs: list[str], gone: dict[str, bool], table: str) -> list[str]:
    """Statements whose counts, the first positive and the rest negative, add up to the rows of
    ``table`` readers see: each segment's rows (a count DuckDB keeps, read without a scan) less
    those a newer segment's tombstones hide. A count through the view scans every segment's
    first column instead (1.7 s for 7M sentences at 10,000 papers)."""
    statements = [
        " + ".join(f"(SELECT count(*) FROM {c}.{table})" for c in catalogs).join(("SELECT ", ""))
    ]
    for n, catalog in enumerate(catalogs):
        hidden = _hidden(catalogs, gone, n)
        if hidden:
            statements.append(f"SELECT count(*) FROM {catalog}.{table} WHERE doc_id IN ({hidden})")
    return statements


def _hidden(catalogs: list[str], gone: dict[str, bool], n: int) -> str:
    """A query of the doc ids newer segments than ``catalogs[n]`` hide ("" for none)."""
    newer = [c for c in catalogs[n + 1 :] if gone[c]]
    return " UNION ALL ".join(f"SELECT doc_id FROM {c}.{GONE_TABLE}" for c in newer)


def attach(con: duckdb.DuckDBPyConnection, path: Path, catalog: str) -> None:
    """Attach the segment at ``path`` read-only as ``catalog``."""
    escaped = str(path).replace("'", "''")
    con.execute(f"ATTACH '{escaped}' AS {catalog} (READ_ONLY)")


def has_gone(con, catalog: str) -> bool:
    """Whether the attached segment ``catalog`` holds tombstones (older files have no table)."""
    (found,) = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = ?",
        [catalog, GONE_TABLE],
    ).fetchone()
    if not found:
        return False
    return con.execute(f"SELECT count(*) FROM {catalog}.{GONE_TABLE}").fetchone()[0] > 0


def head_bytes() -> int:
    """A head this large is frozen, not copied, at its next publish."""
    return int(get_settings().segment_mb * MB)


def consolidate_bytes() -> int:
    """A run ending with an index this small in all leaves one file."""
    return int(get_settings().consolidate_mb * MB)


def size(files: list[Path] | tuple[Path, ...]) -> int:
    return sum(f.stat().st_size for f in files)


def schema_version(path: Path) -> int | None:
    """The schema version a published file records (None for a file older than records)."""
    with duckdb.connect(str(path), read_only=True) as con:
        try:
            row = con.execute(
                f"SELECT value FROM {schema.META_TABLE} WHERE key = 'schema_version'"
            ).fetchone()
        except duckdb.CatalogException:
            return None
    return int(row[0]) if row else None


def merge_into(target: Path, newer: Path) -> None:
    """Fold segment ``newer`` into ``target`` (a private file, the segment before it): rows its
    tombstones hide go, its rows and tombstones are added, its meta and records replace
    ``target``'s (they are the newer ones).

    The rows added are ordered by document. Document ids are hashes, so rows written as the
    documents came give every block of rows DuckDB reads a range of ids spanning nearly all of
    them, and a statement about one document reads every block of a table. Each merge's rows in
    id order are a run of blocks with narrow ranges, which DuckDB skips unless one can hold the
    document; a run's end writes large segments whole in order (``write_in_document_order``),
    one block of each table then holding a document (docs/ARCHITECTURE.md, "Segments")."""
    with duckdb.connect(str(target)) as con:
        attach(con, newer, "newer")
        gone = has_gone(con, "newer")
        if gone:
            con.execute(GONE_DDL)
        con.execute("BEGIN TRANSACTION")
        for table in DOC_TABLES:
            if gone:
                hidden = f"SELECT doc_id FROM newer.{GONE_TABLE}"
                con.execute(f"DELETE FROM {table} WHERE doc_id IN ({hidden})")
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT * FROM newer.{table} ORDER BY doc_id, rowid"
            )
        if gone:
            con.execute(
                f"INSERT INTO {GONE_TABLE} SELECT doc_id FROM newer.{GONE_TABLE} "
                "ON CONFLICT DO NOTHING"
            )
        _copy_newest_only(con, "newer")
        con.execute(f"DELETE FROM {schema.META_TABLE} WHERE key = ?", [IN_ORDER_KEY])
        con.execute("COMMIT")
        con.execute("DETACH newer")
        con.execute("CHECKPOINT")


def _copy_newest_only(con: duckdb.DuckDBPyConnection, source: str) -> None:
    """The meta and records of catalog ``source`` in place of the connection's own."""
    for table in NEWEST_ONLY:
        con.execute(f"DELETE FROM {table}")
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {source}.{table}")


def in_document_order(path: Path) -> bool:
    """Whether a segment's rows are in document order whole (``write_in_document_order``)."""
    with duckdb.connect(str(path), read_only=True) as con:
        found = con.execute(
            f"SELECT value FROM {schema.META_TABLE} WHERE key = ?", [IN_ORDER_KEY]
        ).fetchone()
    return found is not None


def write_in_document_order(source: Path, target: Path) -> None:
    """Write segment ``source``'s rows into the new file ``target`` with every view's rows in
    document order: a statement about one document then reads one block of rows of each table
    instead of one of each run its merges left. It reads and writes the whole segment, so an
    index run does it at its end, not in a publish."""
    with duckdb.connect(str(target)) as con:
        for statement in schema.ddl():
            con.execute(statement)
        attach(con, source, "source")
        gone = has_gone(con, "source")
        if gone:
            con.execute(GONE_DDL)
            con.execute(f"INSERT INTO {GONE_TABLE} SELECT doc_id FROM source.{GONE_TABLE}")
        for table in DOC_TABLES:
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT * FROM source.{table} ORDER BY doc_id, rowid"
            )
        _copy_newest_only(con, "source")
        con.execute(
            f"INSERT OR REPLACE INTO {schema.META_TABLE} VALUES (?, ?)", [IN_ORDER_KEY, "doc_id"]
        )
        con.execute("DETACH source")
        con.execute("CHECKPOINT")


def drop_tombstones(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(f"DROP TABLE IF EXISTS {GONE_TABLE}")
        con.execute("CHECKPOINT")
