"""A full disk or a file size limit stops ``docsym index`` in one line, removes the run's own
files, and leaves the index published last byte-identical and searchable.

The disk is a real tmpfs (mounted as root; skipped where mounting is refused) filled to leave
room for the run's private copy of the index but not for the copy it publishes; the file size
limit is the process's own (RLIMIT_FSIZE, as ``ulimit -f`` sets it), so that test runs
anywhere."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

from docsym.demo import SAMPLES
from docsym.indexer.pipeline import index_paths
from tests.conftest import REPO
from tests.mounts import fill, tmpfs
from tests.pdf_factory import text_pdf


@pytest.fixture(scope="module")
def samples_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled samples indexed once; each test copies it where it needs it."""
    index = tmp_path_factory.mktemp("samples") / "index"
    assert index_paths([SAMPLES], index).ok
    return index


@pytest.fixture(scope="module")
def more(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Documents the index does not hold yet."""
    folder = tmp_path_factory.mktemp("more")
    for n in range(3):
        text_pdf(folder / f"more-{n}.pdf", pages=30, marker=f"more{n}")
    return folder


def _docsym(*argv: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def file_size_limit() -> None:  # in the child: writes past the limit fail with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    return subprocess.run(
        [sys.executable, "-m", "docsym", *argv],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        preexec_fn=file_size_limit if limit is not None else None,
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_files(index: Path) -> list[str]:
    """Files a run writes beside the index: its private copy, that copy's WAL and spill
    directory, the copy being published."""
    return sorted(name for name in os.listdir(index) if name.startswith(".index.duckdb."))


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def _still_serves(index: Path) -> None:
    found = _docsym("search", "reciprocal rank fusion", "--index", str(index), "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits and "Reciprocal rank fusion" in hits[0]["text"]  # from the samples, published


def test_a_full_disk_stops_the_run_in_one_line(
    tmp_path: Path, samples_index: Path, more: Path
) -> None:
    with tmpfs(tmp_path / "disk", megabytes=200) as disk:
        index = disk / "index"
        shutil.copytree(samples_index, index)
        published = _digest(index / "index.duckdb")
        size = (index / "index.duckdb").stat().st_size
        # Room for the run's private copy of the index, not for the copy it publishes.
        ballast = fill(disk, leave=size + size // 3)

        line = _one_line(_docsym("index", str(more), "--index", str(index), "--quiet"))
        assert line.startswith(f"cannot index: no room for the index at {index}: its disk is")
        assert "full; free space there, or index into a directory on a disk with room" in line
        assert _run_files(index) == []
        assert _digest(index / "index.duckdb") == published
        ballast.unlink()
        _still_serves(index)

        # With room again, the next run adds the documents, parsing them as if nothing happened.
        report = index_paths([more], index)
        assert report.ok and len(report.added) == 3
        assert _run_files(index) == []


def test_a_file_size_limit_stops_the_run_in_one_line(
    tmp_path: Path, samples_index: Path, more: Path
) -> None:
    index = tmp_path / "index"
    shutil.copytree(samples_index, index)
    published = _digest(index / "index.duckdb")
    limit = (index / "index.duckdb").stat().st_size // 2  # the private copy cannot be made

    done = _docsym("index", str(more), "--index", str(index), "--quiet", limit=limit)
    line = _one_line(done)
    assert line.startswith(f"cannot index: no room for the index at {index}: a file would pass")
    assert f"file size limit ({limit / 2**20:.1f} MB, ulimit -f); raise the limit" in line
    assert _run_files(index) == []
    assert _digest(index / "index.duckdb") == published
    _still_serves(index)


# Each writer of an index run meets a full disk or a file size limit, in a process of its own
# (the limit, once set, holds for the whole process); out_of_space names the cause of each.
WRITERS = """
import json, os, resource, shutil, signal, sys
from pathlib import Path
import apsw, duckdb
from docsym.storage.unwritable import out_of_space

root, limit = Path(sys.argv[1]), int(sys.argv[2])
source = Path(sys.argv[3])
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
found = {}
try:
    shutil.copyfile(source, root / "copy")
except OSError as exc:
    found["copy"] = out_of_space(exc)
(root / "copy").unlink()
con = duckdb.connect(str(root / "x.duckdb"))
try:
    con.execute("CREATE TABLE t AS SELECT md5(range::VARCHAR) || range AS v FROM range(200000)")
    con.execute("CHECKPOINT")
except duckdb.Error as exc:
    found["duckdb"] = out_of_space(exc)
con.close()
for name in os.listdir(root):
    shutil.rmtree(root / name) if (root / name).is_dir() else (root / name).unlink()
db = apsw.Connection(str(root / "x.sqlite"))
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE t (v)")
try:
    with db:
        db.executemany("INSERT INTO t VALUES (randomblob(4096))", [()] * 1024)
except apsw.Error as exc:
    found["sqlite"] = out_of_space(exc, db)
print(json.dumps(found))
"""


@pytest.mark.parametrize("cause", ["file size limit", "full disk"])
def test_each_writer_that_runs_out_of_room_is_recognised(
    tmp_path: Path, samples_index: Path, cause: str
) -> None:
    root = tmp_path / "disk"
    if cause == "full disk":
        context, limit, expected = tmpfs(root, megabytes=2), 0, errno.ENOSPC
    else:
        root.mkdir()
        context, limit, expected = nullcontext(root), 512 * 1024, errno.EFBIG
    with context:
        done = subprocess.run(
            [sys.executable, "-c", WRITERS, str(root), str(limit)]
            + [str(samples_index / "index.duckdb")],  # larger than either
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"copy": expected, "duckdb": expected, "sqlite": expected}
