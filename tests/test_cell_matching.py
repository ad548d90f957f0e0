"""How lookup_cells matches labels to header paths and ranks the cells it finds
(``tools.tables.rank_cells``, ``language.labels``). Synthetic cells only."""

from __future__ import annotations

from typing import Any

from docsym.language.labels import acronym_words, label_core, label_key, stem
from docsym.tools.tables import EXACT, _grades, rank_cells


def match_path(labels: list[str], path: list[str] | None) -> int | None:
    """None unless every label matches some label of the path (its key is part of that label's
    key, or all its words are among that label's words, plurals and inflections aside, or it
    is the acronym of some of them: 'aircrafts' meets 'Aircraft rent', 'asm' meets 'Available
    seat miles'); else how many labels equal a path label exactly (keys equal)."""
    grades = _grades(labels, path)
    return None if grades is None else grades.count(EXACT)


def cell(row: int, col: int, row_path: list[str], col_path: list[str]) -> dict[str, Any]:
    return {"row": row, "col": col, "row_path": row_path, "col_path": col_path}


def grid(rows: list[list[str]], cols: list[list[str]]) -> list[dict[str, Any]]:
    return [cell(r, c, rp, cp) for r, rp in enumerate(rows) for c, cp in enumerate(cols)]


def first(cells: list[dict[str, Any]], rows: list[str], cols: list[str]) -> tuple[list, list]:
    found = rank_cells(cells, rows, cols)
    return found[0]["row_path"], found[0]["col_path"]


def test_one_spelling_for_percent_ordinals_and_quarters() -> None:
    assert label_key("Percent change") == label_key("% Change") == "% change"
    assert label_key("Percentage") == "%"
    assert label_key("2nd quarter") == label_key("Second Quarter") == label_key("Q2")
    assert match_path(["percentage"], ["% Increase (Decrease)"]) == 0
    assert match_path(["q3"], ["Third Quarter 2019 Share Repurchase"]) == 0
    assert match_path(["4th"], ["First Quarter"]) is None


def test_words_meet_their_plurals_and_inflections() -> None:
    assert stem("expenses") == stem("expense") and stem("renting") == stem("rent")
    assert stem("leased") == stem("lease") and stem("highest") == stem("High".lower())
    assert stem("2019") == "2019" and stem("status") == "status"
    assert match_path(["aircrafts", "renting"], ["Operating expense:", "Aircraft rent"]) == 0
    assert match_path(["passengers"], ["Passenger"]) == 0
    assert match_path(["lowest"], ["UAL", "2017", "Low"]) == 0
    assert match_path(["bookingz"], ["Gross Bookings (2)"]) is None


def test_a_label_matched_as_typed_outranks_one_matched_through_its_stem() -> None:
    cells = grid([["Pilots"]], [["Employee Group"], ["Approximate Number of Employees"]])
    assert first(cells, [], ["employees"])[1] == ["Approximate Number of Employees"]
    assert first(cells, [], ["employee"])[1] == ["Employee Group"]


def test_acronyms_stand_for_the_words_they_spell() -> None:
    cost = "Operating cost per available seat mile (cents)"
    spelled = ("cost", "per", "available", "seat", "mile")
    assert acronym_words("casm", cost) == {stem(w) for w in spelled}
    assert acronym_words("eps", "Diluted earnings per share") == {"earn", "per", "shar"}
    assert match_path(["casm"], [cost]) == 0
    assert match_path(["casm"], ["Operating revenue per available seat mile"]) is None
    assert not acronym_words("ps", "Per share")  # two letters are too few to trust
    # A word may read as an acronym too; a label holding it as typed comes first.
    cols = [["Average gross earnings"], ["Age"]]
    assert first(grid([["Pilots"]], cols), [], ["age"])[1] == ["Age"]
    rows = [["Revenue passenger miles (millions)"], ["Available seat miles (millions)"]]
    assert first(grid(rows, [["2018"]]), ["asm"], ["2018"])[0] == rows[1]


def test_paths_the_labels_explain_best_come_first() -> None:
    rows = [
        ["Operating revenue:", "Passenger revenue"],
        ["Operating revenue:", "Other operating revenue"],
        ["Operating revenue:", "Total operating revenue"],
    ]
    cells = grid(rows, [["2018"]])
    assert first(cells, ["operating", "revenue"], ["2018"])[0] == rows[2]
    assert first(cells, ["passenger", "revenue"], [])[0] == rows[0]
    # The share of each label explained counts, not the number of words left over.
    rows = [["Revenue passengers carried"], ["Passenger revenue per ASM"]]
    assert first(grid(rows, [["2018"]]), ["passenger", "revenue", "per"], [])[0] == rows[1]


def test_a_total_under_the_matched_group_is_the_group() -> None:
    rows = [["Intangible assets", "Route authorities"], ["Intangible assets", "Total"]]
    assert first(grid(rows, [["2018"]]), ["intangible", "assets"], ["2018"])[0] == rows[1]
    # Named, the member comes first: the total does not explain 'route authorities'.
    assert first(grid(rows, [["2018"]]), ["route"], [])[0] == rows[0]


def test_asides_and_function_words_are_not_what_a_label_names() -> None:
    assert label_core("Revenue passenger miles (RPMs) (in millions) (a)") == {
        stem(w) for w in ("revenue", "passenger", "miles")
    }
    assert label_core("(In millions, except percentages)") == frozenset()
    # '(in millions)' costs nothing: the two rows tie, and table order decides.
    rows = [["Passenger revenue (in millions)"], ["Passenger revenue"]]
    assert first(grid(rows, [["Domestic"]]), ["passenger", "revenue"], [])[0] == rows[0]
    cols = [["Employee Group"], ["Number of Employees"]]
    assert first(grid([["Pilots"]], cols), [], ["number", "employees"])[1] == cols[1]


def test_with_no_label_on_an_axis_its_total_comes_first_then_table_order() -> None:
    rows = [["737-700"], ["737-800"], ["Totals"]]
    cols = [["Owned"], ["Leased"], ["Total"]]
    cells = grid(rows, cols)
    assert first(cells, [], ["leased"]) == (["Totals"], ["Leased"])
    assert first(cells, ["737", "800"], []) == (["737-800"], ["Total"])
    found = rank_cells(cells, [], ["owned"])
    assert [c["row_path"][0] for c in found] == ["Totals", "737-700", "737-800"]


def test_exact_labels_still_come_first() -> None:
    rows = [["BM25+RM3"], ["BM25"]]
    assert first(grid(rows, [["Recall@5"]]), ["bm25"], [])[0] == ["BM25"]
    assert [c["row"] for c in rank_cells(grid(rows, [["MRR"]]), ["bm25"], [])] == [1, 0]


def test_case_spaces_and_punctuation_do_not_tell_labels_apart() -> None:
    assert match_path(["grobid nn"], ["GrobidNN"]) == 1
    assert match_path(["grobidnn"], ["Grobid NN"]) == 1
    assert match_path(["top-100"], ["Top 100"]) == 1
    assert match_path(["grobid nn"], ["GrobidNN (ours)"]) == 0
    assert match_path(["grobid nn"], ["GrobidCRF"]) is None


def test_a_one_letter_label_names_a_whole_word_only() -> None:
    cells = grid([["GrobidNN"]], [["Full", "P"], ["Full", "R"], ["Grobid Subset", "F1"]])
    assert [c["col_path"] for c in rank_cells(cells, [], ["r"])] == [["Full", "R"]]
    assert match_path(["r"], ["R (%)"]) == 0
    assert match_path(["r"], ["Recall"]) is None
