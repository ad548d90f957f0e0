"""The MCP server over stdio, driven by the mcp SDK's real client in a subprocess."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from docsym.demo import run_demo
from tests.conftest import REPO


def _server(index: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(index)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_tools_answer_and_refuse_over_stdio(sample_index: Path) -> None:
    async def scenario() -> None:
        async with Client(_server(sample_index)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"run_sql", "list_documents", "vector_search", "hybrid_search"} <= names
            docs = await client.call_tool("list_documents", {})
            assert not docs.is_error
            titles = {row[1] for row in docs.structured_content["rows"]}
            assert "Evaluating Hybrid Retrieval for Technical Manuals" in titles
            note = await client.call_tool("list_documents", {"filter": "OPERATIONS"})
            assert [r[2] for r in note.structured_content["rows"]] == [
                "search-service-operations-note.pdf"
            ]

            refused = await client.call_tool("run_sql", {"sql": "COPY documents TO '/tmp/x.csv'"})
            assert refused.is_error and "only read-only SELECT" in refused.content[0].text
            escaped = await client.call_tool(
                "run_sql", {"sql": "SELECT * FROM read_csv('/etc/passwd')"}
            )
            assert escaped.is_error and "disabled" in escaped.content[0].text
            two = await client.call_tool("run_sql", {"sql": "SELECT 1; SELECT 2"})
            assert two.is_error and "one statement per call" in two.content[0].text

            pages = await client.call_tool(
                "run_sql", {"sql": "SELECT page_id FROM pages ORDER BY page_id", "limit": 3}
            )
            assert len(pages.structured_content["rows"]) == 3
            assert "more rows exist" in pages.structured_content["note"]

            found = await client.call_tool(
                "hybrid_search", {"query": "effect of the RRF constant k", "limit": 3}
            )
            assert not found.is_error
            hits = found.structured_content["hits"]
            assert hits and all(h["doc_id"] and h["page_number"] for h in hits)
            assert any("k" in h["text"] for h in hits)
            bad = await client.call_tool(
                "vector_search", {"query": "x", "collection": "bm25", "filter": "doc_id =="}
            )
            assert bad.is_error and "position" in bad.content[0].text

            schema = await client.read_resource("docsym://schema")
            assert "table_cells" in schema.contents[0].text

    anyio.run(scenario)


def test_demo_answers_from_a_table_cell(tmp_path: Path, capsys) -> None:
    assert run_demo(tmp_path / "demo-index") == 0
    out = capsys.readouterr().out
    assert "Answer: 0.91 (Table 1" in out


def test_a_serving_process_collects_cycles_rarely_and_multiplies_in_one_thread() -> None:
    """What ``docsym serve`` does to the collector and to numpy's BLAS before it answers (here,
    then undone)."""
    import gc

    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    from docsym.mcp_server.server import GC_THRESHOLDS, tune_serving_process

    np.ones((2, 2)) @ np.ones(2)  # numpy's BLAS is loaded
    before = gc.get_threshold()
    blas = {i["prefix"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert blas, "numpy's BLAS not found"
    try:
        tune_serving_process()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 1000  # start-up's objects are out of the collector's reach
        after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        assert after and set(after) == {1}
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        threadpool_limits(limits=blas)
