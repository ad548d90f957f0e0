"""The bundled sample PDFs: regenerated from docsym.sample_docs, checked page by page, and compared
with the committed copies in docsym/samples/ (which ``docsym demo`` indexes)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from docsym import sample_docs
from docsym.sample_docs import (
    MAIN_RESULTS,
    NOTE_FILE,
    REPORT_FILE,
    SAMPLES_DIR,
    SPLITS,
    build_report,
    write_samples,
)

REPORT_HEADINGS = [
    "1 Introduction",
    "2 Background",
    "2.1 Sparse retrieval",
    "2.2 Dense retrieval",
    "2.3 Rank fusion",
    "3 Method",
    "3.1 Corpus and questions",
    "3.2 Retrievers",
    "3.3 Metrics",
    "4 Results",
    "4.1 Main comparison",
    "4.2 Sensitivity to the fusion constant",
    "4.3 Latency and error analysis",
    "5 Conclusion",
    "References",
    "Appendix A Question categories",
    "A.1 Category definitions",
    "A.2 Annotation procedure",
]

NOTE_OUTLINE = [
    (1, "1 Scope", 1),
    (1, "2 Service configuration", 1),
    (1, "3 Routine operations", 1),
    (2, "3.1 Daily checks", 1),
    (2, "3.2 Scheduled tasks", 1),
    (2, "3.3 Adding a manual", 2),
    (1, "4 Re-indexing", 2),
    (2, "4.1 When to re-index", 2),
    (2, "4.2 Procedure", 2),
    (1, "5 Backup and recovery", 2),
    (1, "6 Monitoring", 2),
    (1, "7 Escalation", 3),
    (1, "8 Revision history", 3),
]

# Facts the demo and the QA examples rely on: (file, page, text on that page).
FACTS = [
    (REPORT_FILE, 1, "1,240 questions drawn from 37 manuals"),
    (REPORT_FILE, 1, "reaching 0.91 Recall@5 on the Maintenance split"),
    (REPORT_FILE, 2, "passages of 256 word pieces with an overlap of 32 word pieces"),
    (REPORT_FILE, 2, "The original study recommends k = 60."),
    (REPORT_FILE, 2, "Cohen's kappa of 0.82"),
    (REPORT_FILE, 3, "Table 1: Retrieval quality of sparse, dense and hybrid retrievers"),
    (REPORT_FILE, 4, "48 ms for RRF"),
    (REPORT_FILE, 4, "Figure 1: Recall@5 on the Maintenance split"),
    (REPORT_FILE, 4, "MiniLM is weakest on Specification questions (0.64)"),
    (REPORT_FILE, 6, "Procedural questions are the largest category with 512 questions"),
    (NOTE_FILE, 1, "The service listens on port 8431"),
    (NOTE_FILE, 2, "Snapshots are retained for 35 days."),
    (NOTE_FILE, 2, "takes about 18 minutes on the production server"),
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    paths = write_samples(tmp_path_factory.mktemp("samples"))
    return {path.name: path for path in paths}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _page_texts(path: Path) -> list[str]:
    with pymupdf.open(path) as doc:
        return [page.get_text() for page in doc]


def test_write_samples_writes_both_small_files(generated: dict[str, Path]) -> None:
    assert sorted(generated) == sorted([REPORT_FILE, NOTE_FILE])
    for path in generated.values():
        assert path.stat().st_size < 200_000, path.name
        with pymupdf.open(path) as doc:
            assert doc.page_count >= 2
            assert doc.metadata["creationDate"].startswith("D:2024")
            assert doc.metadata["creationDate"] == doc.metadata["modDate"]


def test_report_metadata_and_no_outline(generated: dict[str, Path]) -> None:
    with pymupdf.open(generated[REPORT_FILE]) as doc:
        assert 5 <= doc.page_count <= 7
        assert doc.metadata["title"] == "Evaluating Hybrid Retrieval for Technical Manuals"
        assert doc.metadata["author"] == "Ana Whitcombe, Daniel Osei, Lena Marchetti"
        assert doc.metadata["creationDate"] == "D:20240315090000+00'00'"
        assert doc.get_toc() == []  # sections must come from the layout


def test_report_front_page(generated: dict[str, Path]) -> None:
    first = _flat(_page_texts(generated[REPORT_FILE])[0])
    assert first.startswith(
        "Evaluating Hybrid Retrieval for Technical Manuals Technical Report KARL-TR-2024-07"
    )
    assert "Ana Whitcombe, Daniel Osei and Lena Marchetti" in first
    assert "Abstract Field technicians" in first


@pytest.mark.parametrize("name", [REPORT_FILE, NOTE_FILE])
def test_running_header_and_page_number_on_every_page(
    generated: dict[str, Path], name: str
) -> None:
    with pymupdf.open(generated[name]) as doc:
        title = doc.metadata["title"]
        for page in doc:
            header = page.get_text(clip=pymupdf.Rect(0, 0, page.rect.width, 70))
            footer = page.get_text(clip=pymupdf.Rect(0, page.rect.height - 70, 1000, 1000))
            assert title in header
            assert _flat(footer) == f"Page {page.number + 1} of {doc.page_count}"
            # furniture stays inside the margin bands that indexer.pdf.layout treats as such
            body = page.get_text(clip=pymupdf.Rect(0, 70, page.rect.width, page.rect.height - 70))
            assert title not in body.replace("\n", " ") or page.number == 0


def test_report_headings_in_order(generated: dict[str, Path]) -> None:
    lines = [line for text in _page_texts(generated[REPORT_FILE]) for line in text.splitlines()]
    positions = [lines.index(heading) for heading in REPORT_HEADINGS]
    assert positions == sorted(positions)


def test_report_equations_are_numbered(generated: dict[str, Path]) -> None:
    text = _flat(" ".join(_page_texts(generated[REPORT_FILE])))
    assert "RRF(d) = Σ_{i=1..m} 1 / (k + rank_i(d)) (2)" in text
    assert "BM25(q, d) = Σ_{t ∈ q} IDF(t)" in text
    assert "Recall@k = (1 / |Q|) · Σ_{q ∈ Q} 1[r_q ≤ k] (3)" in text
    for number in ("(1)", "(2)", "(3)"):
        assert number in text


def test_report_references(generated: dict[str, Path]) -> None:
    pages = _page_texts(generated[REPORT_FILE])
    text = "\n".join(pages)
    tail = text[text.index("\nReferences\n") :]
    for number in range(1, 9):
        assert f"\n[{number}] " in tail
    assert "[9]" not in tail
    assert "Reciprocal Rank Fusion Outperforms Condorcet" in _flat(tail)


def test_no_ligature_glyphs_in_text(generated: dict[str, Path]) -> None:
    for path in generated.values():
        for text in _page_texts(path):
            assert not any("\ufb00" <= char <= "\ufb06" for char in text)
    assert "configuration" in "".join(_page_texts(generated[NOTE_FILE]))


def _page_with(doc: pymupdf.Document, needle: str) -> pymupdf.Page:
    for page in doc:
        if needle in page.get_text():
            return page
    raise AssertionError(f"{needle!r} not found")


def test_main_table_cells_sit_under_their_headers(generated: dict[str, Path]) -> None:
    """Each number of Table 1 lies on its method's row and under its split and metric."""
    with pymupdf.open(generated[REPORT_FILE]) as doc:
        page = _page_with(doc, "Table 1:")
        assert page.number + 1 == 3
        words = page.get_text("words")
        family_word = next(w for w in words if w[4] == "Family")
        # The table ends at its bottom rule, the lowest full-width line below the header.
        rules = [
            drawing["rect"].y1
            for drawing in page.get_drawings()
            if drawing["rect"].width > 400 and drawing["rect"].y0 > family_word[1]
        ]
        bottom = max(rules)
        table_words = [w for w in words if family_word[1] - 20 <= w[1] and w[3] <= bottom]

        def find(text: str) -> list[tuple]:
            return sorted((w for w in table_words if w[4] == text), key=lambda w: w[0])

        recall, mrr = find("Recall@5")[0], find("MRR")[0]
        split_columns = {
            (metric, split): find(split)[index]
            for index, metric in enumerate(("Recall@5", "MRR"))
            for split in SPLITS
        }
        for metric_word in (recall, mrr):
            metric = metric_word[4]
            centre = (metric_word[0] + metric_word[2]) / 2
            left, right = split_columns[(metric, SPLITS[0])], split_columns[(metric, SPLITS[-1])]
            assert left[0] < centre < right[2], "spanning header not over its sub-columns"
        for (family, method), values in MAIN_RESULTS.items():
            method_word = find(method)[0]
            assert find(family)[0][1] <= method_word[1] + 1  # group label on its first row
            for index, value in enumerate(values):
                metric = "Recall@5" if index < 3 else "MRR"
                column = split_columns[(metric, SPLITS[index % 3])]
                (cell,) = find(f"{value:.2f}")
                assert abs(cell[3] - method_word[3]) < 1, (method, value)
                assert column[0] - 8 < (cell[0] + cell[2]) / 2 < column[2] + 8, (method, value)


def test_main_table_values_are_distinct_and_named_in_text(generated: dict[str, Path]) -> None:
    values = [value for row in MAIN_RESULTS.values() for value in row]
    assert len(values) == len(set(values)) == 36
    assert MAIN_RESULTS[("Hybrid", "RRF")][0] == 0.91
    assert MAIN_RESULTS[("Sparse", "BM25")][5] == 0.65


def test_other_tables_present(generated: dict[str, Path]) -> None:
    report = "\n".join(_page_texts(generated[REPORT_FILE]))
    for row in ("10\n0.88\n0.70", "60\n0.91\n0.71", "200\n0.89\n0.69"):
        assert row in report
    for row in (
        "Procedural\nHow do I replace the inlet filter?\n512\n41.3%",
        "Total\n1,240\n100.0%",
    ):
        assert row in report
    note = "\n".join(_page_texts(generated[NOTE_FILE]))
    assert "Full re-index\nMonthly\n18" in note
    assert "Restore drill\nQuarterly\n25" in note


def test_figures_are_vector_and_raster(generated: dict[str, Path]) -> None:
    with pymupdf.open(generated[REPORT_FILE]) as doc:
        chart_page = _page_with(doc, "Figure 1:")
        bars = [d for d in chart_page.get_drawings() if d.get("fill") and d["type"] == "f"]
        assert len(bars) >= len(MAIN_RESULTS)
        heat_page = _page_with(doc, "Figure 2:")
        (image,) = heat_page.get_image_info()
        caption = heat_page.search_for("Figure 2:")[0]
        assert image["bbox"][3] < caption.y0  # the caption sits below the figure
        assert sum(len(page.get_images()) for page in doc) == 1


def test_note_has_outline_matching_headings(generated: dict[str, Path]) -> None:
    with pymupdf.open(generated[NOTE_FILE]) as doc:
        assert doc.page_count == 3
        assert doc.metadata["title"] == "Manual Search Service: Operations Note ON-12"
        toc = doc.get_toc(simple=False)
        assert [(level, title, page) for level, title, page, _ in toc] == NOTE_OUTLINE
        for _, title, page_number, target in toc:
            lines = doc[page_number - 1].get_text().splitlines()
            assert title in lines
            heading = doc[page_number - 1].search_for(title)[0]
            assert abs(target["to"].y - heading.y0) < 5


@pytest.mark.parametrize(("name", "page", "phrase"), FACTS)
def test_answerable_facts_on_expected_pages(
    generated: dict[str, Path], name: str, page: int, phrase: str
) -> None:
    assert phrase in _flat(_page_texts(generated[name])[page - 1])


def test_generation_is_deterministic() -> None:
    first = build_report().tobytes(garbage=4, deflate=True, no_new_id=True)
    second = build_report().tobytes(garbage=4, deflate=True, no_new_id=True)
    assert first == second


@pytest.mark.parametrize("name", [REPORT_FILE, NOTE_FILE])
def test_committed_samples_match_generator(generated: dict[str, Path], name: str) -> None:
    committed = SAMPLES_DIR / name
    assert committed.is_file(), f"run `python -m docsym.sample_docs` to write {committed}"
    assert _page_texts(committed) == _page_texts(generated[name]), (
        f"{committed} is stale: run `python -m docsym.sample_docs`"
    )


def test_samples_dir_is_the_package_data_dir() -> None:
    assert Path(sample_docs.__file__).parent / "samples" == SAMPLES_DIR
