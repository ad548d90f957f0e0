"""Paragraphs of a PDF written one line per text block (Paper Plain's acmart pages): a sentence
runs past a line end, and its box covers the lines it is printed on."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from docsym.indexer.pdf.layout import Line, read_layout
from docsym.indexer.pdf.parser import continues_below, parse_pdf

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


def _line(text: str, block: int, box: tuple[float, float, float, float], page: int = 1) -> Line:
    return Line(text=text, bbox=box, size=9.0, bold=False, font="Times", page=page, block=block)


def test_a_sentence_runs_on_into_the_next_block_below_it() -> None:
    """A producer starts a block at a font change, a footnote mark or a hanging indent as well
    as at a paragraph: a lower-case line right under an unfinished one carries its sentence on.
    A finished sentence, a capital, a list item, a line further down, in another column or on
    another page starts anew."""
    last = _line("We then split each article into multiple, disjoint text", 3, (72, 359, 290, 369))
    below = (72, 373, 292, 383)
    assert continues_below(last, _line("blocks of 100 words as passages", 4, below))
    finished = _line("We then split each article into passages.", 3, last.bbox)
    assert not continues_below(finished, _line("blocks of 100 words as passages", 4, below))
    assert not continues_below(last, _line("Blocks of 100 words as passages", 4, below))
    listing = _line("We split each article in two ways,", 3, last.bbox)
    assert not continues_below(listing, _line("a) in blocks of 100 words", 4, below))
    assert not continues_below(last, _line("blocks of 100 words", 4, (72, 400, 292, 410)))
    assert not continues_below(last, _line("blocks of 100 words", 4, (306, 373, 526, 383)))
    assert not continues_below(last, _line("blocks of 100 words", 0, below, page=2))


def test_dpr_passages_sentence_is_one_sentence(corpus: Path) -> None:
    """The DPR paper prints its passage split over two blocks; it is cited as one sentence."""
    parsed = parse_pdf(corpus / "papers/2004.04906v3_dpr.pdf", None)
    split = next(s for s in parsed.sentences if "disjoint text" in s.text)
    assert split.text.startswith("We then split each article into multiple, disjoint text blocks")
    assert split.text.endswith("which results in 21,015,324 passages in the end.5")
    assert split.bbox[3] - split.bbox[1] > 40  # both blocks' lines
