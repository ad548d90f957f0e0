"""The re-ranking features of hybrid_search (tools.fusion) on small texts and the corpus index."""

from __future__ import annotations

from dataclasses import replace

import pytest

from docsym.language.numbers import asks_for_quantity
from docsym.language.terms import tokens
from docsym.storage.store import EntryRow
from docsym.tools import fusion
from docsym.tools.question import Question, read_question


@pytest.mark.parametrize(
    "question",
    [
        "How many people were in the CiteSee field deployment?",
        "What F1 does ScienceParse reach when extracting paper titles?",
        "At what redshift is last scattering set?",
        "What was Tennessee's age-adjusted stroke death rate in 2006?",
        "What share of Mobility Gross Bookings came from the UK?",
        "By how much did clickthrough rate improve?",
    ],
)
def test_questions_asking_for_a_quantity_are_recognised(question: str) -> None:
    assert asks_for_quantity(question)


@pytest.mark.parametrize(
    "question",
    [
        "Which CL command grants the QIBM_DB_SECADM function usage to a user?",
        "What is the default value of the QCRTAUT system value?",
        "Why does MuPDF require fz_var on local variables?",
        "What are the three main components of the papermage toolkit?",
    ],
)
def test_other_questions_are_not_quantity_questions(question: str) -> None:
    assert not asks_for_quantity(question)


def test_labels_are_not_quantities() -> None:
    weights = {"field": 1.0, "deployment": 1.0}
    terms = frozenset()  # numbers the question states: none
    label_only = "As Table 3 shows, Study 2 was a field deployment [12, 15]."
    counted = "We ran a field deployment study (N=6) over two weeks."
    assert fusion.number_near_terms(fusion.quantity_words(label_only), weights, terms) == 0.0
    assert fusion.number_near_terms(fusion.quantity_words(counted), weights, terms) == 1.0
    # Without the label filter the label's number would have counted.
    assert fusion.number_near_terms(tokens(label_only), weights, terms) == 1.0


def _gauge_logs() -> dict[int, EntryRow]:
    """60 passages over 20 pages; every third states the count the question asks for."""
    entries = {}
    for i in range(60):
        words = ["gauge", "log", "readings", "day"][: 1 + i % 4]
        count = str(100 + i) if i % 3 == 0 else "unknown"
        site = chr(97 + i % 26) + chr(97 + i // 26)
        text = f"At site {site} the weir was checked. The {' '.join(words)} count was {count}."
        entries[i + 1] = EntryRow("chunks", "text", f"c{i}", f"d{i % 5}", i // 3 + 1, text, i + 1)
    return entries


def test_fusion_reads_numbers_only_until_the_first_places_are_settled(monkeypatch) -> None:
    entries = _gauge_logs()
    sparse = [(i, 10.0 - i * 0.1) for i in entries]
    dense = [(i, 0.5 + (i % 7) * 0.03) for i in entries]
    question = read_question(None, "How many readings of the gauge does the log keep each day?")
    full = fusion.fuse(question, sparse, dense, entries)
    unasked = read_question(None, "Readings of the gauge the log keeps each day")
    assert [i for i, *_ in fusion.fuse(unasked, sparse, dense, entries)[:4]] != [4, 16, 28, 40]
    # The number feature decides the first places here: passages stating a count move up.
    assert [i for i, *_ in full[:4]] == [4, 16, 28, 40]
    read: list[str] = []
    real = fusion.quantity_words
    monkeypatch.setattr(fusion, "quantity_words", lambda text: read.append(text) or real(text))
    for limit in (1, 3, 5, 10):
        read.clear()
        assert fusion.fuse(question, sparse, dense, entries, limit=limit) == full[:limit]
        assert len(read) < len(entries)


def _entry(entry_id: int, doc_id: str) -> EntryRow:
    return EntryRow("chunks", "text", f"c{entry_id}", doc_id, 1, "some text", entry_id)


def _named(text: str, names: dict[str, frozenset[str]]) -> Question:
    return replace(read_question(None, text), names=names)


def test_named_documents_score_relative_to_the_best_named() -> None:
    question = _named(
        "multi-lexsum tableformer-large baseline",
        {
            "a": frozenset({"multi-lexsum", "summary"}),
            "b": frozenset({"tableformer", "table"}),
            "c": frozenset({"specter"}),
        },
    )
    entries = {1: _entry(1, "a"), 2: _entry(2, "b"), 3: _entry(3, "c")}
    features: dict[int, dict[str, float]] = {1: {}, 2: {}, 3: {}}
    # "tableformer-large" names TableFormer through its part.
    weights = {"multi-lexsum": 2.0, "tableformer-large": 1.0, "baseline": 1.0}
    fusion._named_scores(features, entries, weights, question)
    assert features == {1: {"named": 1.0}, 2: {"named": 0.5}, 3: {"named": 0.0}}


def test_a_stopword_part_of_a_compound_names_nothing() -> None:
    question = _named("verify_group_for_user", {"a": frozenset({"db2", "for", "i"})})
    assert question.naming("a") == frozenset()


def test_unnamed_question_leaves_the_feature_unset() -> None:
    features = {1: {}}
    question = _named("x", {"a": frozenset({"y"})})
    fusion._named_scores(features, {1: _entry(1, "a")}, {"x": 1.0}, question)
    assert features == {1: {}}
