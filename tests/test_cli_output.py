"""The command line in a pipe: whole rows, JSON that is the tool's structured result, search hits
with their citations, and index progress as plain lines. Every command runs in a subprocess with
stdout and stderr piped, as a script or a log would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import docsym
from docsym.storage.store import Store
from docsym.tools.documents import index_status
from docsym.tools.search import HYBRID_SEARCH, VECTOR_SEARCH
from docsym.tools.sql import RUN_SQL
from tests import pdf_factory
from tests.conftest import REPO

# PDF page labels: two roman front pages, then 1, 2, ...: PDF page 5 is printed "3".
LABELS = [
    {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
    {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1},
]
PAGES = 30


def docsym_cli(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m docsym ARGS`` with stdout and stderr piped (no terminal)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = str(REPO)
    run = subprocess.run(
        [sys.executable, "-m", "docsym", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert run.returncode == 0, run.stderr
    return run


def tsv(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if not line.startswith("# ")]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """A 30-page PDF whose printed page numbers start on PDF page 3, indexed by the CLI in a
    pipe; the index and the run."""
    root = tmp_path_factory.mktemp("labelled")
    docs = root / "docs"
    docs.mkdir()
    pdf_factory.numbered_pages_pdf(docs / "manual.pdf", [""] * PAGES, LABELS)
    pdf_factory.text_pdf(docs / "note.pdf")
    run = docsym_cli("index", docs, "--index", root / "index")
    return root / "index", run


def test_version_names_the_installed_docsym() -> None:
    assert docsym_cli("--version").stdout == f"docsym {docsym.__version__}\n"


def test_sql_in_a_pipe_prints_whole_rows(sample_index: Path, sample_store: Store) -> None:
    sql = "SELECT doc_id, repeat(title, 8) AS long_title, page_count FROM documents ORDER BY doc_id"
    run = docsym_cli("sql", sql, "--index", sample_index)
    header, *rows = tsv(run.stdout)
    assert header == ["doc_id", "long_title", "page_count"]
    assert len(rows) == 2 == len(run.stdout.splitlines()) - 1  # one line per row, nothing else
    expected = RUN_SQL.run(sample_store, {"sql": sql}).rows
    assert rows == [[str(v) for v in row] for row in expected]
    assert all(len(row[1]) > 300 for row in rows)  # never folded at 80 columns


def test_sql_cells_keep_to_their_column(sample_index: Path) -> None:
    sql = "SELECT 'a\tb' AS tab, 'line\none' AS newline, [1, 2] AS list, NULL AS nothing"
    run = docsym_cli("sql", sql, "--index", sample_index)
    assert run.stdout.splitlines()[1] == "a\\tb\tline\\none\t[1, 2]\t"


def test_sql_json_is_the_tools_structured_result(sample_index: Path, sample_store: Store) -> None:
    sql = "SELECT page_id, page_number FROM pages ORDER BY page_id"
    run = docsym_cli("sql", sql, "--limit", "3", "--json", "--index", sample_index)
    expected = RUN_SQL.run(sample_store, {"sql": sql, "limit": 3}).model_dump(mode="json")
    assert json.loads(run.stdout) == expected
    assert expected["truncated"] and "more rows exist" in expected["note"]


def test_sql_limits_are_the_tools(sample_index: Path) -> None:
    run = docsym_cli("sql", "SELECT 1", "--limit", "5000", "--index", sample_index, check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert "less than or equal to 500" in run.stderr  # RunSqlArgs, as over MCP


def test_search_in_a_pipe_prints_each_hit_with_its_citation(
    sample_index: Path, sample_store: Store
) -> None:
    query = "effect of the RRF constant k"
    run = docsym_cli("search", query, "--limit", "5", "--index", sample_index)
    header, *rows = tsv(run.stdout)
    assert header == ["#", "score", "hit", "doc_id", "page", "bbox", "text"]
    hits = HYBRID_SEARCH.run(sample_store, {"query": query, "limit": 5}).hits
    assert [row[2] for row in rows] == [
        f"{h.table_name}.{h.column_name}:{h.primary_key}" for h in hits
    ]
    assert [row[3] for row in rows] == [h.doc_id for h in hits]
    assert [json.loads(row[5]) if row[5] else None for row in rows] == [h.bbox for h in hits]
    assert [row[6] for row in rows] == [h.text for h in hits]  # whole, not squeezed
    assert any(len(row[6]) > 200 for row in rows)
    assert "run_sql(" in run.stderr  # the result's note goes beside the rows, not among them


def test_search_json_is_the_tools_structured_result(
    sample_index: Path, sample_store: Store
) -> None:
    args = ("search", "RRF constant", "--collection", "bm25", "--view", "tables.caption")
    run = docsym_cli(*args, "--limit", "3", "--json", "--index", sample_index)
    arguments = {
        "query": "RRF constant",
        "collection": "bm25",
        "table_name": "tables",
        "column_name": "caption",
        "limit": 3,
    }
    expected = VECTOR_SEARCH.run(sample_store, arguments).model_dump(mode="json")
    assert json.loads(run.stdout) == expected
    assert expected["hits"] and expected["hits"][0]["bbox"]


def test_search_limits_are_the_tools(sample_index: Path) -> None:
    run = docsym_cli("search", "k", "--limit", "1000", "--index", sample_index, check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert "less than or equal to 100" in run.stderr


def test_search_cites_the_printed_page_label(labelled) -> None:
    index, _ = labelled
    run = docsym_cli("search", "Page body 5.", "--collection", "bm25", "--index", index)
    rows = tsv(run.stdout)[1:]
    on_page_5 = [row for row in rows if row[4].startswith("5 ")]
    assert on_page_5 and on_page_5[0][4] == "5 (printed 3)"


def test_status_in_a_pipe_and_as_json(sample_index: Path, sample_store: Store) -> None:
    status = index_status(sample_store)
    run = docsym_cli("status", "--index", sample_index)
    assert tsv(run.stdout) == [["view", "rows"]] + [
        [name, str(count)] for name, count in status.row_counts.items()
    ]
    as_json = docsym_cli("status", "--json", "--index", sample_index)
    assert json.loads(as_json.stdout) == status.model_dump(mode="json")


def test_index_in_a_pipe_prints_a_line_per_document(labelled) -> None:
    _, run = labelled
    lines = run.stderr.splitlines()
    assert lines[0] == "indexing 2 file(s)"
    done = sorted(line for line in lines[1:] if line.startswith("["))
    assert len(done) == 2 and done[0].startswith("[1/2]") and done[1].startswith("[2/2]")
    vectors = [line for line in lines[1:] if not line.startswith("[")]
    assert vectors == ["vectors written: 1/2 documents", "vectors written: 2/2 documents"]
    manual = next(line for line in done if line.endswith("manual.pdf"))
    assert f" {PAGES} pages  " in manual
    summary = dict(row for row in tsv(run.stdout))
    assert summary["added"] == "2" and summary["pages"] == str(PAGES + 2)  # and note.pdf's 2
