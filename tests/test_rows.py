"""Typed rows: each view of storage/schema.py is a row class; a wrong or missing column fails
where the row is made, not silently in the writer."""

from __future__ import annotations

import dataclasses

import pytest

from docsym.storage import schema
from docsym.storage.rows import DocumentRows
from docsym.storage.schema import ChunkRow


def _chunk(**changes) -> dict:
    values = dict(
        chunk_id="d-c0",
        doc_id="d",
        section_id=None,
        ordinal=0,
        text="Hello.",
        page_number=1,
        page_end=1,
        token_count=4,
        bbox=[72.0, 90.0, 300.0, 102.0],
    )
    return {**values, **changes}


def test_every_table_has_a_row_type_with_its_columns() -> None:
    for table in schema.TABLES:
        fields = [f.name for f in dataclasses.fields(table.row_type)]
        assert fields == [c.name for c in table.columns]
        assert table.row_type.table is table


def test_a_misspelt_column_is_refused_by_name() -> None:
    values = _chunk()
    values["chunk_idd"] = values.pop("chunk_id")
    with pytest.raises(TypeError, match="chunk_idd"):
        ChunkRow(**values)


def test_a_missing_column_is_refused_by_name() -> None:
    values = _chunk()
    del values["token_count"]
    with pytest.raises(TypeError, match="token_count"):
        ChunkRow(**values)


def test_rows_are_grouped_by_view_and_plain_dicts_are_refused() -> None:
    rows = DocumentRows([ChunkRow(**_chunk()), ChunkRow(**_chunk(chunk_id="d-c1", ordinal=1))])
    assert [c.chunk_id for c in rows.of(ChunkRow)] == ["d-c0", "d-c1"]
    assert rows.of(schema.PageRow) == []
    with pytest.raises(TypeError, match="expected a view row"):
        DocumentRows([_chunk()])  # type: ignore[list-item]


def test_sql_types_and_nullability_follow_the_python_types() -> None:
    chunks = schema.table("chunks")
    assert chunks.column("doc_id").type == "VARCHAR" and not chunks.column("doc_id").nullable
    assert chunks.column("page_number").type == "INTEGER" and chunks.column("page_number").nullable
    assert schema.table("table_cells").column("row_path").type == "VARCHAR[]"
    assert schema.table("documents").column("size_bytes").type == "BIGINT"
    ddl = " ".join(schema.ddl())
    assert "chunk_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL, section_id VARCHAR," in ddl
