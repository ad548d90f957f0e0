"""Table structure against ground truth (bench/table_structure.py prints the same figures).

ICDAR 2013 cell structure (adjacency relations and cell texts of our PDF tables), AIT-QA tables
through the table model (header depths, paths, answer cells reachable by a path lookup with the
question's words) and docling's OTSL page 9 table. Floors sit a little under the measured values
(bench output quoted in each test) so a regression fails and noise does not.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.table_structure import (
    PR,
    GridCell,
    adjacency_relations,
    aitqa_cells,
    aitqa_score,
    docling_comparison,
    icdar_scores,
    question_words,
)
from docsym.indexer.table_model import finish_table


def test_adjacency_relations_follow_spans_and_skip_empty_cells() -> None:
    # | A (2 cols) | B |      A spans two columns; row 2 has an empty middle cell
    # | C  |       | D |
    cells = [
        GridCell(0, 0, 0, 1, "A"),
        GridCell(0, 2, 0, 2, "B"),
        GridCell(1, 0, 1, 0, "C"),
        GridCell(1, 2, 1, 2, "D"),
    ]
    assert adjacency_relations(cells) == Counter(
        {
            ("A", "B", "right"): 1,
            ("A", "C", "below"): 1,
            ("B", "D", "below"): 1,
            ("C", "D", "right"): 1,
        }
    )


def test_precision_recall_arithmetic() -> None:
    total = PR(3, 4, 6) + PR(1, 1, 2)
    assert (total.precision, total.recall) == (0.8, 0.5)
    assert total.f1 == pytest.approx(2 * 0.8 * 0.5 / 1.3)


def test_icdar2013_cell_structure(corpus: Path) -> None:
    # measured: eu-018 relations P 0.822 R 0.836, texts P 0.893 R 0.910;
    # both documents: relations P 0.911 R 0.624, texts P 0.940 R 0.668 (us-025 p.4 table missed)
    scores = {s.name: s for s in icdar_scores(corpus)}
    eu = scores["eu-018"]
    assert eu.our_tables == eu.truth_tables == 2
    assert eu.relations.precision >= 0.78 and eu.relations.recall >= 0.80
    relations = scores["eu-018"].relations + scores["us-025"].relations
    texts = scores["eu-018"].texts + scores["us-025"].texts
    assert relations.precision >= 0.88 and relations.recall >= 0.60
    assert texts.precision >= 0.91 and texts.recall >= 0.64


def test_aitqa_tables_through_the_table_model(corpus: Path) -> None:
    # measured: depths 89/113 tables, paths of 85.9% of data cells, 363/515 questions (70.5%)
    # reachable, 304/515 blind
    score = aitqa_score(corpus)
    assert (score.tables, score.questions) == (113, 515)
    assert score.depth_agreement >= 85
    assert score.path_agreement / score.data_cells >= 0.83
    assert score.answer_in_table >= 505
    assert score.reachable / score.questions >= 0.68
    assert score.blind / score.questions >= 0.56


def test_aitqa_hierarchical_row_headers_come_back_as_paths(corpus: Path) -> None:
    """tab-1: a 2-level column header and row paths under 'Consolidated (b)'."""
    records = (corpus / "tables/aitqa/aitqa_tables.jsonl").read_text().splitlines()
    record = next(r for r in map(json.loads, records) if r["id"] == "tab-1")
    table = finish_table(aitqa_cells(record), ordinal=0, page_number=1, bbox=(0, 0, 1, 1))
    assert (table.header_rows, table.header_cols) == (2, 2)
    by_pos = {(c.row, c.col): c for c in table.cells}
    for r, values in enumerate(record["data"]):
        for c, text in enumerate(values):
            cell = by_pos[(2 + r, 2 + c)]
            assert cell.text == text
            assert cell.row_path == [" ".join(p.split()) for p in record["row_header"][r]]
            assert cell.col_path == record["column_header"][c]


def test_question_words_drop_function_words() -> None:
    words = question_words("How much did United spend on aircraft fuel in 2016?")
    assert words == ["much", "united", "spend", "aircraft", "fuel", "2016"]


def test_otsl_page9_against_docling(corpus: Path) -> None:
    # measured: ours 10x8 (docling joins each OTSL/HTML pair of lines into one cell: 6x8),
    # header rows 2 = 2, all 8 column header paths read as docling's, data tokens P = R = 1.0
    d = docling_comparison(corpus)
    assert d.truth_shape == (6, 8) and d.our_shape[1] == 8
    assert d.our_header_rows == d.truth_header_rows == 2
    assert d.header_columns_matching == 8
    assert d.data_tokens.precision == d.data_tokens.recall == 1.0
    # the spanning header cells docling marks that a PDF can show as spans: TEDs over three
    # columns and Language over both header rows ('# enc-layers' is printed on two lines)
    assert ("TEDs", 0, 3, 1, 3) in d.our_spans and ("TEDs", 0, 3, 1, 3) in d.truth_spans
    assert ("Language", 0, 2, 2, 1) in d.our_spans
