"""select_subtree on real papers: section subtrees, type and page filters, exact counts."""

from __future__ import annotations

import pytest

from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.subtree import select_subtree
from tests.conftest import doc_id_of

DPR = "2004.04906v3_dpr.pdf"


def test_experiments_subtree_holds_its_tables_and_nothing_else(corpus_store, corpus_db) -> None:
    dpr = doc_id_of(corpus_db, DPR)
    result = select_subtree(
        corpus_store, dpr, section="Experiments: Passage Retrieval", node_types=["table"]
    )
    assert result.root.title == "Experiments: Passage Retrieval"
    labels = [n.text.split(":")[0] for n in result.nodes]
    assert labels == ["Table 2", "Table 3"]
    # every table of the paper outside section 5 is absent
    outside = corpus_db.execute(
        "SELECT t.label FROM tables t JOIN sections s USING (section_id) "
        "WHERE t.doc_id = ? AND NOT (s.number = '5' OR s.number LIKE '5.%')",
        [dpr],
    ).fetchall()
    assert outside and not {r[0] for r in outside} & set(labels)
    assert all(n.bbox and len(n.bbox) == 4 and n.ref_table == "tables" for n in result.nodes)


def test_count_of_tables_in_a_section_matches_sql(corpus_store, corpus_db) -> None:
    dpr = doc_id_of(corpus_db, DPR)
    counted = select_subtree(corpus_store, dpr, section="5", node_types=["table"]).counts.get(
        "table", 0
    )
    by_sql = corpus_db.execute(
        "SELECT count(*) FROM tables t JOIN sections s USING (section_id) "
        "WHERE t.doc_id = ? AND (s.number = '5' OR s.number LIKE '5.%')",
        [dpr],
    ).fetchone()[0]
    assert counted == by_sql == 2


def test_figures_in_a_page_range(corpus_store, corpus_db) -> None:
    dpr = doc_id_of(corpus_db, DPR)
    result = select_subtree(corpus_store, dpr, node_types=["image"], pages=[3, 5])
    assert [n.text.split(":")[0] for n in result.nodes] == ["Figure 1"]
    assert all(3 <= n.page_start <= 5 for n in result.nodes)


def test_bad_arguments(corpus_store, corpus_db) -> None:
    dpr = doc_id_of(corpus_db, DPR)
    with pytest.raises(NotFoundError, match="get_outline"):
        select_subtree(corpus_store, dpr, section="no such section title")
    with pytest.raises(ToolError, match="node_types"):
        select_subtree(corpus_store, dpr, node_types=["paragraph"])
    with pytest.raises(ToolError, match="pages"):
        select_subtree(corpus_store, dpr, pages=[5, 3])
    with pytest.raises(NotFoundError, match="list_documents"):
        select_subtree(corpus_store, "../../etc/passwd")
