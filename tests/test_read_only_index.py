"""A read-only index (a shared drive, a read-only mount) serves every tool, ``docsym search``,
``status`` and ``check``, and an MCP server; ``docsym index`` refuses it in one line.

Read-only is a read-only bind mount as root (skipped where mounting is refused), else, for an
unprivileged user, the index with its write permission taken away."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import apsw
import pytest
from mcp import Client, StdioServerParameters

from docsym.demo import SAMPLES
from docsym.indexer.pipeline import index_paths
from docsym.storage.backends import open_store
from docsym.storage.store import Store
from docsym.tools.registry import TOOLS
from tests.conftest import REPO
from tests.mounts import read_only_view


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("built") / "index"
    assert index_paths([SAMPLES], index).ok
    return index


def _docsym(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "docsym", *argv],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )


def _journal_mode(vectors: Path) -> str:
    """The mode a SQLite file's header records (bytes 18 and 19: 1 rollback, 2 WAL)."""
    with open(vectors, "rb") as f:
        header = f.read(20)
    return {1: "rollback", 2: "wal"}[header[18]]


def _arguments(store: Store) -> dict[str, dict]:
    """Arguments for every tool, over the samples' report."""
    sql = store.sql()
    (doc,) = sql.execute("SELECT doc_id FROM documents WHERE file_name LIKE 'hybrid%'").fetchone()
    (table,) = sql.execute("SELECT min(table_id) FROM tables WHERE doc_id = ?", [doc]).fetchone()
    (chunk,) = sql.execute("SELECT min(chunk_id) FROM chunks WHERE doc_id = ?", [doc]).fetchone()
    query = "reciprocal rank fusion"
    return {
        "list_documents": {},
        "run_sql": {"sql": "SELECT count(*) AS n FROM documents"},
        "hybrid_search": {"query": query},
        "vector_search": {"query": query, "collection": "minilm"},
        "read_passage": {"id": chunk},
        "get_outline": {"doc_id": doc},
        "select_subtree": {"doc_id": doc},
        "find_entities": {"query": "BM25"},
        "rank_nodes": {"query": "retrieval", "doc_id": doc},
        "get_table": {"table_id": table},
        "lookup_cells": {"table_id": table, "row_path_contains": ["BM25"]},
        "view_page": {"doc_id": doc, "page_number": 1},
        "page_image": {"doc_id": doc, "page_number": 1, "highlight_ids": [chunk]},
        "calculate": {"expr": "(0.91 - 0.84) / 0.84"},
        "compile_query": {"expression": "What does reciprocal rank fusion add"},
        "run_plan": {"expression": "What does reciprocal rank fusion add"},
    }


def _serves_every_tool(index: Path) -> None:
    with open_store(index) as store:
        arguments = _arguments(store)
        for spec in TOOLS:
            result = spec.run(store, arguments[spec.name])  # a refusal or a crash raises
            assert result.to_markdown(), spec.name
        hits = TOOLS_BY_NAME["hybrid_search"].run(store, arguments["hybrid_search"]).hits
        assert hits and "Reciprocal rank fusion" in hits[0].text
        dense = TOOLS_BY_NAME["vector_search"].run(store, arguments["vector_search"]).hits
        assert dense  # the vectors were read, not only the keywords
        listed = TOOLS_BY_NAME["list_documents"].run(store, {})
        assert len(listed.rows) == 2


TOOLS_BY_NAME = {spec.name: spec for spec in TOOLS}


def test_a_finished_run_leaves_the_vector_file_whole_on_its_own(built: Path) -> None:
    """No -wal or -shm file beside it, in rollback-journal mode: a reader needs nothing more,
    wherever the directory is copied."""
    assert sorted(os.listdir(built)) == [
        ".index.lock",
        "file-hashes.sqlite",
        "index.duckdb",
        "ocr-cache.sqlite",
        "vectors.keywords",  # BM25 candidates (storage/directory/keyword_index.py)
        "vectors.minilm.signs",  # the collection's sign bits (storage/directory/sign_file.py)
        "vectors.sqlite",
    ]
    assert _journal_mode(built / "vectors.sqlite") == "rollback"


def test_a_read_only_index_serves_and_refuses_to_be_indexed(built: Path, tmp_path: Path) -> None:
    with read_only_view(built.parent, tmp_path / "read-only") as view:
        index = view / built.name
        with pytest.raises(OSError):
            (index / "probe").touch()  # it is read-only indeed
        before = sorted(os.listdir(index))
        _serves_every_tool(index)

        for argv in (["search", "reciprocal rank fusion"], ["status"], ["check"]):
            done = _docsym(*argv, "--index", str(index))
            assert done.returncode == 0, (argv, done.stderr)
        called = _docsym("call", "list_documents", "--index", str(index), "--json")
        assert called.returncode == 0 and len(json.loads(called.stdout)["rows"]) == 2

        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "docsym", "serve", "--index", str(index)],
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

        async def over_mcp() -> None:
            async with Client(server) as client:
                found = await client.call_tool("hybrid_search", {"query": "rank fusion"})
                assert not found.is_error and found.structured_content["hits"]
                dense = await client.call_tool(
                    "vector_search", {"query": "rank fusion", "collection": "minilm"}
                )
                assert not dense.is_error and dense.structured_content["hits"]
                listed = await client.call_tool("list_documents", {})
                assert len(listed.structured_content["rows"]) == 2

        anyio.run(over_mcp)

        refused = _docsym("index", str(SAMPLES), "--index", str(index))
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        (line,) = refused.stderr.strip().splitlines()
        assert line.startswith(f"cannot index: the index at {index} is read-only (")
        assert "copy it to a writable directory and index into that (--index DIR)" in line
        assert sorted(os.listdir(index)) == before


def test_an_index_left_in_wal_mode_serves_read_only(built: Path, tmp_path: Path) -> None:
    """An index written by an older docsym, or by a run that ended while a server held the
    vector file (which keeps it in WAL mode), has no -shm file a reader could use, and none
    can be made in a read-only directory: it is read as immutable."""
    copy = tmp_path / "copy" / "index"
    shutil.copytree(built, copy)
    con = apsw.Connection(str(copy / "vectors.sqlite"))
    assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    con.close()  # the last connection: SQLite removes -wal and -shm
    assert _journal_mode(copy / "vectors.sqlite") == "wal"
    assert not list(copy.glob("vectors.sqlite-*"))

    with read_only_view(copy.parent, tmp_path / "read-only") as view:
        _serves_every_tool(view / "index")
