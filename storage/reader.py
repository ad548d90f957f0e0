"""Read the published index: read-only, sandboxed, and refreshed when the indexer publishes.

The connection is kept open between requests (opening a DuckDB file costs ~15 ms) and reopened
when ``index.duckdb`` is replaced by a new generation (its inode changes). External access is
disabled and the configuration locked, so SQL run through it cannot read or write files, load
extensions or change settings.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import duckdb

from docsym.storage import generations
from docsym.storage.paths import IndexNotFoundError, IndexPaths

SANDBOX = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
    "threads": 2,
    "memory_limit": "2GB",
    "temp_directory": "",  # nothing spills to disk, and no host path shows in the settings
}


class IndexReader:
    def __init__(self, root: Path, **config: str | int) -> None:
        """``config`` overrides the sandbox's threads and memory_limit (the SQL workers')."""
        self.paths = IndexPaths(root)
        self._config = {**SANDBOX, **config}
        self._con: duckdb.DuckDBPyConnection | None = None
        self._identity: tuple[int, int] | None = None
        self._published: tuple[tuple[int, int] | None, int] | None = None
        self._lock = threading.Lock()

    def connection(self) -> duckdb.DuckDBPyConnection:
        """A cursor on the newest published generation of the index."""
        with self._lock:
            identity = self._current_identity()
            if self._con is None or identity != self._identity:
                if self._con is not None:
                    self._con.close()
                self._con = duckdb.connect(
                    str(self.paths.duckdb), read_only=True, config=self._config
                )
                self._identity = identity
            return self._con.cursor()

    def generation(self) -> tuple[int, int]:
        """Identity of the published index file: changes when the indexer publishes."""
        with self._lock:
            return self._current_identity()

    def published(self) -> int:
        """The generation number the indexer stamped on the file readers see now."""
        con = self.connection()
        with self._lock:
            if self._published is None or self._published[0] != self._identity:
                self._published = (self._identity, generations.published(con))
            return self._published[1]

    def _current_identity(self) -> tuple[int, int]:
        try:
            st = os.stat(self.paths.duckdb)
        except FileNotFoundError:
            raise IndexNotFoundError(
                f"no index at {self.paths.root}: run `docsym index PATH --index {self.paths.root}`"
            ) from None
        return st.st_ino, st.st_mtime_ns

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
