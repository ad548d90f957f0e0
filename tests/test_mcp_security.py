"""Hostile input over MCP: every attempt is refused with a message, and the server keeps
answering the next call (a real server in a subprocess, the mcp SDK's client over stdio)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO

SQL_ESCAPES = [
    ("SELECT * FROM read_csv('/etc/passwd')", "disabled"),
    ("SELECT * FROM read_text('/etc/hostname')", "disabled"),
    ("COPY documents TO '/tmp/docsym-leak.csv'", "only read-only SELECT"),
    ("ATTACH '/tmp/other.db' AS other", "only read-only SELECT"),
    ("INSTALL httpfs", "only read-only SELECT"),
    ("LOAD httpfs", "only read-only SELECT"),
    ("PRAGMA database_list", "only read-only SELECT"),
    ("SET enable_external_access = true", "only read-only SELECT"),
    ("EXPORT DATABASE '/tmp/docsym-export'", "only read-only SELECT"),
    ("SELECT 1; DROP TABLE documents", "one statement per call"),
    ("DELETE FROM documents", "only read-only SELECT"),
    ("SELECT * FROM 'https://example.com/data.csv'", "disabled"),
    ("SELECT current_setting('enable_external_access') FROM documents; SELECT 2", "one statement"),
]

FILTER_INJECTIONS = [
    "doc_id == 'x' or 1=1 --",
    "doc_id == 'x'; DROP TABLE entries",
    "doc_id) or (1",
    "text like '%'",
    "doc_id == " + "(" * 500 + "'x'",
]


@pytest.fixture(scope="module")
def index(sample_index: Path) -> Path:
    return sample_index


def _server(index: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(index)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


async def _still_answers(client: Client) -> None:
    ok = await client.call_tool("run_sql", {"sql": "SELECT count(*) AS n FROM documents"})
    assert not ok.is_error and ok.structured_content["rows"] == [[2]]


def test_sql_escapes_are_refused(index: Path) -> None:
    async def scenario() -> None:
        async with Client(_server(index)) as client:
            for sql, expected in SQL_ESCAPES:
                result = await client.call_tool("run_sql", {"sql": sql})
                assert result.is_error, sql
                assert expected in result.content[0].text, (sql, result.content[0].text)
                await _still_answers(client)
            assert not Path("/tmp/docsym-leak.csv").exists()

    anyio.run(scenario)


def test_filter_injections_are_refused_or_harmless(index: Path) -> None:
    async def scenario() -> None:
        async with Client(_server(index)) as client:
            for expression in FILTER_INJECTIONS:
                result = await client.call_tool(
                    "vector_search",
                    {"query": "retrieval", "collection": "bm25", "filter": expression},
                )
                assert result.is_error, expression
                assert "filter error" in result.content[0].text
                await _still_answers(client)
            harmless = await client.call_tool(
                "hybrid_search", {"query": "retrieval", "filter": "doc_id == 'x'' or ''1''=''1'"}
            )
            assert not harmless.is_error and harmless.structured_content["hits"] == []

    anyio.run(scenario)


def test_out_of_range_numbers_and_path_like_ids(index: Path) -> None:
    calls = [
        ("run_sql", {"sql": "SELECT 1", "limit": -1}),
        ("run_sql", {"sql": "SELECT 1", "limit": 10**12}),
        ("list_documents", {"limit": 0}),
        ("list_documents", {"offset": -5}),
        ("hybrid_search", {"query": "x", "limit": 10**9}),
        ("vector_search", {"query": "x" * 5000}),
        ("get_outline", {"doc_id": "../../etc/passwd"}),
        ("get_outline", {"doc_id": "x", "depth": 999}),
        ("calculate", {"expr": "9**9**9"}),
        ("calculate", {"expr": "__import__('os').system('id')"}),
        ("calculate", {"expr": "[1] * 10**9"}),
        ("calculate", {"expr": "1/0"}),
        ("run_sql", {"sql": "SELECT * FROM range(100000000000) t(i) ORDER BY random()"}),
    ]

    async def scenario() -> None:
        async with Client(_server(index)) as client:
            for tool, arguments in calls:
                with anyio.fail_after(30):
                    result = await client.call_tool(tool, arguments)
                if tool == "run_sql" and "range(" in arguments["sql"]:
                    # a runaway query is stopped by the time limit, not left running
                    assert result.is_error and "limit" in result.content[0].text
                else:
                    assert result.is_error, (tool, arguments)
                    assert result.content[0].text.strip(), (tool, arguments)
                await _still_answers(client)

    anyio.run(scenario)
