"""Indexing speed and peak memory per document, against pymupdf4llm's conversion of the same file.

    python bench/index_speed.py [PDF ...]

Two times per file: *searchable*, from the start of the run to the moment a keyword search of
words from the file's first page finds it (this process polls the index every 50 ms while the
run goes on; documents are published before their vectors are written), and *complete*, the
whole run, vectors included.

Defaults to the Multi-LexSum paper (37 text-dense pages), the 13-page SPECTER paper and the
307-page Uber 10-K from ../shared/corpus. Each file is indexed into a fresh index by a fresh
process, as ``docsym index`` would (OCR off, the encoder's settings from the environment), and
the run report's stage times are printed: start-up (the process's imports before the run
begins), parse, summaries and views, graph (entities and their resolution), encode (the
vector-store entries), write. Then ``pymupdf4llm.to_markdown`` converts the same file in a fresh
process of its own, OCR off as docsym's run is (its OCR of a page of the SPECTER paper fails
inside pymupdf4llm, and OCR time is not what is compared). "srch x" is the searchable time
over pymupdf4llm's, "ratio" the whole run's, start-up included in both. Peak memory is the
largest maximum resident set of the indexing process and of its workers (each counted alone).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docsym.storage.directory.store import DirectoryStore  # imported before any run is timed
from docsym.storage.paths import IndexPaths

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_FILES = [
    CORPUS / "papers" / "2206.10883v3_multilexsum.pdf",
    CORPUS / "papers" / "2020.acl-main.207_specter.pdf",
    CORPUS / "long_docs" / "uber_2021_10k.pdf",
]

FULL_INDEX = r"""
import json, resource, sys, time
from pathlib import Path
from docsym.indexer.pipeline import index_paths
start = time.perf_counter()
report = index_paths([Path(sys.argv[1])], Path(sys.argv[2]), ocr="off")
print(json.dumps({
    "pages": report.pages, "seconds": time.perf_counter() - start, "stages": report.seconds,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "workers_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
}))
"""

PYMUPDF4LLM = r"""
import json, resource, sys
import pymupdf4llm
markdown = pymupdf4llm.to_markdown(sys.argv[1], use_ocr=False)
print(json.dumps({
    "chars": len(markdown), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def run(script: str, *args: str) -> tuple[float, dict]:
    """Wall time of a fresh process running ``script``, and the JSON it printed last."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO, check=True, capture_output=True, text=True
    )
    return time.perf_counter() - started, json.loads(out.stdout.strip().splitlines()[-1])


def index_run(path: Path, index_dir: Path) -> tuple[float, float | None, dict]:
    """Index ``path`` in a fresh process: the whole run's wall time, the seconds until a keyword
    search finds the file (None if it never did), and the run's JSON report."""
    words = first_words(path)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", FULL_INDEX, str(path), str(index_dir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    searchable = None
    while proc.poll() is None and searchable is None:
        if found(index_dir, words):
            searchable = time.perf_counter() - started
        time.sleep(0.05)
    out, _ = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"indexing {path} failed")
    return (
        wall,
        searchable or (wall if found(index_dir, words) else None),
        json.loads(out.strip().splitlines()[-1]),
    )


def first_words(path: Path) -> str:
    import pymupdf

    with pymupdf.open(path) as doc:
        words = [w[4] for w in doc[0].get_text("words") if w[4].isalpha() and len(w[4]) > 3]
    return " ".join(words[:6])


def found(index_dir: Path, words: str) -> bool:
    """Whether a keyword search of the published index finds any of ``words``."""
    if not IndexPaths(index_dir).is_published():
        return False
    store = DirectoryStore(index_dir)
    try:
        return bool(store.fts(words, limit=1))
    except Exception:  # published between our reads: the next poll sees it whole
        return False
    finally:
        store.close()


def main() -> None:
    files = [Path(a) for a in sys.argv[1:]] or DEFAULT_FILES
    stages = ("start-up", "parse", "summaries", "graph", "write", "encode")
    print(
        f"{'file':30} {'pages':>5} "
        + " ".join(f"{s:>9}" for s in stages)
        + f" {'search s':>8} {'docsym s':>9} {'pages/s':>7} {'srch p/s':>8} {'peak MB':>7}"
        + f" {'p4llm s':>8} {'peak MB':>7} {'srch x':>6} {'ratio':>6}"
    )
    for path in files:
        with tempfile.TemporaryDirectory() as index_dir:
            wall, searchable, full = index_run(path, Path(index_dir))
        p4llm_wall, p4llm = run(PYMUPDF4LLM, str(path))
        times = {"start-up": wall - full["seconds"], **full["stages"]}
        peak = max(full["peak_mb"], full["workers_peak_mb"])
        search = searchable if searchable is not None else float("nan")
        print(
            f"{path.name[:30]:30} {full['pages']:>5} "
            + " ".join(f"{times.get(s, 0.0):>9.2f}" for s in stages)
            + f" {search:>8.2f} {wall:>9.2f} {full['pages'] / wall:>7.1f}"
            f" {full['pages'] / search:>8.1f} {peak:>7.0f}"
            f" {p4llm_wall:>8.2f} {p4llm['peak_mb']:>7.0f} {search / p4llm_wall:>6.2f}"
            f" {wall / p4llm_wall:>6.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
