"""Table structure checks: each doubt on a grid that has it, none on a clean grid."""

from __future__ import annotations

from docsym.indexer.model import TableCell
from docsym.indexer.table_checks import check_structure
from docsym.indexer.table_model import finish_table


def _table(rows: list[list[str]], header_rows: int = 1):
    cells = [
        TableCell(row=r, col=c, text=text)
        for r, row in enumerate(rows)
        for c, text in enumerate(row)
        if text
    ]
    return finish_table(cells, ordinal=0, page_number=1, bbox=(0, 0, 1, 1), header_rows=header_rows)


CLEAN = [
    ["Model", "NQ", "TREC"],
    ["BM25", "59.1", "66.9"],
    ["DPR", "78.4", "79.8"],
    ["Hybrid", "76.6", "79.8"],
]


def test_a_clean_grid_has_no_doubts() -> None:
    table = check_structure(_table(CLEAN))
    assert (table.confidence, table.doubts) == (1.0, [])


def test_words_in_a_value_column_are_doubted() -> None:
    rows = [*CLEAN, ["ANCE", "see text", "81.2"], ["ColBERT", "not run", "80.1"]]
    table = check_structure(_table(rows))
    assert table.doubts == ["mixed columns: numbers and text share column(s) [1]"]
    assert table.confidence == 0.8


def test_columns_sharing_a_path_are_doubted() -> None:
    rows = [["Model", "Score", "Score"], *CLEAN[1:]]
    table = check_structure(_table(rows))
    assert table.doubts == ["shared column paths: ['Score'] name more than one column"]


def test_values_without_a_header_and_extractor_doubts_add_up() -> None:
    rows = [["Model", "NQ", ""], ["BM25", "59.1", "66.9"], ["DPR", "78.4", "79.8"]]
    table = check_structure(_table(rows), ["no caption: found from rows of numbers"])
    assert table.doubts == [
        "values without a column header: 2 of 4 cells",
        "no caption: found from rows of numbers",
    ]
    assert table.confidence == 0.6


def test_sparse_rows_are_doubted_but_section_labels_are_not() -> None:
    wide = ["Model", "A", "B", "C", "D", "E"]
    body = [["BM25", "1", "2", "3", "4", "5"], ["DPR", "6", "7", "8", "9", "10"]]
    sections = check_structure(_table([wide, ["Sparse"], body[0], ["Dense"], body[1]]))
    assert not any(d.startswith("sparse rows") for d in sections.doubts)
    broken = [wide, *body, ["", "", "11", "", "", ""], ["", "", "", "12", "", ""]]
    table = check_structure(_table(broken))
    assert any(d.startswith("sparse rows: 2 body rows") for d in table.doubts)
