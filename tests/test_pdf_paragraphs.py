"""Paragraphs of a PDF written one line per text block (Paper Plain's acmart pages): a sentence
runs past a line end, and its box covers the lines it is printed on."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from docsym.indexer.pdf.layout import read_layout
from docsym.indexer.pdf.parser import parse_pdf

PAPER_PLAIN = "papers/2203.00130v1_paperplain.pdf"
LINE = "the basin is drained every fourteen days by the operator on duty"


def _lines_one_per_block(path: Path, lines: list[str], pitch: float) -> Path:
    """A page whose every line is a text block of its own (as some producers write them)."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        for n, text in enumerate(lines):
            page.insert_text((72, 100 + n * pitch), text, fontsize=9)
        doc.save(path)
    return path


def test_a_sentence_runs_on_past_its_line_ends(corpus: Path) -> None:
    parsed = parse_pdf(corpus / PAPER_PLAIN, None)
    texts = [s.text for s in parsed.sentences]
    recruited = next(s for s in parsed.sentences if s.text.startswith("We again recruited"))
    assert recruited.text.endswith("to remain consistent with §3.0.1.")
    assert recruited.page_number == 18
    assert recruited.bbox[3] - recruited.bbox[1] > 30  # its three lines, not the first alone
    assert "Participants’ age ranged from 19 to 67 (𝜇 = 35.04)." in texts
    # A footnote mark after a full stop ("study.3 We discuss ...") makes its line's box taller
    # than the next line's; the two are one paragraph all the same.
    # The mark ends its sentence: the next one starts after it.
    assert "All participants were paid US$15 for the hour-long study.3" in texts
    ending = "this recruiting strategy and the presence of a paid timed task in §8.4."
    assert f"We discuss possible limitations to {ending}" in texts
    assert "We again" not in texts and "All participants" not in texts


def test_lines_written_one_per_block_are_joined_into_paragraphs(tmp_path: Path) -> None:
    """Ten lines 13.7 points apart in 9-point type: one paragraph, one sentence per full stop.
    The same lines twice as far apart are ten paragraphs."""
    text = [f"Line {n}: {LINE}" for n in range(9)] + ["and so it ends."]
    parsed = parse_pdf(_lines_one_per_block(tmp_path / "close.pdf", text, 13.7), None)
    (sentence,) = parsed.sentences
    assert sentence.text.startswith("Line 0:") and sentence.text.endswith("and so it ends.")
    with pymupdf.open(_lines_one_per_block(tmp_path / "apart.pdf", text, 27.4)) as doc:
        assert len({line.block for line in read_layout(doc).pages[0].lines}) == len(text)
