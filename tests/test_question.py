"""One reading of a question (tools.question), shared by ranking and citation."""

from __future__ import annotations

from docsym.language.terms import tokens
from docsym.tools import evidence, fusion
from docsym.tools.question import read_question
from tests.conftest import doc_id_of


def test_a_question_is_read_into_terms_stems_pairs_and_numbers() -> None:
    question = read_question(None, "How many gross bookings did Uber's λ-team book in 2021?")
    assert question.stems == ("gross", "booking", "uber", "lambda", "team", "book", "2021")
    assert ("gross", "booking") in question.pairs
    assert question.opens_with_quantity and question.asks_quantity
    assert question.numbers == frozenset({"2021"})
    assert "s" not in question.stems  # the possessive is not a word of its own


def test_a_quantity_asked_after_an_opening_phrase_counts_for_citation_only() -> None:
    question = read_question(None, "In the ablation table, what average score did it reach?")
    assert question.asks_quantity and not question.opens_with_quantity


def test_ranking_and_citation_read_greek_letters_alike() -> None:
    """The question spells the letter; the passage prints it. Both readers meet it."""
    question = read_question(None, "What value of lambda weighs BM25?")
    passage = "We set λ = 1.1 to weigh BM25 against the dense score."
    assert "lambda" in fusion.analyse(passage).vocabulary
    (unit,) = [evidence.unit("u0", passage, 1, [0, 0, 1, 1], "c0")]
    assert {t.stem for t in question.terms if t.met_by(unit.words)} >= {"lambda", "bm25"}
    assert "lambda" in tokens(passage)


def test_document_names_hold_title_authors_and_file_name(corpus_store) -> None:
    from docsym.tools.question import document_names

    names = document_names(corpus_store)
    dpr = names[doc_id_of(corpus_store.sql(), "2004.04906v3_dpr.pdf")]
    assert {"dense", "passage", "retrieval", "karpukhin", "dpr"} <= dpr
    jcap = names[doc_id_of(corpus_store.sql(), "0807.3577_jcap_accelerations.pdf")]
    assert {"bolejko", "andersson", "acceleration"} <= jcap
    question = read_question(corpus_store, "What did Bolejko and Andersson find?")
    assert {
        t.stem
        for t in question.naming(doc_id_of(corpus_store.sql(), "0807.3577_jcap_accelerations.pdf"))
    } == {"bolejko", "andersson"}
    assert question.naming("no-such-document") == frozenset()
