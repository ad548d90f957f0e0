"""The PostgreSQL schema, from the same declarations as the DuckDB one (``storage/schema.py``).

Views become tables with the same columns, comments and indexes; DuckDB types map to their
PostgreSQL names. The vector side lives beside them: ``entries`` (one row per encodable cell,
with a ``tsvector`` for keyword search), ``lexemes`` (document frequencies for BM25) and one
``vec_<collection>`` table per embedding model with an HNSW index.

A read-only role runs client SQL: it may SELECT the views and nothing else. Functions that
would let one statement reach further are revoked from it: ``set_config`` (a statement could
lift its own time limit mid-query), the large-object functions (``lo_create`` and
``lo_from_bytea`` write even in a read-only transaction), and the file and server functions,
which are superuser-only anyway. So is what describes the server rather than the index: its
settings, the other sessions' statements (every server logs in as this one role, so "its own"
sessions are other clients'), its address, version and tablespace paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from docsym.storage import schema
from docsym.storage.rows import Table

READER_ROLE = "docsym_reader"
ENTRIES = "entries"
# An entry's text key in queries over ``entries e`` (see storage.entries.text_key).
TEXT_KEY = "coalesce(e.text_key, -e.id)"
# Text search configuration: English (Snowball) stemming that keeps stop words, as FTS5's
# porter tokenizer does (BM25 weighs them low; dropping them changed which view ranked first).
TEXT_CONFIG = "docsym_english"

_TYPES = {
    "VARCHAR": "text",
    "INTEGER": "integer",
    "BIGINT": "bigint",
    "DOUBLE": "double precision",
    "BOOLEAN": "boolean",
    "TIMESTAMP": "timestamp",
    "VARCHAR[]": "text[]",
    "DOUBLE[]": "double precision[]",
    "DOUBLE[][]": "double precision[][]",
    "BLOB": "bytea",
}

# Functions a statement could use to change its own limits or write outside the views.
_REVOKED = (
    "set_config(text, text, boolean)",
    "lo_create(oid)",
    "lo_creat(integer)",
    "lo_from_bytea(oid, bytea)",
    "lo_import(text)",
    "lo_import(text, oid)",
    "lo_export(oid, text)",
    "lo_put(oid, bigint, bytea)",
    "lo_unlink(oid)",
    "lo_truncate(integer, integer)",
    "lowrite(integer, bytea)",
)


# What the server shows PUBLIC about itself, by name (LIKE patterns) in pg_catalog: settings,
# other sessions (statements, addresses, locks, progress), and the host (address, version,
# tablespace and relation paths, control file). Revoked in the store's database only.
_HOST_FACT_FUNCTIONS = (
    "current_setting",
    "pg_show_all_settings",
    "pg_stat_get_activity",
    "pg_stat_get_backend_%",
    "pg_stat_get_progress_info",
    "pg_stat_get_wal_senders",
    "pg_stat_get_wal_receiver",
    "pg_stat_get_subscription",
    "pg_lock_status",
    "pg_blocking_pids",
    "pg_safe_snapshot_blocking_pids",
    "inet_server_addr",
    "inet_server_port",
    "version",
    "pg_tablespace_location",
    "pg_relation_filepath",
    "pg_control_%",
    "pg_postmaster_start_time",
    "pg_conf_load_time",
)
_HOST_FACT_VIEWS = (
    "pg_settings",
    "pg_stat_activity",
    "pg_stat_ssl",
    "pg_stat_gssapi",
    "pg_stat_progress_%",
    "pg_stat_replication",
    "pg_stat_wal_receiver",
    "pg_stat_subscription",
    "pg_locks",
)


def pg_type(duckdb_type: str) -> str:
    return _TYPES[duckdb_type]


def indexed_columns(columns: Iterable[str], indexes: tuple[str, ...]) -> tuple[str, ...]:
    """The columns of a table to index here: those its declaration names, and doc_id wherever
    there is one, since every document is deleted and rewritten by doc_id."""
    if "doc_id" in columns and "doc_id" not in indexes:
        return (*indexes, "doc_id")
    return indexes


def create_table(t: Table) -> list[str]:
    names = [c.name for c in t.columns]
    return schema.create_table(replace(t, indexes=indexed_columns(names, t.indexes)), pg_type)


def views() -> list[str]:
    """Every view's table and its indexes (idempotent); the descriptions are
    ``schema.comments()``."""
    statements = [
        f"CREATE TABLE IF NOT EXISTS {schema.META_TABLE} (key text PRIMARY KEY, value text)"
    ]
    for t in (*schema.TABLES, *schema.RECORDS):
        statements += create_table(t)
    return statements


def text_search() -> list[str]:
    """The keyword side's configuration: PostgreSQL's english one, stop words kept."""
    return [
        """DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_ts_dict WHERE dictname = 'docsym_stem') THEN
                CREATE TEXT SEARCH DICTIONARY docsym_stem (TEMPLATE = snowball, Language = english);
            END IF;
            IF NOT EXISTS (SELECT FROM pg_ts_config WHERE cfgname = 'docsym_english') THEN
                CREATE TEXT SEARCH CONFIGURATION docsym_english (COPY = english);
                ALTER TEXT SEARCH CONFIGURATION docsym_english
                    ALTER MAPPING FOR asciiword, word, hword, hword_part, asciihword,
                        hword_asciipart
                    WITH docsym_stem;
            END IF; END $$""",
    ]


def vector_side() -> list[str]:
    return [
        *text_search(),
        """CREATE TABLE IF NOT EXISTS collections (
            name text PRIMARY KEY, kind text NOT NULL, model text, dim integer)""",
        f"""CREATE TABLE IF NOT EXISTS {ENTRIES} (
            id bigserial PRIMARY KEY,
            table_name text NOT NULL, column_name text NOT NULL, primary_key text NOT NULL,
            doc_id text NOT NULL, page_number integer, text text NOT NULL,
            keyword boolean NOT NULL,
            tsv tsvector NOT NULL, length integer NOT NULL, text_key bigint)""",
        # Entries written before text keys have none (each is its own text: TEXT_KEY) until
        # their documents are indexed again.
        f"ALTER TABLE {ENTRIES} ADD COLUMN IF NOT EXISTS text_key bigint",
        f"CREATE INDEX IF NOT EXISTS entries_doc ON {ENTRIES} (doc_id)",
        f"CREATE INDEX IF NOT EXISTS entries_text_key ON {ENTRIES} (text_key)",
        f"CREATE INDEX IF NOT EXISTS entries_view ON {ENTRIES} (table_name, column_name)",
        f"CREATE INDEX IF NOT EXISTS entries_tsv ON {ENTRIES} USING gin (tsv) WHERE keyword",
        # BM25's collection statistics, kept in step with entries by each writer's transaction.
        "CREATE TABLE IF NOT EXISTS lexemes (lexeme text PRIMARY KEY, df bigint NOT NULL)",
        # Keyword entries and their summed length (BM25), and a counter every write raises
        # (servers rebuild what they derived from the store when it moves).
        """CREATE TABLE IF NOT EXISTS store_state (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            entries bigint NOT NULL, length bigint NOT NULL, version bigint NOT NULL)""",
        "INSERT INTO store_state VALUES (true, 0, 0, 0) ON CONFLICT DO NOTHING",
        "INSERT INTO collections VALUES ('bm25', 'tsvector', NULL, NULL) ON CONFLICT DO NOTHING",
    ]


def awaiting_vectors(vector_tables: list[str]) -> str:
    """SQL: the documents with entries of which none has a vector in any of ``vector_tables``
    (a document's vectors are written in one transaction, so a document has all or none;
    one that lost some is damaged, which ``docsym check`` reports, not awaiting)."""
    has_vector = " OR ".join(
        f"EXISTS (SELECT 1 FROM {table} v WHERE v.id = e.id)" for table in vector_tables
    )
    # The documents skipped through from one doc_id to the next on entries_doc, and each asked
    # for one entry with a vector: a GROUP BY read every entry of the library.
    return (
        "WITH RECURSIVE d(doc_id) AS ("
        f"(SELECT doc_id FROM {ENTRIES} ORDER BY doc_id LIMIT 1) UNION ALL "
        f"SELECT (SELECT e.doc_id FROM {ENTRIES} e WHERE e.doc_id > d.doc_id "
        "ORDER BY e.doc_id LIMIT 1) FROM d WHERE d.doc_id IS NOT NULL) "
        "SELECT doc_id FROM d WHERE doc_id IS NOT NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {ENTRIES} e WHERE e.doc_id = d.doc_id AND ({has_vector or 'false'}))"
    )


def vector_table(name: str, dim: int) -> list[str]:
    """A collection's vectors and their HNSW index (cosine distance)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {name} (
            id bigint PRIMARY KEY REFERENCES {ENTRIES} (id) ON DELETE CASCADE,
            embedding vector({int(dim)}) NOT NULL)""",
        f"CREATE INDEX IF NOT EXISTS {name}_hnsw ON {name} "
        "USING hnsw (embedding vector_cosine_ops)",
    ]


def reader_role(password: str | None, limits: dict[str, str]) -> list[str]:
    """The role client SQL runs as: SELECT on the views, its limits as role defaults (which
    a statement cannot lift: ``temp_file_limit`` is for superusers to set, and ``set_config``
    is revoked, so a statement cannot change a limit while it runs)."""
    login = "LOGIN PASSWORD " + schema.sql_str(password) if password else "LOGIN"
    statements = [
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
                CREATE ROLE {READER_ROLE} {login} NOSUPERUSER NOCREATEDB NOCREATEROLE;
            END IF; END $$""",
        f"GRANT USAGE ON SCHEMA public TO {READER_ROLE}",
        f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {READER_ROLE}",
    ]
    # The views and the schema's bookkeeping only: not the vector side's tables.
    statements += [
        f"GRANT SELECT ON {name} TO {READER_ROLE}"
        for name in [schema.META_TABLE, *(t.name for t in (*schema.TABLES, *schema.RECORDS))]
    ]
    # Set for this database only, so stores on one server keep their own limits. temp_file_limit
    # is set by a superuser only; where the store's owner is not one (a managed database), the
    # role keeps the server's default and the statement timeout holds.
    statements += [
        f"""DO $$ BEGIN
            EXECUTE format('ALTER ROLE {READER_ROLE} IN DATABASE %I SET {name} = %L',
                           current_database(), '{value}');
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE WARNING 'docsym: cannot set {name} for {READER_ROLE}'; END $$"""
        for name, value in limits.items()
    ]
    statements += [f"REVOKE EXECUTE ON FUNCTION {f} FROM PUBLIC" for f in _REVOKED]
    return [*statements, _revoke_host_facts()]


def _revoke_host_facts() -> str:
    """Revoke from PUBLIC what shows the server (as it is found: the functions' signatures vary
    between PostgreSQL versions); warn where the store's owner may not (not a superuser)."""
    functions = ", ".join(schema.sql_str(f) for f in _HOST_FACT_FUNCTIONS)
    views = ", ".join(schema.sql_str(v) for v in _HOST_FACT_VIEWS)
    warn = (
        "RAISE WARNING 'docsym: only a superuser can hide the server''s settings and sessions "
        f"from {READER_ROLE}: run docsym index once as one'"
    )
    return f"""DO $$ DECLARE f regprocedure; v regclass; BEGIN
        FOR f IN SELECT oid FROM pg_proc WHERE pronamespace = 'pg_catalog'::regnamespace
                 AND proname LIKE ANY (ARRAY[{functions}]) LOOP
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        END LOOP;
        FOR v IN SELECT oid FROM pg_class WHERE relnamespace = 'pg_catalog'::regnamespace
                 AND relkind = 'v' AND relname LIKE ANY (ARRAY[{views}]) LOOP
            EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', v);
        END LOOP;
        IF has_function_privilege('{READER_ROLE}', 'current_setting(text)', 'EXECUTE') THEN
            {warn};
        END IF;
        EXCEPTION WHEN insufficient_privilege THEN {warn}; END $$"""
