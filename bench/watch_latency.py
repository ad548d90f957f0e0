"""From a paper saved into a watched folder to searchable, and to complete, while a reader asks.

    python bench/watch_latency.py [--papers 5] [--index DIR] [--keep]

Starts ``docsym index FOLDER --watch --index DIR`` (DIR holds an index already, e.g. of the
corpus, or is made from the bundled samples), waits for its first pass, then saves the corpus
papers into the folder one at a time (a copy renamed into place, as a download finishes). For
each it polls, from this process as a server would (``open_store`` + ``hybrid_search`` for the
paper's title, every 0.2 s), until the paper is the search's first document (searchable) and
until it no longer waits for vectors (complete). Prints each paper's pages and times, and the
median. Goals (issue: a library, not a folder): searchable <= 10 s, complete <= 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docsym.storage.paths import IndexPaths

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DOCSYM_CORPUS", REPO.parent / "shared" / "corpus"))
PAPERS = [
    "papers/2020.acl-main.207_specter.pdf",
    "papers/2004.04906v3_dpr.pdf",
    "papers/N18-3011_literature_graph.pdf",
    "papers/2203.00274v2_tableformer.pdf",
    "papers/2020.acl-main.447_s2orc.pdf",
    "papers/papermage_2023.pdf",
    "papers/2302.07302v1_citesee.pdf",
]
POLL = 0.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--papers", type=int, default=5)
    parser.add_argument("--index", type=Path, help="an index to watch into (copied first)")
    parser.add_argument("--keep", action="store_true", help="keep the folder and index")
    args = parser.parse_args()
    from docsym.indexer.pipeline import index_paths
    from docsym.storage.backends import open_store

    work = Path(tempfile.mkdtemp(prefix="docsym-watch-"))
    folder, index = work / "library", work / "index"
    folder.mkdir()
    if args.index:
        shutil.copytree(args.index, index)
    else:
        index_paths([REPO / "docsym" / "samples"], index)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "docsym", "index", str(folder), "--watch", "--index", str(index),
         "--quiet"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_line(watcher, "watching ")
        rows = []
        for name in PAPERS[: args.papers]:
            rows.append(_one_paper(CORPUS / name, folder, index, open_store))
    finally:
        watcher.terminate()
        watcher.wait(timeout=120)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("| paper | pages | searchable s | complete s |")
    print("|---|---|---|---|")
    for name, pages, searchable, complete in rows:
        print(f"| {name} | {pages} | {searchable:.1f} | {complete:.1f} |")
    median_s = statistics.median(r[2] for r in rows)
    median_c = statistics.median(r[3] for r in rows)
    print(f"\nmedian: searchable {median_s:.1f} s (goal <= 10), complete {median_c:.1f} s "
          "(goal <= 60)")
    return 0


def _wait_for_line(process: subprocess.Popen, start: str) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith(start):
            return
    raise SystemExit(f"the watcher ended: exit {process.wait()}")


def _one_paper(source: Path, folder: Path, index: Path, open_store) -> tuple:
    import pymupdf

    from docsym.tools.search import hybrid_search

    with pymupdf.open(source) as doc:
        pages = doc.page_count
    partial = folder / f".{source.name}.part"
    shutil.copy(source, partial)
    saved = time.monotonic()
    os.replace(partial, folder / source.name)  # as a download completes
    searchable = complete = None
    store = None
    while complete is None:
        time.sleep(POLL)
        if store is None and IndexPaths(index).is_published():
            store = open_store(index)
        if store is None:
            continue
        row = store.sql().execute(
            "SELECT doc_id, title FROM documents WHERE file_name = ?", [source.name]
        ).fetchone()
        if row is None:
            continue
        doc_id, title = row
        if searchable is None:
            hits = hybrid_search(store, title or source.stem, limit=3).hits
            if hits and hits[0].doc_id == doc_id:
                searchable = time.monotonic() - saved
        if searchable is not None and doc_id not in store.awaiting_vectors():
            complete = time.monotonic() - saved
    store.close()
    return source.name, pages, searchable, complete


if __name__ == "__main__":
    sys.exit(main())
