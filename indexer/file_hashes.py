"""Which files a pass must read: the SHA-256 of each file read, with what ``stat`` said of it
then, so a watched folder's rescan (and a watcher starting on a library indexed before) reads
only the files whose size or times changed, where it would read every byte of the library.

A file is taken as unchanged when its size, modification time, status-change time and inode
are those it had when it was read. The status-change time is set by the kernel on every write
and cannot be set back (``touch -r`` and ``rsync -t`` restore the modification time only), and a
file replaced by another gets a new inode. A file modified within ``RACY_SECONDS`` of being read
is not remembered: a second write inside the file system's time resolution (2 s on FAT) would
leave its times as they were.

Beside a directory index the hashes are kept in ``file-hashes.sqlite``, a cache: it maps a
file's ``stat`` to its bytes' hash, whatever the index holds, so one left from an older index is
still right, and one that cannot be read or written is simply not used.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from docsym.indexer.discover import sha256_of

log = logging.getLogger(__name__)

RACY_SECONDS = 2.0  # a file modified this recently may change again within its time's resolution
SCHEMA = "CREATE TABLE IF NOT EXISTS file_hashes (path BLOB PRIMARY KEY, stat TEXT, sha256 TEXT)"


class FileHashes:
    """The hashes a session read, and those a former session kept in ``cache`` (a file)."""

    def __init__(self, cache: Path | None = None) -> None:
        self._seen: dict[Path, tuple[str, str]] = {}  # path -> (stat, sha256)
        self._changed: set[Path] = set()  # written to or dropped from ``cache`` at ``save``
        self._db = _open(cache) if cache is not None else None
        if self._db is not None:
            self._load()

    def sha256(self, path: Path, *, trust_unchanged: bool) -> str:
        """The file's SHA-256: read from disk, or with ``trust_unchanged`` the one it had when
        it was last read if ``stat`` says it has not changed since."""
        st = path.stat()
        stat = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
        seen = self._seen.get(path)
        if trust_unchanged and seen is not None and seen[0] == stat:
            return seen[1]
        sha = sha256_of(path)
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_SECONDS * 1e9:
            self._seen[path] = (stat, sha)  # the stat from before the read: a write during it shows
        else:
            self._seen.pop(path, None)
        self._changed.add(path)
        return sha

    def forget(self, paths: Iterable[Path]) -> None:
        """These files are read again, whatever their ``stat`` says."""
        for path in paths:
            if self._seen.pop(path, None) is not None:
                self._changed.add(path)

    def save(self) -> None:
        """Write what changed since the last save to the cache file, if there is one."""
        if self._db is None or not self._changed:
            return
        keep = [(os.fsencode(p), *self._seen[p]) for p in self._changed if p in self._seen]
        drop = [(os.fsencode(p),) for p in self._changed if p not in self._seen]
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO file_hashes VALUES (?, ?, ?)", keep)
                self._db.executemany("DELETE FROM file_hashes WHERE path = ?", drop)
        except sqlite3.Error as exc:  # a full disk, say: the next session reads the files
            log.debug("file hashes not kept: %s", exc)
            self.close()
        self._changed.clear()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _load(self) -> None:
        assert self._db is not None
        try:
            rows = self._db.execute("SELECT path, stat, sha256 FROM file_hashes").fetchall()
        except sqlite3.Error as exc:
            log.debug("file hashes not read: %s", exc)
            self.close()
            return
        self._seen = {Path(os.fsdecode(path)): (stat, sha) for path, stat, sha in rows}


def _open(cache: Path) -> sqlite3.Connection | None:
    """The cache file, made if missing; None if it cannot be (a read-only index)."""
    db = None
    try:
        db = sqlite3.connect(cache, check_same_thread=False)
        db.execute(SCHEMA)
        return db
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        log.debug("no file hashes kept at %s: %s", cache, exc)
        return None
