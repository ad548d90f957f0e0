"""The README's Claude Desktop snippet starts a working server, exactly as written; ``docsym
config`` prints each client's snippet with absolute paths, and Claude Desktop's starts a server
a real MCP client talks to."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from docsym.client_config import docsym_command
from tests.conftest import REPO

# The README's placeholders for the absolute paths docsym config prints.
README_EXECUTABLE = "/absolute/path/to/venv/bin/docsym"
README_INDEX = "/absolute/path/to/.docsym"


def _readme_config() -> dict:
    text = (REPO / "README.md").read_text()
    block = next(b for b in re.findall(r"```json\n(.*?)```", text, re.S) if "mcpServers" in b)
    return json.loads(block)["mcpServers"]["docsym"]


def test_readme_snippet_launches_the_server(sample_index: Path) -> None:
    config = _readme_config()
    if config["command"] == README_EXECUTABLE:  # as docsym config prints it: this install's
        executable, *before = docsym_command()
    else:
        executable, before = shutil.which(config["command"]), []
    if executable is None:
        pytest.skip("the docsym console script is not installed (pip install -e .)")
    args = [str(sample_index) if a == README_INDEX else a for a in config["args"]]
    assert args != config["args"], "the snippet's index placeholder changed; update this test"
    args = [*before, *args]

    async def scenario() -> None:
        async with Client(StdioServerParameters(command=executable, args=args)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"run_sql", "hybrid_search", "list_documents"} <= tools
            docs = await client.call_tool("list_documents", {})
            assert len(docs.structured_content["rows"]) == 2

    anyio.run(scenario)


# -- docsym config CLIENT: snippets as the command prints them ---------------------------------


def _config(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m docsym config ARGS``, stdout piped."""
    return subprocess.run(
        [sys.executable, "-m", "docsym", "config", *map(str, args)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=check,
    )


def _assert_runnable(command: str) -> None:
    """An executable a client can start without the shell's PATH or working directory."""
    assert os.path.isabs(command) and os.path.isfile(command), command
    assert os.access(command, os.X_OK), command


@pytest.mark.parametrize(
    ("client", "key", "extra"),
    [
        ("claude-desktop", "mcpServers", {}),
        ("cursor", "mcpServers", {}),
        ("vscode", "servers", {"type": "stdio"}),
    ],
)
def test_stdio_snippets_name_absolute_paths(
    client: str, key: str, extra: dict, tmp_path: Path
) -> None:
    index = tmp_path / "index"
    run = _config(client, "--index", index)
    entry = json.loads(run.stdout)[key]["docsym"]
    _assert_runnable(entry["command"])
    assert entry["args"][-3:] == ["serve", "--index", str(index.resolve())]
    assert entry.items() >= extra.items()
    assert "no index at" in run.stderr  # said beside the snippet, which stays valid JSON


def test_a_relative_index_is_made_absolute(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "docsym", "config", "cursor", "--index", "here/.docsym"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    args = json.loads(run.stdout)["mcpServers"]["docsym"]["args"]
    assert args[-1] == str((tmp_path / "here/.docsym").resolve())


def test_claude_code_gets_a_command_line(tmp_path: Path) -> None:
    words = shlex.split(_config("claude-code", "--index", tmp_path / "my index").stdout)
    assert words[:5] == ["claude", "mcp", "add", "docsym", "--"]
    _assert_runnable(words[5])
    assert words[-3:] == ["serve", "--index", str((tmp_path / "my index").resolve())]


def test_http_snippets_send_the_bearer_token() -> None:
    url = "http://127.0.0.1:9000/mcp"
    vscode = json.loads(
        _config("vscode", "--transport", "http", "--url", url, "--token", "s3").stdout
    )
    assert vscode["servers"]["docsym"] == {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer s3"},
    }
    cursor = json.loads(_config("cursor", "--transport", "http", "--token", "s3").stdout)
    assert cursor["mcpServers"]["docsym"] == {
        "url": "http://127.0.0.1:8765/mcp",  # docsym serve --transport http's default
        "headers": {"Authorization": "Bearer s3"},
    }
    line = _config("claude-code", "--transport", "http", "--url", url, "--token", "s3").stdout
    assert shlex.split(line) == [
        "claude", "mcp", "add", "--transport", "http",
        "--header", "Authorization: Bearer s3", "docsym", url,
    ]  # fmt: skip
    bare = json.loads(_config("cursor", "--transport", "http", "--name", "papers").stdout)
    assert bare == {"mcpServers": {"papers": {"url": "http://127.0.0.1:8765/mcp"}}}


def test_claude_desktop_refuses_http_saying_why() -> None:
    run = _config("claude-desktop", "--transport", "http", check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert "stdio" in run.stderr and "Connectors" in run.stderr


def test_the_claude_desktop_snippet_starts_a_server(sample_index: Path, tmp_path: Path) -> None:
    """What Claude Desktop does with the snippet: start the command with its arguments, with
    none of the shell's PATH and from a folder of its own, and talk MCP to it."""
    entry = json.loads(_config("claude-desktop", "--index", sample_index).stdout)
    server = entry["mcpServers"]["docsym"]
    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        env={"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )

    async def scenario() -> None:
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"run_sql", "hybrid_search", "list_documents"} <= tools
            docs = await client.call_tool("list_documents", {})
            assert len(docs.structured_content["rows"]) == 2

    anyio.run(scenario)
