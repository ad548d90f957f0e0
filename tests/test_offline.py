"""No network from ``docsym index`` or ``docsym serve``: every socket their processes open is
watched with strace (index and OCR workers, SQL workers included), and nothing may be written
under ``$HOME/.cache/Microsoft`` (ONNX Runtime's device id and queued usage events).

Before docsym set ``ORT_DISABLE_TELEMETRY``, an index run of a paper and a scan looked up
mobile.events.data.microsoft.com 16 times, and an idle server 10 times in two minutes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from docsym.demo import SAMPLES
from docsym.runtime.offline import NO_TELEMETRY
from docsym.runtime.settings import get_settings
from tests.conftest import CORPUS, REPO
from tests.pdf_factory import scan_of

SCAN = CORPUS / "scanned" / "table-multi-row-column-cells.pdf"
# AF_UNIX sockets that lead off the machine: name lookups (nscd, systemd-resolved).
NAME_SERVICES = ("nscd", "/run/systemd/resolve", "/var/run/systemd/resolve")


def _strace() -> str:
    found = shutil.which("strace")
    if found is None:
        pytest.skip("strace is not installed (apt-get install strace)")
    probe = subprocess.run([found, "-f", "-o", os.devnull, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode().strip()}")
    return found


def _traced(strace: str, trace: Path, *argv: str) -> list[str]:
    """``argv`` run under strace: every connect and addressed send of it and its children
    goes to ``trace``."""
    calls = "trace=connect,sendto,sendmsg"
    return [strace, "-f", "-qq", "-e", calls, "-o", str(trace), *argv]


def _environment(home: Path) -> dict[str, str]:
    """The test's environment without the switches docsym sets (the test process imported
    docsym, which set them): the processes under test must set them themselves. HOME is a
    fresh folder; the model's graph stays in the cache it was written to."""
    env = {k: v for k, v in os.environ.items() if k not in NO_TELEMETRY}
    env.update(
        HOME=str(home),
        DOCSYM_CACHE=str(get_settings().cache.expanduser()),
        PYTHONPATH=str(REPO),
    )
    return env


def _network(trace: Path) -> list[str]:
    """Lines of a trace that reach beyond the process tree's own pipes and local sockets: a
    connect or a send to an address of any family but AF_UNIX (AF_NETLINK allowed: the
    kernel), or to a name service's AF_UNIX socket. (A socket only created or bound is no
    traffic: urllib3, imported by OCR, binds one to ::1 to learn whether IPv6 exists.)"""
    found = []
    for line in trace.read_text(errors="replace").splitlines():
        call = re.search(r"\b(connect|sendto|sendmsg)\(\d+, .*?sa_family=(AF_\w+)(.*)", line)
        if call is None:
            continue
        family, rest = call.group(2), call.group(3)
        if family not in ("AF_UNIX", "AF_LOCAL", "AF_NETLINK") or any(
            name in rest for name in NAME_SERVICES
        ):
            found.append(line)
    return found


def test_index_and_serve_open_no_network_socket(tmp_path: Path) -> None:
    strace = _strace()
    home, docs, index = tmp_path / "home", tmp_path / "docs", tmp_path / "index"
    home.mkdir()
    docs.mkdir()
    shutil.copy(SAMPLES / "hybrid-retrieval-report.pdf", docs)
    # A scan, so OCR's models load on ONNX Runtime in OCR processes (a page of the sample
    # rendered as an image where the corpus is absent).
    if SCAN.exists():
        shutil.copy(SCAN, docs)
    else:
        scan_of(SAMPLES / "search-service-operations-note.pdf", docs / "scan.pdf", pages=[1])
    env = _environment(home)

    trace = tmp_path / "index.trace"
    indexed = subprocess.run(
        _traced(strace, trace, sys.executable, "-m", "docsym", "index", str(docs))
        + ["--index", str(index), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert indexed.returncode == 0, indexed.stderr
    assert _network(trace) == []

    served = tmp_path / "serve.trace"
    server = StdioServerParameters(
        command=strace,
        args=_traced(strace, served, sys.executable, "-m", "docsym", "serve")[1:]
        + ["--index", str(index)],
        env=env,
    )

    async def search() -> None:
        async with Client(server) as client:
            found = await client.call_tool("hybrid_search", {"query": "reciprocal rank fusion"})
            assert not found.is_error and found.structured_content["hits"]
            counted = await client.call_tool(
                "run_sql", {"sql": "SELECT count(*) AS n FROM documents"}
            )
            assert counted.structured_content["rows"] == [[2]]  # through a SQL worker

    anyio.run(search)
    assert _network(served) == []
    assert not (home / ".cache" / "Microsoft").exists()
    assert sorted(p.name for p in home.iterdir()) == []  # nothing at all under HOME
