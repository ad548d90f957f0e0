"""The neural side of the index: ``vectors.sqlite`` with an FTS5 (BM25) collection and one
sqlite-vec collection per embedding model.

Every non-empty encodable cell of the DuckDB index (see ``storage.schema.encodable_columns``) is
one *entry*, keyed by (table_name, column_name, primary_key) and carrying doc_id and page_number,
so a hit always leads back to its row and a filter can narrow a search to rows found by SQL.
Collections share the entry ids: the FTS5 rowid and the vec0 rowid are ``entries.id``.

SQLite's WAL mode lets the server read while an indexer writes (a finished run leaves the file
in rollback-journal mode, so a read-only copy needs no ``-shm`` file); each document's entries are
replaced in one transaction, written before the document's DuckDB rows (so the vector side never
lacks what the database has). Entries carry the generation that added and the one that retired
them, so readers see exactly the entries of the published DuckDB file (``generations.py``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import apsw
import numpy as np
import sqlite_vec

from docsym.storage.directory import keyword_index, sign_file
from docsym.storage.entries import BM25, Entry, text_key, vec_table
from docsym.storage.schema import keyword_columns

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3  # 2: entries stamped with born/died generations; 3: and their text keys
# Vectors a vec0 chunk blob holds. Dense search reads candidates' vectors one by one, and
# SQLite reaches an offset in a blob by walking its overflow pages: in sqlite-vec's default
# chunks of 1,024 (1.5 MB) a lookup cost ~0.3 ms, in chunks of 32 ~0.03 ms, at the same size.
CHUNK_SIZE = 32


def connect(path: Path, *, readonly: bool = False) -> apsw.Connection:
    """An apsw connection with sqlite-vec loaded (the stdlib sqlite3 here cannot load it).

    A reader of a file left in WAL mode needs its ``-shm`` file, which SQLite cannot create in
    a read-only directory; a run leaves the file in rollback-journal mode (``settle``), but an
    index written by an older docsym, or by a run that ended while a server held the file
    open, is still in WAL mode. With no ``-shm`` to open and no write-ahead log to read, the
    file alone holds every commit, so it is opened as immutable (see ``opened_immutable``)."""
    if not readonly:
        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    else:
        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        con.set_busy_timeout(10_000)
        try:
            con.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        except apsw.CantOpenError:
            wal = Path(f"{path}-wal")
            if wal.exists() and wal.stat().st_size:
                raise  # commits only the log holds: they need the -shm file to be read
            con.close()
            uri = f"file:{quote(os.fsencode(path))}?immutable=1"
            con = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    con.set_busy_timeout(10_000)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.enable_load_extension(False)
    return con


# A search looks its candidates up by id, tens of thousands when a library holds its texts many
# times over: this index holds what their filters read (the view, generation stamps, document,
# page) in rows of ~50 bytes, where the table's rows hold the text. 50,000 lookups at 1,000
# papers: 35 ms through it, 52 ms through the table.
LOOKUP = "entries_lookup"
LOOKUP_COLUMNS = "id, text_key, table_name, column_name, born, died, doc_id, page_number"
# The same by text key, copies in id order: a keyword search finds, for each text, the first copy
# its filter passes, and a hit counts its copies, reading this index alone (a row's generation
# stamps come after its text: 710 copies counted through the table took 8 ms at 10,000 papers).
BY_TEXT = "entries_text_key"
BY_TEXT_COLUMNS = "text_key, id, table_name, column_name, born, died, doc_id, page_number"


def lookup_hint(con: apsw.Connection) -> str:
    """``INDEXED BY`` the lookup index, for SQL reading ``entries e`` by id, where the file has
    it (written since it was added); SQLite looks ids up in the table otherwise."""
    found = con.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (LOOKUP,)).fetchone()
    return f"INDEXED BY {LOOKUP}" if found else ""


def text_key_column(columns: set[str]) -> str:
    """The column of ``entries`` (given its ``columns``) that keys its text: ``text_key``, or,
    in a file written before schema 3 and read as it is, ``id`` (each entry its own text)."""
    return "text_key" if "text_key" in columns else "id"


def opened_immutable(con: apsw.Connection) -> bool:
    """Whether ``connect`` opened the file as immutable: SQLite then takes no locks and never
    looks for changes, so the caller opens it again when the file or its log changes."""
    return bool(con.open_flags & apsw.SQLITE_OPEN_URI)


def entry_doc_ids(con: apsw.Connection) -> list[str]:
    """Every document with entries, live or retired, sorted: one search of ``entries_doc`` per
    document, skipping from each doc_id to the next, where ``SELECT DISTINCT`` would read every
    entry (a writer's open and a server's first search after a publish list them)."""
    rows = con.execute(
        "WITH RECURSIVE d(doc_id) AS (SELECT min(doc_id) FROM entries UNION ALL "
        "SELECT (SELECT min(doc_id) FROM entries WHERE doc_id > d.doc_id) FROM d "
        "WHERE d.doc_id IS NOT NULL) SELECT doc_id FROM d WHERE doc_id IS NOT NULL"
    )
    return [r[0] for r in rows]


def awaiting_vectors(con: apsw.Connection, collections: list[str], live: str) -> set[str]:
    """Documents with entries (those ``live``: an SQL condition on ``e``, e.g. a reader's
    generation) but no vectors recorded in any of ``collections``: searchable by keyword,
    their dense stage still to come. Only documents not recorded as embedded are looked at
    entry by entry, so the cost follows the documents, not their entries."""
    marks = ", ".join("?" for _ in collections)
    embedded = {
        r[0]
        for r in con.execute(
            f"SELECT doc_id FROM embedded_docs WHERE collection IN ({marks})", tuple(collections)
        )
    }
    has_live = f"SELECT 1 FROM entries e WHERE e.doc_id = ? AND {live} LIMIT 1"
    return {
        doc_id
        for doc_id in entry_doc_ids(con)
        if doc_id not in embedded and con.execute(has_live, (doc_id,)).fetchone()
    }


def _signs_length_key(collection: str) -> str:
    """The ``meta`` key of the sign file's length when it last covered every vector."""
    return f"signs.{collection}"


def _vec0_ddl(table: str, dim: int) -> str:
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
        f"embedding float[{dim}] distance_metric=cosine, chunk_size={CHUNK_SIZE})"
    )


class VectorStore:
    """Read and write ``vectors.sqlite``. One instance per connection; not thread-safe."""

    def __init__(self, path: Path, *, readonly: bool = False, generation: int = 1) -> None:
        self.path = path
        self.readonly = readonly
        self.generation = generation  # stamped on what is written: the one being built
        self.con = connect(path, readonly=readonly)
        self._signs: dict[str, sign_file.SignWriter] = {}  # see sign_file.py
        # The keyword index (keyword_index.py), opened by _sync_keywords: the texts each
        # transaction brings in and takes out, handed over as it commits; committed at each
        # publish. Within a transaction: the keyword rows it wrote (entry id -> its text) and
        # the text keys of those it deleted (with how many of each).
        self._keywords: keyword_index.KeywordWriter | None = None
        self._keywords_synced = False  # checked against the published generation this run
        self._added: dict[int, keyword_index.Text] = {}
        self._removed: Counter[int] = Counter()
        if not readonly:
            self.con.execute("PRAGMA journal_mode=WAL")
            self.con.execute("PRAGMA synchronous=NORMAL")
            self._create()
            self.sync_signs()

    def close(self) -> None:
        for writer in self._signs.values():
            writer.close()
        self._signs.clear()
        if self._keywords is not None:
            self._keep_keywords(lambda keywords: keywords.close())
            self._keywords = None
        self.con.close()

    # -- schema ------------------------------------------------------------------------------
    def _create(self) -> None:
        self.con.execute(
            """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
            CREATE TABLE IF NOT EXISTS collections (
                name TEXT PRIMARY KEY, kind TEXT NOT NULL, model TEXT, dim INTEGER);
            CREATE TABLE IF NOT EXISTS entries (
                id INTEGER PRIMARY KEY,
                table_name TEXT NOT NULL, column_name TEXT NOT NULL, primary_key TEXT NOT NULL,
                doc_id TEXT NOT NULL, page_number INTEGER, text TEXT NOT NULL,
                born INTEGER NOT NULL DEFAULT 0, died INTEGER, text_key INTEGER,
                UNIQUE (table_name, column_name, primary_key, born));
            CREATE TABLE IF NOT EXISTS embedded_docs (
                doc_id TEXT NOT NULL, collection TEXT NOT NULL, entries INTEGER NOT NULL,
                PRIMARY KEY (doc_id, collection));
            CREATE VIRTUAL TABLE IF NOT EXISTS bm25 USING fts5(
                text, content='', contentless_delete=1, tokenize='porter unicode61');
            INSERT OR IGNORE INTO collections VALUES ('bm25', 'fts5', NULL, NULL);
            """
        )
        self._stamp_entries()
        self._key_entries()
        self._cover_text_keys()
        self.con.execute(
            f"""
            CREATE INDEX IF NOT EXISTS entries_doc ON entries (doc_id);
            CREATE INDEX IF NOT EXISTS {BY_TEXT} ON entries ({BY_TEXT_COLUMNS});
            CREATE INDEX IF NOT EXISTS {LOOKUP} ON entries ({LOOKUP_COLUMNS});
            CREATE INDEX IF NOT EXISTS entries_view ON entries (table_name, column_name);
            CREATE INDEX IF NOT EXISTS entries_born ON entries (born);
            CREATE INDEX IF NOT EXISTS entries_died ON entries (died);
            """
        )
        self.con.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )

    def _meta(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _stamp_entries(self) -> None:
        """Version 1 stores had no generation stamps: their entries are all of generation 0.
        SQLite cannot change a UNIQUE constraint in place, so the table is rebuilt (ids kept:
        they are the rowids of the FTS and vector tables)."""
        columns = {r[1] for r in self.con.execute("PRAGMA table_info(entries)")}
        if "born" in columns:
            return
        with self.con:
            self.con.execute(
                """
                ALTER TABLE entries RENAME TO entries_v1;
                DROP INDEX IF EXISTS entries_doc;
                DROP INDEX IF EXISTS entries_view;
                CREATE TABLE entries (
                    id INTEGER PRIMARY KEY,
                    table_name TEXT NOT NULL, column_name TEXT NOT NULL,
                    primary_key TEXT NOT NULL, doc_id TEXT NOT NULL, page_number INTEGER,
                    text TEXT NOT NULL, born INTEGER NOT NULL DEFAULT 0, died INTEGER,
                    UNIQUE (table_name, column_name, primary_key, born));
                INSERT INTO entries (id, table_name, column_name, primary_key, doc_id,
                    page_number, text)
                    SELECT id, table_name, column_name, primary_key, doc_id, page_number, text
                    FROM entries_v1;
                DROP TABLE entries_v1;
                """
            )

    def _key_entries(self) -> None:
        """Version 2 stores had no text keys (``entries.text_key``): each entry gets its own,
        in one transaction (about a second per million entries)."""
        columns = {r[1] for r in self.con.execute("PRAGMA table_info(entries)")}
        if "text_key" in columns:
            return
        with self.con:
            self.con.execute("ALTER TABLE entries ADD COLUMN text_key INTEGER")
            after = -1
            while True:  # in batches, so memory stays flat at 10,000 papers (7.6M entries)
                rows = self.con.execute(
                    "SELECT id, table_name, column_name, text FROM entries WHERE id > ? "
                    "ORDER BY id LIMIT 50000",
                    (after,),
                ).fetchall()
                if not rows:
                    break
                self.con.executemany(
                    "UPDATE entries SET text_key = ? WHERE id = ?",
                    ((text_key(table, column, text), i) for i, table, column, text in rows),
                )
                after = rows[-1][0]

    def _cover_text_keys(self) -> None:
        """Stores of before ``BY_TEXT_COLUMNS`` indexed text keys alone: the index is made
        again, once (~20 s at 10,000 papers)."""
        columns = [r[2] for r in self.con.execute(f"PRAGMA index_info({BY_TEXT})")]
        if columns and ", ".join(columns) != BY_TEXT_COLUMNS:
            self.con.execute(f"DROP INDEX {BY_TEXT}")

    def ensure_collection(self, name: str, model: str, dim: int) -> None:
        found = self.con.execute(
            "SELECT model, dim FROM collections WHERE name = ?", (name,)
        ).fetchone()
        if found and (found[0], found[1]) != (model, dim):
            raise ValueError(
                f"collection {name!r} holds {found[0]} ({found[1]}-d) vectors, not {model}"
            )
        self.con.execute(_vec0_ddl(vec_table(name), dim))
        self.con.execute(
            "INSERT OR IGNORE INTO collections VALUES (?, 'vec0', ?, ?)", (name, model, dim)
        )

    def collections(self) -> list[tuple[str, str, str | None, int | None]]:
        return list(
            self.con.execute("SELECT name, kind, model, dim FROM collections ORDER BY name")
        )

    def dense_collections(self) -> list[str]:
        return [name for name, kind, _, _ in self.collections() if kind == "vec0"]

    # -- the keyword index (keyword_index.py) ------------------------------------------------
    def _open_keywords(self) -> None:
        try:
            path = keyword_index.folder(self.path)
            self._keywords = keyword_index.KeywordWriter(path, keyword_index.tokenizer(self.con))
        except (OSError, ValueError) as exc:  # another writer holds it, or no room
            log.warning("keyword index not kept (%s): searches use FTS5 alone", exc)

    def _keep_keywords(self, action: Callable[[keyword_index.KeywordWriter], None]) -> None:
        """Run ``action`` on the keyword index; one that fails drops the index, which readers
        then do without (FTS5 answers) until the next run rebuilds it."""
        if self._keywords is None:
            return
        try:
            action(self._keywords)
        except (OSError, ValueError) as exc:
            log.warning("keyword index dropped (%s): searches use FTS5 until the next run", exc)
            self._keywords = None
            keyword_index.discard(keyword_index.folder(self.path))

    def _sync_keywords(self, published: int) -> None:
        """Once a run, as it starts (or at its first publish): opens the keyword index, and
        rebuilds it from the FTS5 rows unless it holds the rows of ``published`` (new, or a run
        was killed between a publish and its commit). Not at the vector file's open: a run
        refused for another's lock must not take the keyword index's."""
        self._keywords_synced = True
        if self._keywords is None:
            self._open_keywords()
        if keyword_index.stamp(keyword_index.folder(self.path)) == published:
            return
        # Each text key once: the text of its first keyword row.
        rows = self.con.execute(
            "SELECT e.text_key, e.table_name, e.column_name, e.text FROM (SELECT min(e.id) AS id "
            f"FROM {BM25}_docsize AS d CROSS JOIN entries e ON e.id = d.id GROUP BY e.text_key) "
            "AS first CROSS JOIN entries e ON e.id = first.id"
        )
        self._keep_keywords(lambda keywords: keywords.rebuild(rows, published))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One SQLite transaction; the keyword texts it changed reach the keyword index only
        if it commits."""
        self._added, self._removed = {}, Counter()
        with self.con:
            yield
        added, removed = self._added, self._removed
        self._added, self._removed = {}, Counter()
        if self._keywords is not None and (added or removed):
            brought, taken = self._keyword_change(added, removed)
            self._keep_keywords(lambda keywords: keywords.apply(brought, taken))

    def _keyword_rows(self, rows: list[tuple[int, Entry]]) -> None:
        """The FTS5 rows of entries ``rows`` (id, entry), and what the keyword index is told."""
        self.con.executemany(
            f"INSERT INTO {BM25} (rowid, text) VALUES (?, ?)", [(i, e.text) for i, e in rows]
        )
        for i, e in rows:
            self._added[i] = (e.text_key, e.table_name, e.column_name, e.text)

    def _keyword_change(
        self, added: dict[int, keyword_index.Text], removed: Counter[int]
    ) -> tuple[list[keyword_index.Text], list[int]]:
        """After a transaction wrote keyword rows ``added`` and deleted rows of text keys
        ``removed``: the texts that had no row before it, and the keys that have none after
        it. Rows are counted only as far as that needs (a boilerplate text may stand in
        thousands of papers)."""
        written: dict[int, tuple[int, keyword_index.Text]] = {}  # key -> (rows written, text)
        for text in added.values():
            count = written[text[0]][0] if text[0] in written else 0
            written[text[0]] = (count + 1, text)
        brought, taken = [], []
        for key in written.keys() | removed.keys():
            count, text = written.get(key, (0, None))
            (now,) = self.con.execute(
                "SELECT count(*) FROM (SELECT 1 FROM entries WHERE text_key = ? LIMIT ?)",
                (key, count + 1),
            ).fetchone()
            before = now - count + removed[key]  # past count, ``now`` only says "some before"
            if now and not before and text is not None:
                brought.append(text)
            elif before and not now:
                taken.append(key)
        return brought, taken

    # -- writes ------------------------------------------------------------------------------
    @contextmanager
    def replacing_documents(
        self,
        doc_ids: Iterable[str],
        entries: Sequence[Entry],
        vectors: dict[str, np.ndarray],
    ) -> Iterator[None]:
        """Retire every entry of ``doc_ids``, then insert ``entries`` with their vectors
        (``vectors[collection][i]`` belongs to ``entries[i]``), in a transaction that commits
        when the block ends and rolls back if it raises: the block writes the same documents'
        rows elsewhere."""
        with self._transaction():
            self._replace(doc_ids, entries, vectors)
            yield

    def _replace(
        self, doc_ids: Iterable[str], entries: Sequence[Entry], vectors: dict[str, np.ndarray]
    ) -> None:
        for doc_id in set(doc_ids):
            self._retire_doc(doc_id)
        ids = [self._insert_entry(e) for e in entries]
        keyword = keyword_columns()
        self._keyword_rows(
            [
                (i, e)
                for i, e in zip(ids, entries, strict=True)
                if (e.table_name, e.column_name) in keyword
            ]
        )
        for collection, matrix in vectors.items():
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            self.con.executemany(
                f"INSERT INTO {vec_table(collection)} (rowid, embedding) VALUES (?, ?)",
                [(i, matrix[n].tobytes()) for n, i in enumerate(ids)],
            )
            self._append_signs(collection, ids, [e.text_key for e in entries], matrix)
        for doc_id in {e.doc_id for e in entries} | set(doc_ids):
            count = sum(1 for e in entries if e.doc_id == doc_id)
            for collection in vectors:
                self.con.execute(
                    "INSERT OR REPLACE INTO embedded_docs VALUES (?, ?, ?)",
                    (doc_id, collection, count),
                )

    def _insert_entry(self, e: Entry) -> int:
        (entry_id,) = self.con.execute(
            "INSERT INTO entries (table_name, column_name, primary_key, doc_id, "
            "page_number, text, born, text_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                e.table_name,
                e.column_name,
                e.primary_key,
                e.doc_id,
                e.page_number,
                e.text,
                self.generation,
                e.text_key,
            ),
        ).fetchone()
        return entry_id

    def rekey_once(
        self, name: str, published: int, table_name: str, glob: str,
        rename: Callable[[str], str | None],
    ) -> int:
        """``rekey``, unless a rekey recorded as ``name`` is in generation ``published`` already
        (its glob reads every entry of the view). A killed run's rekey is undone with its
        generation, and done again."""
        record = f"rekeyed.{name}"
        done = self._meta(record)
        if done is not None and int(done) <= published:
            return 0
        count = self.rekey(table_name, glob, rename)
        with self.con:  # nothing rekeyed: the published generation is as it should be
            self._set_meta(record, str(self.generation if count else published))
        return count

    def rekey(self, table_name: str, glob: str, rename: Callable[[str], str | None]) -> int:
        """Give the live entries of ``table_name`` whose primary_key matches ``glob`` (SQLite's
        GLOB) the key ``rename`` returns, as the generation being built: each becomes a new
        entry with the same text and vectors, and the old one is retired, so readers of the
        published file keep the keys its rows have until the next publish. The number rekeyed."""
        found = self.con.execute(
            "SELECT id, column_name, primary_key, doc_id, page_number, text FROM entries "
            "WHERE table_name = ? AND died IS NULL AND primary_key GLOB ?",
            (table_name, glob),
        ).fetchall()
        keyword = keyword_columns()
        done = 0
        with self._transaction():
            for old, column, key, doc_id, page, text in found:
                new_key = rename(key)
                if new_key is None or new_key == key:
                    continue
                entry = Entry(table_name, column, new_key, doc_id, page, text)
                new = self._insert_entry(entry)
                if (table_name, column) in keyword:
                    self._keyword_rows([(new, entry)])
                for name in self.dense_collections():
                    table = vec_table(name)
                    for (vector,) in self.con.execute(
                        f"SELECT embedding FROM {table} WHERE rowid = ?", (old,)
                    ).fetchall():
                        self.con.execute(
                            f"INSERT INTO {table} (rowid, embedding) VALUES (?, ?)", (new, vector)
                        )
                        matrix = np.frombuffer(vector, np.float32)[None]
                        self._append_signs(name, [new], [entry.text_key], matrix)
                self._delete_where("id = ? AND born >= ?", (old, self.generation))
                self.con.execute(
                    "UPDATE entries SET died = ? WHERE id = ? AND died IS NULL",
                    (self.generation, old),
                )
                done += 1
        return done

    def remove_documents(self, doc_ids: Iterable[str]) -> None:
        """Retire the entries of ``doc_ids``: readers stop seeing them at the next publish."""
        with self._transaction():
            for doc_id in set(doc_ids):
                self._retire_doc(doc_id)

    def _retire_doc(self, doc_id: str) -> None:
        # Entries no reader has seen (born in the generation being built) can go at once.
        self._delete_where("doc_id = ? AND born >= ?", (doc_id, self.generation))
        self.con.execute(
            "UPDATE entries SET died = ? WHERE doc_id = ? AND died IS NULL",
            (self.generation, doc_id),
        )
        self.con.execute("DELETE FROM embedded_docs WHERE doc_id = ?", (doc_id,))

    def published(self, generation: int) -> None:
        """The DuckDB file of ``generation`` is out: forget what it retired, build the next."""
        self.purge(generation)
        self.generation = generation + 1
        self._refresh_signs()
        if not self._keywords_synced:
            self._sync_keywords(generation)
        self._keep_keywords(lambda keywords: keywords.commit(generation))

    def purge(self, published: int) -> None:
        """After generation ``published`` is out: delete the entries no reader can see again."""
        with self._transaction():
            self._delete_where("died <= ?", (published,))

    def discard_unpublished(self, published: int) -> None:
        """At the start of a run: undo what a killed run wrote after generation ``published``
        (its entries, and its retirement of older ones)."""
        with self._transaction():
            self._delete_where("born > ?", (published,))
            self.con.execute("UPDATE entries SET died = NULL WHERE died > ?", (published,))
        self._sync_keywords(published)

    def _delete_where(self, condition: str, params: tuple) -> None:
        found = self.con.execute(
            f"SELECT id, text_key, table_name, column_name FROM entries WHERE {condition}", params
        ).fetchall()
        ids = [(r[0],) for r in found]
        if not ids:
            return
        self.con.executemany(f"DELETE FROM {BM25} WHERE rowid = ?", ids)
        keyword = keyword_columns()
        for entry_id, key, table, column in found:
            if self._added.pop(entry_id, None) is None and (table, column) in keyword:
                self._removed[key] += 1
        for name in self.dense_collections():
            self.con.executemany(f"DELETE FROM {vec_table(name)} WHERE rowid = ?", ids)
        self.con.executemany("DELETE FROM entries WHERE id = ?", ids)

    # -- sign files (sign_file.py) ---------------------------------------------------
    def signs_path(self, collection: str) -> Path:
        return sign_file.signs_path(self.path, collection)

    def sync_signs(self) -> dict[str, str]:
        """At a writer's open: each dense collection's sign file covers all its vectors (built
        for an index written before sign files; appended to after a crash lost its tail).
        Checked against every vector only when the file is shorter than its last recorded
        length, since that comparison reads the whole file and every vector's rowid."""
        done = {}
        for name in self.dense_collections():
            self._rechunk(name)
            path = self.signs_path(name)
            if self._signs_covered(name, path):
                done[name] = "current"
                continue
            done[name] = sign_file.sync(path, self.con, vec_table(name))
            self._record_signs(name, path)
        return done

    def _signs_covered(self, name: str, path: Path) -> bool:
        """Whether the file is of the current layout and as long as when it last covered every
        vector: each commit writing vectors records the file's length after their records
        (``_append_signs``), and each rebuild the new file's. A longer file holds a rolled
        back transaction's records too, which readers skip."""
        recorded = self._meta(_signs_length_key(name))
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return False
        if recorded is None or size < int(recorded):
            return False
        return not sign_file.needs_migration(path)

    def _record_signs(self, name: str, path: Path) -> None:
        """The file's length now, when it covers every vector (after a build or a sync)."""
        if path.exists():
            with self.con:
                self._set_meta(_signs_length_key(name), str(path.stat().st_size))

    def _rechunk(self, name: str) -> None:
        """A collection written before CHUNK_SIZE is copied into small chunks, once. vec0 cannot
        be renamed, so the vectors go through a plain table; one transaction, rowids kept."""
        table = vec_table(name)
        (ddl,) = self.con.execute(
            "SELECT sql FROM sqlite_schema WHERE name = ?", (table,)
        ).fetchone()
        if "chunk_size" in ddl:
            return
        (dim,) = self.con.execute("SELECT dim FROM collections WHERE name = ?", (name,)).fetchone()
        with self.con:
            self.con.execute(
                f"CREATE TEMP TABLE rechunk AS SELECT rowid AS id, embedding FROM {table}"
            )
            self.con.execute(f"DROP TABLE {table}")
            self.con.execute(_vec0_ddl(table, dim))
            self.con.execute(
                f"INSERT INTO {table} (rowid, embedding) SELECT id, embedding FROM temp.rechunk"
            )
            self.con.execute("DROP TABLE temp.rechunk")

    def _append_signs(
        self, collection: str, ids: list[int], keys: list[int], matrix: np.ndarray
    ) -> None:
        """Inside the transaction writing the vectors (of entries ``ids``, with text ``keys``): a
        rollback leaves extra records, which readers skip; a commit never leaves the file short
        of a vector."""
        if not len(ids):
            return
        writer = self._signs.get(collection)
        if writer is None:
            path = self.signs_path(collection)
            writer = sign_file.SignWriter.open(path) or sign_file.SignWriter.create(path, matrix)
            self._signs[collection] = writer
        writer.append(ids, keys, matrix)
        # Committed with the vectors: the file's length that covers them.
        self._set_meta(_signs_length_key(collection), str(writer.size))

    def _refresh_signs(self) -> None:
        """After a publish: rebuild a sign file that purges left mostly stale, or whose centre
        was taken from too few vectors (a new index's first documents); regroup a long tail."""
        for name in self.dense_collections():
            path = self.signs_path(name)
            (live,) = self.con.execute(f"SELECT count(*) FROM {vec_table(name)}_rowids").fetchone()
            if sign_file.needs_build(path, live) or sign_file.needs_regroup(path):
                if name in self._signs:  # its file is replaced: the next append opens the new
                    self._signs.pop(name).close()
                sign_file.refresh(path, self.con, vec_table(name), live)
                self._record_signs(name, path)

    def add_vectors(self, doc_id: str, collection: str, ids: list[int], matrix: np.ndarray) -> None:
        """The second stage of writing a document: the vectors of its entries ``ids`` (as
        ``entries_of`` listed them), recorded complete in ``collection``. No publish is needed:
        the entries are already stamped, and readers see the vectors of entries they see."""
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        with self.con:
            self.con.executemany(
                f"INSERT INTO {vec_table(collection)} (rowid, embedding) VALUES (?, ?)",
                [(i, matrix[n].tobytes()) for n, i in enumerate(ids)],
            )
            keys = sign_file.text_keys(self.con, np.asarray(ids, np.int64))
            self._append_signs(collection, ids, keys, matrix)
            self.con.execute(
                "INSERT OR REPLACE INTO embedded_docs VALUES (?, ?, ?)",
                (doc_id, collection, len(ids)),
            )

    def entries_of(self, doc_id: str) -> list[tuple[int, Entry]]:
        """The live entries of ``doc_id`` with their ids, in the order they were written."""
        rows = self.con.execute(
            "SELECT id, table_name, column_name, primary_key, doc_id, page_number, text "
            "FROM entries WHERE doc_id = ? AND died IS NULL ORDER BY id",
            (doc_id,),
        )
        return [(r[0], Entry(*r[1:])) for r in rows]

    def awaiting_vectors(self, collection: str) -> set[str]:
        """Documents with live entries but no vectors recorded in ``collection``."""
        return awaiting_vectors(self.con, [collection], "e.died IS NULL")

    def embedded_doc_ids(self, collection: str) -> set[str]:
        """Documents whose entries are complete in ``collection``."""
        rows = self.con.execute(
            "SELECT doc_id FROM embedded_docs WHERE collection = ?", (collection,)
        )
        return {r[0] for r in rows}

    def doc_ids(self) -> set[str]:
        """Documents with entries, live or retired, or recorded as embedded."""
        embedded = {r[0] for r in self.con.execute("SELECT doc_id FROM embedded_docs")}
        return embedded.union(entry_doc_ids(self.con))

    def settle(self) -> None:
        """At the end of a run: fold the write-ahead log into the file and leave it in
        rollback-journal mode, so a finished index is one file that any reader opens without
        ``-wal`` and ``-shm`` files, on a read-only mount too. Readers never wait for the run
        meanwhile: it writes in WAL mode and switches to it as it opens the file. A server
        holding the file open keeps it in WAL mode (SQLite refuses the switch at once) until
        the next run ends."""
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with contextlib.suppress(apsw.BusyError):
            self.con.execute("PRAGMA journal_mode=DELETE")
