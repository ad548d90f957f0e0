"""A folder of many papers: when the first document is searchable, when all are, when the run
is complete.

    python bench/folder_speed.py [--papers 200] [--docsym PATH/TO/docsym]

The folder holds the corpus papers (../shared/corpus/papers) copied until there are ``--papers``
of them, each copy with distinct bytes (its metadata names the copy), so each is a document of
its own. One ``docsym index FOLDER --ocr off`` run indexes it into a fresh directory while this
process polls the published index every half second: the first moment a keyword search finds
any document, the moment every document is listed (the last file's first stage published), and
the run's end (every vector written). ``--docsym`` runs another installation's command (say, an
older version in its own virtual environment) to compare.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pymupdf

from docsym.storage.directory.store import DirectoryStore  # imported before any run is timed
from docsym.storage.paths import IndexPaths

REPO = Path(__file__).resolve().parent.parent
PAPERS = REPO.parent / "shared" / "corpus" / "papers"


def make_folder(folder: Path, papers: int, first: int = 0) -> int:
    """``papers`` PDFs copied from the corpus papers, each distinct (copies ``first``.. on, so
    two folders made from different ``first`` share no file); their pages in all. Copies
    already in ``folder`` are kept, so a large folder can be made over several runs."""
    sources = sorted(PAPERS.glob("*.pdf"))
    pages = 0
    for n in range(first, first + papers):
        source = sources[n % len(sources)]
        with pymupdf.open(source) as doc:
            pages += doc.page_count
            copy = folder / f"{n:04d}-{source.name}"
            if not copy.exists():
                doc.set_metadata({**doc.metadata, "subject": f"copy {n}"})
                doc.save(copy.with_suffix(".part"))  # whole or absent, if the run is stopped
                copy.with_suffix(".part").rename(copy)
    return pages


def listed(index: Path) -> tuple[int, bool]:
    """Documents the published index lists, and whether a keyword search finds any."""
    if not IndexPaths(index).is_published():
        return 0, False
    store = DirectoryStore(index)
    try:
        count = store.sql().execute("SELECT count(*) FROM documents").fetchone()[0]
        return int(count), bool(count and store.fts("the", limit=1))
    except Exception:  # published between two reads: the next poll sees it whole
        return 0, False
    finally:
        store.close()


def run(docsym: str, folder: Path, papers: int) -> dict[str, float | None]:
    with tempfile.TemporaryDirectory() as scratch:
        return timed_index(docsym, folder, Path(scratch) / "index", papers)


def timed_index(
    docsym: str, folder: Path, index: Path, papers: int, stop_after: float | None = None
) -> dict[str, float | None]:
    """``docsym index FOLDER --index INDEX``, polled: seconds to the first searchable document,
    to ``papers`` listed and to the run's end, and the documents listed then. After
    ``stop_after`` seconds the run is interrupted (it keeps what it committed; the next run
    continues) and ``stopped`` is true."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [docsym, "index", str(folder), "--index", str(index), "--ocr", "off", "--quiet"],
        stdout=subprocess.DEVNULL,
    )
    first = every = None
    stopped = False
    while proc.poll() is None:
        now = time.perf_counter() - started
        if first is None or every is None:  # a poll opens the index: not once both are known
            count, searchable = listed(index)
            if searchable and first is None:
                first = now
            if count >= papers and every is None:
                every = now
        if stop_after is not None and now > stop_after and not stopped:
            proc.send_signal(signal.SIGINT)  # as Ctrl-C: what it committed is kept
            stopped = True
        time.sleep(0.5)
    complete = time.perf_counter() - started
    if proc.returncode and not stopped:
        raise SystemExit(f"{docsym} index failed")
    count, _ = listed(index)
    return {
        "first": first,
        "all": every if stopped else every or complete,
        "complete": complete,
        "docs": count,
        "stopped": stopped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=200)
    parser.add_argument("--docsym", default=shutil.which("docsym") or "docsym")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "papers"
        folder.mkdir()
        pages = make_folder(folder, args.papers)
        found = run(args.docsym, folder, args.papers)
    print(f"{args.papers} papers, {pages:,} pages, {args.docsym}")
    for key in ("first", "all", "complete"):
        seconds = found[key]
        shown = "-" if seconds is None else f"{seconds:8.1f} s"
        rate = "" if not seconds or key == "first" else f"  ({pages / seconds:.1f} pages/s)"
        print(f"  {key + ' searchable' if key != 'complete' else 'complete':18} {shown}{rate}")
    print(f"  documents listed at the end: {found['docs']}")


if __name__ == "__main__":
    main()
