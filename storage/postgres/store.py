"""The shared PostgreSQL store as a ``Store``: what tools read, from any number of servers.

Nothing here outlives a request except caches that any server can rebuild (the entity graph,
through ``Store.derived``, keyed by the store's change counter), so servers behind a load
balancer are interchangeable.

- The tools' own SQL runs on a pooled connection in autocommit: each statement sees committed
  documents only, whole (a document is written in one transaction).
- Client SQL (``run_sql``) runs on a separate pool logged in as the read-only role, one
  statement per ``BEGIN READ ONLY`` transaction with its time and memory limits set locally;
  the statement is prepared, so the server refuses a second statement hidden after a ``;``.
- Keyword search is BM25 over ``tsvector``: candidates by the GIN index, scored with the
  lexeme statistics the writers keep (FTS5's formula, k1 = 1.2, b = 0.75).
- Dense search uses the HNSW index; with a filter it searches exactly among the matching
  entries when they are few, and lets HNSW scan on (``hnsw.iterative_scan``) otherwise, so a
  narrow filter still gets its k hits.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import errors
from psycopg_pool import ConnectionPool, PoolTimeout

from docsym.language.terms import search_words
from docsym.runtime.bounds import scrub
from docsym.runtime.settings import get_settings
from docsym.storage import run_state, schema
from docsym.storage.entries import K1, B, read_next, vec_table  # BM25 as FTS5 computes it
from docsym.storage.paths import IndexNotFoundError
from docsym.storage.postgres import ddl
from docsym.storage.postgres.connect import reader_url, redacted
from docsym.storage.postgres.sql_check import check_query
from docsym.storage.sql_check import MAX_SQL_CHARS
from docsym.storage.sql_pool import SqlFailed, SqlRows, SqlStopped
from docsym.storage.sql_worker import MAX_COLUMNS, bounded_rows
from docsym.storage.store import EntryRow, Store, read_copies

# Keyword search reads the postings of the rarest query terms, up to this many (summed
# document frequency; the rarest term is read whatever its count).
RARE_POSTINGS = 10_000
# A filter matching at most this many entries is searched exactly, without the HNSW index.
EXACT_UP_TO = 20_000
# HNSW candidates per query: at least this many, and at least twice the hits asked for. At 1M
# entries (bench/search_scale.py) 100 found 0.82 of the exact top 10, 400 0.95, 600 0.96 in 3 ms.
EF_SEARCH = 600
# pgvector's ceiling for ef_search; past it an iterative scan reads on, up to its
# hnsw.max_scan_tuples (20,000 by default): the most rows a dense search reads to find its
# distinct texts, asking GROWTH times more each time copies filled the rows read.
EF_SEARCH_MAX, DENSE_ROWS_MAX, GROWTH = 1_000, 20_000, 8
# How long opening a store waits for its first connection.
CONNECT_SECONDS = 10
# Client SQL: memory for sorts and hashes before they spill (bounded by temp_file_limit).
WORK_MEM = "64MB"


class PostgresStore(Store):
    dialect = "postgresql"

    def __init__(self, url: str, model_name: str | None = None) -> None:
        super().__init__(model_name)
        self.url = url
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=8,
            kwargs={"autocommit": True},
            configure=_configure,
            open=True,
        )
        try:
            self._pool.wait(timeout=CONNECT_SECONDS)
            found = self.sql().execute("SELECT to_regclass('documents')").fetchone()[0]
        except (PoolTimeout, psycopg.Error) as exc:
            self._pool.close()
            raise IndexNotFoundError(
                f"cannot reach the store at {self.location}: {scrub(str(exc))}"
            ) from None
        if found is None:
            self._pool.close()
            raise IndexNotFoundError(
                f"no docsym store at {self.location}: run `docsym index PATH --postgres URL`"
            )
        self._client_pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    @property
    def location(self) -> str:
        return redacted(self.url)

    # -- the views ---------------------------------------------------------------------------
    def sql(self) -> _Cursor:
        return _Cursor(self._pool)

    def client_sql(self, sql: str, limit: int) -> SqlRows:
        if len(sql) > MAX_SQL_CHARS:
            raise SqlFailed(f"SQL is {len(sql)} characters, at most {MAX_SQL_CHARS}")
        check_query(sql)
        s = get_settings()
        try:
            with self._clients().connection(timeout=s.sql_wait_seconds) as con:
                return _run_client(con, sql, limit, s.sql_seconds)
        except psycopg.errors.QueryCanceled:
            raise SqlStopped(
                f"query stopped by the time limit ({s.sql_seconds:g} s); narrow it "
                "(WHERE doc_id = ..., LIMIT) and retry",
                "time",
            ) from None
        except errors.ConfigurationLimitExceeded as exc:
            raise SqlStopped(
                f"query stopped by the memory limit: {scrub(str(exc))}; select less and retry",
                "memory",
            ) from None
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
                raise SqlStopped(f"the store is unreachable: {scrub(str(exc))}", "crash") from None
            raise SqlFailed(_client_message(exc)) from None
        except TimeoutError:
            raise SqlStopped(
                f"busy: no connection was free within {s.sql_wait_seconds:g} s; retry in a "
                "few seconds",
                "busy",
            ) from None

    def _clients(self) -> ConnectionPool:
        with self._lock:
            if self._client_pool is None:
                s = get_settings()
                password = s.pg_reader_password
                self._client_pool = ConnectionPool(
                    reader_url(self.url, password.get_secret_value() if password else None),
                    min_size=0,
                    max_size=s.sql_workers,
                    open=True,
                )
            return self._client_pool

    # -- the vector collections --------------------------------------------------------------
    def visible(self, alias: str = "e") -> str:
        return "TRUE"  # a document's entries are committed with it

    def collections(self) -> dict[str, tuple[str, str | None, int | None]]:
        rows = self.sql().execute("SELECT name, kind, model, dim FROM collections").fetchall()
        return {name: (kind, model, dim) for name, kind, model, dim in rows}

    def fts(
        self,
        query: str,
        where: str = "TRUE",
        params: list | None = None,
        limit: int = 50,
        per_text: bool = True,
        views: Sequence[tuple[str, str]] | None = None,  # ``where`` holds them: nothing to add
    ) -> list[tuple[int, float]]:
        words = search_words(query)
        terms = self._terms(" ".join(words)) if words else []
        if not terms:
            return []
        # Read the postings of the rarest terms only, up to RARE_POSTINGS of them, and score
        # what they find on every term. BM25 over all postings reads every entry holding "the"
        # or "model": half a second at 100k entries, linear in the store. An entry holding
        # none of the rare terms scores at most the others' ceilings, idf * (k1 + 1) each, so
        # when the k-th best score found beats their sum the answer is exact (MaxScore); when
        # it does not, it is BM25 over the query's informative terms. A filter may leave the
        # rare terms too few hits: then every term is read, among the entries it admits.
        rare = _rare_terms(terms)
        key = ddl.TEXT_KEY if per_text else "e.id"
        rows = self._bm25(terms, rare, where, params or [], limit, key)
        if len(rows) < limit and len(rare) < len(terms) and where != "TRUE":
            rows = self._bm25(terms, terms, where, params or [], limit, key)
        return rows

    def absent_words(self, words: list[str]) -> list[str]:
        """A word is absent when it has lexemes and no entry holds any of them (a word the text
        configuration drops, such as a stopword, is not)."""
        if not words:
            return []
        rows = self.sql().execute(
            f"""SELECT w.word FROM unnest(?::text[]) WITH ORDINALITY AS w(word, n)
                CROSS JOIN LATERAL unnest(to_tsvector('{ddl.TEXT_CONFIG}', w.word)) v
                LEFT JOIN lexemes l ON l.lexeme = v.lexeme
                GROUP BY w.word, w.n HAVING NOT bool_or(coalesce(l.df, 0) > 0) ORDER BY w.n""",
            [words],
        )
        return [word for (word,) in rows.fetchall()]

    def _terms(self, text: str) -> list[tuple[str, int, float]]:
        """The query's lexemes found in the store, rarest first: (lexeme, df, idf)."""
        rows = (
            self.sql()
            .execute(
                f"""SELECT l.lexeme, l.df,
                           greatest(ln((t.entries - l.df + 0.5) / (l.df + 0.5)), 1e-6)
                    FROM (SELECT DISTINCT lexeme
                          FROM unnest(to_tsvector('{ddl.TEXT_CONFIG}', ?))) q
                    JOIN lexemes l USING (lexeme), store_state t
                    WHERE l.df > 0 ORDER BY l.df, l.lexeme""",
                [text],
            )
            .fetchall()
        )
        return [(lexeme, int(df), float(idf)) for lexeme, df, idf in rows]

    def _bm25(
        self,
        terms: list[tuple[str, int, float]],
        matching: list[tuple[str, int, float]],
        where: str,
        params: list,
        limit: int,
        key: str,
    ) -> list[tuple[int, float]]:
        """The top ``limit`` entries holding any of the ``matching`` terms, scored on all
        ``terms`` with FTS5's BM25, the first by id of each ``key`` (SQL over ``e``: the text
        key, whose copies score the same, or the id)."""
        sql = f"""
            WITH idf AS (SELECT * FROM unnest(?::text[], ?::float8[]) AS i(lexeme, idf)),
            hits AS (
                SELECT e.id, e.tsv, e.length, {key} AS key FROM {ddl.ENTRIES} e
                WHERE e.keyword AND e.tsv @@ (
                    SELECT string_agg(quote_literal(m), ' | ')::tsquery
                    FROM unnest(?::text[]) AS m) AND ({where})),
            scored AS (
                SELECT h.id, h.key, sum(i.idf * tf.n * {K1 + 1}
                             / (tf.n + {K1} * (1 - {B} + {B} * h.length / t.avgdl))) AS score
                FROM hits h
                CROSS JOIN LATERAL unnest(ts_filter(setweight(h.tsv, 'A', ?::text[]), '{{a}}')) u
                JOIN idf i ON i.lexeme = u.lexeme
                CROSS JOIN LATERAL (SELECT array_length(u.positions, 1)::float8 AS n) tf
                CROSS JOIN (SELECT greatest(length::float8 / greatest(entries, 1), 1) AS avgdl
                            FROM store_state) t
                GROUP BY h.id, h.key)
            SELECT id, score FROM (
                SELECT DISTINCT ON (key) id, score FROM scored ORDER BY key, score DESC, id) d
            ORDER BY score DESC, id LIMIT ?"""
        lexemes = [t[0] for t in terms]
        args = [lexemes, [t[2] for t in terms], [t[0] for t in matching]]
        rows = self.sql().execute(sql, [*args, *params, lexemes, limit]).fetchall()
        return [(int(i), float(s)) for i, s in rows]

    def dense(
        self,
        collection: str,
        vector: np.ndarray,
        where: str = "TRUE",
        params: list | None = None,
        limit: int = 50,
        per_text: bool = True,
        views: Sequence[tuple[str, str]] | None = None,  # ``where`` holds them: nothing to add
    ) -> list[tuple[int, float]]:
        """With ``per_text``, the nearest entry of each text key: rows are read again, GROWTH
        times more, while copies of a few texts fill them (a library holding a paper many times
        over)."""
        key = ddl.TEXT_KEY if per_text else "e.id"
        asked = limit
        while True:
            rows = self._nearest(collection, vector, where, params or [], asked, key)
            first: dict[int, tuple[int, float]] = {}
            for entry_id, similarity, found_key in rows:
                first.setdefault(found_key, (entry_id, similarity))
            if len(first) >= limit or len(rows) < asked or asked >= DENSE_ROWS_MAX:
                return list(first.values())[:limit]
            asked = min(read_next(asked, len(first), limit, GROWTH), DENSE_ROWS_MAX)

    def _nearest(
        self, collection: str, vector: np.ndarray, where: str, params: list, limit: int, key: str
    ) -> list[tuple[int, float, int]]:
        """The ``limit`` nearest entries: (id, similarity, ``key``), nearest first."""
        table = vec_table(collection)
        query = np.asarray(vector, dtype=np.float32)
        filtered = where != "TRUE"
        with self._pool.connection() as con, con.transaction():
            exact = filtered and _count_up_to(con, where, params, EXACT_UP_TO + 1) <= (
                EXACT_UP_TO
            )
            if exact:  # few matches: all of them, by distance, without the index
                # One process: parallel workers cost more to start than they save on 20k
                # rows (1M entries, the tables view: 40 ms with two, 31 without, under load).
                con.execute("SET LOCAL max_parallel_workers_per_gather = 0")
                sql = f"""
                    WITH m AS MATERIALIZED (
                        SELECT v.id, v.embedding <=> ? AS d, {key} AS key
                        FROM {table} v JOIN {ddl.ENTRIES} e ON e.id = v.id WHERE ({where}))
                    SELECT id, 1 - d, key FROM m ORDER BY d, id LIMIT ?"""
                args = [query, *params, limit]
            else:
                ef_search = min(max(EF_SEARCH, 2 * int(limit)), EF_SEARCH_MAX)
                con.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
                if filtered or limit > ef_search:  # read on past ef_search's candidates
                    con.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                sql = f"""
                    WITH m AS MATERIALIZED (
                        SELECT v.id, v.embedding <=> ? AS d, {key} AS key
                        FROM {table} v JOIN {ddl.ENTRIES} e ON e.id = v.id WHERE ({where})
                        ORDER BY v.embedding <=> ? LIMIT ?)
                    SELECT id, 1 - d, key FROM m ORDER BY d, id"""
                args = [query, *params, query, limit]
            rows = con.execute(to_pyformat(sql), args).fetchall()
        return [(int(i), float(s), int(k)) for i, s, k in rows]

    def similarities(self, collection: str, vector: np.ndarray, ids: np.ndarray) -> np.ndarray:
        wanted = [int(i) for i in ids]
        out = np.zeros(len(wanted), dtype=np.float32)
        if not wanted:
            return out
        rows = (
            self.sql()
            .execute(
                f"SELECT id, 1 - (embedding <=> ?) FROM {vec_table(collection)} WHERE id = ANY(?)",
                [np.asarray(vector, dtype=np.float32), wanted],
            )
            .fetchall()
        )
        found = {int(i): float(s) for i, s in rows}
        for n, entry_id in enumerate(wanted):
            out[n] = found.get(entry_id, 0.0)
        return out

    def entries(self, ids: list[int]) -> dict[int, EntryRow]:
        if not ids:
            return {}
        rows = (
            self.sql()
            .execute(
                "SELECT table_name, column_name, primary_key, doc_id, page_number, text, id "
                f"FROM {ddl.ENTRIES} WHERE id = ANY(?)",
                [list(ids)],
            )
            .fetchall()
        )
        return {r[-1]: EntryRow(*r) for r in rows}

    def copies(
        self, entry_id: int, where: str, params: list, limit: int
    ) -> tuple[list[EntryRow], int]:
        return read_copies(self.sql(), entry_id, where, params, limit)

    def entry_keys(self, where: str, params: list) -> dict[int, tuple[str, str, str]]:
        rows = (
            self.sql()
            .execute(
                f"SELECT id, table_name, column_name, primary_key FROM {ddl.ENTRIES} e "
                f"WHERE ({where})",
                params,
            )
            .fetchall()
        )
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def collection_ids(self, collection: str) -> set[int]:
        if self.collections()[collection][0] == "tsvector":
            sql = f"SELECT id FROM {ddl.ENTRIES} WHERE keyword"
        else:
            sql = f"SELECT id FROM {vec_table(collection)}"
        return {r[0] for r in self.sql().execute(sql).fetchall()}

    def version(self) -> object:
        return self.sql().execute("SELECT version FROM store_state").fetchone()[0]

    def awaiting_vectors(self) -> frozenset[str]:
        return self.derived("awaiting_vectors", PostgresStore._read_awaiting)

    def indexing(self) -> run_state.Indexing:
        """Whether index runs are alive, and the files they have not written yet: their
        records (one per run, named by its session's backend process id) while that session
        is alive."""
        cursor = self.sql()
        found = cursor.execute(
            f"SELECT key, value FROM {schema.META_TABLE} WHERE key LIKE ?",
            [f"{run_state.KEY}:%"],
        ).fetchall()
        runs = {int(key.rsplit(":", 1)[1]): int(value) for key, value in found}
        if not runs:
            return run_state.Indexing()
        alive = cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE pid = ANY(?)", [list(runs)]
        ).fetchall()
        return run_state.Indexing(bool(alive), sum(runs[pid] for (pid,) in alive))

    def _read_awaiting(self) -> frozenset[str]:
        dense = [vec_table(n) for n, (kind, _, _) in self.collections().items() if kind == "hnsw"]
        found = self.sql().execute(ddl.awaiting_vectors(dense)).fetchall()
        return frozenset(r[0] for r in found)

    def close(self) -> None:
        self._pool.close()
        with self._lock:
            if self._client_pool is not None:
                self._client_pool.close()
                self._client_pool = None


class _Cursor:
    """The tools' SQL on a pooled connection: DuckDB's cursor calls, PostgreSQL underneath.
    Each ``execute`` takes a connection for one statement and reads its rows."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._rows: list[tuple] = []
        self.description: list[tuple] | None = None

    def execute(self, sql: str, params: Any = None) -> _Cursor:
        with self._pool.connection() as con:
            cur = con.execute(to_pyformat(sql), params)
            self.description = [(c.name,) for c in cur.description or []]
            self._rows = cur.fetchall() if cur.description else []
        return self

    def fetchone(self) -> tuple | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int) -> list[tuple]:
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows


_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\?|\$([A-Za-z_]\w*)|%")


def to_pyformat(sql: str) -> str:
    """DuckDB's placeholders (``?``, ``$name``) as psycopg's (``%s``, ``%(name)s``); string
    literals are left alone and a literal ``%`` is doubled."""

    def swap(match: re.Match) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token.replace("%", "%%")
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return f"%({match.group(1)})s"

    return _PLACEHOLDER.sub(swap, sql)


def _configure(con: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    try:
        register_vector(con)
    except psycopg.ProgrammingError:  # no pgvector here: not a docsym store (said on open)
        con.rollback()


def _rare_terms(terms: list[tuple[str, int, float]]) -> list[tuple[str, int, float]]:
    """The rarest of ``terms`` (sorted by df) whose postings add up to at most RARE_POSTINGS."""
    total, rare = 0, []
    for term in terms:
        total += term[1]
        if rare and total > RARE_POSTINGS:
            break
        rare.append(term)
    return rare


def _count_up_to(con: psycopg.Connection, where: str, params: list, cap: int) -> int:
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {ddl.ENTRIES} e WHERE ({where}) LIMIT ?) c"
    return int(con.execute(to_pyformat(sql), [*params, cap]).fetchone()[0])


def _run_client(con: psycopg.Connection, sql: str, limit: int, seconds: float) -> SqlRows:
    with con.transaction(force_rollback=True):
        con.execute("SET TRANSACTION READ ONLY")
        con.execute(f"SET LOCAL statement_timeout = {int(seconds * 1000)}")
        con.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
        # Prepared: the extended protocol carries exactly one statement.
        cursor = con.execute(sql, prepare=True)
        columns = [c.name for c in cursor.description or []]
        if len(columns) > MAX_COLUMNS:
            raise SqlFailed(
                f"{len(columns)} columns selected, at most {MAX_COLUMNS}: name the columns you need"
            )
        rows, more = bounded_rows(cursor, limit)
    return SqlRows(columns, rows, more)


def _client_message(exc: psycopg.Error) -> str:
    text = scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    if isinstance(exc, errors.SyntaxError) and "multiple commands" in str(exc):
        return "one statement at a time: send a single SELECT without ';' and a second one"
    if isinstance(exc, errors.InsufficientPrivilege):
        return f"{text}: run_sql may only SELECT from the views listed in the schema"
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return f"{text}: run_sql is read-only; write a SELECT"
    return f"{type(exc).__name__}: {text}"
