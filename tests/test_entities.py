"""Entity extraction rules, gradient-based resolution, and the entity graph of real papers."""

from __future__ import annotations

import numpy as np
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


# -- gradient-based resolution (BookRAG Algorithm 1) with controlled similarities ---------------
def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _resolver(vectors: dict[str, np.ndarray], **settings) -> Resolver:
    return Resolver(vectors, 3, ResolutionSettings(**settings))


def test_a_sharp_drop_after_the_best_candidate_merges() -> None:
    vectors = {
        "Semantic Scholar": _unit(1, 0, 0),
        "Semantic Scholar corpus": _unit(0.95, 0.31, 0),  # cos 0.95 with the first
        "Wikipedia": _unit(0, 0, 1),
    }
    resolver = _resolver(vectors)
    first = resolver.resolve("Semantic Scholar", "name", "name")
    other = resolver.resolve("Wikipedia", "name", "name")
    merged = resolver.resolve("Semantic Scholar corpus", "name", "name")
    assert resolver.root(merged) == resolver.root(first) != resolver.root(other)
    assert resolver.entities[resolver.root(first)].aliases == ["Semantic Scholar corpus"]


def test_no_drop_among_many_similar_candidates_means_a_new_entity() -> None:
    # five near-identical existing entities: nothing stands out, so the newcomer is its own
    vectors = {f"Model {c}": _unit(1, 0.01 * i, 0) for i, c in enumerate("ABCDE")}
    vectors["Model F"] = _unit(1, 0.03, 0)
    resolver = _resolver(vectors)
    for c in "ABCDE":
        resolver._new(f"Model {c}", "name", "name")
    assert resolver._similar("Model F", "name", "name") is None
    # with one of them alone, the same newcomer merges into it
    single = _resolver(vectors)
    single.resolve("Model C", "name", "name")
    assert single._similar("Model F", "name", "name") == 0


def test_guards_keep_apart_weak_matches_and_different_numbers() -> None:
    vectors = {"GPT 2 model": _unit(1, 0, 0), "GPT 3 model": _unit(1, 0.05, 0)}
    resolver = _resolver(vectors)
    a = resolver.resolve("GPT 2 model", "name", "name")
    b = resolver.resolve("GPT 3 model", "name", "name")
    assert resolver.root(a) != resolver.root(b)
    weak = _resolver({"Alpha Beta": _unit(1, 0, 0), "Gamma Delta": _unit(0.7, 0.71, 0)})
    a = weak.resolve("Alpha Beta", "name", "name")
    b = weak.resolve("Gamma Delta", "name", "name")
    assert weak.root(a) != weak.root(b)


def test_exact_mode_is_the_exact_name_baseline() -> None:
    vectors = {"Semantic Scholar": _unit(1, 0, 0), "Semantic Scholar corpus": _unit(0.95, 0.31, 0)}
    resolver = _resolver(vectors, mode="exact")
    a = resolver.resolve("Semantic Scholar", "name", "name")
    b = resolver.resolve("semantic scholars", "name", "name")  # same normalised name
    c = resolver.resolve("Semantic Scholar corpus", "name", "name")
    d = resolver.resolve("Dense Retriever", "name", "name", alias="DR")  # no alias merging
    assert resolver.root(a) == resolver.root(b) != resolver.root(c)
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
