"""Write documents into the PostgreSQL store in two stages, each one transaction: a document's
rows and entries (searchable by keyword once committed), then its entries' vectors. Readers never
see half a stage, and no copy needs publishing.

Keyword search keeps BM25's statistics beside the entries: ``lexemes`` (how many entries hold
each stem) and ``store_state`` (entries and their summed length). They change in the same
transaction as the entries, at its end and in lexeme order, so concurrent writers wait for each
other's counts only briefly and never deadlock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psycopg

from docsym.storage import failed_files, migrations, run_state, schema
from docsym.storage.entries import Entry, vec_table
from docsym.storage.file_names import original_path, readable, stored_path
from docsym.storage.postgres import ddl
from docsym.storage.postgres.connect import connect
from docsym.storage.postgres.schema_setup import ensure_schema, read_meta, reindex_done
from docsym.storage.postgres.store import to_pyformat
from docsym.storage.rows import DocumentRows, Row, Table

# An entry's length for BM25: its words, as positions in its text-search vector.
_LENGTH = "(SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest(tsv))"


class PostgresWriter:
    def __init__(self, url: str) -> None:
        self.url = url
        self._con: psycopg.Connection | None = None
        self._claims: psycopg.Connection | None = None
        self.needs_reindex = False

    def __enter__(self) -> PostgresWriter:
        con = psycopg.connect(self.url)
        try:
            self.needs_reindex = ensure_schema(con)
        finally:
            con.close()
        self._con = connect(self.url)
        # Claims are session advisory locks on a connection of their own: they end with the
        # process that holds them, however it ends (the server sees its connection close).
        self._claims = psycopg.connect(self.url, autocommit=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._con is not None and self._claims is not None:
            with contextlib.suppress(psycopg.Error):  # a lost connection ends the record too
                self._end_run()
        for con in (self._con, self._claims):
            if con is not None:
                con.close()
        self._con = self._claims = None

    @property
    def con(self) -> psycopg.Connection:
        assert self._con is not None, "use PostgresWriter as a context manager"
        return self._con

    # -- what the indexer reads ----------------------------------------------------------
    def documents_by_path(self) -> dict[str, tuple[str, str]]:
        with self.con.transaction():
            rows = self.con.execute(
                "SELECT path, path_bytes, doc_id, sha256 FROM documents"
            ).fetchall()
        return {str(original_path(p, raw)): (doc_id, sha) for p, raw, doc_id, sha in rows}

    def has_document(self, doc_id: str, sha256: str) -> bool:
        with self.con.transaction():
            found = self.con.execute(
                "SELECT 1 FROM documents WHERE doc_id = %s AND sha256 = %s", [doc_id, sha256]
            ).fetchone()
        return found is not None

    @contextmanager
    def claim(self, doc_id: str, *, wait: bool) -> Iterator[bool]:
        """Hold the document's advisory lock (its 64-bit id is the key, so two documents never
        share one) while the block runs; False if another session holds it and not ``wait``."""
        assert self._claims is not None, "use PostgresWriter as a context manager"
        key = int.from_bytes(bytes.fromhex(doc_id[:16]), "big", signed=True)
        if wait:
            self._claims.execute("SELECT pg_advisory_lock(%s)", [key])
        elif not self._claims.execute("SELECT pg_try_advisory_lock(%s)", [key]).fetchone()[0]:
            yield False
            return
        try:
            yield True
        finally:
            self._claims.execute("SELECT pg_advisory_unlock(%s)", [key])

    # -- writes --------------------------------------------------------------------------
    def ensure_collection(self, name: str, model: str, dim: int) -> None:
        with self.con.transaction():
            self.con.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])
            found = self.con.execute(
                "SELECT model, dim FROM collections WHERE name = %s", [name]
            ).fetchone()
            if found and tuple(found) != (model, dim):
                raise ValueError(
                    f"collection {name!r} holds {found[0]} ({found[1]}-d) vectors, not {model}"
                )
            if found:  # made already; its DDL would wait for every open write to commit
                return
            for statement in ddl.vector_table(vec_table(name), dim):
                self.con.execute(statement)
            self.con.execute(
                "INSERT INTO collections VALUES (%s, 'hnsw', %s, %s) ON CONFLICT DO NOTHING",
                [name, model, dim],
            )

    def write_document(
        self,
        rows: DocumentRows,
        entries: Sequence[Entry],
        vectors: dict[str, np.ndarray],
        replaces: Iterable[str] = (),
    ) -> None:
        """Replace the document (and the ``replaces`` ids) with ``rows`` and ``entries``, whose
        vectors are ``vectors[collection][i]`` for ``entries[i]``, in one transaction."""
        (document,) = rows.of(schema.DocumentRow)
        with self.con.transaction():
            tally = _Tally(self.con)
            self._delete(sorted({document.doc_id, *replaces}), tally)
            for table in schema.TABLES:
                self._copy_rows(table, rows.of_table(table))
            ids = self._insert_entries(document.doc_id, entries)
            for collection, matrix in vectors.items():
                self._copy_vectors(vec_table(collection), ids, matrix)
            tally.count([document.doc_id], +1)
            tally.apply()

    def record_waiting(self, files: int) -> None:
        """How many of this run's files are not yet written (storage/run_state.py), under a
        key of this run's own: its claims session, which ends with the process."""
        assert self._claims is not None, "use PostgresWriter as a context manager"
        key = f"{run_state.KEY}:{self._claims.info.backend_pid}"
        with self.con.transaction():
            self.con.execute(
                f"INSERT INTO {schema.META_TABLE} VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, str(files)],
            )

    def _end_run(self) -> None:
        """This run's record goes with it: readers then know no run of it is alive."""
        assert self._claims is not None
        key = f"{run_state.KEY}:{self._claims.info.backend_pid}"
        with self.con.transaction():
            self.con.execute(f"DELETE FROM {schema.META_TABLE} WHERE key = %s", [key])

    def move_document(self, doc_id: str, path: Path) -> None:
        """The document's file is now at ``path`` (moved or renamed, the same content)."""
        text, raw = stored_path(path)
        with self.con.transaction():
            self.con.execute(
                "UPDATE documents SET path = %s, path_bytes = %s, file_name = %s WHERE doc_id = %s",
                [text, raw, readable(path.name), doc_id],
            )
            self.con.execute("UPDATE store_state SET version = version + 1")

    def record_failures(self, rows: list[tuple]) -> None:
        """Record files a run could not read (``storage/failed_files.py``'s rows)."""
        with self.con.transaction():
            self.con.cursor().executemany(to_pyformat(failed_files.UPSERT), rows)
            self.con.execute("UPDATE store_state SET version = version + 1")  # readers' caches

    def clear_failures(self, paths: list[str]) -> None:
        if not paths:
            return
        with self.con.transaction():
            self.con.cursor().executemany(
                to_pyformat(failed_files.DELETE), [[path] for path in paths]
            )
            self.con.execute("UPDATE store_state SET version = version + 1")

    def failure_paths(self) -> list[tuple[str, bytes | None]]:
        with self.con.transaction():
            return [
                (p, bytes(raw) if raw else None)
                for p, raw in self.con.execute(failed_files.PATHS).fetchall()
            ]

    # -- the dense stage (indexer/dense_stage.py) ------------------------------------------
    def awaiting_vectors(self, collection: str) -> set[str]:
        """Documents with entries none of which has a vector in ``collection`` yet."""
        table = vec_table(collection)
        with self.con.transaction():
            exists = self.con.execute("SELECT to_regclass(%s)", [table]).fetchone()[0]
            found = self.con.execute(ddl.awaiting_vectors([table] if exists else []))
            return {r[0] for r in found.fetchall()}

    def entries_of(self, doc_id: str) -> list[tuple[int, Entry]]:
        with self.con.transaction():
            rows = self.con.execute(
                "SELECT id, table_name, column_name, primary_key, doc_id, page_number, text "
                f"FROM {ddl.ENTRIES} WHERE doc_id = %s ORDER BY id",
                [doc_id],
            ).fetchall()
        return [(r[0], Entry(*r[1:])) for r in rows]

    def pool_members(self, doc_id: str) -> schema.PoolMembers:
        with self.con.transaction():
            sql = to_pyformat(schema.POOL_MEMBERS_SQL)
            return schema.pool_members(self.con.execute(sql, [doc_id, doc_id]).fetchall())

    def add_vectors(self, doc_id: str, collection: str, ids: list[int], matrix) -> None:
        """The vectors of the document's entries ``ids`` that still exist and have none yet,
        in one transaction; the entries are locked meanwhile, so of two runs finishing the same
        document the second finds nothing left to write."""
        table = vec_table(collection)
        with self.con.transaction():
            present = self.con.execute(
                f"SELECT id FROM {ddl.ENTRIES} WHERE id = ANY(%s) ORDER BY id FOR UPDATE", [ids]
            ).fetchall()
            have = {
                r[0]
                for r in self.con.execute(
                    f"SELECT id FROM {table} WHERE id = ANY(%s)", [ids]
                ).fetchall()
            }
            # Entries replaced meanwhile (the document indexed again) are not written to.
            still = {r[0] for r in present} - have
            wanted = [n for n, i in enumerate(ids) if i in still]
            if wanted:
                self._copy_vectors(table, [ids[n] for n in wanted], np.asarray(matrix)[wanted])
                self.con.execute("UPDATE store_state SET version = version + 1")

    def remove_documents(self, doc_ids: Iterable[str]) -> None:
        with self.con.transaction():
            tally = _Tally(self.con)
            self._delete(sorted(set(doc_ids)), tally)
            tally.apply()

    def reindex_doc_ids(self) -> set[str]:
        """The documents an upgrade asks to index again: every one, or those of some formats."""
        with self.con.transaction():
            pending = read_meta(self.con, migrations.PENDING_REINDEX)
            return migrations.documents_to_reindex(self.con, pending)

    def reindex_done(self) -> None:
        with self.con.transaction():
            reindex_done(self.con)

    def _delete(self, doc_ids: list[str], tally: _Tally) -> None:
        tally.count(doc_ids, -1)
        # Vectors go with their entries (ON DELETE CASCADE).
        self.con.execute(f"DELETE FROM {ddl.ENTRIES} WHERE doc_id = ANY(%s)", [doc_ids])
        for table in reversed(schema.TABLES):
            self.con.execute(f"DELETE FROM {table.name} WHERE doc_id = ANY(%s)", [doc_ids])

    def _copy_rows(self, table: Table, rows: list[Row]) -> None:
        if not rows:
            return
        names = [c.name for c in table.columns]
        with self.con.cursor().copy(f"COPY {table.name} ({', '.join(names)}) FROM STDIN") as copy:
            floats = [c.type.startswith("DOUBLE[]") for c in table.columns]
            for row in rows:
                copy.write_row(
                    [
                        _floats(getattr(row, name)) if is_floats else _value(getattr(row, name))
                        for name, is_floats in zip(names, floats, strict=True)
                    ]
                )

    def _insert_entries(self, doc_id: str, entries: Sequence[Entry]) -> list[int]:
        """Entries with their text-search vectors; their ids, in order."""
        if not entries:
            return []
        keyword = schema.keyword_columns()
        with self.con.cursor() as cur:
            cur.execute(
                "CREATE TEMP TABLE IF NOT EXISTS new_entries (ordinal integer, table_name text, "
                "column_name text, primary_key text, doc_id text, page_number integer, "
                "text text, keyword boolean, text_key bigint) ON COMMIT DELETE ROWS"
            )
            with cur.copy("COPY new_entries FROM STDIN") as copy:
                for n, e in enumerate(entries):
                    copy.write_row(
                        [
                            n,
                            e.table_name,
                            e.column_name,
                            e.primary_key,
                            e.doc_id,
                            e.page_number,
                            _value(e.text),
                            (e.table_name, e.column_name) in keyword,
                            e.text_key,
                        ]
                    )
            cur.execute(
                f"""
                WITH added AS (
                    INSERT INTO {ddl.ENTRIES} (table_name, column_name, primary_key, doc_id,
                        page_number, text, keyword, tsv, length, text_key)
                    SELECT table_name, column_name, primary_key, doc_id, page_number, text,
                        keyword, tsv, {_LENGTH}, text_key
                    FROM (SELECT *, CASE WHEN keyword
                            THEN to_tsvector('{ddl.TEXT_CONFIG}', text)
                            ELSE ''::tsvector END AS tsv
                          FROM new_entries ORDER BY ordinal) n
                    RETURNING id)
                SELECT id FROM added ORDER BY id"""
            )
            ids = [r[0] for r in cur.fetchall()]
        if len(ids) != len(entries):
            raise RuntimeError(f"document {doc_id}: {len(ids)} entries stored of {len(entries)}")
        return ids

    def _copy_vectors(self, table: str, ids: list[int], matrix: np.ndarray) -> None:
        matrix = np.asarray(matrix, dtype=np.float32)
        with self.con.cursor().copy(
            f"COPY {table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "vector"])
            for entry_id, vector in zip(ids, matrix, strict=True):
                copy.write_row([entry_id, vector])


def _value(value):
    """PostgreSQL text cannot hold NUL characters (some PDFs' text does): they are dropped."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _floats(value):
    """A (nested) list of numbers as floats: PostgreSQL arrays hold one type."""
    if value is None:
        return None
    return [_floats(v) if isinstance(v, list) else float(v) for v in value]


class _Tally:
    """Changes to BM25's statistics within one transaction, applied at its end: the shared
    rows are locked for the commit only, not while the document's rows are copied."""

    def __init__(self, con: psycopg.Connection) -> None:
        self.con = con
        self.entries = 0
        self.length = 0
        con.execute(
            "CREATE TEMP TABLE IF NOT EXISTS lexeme_delta (lexeme text, df bigint) "
            "ON COMMIT DELETE ROWS"
        )

    def count(self, doc_ids: list[str], sign: int) -> None:
        """Add (+1) or take away (-1) the keyword entries of ``doc_ids`` as they are now."""
        self.con.execute(
            "INSERT INTO lexeme_delta SELECT lexeme, %(s)s * count(*) "
            f"FROM {ddl.ENTRIES} e, unnest(e.tsv) u WHERE e.doc_id = ANY(%(d)s) AND e.keyword "
            "GROUP BY lexeme",
            {"s": sign, "d": doc_ids},
        )
        n, length = self.con.execute(
            f"SELECT count(*), coalesce(sum(length), 0) FROM {ddl.ENTRIES} "
            "WHERE doc_id = ANY(%s) AND keyword",
            [doc_ids],
        ).fetchone()
        self.entries += sign * n
        self.length += sign * length

    def apply(self) -> None:
        # Lexeme order: two writers lock the rows they share in the same order.
        self.con.execute(
            "INSERT INTO lexemes (lexeme, df) SELECT lexeme, sum(df) FROM lexeme_delta "
            "GROUP BY lexeme HAVING sum(df) <> 0 ORDER BY lexeme "
            "ON CONFLICT (lexeme) DO UPDATE SET df = lexemes.df + excluded.df"
        )
        self.con.execute(
            "UPDATE store_state SET entries = entries + %s, length = length + %s, "
            "version = version + 1",
            [self.entries, self.length],
        )
