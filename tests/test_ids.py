"""storage/ids.py: every kind of id is built and parsed back, no two kinds ever give the same id,
and the entity and relation ids of before schema version 7 resolve to today's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docsym.storage import ids, schema

DOC_IDS = st.text("0123456789abcdef", min_size=16, max_size=16)
NUMBERS = st.integers(min_value=0, max_value=10**9)
CHILD_KINDS = [k for k in ids.KINDS if k.parent is not None]


def _parent(draw, kind: ids.Kind, doc_id: str) -> str:
    """An id of ``kind``'s parent kind in ``doc_id``."""
    if kind.parent == ids.DOCUMENT:
        return doc_id
    parent = ids.BY_NAME[kind.parent]
    return ids.build(parent, _parent(draw, parent, doc_id), draw(NUMBERS))


@st.composite
def any_id(draw) -> tuple[ids.Kind, str, tuple[int, ...], str]:
    kind = draw(st.sampled_from(CHILD_KINDS))
    doc_id = draw(DOC_IDS)
    parent = _parent(draw, kind, doc_id)
    numbers = tuple(draw(NUMBERS) for _ in range(2 if kind.second else 1))
    return kind, parent, numbers, doc_id


@given(any_id())
def test_every_kind_is_built_and_parsed_back(case) -> None:
    kind, parent, numbers, doc_id = case
    built = ids.build(kind, parent, *numbers)
    assert ids.parse(built) == ids.ParsedId(kind, parent, numbers, doc_id)
    assert ids.doc_id_of(built) == doc_id
    assert ids.current(built, kind.name) == built


@given(any_id(), any_id())
def test_distinct_kinds_never_share_an_id(a, b) -> None:
    """Two ids are equal only when kind, parent and numbers all are."""
    (kind_a, parent_a, numbers_a, _), (kind_b, parent_b, numbers_b, _) = a, b
    same = ids.build(kind_a, parent_a, *numbers_a) == ids.build(kind_b, parent_b, *numbers_b)
    assert same == ((kind_a, parent_a, numbers_a) == (kind_b, parent_b, numbers_b))


@given(DOC_IDS)
def test_a_doc_id_is_a_document(doc_id: str) -> None:
    assert ids.parse(doc_id) == ids.ParsedId(ids.BY_NAME[ids.DOCUMENT], None, (), doc_id)


def test_the_builders_give_the_documented_forms() -> None:
    doc = "0a1b2c3d4e5f6071"
    table = ids.table_id(doc, 1)
    entity = ids.entity_id(doc, 7)
    assert [
        ids.page_id(doc, 5),
        ids.section_id(doc, 3),
        ids.chunk_id(doc, 12),
        ids.sentence_id(doc, 40),
        table,
        ids.image_id(doc, 2),
        ids.equation_id(doc, 4),
        ids.reference_id(doc, 9),
        ids.node_id(doc, 0),
        entity,
        ids.relation_id(doc, 8),
        ids.cell_id(table, 2, 5),
        ids.table_row_id(table, 2),
        ids.summary_id(table, "row", 0),
        ids.summary_id(table, "col", 3),
        ids.link_id(entity, ids.node_id(doc, 40)),
    ] == [
        f"{doc}-p5",
        f"{doc}-s3",
        f"{doc}-c12",
        f"{doc}-x40",
        f"{doc}-t1",
        f"{doc}-i2",
        f"{doc}-e4",
        f"{doc}-r9",
        f"{doc}-n0",
        f"{doc}-ent7",
        f"{doc}-rel8",
        f"{doc}-t1-r2c5",
        f"{doc}-t1-r2",
        f"{doc}-t1-row0",
        f"{doc}-t1-col3",
        f"{doc}-ent7-n40",
    ]


def test_the_kinds_name_real_views_and_columns() -> None:
    for kind in ids.KINDS:
        if kind.view is not None:
            assert schema.table(kind.view).column(kind.column).primary_key, kind.name
    keyed = {t.name for t in schema.TABLES}
    assert keyed == {k.view for k in ids.KINDS if k.view}, "a view without an id kind"


@pytest.mark.parametrize(
    "value",
    ["", "-s3", "d-", "d-s", "d-3", "d-s03", "d-S3", "d-q3", "d-s3c4", "d-t1-s3", "d-t1-r2d5",
     "d-e1-n3", "d-ent1-n3-n4", "d s3", "d-s３", "d-s3 ", None, 7],
)  # fmt: skip
def test_what_is_no_id(value) -> None:
    assert ids.parse(value) is None


def test_old_entity_relation_and_link_ids_resolve_where_only_they_can_be_meant() -> None:
    doc = "0a1b2c3d4e5f6071"
    assert ids.current(f"{doc}-e3", "entity") == f"{doc}-ent3"
    assert ids.current(f"{doc}-r3", "relation") == f"{doc}-rel3"
    assert ids.current(f"{doc}-e3-n40", "link") == f"{doc}-ent3-n40"
    assert ids.current(f"{doc}-ent3-n40", "link") == f"{doc}-ent3-n40"
    # elsewhere -e and -r keep meaning equations and references
    assert ids.kind_of(f"{doc}-e3") == "equation" and ids.kind_of(f"{doc}-r3") == "reference"
    assert ids.current(f"{doc}-e3", "equation") == f"{doc}-e3"
    assert ids.current(f"{doc}-s3", "entity") is None
    assert ids.current(f"{doc}-t1-r3", "relation") is None  # a table row, never a relation
    assert ids.current("nonsense", "link") is None


def test_builders_refuse_what_has_no_id() -> None:
    with pytest.raises(ValueError):
        ids.build("chunk", "d", -1)
    with pytest.raises(ValueError):
        ids.build("cell", "d-t0", 1)
    with pytest.raises(ValueError):
        ids.summary_id("d-t0", "diagonal", 0)
    with pytest.raises(ValueError):
        ids.link_id("d-ent0", "d-s4")
