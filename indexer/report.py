"""What an index pass tells its caller: its report, and its progress as it goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from docsym.indexer.progress import PageCount


@dataclass
class IndexReport:
    # Paths are readable text (storage/file_names.py): safe to print and to store.
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)  # new paths of files seen elsewhere before
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # links not followed: (path, why)
    no_text: list[str] = field(default_factory=list)  # scans: recorded, but nothing to search
    ocr_pages: int = 0  # pages whose text was read by OCR
    warnings: list[tuple[str, str]] = field(default_factory=list)
    pages: int = 0
    tables: int = 0
    figures: int = 0
    equations: int = 0
    elapsed: float = 0.0
    # Time spent per stage, summed over documents (parse, summaries, graph, write, encode).
    # The stages overlap (workers, and the encoder's thread), so they add up to more than
    # ``elapsed``.
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


class Progress:
    """What the pipeline tells its caller as it goes (the CLI draws a progress bar from it)."""

    def start(self, files: int) -> None: ...
    def file_started(self, path: Path) -> None: ...
    def file_done(self, path: Path, pages: int) -> None:
        """The file is written and searchable by keyword (its vectors may still be coming)."""

    def vectors(self, done: int, total: int) -> None:
        """Documents whose vectors are written, of those this run has to encode."""

    def ocr_page(self, path: Path, done: int, total: int) -> None: ...
    def pages(self, count: PageCount) -> None:
        """The run's pages done and to do, after every step a worker reports (indexer/progress.py
        says how they are counted)."""
