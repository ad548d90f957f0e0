"""get_table and lookup_cells over real tables with multi-level headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsym.storage.backends import open_store
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.sql import run_sql
from docsym.tools.tables import FORMATS, get_table, lookup_cells

SAMPLES = Path(__file__).resolve().parent.parent / "docsym" / "samples"


def table_id(store: Store, file_name: str, label: str) -> str:
    row = (
        store.sql()
        .execute(
            "SELECT t.table_id FROM tables t JOIN documents d USING (doc_id) "
            "WHERE d.file_name = ? AND t.label = ?",
            [file_name, label],
        )
        .fetchone()
    )
    assert row is not None, f"{label} of {file_name} is not in the index"
    return row[0]


@pytest.fixture(scope="module")
def report_table_1(sample_store: Store) -> str:
    return table_id(sample_store, "hybrid-retrieval-report.pdf", "Table 1")


def test_markdown_joins_header_levels_per_column(sample_store: Store, report_table_1: str):
    view = get_table(sample_store, report_table_1)
    lines = view.content.splitlines()
    assert lines[0] == (
        "| Family | Method | Recall@5 › Maintenance | Recall@5 › Installation | Recall@5 › Safety "
        "| MRR › Maintenance | MRR › Installation | MRR › Safety |"
    )
    assert lines[1] == "|" + "---|" * 8
    # One line per body row; the outer row label is repeated so each line reads on its own.
    assert len(lines) == 2 + view.n_rows - view.header_rows
    assert "| Hybrid | RRF | 0.91 | 0.87 | 0.88 | 0.71 | 0.68 | 0.70 |" in lines
    assert "| Sparse | BM25+RM3 | 0.80 |" in view.content
    assert (view.page_number, view.label, view.header_rows, view.header_cols) == (
        3,
        "Table 1",
        2,
        2,
    )
    assert view.caption.startswith("Table 1: Retrieval quality")
    assert len(view.bbox) == 4 and view.bbox[0] < view.bbox[2]
    assert not view.truncated and view.note is None and view.cells == []


def test_html_keeps_spans_and_header_cells(sample_store: Store, report_table_1: str):
    view = get_table(sample_store, report_table_1, format="html")
    assert view.content.startswith("<table>")
    assert '<th colspan="3" scope="colgroup">Recall@5</th>' in view.content
    assert "<td>0.91</td>" in view.content
    assert view.format == "html" and not view.truncated


def test_cells_carry_header_paths(sample_store: Store, report_table_1: str):
    view = get_table(sample_store, report_table_1, format="cells")
    assert view.content == ""
    by_position = {(c["row"], c["col"]): c for c in view.cells}
    cell = by_position[(7, 2)]
    assert cell["text"] == "0.91" and cell["value"] == pytest.approx(0.91)
    assert cell["row_path"] == ["Hybrid", "RRF"]
    assert cell["col_path"] == ["Recall@5", "Maintenance"]
    assert not cell["is_col_header"] and not cell["is_row_header"]
    assert len(cell["bbox"]) == 4
    assert by_position[(0, 2)]["col_span"] == 3 and by_position[(0, 2)]["is_col_header"]
    assert cell["cell_id"] == f"{view.table_id}-r7c2"
    assert set(cell) == {
        "cell_id",
        "doc_id",
        "page_number",
        "row",
        "col",
        "row_span",
        "col_span",
        "text",
        "value",
        "unit",
        "is_col_header",
        "is_row_header",
        "row_path",
        "col_path",
        "bbox",
        "address",
    }
    assert cell["address"] is None  # a PDF's cell has a box, not a sheet address


@pytest.mark.parametrize("fmt", FORMATS)
def test_max_cells_cuts_whole_rows_and_says_how_to_get_the_rest(
    sample_store: Store, report_table_1: str, fmt: str
):
    view = get_table(sample_store, report_table_1, format=fmt, max_cells=20)
    assert view.truncated
    assert "max_cells=20" in view.note
    rest_sql = view.note.split('run_sql "')[1].split('"')[0]
    rest = run_sql(sample_store, rest_sql, limit=200)
    shown = int(rest_sql.split("row >= ")[1].split()[0])
    assert 0 < shown < view.n_rows
    assert {row[0] for row in rest.rows} == set(range(shown, view.n_rows))
    if fmt == "cells":
        assert len(view.cells) <= 20
        assert max(c["row"] for c in view.cells) == shown - 1
    elif fmt == "markdown":
        assert len(view.content.splitlines()) == 2 + shown - view.header_rows
        assert "0.91" not in view.content
    else:
        assert view.content.count("<tr>") == shown and view.content.endswith("</table>")


def test_unknown_format_lists_the_formats(sample_store: Store, report_table_1: str):
    with pytest.raises(ToolError) as refused:
        get_table(sample_store, report_table_1, format="csv")
    assert "markdown, html, cells" in str(refused.value)


@pytest.mark.parametrize("max_cells", [0, 10_001])
def test_max_cells_is_bounded(sample_store: Store, report_table_1: str, max_cells: int):
    with pytest.raises(ToolError) as refused:
        get_table(sample_store, report_table_1, max_cells=max_cells)
    assert "max_cells must be between 1 and 10000" in str(refused.value)


@pytest.mark.parametrize("bad_id", ["nope-t0", "../../etc/passwd", "/etc/passwd", "x' OR '1'='1"])
def test_unknown_and_path_like_table_ids_are_refused(sample_store: Store, bad_id: str):
    with pytest.raises(NotFoundError) as refused:
        get_table(sample_store, bad_id)
    assert "SELECT table_id, label, caption FROM tables WHERE doc_id" in str(refused.value)
    with pytest.raises(NotFoundError):
        lookup_cells(sample_store, bad_id, ["a"])


def test_lookup_cells_finds_value_by_header_paths(sample_store: Store, report_table_1: str):
    found = lookup_cells(
        sample_store, report_table_1, ["Hybrid", "RRF"], ["Recall@5", "Maint"]
    ).cells
    assert len(found) == 1
    assert found[0]["value"] == pytest.approx(0.91)
    assert found[0]["row_path"] == ["Hybrid", "RRF"]
    assert found[0]["table_id"] == report_table_1
    assert len(found[0]["bbox"]) == 4


def test_lookup_cells_is_case_insensitive_and_returns_data_cells_only(
    sample_store: Store, report_table_1: str
):
    found = lookup_cells(sample_store, report_table_1, ["hybrid"], ["mrr"]).cells
    assert [c["value"] for c in found] == pytest.approx([0.67, 0.63, 0.66, 0.71, 0.68, 0.70])
    assert not any(c["is_row_header"] or c["is_col_header"] for c in found)
    assert len(lookup_cells(sample_store, report_table_1, limit=5).cells) == 5


def test_lookup_cells_prefers_exact_labels(sample_store: Store, report_table_1: str):
    # 'BM25' is a substring of both 'BM25' and 'BM25+RM3': the exact label comes first.
    found = lookup_cells(sample_store, report_table_1, ["BM25"], ["Recall@5", "Safety"]).cells
    assert [c["row_path"][-1] for c in found] == ["BM25", "BM25+RM3"]


def test_lookup_cells_without_match_lists_the_paths(sample_store: Store, report_table_1: str):
    with pytest.raises(NotFoundError) as refused:
        lookup_cells(sample_store, report_table_1, ["ColBERT"])
    assert "[Hybrid › RRF]" in str(refused.value)
    assert "[Recall@5 › Maintenance]" in str(refused.value)


def test_lookup_cells_checks_its_arguments(sample_store: Store, report_table_1: str):
    with pytest.raises(ToolError, match="list of strings"):
        lookup_cells(sample_store, report_table_1, "Hybrid")  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="limit must be"):
        lookup_cells(sample_store, report_table_1, limit=0)


def test_nics_value_by_group_and_sub_header(corpus_store: Store, corpus_db):
    """A cell under a group header is found by its group and sub-header, the header lines
    above the table's rows of numbers being its header (the NICS page: one wide table under two
    header lines, read from the session's corpus index)."""
    from tests.conftest import doc_id_of

    nics = doc_id_of(corpus_db, "nics-background-checks-2015-11.pdf")
    (table,) = corpus_db.execute("SELECT table_id FROM tables WHERE doc_id = ?", [nics]).fetchall()
    found = lookup_cells(corpus_store, table[0], ["Alabama"], ["Redemption", "Handgun"]).cells
    assert found[0]["text"] == "2,179"
    assert found[0]["col_path"] == ["Redemption", "Handgun"]
    found = lookup_cells(corpus_store, table[0], ["Texas"], ["Private Sale", "Long Gun"]).cells
    assert found[0]["value"] == pytest.approx(36)


def test_dpr_table_2_value_by_paths(corpus_index, corpus_db):
    from tests.conftest import doc_id_of

    store = open_store(corpus_index[0])
    dpr = doc_id_of(corpus_db, "2004.04906v3_dpr.pdf")
    (dpr_table_2,) = corpus_db.execute(
        "SELECT table_id FROM tables WHERE doc_id = ? AND label = 'Table 2'", [dpr]
    ).fetchone()
    found = lookup_cells(store, dpr_table_2, ["Multi", "BM25 + DPR"], ["Top-100", "TREC"]).cells
    assert found[0]["value"] == pytest.approx(94.1)
    view = get_table(store, dpr_table_2)
    assert view.page_number == 5
    assert "94.1" in view.content and "Top-100 › TREC" in view.content


def test_table_structure_doubts_reach_the_client(corpus_index, corpus_db):
    """A table read from a turned page says so, with a confidence below 1; a clean one does
    not."""
    from tests.conftest import doc_id_of

    store = open_store(corpus_index[0])
    hydrology = doc_id_of(corpus_db, "jhydrol_2005_flow_duration_curves.pdf")
    (sideways,) = corpus_db.execute(
        "SELECT table_id FROM tables WHERE doc_id = ? AND label = 'Table 1'", [hydrology]
    ).fetchone()
    view = get_table(store, sideways)
    assert view.page_number == 5
    assert view.confidence < 1.0
    assert any(d.startswith("read sideways") for d in view.doubts)
    assert "Structure confidence" in view.to_markdown() and "view_page" in view.to_markdown()
    dpr = doc_id_of(corpus_db, "2004.04906v3_dpr.pdf")
    (clean,) = corpus_db.execute(
        "SELECT table_id FROM tables WHERE doc_id = ? AND label = 'Table 2'", [dpr]
    ).fetchone()
    view = get_table(store, clean)
    assert (view.confidence, view.doubts) == (1.0, [])
    assert "Structure confidence" not in view.to_markdown()
