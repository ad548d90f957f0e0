"""When an index directory cannot take a run's writes: it is read-only, or it runs out of room.

Both end ``docsym index`` in one line that names the directory, the cause and the remedy
(``docsym/cli.py`` prints every ``IndexUnwritable``). A read-only directory is refused before
anything is opened (``check_writable``). Running out of room is recognised from whichever
writer met it (``out_of_space``): an ``OSError`` (copying the DuckDB file), DuckDB's error text
(its own writes), or SQLite's (``vectors.sqlite``: SQLITE_FULL for a full disk, a write error
whose system errno is EFBIG for the file size limit). The run then stops publishing, removes its
private copies (``storage/directory/writer.py``'s ``IndexWriter.abandon``), and readers keep the
generation published last, byte for byte.
"""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from docsym.storage.file_names import readable
from docsym.storage.paths import IndexPaths

if TYPE_CHECKING:
    import apsw

# errno -> how the message names the cause, and what to do about it.
CAUSES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: (
        "its disk is full",
        "free space there, or index into a directory on a disk with room (--index DIR)",
    ),
    errno.EDQUOT: (
        "the disk quota is used up",
        "free space in the quota, or index into a directory outside it (--index DIR)",
    ),
    errno.EFBIG: (
        "a file would pass this process's file size limit{limit}",
        "raise the limit (ulimit -f unlimited) and run docsym index again",
    ),
}
# What DuckDB's messages end with: it reports the system's error text, not its number.
_TEXTS = {os.strerror(number): number for number in CAUSES}


class IndexUnwritable(RuntimeError):
    """``docsym index`` cannot write the index directory; the message is one line with the
    remedy, and nothing of the run is left half-written."""


class ReadOnlyIndex(IndexUnwritable):
    """The index directory (or a file in it that is written in place) cannot be written."""


class OutOfSpace(IndexUnwritable):
    """A write failed for lack of room: a full disk, a used-up quota or a file size limit."""

    def __init__(self, root: Path, number: int) -> None:
        cause, remedy = CAUSES[number]
        super().__init__(
            f"no room for the index at {readable(root)}: {cause.format(limit=_fsize_limit())}; "
            f"{remedy}. This run's partial files are removed; the index as last published "
            "still serves"
        )
        self.errno = number


def check_writable(root: Path) -> None:
    """Refuse, before anything is opened, an index directory this process cannot write: a
    read-only mount (a shared drive, a snapshot) or one without write permission. A read-only
    index still serves every tool (``storage/directory/vectors.py``'s ``connect``)."""
    paths = IndexPaths(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            existing = next(p for p in root.parents if p.exists())
            raise ReadOnlyIndex(
                f"cannot create the index at {readable(root)}: {_why(existing)}; index into a "
                "writable directory (--index DIR)"
            ) from None
        if exc.errno in CAUSES:
            raise OutOfSpace(root, exc.errno) from None
        raise
    written = (root, paths.vectors, paths.ocr_cache, paths.lock)  # written in place
    for path in written:
        if path.exists() and not _can_write(path):
            raise ReadOnlyIndex(_refusal(root, path))


def _can_write(path: Path) -> bool:
    if os.access in os.supports_effective_ids:
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


def _refusal(root: Path, path: Path) -> str:
    return (
        f"the index at {readable(root)} is read-only ({_why(path)}): docsym index cannot "
        "update it, though it still serves as it is; to add documents, copy it to a writable "
        "directory and index into that (--index DIR)"
    )


def _why(path: Path) -> str:
    try:
        mount_read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        mount_read_only = False
    return "on a read-only file system" if mount_read_only else f"{readable(path)} is not writable"


def out_of_space(exc: BaseException, con: apsw.Connection | None = None) -> int | None:
    """The errno (ENOSPC, EDQUOT or EFBIG) if ``exc``, or an exception it was raised from, is a
    write that failed for lack of room; else None. ``con`` is the SQLite connection that
    raised it, which knows the system error behind a generic SQLite I/O error."""
    import apsw  # here, not above: the CLI imports this module for its errors alone
    import duckdb

    for error in _chain(exc):
        if isinstance(error, OSError) and error.errno in CAUSES:
            return error.errno
        if isinstance(error, apsw.FullError | apsw.IOError):
            system = con.system_errno if con is not None else 0
            if system in CAUSES:
                return system
            if isinstance(error, apsw.FullError):  # SQLite's word for ENOSPC
                return errno.ENOSPC
        if isinstance(error, duckdb.Error):
            for text, number in _TEXTS.items():
                if text in str(error):
                    return number
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _fsize_limit() -> str:
    """' (20.0 MB, ulimit -f)' for this process's file size limit, or ' (ulimit -f)'."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY:
        return " (ulimit -f)"
    return f" ({soft / 2**20:.1f} MB, ulimit -f)"
