"""Figures: captions, labels and regions, on corpus papers and a synthetic page."""

from __future__ import annotations

import pymupdf
import pytest

from docsym.indexer.pdf.figures import extract_figures
from docsym.indexer.pdf.layout import read_layout


def _figures(path):
    with pymupdf.open(path) as doc:
        return extract_figures(read_layout(doc))


def test_specter_has_two_captioned_figures(corpus):
    figures = [f for f in _figures(corpus / "papers/2020.acl-main.207_specter.pdf") if f.label]
    assert [f.label for f in figures] == ["Figure 1", "Figure 2"]
    assert figures[0].caption == "Figure 1: Overview of SPECTER."
    assert figures[1].caption.startswith("Figure 2: t-SNE visualization")
    assert figures[1].caption.endswith("MAG topics.")  # the caption's second line is joined
    for figure in figures:
        x0, y0, x1, y1 = figure.bbox
        assert x1 - x0 > 100 and y1 - y0 > 50  # the graphics, not just the caption line


def test_literature_graph_has_one_figure_above_its_caption(corpus):
    figures = [f for f in _figures(corpus / "papers/N18-3011_literature_graph.pdf") if f.label]
    assert len(figures) == 1
    figure = figures[0]
    assert figure.label == "Figure 1" and figure.page_number == 1
    assert "literature graph" in figure.caption
    assert figure.bbox[3] - figure.bbox[1] > 100


def test_in_text_mentions_and_tables_are_not_figures(corpus):
    labels = [f.label for f in _figures(corpus / "papers/MullenJSSv18i03_timp.pdf") if f.label]
    assert labels == [f"Figure {n}" for n in range(1, 22)]  # "Figure 10 shows ..." not counted


def _synthetic_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=600)
    page.insert_text((50, 60), "Some body text above the figure that is long enough.", fontsize=10)
    page.draw_rect(pymupdf.Rect(80, 100, 320, 260), color=(0, 0, 0))
    page.draw_line((90, 250), (300, 120))
    page.insert_text((50, 280), "Figure 1: A vector drawing of a line in a box.", fontsize=9)
    page.insert_text((50, 330), "Table 1: Not a figure.", fontsize=9)
    page.insert_text((50, 380), "Body text says Figure 1 shows a line.", fontsize=10)
    page.insert_text((50, 460), "Figure 2: A caption with no graphics at all.", fontsize=9)
    data = doc.tobytes()
    doc.close()
    return data


def test_synthetic_vector_figure_and_text_only_figure():
    with pymupdf.open(stream=_synthetic_pdf(), filetype="pdf") as doc:
        figures = extract_figures(read_layout(doc))
    assert [f.label for f in figures] == ["Figure 1", "Figure 2"]
    drawn = figures[0]
    assert drawn.bbox == pytest.approx((79.5, 99.5, 320.5, 260.5), abs=2)
    bare = figures[1]
    assert bare.bbox[1] >= 380 and bare.bbox[3] <= 452  # between the text above and the caption
    assert figures[0].seq < figures[1].seq
