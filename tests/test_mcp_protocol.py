"""Protocol hygiene over stdio with the mcp SDK's real client: the server names its version,
every tool declares an output schema its results follow, bad prompt requests are invalid
params, doc_ids complete, and long calls report progress."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, PromptReference, ResourceTemplateReference

from docsym.mcp_server.server import DESCRIPTION, OUTLINE_URI, package_version
from docsym.tools.registry import TOOLS
from tests.conftest import REPO

PLAN = "What is reciprocal rank fusion? + Which dataset is used for evaluation?"


def _server(index: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(index)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


async def _first(client: Client, sql: str) -> Any:
    """The first value of the first row of a run_sql call."""
    answer = await client.call_tool("run_sql", {"sql": sql})
    assert not answer.is_error, answer.content[0].text
    return answer.structured_content["rows"][0][0]


async def _valid_calls(client: Client) -> dict[str, dict[str, Any]]:
    """One call with valid arguments for every tool, its ids read from the sample index."""
    doc_id = await _first(client, "SELECT doc_id FROM tables ORDER BY table_id LIMIT 1")
    table_id = await _first(client, "SELECT table_id FROM tables ORDER BY table_id LIMIT 1")
    chunk_id = await _first(client, "SELECT chunk_id FROM chunks ORDER BY chunk_id LIMIT 1")
    entity = await _first(client, "SELECT name FROM entities ORDER BY entity_id LIMIT 1")
    question = "effect of the RRF constant k"
    return {
        "list_documents": {},
        "run_sql": {"sql": "SELECT doc_id, title, page_count FROM documents"},
        "hybrid_search": {"query": question, "limit": 3},
        "vector_search": {"query": question, "collection": "bm25", "limit": 3},
        "read_passage": {"id": chunk_id, "after": 1},
        "get_outline": {"doc_id": doc_id},
        "select_subtree": {"doc_id": doc_id, "limit": 5},
        "find_entities": {"query": entity, "doc_id": doc_id},
        "rank_nodes": {"query": question, "doc_id": doc_id, "limit": 3},
        "get_table": {"table_id": table_id, "format": "cells"},
        "lookup_cells": {"table_id": table_id, "limit": 5},
        "view_page": {"doc_id": doc_id, "page_number": 1, "dpi": 50, "highlight_ids": [table_id]},
        "page_image": {"doc_id": doc_id, "page_number": 1, "highlight_ids": [table_id]},
        "calculate": {"expr": "round(94.1 - 91.2, 1)"},
        "compile_query": {"expression": "Which method wins * What does {method} cost?"},
        "run_plan": {"expression": PLAN, "limit": 2},
    }


def test_server_names_itself_and_every_result_follows_its_output_schema(
    sample_index: Path,
) -> None:
    async def scenario() -> None:
        async with Client(_server(sample_index)) as client:
            info = client.server_info
            assert (info.name, info.title, info.description) == ("docsym", "docsym", DESCRIPTION)
            assert info.version == package_version() and info.version not in ("", "0.0.0")
            assert "docsym://schema" in client.instructions

            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert list(listed) == [spec.name for spec in TOOLS]
            validators = {}
            for name, listed_tool in listed.items():
                schema = listed_tool.output_schema
                assert schema and schema["type"] == "object", f"{name} has no output schema"
                Draft202012Validator.check_schema(schema)
                validators[name] = Draft202012Validator(schema)

            calls = await _valid_calls(client)
            assert set(calls) == set(listed), "every tool is called once"
            for name, arguments in calls.items():
                result = await client.call_tool(name, arguments)
                assert not result.is_error, f"{name}: {result.content[-1].text}"
                problems = [
                    f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                    for e in validators[name].iter_errors(result.structured_content)
                ]
                assert not problems, f"{name}'s structured content breaks its schema: {problems}"

            refused = await client.call_tool("get_table", {"table_id": "nope"})
            assert refused.is_error and refused.structured_content is None
            assert "no table with table_id 'nope'" in refused.content[0].text

    anyio.run(scenario)


def test_a_schema_mismatch_is_caught() -> None:
    """The check above has teeth: content that breaks the declared schema is reported."""
    spec = next(spec for spec in TOOLS if spec.name == "run_sql")
    validator = Draft202012Validator(spec.output_schema())
    assert not list(validator.iter_errors({"columns": ["n"], "rows": [[1]]}))
    assert list(validator.iter_errors({"columns": "n", "rows": [[1]]}))
    assert list(validator.iter_errors({"rows": [[1]]}))


def test_bad_prompt_requests_are_invalid_params_without_a_traceback(
    sample_index: Path, tmp_path: Path
) -> None:
    stderr = tmp_path / "stderr"

    async def refusal(client: Client, name: str, arguments: dict[str, str]) -> str:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt(name, arguments)
        assert refused.value.error.code == INVALID_PARAMS, refused.value.error
        message = refused.value.error.message
        assert "\n" not in message and len(message) < 300
        return message

    async def scenario() -> None:
        with stderr.open("w") as errlog:
            async with Client(stdio_client(_server(sample_index), errlog=errlog)) as client:
                unknown = await refusal(client, "summarise", {"question": "x"})
                assert unknown == (
                    "no prompt 'summarise'; the prompts are: hybrid_retrieval_agent, "
                    "compile_question, recap"
                )
                missing = await refusal(client, "recap", {})
                assert missing == "recap: missing argument(s) question. Get it as recap(question)."
                extra = await refusal(client, "recap", {"question": "x", "doc": "y"})
                assert "unknown argument(s) 'doc'" in extra
                huge = await refusal(client, "x" * 100_000, {})
                assert "no prompt 'xxx" in huge
                prompt = await client.get_prompt("recap", {"question": "What is k?"})
                assert "What is k?" in prompt.messages[0].content.text

    anyio.run(scenario)
    assert "Traceback" not in stderr.read_text()


def test_doc_ids_complete_for_the_outline_template(sample_index: Path) -> None:
    async def scenario() -> None:
        async with Client(_server(sample_index)) as client:
            assert client.server_capabilities.completions is not None
            doc_ids = sorted(await _first_column(client, "SELECT doc_id FROM documents"))
            outline = ResourceTemplateReference(type="ref/resource", uri=OUTLINE_URI)

            every = (await client.complete(outline, {"name": "doc_id", "value": ""})).completion
            assert (every.values, every.total, every.has_more) == (doc_ids, 2, False)
            prefix = doc_ids[1][:3].upper()  # any case
            one = (await client.complete(outline, {"name": "doc_id", "value": prefix})).completion
            assert one.values == [doc_ids[1]]
            none = (await client.complete(outline, {"name": "doc_id", "value": "~"})).completion
            assert none.values == [] and none.total == 0

            recap = PromptReference(type="ref/prompt", name="recap")
            free = (await client.complete(recap, {"name": "question", "value": "Wh"})).completion
            assert free.values == []  # a free question has nothing to complete

    anyio.run(scenario)


async def _first_column(client: Client, sql: str) -> list[Any]:
    answer = await client.call_tool("run_sql", {"sql": sql})
    return [row[0] for row in answer.structured_content["rows"]]


def test_long_calls_report_progress_when_asked(sample_index: Path) -> None:
    async def scenario() -> None:
        async with Client(_server(sample_index)) as client:
            heard: list[tuple[float, float | None, str | None]] = []

            async def listen(progress: float, total: float | None, message: str | None) -> None:
                heard.append((progress, total, message))

            plan = await client.call_tool(
                "run_plan", {"expression": PLAN, "limit": 2}, progress_callback=listen
            )
            assert not plan.is_error and plan.structured_content["complete"]
            assert heard[0] == (0, None, "run_plan started")
            assert heard[-1] == (3, 3, "run_plan done")
            leaves = [message for _, _, message in heard[1:-1]]
            assert sorted(leaves) == [
                "leaf 1 searched: What is reciprocal rank fusion?",
                "leaf 2 searched: Which dataset is used for evaluation?",
            ]
            values = [progress for progress, _, _ in heard]
            assert values == sorted(set(values)), "progress only grows"

            heard.clear()
            sql = await client.call_tool(
                "run_sql", {"sql": "SELECT count(*) FROM pages"}, progress_callback=listen
            )
            assert not sql.is_error
            assert heard == [(0, None, "run_sql started"), (1, 1, "run_sql done")]

            heard.clear()
            refused = await client.call_tool(
                "run_plan", {"expression": "a +"}, progress_callback=listen
            )
            assert refused.is_error and heard == [(0, None, "run_plan started")]

    anyio.run(scenario)
