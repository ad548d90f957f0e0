"""Document metadata from PDF info and from the first page's layout."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from docsym.indexer.ocr.pages import OcrRun
from docsym.indexer.ocr.pool import OcrPool
from docsym.indexer.pdf.layout import read_layout
from docsym.indexer.pdf.metadata import extract_metadata
from docsym.indexer.pdf.parser import parse_pdf
from tests import pdf_factory


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


def test_a_year_is_the_one_the_first_pages_print(corpus):
    """The ZFN scan's file was made in 2009; its first page prints 1999. arXiv and DOI years
    say so; a redbook's year is printed on its second page (its file was made in 2024)."""
    zfn = _meta(corpus / "scanned/ZFN-A-054-0304-0272.pdf")
    assert (zfn.year, zfn.year_from) == (1999, "page")
    redbook = _meta(corpus / "long_docs/redp5110_sampled.pdf")
    assert (redbook.year, redbook.year_from) == (2014, "page")
    dpr = _meta(corpus / "papers/2004.04906v3_dpr.pdf")
    assert (dpr.year, dpr.year_from) == (2020, "arxiv id")
    hydrology = _meta(corpus / "papers/jhydrol_2005_flow_duration_curves.pdf")
    assert (hydrology.year, hydrology.year_from) == (2005, "doi")


def _dated(path: Path, text: str, created: str) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), text, fontsize=11)
    doc.set_metadata({"creationDate": created})
    doc.save(path)
    return path


def test_a_year_printed_nowhere_is_marked_as_the_files(tmp_path: Path):
    """No year on the pages: the file's creation year, marked 'file metadata'. A year printed
    later than the file was made (a plan 'by 2030') is no publication year."""
    bare = _meta(_dated(tmp_path / "bare.pdf", "A note with no date at all.", "D:20190301"))
    assert (bare.year, bare.year_from) == (2019, "file metadata")
    cited = "As Smith (2011) and Lee (2014) found, the plan for 2030 holds."
    later = _meta(_dated(tmp_path / "later.pdf", cited, "D:20160301"))
    assert (later.year, later.year_from) == (2014, "page")


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


# --- titles from the first page's heading --------------------------------------------------

HAN_HEADING = "商品的两个因素"
HAN_BODY = (
    "资本主义生产方式占统治地位的社会的财富，表现为庞大的商品堆积，单个的商品表现为这种财富的"
    "元素形式。因此，我们的研究就从分析商品开始。"
) * 3
BODY = (
    "The river gauge recorded daily flows for twelve years. Annual runoff fell by forty "
    "percent after the forest was planted, while the number of dry days doubled. "
) * 3


@pytest.fixture(scope="module")
def pool():
    pool = OcrPool(workers=1)
    yield pool
    pool.close()


def _han_page(path: Path) -> Path:
    """A Chinese page: a large heading over body text (no Latin letters anywhere)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), HAN_HEADING, fontsize=22, fontname="china-s")
    page.insert_textbox(pymupdf.Rect(72, 130, 520, 400), HAN_BODY, fontsize=11, fontname="china-s")
    doc.save(path)
    doc.close()
    return path


def _headed_page(path: Path, header: str | None) -> Path:
    """A page cut from a paper: a small running header (or none), then body text and a bold
    numbered heading of the body's size; nothing larger than the body."""
    doc = pymupdf.open()
    page = doc.new_page()
    if header:
        page.insert_text((72, 60), header, fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 80, 520, 200), BODY, fontsize=10)
    page.insert_text((72, 230), "5.1 Results of the Gauges", fontsize=10, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 245, 520, 400), BODY, fontsize=10)
    doc.save(path)
    doc.close()
    return path


def test_a_chinese_heading_is_the_title(tmp_path: Path) -> None:
    meta = _meta(_han_page(tmp_path / "han.pdf"))
    assert meta.title == HAN_HEADING


def test_a_scanned_first_page_is_titled_by_its_heading(tmp_path: Path, pool) -> None:
    scan = pdf_factory.scan_of(_han_page(tmp_path / "han.pdf"), tmp_path / "scan.pdf")
    parsed = parse_pdf(scan, OcrRun(pool))
    assert parsed.pages[0].ocr  # the title came from the OCR'd text, not a text layer
    assert parsed.meta.title == HAN_HEADING


def test_a_page_without_larger_text_is_titled_by_the_block_heading_it(tmp_path: Path) -> None:
    header = "Flow Records of Planted Catchments"
    headed = _meta(_headed_page(tmp_path / "headed.pdf", f"{header} 9"))
    assert headed.title == header  # the running header, without its page number
    # A page that opens with a paragraph has no heading to take: no title rather than a guess.
    assert _meta(_headed_page(tmp_path / "plain.pdf", None)).title is None


def test_corpus_first_pages_without_metadata_titles(corpus: Path, pool, tmp_path: Path) -> None:
    # One page of a paper: its running header names the paper.
    pg9 = _meta(corpus / "papers/2305.03393v1-pg9.pdf")
    assert pg9.title == "Optimized Table Tokenization for Table Structure Recognition"
    # A scan whose hidden OCR layer sets the title smaller than the body text.
    scan = parse_pdf(corpus / "scanned/ZFN-A-054-0304-0272.pdf", OcrRun(pool))
    assert scan.meta.title == (
        "Exact Solitary-wave Solutions for the General Fifth-order Shallow Water-wave Models"
    )
    # A Chinese book page read by OCR: its running header, without the page number 12.
    page = tmp_path / "zh-p1.pdf"
    with pymupdf.open(corpus / "scanned/small_ocr_zh_scan.pdf") as src, pymupdf.open() as doc:
        doc.insert_pdf(src, from_page=0, to_page=0)
        doc.save(page)
    assert parse_pdf(page, OcrRun(pool)).meta.title == "第一篇 商品和货币"
