"""Where an index lives: one directory holding the DuckDB file and the vector file
(``vectors.sqlite``), or a PostgreSQL database named by its URL."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from docsym.runtime.settings import get_settings

STORE_SCHEMES = ("postgresql://", "postgres://")


def is_store_url(target: object) -> bool:
    """Whether ``target`` names a shared PostgreSQL store rather than an index directory."""
    return isinstance(target, str) and target.startswith(STORE_SCHEMES)


class IndexNotFoundError(FileNotFoundError):
    """There is no index at the given directory yet."""


def resolve_index_dir(explicit: str | os.PathLike | None = None) -> Path:
    """``--index DIR`` if given, else ``$DOCSYM_INDEX``, else ``./.docsym``."""
    chosen = explicit or get_settings().index
    return Path(chosen).expanduser().resolve()


@dataclass(frozen=True)
class IndexPaths:
    root: Path

    @property
    def duckdb(self) -> Path:
        return self.root / "index.duckdb"

    @property
    def manifest(self) -> Path:
        """The published segments, when the rows are in more than ``duckdb``
        (``storage/directory/segments.py``)."""
        return self.root / "segments.json"

    @property
    def segments(self) -> Path:
        return self.root / "segments"

    @property
    def vectors(self) -> Path:
        return self.root / "vectors.sqlite"

    @property
    def ocr_cache(self) -> Path:
        """OCR results by page image hash, so no page is read twice."""
        return self.root / "ocr-cache.sqlite"

    @property
    def file_hashes(self) -> Path:
        """Each indexed file's hash with its size and times, so a watcher's rescan reads only
        the files that changed (``indexer/file_hashes.py``)."""
        return self.root / "file-hashes.sqlite"

    @property
    def lock(self) -> Path:
        return self.root / ".index.lock"

    @property
    def work_duckdb(self) -> Path:
        """The writer's private copy; readers never see it until it is published."""
        return self.root / ".index.duckdb.work"

    @property
    def publish_duckdb(self) -> Path:
        """A checkpointed copy of the private one, renamed over ``duckdb`` to publish it."""
        return self.root / ".index.duckdb.publish"

    def writer_files(self) -> list[Path]:
        """Every file a run writes beside the index and removes at its end: the private copy,
        its DuckDB write-ahead log and spill directory, and the copy being published."""
        work = self.work_duckdb
        manifest = self.root / f".{self.manifest.name}.publish"
        return [work, Path(f"{work}.wal"), Path(f"{work}.tmp"), self.publish_duckdb, manifest]

    def is_published(self) -> bool:
        """Whether an index was published here (one file, or segments)."""
        return self.manifest.exists() or self.duckdb.exists()
