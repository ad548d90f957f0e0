"""The MCP server over streamable HTTP: a real ``docsym serve --transport http`` subprocess on a
loopback port, driven by the SDK's client and by raw requests for the guards."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from docsym.mcp_server.http import is_loopback, security_settings, warn_if_exposed
from tests.conftest import REPO

TOKEN = "test-token-Zq9~not-secret"
STARTUP_SECONDS = 120  # the server warms the embedding model before it listens
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
JSON_RPC_HEADERS = {"Accept": "application/json, text/event-stream"}


@dataclass
class RunningServer:
    url: str
    port: int
    stdout: Path
    stderr: Path


@pytest.fixture(scope="module")
def http_server(
    sample_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    with served_over_http(sample_index, tmp_path_factory.mktemp("http-server-logs")) as server:
        yield server


@contextmanager
def served_over_http(
    index: Path,
    logs: Path,
    settings: dict[str, str] | None = None,
    options: list[str] | None = None,
    port: int | None = None,
) -> Iterator[RunningServer]:
    """``docsym serve --transport http`` over ``index`` with the token, these DOCSYM_*
    settings and these further options (``--host``, ``--allow-origin``), on a free port
    reachable on loopback (this one, or a free one); its stdout and stderr are kept in
    ``logs``."""
    port = port or _free_loopback_port()
    # The token travels by environment, as a user would keep it out of the process list.
    env = {**os.environ, "PYTHONPATH": str(REPO), "DOCSYM_TOKEN": TOKEN, **(settings or {})}
    command = [sys.executable, "-m", "docsym", "serve", "--transport", "http"]
    command += ["--port", str(port), "--index", str(index), *(options or [])]
    with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
    try:
        _wait_for_port(process, port, logs / "stderr")
        yield RunningServer(f"http://127.0.0.1:{port}/mcp", port, logs / "stdout", logs / "stderr")
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(process: subprocess.Popen, port: int, stderr: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"server exited with {process.returncode}:\n{stderr.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"server did not listen within {STARTUP_SECONDS} s:\n{stderr.read_text()}")


def _post_initialize(server: RunningServer, **headers: str) -> httpx2.Response:
    return httpx2.post(
        server.url, json=INITIALIZE, headers={**JSON_RPC_HEADERS, **headers}, timeout=30
    )


def _bearer(token: str = TOKEN) -> str:
    return f"Bearer {token}"


def test_sdk_client_lists_tools_and_calls_them(http_server: RunningServer) -> None:
    async def scenario() -> None:
        # Client(url) has no header option: headers go on an httpx2 client of our own.
        headers = {"Authorization": _bearer()}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(http_server.url, http_client=http)) as client,
        ):
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"run_sql", "list_documents", "vector_search", "hybrid_search"} <= names

            docs = await client.call_tool("list_documents", {})
            assert not docs.is_error
            titles = {row[1] for row in docs.structured_content["rows"]}
            assert "Evaluating Hybrid Retrieval for Technical Manuals" in titles

            counted = await client.call_tool("run_sql", {"sql": "SELECT count(*) FROM documents"})
            assert not counted.is_error and counted.structured_content["rows"] == [[2]]
            refused = await client.call_tool("run_sql", {"sql": "DROP TABLE documents"})
            assert refused.is_error

    anyio.run(scenario)


def test_missing_or_wrong_token_gets_401(http_server: RunningServer) -> None:
    missing = _post_initialize(http_server)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = _post_initialize(http_server, Authorization=_bearer("guess"))
    assert wrong.status_code == 401
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    # Right secret, wrong scheme.
    basic = _post_initialize(http_server, Authorization=f"Basic {TOKEN}")
    assert basic.status_code == 401


def test_foreign_origin_gets_403_and_own_origin_works(http_server: RunningServer) -> None:
    evil = _post_initialize(http_server, Authorization=_bearer(), Origin="http://evil.example")
    assert evil.status_code == 403
    for name in ("localhost", "127.0.0.1"):
        origin = f"http://{name}:{http_server.port}"
        good = _post_initialize(http_server, Authorization=_bearer(), Origin=origin)
        assert good.status_code == 200, (origin, good.text)
        assert '"serverInfo"' in good.text and "docsym" in good.text
    # Same host, another port: another origin (e.g. any local web page), refused.
    other_port = _post_initialize(
        http_server, Authorization=_bearer(), Origin=f"http://localhost:{http_server.port + 1}"
    )
    assert other_port.status_code == 403


def test_rebound_host_header_is_refused(http_server: RunningServer) -> None:
    rebound = _post_initialize(
        http_server, Authorization=_bearer(), Host=f"evil.example:{http_server.port}"
    )
    assert rebound.status_code == 421


def test_logs_go_to_stderr_only(http_server: RunningServer) -> None:
    assert _post_initialize(http_server).status_code == 401  # at least one access-log line
    time.sleep(0.3)
    assert http_server.stdout.read_bytes() == b""
    stderr = http_server.stderr.read_text()
    assert f"http://127.0.0.1:{http_server.port}/mcp" in stderr
    assert "401" in stderr


def test_browser_view_page_is_static_and_locked_down(http_server: RunningServer) -> None:
    base = f"http://127.0.0.1:{http_server.port}"
    # The page holds no index data, so it needs no token; /mcp still does (the test above).
    page = httpx2.get(f"{base}/view", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"
    assert 'id="query"' in page.text and "https://" not in page.text  # nothing from elsewhere
    root = httpx2.get(f"{base}/", timeout=30)
    assert root.status_code == 307 and root.headers["location"] == "/view"
    rebound = httpx2.get(f"{base}/view", headers={"Host": "evil.example"}, timeout=30)
    assert rebound.status_code == 421
    assert httpx2.post(f"{base}/view", timeout=30).status_code == 405
    # The URL to open is printed at start, the token in its fragment (never sent to a server).
    assert f"docsym view at {base}/view#token={quote(TOKEN, safe='')}" in (
        http_server.stderr.read_text()
    )


def test_allowed_hosts_and_origins() -> None:
    default = security_settings("127.0.0.1", 8765)
    assert default.enable_dns_rebinding_protection
    assert set(default.allowed_origins) == {
        "http://127.0.0.1:8765",
        "http://localhost:8765",
        "http://[::1]:8765",
    }
    assert set(default.allowed_hosts) == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}

    wide = security_settings("0.0.0.0", 9000, ["http://box.lan:9000/", "https://ui.example"])
    assert "0.0.0.0:9000" not in wide.allowed_hosts
    assert {"box.lan:9000", "ui.example"} <= set(wide.allowed_hosts)
    assert {"http://box.lan:9000", "https://ui.example"} <= set(wide.allowed_origins)
    bound = security_settings("10.0.0.5", 9000)
    assert "10.0.0.5:9000" in bound.allowed_hosts
    assert "http://10.0.0.5:9000" in bound.allowed_origins  # the browser view served from there


def test_exposed_without_token_warns(caplog: pytest.LogCaptureFixture) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    with caplog.at_level(logging.WARNING, logger="docsym.mcp.http"):
        warn_if_exposed("127.0.0.1", None)
        warn_if_exposed("0.0.0.0", "secret")
        assert not caplog.records
        warn_if_exposed("0.0.0.0", None)
    assert len(caplog.records) == 1 and "WITHOUT a bearer token" in caplog.records[0].message
