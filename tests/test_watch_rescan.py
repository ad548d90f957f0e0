"""A watched library's periodic rescan reads only the files that changed: a real indexing
session and a real ``Watcher`` over real files, the files each pass reads counted by wrapping
the hash function the session calls (which still reads and hashes them)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import docsym.indexer.file_hashes as file_hashes
from docsym.indexer.file_hashes import RACY_SECONDS
from docsym.indexer.report import IndexReport
from docsym.indexer.session import IndexSession
from docsym.indexer.watch import Watcher
from tests.bad_files import write_control

DEADLINE = 120.0  # seconds the passes may take on the slowest machine before the test fails
NAMES = ("wombats.md", "quokkas.md", "numbats.md")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each file (by name) was read whole to hash it."""
    counted: Counter[str] = Counter()
    real = file_hashes.sha256_of

    def counting(path: Path) -> str:
        counted[path.name] += 1
        return real(path)

    monkeypatch.setattr(file_hashes, "sha256_of", counting)
    return counted


def _library(folder: Path) -> Path:
    """Three small documents, written long enough ago for their times to be trusted."""
    folder.mkdir()
    for name in NAMES:
        write_control(folder / name, f"The {Path(name).stem} of {name} digs at night.")
    time.sleep(RACY_SECONDS + 0.1)  # a file written just now may change again unseen
    return folder


def _watch_passes(
    session: IndexSession,
    folder: Path,
    passes: int,
    rescan_seconds: float = 0.1,
    watching: Callable[[], None] | None = None,
) -> list[IndexReport]:
    """Run a ``Watcher`` until it has made ``passes`` passes; ``watching`` runs once it
    follows events (its first tick, after its first pass). It runs on this thread, as
    ``docsym index --watch`` runs it: a worker process dies with the thread that started it."""
    reports: list[IndexReport] = []
    stop = threading.Event()

    def heard(report: IndexReport) -> None:
        reports.append(report)
        if len(reports) >= passes:
            stop.set()

    if watching is not None:
        tick = session.idle

        def idle() -> None:  # a tick after the first pass: watchfiles is watching by then
            if reports and watching not in done:
                done.append(watching)
                watching()
            tick()

        done: list[Callable[[], None]] = []
        session.idle = idle  # type: ignore[method-assign]

    watcher = Watcher(
        session,
        [folder],
        settle_seconds=0.1,
        rescan_seconds=rescan_seconds,
        on_pass=heard,
        stop=stop,
    )
    deadline = threading.Timer(DEADLINE, stop.set)
    deadline.start()
    try:
        watcher.run()
    finally:
        deadline.cancel()
    assert len(reports) >= passes, f"{passes} passes not made within {DEADLINE:.0f} s"
    return reports


def test_a_rescan_does_not_read_unchanged_files_again(
    tmp_path: Path, reads: Counter[str]
) -> None:
    folder = _library(tmp_path / "library")
    with IndexSession(tmp_path / "index", vectors=False) as session:
        first, *rescans = _watch_passes(session, folder, passes=3)
    assert sorted(first.added) == sorted(str(folder / name) for name in NAMES)
    for report in rescans:  # every file still known, none read
        assert len(report.unchanged) == len(NAMES) and not report.added and not report.updated
    assert reads == Counter({name: 1 for name in NAMES})


def test_a_rescan_reads_a_file_whose_stat_changed(tmp_path: Path, reads: Counter[str]) -> None:
    folder = _library(tmp_path / "library")
    with IndexSession(tmp_path / "index", vectors=False) as session:
        _watch_passes(session, folder, passes=1)
        same_size = folder / "wombats.md"
        before = same_size.stat()
        # Same size, new time: written while no watcher ran, so only the rescan can see it.
        same_size.write_text(same_size.read_text().replace("night", "dusk!"))
        os.utime(same_size, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        # Same size, time set back (touch -r, rsync -t): its status-change time still moved.
        restored = folder / "quokkas.md"
        before = restored.stat()
        restored.write_text(restored.read_text().replace("night", "dusk!"))
        os.utime(restored, ns=(before.st_atime_ns, before.st_mtime_ns))
        (rescan,) = _watch_passes(session, folder, passes=1)  # a Watcher rescans as it starts
    assert sorted(rescan.updated) == sorted(str(folder / n) for n in ("wombats.md", "quokkas.md"))
    assert rescan.unchanged == [str(folder / "numbats.md")]
    assert reads == Counter({"wombats.md": 2, "quokkas.md": 2, "numbats.md": 1})


def test_a_folder_event_reads_only_the_files_that_changed(
    tmp_path: Path, reads: Counter[str]
) -> None:
    folder = _library(tmp_path / "library")

    def change() -> None:  # the folder's mode set (an event for the folder), a file added
        folder.chmod(0o755)
        write_control(folder / "bilbies.md", "The bilby of bilbies.md digs at night.")

    with IndexSession(tmp_path / "index", vectors=False) as session:  # events only, no rescan
        _, after = _watch_passes(session, folder, 2, rescan_seconds=3600, watching=change)
    assert after.added == [str(folder / "bilbies.md")]
    assert reads == Counter({**{name: 1 for name in NAMES}, "bilbies.md": 1})


def test_a_watcher_starting_on_an_index_reads_only_what_changed_since(
    tmp_path: Path, reads: Counter[str]
) -> None:
    folder, index = _library(tmp_path / "library"), tmp_path / "index"
    with IndexSession(index, vectors=False) as session:  # docsym index, one pass
        session.index([folder])
    changed = folder / "wombats.md"
    write_control(changed, "The wombat of wombats.md digs at dawn, and sleeps.")
    with IndexSession(index, vectors=False) as session:  # docsym serve --watch, started later
        (first,) = _watch_passes(session, folder, passes=1)
    assert first.updated == [str(changed)] and len(first.unchanged) == len(NAMES) - 1
    assert reads == Counter({**{name: 1 for name in NAMES}, "wombats.md": 2})


def test_docsym_index_reads_every_file_each_pass(tmp_path: Path, reads: Counter[str]) -> None:
    folder = _library(tmp_path / "library")
    with IndexSession(tmp_path / "index", vectors=False) as session:
        session.index([folder])
        again = session.index([folder])
    assert len(again.unchanged) == len(NAMES)
    assert reads == Counter({name: 2 for name in NAMES})
