"""Read the published index: read-only, sandboxed, one generation per call.

The indexer publishes by renaming a new file over ``index.duckdb`` (``writer.py``). A
reader keeps a connection to the generation it last saw (opening a DuckDB file costs ~15 ms)
and opens the new one when the file's identity changes, or the same files afresh when the index
nodes its lookups loaded pass their budget (``INDEX_MEMORY_SHARE``); the old one is never closed
under a caller: it goes when the last cursor and pin on it go. Closing it at once, as readers
did, broke calls in flight on other threads ("Connection already closed!", "No open result set":
75 of 592 calls four at a time failed with a publish every 0.2 s).

Each generation is its own in-memory DuckDB instance with the file attached read-only. DuckDB
keeps one instance per file path in a process and hands it to every ``connect`` of that path,
so a connection opened on the new file while the old one lived would read the old generation;
an attached file is opened afresh by each instance. Every cursor then starts with ``USE idx``.

``pinned()`` holds one generation for a whole tool call, on every thread the call runs on
(the pin is a context variable): its statements, the published generation number that decides
which vector entries it sees, and the version its cached structures are keyed by all agree, so
a call finishes on the generation it started with.

External access is disabled and the configuration locked once the file is attached, so SQL run
through a cursor cannot read or write files, load extensions or change settings.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import duckdb

from docsym.runtime.settings import get_settings
from docsym.storage.directory import generations, segments
from docsym.storage.paths import IndexNotFoundError, IndexPaths

SANDBOX = {
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "threads": 2,
    "temp_directory": "",  # nothing spills to disk, and no host path shows in the settings
}
# Set once the file is attached (attaching is itself an access to a file).
LOCKS = ("SET enable_external_access = false", "SET lock_configuration = true")
CATALOG = "idx"  # a single published file's name in each generation's instance
# An instance keeps in memory every node of an index (ART) that a lookup by key loaded, and
# DuckDB cannot evict them: at 10,000 papers a server's few hundred calls filled its whole
# memory limit with them, and statements failed "Out of Memory". Once they pass this share of
# the limit, the next call opens the same files in a fresh instance.
INDEX_MEMORY_SHARE = 0.25
OPEN_SECONDS = 10.0  # a first open retried while publishes merge away what it read of the manifest

Identity = tuple[int, int]  # the published file's inode and modification time


class SegmentGoneError(RuntimeError):
    """A segment listed by the manifest read was removed since: read the manifest again."""


class Generation:
    """One published index, attached read-only to an instance of its own: a single file as
    the catalog ``idx``, or segments as ``s0``... with the views over them in ``memory``."""

    def __init__(self, index: segments.Published, identity: Identity, config: dict) -> None:
        self.identity = identity
        self._con = duckdb.connect(":memory:", config=config)
        self._segments: tuple[list[str], dict[str, bool]] | None = None
        if index.manifest:
            self._home = "memory"
            self._attach_segments(list(index.files))
        else:
            self._home = CATALOG
            segments.attach(self._con, index.files[0], CATALOG)
        for statement in LOCKS:
            self._con.execute(statement)
        self._published: int | None = None
        self._counts: dict[str, int] | None = None
        self._lock = threading.Lock()

    def _attach_segments(self, files: list[Path]) -> None:
        catalogs = [f"s{n}" for n in range(len(files))]
        for path, catalog in zip(files, catalogs, strict=True):
            try:
                segments.attach(self._con, path, catalog)
            except duckdb.IOException as exc:
                if not path.exists():  # merged away after the manifest was read
                    raise SegmentGoneError(str(path)) from exc
                raise
        gone = {c: segments.has_gone(self._con, c) for c in catalogs}
        for statement in segments.library_views(catalogs, gone):
            self._con.execute(statement)
        self._segments = (catalogs, gone)

    def index_bytes(self) -> int:
        """Memory the instance holds for the indexes its lookups loaded."""
        found = self._con.cursor().execute(
            "SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'ART_INDEX'"
        ).fetchone()
        return int(found[0]) if found else 0

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for one caller: cursors are not shared between threads."""
        cursor = self._con.cursor()
        cursor.execute(f"USE {self._home}")
        return cursor

    def published(self) -> int:
        """The generation number the indexer stamped on this file."""
        with self._lock:
            if self._published is None:
                self._published = generations.published(self.cursor())
            return self._published

    def row_counts(self) -> dict[str, int]:
        """Rows of each view, counted once: a generation never changes."""
        with self._lock:
            if self._counts is None:
                self._counts = {table: self._count(table) for table in segments.DOC_TABLES}
            return self._counts

    def _count(self, table: str) -> int:
        cursor = self.cursor()
        if self._segments is None:
            return cursor.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        first, *hidden = segments.count_statements(*self._segments, table)
        total = cursor.execute(first).fetchone()[0]
        return total - sum(cursor.execute(sql).fetchone()[0] for sql in hidden)


class IndexReader:
    def __init__(self, root: Path, *, threads: int | None = None, memory_mb: int | None = None):
        """``threads`` and ``memory_mb`` override the sandbox's and the settings' (the SQL
        workers')."""
        self.paths = IndexPaths(root)
        # A library's blocks fill any cache DuckDB is given (2 GB let a server reach 2.3 GB at
        # 10,000 papers); what a tool's statement needs is far less (docs/RESULTS.md).
        memory_mb = memory_mb or get_settings().read_memory_mb
        self._config = {**SANDBOX, "memory_limit": f"{memory_mb}MB"}
        if threads is not None:
            self._config["threads"] = threads
        self._index_budget = int(memory_mb * segments.MB * INDEX_MEMORY_SHARE)
        self._newest: Generation | None = None
        self._pin: ContextVar[Generation | None] = ContextVar(f"pin-{id(self)}", default=None)
        self._lock = threading.Lock()

    def connection(self) -> duckdb.DuckDBPyConnection:
        """A cursor on the pinned generation, else on the newest published one."""
        return self._generation().cursor()

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Read one generation until the block ends (nested pins keep the outer one)."""
        if self._pin.get() is not None:
            yield
            return
        token = self._pin.set(self._newest_generation())
        try:
            yield
        finally:
            self._pin.reset(token)

    def generation(self) -> Identity:
        """Identity of the generation read: changes when the indexer publishes."""
        pinned = self._pin.get()
        return pinned.identity if pinned is not None else self._current_identity()

    def published(self) -> int:
        """The generation number the indexer stamped on the file read."""
        return self._generation().published()

    def row_counts(self) -> dict[str, int]:
        return self._generation().row_counts()

    def _generation(self) -> Generation:
        return self._pin.get() or self._newest_generation()

    def _newest_generation(self) -> Generation:
        with self._lock:
            deadline = time.monotonic() + OPEN_SECONDS
            while True:
                identity = self._current_identity()
                if self._newest is not None and self._fresh(self._newest, identity):
                    return self._newest
                try:
                    # The one before is dropped, not closed: calls reading it finish on it. So is
                    # an instance of the same files whose indexes passed the budget.
                    index = segments.published(self.paths)
                    self._newest = Generation(index, identity, self._config)
                    return self._newest
                except (SegmentGoneError, FileNotFoundError):
                    # Published again while it was opened. The generation read before is whole
                    # (its files stay open), so read on from it; the next call opens the newest.
                    if self._newest is not None:
                        return self._newest
                    if time.monotonic() > deadline:
                        raise IndexNotFoundError(
                            f"the index at {self.paths.root} changed under every read for "
                            f"{OPEN_SECONDS:.0f} s"
                        ) from None
                    time.sleep(0.01)

    def _fresh(self, generation: Generation, identity: Identity) -> bool:
        """Whether ``generation`` is of the published files and its indexes within budget."""
        return generation.identity == identity and generation.index_bytes() <= self._index_budget

    def _current_identity(self) -> Identity:
        """The manifest's identity when segments are published, else the single file's."""
        for path in (self.paths.manifest, self.paths.duckdb):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            return st.st_ino, st.st_mtime_ns
        raise IndexNotFoundError(
            f"no index at {self.paths.root}: run `docsym index PATH --index {self.paths.root}`"
        )

    def close(self) -> None:
        with self._lock:
            self._newest = None
