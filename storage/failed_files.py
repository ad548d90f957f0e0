"""What the index remembers of the files it could not read (the ``failed_files`` table).

A run records each file it reported as failed or skipped, with the reason and the time; a later
run that reads the file, or finds it gone, clears it. Readers show the records beside the
documents, so a client can tell a file that failed from one that was never there. The
statements are written once, in the SQL both backends run (``?`` placeholders; PostgreSQL's
writer converts them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from docsym.storage.file_names import original_path, stored_path

Outcome = Literal["failed", "skipped"]
TABLE = "failed_files"
_COLUMNS = ("path", "path_bytes", "file_name", "outcome", "reason", "recorded_at")

UPSERT = (
    f"INSERT INTO {TABLE} ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)}) "
    "ON CONFLICT (path) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c != "path")
)
DELETE = f"DELETE FROM {TABLE} WHERE path = ?"
PATHS = f"SELECT path, path_bytes FROM {TABLE}"
# Newest first: what a client looks at is what the last runs said.
READ = (
    f"SELECT path, file_name, outcome, reason, recorded_at FROM {TABLE} "
    "ORDER BY recorded_at DESC, path"
)
EXISTS = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"


@dataclass(frozen=True)
class FailedFile:
    path: str  # readable text (storage/file_names.py)
    file_name: str
    outcome: Outcome
    reason: str
    recorded_at: datetime


def record_row(path: Path | str, outcome: Outcome, reason: str) -> tuple[Any, ...]:
    """The row recording ``path`` (a Path, or a path already made readable text) as ``outcome``
    for ``reason``, now."""
    text, raw = stored_path(path) if isinstance(path, Path) else (path, None)
    name = text.rsplit("/", 1)[-1]
    now = datetime.now(UTC).replace(tzinfo=None)
    return (text, raw, name, outcome, reason, now)


def gone(rows: list[tuple[str, bytes | None]]) -> list[str]:
    """The recorded paths (``PATHS``'s rows) whose files no longer exist."""
    return [text for text, raw in rows if not os.path.lexists(original_path(text, raw))]


def read(con: Any) -> tuple[FailedFile, ...]:
    """Every record, newest first; none from an index older than the table. ``con`` runs the
    tools' SQL (``Store.sql()``)."""
    (exists,) = con.execute(EXISTS, [TABLE]).fetchone()
    if not exists:
        return ()
    return tuple(FailedFile(*row) for row in con.execute(READ).fetchall())
