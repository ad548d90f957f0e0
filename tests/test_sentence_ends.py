"""Where a sentence ends: a footnote mark after a word's full stop ends it; a number, an
abbreviation or a bracket before the digits do not."""

from __future__ import annotations

import pytest

from docsym.language.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "All participants were paid for the study.3 We discuss it later.",
            ["All participants were paid for the study.3", "We discuss it later."],
        ),
        ("Linked to PubMed identifiers.17 Next we", ["Linked to PubMed identifiers.17", "Next we"]),
        ("Version 2.3 Many people came.", ["Version 2.3 Many people came."]),
        ("It rose to 4.5 Then it fell.", ["It rose to 4.5 Then it fell."]),
        ("As Fig.3 Shows, it fell.", ["As Fig.3 Shows, it fell."]),
        ("The recurrent ones (RNNs).2 We then", ["The recurrent ones (RNNs).2 We then"]),
        ("A mark of three digits.123 We", ["A mark of three digits.123 We"]),
        ("It ends here. The next one starts.", ["It ends here.", "The next one starts."]),
    ],
)
def test_a_footnote_mark_after_a_full_stop_ends_the_sentence(
    text: str, sentences: list[str]
) -> None:
    assert split_sentences(text) == sentences


def test_a_month_abbreviation_ends_no_sentence() -> None:
    text = "We use the English Wikipedia dump from Dec. 20, 2018 as the source. It is large."
    assert split_sentences(text) == [
        "We use the English Wikipedia dump from Dec. 20, 2018 as the source.",
        "It is large.",
    ]


def test_a_saint_ends_no_sentence() -> None:
    text = "The cases came from Washington University in St. Louis, mostly. Then others."
    assert split_sentences(text) == [
        "The cases came from Washington University in St. Louis, mostly.",
        "Then others.",
    ]
