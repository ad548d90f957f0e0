"""Killing the indexer never corrupts the index; a reader keeps answering while it runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from docsym.storage import schema
from tests.conftest import REPO

PAPERS = [
    "papers/2020.acl-main.207_specter.pdf",
    "papers/N18-3011_literature_graph.pdf",
    "papers/2004.04906v3_dpr.pdf",
    "papers/2203.00274v2_tableformer.pdf",
    "papers/jhydrol_2005_flow_duration_curves.pdf",
    "papers/2302.07302v1_citesee.pdf",
]
VOLATILE = {"indexed_at"}


def _index_cmd(files: list[Path], index: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "docsym",
        "index",
        *map(str, files),
        "--index",
        str(index),
        "--quiet",
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "DOCSYM_PUBLISH_SECONDS": "0", "PYTHONPATH": str(REPO)}


def _snapshot(index: Path) -> dict[str, list[tuple]]:
    """Every row of every view, minus volatile columns, in a stable order."""
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        out = {}
        for table in schema.TABLES:
            cols = [c.name for c in table.columns if c.name not in VOLATILE]
            rows = con.execute(f"SELECT {', '.join(cols)} FROM {table.name}").fetchall()
            out[table.name] = sorted(rows, key=repr)
        return out


@pytest.fixture(scope="module")
def papers(corpus: Path) -> list[Path]:
    return [corpus / p for p in PAPERS]


@pytest.fixture(scope="module")
def clean_snapshot(papers: list[Path], tmp_path_factory) -> dict[str, list[tuple]]:
    index = tmp_path_factory.mktemp("clean")
    subprocess.run(_index_cmd(papers, index), env=_env(), check=True, capture_output=True)
    return _snapshot(index)


def _wait_for_first_publish(index: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not (index / "index.duckdb").exists():
        assert proc.poll() is None, "the indexer exited before publishing anything"
        assert time.monotonic() < deadline, "no document was published in time"
        time.sleep(0.05)


# Kill before anything is written, right after the first document is published, and later on.
@pytest.mark.parametrize("kill_after_publish", [None, 0.0, 1.5])
def test_sigkill_then_rerun_equals_a_clean_run(
    papers: list[Path], clean_snapshot, tmp_path: Path, kill_after_publish: float | None
) -> None:
    index = tmp_path / "index"
    scratch = tmp_path / "tmp"  # the runs' temporary folder: what the killed run left is seen
    scratch.mkdir()
    env = {**_env(), "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        _index_cmd(papers, index), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    if kill_after_publish is None:
        time.sleep(0.5)
    else:
        _wait_for_first_publish(index, proc)
        time.sleep(kill_after_publish)
    assert proc.poll() is None, "the run finished before the kill: give it more work"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if (index / "index.duckdb").exists():  # whatever was published is a valid index
        _assert_no_orphans(_snapshot(index))
    if kill_after_publish is not None:  # its workers had started: their folder was left
        assert list(scratch.iterdir()), "the killed run left no worker folder to remove"
    subprocess.run(_index_cmd(papers, index), env=env, check=True, capture_output=True)
    assert _snapshot(index) == clean_snapshot
    assert not list(scratch.iterdir()), "the rerun left the killed run's temporary files"
    check = subprocess.run(
        [sys.executable, "-m", "docsym", "check", "--index", str(index)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout  # vectors match the database exactly


def _assert_no_orphans(snapshot: dict[str, list[tuple]]) -> None:
    docs = {row[0] for row in snapshot["documents"]}
    for name, rows in snapshot.items():
        columns = [c.name for c in schema.table(name).columns if c.name not in VOLATILE]
        if name == "documents" or not rows or "doc_id" not in columns:
            continue
        position = columns.index("doc_id")
        assert {r[position] for r in rows} <= docs, f"orphan rows in {name}"


# Counts the documents every 50 ms from before the run starts (it says "ready" after its first
# answer) until the test closes its stdin, after the run: no deadline a slow machine can miss.
READER = r"""
import json, select, sys
from pathlib import Path
from docsym.storage.backends import open_store
from docsym.tools.sql import run_sql
store = open_store(Path(sys.argv[1]))
counts, errors = [], []
def count():
    try:
        counts.append(run_sql(store, "SELECT count(*) FROM documents").rows[0][0])
    except Exception as exc:
        errors.append(repr(exc))
count()
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0.05)[0]:
    count()
count()
print(json.dumps({"counts": counts, "errors": errors}))
"""


def test_reader_keeps_answering_while_indexing_and_sees_new_documents(
    papers: list[Path], tmp_path: Path
) -> None:
    index = tmp_path / "index"
    subprocess.run(_index_cmd(papers[:1], index), env=_env(), check=True, capture_output=True)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(index)],
        # A slow start of its SQL worker is not what this test looks at; a blocked read is.
        env={**_env(), "DOCSYM_SQL_SECONDS": "120"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline() == "ready\n"
    subprocess.run(_index_cmd(papers, index), env=_env(), check=True, capture_output=True)
    output, _ = reader.communicate(timeout=600)  # closes its stdin: one last count
    seen = json.loads(output)
    assert seen["errors"] == []
    counts = seen["counts"]
    assert counts[0] == 1 and counts[-1] == len(papers)
    assert counts == sorted(counts)  # never goes back, never shows a half document set
    assert len(set(counts)) >= 3  # it saw documents arrive one by one, without a restart
