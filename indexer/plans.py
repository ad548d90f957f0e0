"""What the indexing process and its workers hand each other: a file's plan, the set-up a worker
starts with, and what preparing a file gives back. Plain data, light to import: the indexing
process reads these without loading any parser or model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from docsym.indexer.limits import FileLimits
from docsym.runtime.settings import OcrMode

if TYPE_CHECKING:
    from docsym.storage.entries import Entry
    from docsym.storage.rows import DocumentRows


@dataclass(frozen=True)
class FilePlan:
    path: Path
    sha256: str
    doc_id: str
    replaces: list[str]  # doc_ids this file's new version replaces
    is_update: bool


@dataclass
class Prepared:
    plan: FilePlan  # the file's content as read (a new sha256 and doc_id if it changed)
    failure: str | None = None  # why the file could not be read; nothing to write then
    rows: DocumentRows | None = None
    entries: list[Entry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    no_text: bool = False
    pages: int = 0
    ocr_pages: int = 0
    tables: int = 0
    figures: int = 0
    equations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # per stage of prepare.py


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker process needs to prepare files: sent to it when it starts."""

    ocr: OcrMode
    ocr_cache: Path
    ocr_processes: int
    limits: FileLimits
    verbose: bool = False  # log debug messages, tracebacks included (docsym -v)
