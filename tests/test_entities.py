"""Entity extraction rules, gradient-based resolution, and the entity graph of real papers."""

from __future__ import annotations

import pytest

from docsym.indexer.entities import ProperNouns, explicit_relations, extract_mentions
from docsym.indexer.entity_resolution import ResolutionSettings, Resolver
from docsym.language.names import normalise_name
from tests.conftest import doc_id_of

NO_PROPER = ProperNouns([])


def _names(sentence: str, proper: ProperNouns = NO_PROPER) -> dict[str, str]:
    return {m.name: m.kind for m in extract_mentions(sentence, proper)}


def test_acronym_definition_gives_both_names_as_an_alias_pair() -> None:
    mentions = extract_mentions("Our Dense Passage Retriever (DPR) is strong.", NO_PROPER)
    pairs = {(m.name, m.alias) for m in mentions}
    assert ("Dense Passage Retriever", "DPR") in pairs
    assert ("DPR", "Dense Passage Retriever") in pairs
    # the leading "Our" is not part of the long form; a lower-case long form works too
    lower = extract_mentions("the goal of our dense passage retriever (DPR) is", NO_PROPER)
    assert {m.name for m in lower} == {"dense passage retriever", "DPR"}


def test_parenthesised_words_that_spell_nothing_are_not_definitions() -> None:
    mentions = extract_mentions("We report results (RQ) on the data.", NO_PROPER)
    assert all(m.alias is None for m in mentions)


def test_identifiers_names_labels_citations_and_terms() -> None:
    proper = ProperNouns(["We use Wikipedia here.", "Again Wikipedia was used."])
    found = _names(
        "On Wikipedia we compare BM25, GPT-3 and ResNet-50 with the Natural Questions data "
        "(Kwiatkowski et al., 2019) in Table 2 and Figure 3 [12, 14].",
        proper,
    )
    assert found["BM25"] == found["GPT-3"] == found["ResNet-50"] == "acronym"
    assert found["Natural Questions"] == "name"
    assert found["Wikipedia"] == "name"
    assert found["Kwiatkowski et al. 2019"] == "citation"
    assert found["Table 2"] == found["Figure 3"] == "label"
    assert found["[12]"] == found["[14]"] == "citation"
    assert _names("We call this approach “reencountered citations” below.") == {
        "reencountered citations": "term"
    }


def test_what_is_not_an_entity() -> None:
    assert _names("6 STUDY 2: FIELD DEPLOYMENT") == {}  # a heading in capitals
    assert _names("Results show that it works in Section IV.") == {}  # sentence start, numeral
    assert _names("The run took 10ms on the 3rd try in December.") == {}
    # a word the document also writes in lower case is no acronym when written in capitals
    proper = ProperNouns(["the credit was good", "more credit is due"])
    assert "CREDIT" not in _names("PAID BY CREDIT OR DEBIT with TIBOR rates", proper)


def test_types_from_neighbouring_words() -> None:
    types = {m.name: m.entity_type for m in extract_mentions(
        "We train on the SQuAD dataset at Stanford University, scored with the F1 score.",
        NO_PROPER,
    )}  # fmt: skip
    assert types == {"SQuAD": "dataset", "Stanford University": "organisation", "F1": "metric"}


def test_explicit_relations() -> None:
    sentence = "CiteSee is a paper reading tool that helps, unlike BERT (Devlin et al., 2019)."
    mentions = extract_mentions(sentence, NO_PROPER)
    relations = {
        (r.source.name, r.relation, r.target_name) for r in explicit_relations(sentence, mentions)
    }
    assert relations == {
        ("CiteSee", "is_a", "paper reading tool"),
        ("BERT", "cites", "Devlin et al. 2019"),
    }


def test_normalised_names_ignore_case_spacing_hyphens_and_plural() -> None:
    assert normalise_name("Dense-Passage  Retrievers") == normalise_name("dense passage retriever")
    assert normalise_name("BM25") != normalise_name("BM25+")


# -- resolution (BookRAG's gradient rule over names that include one another) -----------------
def _resolver(mode: str = "gradient") -> Resolver:
    return Resolver(ResolutionSettings(mode=mode))


def _same(resolver: Resolver, *names: str) -> bool:
    slots = [resolver.resolve(name, "name", "name") for name in names]
    return len({resolver.root(slot) for slot in slots}) == 1


def test_a_shorter_name_joins_the_one_entity_that_includes_it() -> None:
    resolver = _resolver()
    full = resolver.resolve("Allen Institute for Artificial Intelligence", "name", "name")
    other = resolver.resolve("Wikipedia", "name", "name")
    short = resolver.resolve("Allen Institute", "name", "name")
    assert resolver.root(short) == resolver.root(full) != resolver.root(other)
    assert resolver.entities[resolver.root(full)].aliases == ["Allen Institute"]


def test_names_written_another_way_join() -> None:
    assert _same(_resolver(), "Careem", "Careem’s")  # a possessive is the same key
    assert _same(_resolver(), "Ultra Low Emission Zone", "Ultra Low Emissions Zone")
    assert _same(_resolver(), "Chandra Bhagavatula", "Chandra Bhagavat")  # cut by a line end
    assert _same(_resolver(), "Stoeger", "Stoeger W")  # initials are no words
    assert _same(_resolver(), "Zejiang Shenα", "Zejiang Shen")
    assert _same(
        _resolver(), "Differentiation of Pseudo-inverses", "Differentiation of Pseudoinverses"
    )


def test_several_candidates_that_nothing_sets_apart_mean_a_new_entity() -> None:
    resolver = _resolver()
    yinhan = resolver.resolve("Yinhan Liu", "name", "name")
    pengfei = resolver.resolve("Pengfei Liu", "name", "name")
    liu = resolver.resolve("Liu", "name", "name")
    assert len({resolver.root(s) for s in (yinhan, pengfei, liu)}) == 3
    assert _same(_resolver(), "Yinhan Liu", "Liu")  # with one of them alone, it joins


def test_a_more_specific_name_never_joins_a_less_specific_one() -> None:
    assert not _same(_resolver(), "Liu", "Yinhan Liu")
    assert not _same(_resolver(), "Act", "Securities Act")


def test_guards_keep_apart_numbers_initials_negations_and_heads() -> None:
    assert not _same(_resolver(), "GPT 3 model", "GPT model")
    assert not _same(_resolver(), "Item III", "Item II")
    assert not _same(_resolver(), "Paul N", "Paul S")
    assert not _same(_resolver(), "Non-Employee Director", "Employee Director")
    assert not _same(_resolver(), "Preferred Stock Warrants", "Preferred Stock")
    assert not _same(_resolver(), "Annual Meeting of the Association", "Association")
    assert not _same(_resolver(), "Long Papers", "Short Papers")
    assert not _same(_resolver(), "Austria", "Vienna")


def test_exact_mode_is_the_exact_name_baseline() -> None:
    resolver = _resolver(mode="exact")
    a = resolver.resolve("Semantic Scholar corpus", "name", "name")
    b = resolver.resolve("semantic scholar corpora", "name", "name")  # not the same key
    c = resolver.resolve("Semantic Scholar Corpus", "name", "name")  # the same key
    d = resolver.resolve("Dense Retriever", "name", "name", alias="DR")  # no alias merging
    assert resolver.root(a) == resolver.root(c) != resolver.root(b)
    assert len(resolver.roots()) == 4 and resolver.root(d) is not None


# -- the real corpus --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dpr_entities(corpus_db) -> list[tuple]:
    doc_id = doc_id_of(corpus_db, "2004.04906v3_dpr.pdf")
    return corpus_db.execute(
        "SELECT entity_id, name, entity_type, aliases, mention_count FROM entities "
        "WHERE doc_id = ?",
        [doc_id],
    ).fetchall()


def test_dpr_and_its_long_form_are_one_entity_and_bm25_another(dpr_entities) -> None:
    def holding(name: str) -> list[tuple]:
        return [e for e in dpr_entities if name in (e[1], *e[3])]

    (dpr,) = holding("DPR")
    assert "Dense Passage Retriever" in (dpr[1], *dpr[3])
    (bm25,) = holding("BM25")
    assert bm25[0] != dpr[0]
    assert dpr[4] >= 40 and bm25[4] >= 40  # both are central to the paper


def test_tables_and_their_headers_are_typed_entities_linked_in_the_graph(corpus_db) -> None:
    doc_id = doc_id_of(corpus_db, "2004.04906v3_dpr.pdf")
    headers = corpus_db.execute(
        """
        SELECT h.name FROM relations r
        JOIN entities h ON h.entity_id = r.source_id
        JOIN entities t ON t.entity_id = r.target_id
        WHERE r.doc_id = ? AND r.relation = 'header_of' AND t.name = 'Table 2'
        """,
        [doc_id],
    ).fetchall()
    assert {"Top-20", "Top-100", "TREC"} <= {h for (h,) in headers}
    table_node = corpus_db.execute(
        """
        SELECT count(*) FROM entity_links l JOIN entities e USING (entity_id)
        JOIN tree_nodes n ON n.node_id = l.node_id
        WHERE e.doc_id = ? AND e.name = 'Table 2' AND e.entity_type = 'table'
          AND n.node_type = 'table'
        """,
        [doc_id],
    ).fetchone()[0]
    assert table_node == 1


def test_every_link_and_relation_points_at_existing_rows(corpus_db) -> None:
    orphans = corpus_db.execute(
        """
        SELECT
          (SELECT count(*) FROM entity_links l WHERE NOT EXISTS
              (SELECT 1 FROM tree_nodes n WHERE n.node_id = l.node_id)),
          (SELECT count(*) FROM entity_links l WHERE NOT EXISTS
              (SELECT 1 FROM entities e WHERE e.entity_id = l.entity_id)),
          (SELECT count(*) FROM relations r WHERE NOT EXISTS
              (SELECT 1 FROM entities e WHERE e.entity_id = r.source_id)
              OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.entity_id = r.target_id))
        """
    ).fetchone()
    assert orphans == (0, 0, 0)
    per_doc = corpus_db.execute("SELECT count(DISTINCT doc_id) FROM entities").fetchone()[0]
    with_text = corpus_db.execute("SELECT count(*) FROM documents WHERE has_text").fetchone()[0]
    assert per_doc >= with_text
