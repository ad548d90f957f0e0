"""``docsym index``: one pass of an indexing session (``indexer/session.py``) over the paths
given, then every vector written before it ends."""

from __future__ import annotations

import time
from pathlib import Path

from docsym.indexer.discover import given_paths
from docsym.indexer.report import IndexReport, Progress
from docsym.indexer.session import IndexSession
from docsym.runtime.settings import OcrMode

__all__ = ["IndexReport", "Progress", "index_paths"]


def index_paths(
    paths: list[Path],
    target: Path | str,
    *,
    prune: bool = False,
    progress: Progress | None = None,
    model_name: str | None = None,
    ocr: OcrMode | None = None,
    workers: int = 1,
    dask: str | None = None,
    follow_links: bool = False,
    vectors: bool = True,
) -> IndexReport:
    """Index the files under ``paths`` into ``target``, an index directory or a
    ``postgresql://`` store URL (``IndexSession`` says what each argument does), and return
    once their vectors are written too."""
    started = time.perf_counter()
    given_paths(paths)  # a path that is not there is refused before the store is touched
    with IndexSession(
        target,
        model_name=model_name,
        ocr=ocr,
        workers=workers,
        dask=dask,
        vectors=vectors,
        start_workers=dask is None,
    ) as session:
        report = session.index(paths, prune=prune, follow_links=follow_links, progress=progress)
        session.finish(report)
    report.elapsed = time.perf_counter() - started
    return report
