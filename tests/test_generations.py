"""A publish never fails a call in flight: each tool call reads the generation it started with,
however often the indexer replaces ``index.duckdb``, or the segments it publishes (every
publish freezing a segment and merging it away), meanwhile, four calls at a time."""

from __future__ import annotations

import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from docsym.storage.backends import open_store
from docsym.storage.directory.writer import IndexWriter
from docsym.tools.registry import tool

CALLS = 1_000
AT_ONCE = 4


def _calls(doc_id: str, chunk_id: str, table_id: str) -> list[tuple[str, dict]]:
    """A mix of tools that each run several statements on the store."""
    return [
        ("hybrid_search", {"query": "recall of the hybrid retriever on the maintenance split"}),
        ("list_documents", {}),
        ("get_outline", {"doc_id": doc_id}),
        ("read_passage", {"id": chunk_id, "before": 1, "after": 1}),
        ("get_table", {"table_id": table_id}),
        ("select_subtree", {"doc_id": doc_id, "limit": 20}),
        ("run_sql", {"sql": "SELECT count(*) FROM chunks"}),
    ]


@pytest.mark.parametrize("segment_mb", [64, 0.0001], ids=["one-file", "segments"])
def test_calls_finish_on_their_generation_while_publishes_replace_it(
    sample_index: Path, tmp_path: Path, settings, segment_mb: float
) -> None:
    # A statement waits for a free SQL worker as long as it takes: refusing one when the
    # machine is slow is the pool's bound working, not a publish failing a call.
    settings(segment_mb=segment_mb, sql_wait_seconds=60)
    index = tmp_path / "index"
    shutil.copytree(sample_index, index)
    store = open_store(index)
    row = store.sql().execute(
        "SELECT t.doc_id, t.table_id, min(c.chunk_id) FROM tables t "
        "JOIN chunks c USING (doc_id) GROUP BY t.doc_id, t.table_id ORDER BY t.table_id LIMIT 1"
    ).fetchone()
    doc_id, table_id, chunk_id = row
    calls = _calls(doc_id, chunk_id, table_id)
    for name, arguments in calls:  # each works on a quiet index first
        tool(name).run(store, arguments)

    stop = threading.Event()
    published = 0

    def publish() -> None:  # a new file or segment published, as fast as it can be made
        nonlocal published
        with IndexWriter(index) as writer:
            while not stop.is_set():
                writer.publish()
                published += 1

    failures: list[str] = []

    def call(n: int) -> None:
        name, arguments = calls[n % len(calls)]
        try:
            tool(name).run(store, arguments)
        except Exception as exc:  # any failure is the finding
            failures.append(f"{name}: {type(exc).__name__}: {exc}")

    publisher = threading.Thread(target=publish)
    publisher.start()
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            list(pool.map(call, range(CALLS)))
    finally:
        stop.set()
        publisher.join()
        store.close()
    assert published >= 10, "the index was hardly republished: the test proves nothing"
    assert not failures, f"{len(failures)} of {CALLS} calls failed: {failures[:5]}"


def test_the_servers_reads_hold_the_memory_the_setting_gives(sample_index: Path, settings) -> None:
    """DuckDB keeps the blocks it reads until its limit: the server's reads take
    DOCSYM_READ_MEMORY_MB, and the client's SQL cannot raise it."""
    settings(read_memory_mb=200)
    with open_store(sample_index) as store:
        con = store.sql()
        (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone()
        assert limit == "190.7 MiB"  # 200 MB
        with pytest.raises(Exception, match="lock"):
            con.execute("SET memory_limit = '4GB'")


def test_an_instance_whose_lookups_filled_its_index_budget_is_opened_afresh(
    sample_index: Path, monkeypatch
) -> None:
    """DuckDB keeps every index node a lookup by key loaded, and cannot evict them: past its
    budget, the next call reads the same files through a fresh instance, while a call already
    reading the worn one finishes on it."""
    with open_store(sample_index) as store:
        reader = store.reader
        chunk_id = store.sql().execute("SELECT min(chunk_id) FROM chunks").fetchone()[0]
        lookup = "SELECT text FROM chunks WHERE chunk_id = ?"
        with store.reading():
            worn = reader._generation()
            store.sql().execute(lookup, [chunk_id]).fetchall()
            assert worn.index_bytes() > 0, "a lookup by key loaded no index: nothing to bound"
            assert reader._newest_generation() is worn  # within the budget: kept
            monkeypatch.setattr(reader, "_index_budget", 0)
            # The call goes on reading the instance it started with.
            assert reader._generation() is worn
            assert store.sql().execute(lookup, [chunk_id]).fetchall()
        with store.reading():
            fresh = reader._generation()
            assert fresh is not worn and fresh.identity == worn.identity
            assert fresh.index_bytes() == 0
            assert store.sql().execute(lookup, [chunk_id]).fetchall()
