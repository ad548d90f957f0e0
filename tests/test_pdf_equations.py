"""Display equations: numbers, grouping of TeX fragments, and no false positives."""

from __future__ import annotations

import pymupdf

from docsym.indexer.pdf.equations import extract_equations
from docsym.indexer.pdf.layout import read_layout


def _equations(path):
    with pymupdf.open(path) as doc:
        return extract_equations(read_layout(doc))


def test_specter_equations_one_and_two(corpus):
    equations = _equations(corpus / "papers/2020.acl-main.207_specter.pdf")
    numbered = {e.number: e for e in equations if e.number}
    assert set(numbered) == {"1", "2"}
    assert "Transformer(input)" in numbered["1"].text and "(1)" not in numbered["1"].text
    loss = numbered["2"]
    assert loss.page_number == 3 and "max" in loss.text
    # The display covers the big braces and both distance terms, not just the tag.
    assert loss.bbox[0] < 80 and loss.bbox[2] > 285


def test_dpr_prints_equations_one_to_five(corpus):
    equations = _equations(corpus / "papers/2004.04906v3_dpr.pdf")
    assert [e.number for e in equations] == ["1", "2", "3", "4", "5"]
    softmaxes = [e for e in equations if e.number in {"3", "4", "5"}]
    assert all("softmax" in e.text for e in softmaxes)  # one display per row, not merged
    assert len({round(e.bbox[1]) for e in softmaxes}) == 3
    # "...question tokens; (3)" in a paragraph is an enumeration, not equation (3).
    assert all("question tokens" not in e.text for e in equations)


def test_jcap_many_numbered_equations(corpus):
    equations = _equations(corpus / "papers/0807.3577_jcap_accelerations.pdf")
    body = [e.number for e in equations if e.number and e.number.isdigit()]
    assert body == [str(n) for n in range(1, 19)]
    assert all(e.seq > 0 for e in equations)


def test_papers_without_equations_have_few_false_positives(corpus):
    for name in ("N18-3011_literature_graph.pdf", "2302.07302v1_citesee.pdf"):
        assert _equations(corpus / "papers" / name) == []


def test_synthetic_numbered_display():
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=600)
    page.insert_text(
        (40, 80), "We define the energy of a body at rest as follows here:", fontsize=10
    )
    page.insert_text((150, 110), "E = m c", fontsize=10, fontname="Symbol")
    page.insert_text((345, 110), "(7)", fontsize=10)
    page.insert_text(
        (40, 140), "where m is the mass and c is the speed of light (2020).", fontsize=10
    )
    with pymupdf.open(stream=doc.tobytes(), filetype="pdf") as reopened:
        equations = extract_equations(read_layout(reopened))
    doc.close()
    assert len(equations) == 1
    assert equations[0].number == "7"
    assert equations[0].bbox[1] > 95 and equations[0].bbox[3] < 115
