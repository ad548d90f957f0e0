"""Hostile inputs, shared by ``tests/test_hostile.py`` (kept fast) and ``bench/hostile.py``
(measured against a real server): calls that once crashed or starved the server, and a kill of
the indexer inside the vector-write window (a new document's vectors are committed to
``vectors.sqlite`` but the DuckDB file that knows the document is not published yet), after
which every tool must still agree on which documents exist.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import apsw
import duckdb

from docsym.storage.backends import open_store
from docsym.storage.consistency import check
from docsym.storage.directory import generations
from docsym.tools.search import hybrid_search
from docsym.tools.sql import run_sql

REPO = Path(__file__).resolve().parents[1]
SLOW_SQL = "SELECT levenshtein(repeat('a', 160000), repeat('b', 160000))"
HUGE_STRING_SQL = "SELECT length(repeat('x', 1500000000))"
MEGABYTE = "a" * 1_000_000


def hostile_calls(doc_id: str) -> list[tuple[str, dict]]:
    return [
        ("view_page", {"doc_id": doc_id, "page_number": 1, "bounding_box": [0, 0, 1e39, 1e39]}),
        ("view_page", {"doc_id": doc_id, "page_number": 1, "highlights": [[0, 0, 1.7e308, 9]]}),
        ("view_page", {"doc_id": doc_id, "page_number": 2**70}),
        ("list_documents", {"offset": 2**70}),
        ("select_subtree", {"doc_id": doc_id, "offset": 2**70}),
        ("select_subtree", {"doc_id": doc_id, "pages": [1, 2**70]}),
        ("lookup_cells", {"table_id": "t", "row_path_contains": [MEGABYTE] * 10}),
        ("hybrid_search", {"query": "x", "views": ["chunks.text"] * 1000}),
        ("hybrid_search", {"query": MEGABYTE}),
        ("run_plan", {"expression": "a * {b}", "answers": {f"k{i}": "v" for i in range(1000)}}),
        ("run_sql", {"sql": "SELECT 1 WHERE 1 IN (" + ", ".join(["1"] * 1_000_000) + ")"}),
        ("list_documents", {"fitler": "year > 2000"}),
        ("no_such_tool", {"x": MEGABYTE}),
    ]


QUERIES = ["retrieval", "table", "results of the experiments", "method", "figure"]


@dataclass(frozen=True)
class KillOutcome:
    unpublished: int  # vector entries past the published generation when killed
    documents: int  # documents run_sql sees
    stray_hits: list[str]  # hit doc_ids that run_sql does not know (must be empty)
    check_ok: bool
    hidden_docs: list[str]  # documents with entries past the published generation


def published_generation(index: Path) -> int:
    """The generation ``index`` is published as, read straight from its DuckDB file (a poll
    must be quicker than the window it looks for)."""
    path = index / "index.duckdb"
    if not path.exists():
        return 0
    con = duckdb.connect(str(path), read_only=True)
    try:
        return generations.published(con)
    finally:
        con.close()


def unpublished_entries(index: Path, published: int) -> int:
    path = index / "vectors.sqlite"
    if not path.exists():
        return 0
    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.setbusytimeout(1000)
        return con.execute("SELECT count(*) FROM entries WHERE born > ?", (published,)).fetchone()[
            0
        ]
    except apsw.SQLError:  # the table is not there yet
        return 0
    finally:
        con.close()


def unpublished_docs(index: Path, published: int) -> list[str]:
    con = apsw.Connection(str(index / "vectors.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = con.execute("SELECT DISTINCT doc_id FROM entries WHERE born > ?", (published,))
        return sorted(row[0] for row in rows)
    finally:
        con.close()


def unpublished_texts(index: Path, published: int, count: int = 3) -> list[str]:
    """Texts of entries past the published generation: queries that would find them."""
    con = apsw.Connection(str(index / "vectors.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = con.execute(
            "SELECT text FROM entries WHERE born > ? AND length(text) > 40 ORDER BY id LIMIT ?",
            (published, count),
        )
        return [row[0][:300] for row in rows]
    finally:
        con.close()


def kill_in_window(
    files: list[Path], index: Path, jitter: float = 0.0, timeout: float = 180.0
) -> int:
    """Start an index run of ``files`` and SIGKILL it once it has committed entries that are not
    published yet (plus up to ``jitter`` seconds). Returns the unpublished entries seen at the
    kill; 0 if the run published them before the kill landed, or ended first. (A run publishes
    its first document at once, so the window opens with a later one.)"""
    published = published_generation(index)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DOCSYM_PUBLISH_SECONDS", None)  # the default period: a wide window
    command = [sys.executable, "-m", "docsym", "index", *map(str, files)]
    proc = subprocess.Popen(
        [*command, "--index", str(index), "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    # What an earlier kill left is dropped when the run starts: wait for that, then for new.
    cleared = unpublished_entries(index, published) == 0
    generation = published
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            generation = published_generation(index)
            count = unpublished_entries(index, generation)
            # The first document is published as it is written: look past that publish.
            if count and cleared and generation > published:
                time.sleep(random.uniform(0.0, jitter))
                break
            cleared = cleared or count == 0
            time.sleep(0.01)
        seen = unpublished_entries(index, generation)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    return seen if published_generation(index) == generation else 0


def agreement(index: Path) -> KillOutcome:
    """What every reader of ``index`` sees now, in a fresh process-like store."""
    with open_store(index) as store:
        rows = run_sql(store, "SELECT doc_id FROM documents", limit=500).rows
        documents = {row[0] for row in rows}
        stray: set[str] = set()
        published = store.reader.published()
        probes = unpublished_texts(index, published)
        for query in [*QUERIES, *probes]:
            hits = hybrid_search(store, query, limit=20).hits
            stray.update(hit.doc_id for hit in hits if hit.doc_id not in documents)
        consistency = check(store)
        return KillOutcome(
            unpublished=consistency.unpublished,
            documents=len(documents),
            stray_hits=sorted(stray),
            check_ok=consistency.ok,
            hidden_docs=unpublished_docs(index, published),
        )
