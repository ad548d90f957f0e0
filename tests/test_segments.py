"""An index published in segments (``storage/directory/segments.py``) reads exactly as the same
library indexed into one file, through additions, changes, moves and removals, and goes back to one
file when a run ends small. The segment size is set tiny so a few small documents make many
segments, merges and tombstones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage import schema
from docsym.storage.backends import open_store
from docsym.storage.directory import segments
from docsym.storage.paths import IndexPaths
from docsym.tools.search import hybrid_search
from tests.bad_files import write_control

WORDS = ["aardvark", "bandicoot", "capybara", "dugong", "echidna", "fossa", "gharial", "hyrax"]


@pytest.fixture
def segmented(settings) -> None:
    """Every publish freezes the head (a segment per document), and no run consolidates."""
    settings(segment_mb=0.0001, consolidate_mb=0, publish_seconds=0)


def _library(folder: Path) -> None:
    folder.mkdir()
    for n, word in enumerate(WORDS):
        write_control(folder / f"{word}.md", f"The {word} number {n} was counted at dusk.")


def _rows(index: Path) -> dict[str, list]:
    """Every view's keys (its primary key, else its doc ids), sorted."""
    with open_store(index) as store:
        found = {}
        for table in schema.TABLES:
            keys = [c.name for c in table.columns if c.primary_key] or ["doc_id"]
            rows = store.sql().execute(f"SELECT {', '.join(keys)} FROM {table.name}").fetchall()
            found[table.name] = sorted(map(repr, rows))
        return found


def _found(index: Path, word: str) -> bool:
    """Whether a hybrid search for ``word`` returns a passage holding it."""
    with open_store(index) as store:
        hits = hybrid_search(store, word, limit=5).hits
    return any(word in hit.text for hit in hits)


def _manifest(index: Path) -> list[str]:
    return json.loads(IndexPaths(index).manifest.read_text())["segments"]


def test_a_segmented_library_reads_as_one_file_through_every_change(
    tmp_path: Path, segmented: None, settings
) -> None:
    folder, index = tmp_path / "library", tmp_path / "index"
    _library(folder)
    index_paths([folder], index)
    listed = _manifest(index)
    assert 1 <= len(listed) <= 4, f"segments merge geometrically: {listed}"
    assert not IndexPaths(index).duckdb.exists()  # replaced by its segments
    assert _found(index, "dugong")

    files = IndexPaths(index)
    stray = files.segments / "g99999999-1.duckdb"  # frozen by a run killed before publishing
    shutil.copyfile(files.root / listed[-1], stray)

    write_control(folder / "aardvark.md", "The aardvark was moved to the okapi enclosure.")
    (folder / "bandicoot.md").unlink()
    (folder / "moved").mkdir()
    (folder / "capybara.md").rename(folder / "moved" / "capybara-renamed.md")
    index_paths([folder], index, prune=True)

    settings(segment_mb=64, consolidate_mb=0, publish_seconds=30)
    fresh = tmp_path / "fresh"
    index_paths([folder], fresh)
    assert _rows(index) == _rows(fresh)
    assert not _found(index, "bandicoot"), "a removed document's rows are hidden"
    with open_store(index) as store:
        paths = {p for (p,) in store.sql().execute("SELECT path FROM documents").fetchall()}
        through_views = {
            t.name: store.sql().execute(f"SELECT count(*) FROM {t.name}").fetchone()[0]
            for t in schema.TABLES
        }
        assert store.row_counts() == through_views, "counted per segment, less what is hidden"
    assert str(folder / "moved" / "capybara-renamed.md") in paths
    segment_files = {p.name for p in files.segments.iterdir()}
    assert not stray.exists(), "a segment never published is removed by the next run"
    assert segment_files == {Path(name).name for name in _manifest(index)}, "no stray segment"


def test_a_run_ending_small_leaves_one_file(tmp_path: Path, segmented: None, settings) -> None:
    folder, index = tmp_path / "library", tmp_path / "index"
    _library(folder)
    index_paths([folder], index)
    before = _rows(index)
    assert IndexPaths(index).manifest.exists()

    settings(consolidate_mb=256)  # the default: this library is far smaller
    write_control(folder / "ibex.md", "The ibex climbed the dam.")
    index_paths([folder], index)
    paths = IndexPaths(index)
    assert paths.duckdb.exists() and not paths.manifest.exists()
    assert not list(paths.segments.glob("*")), "the segments went with the manifest"
    after = _rows(index)
    assert set(before["documents"]) < set(after["documents"])
    assert all(set(before[t]) <= set(after[t]) for t in before)


def test_a_merge_adds_its_rows_ordered_by_document(tmp_path: Path) -> None:
    """Rows merged into a segment come in doc_id order, so each block of a large segment holds
    a narrow range of documents and a statement about one document skips the others' blocks."""
    folder, index = tmp_path / "library", tmp_path / "index"
    _library(folder)
    index_paths([folder], index)  # small: one file, rows in the order the documents came
    target = tmp_path / "target.duckdb"
    with duckdb.connect(str(target)) as con:
        for statement in schema.ddl():
            con.execute(statement)
        con.execute(
            f"INSERT INTO {schema.META_TABLE} VALUES (?, 'doc_id')", [segments.IN_ORDER_KEY]
        )
    assert segments.in_document_order(target)
    segments.merge_into(target, IndexPaths(index).duckdb)
    assert not segments.in_document_order(target), "a merge appends a run: not whole in order"

    def in_file_order(path: Path, table: str) -> list[str]:
        with duckdb.connect(str(path), read_only=True) as con:
            rows = con.execute(f"SELECT doc_id FROM {table} ORDER BY rowid").fetchall()
        return [doc_id for (doc_id,) in rows]

    came = in_file_order(IndexPaths(index).duckdb, "chunks")
    assert came != sorted(came), "the documents came in id order: nothing to test"
    for table in segments.DOC_TABLES:
        merged = in_file_order(target, table)
        assert merged == sorted(merged), table
        assert sorted(merged) == sorted(in_file_order(IndexPaths(index).duckdb, table))


def test_a_run_ends_with_its_large_segments_whole_in_document_order(
    tmp_path: Path, segmented: None
) -> None:
    """Merges leave a segment in runs; a run's end rewrites each large segment whole in
    document order (here every one: DOCSYM_CONSOLIDATE_MB is 0), and the index reads the same."""
    folder, index = tmp_path / "library", tmp_path / "index"
    _library(folder)
    index_paths([folder], index)
    listed = [index / name for name in _manifest(index)]
    assert listed and all(segments.in_document_order(path) for path in listed)
    for path in listed:
        with duckdb.connect(str(path), read_only=True) as con:
            for table in segments.DOC_TABLES:
                rows = con.execute(f"SELECT doc_id FROM {table} ORDER BY rowid").fetchall()
                assert rows == sorted(rows), (path.name, table)
    assert {p.name for p in IndexPaths(index).segments.iterdir()} == {p.name for p in listed}
    assert _found(index, "dugong")


def test_a_rewrite_in_document_order_that_fails_leaves_the_segments_as_published(
    tmp_path: Path, segmented: None, monkeypatch, caplog
) -> None:
    """The ordering comes after the run's last publish: a full disk there leaves the segments
    as they were (no partial file), says which in one line, and the run still succeeds."""
    folder, index = tmp_path / "library", tmp_path / "index"
    _library(folder)

    def full(source: Path, target: Path) -> None:
        target.write_bytes(b"half a segment")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(segments, "write_in_document_order", full)
    index_paths([folder], index)
    listed = [index / name for name in _manifest(index)]
    assert listed and not any(segments.in_document_order(path) for path in listed)
    assert {p.name for p in IndexPaths(index).segments.iterdir()} == {p.name for p in listed}
    assert "not rewritten in document order: [Errno 28] No space left on device" in caplog.text
    assert _found(index, "dugong")
