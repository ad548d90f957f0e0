"""Accents printed as glyphs of their own (language.accents): put back on their letters."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsym.indexer.pdf.parser import parse_pdf
from docsym.language.accents import place_accents

JCAP = "papers/0807.3577_jcap_accelerations.pdf"


@pytest.mark.parametrize(
    ("printed", "read"),
    [
        ("Lemaˆıtre–Tolman", "Lemaître–Tolman"),  # an accent over a dotless i is an î
        ("F¨arber and R¨as¨anen", "Färber and Räsänen"),
        ("Mitrovi´c, Krasi´nski", "Mitrović, Krasiński"),
        ("Pas¸ca", "Paşca"),  # a cedilla follows its letter
        ("Erd˝os, Reh˚uˇrek", "Erdős, Rehůřek"),
        ("Lo¨ıc", "Loïc"),
    ],
)
def test_an_accent_joins_its_letter(printed: str, read: str) -> None:
    assert place_accents(printed) == read


@pytest.mark.parametrize("printed", ["¯ν and ν¯max", "don´t", "σˆΨ", "`ls` lists", "plain"])
def test_what_makes_no_letter_is_left_as_printed(printed: str) -> None:
    assert place_accents(printed) == printed


def test_a_tex_paper_reads_as_typed(corpus: Path) -> None:
    parsed = parse_pdf(corpus / JCAP, None)
    assert "The Lemaître–Tolman model" in [s.title for s in parsed.sections]
    text = " ".join(s.text for s in parsed.sentences)
    assert "Lemaˆıtre" not in text and text.count("Lemaître") >= 10
