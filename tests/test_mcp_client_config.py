"""The README's Claude Desktop snippet starts a working server, exactly as written."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from docsym.demo import SAMPLES
from docsym.indexer.pipeline import index_paths
from tests.conftest import REPO


def _readme_config() -> dict:
    text = (REPO / "README.md").read_text()
    block = next(b for b in re.findall(r"```json\n(.*?)```", text, re.S) if "mcpServers" in b)
    return json.loads(block)["mcpServers"]["docsym"]


def test_readme_snippet_launches_the_server(tmp_path: Path) -> None:
    config = _readme_config()
    executable = shutil.which(config["command"])
    if executable is None:
        pytest.skip("the docsym console script is not installed (pip install -e .)")
    index = tmp_path / "index"
    assert index_paths([SAMPLES], index).ok
    args = [str(index) if a == "/absolute/path/to/.docsym" else a for a in config["args"]]
    assert args != config["args"], "the snippet's index placeholder changed; update this test"

    async def scenario() -> None:
        async with Client(StdioServerParameters(command=executable, args=args)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"run_sql", "hybrid_search", "list_documents"} <= tools
            docs = await client.call_tool("list_documents", {})
            assert len(docs.structured_content["rows"]) == 2

    anyio.run(scenario)
