"""Line-end hyphens (language.hyphens): a broken word is joined, a compound keeps its hyphen."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from docsym.indexer.pdf.parser import parse_pdf
from docsym.language.hyphens import PrintedWords, join_all, join_lines

DPR = "papers/2004.04906v3_dpr.pdf"


def test_a_compound_keeps_its_hyphen_and_a_broken_word_is_joined() -> None:
    printed = PrintedWords(
        [
            "the self attention of long form answers and their distribu-",
            "tion over the state of the art; a demon-",
            "strate of 75-",
            "dimensional vectors",
        ]
    )
    # Printed whole elsewhere: 'self', 'attention', 'long', 'form'; never 'selfattention'.
    assert join_lines("uses self-", "attention layers", printed) == "uses self-attention layers"
    assert join_lines("of long-", "form text", printed) == "of long-form text"
    # The halves of a break are no printed words: 'distribu', 'tion', 'demon', 'strate'.
    assert join_lines("the distribu-", "tion of", printed) == "the distribution of"
    assert join_lines("to demon-", "strate it", printed) == "to demonstrate it"
    assert join_lines("a 75-", "dimensional vector", printed) == "a 75-dimensional vector"
    # A word printed whole joins even when its halves are words too.
    printed = PrintedWords(["a database", "the data", "its base"])
    assert join_lines("the data-", "base grows", printed) == "the database grows"


def test_lines_without_a_broken_word_are_spaced() -> None:
    printed = PrintedWords(["long form"])
    assert join_lines("of long-", "Form", printed) == "of long- Form"  # no lower-case word next
    assert join_lines("a -", "form", printed) == "a - form"
    assert join_lines("the end", "of it", printed) == "the end of it"
    assert join_lines("of long-", "form", None) == "of longform"  # no document: a break


def test_lines_join_into_one_text() -> None:
    printed = PrintedWords(["long form text"])
    lines = ["  Figure 2: a long-", "form caption, distri-", "", "buted over lines. "]
    assert join_all(lines, printed) == "Figure 2: a long-form caption, distributed over lines."


def test_a_pdf_paragraph_keeps_a_compound_broken_at_its_line_end(tmp_path: Path) -> None:
    lines = [
        "We study long form summaries and the self attention of",
        "encoders in a long-",
        "form setting, with the distribu-",
        "tion of their lengths.",
    ]
    path = tmp_path / "hyphens.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 100), "\n".join(lines), fontsize=10)
        doc.save(path)
    (sentence,) = parse_pdf(path, None).sentences
    assert "in a long-form setting, with the distribution of their lengths." in sentence.text


def test_corpus_compounds_keep_their_hyphens(corpus: Path) -> None:
    """DPR prints 'open-domain' and 'dual-encoder' broken at their hyphens, at line ends, in its
    text and its references alike."""
    parsed = parse_pdf(corpus / DPR, None)
    text = " ".join(s.text for s in parsed.sentences)
    assert "opendomain" not in text and "dualencoder" not in text
    assert "open-domain" in text and "dual-encoder" in text
    references = " ".join(r.text for r in parsed.references)
    assert "opendomain" not in references and "retriever-reader" in references
