"""Document metadata from PDF info and from the first page's layout."""

from __future__ import annotations

import pymupdf

from docsym.indexer.pdf.layout import read_layout
from docsym.indexer.pdf.metadata import extract_metadata


def _meta(path):
    with pymupdf.open(path) as doc:
        return extract_metadata(doc, read_layout(doc))


def test_specter_metadata(corpus):
    meta = _meta(corpus / "papers/2020.acl-main.207_specter.pdf")
    assert meta.title == (
        "SPECTER: Document-level Representation Learning using Citation-informed Transformers"
    )
    assert "Arman Cohan" in meta.authors
    assert meta.year == 2020
    assert meta.venue.startswith("Proceedings of the 58th Annual Meeting")
    assert meta.abstract.startswith("Representation learning is a critical ingredient")


def test_dpr_metadata_from_layout(corpus):
    meta = _meta(corpus / "papers/2004.04906v3_dpr.pdf")  # the PDF info dictionary is empty
    assert meta.title == "Dense Passage Retrieval for Open-Domain Question Answering"
    assert meta.arxiv_id == "2004.04906v3"
    assert meta.year == 2020
    assert meta.authors[0] == "Vladimir Karpukhin" and "Wen-tau Yih" in meta.authors
    assert not any("University" in a or "@" in a for a in meta.authors)
    assert meta.abstract.startswith("Open-domain question answering relies on ef")


def test_superscript_marks_dropped_and_doi_found(corpus):
    meta = _meta(corpus / "papers/jhydrol_2005_flow_duration_curves.pdf")
    assert meta.authors == ["Patrick N.J. Lane", "Alice E. Best", "Klaus Hickel", "Lu Zhang"]
    assert meta.doi == "10.1016/j.jhydrol.2005.01.006"
    assert meta.year == 2005 and meta.venue == "Journal of Hydrology"
    assert meta.abstract.endswith("data is not available.")  # copyright line stripped


def test_acm_abstract_without_heading(corpus):
    meta = _meta(corpus / "papers/2203.00130v1_paperplain.pdf")
    assert meta.abstract.startswith("When seeking information not covered")
    assert "Tal August" in meta.authors and meta.year == 2022


def test_junk_metadata_title_is_replaced():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "A Real Title", fontsize=20)
    page.insert_text((72, 130), "Body text in a paragraph of normal size.", fontsize=10)
    page.insert_text((72, 145), "More body text in a paragraph of normal size.", fontsize=10)
    doc.set_metadata({"title": "Microsoft Word - draft3.docx", "creationDate": "D:20190101"})
    with pymupdf.open(stream=doc.tobytes(), filetype="pdf") as reopened:
        meta = extract_metadata(reopened, read_layout(reopened))
    doc.close()
    assert meta.title == "A Real Title"
    assert meta.year == 2019  # creation date as the last resort
    assert meta.authors == []
