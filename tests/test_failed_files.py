"""The index remembers what it could not read: each failed or skipped file, with its reason and
time, on both backends; shown by ``docsym status``, ``index_status`` and ``list_documents``;
named in every search result while any is recorded; cleared when a later run reads the file or
finds it gone. And what a crashed or crippled worker says of the file it held."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docsym.indexer.pipeline import index_paths
from docsym.indexer.worker_output import crash_cause
from docsym.storage.backends import open_store
from docsym.tools.documents import index_status, list_documents
from docsym.tools.search import hybrid_search
from tests.bad_files import write_control
from tests.conftest import new_database
from tests.pdf_factory import text_pdf

NOT_A_PDF = "not a PDF (no %PDF- header)"


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    write_control(docs / "control.md", "The wombat digs burrows at night.")
    (docs / "broken.pdf").write_bytes(b"hello, not a pdf")
    (docs / "broken.docx").write_bytes(b"not a zip either")
    return docs


def _stages(store) -> dict[str, str]:
    result = list_documents(store)
    name, stage = result.columns.index("file_name"), result.columns.index("stage")
    return {row[name]: row[stage] for row in result.rows}


@pytest.fixture(params=["directory", "postgres"])
def target(request, tmp_path: Path) -> str | Path:
    if request.param == "directory":
        return tmp_path / "index"
    server = request.getfixturevalue("pg_server")
    return new_database(server, "failures")


def test_failed_files_are_remembered_shown_and_cleared(tmp_path: Path, target) -> None:
    docs = _folder(tmp_path)
    report = index_paths([docs], target)
    assert {Path(p).name for p, _ in report.failed} == {"broken.pdf", "broken.docx"}
    with open_store(target) as store:
        stages = _stages(store)
        assert stages["control.md"] == "complete"
        assert stages["broken.pdf"] == f"failed: {NOT_A_PDF}"
        assert stages["broken.docx"].startswith("failed: not a DOCX")
        status = index_status(store)
        assert status.failed_count == 2
        assert {Path(f.path).name for f in status.failed_files} == {"broken.pdf", "broken.docx"}
        assert all(f.outcome == "failed" and f.recorded_at for f in status.failed_files)
        note = hybrid_search(store, "wombat burrows").note or ""
        assert "2 file(s) could not be indexed" in note
        rows = store.sql().execute("SELECT file_name, reason FROM failed_files").fetchall()
        assert dict(rows)["broken.pdf"] == NOT_A_PDF

    # A later run reads the mended PDF, and finds the DOCX gone: both records go.
    (docs / "broken.pdf").unlink()
    write_control(docs / "broken.md", "Mended notes about quolls.")
    (docs / "broken.docx").unlink()
    assert index_paths([docs], target).ok
    with open_store(target) as store:
        assert index_status(store).failed_count == 0
        assert "could not be indexed" not in (hybrid_search(store, "quolls").note or "")
        assert "failed" not in " ".join(_stages(store).values())


def test_a_file_read_again_successfully_clears_its_record(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    target = tmp_path / "index"
    (docs / "note.md").write_text("")  # empty: nothing to index
    assert not index_paths([docs], target).ok
    with open_store(target) as store:
        assert _stages(store)["note.md"].startswith("failed: empty file")
    write_control(docs / "note.md", "Now it speaks of echidnas.")
    assert index_paths([docs], target).ok
    with open_store(target) as store:
        assert _stages(store) == {"note.md": "complete"}


def test_a_link_not_followed_is_recorded_as_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    write_control(outside, "Outside the folder.")
    docs = tmp_path / "docs"
    docs.mkdir()
    write_control(docs / "inside.md", "Inside the folder.")
    (docs / "link.md").symlink_to(outside)
    index_paths([docs], tmp_path / "index")
    with open_store(tmp_path / "index") as store:
        assert _stages(store)["link.md"].startswith("skipped: a link to")


def test_the_cli_status_lists_failed_files_in_one_line_each(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    index = tmp_path / "index"
    run = [sys.executable, "-m", "docsym"]
    indexed = subprocess.run(
        [*run, "index", str(docs), "--index", str(index), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert indexed.returncode == 1
    assert "Traceback" not in indexed.stderr
    assert f"failed {docs / 'broken.pdf'}: {NOT_A_PDF}" in indexed.stderr
    status = subprocess.run(
        [*run, "status", "--index", str(index)], capture_output=True, text=True, check=True
    )
    assert "2 file(s) could not be indexed" in status.stdout
    assert f"failed {docs / 'broken.pdf'} (" in status.stdout


def test_an_empty_result_says_so_in_one_line_with_what_to_try(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    write_control(docs / "control.md", "The wombat digs burrows at night.")
    index_paths([docs], tmp_path / "index")
    with open_store(tmp_path / "index") as store:
        none = hybrid_search(store, "wombat", filter="doc_id == 'no-such-document'")
        assert not none.hits
        shown = none.to_markdown()
        assert shown.startswith("No hits among 1 document(s): try other or fewer words")
        assert "|" not in shown  # no bare table header
        listed = list_documents(store, filter="platypus")
        assert not listed.rows
        assert listed.to_markdown().startswith("No rows. No document's title")


# -- what a worker says when it dies -----------------------------------------------------------


def test_a_segfault_is_reported_with_its_signal_and_where_it_happened(tmp_path: Path) -> None:
    """faulthandler's report, as a worker writes it, read back by the indexing process."""
    output = tmp_path / "worker.stderr"
    crash = (
        "import faulthandler, ctypes\n"
        "faulthandler.enable()\n"
        "def read_page():\n"
        "    ctypes.string_at(0)\n"
        "read_page()\n"
    )
    with output.open("w") as stderr:
        ended = subprocess.run([sys.executable, "-c", crash], stderr=stderr)
    how, out_of_memory = crash_cause(ended.returncode, output.read_text())
    assert how.startswith("signal SIGSEGV: Segmentation fault")
    assert how.endswith("(in ctypes/__init__.py, string_at)")  # the innermost frame
    assert not out_of_memory


def test_an_allocation_failing_is_the_only_crash_called_the_memory_limit(tmp_path: Path) -> None:
    rust = "memory allocation of 134217728 bytes failed\nstack backtrace:\n   0: std::alloc\n"
    assert crash_cause(-6, rust)[1]
    assert crash_cause(-6, "terminate called after throwing 'std::bad_alloc'\n")[1]
    assert not crash_cause(-6, "Fatal Python error: Aborted\n")[1]
    how, out_of_memory = crash_cause(-9, "")
    assert "SIGKILL from outside docsym" in how and not out_of_memory


def test_a_reader_that_cannot_load_fails_its_files_naming_the_module(tmp_path: Path) -> None:
    """As on an install lacking a library: docling's backends cannot be imported in the
    workers, so every DOCX fails with the missing module and the fix; the PDF beside it is
    indexed. (The install that users get is checked whole by .ci/run.)"""
    docs = tmp_path / "docs"
    docs.mkdir()
    write_control(docs / "control.md", "Markdown reads fine.")  # docling too: it fails
    text_pdf(docs / "ok.pdf", marker="numbat")
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'docling' or name.startswith('docling.'):\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    env_run = subprocess.run(
        [sys.executable, "-m", "docsym", "index", str(docs), "--index", str(tmp_path / "i")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(hide)},
    )
    assert env_run.returncode == 1, env_run.stderr
    assert "Traceback" not in env_run.stderr
    assert "cannot load the Markdown reader: ModuleNotFoundError" in env_run.stderr
    assert "pip install docling" in env_run.stderr
    assert "memory limit" not in env_run.stderr
    with open_store(tmp_path / "i") as store:
        names = {r[0] for r in store.sql().execute("SELECT file_name FROM documents").fetchall()}
    assert names == {"ok.pdf"}
