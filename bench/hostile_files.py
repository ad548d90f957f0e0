"""Hostile and odd files beside control documents, indexed in one run: time, memory, messages.

    python bench/hostile_files.py [--stall-seconds 30] [--keep DIR] [--docsym EXE]
    python bench/hostile_files.py --corpus [DIR ...] [--docsym EXE]

The first form builds a folder holding each case of ``CASES`` (files made to hurt a parser,
names that are not text, links out of the folder) and, per case, a control document, then
indexes the folder in one ``docsym index`` run in a subprocess, as a user would, with the LLM
summariser pointed at an endpoint that never answers about one document (a file that blocks).
It prints, per case, what happened to the file (indexed, skipped, refused and why), its time
(the run's line for it: from its worker taking it to its result), and the peak resident memory
of the run while it was prepared: the indexing process plus every worker and OCR process,
summed (psutil, every 20 ms). Goals: each case ends within its budget (the stall limit for a
file stopped by time, the input limits' instant refusal otherwise) + 5 s; the run's peak <= 1.5
GB; every control indexed and searchable; ``docsym check`` passes.

``--docsym`` runs another install's ``docsym`` (README command 1's venv, without torch) instead
of this interpreter's. ``--corpus`` indexes the given folders (default: the whole
../shared/corpus) in one run and prints each file's time and the run's peak memory (goal: <= 1.5
GB, workers included).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.storage.file_names import readable  # noqa: E402
from tests.bad_files import (  # noqa: E402
    BAD_UTF8_NAME,
    billion_laughs_docx,
    deep_html,
    huge_page_pdf,
    huge_scan_pdf,
    one_line_markdown,
    wide_sheet,
    write_control,
    zip_bomb_docx,
)
from tests.stalling_llm import stalling_llm, write_stalling  # noqa: E402

MB = 2**20
GOAL_MB = 1536
# The docsym command a run starts: this interpreter's, unless --docsym names another install's.
DOCSYM = [sys.executable, "-m", "docsym"]
SLACK_SECONDS = 5.0
ANIMALS = [
    "aardvark",
    "badger",
    "caracal",
    "dingo",
    "echidna",
    "fossa",
    "gharial",
    "hoatzin",
    "ibex",
    "jerboa",
    "kinkajou",
    "loris",
    "margay",
    "narwhal",
    "okapi",
    "pangolin",
    "quokka",
]


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], Path]  # writes the case into a folder; returns the path to judge
    expect: str  # "indexed", "skipped", or "failed" (by a limit, or stopped)
    # Held to the stall limit (a file stopped by time, or by memory, which can take as long);
    # otherwise the input limits refuse it at once.
    timed: bool = False


def _bad_name(folder: Path) -> Path:
    path = Path(os.fsdecode(bytes(folder) + b"/" + BAD_UTF8_NAME + b".pdf"))
    huge_page_pdf(path, 600, "A page whose file name is not UTF-8.")
    return path


def _named(name: str, writer: Callable[[Path], object]) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        writer(path)
        return path

    return make


def _link(name: str, target: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        (folder / name).symlink_to(target)
        return folder / name

    return make


CASES = [
    Case("name not UTF-8", _bad_name, "indexed"),
    Case("newline in name", _named("new\nline.md", lambda p: write_control(p, "x")), "indexed"),
    Case("255-byte name", _named("N" * 252 + ".md", lambda p: write_control(p, "x")), "indexed"),
    Case("link to /etc/passwd", _link("passwd.md", "/etc/passwd"), "skipped"),
    Case("dangling link", _link("gone.md", "/nonexistent/gone.md"), "skipped"),
    Case("folder link outside", _link("etc", "/etc"), "skipped"),
    Case("50 MB one-line md", _named("oneline50.md", lambda p: one_line_markdown(p, 50)), "failed"),
    Case(
        "8 MB one-line md", _named("oneline8.md", lambda p: one_line_markdown(p, 8)), "failed", True
    ),
    Case(
        "1,000,000-row xlsx",
        _named("million.xlsx", lambda p: wide_sheet(p, rows=1_000_000, columns=3)),
        "failed",
    ),
    Case("html nested 100,000", _named("deep.html", lambda p: deep_html(p, 100_000)), "failed"),
    Case(
        "14,400 pt scanned page (OCR)",
        _named("poster.pdf", lambda p: huge_scan_pdf(p, 14_400, "A poster read by OCR.")),
        "indexed",
        True,
    ),
    Case("200,000 pt page", _named("mediabox.pdf", lambda p: huge_page_pdf(p, 200_000)), "failed"),
    Case("billion laughs docx", _named("laughs.docx", billion_laughs_docx), "failed"),
    Case(
        "zip bomb docx (1 GB)",
        _named("bomb.docx", lambda p: zip_bomb_docx(p, unpacked_mb=1024)),
        "failed",
    ),
    Case("summary never answered", _named("stuck.md", write_stalling), "failed", True),
]


class TreeRss:
    """Resident memory of a process and all its descendants, summed, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                processes = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return  # the run ended
            total = 0
            for process in processes:
                with contextlib.suppress(psutil.Error):  # it ended meanwhile
                    total += process.memory_info().rss
            self.samples.append((time.monotonic(), total))
            time.sleep(0.02)

    def peak(self, start: float = 0.0, end: float = float("inf")) -> int:
        return max((rss for t, rss in self.samples if start <= t <= end), default=0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Run:
    """A finished ``docsym index`` run: its report lines and what was measured."""

    elapsed: float
    peak_mb: int
    files: dict[str, tuple[float, int]]  # readable path -> (seconds, peak MB while prepared)
    failed: dict[str, str]
    skipped: dict[str, str]
    returncode: int


def index_with_cli(paths: list[Path], index: Path, env: dict[str, str]) -> Run:
    """``docsym index`` in a subprocess, as a user runs it; its per-document lines (stderr is
    not a terminal) give each file's time."""
    command = [*DOCSYM, "index", *map(str, paths), "--index", str(index)]
    started = time.monotonic()
    run = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, cwd=REPO)
    watch = TreeRss(run.pid)
    lines: list[tuple[float, str]] = []
    assert run.stderr is not None
    for line in run.stderr:
        lines.append((time.monotonic(), line.rstrip("\n")))
    run.wait()
    watch.stop()
    files: dict[str, tuple[float, int]] = {}
    failed: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for arrived, line in lines:
        if match := DONE_LINE.match(line):
            seconds = float(match["seconds"])
            files[match["path"]] = (seconds, watch.peak(arrived - seconds, arrived) // MB)
        elif line.startswith(("failed ", "skipped ")):
            kind, _, rest = line.partition(" ")
            path, _, why = rest.partition(": ")
            (failed if kind == "failed" else skipped)[path] = why
    elapsed = time.monotonic() - started
    return Run(elapsed, watch.peak() // MB, files, failed, skipped, run.returncode)


# "[3/18]     0.4 s      0 pages  /path": a file written (docsym/index_progress.py's lines).
DONE_LINE = re.compile(
    r"\[\s*\d+/\d+\]\s+(?P<seconds>[\d.]+) s\s+(?P<pages>\d+) pages  (?P<path>.*)$"
)


def hostile(stall_seconds: float, keep: Path | None) -> bool:
    work = keep or Path(tempfile.mkdtemp(prefix="docsym-hostile-"))
    folder, index = work / "docs", work / "index"
    folder.mkdir(parents=True, exist_ok=True)
    judged: dict[str, Case] = {}
    controls: dict[str, str] = {}
    for n, case in enumerate(CASES):
        judged[readable(case.make(folder))] = case
        sentence = f"The {ANIMALS[n]} is the control animal of case {n}."
        controls[f"control-{n:02d}.md"] = write_control(folder / f"control-{n:02d}.md", sentence)
    with stalling_llm() as llm:
        env = {**os.environ, **llm.env, "DOCSYM_INDEX_STALL_SECONDS": str(stall_seconds)}
        run = index_with_cli([folder], index, env)
    ok = _print_cases(judged, run, stall_seconds)
    ok &= _print_run(run, index, controls)
    print(f"folder and index: {work}")
    return ok


def _outcome(path: str, run: Run) -> tuple[str, str]:
    if path in run.failed:
        return "failed", run.failed[path]
    if path in run.skipped:
        return "skipped", run.skipped[path]
    return ("indexed", "") if path in run.files else ("missing", "")


def _print_cases(judged: dict[str, Case], run: Run, stall_seconds: float) -> bool:
    print(f"{'case':28} {'outcome':8} {'seconds':>7} {'budget':>6} {'peak MB':>7}  message")
    ok = True
    for path, case in judged.items():
        outcome, why = _outcome(path, run)
        seconds, peak = run.files.get(path, (0.0, 0))
        budget = stall_seconds if case.timed else 0.0
        good = outcome == case.expect and seconds <= budget + SLACK_SECONDS
        ok &= good
        mark = "" if good else "  <-- not as expected"
        print(f"{case.name:28} {outcome:8} {seconds:7.1f} {budget:6.0f} {peak:7}  {why}{mark}")
    return ok


def _print_run(run: Run, index: Path, controls: dict[str, str]) -> bool:
    from docsym.storage.backends import open_store
    from docsym.storage.consistency import check
    from docsym.tools.search import hybrid_search

    with open_store(index) as store:
        consistency = check(store)
        found = 0
        for name, sentence in controls.items():
            hits = hybrid_search(store, sentence, limit=1).hits
            row = (
                hits
                and store.sql()
                .execute("SELECT file_name FROM documents WHERE doc_id = ?", [hits[0].doc_id])
                .fetchone()
            )
            found += bool(row and row[0] == name)
    verdict = "ok" if consistency.ok else "FAILED"
    print(
        f"\nrun: {run.elapsed:.1f} s, peak {run.peak_mb} MB (goal <= {GOAL_MB}), "
        f"controls found {found}/{len(controls)}, docsym check {verdict}"
    )
    return found == len(controls) and consistency.ok and run.peak_mb <= GOAL_MB


def corpus(folders: list[Path]) -> bool:
    from docsym.storage.backends import open_store
    from docsym.storage.consistency import check

    with tempfile.TemporaryDirectory() as index:
        run = index_with_cli(folders, Path(index), dict(os.environ))
        with open_store(Path(index)) as store:
            consistency = check(store)
    for path, (seconds, peak) in run.files.items():
        print(f"{seconds:7.1f} s {peak:6} MB  {path}")
    for path, why in run.failed.items():
        print(f"failed {path}: {why}")
    print(
        f"\n{len(run.files) - len(run.failed)} indexed, {len(run.failed)} failed in "
        f"{run.elapsed:.1f} s; peak {run.peak_mb} MB, workers included (goal <= {GOAL_MB}); "
        f"docsym check {'ok' if consistency.ok else 'FAILED'}"
    )
    return not run.failed and consistency.ok and run.peak_mb <= GOAL_MB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stall-seconds", type=float, default=30.0)
    parser.add_argument("--keep", type=Path, help="build the folder and index here")
    parser.add_argument("--corpus", nargs="*", type=Path, help="index these folders instead")
    parser.add_argument("--docsym", type=Path, help="another install's docsym executable")
    args = parser.parse_args()
    if args.docsym:
        DOCSYM[:] = [str(args.docsym)]
    if args.corpus is not None:
        ok = corpus(args.corpus or [REPO.parent / "shared" / "corpus"])
    else:
        ok = hostile(args.stall_seconds, args.keep)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
