"""The format-independent table model: numbers, header depths, row sections and header paths;
and what is built on the paths: row/column summaries (H-RCL) and get_table's header trees.

Synthetic grids only (no corpus): hand-written edge cases, and hypothesis-generated hierarchical
tables whose every data cell must get back the row path and column path it was generated under.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsym.indexer.model import Table, TableCell
from docsym.indexer.table_model import finish_table, is_data_text, is_year, parse_number
from docsym.indexer.table_summaries import MAX_CHARS, summarise_rows_and_columns, table_title
from docsym.tools.tables import header_tree


def cell(row: int, col: int, text: str, row_span: int = 1, col_span: int = 1) -> TableCell:
    return TableCell(row=row, col=col, text=text, row_span=row_span, col_span=col_span)


def finish(cells: list[TableCell], **depths: int) -> Table:
    return finish_table(cells, ordinal=0, page_number=1, bbox=(0, 0, 100, 100), **depths)


def at(table: Table, row: int, col: int) -> TableCell:
    return next(c for c in table.cells if (c.row, c.col) == (row, col))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(27)%", (-27.0, "%")),
        ("(3.5 )%", (-3.5, "%")),
        ("1,234 (1)", (1234.0, None)),
        ("$ (496) (2)", (-496.0, "$")),
        ("27 % (a)", (27.0, "%")),
        ("93¹", (93.0, None)),
        ("12.0ᵃ", (12.0, None)),
        ("USD 1,200", (1200.0, "USD")),
        ("1.5 million", (1.5, "million")),
        ("1\u202f234\u202f567", (1234567.0, None)),
        ("€2,000", (2000.0, "€")),
        ("US$ 5", (5.0, "$")),
        ("2.5×", (2.5, "×")),
        ("n/m", (None, None)),
        ("$ —", (None, None)),
        ("—%", (None, None)),
        ("Trips (2)", (None, None)),
        ("(2), (3)", (None, None)),
        ("100 200", (None, None)),  # two numbers run together are not one
    ],
)
def test_parse_number_reports_and_papers(text: str, expected: tuple) -> None:
    value, unit = parse_number(text)
    assert unit == expected[1]
    assert value is None if expected[0] is None else value == pytest.approx(expected[0])


@given(
    magnitude=st.integers(min_value=0, max_value=10**12),
    decimals=st.sampled_from(["", ".5", ".25", ".125"]),
    negative=st.booleans(),
    style=st.sampled_from(["plain", "paren", "minus"]),
    affix=st.sampled_from(["", "$", "€", "%"]),
    mark=st.sampled_from(["", "*", "†", " (1)", "[2]"]),
)
def test_parse_number_round_trips_formatted_values(
    magnitude: int, decimals: str, negative: bool, style: str, affix: str, mark: str
) -> None:
    number = f"{magnitude:,}{decimals}"
    if negative and style == "paren":
        number = f"({number})"
    elif negative:
        number = f"−{number}" if style == "minus" else f"-{number}"
    text = f"{affix} {number}" if affix in ("$", "€") else number + affix
    value, unit = parse_number(text + mark)
    expected = float(f"{magnitude}{decimals}") * (-1 if negative else 1)
    assert value == pytest.approx(expected)
    assert unit == (affix or None)


def test_values_placeholders_ranges_and_years() -> None:
    assert all(is_data_text(t) for t in ["1,234", "—", "$ —", "— %", "(102.7–103.6)", "2 to 4"])
    assert not any(is_data_text(t) for t in ["Revenue", "Top-20", "", "BM25 + DPR", "Q1–Q2"])
    assert all(is_year(t) for t in ["2021", "2017 (a)", "2019–20", "2020 to 2021"])
    assert not any(is_year(t) for t in ["1,999", "3000", "21"])


def statement() -> list[TableCell]:
    """A financial statement: a year header under a units note, sections spanning the row or
    alone in the first column, dashes for zero, and a total."""
    return [
        cell(0, 0, "(In millions)"),
        cell(0, 1, "Year Ended December 31,", col_span=2),
        cell(1, 1, "2021"),
        cell(1, 2, "2020 (a)"),
        cell(2, 0, "Americas", col_span=3),
        cell(3, 0, "Mobility"),
        cell(3, 1, "$ 6,953"),
        cell(3, 2, "$ 6,089"),
        cell(4, 0, "Delivery"),
        cell(4, 1, "—"),
        cell(4, 2, "(27)%"),
        cell(5, 0, "Europe:"),
        cell(6, 0, "Mobility"),
        cell(6, 1, "1,100"),
        cell(6, 2, "$ —"),
    ]


def test_row_sections_become_row_path_prefixes_not_column_headers() -> None:
    table = finish(statement())
    assert (table.header_rows, table.header_cols) == (2, 1)
    assert at(table, 3, 1).row_path == ["Americas", "Mobility"]
    assert at(table, 3, 1).col_path == ["Year Ended December 31,", "2021"]
    assert at(table, 3, 1).value == 6953.0 and at(table, 3, 1).unit == "$"
    assert at(table, 4, 2).row_path == ["Americas", "Delivery"]
    assert at(table, 4, 2).col_path == ["Year Ended December 31,", "2020 (a)"]
    assert at(table, 4, 2).value == -27.0 and at(table, 4, 2).unit == "%"
    assert at(table, 6, 1).row_path == ["Europe:", "Mobility"]
    americas = at(table, 2, 0)
    assert americas.is_row_header and not americas.is_col_header
    assert americas.row_path == ["Americas"]
    # the units note is part of the header above the row labels
    assert at(table, 3, 0).col_path == ["(In millions)"]


def test_section_right_under_the_header_is_released_from_the_inferred_header() -> None:
    cells = [
        cell(0, 0, "Model"),
        cell(0, 1, "NQ"),
        cell(0, 2, "TREC"),
        cell(1, 0, "Multi-task models"),
        cell(2, 0, "DPR"),
        cell(2, 1, "79.4"),
        cell(2, 2, "89.1"),
    ]
    table = finish(cells)
    assert table.header_rows == 1
    assert at(table, 2, 2).row_path == ["Multi-task models", "DPR"]
    assert at(table, 2, 2).col_path == ["TREC"]
    # a depth the parser states is kept as it is
    assert finish(cells, header_rows=2).header_rows == 2


def test_title_row_above_the_header_stays_in_the_header() -> None:
    cells = [
        cell(0, 0, "Financial highlights"),
        cell(1, 1, "2021"),
        cell(1, 2, "2020"),
        cell(2, 0, "Revenue"),
        cell(2, 1, "17,455"),
        cell(2, 2, "11,139"),
    ]
    table = finish(cells)
    assert table.header_rows == 2
    assert at(table, 2, 1).row_path == ["Revenue"] and at(table, 2, 1).col_path == ["2021"]


def test_a_table_that_starts_with_values_has_no_header_rows() -> None:
    cells = [cell(r, 0, name) for r, name in enumerate(["Goodwill", "Other assets", "Total"])]
    cells += [cell(r, c, f"{r + 1},{c}00") for r in range(3) for c in (1, 2)]
    table = finish(cells)
    assert (table.header_rows, table.header_cols) == (0, 1)
    assert at(table, 2, 2).row_path == ["Total"] and at(table, 2, 2).col_path == []
    assert at(table, 2, 2).value == 3200.0


def test_dash_rows_are_values_and_do_not_deepen_the_header() -> None:
    cells = [cell(0, 1, "Level 1"), cell(0, 2, "Level 2"), cell(0, 3, "Total")]
    cells += [cell(1, 0, "Money market funds"), cell(1, 1, "$ 2,386"), cell(1, 2, "$ —")]
    cells += [cell(1, 3, "$ 2,386"), cell(2, 0, "Commercial paper"), cell(2, 1, "—")]
    cells += [cell(2, 2, "611"), cell(2, 3, "611")]
    table = finish(cells)
    assert table.header_rows == 1
    assert at(table, 2, 2).col_path == ["Level 2"] and at(table, 2, 2).value == 611.0


def test_numeric_label_spanning_columns_does_not_make_a_header_row() -> None:
    cells = [cell(0, 2, "2020"), cell(0, 3, "2021")]
    cells += [cell(1, 0, "Monthly Active Platform Consumers", col_span=2), cell(1, 2, "93")]
    cells += [cell(1, 3, "118"), cell(2, 0, "Trips"), cell(2, 2, "5,025"), cell(2, 3, "6,368")]
    table = finish(cells)
    assert table.header_rows == 1
    assert at(table, 1, 3).row_path == ["Monthly Active Platform Consumers"]
    assert at(table, 1, 3).col_path == ["2021"] and at(table, 1, 3).value == 118.0


def test_text_column_after_numeric_keys_joins_the_left_header() -> None:
    """OTSL Table 1: '# enc-layers | # dec-layers | Language | TEDs simple …' per row pair."""
    cells = [
        cell(0, 0, "# enc-layers", row_span=2),
        cell(0, 1, "# dec-layers", row_span=2),
        cell(0, 2, "Language", row_span=2),
        cell(0, 3, "TEDs", col_span=2),
        cell(0, 5, "mAP", row_span=2),
        cell(1, 3, "simple"),
        cell(1, 4, "complex"),
    ]
    for r, (enc, dec) in zip((2, 4), [("6", "6"), ("4", "2")], strict=True):
        cells += [cell(r, 0, enc, row_span=2), cell(r, 1, dec, row_span=2)]
        for offset, language in enumerate(["OTSL", "HTML"]):
            cells.append(cell(r + offset, 2, language))
            cells += [cell(r + offset, c, f"0.9{r}{offset}{c}") for c in (3, 4, 5)]
    table = finish(cells)
    assert (table.header_rows, table.header_cols) == (2, 3)
    target = at(table, 5, 4)
    assert target.row_path == ["4", "2", "HTML"] and target.col_path == ["TEDs", "complex"]
    assert at(table, 2, 5).col_path == ["mAP"]


def test_flagged_header_cells_set_the_depths() -> None:
    cells = [
        cell(0, 0, "Region"),
        cell(0, 1, "Q1"),
        cell(1, 0, "Sales"),
        cell(1, 1, "Units"),
        cell(2, 0, "North"),
        cell(2, 1, "12"),
    ]
    for c in cells[:4]:
        c.is_col_header = True
    table = finish(cells)
    assert table.header_rows == 2
    assert at(table, 2, 1).col_path == ["Q1", "Units"]


def test_text_table_with_row_groups_keeps_the_labels_beside_the_groups() -> None:
    """A Yes/No grid: 'Regional' spans two rows, so the airline column still names each row."""
    cells = [cell(0, 0, "", col_span=2), cell(0, 2, "Codeshare"), cell(0, 3, "Frequent flyer")]
    cells += [cell(1, 0, "Major", row_span=2), cell(3, 0, "Regional", row_span=2)]
    for r, airline in enumerate(["Qantas", "Emirates", "PenAir", "Ravn"], 1):
        cells += [cell(r, 1, airline), cell(r, 2, "Yes"), cell(r, 3, "No")]
    table = finish(cells)
    assert (table.header_rows, table.header_cols) == (1, 2)
    assert at(table, 4, 3).row_path == ["Regional", "Ravn"]
    assert at(table, 4, 3).col_path == ["Frequent flyer"]
    # A column beside the groups that repeats its texts holds values, not row names.
    flags = [c for c in cells if c.col != 1] + [cell(r, 1, "True") for r in range(1, 5)]
    assert finish(flags).header_cols == 1
    # Without a label spanning rows, the first column stays the whole left header.
    plain = [cell(0, 0, "Airline"), cell(0, 1, "Codeshare"), cell(1, 0, "Qantas")]
    plain += [cell(1, 1, "Yes"), cell(2, 0, "PenAir"), cell(2, 1, "No")]
    assert finish(plain).header_cols == 1


# --- hierarchical tables generated by hypothesis ------------------------------------------

WORDS = [
    "Alpha", "Bravo", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliet", "Kilo",
    "Lima", "Mike", "November", "Oscar", "Papa", "Quebec", "Romeo", "Sierra", "Tango", "Uniform",
    "Victor", "Whiskey", "Xray", "Yankee", "Zulu", "Amber", "Basil", "Cedar", "Dune", "Ember",
    "Fjord", "Grove", "Heath", "Isle", "Jade", "Kelp", "Loch", "Moss", "Nook", "Onyx",
]  # fmt: skip


@st.composite
def header_trees(draw, max_depth: int) -> list[list[str]]:
    """Leaf paths of a random header tree: every leaf as [outermost label, ..., leaf label]."""
    depth = draw(st.integers(min_value=1, max_value=max_depth))
    names = iter(draw(st.permutations(WORDS)))

    def grow(level: int) -> list[list[str]]:
        if level == depth:
            return [[]]
        width = draw(st.integers(min_value=1 if level < depth - 1 else 2, max_value=3))
        paths: list[list[str]] = []
        for _ in range(width):
            name = next(names)
            paths += [[name, *rest] for rest in grow(level + 1)]
        return paths

    return grow(0)


def _spans(paths: list[list[str]], level: int) -> list[tuple[int, int, str]]:
    """(start, length, label) runs of one level: a parent label spans its children."""
    runs: list[tuple[int, int, str]] = []
    for i, path in enumerate(paths):
        if runs and paths[runs[-1][0]][: level + 1] == path[: level + 1]:
            start, length, label = runs[-1]
            runs[-1] = (start, length + 1, label)
        else:
            runs.append((i, 1, path[level]))
    return runs


def build_grid(
    cols: list[list[str]], rows: list[list[str]], sections: bool, values: list[str]
) -> list[TableCell]:
    """Cells of a table with these column and row paths. With ``sections`` the outer row level
    is printed as a label alone in its row above its group, else as a row-spanning cell."""
    top, left = len(cols[0]), 1 if sections else len(rows[0])
    cells = [cell(0, 0, "Item", row_span=top, col_span=left)]
    for level in range(top):
        for start, length, label in _spans(cols, level):
            cells.append(cell(level, left + start, label, col_span=length))
    grid_row: list[int] = []
    r, group = top, None
    for i, path in enumerate(rows):
        if sections and path[0] != group:
            cells.append(cell(r, 0, path[0]))
            group, r = path[0], r + 1
        if sections:
            cells.append(cell(r, 0, path[-1]))
        for j in range(len(cols)):
            cells.append(cell(r, left + j, values[(i * len(cols) + j) % len(values)]))
        grid_row.append(r)
        r += 1
    if not sections:
        for level in range(left):
            for start, length, label in _spans(rows, level):
                cells.append(cell(grid_row[start], level, label, row_span=length))
    return cells


@settings(max_examples=150, deadline=None)
@given(
    cols=header_trees(max_depth=3),
    rows=header_trees(max_depth=2),
    sections=st.booleans(),
    values=st.lists(
        st.builds(
            lambda v, style: style.format(v),
            st.integers(min_value=0, max_value=999_999),
            st.sampled_from(["{:,}", "$ {:,}", "({:,})", "{}.5%", "{:,} (1)"]),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_generated_hierarchical_tables_keep_every_path(
    cols: list[list[str]], rows: list[list[str]], sections: bool, values: list[str]
) -> None:
    sections = sections and len(rows[0]) == 2
    table = finish(build_grid(cols, rows, sections, values))
    assert table.header_rows == len(cols[0])
    assert table.header_cols == (1 if sections else len(rows[0]))
    data = [c for c in table.cells if not (c.is_col_header or c.is_row_header)]
    assert len(data) == len(cols) * len(rows)
    expected = {(tuple(r), tuple(c)) for r in rows for c in cols}
    assert {(tuple(c.row_path), tuple(c.col_path)) for c in data} == expected
    assert all(c.value is not None for c in data)


@settings(max_examples=60, deadline=None)
@given(cols=header_trees(max_depth=3), rows=header_trees(max_depth=2), sections=st.booleans())
def test_every_data_cell_has_its_row_and_column_summary(
    cols: list[list[str]], rows: list[list[str]], sections: bool
) -> None:
    sections = sections and len(rows[0]) == 2
    table = finish(build_grid(cols, rows, sections, ["1,234", "(56)", "7.5%", "—"]))
    summaries = summarise_rows_and_columns(table)
    by_path = {(s.axis, tuple(s.path)): s for s in summaries}
    assert len(by_path) == len(summaries)
    for c in table.cells:
        if c.is_col_header or c.is_row_header:
            continue
        assert any(c is x for x in by_path[("row", tuple(c.row_path))].cells)
        assert any(c is x for x in by_path[("col", tuple(c.col_path))].cells)
    for s in summaries:
        path = [tuple(c.row_path if s.axis == "row" else c.col_path) for c in s.cells]
        assert all(p[: s.level] == tuple(s.path) for p in path)
        assert len(s.text) <= MAX_CHARS + 200  # one long first item may overrun a little


def test_summaries_name_the_path_and_its_values() -> None:
    table = finish(statement()).model_copy(update={"label": "Table 2", "caption": None})
    summaries = summarise_rows_and_columns(table)
    texts = {(s.axis, " › ".join(s.path)): s.text for s in summaries}
    assert texts[("row", "Americas › Mobility")] == (
        "Table 2 — row Americas › Mobility: Year Ended December 31, › 2021 = $ 6,953; "
        "Year Ended December 31, › 2020 (a) = $ 6,089"
    )
    assert texts[("row", "Americas")].startswith("Table 2 — row Americas: Mobility › Year Ended")
    # "Europe:" holds one row only: its summary would repeat "Europe: › Mobility"
    assert ("row", "Europe:") not in texts and ("row", "Europe: › Mobility") in texts
    column = texts[("col", "Year Ended December 31, › 2021")]
    assert column.endswith(
        "Americas › Mobility = $ 6,953; Americas › Delivery = —; Europe: › Mobility = 1,100"
    )
    assert [s.ordinal for s in summaries if s.axis == "col"] == [0, 1, 2]


def test_summaries_are_bounded_and_boxed() -> None:
    cells = [cell(0, 0, "Metric")] + [cell(0, c, f"Split {c}") for c in range(1, 60)]
    cells += [cell(1, 0, "Recall")] + [
        TableCell(row=1, col=c, text=f"0.{c:02d}", bbox=(10.0 * c, 50, 10.0 * c + 8, 60))
        for c in range(1, 60)
    ]
    table = finish_table(
        cells, ordinal=3, page_number=7, bbox=(0, 40, 700, 62), caption="Table 4: " + "x " * 80
    )
    (row, *columns) = summarise_rows_and_columns(table)
    assert row.axis == "row" and len(row.cells) == 59
    assert len(row.text) <= MAX_CHARS and row.text.endswith("more)")
    assert row.text.startswith("Table 4 (x x x") and "…) — row Recall: Split 1 = 0.01;" in row.text
    assert row.bbox == (10.0, 50, 598.0, 60)
    assert len(columns) == 59 and columns[0].bbox == (10.0, 50, 18.0, 60)
    assert table_title(table.model_copy(update={"caption": None})) == "Table on page 7"


def test_header_trees_of_get_table() -> None:
    table = finish(statement())
    data = [c.model_dump() for c in table.cells if not (c.is_col_header or c.is_row_header)]
    (top,) = header_tree(data, "col")
    assert top.label == "Year Ended December 31," and top.span == [1, 2]
    assert [(n.label, n.span) for n in top.children] == [("2021", [1, 1]), ("2020 (a)", [2, 2])]
    left = header_tree(data, "row")
    assert [(n.label, n.span) for n in left] == [("Americas", [3, 4]), ("Europe:", [6, 6])]
    assert [n.label for n in left[0].children] == ["Mobility", "Delivery"]


# --- in the index ------------------------------------------------------------------------


# Searches for Table 1's row Hybrid › RRF and for its Recall@5 columns. MiniLM's cosines differ
# a little from CPU to CPU (int8 kernels differ by instruction set), so each dense assertion rests
# on a margin measured under DOCSYM_ENCODER=onnx-int8 and =onnx (fp32), and with AVX2's int8
# arithmetic (bench/int8_avx2.py); the first wording, "RRF hybrid Recall@5 on the Maintenance
# split", also matches Table 2 (the RRF constant on the Maintenance split), whose rows outscored
# Table 1's by 0.001-0.03 on one CPU or another.
ROW_QUESTION = "Recall@5 and MRR of the hybrid RRF retriever on each split"
COLUMN_QUESTION = (
    "Recall@5 Maintenance: Sparse BM25, Sparse BM25+RM3, Dense MiniLM, Dense E5-base, "
    "Hybrid Linear, Hybrid RRF"
)


def test_indexed_summaries_lead_to_their_table_and_cells(sample_store) -> None:
    """The sample report's Table 1: its row and column summaries are rows of table_summaries,
    embedded in both collections, and a search for a row and a column finds them."""
    from docsym.tools.search import vector_search

    con = sample_store.sql()
    (table_id,) = con.execute(
        "SELECT t.table_id FROM tables t JOIN documents d USING (doc_id) "
        "WHERE d.file_name = 'hybrid-retrieval-report.pdf' AND t.label = 'Table 1'"
    ).fetchone()
    rows = con.execute(
        "SELECT summary_id, axis, level, path, text, page_number, bbox, cell_count "
        "FROM table_summaries WHERE table_id = ? ORDER BY axis, summary_id",
        [table_id],
    ).fetchall()
    by_path = {(axis, tuple(path)): (sid, text, n) for sid, axis, _, path, text, _, _, n in rows}
    row_id, text, count = by_path[("row", ("Hybrid", "RRF"))]
    assert row_id.startswith(f"{table_id}-row") and count == 6
    assert "row Hybrid › RRF: Recall@5 › Maintenance = 0.91;" in text
    assert ("col", ("Recall@5",)) in by_path and ("col", ("Recall@5", "Maintenance")) in by_path
    column_id = by_path[("col", ("Recall@5", "Maintenance"))][0]
    assert all(page == 3 and len(bbox) == 4 for *_, page, bbox, _ in rows)
    entries = sample_store.entry_keys("e.table_name = 'table_summaries'", [])
    summaries = {i for i, (_, _, key) in entries.items() if key.startswith(f"{table_id}-")}
    assert {entries[i][2] for i in summaries} == {sid for sid, *_ in rows}
    for collection in ("bm25", "minilm"):
        assert summaries <= sample_store.collection_ids(collection), collection

    def search(question: str, collection: str) -> list:
        hits = vector_search(
            sample_store, question, collection, "table_summaries", "text", limit=3
        ).hits
        assert len(hits) == 3 and all(h.bbox is not None for h in hits)
        return hits

    # BM25's scores are the same on every machine: the row and the column themselves are found.
    assert row_id in [h.primary_key for h in search(ROW_QUESTION, "bm25")]
    assert column_id in [h.primary_key for h in search(COLUMN_QUESTION, "bm25")]
    # MiniLM: the row Hybrid › RRF comes first, ahead of every other summary of the index by a
    # cosine of 0.097 (int8), 0.080 (fp32) and 0.075 (AVX2's int8).
    hits = search(ROW_QUESTION, "minilm")
    assert hits[0].primary_key == row_id, [(h.primary_key, round(h.score, 3)) for h in hits]
    # MiniLM reads the column's header path and row labels, not which split it is (Recall@5
    # under Maintenance, Installation and Safety score within 0.03): the three hits are Table 1's
    # column summaries, the third ahead of any other summary by 0.114 (int8), 0.118 (fp32) and
    # 0.142 (AVX2's int8).
    hits = search(COLUMN_QUESTION, "minilm")
    assert all(h.primary_key.startswith(f"{table_id}-col") for h in hits), [
        (h.primary_key, round(h.score, 3)) for h in hits
    ]
