"""Bibliography entries against the GROBID ground truth and on the printed styles."""

from __future__ import annotations

import json

import pymupdf

from docsym.indexer.pdf.layout import read_layout
from docsym.indexer.pdf.references import extract_references


def _references(path):
    with pymupdf.open(path) as doc:
        return extract_references(read_layout(doc))


def _ground_truth_count(corpus, name: str) -> int:
    data = json.loads((corpus / "groundtruth/s2orc-doc2json" / f"{name}.json").read_text())
    return len(data["pdf_parse"]["bib_entries"])


def test_specter_references_match_ground_truth(corpus):
    references = _references(corpus / "papers/2020.acl-main.207_specter.pdf")
    expected = _ground_truth_count(corpus, "2020.acl-main.207")  # 54; GROBID merged/lost 3
    assert abs(len(references) - expected) <= 4
    assert len(references) == 57  # BIBREF0..BIBREF56: the PDF prints 57 entries
    first = references[0]
    assert first.text.startswith("Anant K. Agarwal") and first.year == 2019
    assert "intrusive interventions" in first.text  # "in-" + "terventions" de-hyphenated
    assert references[-1].text.startswith("Xinyuan Zhang")  # the appendix is not included
    assert all(r.page_number in (9, 10, 11) for r in references)


def test_literature_graph_references_match_ground_truth(corpus):
    references = _references(corpus / "papers/N18-3011_literature_graph.pdf")
    assert len(references) == _ground_truth_count(corpus, "N18-3011")  # 27


def test_bracket_labels_doi_and_arxiv(corpus):
    references = _references(corpus / "papers/2206.10883v3_multilexsum.pdf")
    assert references[0].label == "1" and references[0].arxiv_id == "2004.05150"
    assert [r.label for r in references[:5]] == ["1", "2", "3", "4", "5"]
    jcap = _references(corpus / "papers/0807.3577_jcap_accelerations.pdf")
    assert jcap[1].label == "2" and jcap[1].arxiv_id == "0803.0732"


def test_hanging_indent_style_single_column(corpus):
    references = _references(corpus / "papers/MullenJSSv18i03_timp.pdf")
    assert references[0].text.startswith("Bates DM, DebRoy S (2003)")
    assert references[0].year == 2003
    assert len(references) >= 15


def test_no_references_heading_gives_nothing(corpus):
    assert _references(corpus / "papers/2305.03393v1-pg9.pdf") == []
