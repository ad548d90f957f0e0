"""Create or upgrade the PostgreSQL store's schema, once, whoever connects first.

Several indexers may start at once on an empty database; a transaction-level advisory lock makes
one of them create the schema while the others wait, then find it there. A new store is created
from ``storage/schema.py``; an existing one runs the frozen migrations after its recorded version
(``storage/migrations.py``), as an index directory does.
"""

from __future__ import annotations

import hashlib

import psycopg

from docsym.runtime.settings import get_settings
from docsym.storage import migrations, schema
from docsym.storage.postgres import ddl

_SCHEMA_LOCK = 0x646F6373  # advisory lock key: "docs"


class PostgresMigrator(migrations.Migrator):
    """The migrations' steps in PostgreSQL's words. PostgreSQL alters indexed tables in place,
    and an index follows its column's rename and goes with its drop."""

    def __init__(self, con: psycopg.Connection) -> None:
        self.con = con

    def run(self, statement: str) -> None:
        self.con.execute(statement)

    def sql_type(self, duckdb_type: str) -> str:
        return ddl.pg_type(duckdb_type)

    def create_table(
        self, table: str, columns: dict[str, str], indexes: tuple[str, ...] = ()
    ) -> None:
        super().create_table(table, columns, ddl.indexed_columns(columns, indexes))

    def rekey_entries(self, table: str, expression: str) -> None:
        """The store's entries (absent in a store whose vector side is not made yet), and a
        move of its version, so servers rebuild what they derived from the old keys."""
        if self.con.execute("SELECT to_regclass(%s)", [ddl.ENTRIES]).fetchone()[0] is None:
            return
        self.run(
            f"UPDATE {ddl.ENTRIES} SET primary_key = {expression} WHERE table_name = '{table}'"
        )
        if self.con.execute("SELECT to_regclass('store_state')").fetchone()[0] is not None:
            self.run("UPDATE store_state SET version = version + 1")


def ensure_schema(
    con: psycopg.Connection, known: tuple[migrations.Migration, ...] = migrations.MIGRATIONS
) -> bool:
    """Bring the store to the newest schema of ``known``; True if its documents must be indexed
    again."""
    with con.transaction():
        con.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
        con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        recorded = _recorded_version(con)
        newest = known[-1].version
        if recorded is None:  # a new store, at the newest version
            for statement in ddl.views():
                con.execute(statement)
            scope = None
        else:
            scope = migrations.apply(PostgresMigrator(con), recorded, known, "store")
        s = get_settings()
        limits = {
            "statement_timeout": f"{int(s.sql_seconds * 1000)}ms",
            "temp_file_limit": f"{s.sql_memory_mb}MB",  # what sorts may spill to disk
            "work_mem": "64MB",
        }
        statements = [
            *schema.comments(),  # descriptions may have improved
            *ddl.vector_side(),
            *ddl.reader_role(_secret(s.pg_reader_password), limits),
        ]
        # Only when something changed: CREATE INDEX takes a lock that waits for every open
        # write, so a second indexer would wait for the first one's document to commit.
        fingerprint = hashlib.sha256("\n".join(statements).encode()).hexdigest()
        if read_meta_if_any(con, "schema_fingerprint") != fingerprint:
            for statement in statements:
                con.execute(statement)
            _write_meta(con, "schema_fingerprint", fingerprint)
        _write_meta(con, "schema_version", str(newest))
        if migrations.documents_to_reindex(con, scope):
            pending = read_meta(con, migrations.PENDING_REINDEX)
            _write_meta(con, migrations.PENDING_REINDEX, migrations.pending_after(scope, pending))
        return read_meta(con, migrations.PENDING_REINDEX) is not None


def reindex_done(con: psycopg.Connection) -> None:
    con.execute(f"DELETE FROM {schema.META_TABLE} WHERE key = %s", [migrations.PENDING_REINDEX])


def read_meta(con: psycopg.Connection, key: str) -> str | None:
    row = con.execute(f"SELECT value FROM {schema.META_TABLE} WHERE key = %s", [key]).fetchone()
    return None if row is None else row[0]


def read_meta_if_any(con: psycopg.Connection, key: str) -> str | None:
    """A bookkeeping value, None if unset or if the store has no schema yet."""
    exists = con.execute("SELECT to_regclass(%s)", [schema.META_TABLE]).fetchone()[0]
    return None if exists is None else read_meta(con, key)


def _recorded_version(con: psycopg.Connection) -> int | None:
    value = read_meta_if_any(con, "schema_version")
    return int(value) if value is not None else None


def _write_meta(con: psycopg.Connection, key: str, value: str) -> None:
    con.execute(
        f"INSERT INTO {schema.META_TABLE} VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


def _secret(value) -> str | None:
    return value.get_secret_value() if value is not None else None
