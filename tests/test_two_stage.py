"""Documents are written in two stages (indexer/dense_stage.py): searchable by keyword first,
their vectors after. A search in between finds them by keyword and says vectors are coming; a
run stopped in between (``--keyword-only``, or SIGKILL) is finished by the next without parsing
anything again, on both backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage import run_state
from docsym.storage.backends import open_store
from docsym.storage.consistency import check
from docsym.storage.directory.writer import IndexWriter
from docsym.storage.postgres.writer import PostgresWriter
from docsym.tools.documents import COMPLETE, KEYWORD_ONLY, index_status, list_documents
from docsym.tools.errors import ToolError
from docsym.tools.search import hybrid_search, vector_search
from tests.conftest import REPO, new_database
from tests.pdf_factory import text_pdf


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    text_pdf(folder / "alpha.pdf", pages=3, marker="quokka")
    text_pdf(folder / "beta.pdf", pages=2, marker="pangolin")
    return folder


def _stages(store) -> dict[str, str]:
    listed = list_documents(store)
    stage = listed.columns.index("stage")
    name = listed.columns.index("file_name")
    return {row[name]: row[stage] for row in listed.rows}


def _assert_keyword_stage_then_complete(folder: Path, target) -> None:
    first = index_paths([folder], target, vectors=False)
    assert sorted(Path(p).name for p in first.added) == ["alpha.pdf", "beta.pdf"]
    assert "encode" not in first.seconds

    store = open_store(target)
    try:
        assert _stages(store) == {"alpha.pdf": KEYWORD_ONLY, "beta.pdf": KEYWORD_ONLY}
        found = hybrid_search(store, "quokka marker page")
        assert found.hits and found.hits[0].doc_id in store.awaiting_vectors()
        assert all(hit.sources == ["bm25"] for hit in found.hits)  # no vectors to match yet
        assert "2 document(s) are searchable by keyword only" in (found.note or "")
        assert "searchable by keyword only" in (vector_search(store, "quokka").note or "")
        assert index_status(store).awaiting_vectors == 2
        waiting = check(store)
        assert waiting.ok and waiting.awaiting_vectors == 2
    finally:
        store.close()

    second = index_paths([folder], target)
    assert (second.added, second.updated, len(second.unchanged)) == ([], [], 2)
    assert "parse" not in second.seconds and second.seconds["encode"] > 0  # encoded, not parsed

    store = open_store(target)
    try:
        assert _stages(store) == {"alpha.pdf": COMPLETE, "beta.pdf": COMPLETE}
        assert not store.awaiting_vectors()
        dense = vector_search(store, "quokka marker page")
        assert dense.hits and "searchable by keyword only" not in (dense.note or "")
        assert "dense" in hybrid_search(store, "quokka marker page").hits[0].sources
        complete = check(store)
        assert complete.ok and complete.awaiting_vectors == 0
        assert complete.collections["minilm"] == 0
    finally:
        store.close()


def test_keyword_stage_is_searchable_and_a_rerun_only_encodes(tmp_path: Path) -> None:
    _assert_keyword_stage_then_complete(_folder(tmp_path), tmp_path / "index")


def test_keyword_stage_on_the_postgres_store(pg_server, tmp_path: Path) -> None:
    url = new_database(pg_server, "two_stage")
    _assert_keyword_stage_then_complete(_folder(tmp_path), url)


def test_sigkill_in_the_dense_stage_then_a_rerun_parses_nothing_again(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for n, marker in enumerate(["aardvark", "bison", "caribou", "dingo"]):
        text_pdf(folder / f"{n}-{marker}.pdf", pages=6, marker=marker)
    index = tmp_path / "index"
    # Each document is published as it is written, and the kill lands once a document's vectors
    # are written while another written one still waits for its own: whether parsing or
    # encoding is the faster on this machine.
    env = {**os.environ, "PYTHONPATH": str(REPO), "DOCSYM_PUBLISH_SECONDS": "0"}
    command = [sys.executable, "-m", "docsym", "index", str(folder), "--index", str(index)]
    run = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    written = encoded = 0
    try:
        assert run.stderr is not None
        for line in run.stderr:  # one line per written file, one per document's vectors
            written += line.startswith(b"[")
            if line.startswith(b"vectors written: "):
                encoded = int(line.split(b" ")[2].split(b"/")[0])
            if encoded and written > encoded:
                run.send_signal(signal.SIGKILL)
                break
        else:
            pytest.fail("every written document had its vectors whenever one was encoded")
    finally:
        run.kill()
        run.wait()

    store = open_store(index)
    try:
        published = {r[0] for r in store.sql().execute("SELECT doc_id FROM documents").fetchall()}
        waiting = store.awaiting_vectors()
    finally:
        store.close()
    assert waiting and waiting < published  # killed between the stages of some documents

    rerun = index_paths([folder], index)
    assert rerun.ok
    assert not {Path(p).name for p in rerun.added} & _names(index, published)
    store = open_store(index)
    try:
        assert not store.awaiting_vectors()
        assert len(_stages(store)) == 4
        result = check(store)
        assert result.ok and result.collections["minilm"] == 0, result
    finally:
        store.close()


def _names(index: Path, doc_ids: set[str]) -> set[str]:
    store = open_store(index)
    try:
        rows = store.sql().execute("SELECT doc_id, file_name FROM documents").fetchall()
    finally:
        store.close()
    return {name for doc_id, name in rows if doc_id in doc_ids}


def test_a_running_index_run_says_how_many_files_are_still_coming(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index_paths([text_pdf(tmp_path / "a.pdf", marker="wombat")], index)
    store = open_store(index)
    try:
        with IndexWriter(index) as run:  # a run under way, as the pipeline drives it
            run.waiting_files = 3
            run.publish()
            assert store.indexing() == run_state.Indexing(alive=True, files_waiting=3)
            note = hybrid_search(store, "wombat").note or ""
            assert "still growing: 3 file(s)" in note
            assert "still growing" in (list_documents(store).note or "")
        assert store.indexing() == run_state.Indexing()  # the run ended
        assert "still growing" not in (hybrid_search(store, "wombat").note or "")
    finally:
        store.close()


def test_a_killed_run_claims_no_files_are_coming(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    dead_pid = int(gone.stdout)
    assert run_state.of_record(run_state.value(os.getpid(), 4)) == run_state.Indexing(True, 4)
    assert run_state.of_record(run_state.value(os.getpid(), 0)).alive  # writing vectors
    assert run_state.of_record(run_state.value(dead_pid, 4)) == run_state.Indexing()
    assert run_state.of_record("") == run_state.Indexing()


def test_vectors_a_stopped_run_left_are_said_to_wait_for_the_next_run(tmp_path: Path) -> None:
    """Documents written without vectors by a run no longer alive (stopped, killed, or
    --keyword-only) are not said to be "still being written" by anyone."""
    index = tmp_path / "index"
    index_paths([text_pdf(tmp_path / "a.pdf", marker="wombat")], index, vectors=False)
    store = open_store(index)
    try:
        assert store.awaiting_vectors() and not store.indexing().alive
        note = hybrid_search(store, "wombat").note or ""
        assert "waiting for the next run" in note and "still being written" not in note
        status = index_status(store)
        assert status.awaiting_vectors == 1 and not status.indexing
    finally:
        store.close()
    shown = subprocess.run(
        [sys.executable, "-m", "docsym", "status", "--index", str(index)],
        text=True,
        capture_output=True,
        check=True,
    )
    assert "waiting for the next run" in shown.stdout


def test_the_postgres_store_counts_the_files_of_live_runs_only(pg_server) -> None:
    url = new_database(pg_server, "growing")
    with PostgresWriter(url) as run:
        run.record_waiting(5)
        store = open_store(url)
        try:
            assert store.indexing() == run_state.Indexing(True, 5)
            run.record_waiting(2)
            assert store.indexing() == run_state.Indexing(True, 2)
            run.record_waiting(0)  # every file written: the run still writes vectors
            assert store.indexing() == run_state.Indexing(True, 0)
        finally:
            store.close()
        run.record_waiting(7)
    store = open_store(url)  # the run ended
    try:
        assert store.indexing() == run_state.Indexing()
    finally:
        store.close()


def test_summaries_are_searched_by_keyword_only(sample_store) -> None:
    """Page and section summaries get no vectors: vector_search over them found less than over
    the pooled page text and section content, which cost nothing (docs/RESULTS.md)."""
    summaries = sample_store.entry_keys(
        "e.column_name = 'summary' AND e.table_name IN ('pages', 'sections')", []
    )
    assert summaries  # they are entries, found by BM25
    assert not set(summaries) & sample_store.collection_ids("minilm")
    assert set(summaries) & sample_store.collection_ids("bm25")
    with pytest.raises(ToolError, match="vector_search on pages.text"):
        vector_search(sample_store, "retrieval", table_name="pages", column_name="summary")
    assert vector_search(sample_store, "retrieval", table_name="pages").hits  # pages.text
    assert check(sample_store).ok
