"""docsym index: bad input is reported and skipped, re-runs are incremental, --prune removes."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from docsym.cli import main
from docsym.indexer.pipeline import index_paths
from docsym.storage import migrations, schema
from docsym.storage.backends import open_store
from docsym.tools.search import hybrid_search
from tests import pdf_factory

# The stages of preparing a document, as the run report times them (writing is the sink's).
STAGES = ("parse", "summaries", "graph", "encode")


def _docs(index: Path) -> dict[str, str]:
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        return dict(con.execute("SELECT file_name, doc_id FROM documents").fetchall())


def test_bad_files_are_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    good = pdf_factory.text_pdf(folder / "good.pdf")
    pdf_factory.encrypted_pdf(folder / "locked.pdf")
    pdf_factory.zero_page_pdf(folder / "zero.pdf")
    pdf_factory.truncated_pdf(folder / "cut.pdf", pdf_factory.text_pdf(tmp_path / "src.pdf", 30))
    pdf_factory.scanned_pdf(folder / "scan.pdf")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notes.pdf").write_text("this is a text file with a .pdf name\n")

    report = index_paths([folder], tmp_path / "index")

    reasons = {Path(p).name: r for p, r in report.failed}
    assert "encrypted" in reasons["locked.pdf"]
    assert "no pages" in reasons["zero.pdf"]
    assert "empty file" in reasons["empty.pdf"]
    assert "not a PDF" in reasons["notes.pdf"]
    assert "cut.pdf" in reasons
    assert [Path(p).name for p in report.no_text] == ["scan.pdf"]
    assert sorted(Path(p).name for p in report.added) == ["good.pdf", "scan.pdf"]
    assert not report.ok
    docs = _docs(tmp_path / "index")
    assert set(docs) == {"good.pdf", "scan.pdf"}
    with duckdb.connect(str(tmp_path / "index" / "index.duckdb"), read_only=True) as con:
        scan = con.execute(
            "SELECT d.has_text, count(p.page_id), bool_or(p.has_text) FROM documents d "
            "JOIN pages p USING (doc_id) WHERE d.file_name = 'scan.pdf' GROUP BY d.has_text"
        ).fetchone()
        assert scan == (False, 2, False)
        assert (
            con.execute(
                "SELECT count(*) FROM chunks WHERE doc_id = ?", [docs["good.pdf"]]
            ).fetchone()[0]
            > 0
        )
    assert good.exists()


def test_exit_status_says_whether_anything_failed(tmp_path: Path) -> None:
    ok_dir = tmp_path / "ok"
    ok_dir.mkdir()
    pdf_factory.text_pdf(ok_dir / "a.pdf")
    assert main(["index", str(ok_dir), "--index", str(tmp_path / "i1"), "--quiet"]) == 0
    (ok_dir / "bad.pdf").write_bytes(b"%PDF-1.4 garbage")
    assert main(["index", str(ok_dir), "--index", str(tmp_path / "i1"), "--quiet"]) == 1


def test_rerun_is_incremental_and_prune_removes_missing_files(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf", marker="alpha")
    pdf_factory.text_pdf(folder / "b.pdf", marker="beta")
    index = tmp_path / "index"

    first = index_paths([folder], index)
    assert len(first.added) == 2
    # The report times each stage of the run (bench/index_speed.py prints them).
    assert set(first.seconds) == {*STAGES, "write"}
    assert all(seconds > 0 for seconds in first.seconds.values())
    ids = _docs(index)

    second = index_paths([folder], index)
    assert (len(second.added), len(second.updated), len(second.unchanged)) == (0, 0, 2)
    assert second.seconds == {}  # nothing was parsed or written
    assert _docs(index) == ids

    pdf_factory.text_pdf(folder / "a.pdf", marker="gamma")  # new content, same path
    third = index_paths([folder], index)
    assert [Path(p).name for p in third.updated] == ["a.pdf"]
    after = _docs(index)
    assert after["a.pdf"] != ids["a.pdf"] and after["b.pdf"] == ids["b.pdf"]
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        stale = con.execute(
            "SELECT count(*) FROM chunks WHERE doc_id = ?", [ids["a.pdf"]]
        ).fetchone()[0]
    assert stale == 0  # the old version's rows are gone, not orphaned

    (folder / "b.pdf").unlink()
    kept = index_paths([folder], index)
    assert set(_docs(index)) == {"a.pdf", "b.pdf"} and not kept.removed
    pruned = index_paths([folder], index, prune=True)
    assert [Path(p).name for p in pruned.removed] == ["b.pdf"]
    assert set(_docs(index)) == {"a.pdf"}
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        for table in ("pages", "chunks", "sections", "tree_nodes"):
            orphans = con.execute(
                f"SELECT count(*) FROM {table} WHERE doc_id NOT IN (SELECT doc_id FROM documents)"
            ).fetchone()[0]
            assert orphans == 0, table


def test_moved_file_keeps_its_doc_id(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf")
    index = tmp_path / "index"
    index_paths([folder], index)
    before = _docs(index)["a.pdf"]
    indexed_at = _indexed_at(index)
    (folder / "sub").mkdir()
    shutil.move(folder / "a.pdf", folder / "sub" / "renamed.pdf")
    report = index_paths([folder], index, prune=True)
    assert _docs(index) == {"renamed.pdf": before}
    assert not report.failed and not report.added and not report.updated and not report.removed
    assert [Path(p).name for p in report.moved] == ["renamed.pdf"]  # not read again:
    assert _indexed_at(index) == indexed_at  # its rows are the same rows, under the new path
    with open_store(index) as store:
        (path,) = store.sql().execute("SELECT path FROM documents").fetchone()
        assert path == str(folder / "sub" / "renamed.pdf")
        assert hybrid_search(store, "Marker alpha page 2").hits  # its entries still answer


def _indexed_at(index: Path):
    with open_store(index) as store:
        return store.sql().execute("SELECT indexed_at FROM documents").fetchone()[0]


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        index_paths([tmp_path / "nope"], tmp_path / "index")


def test_an_index_from_an_older_schema_is_indexed_again(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf")
    index = tmp_path / "index"
    index_paths([folder], index)
    with duckdb.connect(str(index / "index.duckdb")) as con:  # as an older docsym left it
        con.execute(f"UPDATE {schema.META_TABLE} SET value = '1' WHERE key = 'schema_version'")
        con.execute("DELETE FROM tree_nodes")
    report = index_paths([folder], index)
    assert [Path(p).name for p in report.updated] == ["a.pdf"] and report.ok
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        version = con.execute(
            f"SELECT value FROM {schema.META_TABLE} WHERE key = 'schema_version'"
        ).fetchone()[0]
        assert int(version) == migrations.MIGRATIONS[-1].version
        assert con.execute("SELECT count(*) FROM tree_nodes").fetchone()[0] > 0
    assert index_paths([folder], index).unchanged  # and now it is current


def test_workers_parse_in_parallel_into_the_same_index(tmp_path: Path) -> None:
    """--workers 2 and --dask local: documents parsed and embedded in two processes, written by
    one; the index holds the same rows as a one-process run, and a bad file is still reported."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for n, marker in enumerate(["alpha", "bravo", "charlie"], 1):
        pdf_factory.text_pdf(docs / f"{marker}.pdf", pages=n, marker=marker)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    one = index_paths([docs], tmp_path / "one")
    two = index_paths([docs], tmp_path / "two", workers=2)
    assert sorted(two.added) == sorted(one.added) and len(two.added) == 3
    assert [Path(p).name for p, _ in two.failed] == ["broken.pdf"]
    assert two.pages == one.pages == 6

    def contents(index: Path) -> dict[str, list]:
        with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
            return {
                t.name: sorted(con.execute(f"SELECT {t.primary_key} FROM {t.name}").fetchall())
                for t in schema.TABLES
            }

    assert contents(tmp_path / "two") == contents(tmp_path / "one")
    assert main(["check", "--index", str(tmp_path / "two")]) == 0
    # The same on a Dask cluster (a LocalCluster of two worker processes).
    dask = index_paths([docs], tmp_path / "dask", workers=2, dask="local")
    assert sorted(dask.added) == sorted(one.added)
    assert contents(tmp_path / "dask") == contents(tmp_path / "one")


def test_a_filtered_dense_search_sees_documents_indexed_after_it(tmp_path: Path) -> None:
    """Dense search keeps the entry ids a filter matches between calls; a new document must
    still be found by the same filter once it is published."""
    from docsym.storage.backends import open_store

    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf", marker="alpha")
    index = tmp_path / "index"
    index_paths([folder], index)
    store = open_store(index)
    vector = store.encoder_for("minilm").encode(["beta"])[0]

    def found_files() -> set[str]:
        hits = store.dense("minilm", vector, "e.table_name = ?", ["chunks"], limit=200)
        docs = {entry.doc_id for entry in store.entries([i for i, _ in hits]).values()}
        files = store.sql().execute("SELECT file_name, doc_id FROM documents").fetchall()
        return {name for name, doc_id in files if doc_id in docs}

    assert found_files() == {"a.pdf"}
    pdf_factory.text_pdf(folder / "b.pdf", marker="beta")
    index_paths([folder], index)
    assert found_files() == {"a.pdf", "b.pdf"}
    store.close()
