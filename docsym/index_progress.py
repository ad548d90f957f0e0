"""What ``docsym index`` shows while it runs, on stderr.

At a terminal, a bar in pages with an ETA: pages are what indexing time follows (a 300-page
manual takes fifty times a 6-page note), and a long PDF moves the bar while it is read, OCRed and
encoded (``indexer/progress.py`` counts them). Anywhere else (a log, a pipe) one plain line per
document: bars redrawn a dozen times a second are noise in a log.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn

from docsym.output import err
from docsym.storage.file_names import readable

if TYPE_CHECKING:
    from docsym.indexer.progress import PageCount


class RichProgress:
    """A bar over the run's pages: pages done of pages to do (≈ while some files are not yet
    opened), pages/s, time left, files done, and the file being read."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Progress | None = None
        self._task = None
        self._files = 0
        self._done = 0
        self._started = time.perf_counter()

    def __enter__(self) -> RichProgress:
        if self.enabled:
            self._bar = Progress(
                TextColumn("[bold]indexing"),
                BarColumn(),
                TextColumn("{task.fields[pages]}"),
                TextColumn("{task.fields[rate]} pages/s"),
                TextColumn("ETA {task.fields[eta]}"),
                TextColumn("{task.fields[files]}"),
                TextColumn("{task.fields[file]}"),
                console=err,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def start(self, files: int) -> None:
        self._started = time.perf_counter()
        self._files = files
        if self._bar is not None:
            self._task = self._bar.add_task(
                "index",
                total=None,
                pages="",
                rate="-",
                eta=_eta(None),
                files=f"0/{files} files",
                file="",
            )

    def file_started(self, path: Path) -> None:
        self._update(file=_name(path))

    def ocr_page(self, path: Path, done: int, total: int) -> None:
        self._update(file=f"{_name(path)} (OCR {done}/{total} pages)")

    def file_done(self, path: Path, pages: int) -> None:
        self._done += 1
        self._update(files=f"{self._done}/{self._files} files")

    def vectors(self, done: int, total: int) -> None:
        # Files are searchable once written; their vectors follow.
        self._update(file=f"vectors {done}/{total} documents")

    def pages(self, count: PageCount) -> None:
        # The run's own rate, not rich's: rich forgets its speed whenever the total changes,
        # and the estimated total changes as each file is opened.
        rate = count.done / max(time.perf_counter() - self._started, 1e-9)
        left = (count.total - count.done) / rate if count.total is not None and rate else None
        self._update(
            completed=count.done,
            total=count.total,
            pages=_pages_text(count),
            rate=f"{rate:.1f}",
            eta=_eta(left),
        )

    def _update(self, **fields) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, **fields)


class LineProgress:
    """One plain line per document (a log, a pipe): files done of all, seconds, pages, path;
    then one as each document's vectors are written."""

    def __init__(self) -> None:
        self._started: dict[Path, float] = {}
        self._files = 0
        self._done = 0

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def start(self, files: int) -> None:
        self._files, self._done = files, 0  # a pass of a watched folder counts its own files
        if files:  # a pass with nothing to read says nothing
            print(f"indexing {files} file(s)", file=sys.stderr, flush=True)

    def file_started(self, path: Path) -> None:
        self._started[path] = time.perf_counter()

    def ocr_page(self, path: Path, done: int, total: int) -> None:
        pass

    def pages(self, count: PageCount) -> None:
        pass

    def vectors(self, done: int, total: int) -> None:
        print(f"vectors written: {done}/{total} documents", file=sys.stderr, flush=True)

    def file_done(self, path: Path, pages: int) -> None:
        self._done += 1
        seconds = time.perf_counter() - self._started.pop(path, time.perf_counter())
        width = len(str(self._files))
        line = (
            f"[{self._done:{width}}/{self._files}] {seconds:7.1f} s {pages:6} pages  "
            f"{readable(path)}"
        )
        print(line, file=sys.stderr, flush=True)


def _pages_text(count: PageCount) -> str:
    if count.total is None:
        return f"{count.done:,.0f} pages"
    about = "" if count.exact else "≈"
    return f"{count.done:,.0f}/{about}{count.total:,.0f} pages"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(round(max(seconds, 0.0)), 60)
    return f"{minutes // 60}:{minutes % 60:02}:{secs:02}"


def _name(path: Path) -> str:
    """A file's name for the progress bar: escaped (storage/file_names.py) and without markup."""
    return escape(readable(path.name))
