"""Write documents into the index without ever exposing a half-written state.

DuckDB allows no other process to open a file, not even read-only, while a writer holds it. So
the indexer never writes ``index.duckdb`` in place: it works on a private copy, commits one
document per transaction there, and *publishes* by atomically renaming a checkpointed copy over
``index.duckdb``. Readers (the MCP server) open the published file read-only and reopen it when
its inode changes, so they keep answering during an index run and see new documents afterwards.
Killing the indexer at any moment leaves the last published file intact; the next run starts
from it. Each publish is numbered (a *generation*, recorded in the file) so the vector file can
show readers exactly the entries of the file they read (``storage/generations.py``). A lock file
keeps two indexers from racing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np

from docsym.storage import failed_files, generations, migrations, run_state, schema
from docsym.storage.file_names import original_path, readable, stored_path
from docsym.storage.paths import IndexPaths
from docsym.storage.rows import DocumentRows, Row, Table


class IndexLockedError(RuntimeError):
    """Another indexer is writing this index."""


class IndexWriter:
    def __init__(
        self,
        root: Path,
        publish_every: float = 30.0,
        after_publish: Callable[[int], None] | None = None,
    ) -> None:
        self.paths = IndexPaths(root)
        self.publish_every = publish_every
        # Told each published generation's number, once readers can see it.
        self.after_publish = after_publish
        self.published = 0  # the generation readers see; the one being built is published + 1
        self._lock_file = None
        self._con: duckdb.DuckDBPyConnection | None = None
        self._last_publish = time.monotonic()
        self._dirty = False
        self.needs_reindex = False
        # Files of this run not yet written, recorded with each publish (storage/run_state.py).
        self.waiting_files = 0

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> IndexWriter:
        self.paths.root.mkdir(parents=True, exist_ok=True)
        self._acquire_lock()
        try:
            _remove_writer_files(self.paths)  # a killed run's
            work = self.paths.work_duckdb
            if self.paths.duckdb.exists():
                shutil.copyfile(self.paths.duckdb, work)
            self._con = duckdb.connect(str(work))
            self.published = generations.published(self._con)
            upgrade = migrations.upgrade(self._con)
        except BaseException:  # a full disk, say: nothing half-copied stays behind
            self.abandon()
            raise
        # Documents written by an older docsym may lack newer views: index them again.
        self.needs_reindex = upgrade.reindex
        self._dirty = not self.paths.duckdb.exists() or upgrade.from_version != upgrade.to_version
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if self._con is not None:
                if exc_type is None or self._dirty:
                    self._final_publish()
                else:
                    self._con.close()
        finally:
            self._con = None
            _remove_writer_files(self.paths)
            self._release_lock()

    def abandon(self) -> None:
        """End the run without publishing anything more: readers keep the last published file,
        and the next run starts from it. The private copies go, whatever state a failed write
        (a full disk) left them in."""
        try:
            if self._con is not None:
                with contextlib.suppress(duckdb.Error):
                    self._con.close()
        finally:
            self._con = None
            _remove_writer_files(self.paths)
            self._release_lock()

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        assert self._con is not None, "use IndexWriter as a context manager"
        return self._con

    # -- queries the indexer needs ---------------------------------------------------------
    def documents_by_path(self) -> dict[str, tuple[str, str]]:
        """path -> (doc_id, sha256) for every indexed document (the path as the file system
        names it: see ``storage/file_names.py``)."""
        rows = self.con.execute("SELECT path, path_bytes, doc_id, sha256 FROM documents").fetchall()
        return {str(original_path(p, raw)): (doc_id, sha) for p, raw, doc_id, sha in rows}

    # -- writes ----------------------------------------------------------------------------
    @contextmanager
    def writing_document(self, rows: DocumentRows, old_doc_ids: list[str]) -> Iterator[None]:
        """Write one document's rows, removing ``old_doc_ids`` first, in one transaction that
        commits when the block ends, or rolls back if the block (or the commit) raises. The
        caller writes the document's vectors in the block, so neither side lands alone."""
        (document,) = rows.of(schema.DocumentRow)
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            for old in {document.doc_id, *old_doc_ids}:
                self._delete(old)
            for table in schema.TABLES:
                self._insert(table, rows.of_table(table))
            yield
            con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error):  # a failed COMMIT leaves nothing to undo
                con.execute("ROLLBACK")
            raise
        self._dirty = True

    def remove_documents(self, doc_ids: list[str]) -> None:
        if not doc_ids:
            return
        self.con.execute("BEGIN TRANSACTION")
        try:
            for doc_id in doc_ids:
                self._delete(doc_id)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self._dirty = True

    def move_document(self, doc_id: str, path: Path) -> None:
        """The document's file is now at ``path`` (moved or renamed, the same content)."""
        text, raw = stored_path(path)
        statement = "UPDATE documents SET path = ?, path_bytes = ?, file_name = ? WHERE doc_id = ?"
        params = [text, raw, readable(path.name), doc_id]
        self._in_transaction(lambda: self.con.execute(statement, params), [doc_id])

    def record_failures(self, rows: list[tuple]) -> None:
        """Record files a run could not read (``storage/failed_files.py``'s rows)."""
        self._in_transaction(lambda: self.con.executemany(failed_files.UPSERT, rows), rows)

    def clear_failures(self, paths: list[str]) -> None:
        """Forget the records of files since read, or gone."""
        params = [[path] for path in paths]
        self._in_transaction(lambda: self.con.executemany(failed_files.DELETE, params), paths)

    def failure_paths(self) -> list[tuple[str, bytes | None]]:
        return self.con.execute(failed_files.PATHS).fetchall()

    def _in_transaction(self, change: Callable[[], object], items: list) -> None:
        if not items:
            return
        self.con.execute("BEGIN TRANSACTION")
        try:
            change()
            self.con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            raise
        self._dirty = True

    def _delete(self, doc_id: str) -> None:
        for table in reversed(schema.TABLES):
            self.con.execute(f"DELETE FROM {table.name} WHERE doc_id = ?", [doc_id])

    def _insert(self, table: Table, rows: list[Row]) -> None:
        """Insert typed rows of ``table`` column by column: DuckDB scans a dict of arrays in
        bulk (row-by-row inserts are two orders of magnitude slower), and unlike a pandas frame
        it needs no import of pandas (~0.2 s of every run's start)."""
        if not rows:
            return
        names = [c.name for c in table.columns]
        new_rows = {  # noqa: F841 (DuckDB finds it by name in the query below)
            name: _column([getattr(row, name) for row in rows]) for name in names
        }
        self.con.execute(f"INSERT INTO {table.name} ({', '.join(names)}) SELECT * FROM new_rows")

    # -- publishing ------------------------------------------------------------------------
    def publish_if_due(self, now: bool = False) -> None:
        """Publish what was committed if ``publish_every`` seconds have passed since the last
        publish (or ``now``): called after each document and while the run waits for one."""
        if self._dirty and (now or time.monotonic() - self._last_publish >= self.publish_every):
            self.publish()

    @property
    def generation(self) -> int:
        """The generation being built: what new vector entries are stamped with."""
        return self.published + 1

    def publish(self) -> None:
        """Make everything committed so far visible to readers, atomically."""
        generations.stamp(self.con, self.generation)
        migrations.write_meta(
            self.con, run_state.KEY, run_state.value(os.getpid(), self.waiting_files)
        )
        self.con.execute("CHECKPOINT")
        staging = self.paths.publish_duckdb
        try:
            shutil.copyfile(self.paths.work_duckdb, staging)
            _fsync(staging)
            os.replace(staging, self.paths.duckdb)
        except BaseException:  # readers keep the file published last
            _remove(staging)
            raise
        self._last_publish = time.monotonic()
        self._dirty = False
        self._published_as(self.generation)

    def _final_publish(self) -> None:
        generations.stamp(self.con, self.generation)
        migrations.write_meta(self.con, run_state.KEY, "")
        self.con.execute("CHECKPOINT")
        self.con.close()
        self._con = None
        _fsync(self.paths.work_duckdb)
        os.replace(self.paths.work_duckdb, self.paths.duckdb)
        self._dirty = False
        self._published_as(self.generation)

    def _published_as(self, generation: int) -> None:
        self.published = generation
        if self.after_publish is not None:
            self.after_publish(generation)

    # -- schema and lock -------------------------------------------------------------------
    def reindex_doc_ids(self) -> set[str]:
        """The documents an upgrade asks to index again: every one, or those of some formats."""
        pending = migrations.read_meta(self.con, migrations.PENDING_REINDEX)
        return migrations.documents_to_reindex(self.con, pending)

    def reindex_done(self) -> None:
        """Record that every document has the current schema's rows (after re-indexing them)."""
        migrations.reindex_done(self.con)
        self._dirty = True

    def _acquire_lock(self) -> None:
        """Hold the index's lock for the run, the lock file naming this process, so a second
        writer is told which process writes (a watching one never finishes)."""
        self._lock_file = open(self.paths.lock, "a+")  # noqa: SIM115 (held for the whole run)
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.seek(0)
            holder = self._lock_file.read().strip()
            self._lock_file.close()
            self._lock_file = None
            who = f" (process {holder})" if holder.isdigit() else ""
            raise IndexLockedError(
                f"another docsym index run{who} is writing {self.paths.root}; wait for it to "
                "finish, or stop it (a docsym index --watch or serve --watch keeps writing)"
            ) from None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(str(os.getpid()))
        self._lock_file.flush()

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _remove_writer_files(paths: IndexPaths) -> None:
    for path in paths.writer_files():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            _remove(path)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _column(values: list) -> np.ndarray:
    """One column's values as a one-dimensional object array: filled one by one, since numpy
    would read a column of equal-length lists (boxes) as a two-dimensional array."""
    column = np.empty(len(values), dtype=object)
    for n, value in enumerate(values):
        column[n] = value
    return column
