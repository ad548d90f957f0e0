"""Write documents into the index without ever exposing a half-written state.

DuckDB allows no other process to open a file, not even read-only, while a writer holds it. So
the indexer never writes a published file in place: it works on a private *head*, commits one
document per transaction there, and *publishes* atomically. While the index is one small file,
a checkpointed copy of the head is renamed over ``index.duckdb``; a larger index is published
as segments (``segments.py``): older rows in immutable files, the head copied alone, and
a manifest replaced atomically, so a publish costs what changed rather than the library. Readers
(the MCP server) open what is published read-only and reopen it when it changes, so they keep
answering during an index run and see new documents afterwards. Killing the indexer at any
moment leaves the last published index intact; the next run starts from it. Each publish is
numbered (a *generation*, recorded in the head) so the vector file can show readers exactly the
entries of the rows they read (``generations.py``). A lock file keeps two indexers from
racing.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np

from docsym.storage import failed_files, migrations, run_state, schema
from docsym.storage.directory import generations, segments
from docsym.storage.file_names import original_path, readable, stored_path
from docsym.storage.paths import IndexPaths
from docsym.storage.rows import DocumentRows, Row, Table

log = logging.getLogger(__name__)


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
        self._head = ""  # the head's catalog name in ``_con``: the target of every write
        # Published segments older than the head, oldest first (segments.py); none
        # while the index is one file.
        self._frozen: list[Path] = []
        self._serial = 0  # tells apart the segment files one generation makes
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
            index = segments.published(self.paths)
            _tidy(self.paths, index.files)  # segments a killed run made but never published
            self._start_head(list(index.files))
            self._open_head()
            self.published = generations.published(self._con)
            upgrade = migrations.upgrade(self._con)
        except BaseException:  # a full disk, say: nothing half-copied stays behind
            self.abandon()
            raise
        # Documents written by an older docsym may lack newer views: index them again.
        self.needs_reindex = upgrade.reindex
        self._dirty = not index.files or upgrade.from_version != upgrade.to_version
        return self

    def _start_head(self, files: list[Path]) -> None:
        """The head a run writes: the newest segment's copy when it is small (the whole index,
        while it is one small file), else a new one beside the published segments. An index
        whose schema is older is first folded into one file, which the migrations rewrite."""
        work = self.paths.work_duckdb
        if not files:
            return
        if segments.schema_version(files[-1]) != migrations.MIGRATIONS[-1].version:
            shutil.copyfile(files[0], work)
            for newer in files[1:]:
                segments.merge_into(work, newer)
        elif files[-1].stat().st_size < segments.head_bytes():
            shutil.copyfile(files[-1], work)
            self._frozen = files[:-1]
        else:
            self._frozen = files
            self._new_head(files[-1])

    def _new_head(self, newest: Path) -> None:
        """An empty head of the current schema, with the index's meta and failed-file records
        (which readers take from the newest segment)."""
        with duckdb.connect(str(self.paths.work_duckdb)) as con:
            con.execute("BEGIN TRANSACTION")  # one commit, not one per statement (~1 s)
            migrations.upgrade(con)
            con.execute("COMMIT")
            segments.attach(con, newest, "newest")
            con.execute("BEGIN TRANSACTION")
            for table in segments.NEWEST_ONLY:
                con.execute(f"DELETE FROM {table}")
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM newest.{table}")
            con.execute("COMMIT")

    def _open_head(self) -> None:
        """Connect to the head, with the published segments older than it attached and the
        views over them all (temporary, shadowing the head's tables for reads)."""
        self._con = duckdb.connect(str(self.paths.work_duckdb))
        self._head = self._con.execute("SELECT current_database()").fetchone()[0]
        if not self._frozen:
            return
        self._con.execute(segments.GONE_DDL)  # a single file has nothing older to hide
        catalogs = [f"f{n}" for n in range(len(self._frozen))]
        for path, catalog in zip(self._frozen, catalogs, strict=True):
            segments.attach(self._con, path, catalog)
        gone = {c: segments.has_gone(self._con, c) for c in catalogs} | {self._head: True}
        for statement in segments.library_views([*catalogs, self._head], gone, writer=True):
            self._con.execute(statement)

    def _close_head(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

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
        """End the run without publishing anything more: readers keep the last published index,
        and the next run starts from it. The private files go, whatever state a failed write
        (a full disk) left them in."""
        try:
            if self._con is not None:
                with contextlib.suppress(duckdb.Error):
                    self._con.close()
        finally:
            self._con = None
            _remove_writer_files(self.paths)
            with contextlib.suppress(OSError):
                _tidy(self.paths, segments.published(self.paths).files)
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
        statement = (
            f"UPDATE {self._head}.documents SET path = ?, path_bytes = ?, file_name = ? "
            "WHERE doc_id = ?"
        )
        params = [text, raw, readable(path.name), doc_id]

        def move() -> None:
            self._adopt(doc_id)
            self.con.execute(statement, params)

        self._in_transaction(move, [doc_id])

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
            self.con.execute(f"DELETE FROM {self._head}.{table.name} WHERE doc_id = ?", [doc_id])
        if self._in_frozen(doc_id):
            self._bury(doc_id)

    def _in_frozen(self, doc_id: str) -> bool:
        return any(
            self.con.execute(
                f"SELECT count(*) FROM f{n}.documents WHERE doc_id = ?", [doc_id]
            ).fetchone()[0]
            for n in range(len(self._frozen))
        )

    def _adopt(self, doc_id: str) -> None:
        """Bring a document of an older segment into the head (to change its rows there)."""
        head_rows = f"SELECT count(*) FROM {self._head}.documents WHERE doc_id = ?"
        if self.con.execute(head_rows, [doc_id]).fetchone()[0] or not self._in_frozen(doc_id):
            return
        for table in schema.TABLES:  # read through the views: the live rows, wherever they are
            self.con.execute(
                f"INSERT INTO {self._head}.{table.name} BY NAME SELECT * FROM {table.name} "
                "WHERE doc_id = ?",
                [doc_id],
            )
        self._bury(doc_id)

    def _bury(self, doc_id: str) -> None:
        """Hide the document's rows in the older segments from the next publish on."""
        self.con.execute(
            f"INSERT INTO {self._head}.{segments.GONE_TABLE} VALUES (?) ON CONFLICT DO NOTHING",
            [doc_id],
        )

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
        self.con.execute(
            f"INSERT INTO {self._head}.{table.name} ({', '.join(names)}) SELECT * FROM new_rows"
        )

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
        self._stamp(run_state.value(os.getpid(), self.waiting_files))
        if self._frozen or _size(self.paths.work_duckdb) >= segments.head_bytes():
            self._publish_segments(final=False)
        else:
            staging = self.paths.publish_duckdb
            try:
                shutil.copyfile(self.paths.work_duckdb, staging)
                _fsync(staging)
                os.replace(staging, self.paths.duckdb)
            except BaseException:  # readers keep the index published last
                _remove(staging)
                raise
            self._one_file_published()
        self._last_publish = time.monotonic()
        self._dirty = False
        self._published_as(self.generation)

    def _final_publish(self) -> None:
        """The run's last publish: an index that is small in all becomes one file again."""
        self._stamp("")
        total = segments.size(self._frozen) + _size(self.paths.work_duckdb)
        if not self._frozen:
            self._close_head()
            _fsync(self.paths.work_duckdb)
            os.replace(self.paths.work_duckdb, self.paths.duckdb)
            self._one_file_published()
        elif total <= segments.consolidate_bytes():
            self._consolidate()
        else:
            self._publish_segments(final=True)
            self._order_segments()
        self._dirty = False
        self._published_as(self.generation)

    def _stamp(self, run: str) -> None:
        generations.stamp(self.con, self.generation)
        migrations.write_meta(self.con, run_state.KEY, run)
        self.con.execute("CHECKPOINT")

    def _publish_segments(self, *, final: bool) -> None:
        """Publish the head beside the frozen segments: copied while small, else frozen (renamed
        into the segments, no copy) and followed by a new empty head."""
        self.paths.segments.mkdir(exist_ok=True)
        if final or _size(self.paths.work_duckdb) >= segments.head_bytes():
            self._close_head()
            frozen = self._segment_file()
            _fsync(self.paths.work_duckdb)
            os.replace(self.paths.work_duckdb, frozen)
            self._frozen.append(frozen)
            self._merge_tail()
            listed = list(self._frozen)
            if not final:
                self._new_head(self._frozen[-1])
                self._open_head()
        else:
            copy = self._segment_file()
            shutil.copyfile(self.paths.work_duckdb, copy)
            _fsync(copy)
            listed = [*self._frozen, copy]
        segments.write_manifest(self.paths, listed)
        _tidy(self.paths, listed)

    def _merge_tail(self) -> None:
        """Merge the newest frozen segment into the one before while it is at least
        1 / MERGE_RATIO of its size: O(log n) segments, each row copied O(log n) times."""
        while len(self._frozen) >= 2:
            older, newer = self._frozen[-2:]
            if newer.stat().st_size * segments.MERGE_RATIO < older.stat().st_size:
                return
            merged = self._segment_file()
            shutil.copyfile(older, merged)
            segments.merge_into(merged, newer)
            _fsync(merged)
            self._frozen[-2:] = [merged]

    def _order_segments(self) -> None:
        """Rewrite in document order each large segment whose rows are not (a merge appended
        a run to it, or it was a head), and publish the rewritten ones in their place. At a
        run's end only, after its last publish: a rewrite reads and writes a whole segment."""
        listed = [
            path
            if _size(path) < segments.consolidate_bytes() or segments.in_document_order(path)
            else self._in_document_order(path)
            for path in self._frozen
        ]
        if listed != self._frozen:
            self._frozen = listed
            segments.write_manifest(self.paths, listed)
            _tidy(self.paths, listed)

    def _in_document_order(self, path: Path) -> Path:
        """``path`` rewritten in document order; ``path`` itself when that fails (a full disk,
        say): the run has published everything, and its rows read the same, only slower."""
        ordered = self._segment_file()
        try:
            segments.write_in_document_order(path, ordered)
            _fsync(ordered)
        except (OSError, duckdb.Error) as exc:
            _remove(ordered)
            log.warning("%s left as it was, not rewritten in document order: %s", path.name, exc)
            return path
        return ordered

    def _consolidate(self) -> None:
        """Fold every segment and the head into one file and publish it as ``index.duckdb``:
        first listed alone by the manifest, then linked to its place, then the manifest goes,
        so a reader sees the old segments or the new file, never both."""
        self._close_head()
        merged = self._segment_file()
        shutil.copyfile(self._frozen[0], merged)
        for newer in [*self._frozen[1:], self.paths.work_duckdb]:
            segments.merge_into(merged, newer)
        segments.drop_tombstones(merged)  # one file: nothing older for them to hide
        _fsync(merged)
        segments.write_manifest(self.paths, [merged])
        staging = self.paths.publish_duckdb
        _remove(staging)
        os.link(merged, staging)
        os.replace(staging, self.paths.duckdb)
        self._frozen = []
        self._one_file_published()

    def _one_file_published(self) -> None:
        """``index.duckdb`` is the whole index: a manifest left from segments goes, then they."""
        self.paths.manifest.unlink(missing_ok=True)
        _tidy(self.paths, [self.paths.duckdb])

    def _segment_file(self) -> Path:
        self._serial += 1
        return segments.segment_path(self.paths, self.generation, self._serial)

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


def _size(path: Path) -> int:
    return path.stat().st_size


def _tidy(paths: IndexPaths, listed: tuple[Path, ...] | list[Path]) -> None:
    """Remove segment files no longer published (merged, superseded, or made by a killed run),
    and ``index.duckdb`` once segments replace it. A reader still reading one keeps it open."""
    keep = {p.name for p in listed if p.parent == paths.segments}
    if paths.segments.is_dir():
        for path in paths.segments.glob("*.duckdb*"):
            if path.name not in keep:
                _remove(path)
    if listed and paths.duckdb not in listed:
        _remove(paths.duckdb)


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
