"""Index progress in pages: a long PDF moves the bar while it is read, OCRed and encoded (after it
is written and searchable), and the bar's total is the run's pages (estimated from file sizes
until each file is opened)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from docsym import index_progress
from docsym.index_progress import RichProgress
from docsym.indexer.pipeline import Progress, index_paths
from docsym.indexer.progress import PageCount, PageMeter
from tests import pdf_factory


class Recorder(Progress):
    """Every event the pipeline sends, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def file_done(self, path: Path, pages: int) -> None:
        self.events.append(("done", (path.name, pages)))

    def pages(self, count: PageCount) -> None:
        self.events.append(("pages", count))


def test_a_long_pdf_moves_the_bar_before_it_is_written(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pdf_factory.text_pdf(docs / "long.pdf", pages=40)
    recorder = Recorder()
    report = index_paths([docs], tmp_path / "index", progress=recorder)
    assert report.ok and report.pages == 40
    written = recorder.events.index(("done", ("long.pdf", 40)))  # searchable: vectors to come
    before = [count for kind, count in recorder.events[:written] if kind == "pages"]
    counted = [count for count in before if count.total is not None]
    assert counted[0] == PageCount(0.0, 40.0, exact=True)  # counted as the file opened
    assert 0 < before[-1].done < 40  # read, not yet encoded
    dones = [count.done for kind, count in recorder.events if kind == "pages"]
    assert dones == sorted(dones)  # never back
    assert dones[len(before)] < 40  # written, its encoding still to come
    last = recorder.events[-1][1]
    assert last == PageCount(40.0, 40.0, exact=True)


def test_ocr_pages_move_a_scan_through_most_of_its_share() -> None:
    meter = PageMeter({"scan.pdf": 1000})
    meter.step("scan.pdf", "parse", 0, 0)
    meter.step("scan.pdf", "read", 0, 10)  # the page count, as the file opens
    seen = []
    for page in range(1, 11):
        meter.step("scan.pdf", "ocr", page, 10)
        seen.append(meter.count().done)
    assert seen == sorted(seen) and 0 < seen[0] < 1.0  # each OCR page moves it
    assert seen[-1] > 9.0  # OCR is most of a scan's time
    meter.step("scan.pdf", "read", 10, 10)
    meter.step("scan.pdf", "encode", 0, 0)
    meter.step("scan.pdf", "encode", 500, 1000)
    assert seen[-1] < meter.count().done < 10
    meter.finish("scan.pdf", 10)
    assert meter.count() == PageCount(10.0, 10.0, exact=True)


def test_pages_not_yet_counted_are_estimated_from_file_sizes() -> None:
    meter = PageMeter({"a.pdf": 1_000_000, "b.pdf": 3_000_000, "c.docx": 500_000})
    assert meter.count() == PageCount(0.0, None, exact=False)  # nothing to estimate from yet
    meter.step("a.pdf", "read", 0, 20)
    assert meter.count() == PageCount(0.0, 20 + 3.5 * 20, exact=False)
    meter.finish("a.pdf", 20)
    meter.finish("c.docx", 0)  # no pages: its share goes
    meter.step("b.pdf", "read", 0, 50)
    assert meter.count() == PageCount(20.0, 70.0, exact=True)


def test_a_failed_file_keeps_the_work_it_showed() -> None:
    meter = PageMeter({"bad.pdf": 10})
    meter.step("bad.pdf", "read", 0, 100)
    meter.step("bad.pdf", "read", 100, 100)
    shown = meter.count().done
    meter.finish("bad.pdf", 0)  # failed: no pages written
    assert meter.count().done == round(shown) and meter.count().exact


def test_the_terminal_bar_shows_pages_files_and_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=160)
    monkeypatch.setattr(index_progress, "err", console)
    with RichProgress(enabled=True) as progress:
        progress.start(3)
        progress.file_started(Path("manual.pdf"))
        progress.pages(PageCount(12.0, 40.0, exact=False))
        progress.file_done(Path("manual.pdf"), 12)
        assert progress._bar is not None
        task = progress._bar.tasks[0]
        assert (task.completed, task.total) == (12.0, 40.0)
    shown = screen.getvalue()
    assert "12/≈40 pages" in shown and "1/3 files" in shown
    assert re.search(r"ETA \d+:\d\d:\d\d", shown)  # from the run's rate, as the total moves
