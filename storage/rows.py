"""How a view of the index is declared: a typed row class whose fields carry their descriptions.

A view is a dataclass decorated with ``@view(name, description, gist)``; each field is
``Annotated[python type, Col("what it means", ...)]``. From that one declaration come:

- the row type the indexer builds (``ChunkRow(chunk_id=..., ...)``): keyword-only and without
  defaults, so a misspelt or missing column fails where the row is made, naming the column;
- the ``Table``/``Column`` description that feeds the DDL of every backend, the text clients read
  and the encodable columns, whose cells become search entries (``storage/schema.py``).

SQL types follow the Python types (str VARCHAR, int INTEGER, float DOUBLE, bool BOOLEAN,
datetime TIMESTAMP, bytes BLOB, list[str] VARCHAR[], list[float] DOUBLE[], list[list[float]]
DOUBLE[][]); an optional type (``X | None``) is a nullable column, any other is NOT NULL.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar, dataclass_transform

BBOX_NOTE = "[x0, y0, x1, y1] in PDF points, origin top-left of the page"

_SQL_TYPES: dict[Any, str] = {
    str: "VARCHAR",
    int: "INTEGER",
    float: "DOUBLE",
    bool: "BOOLEAN",
    datetime: "TIMESTAMP",
    list[str]: "VARCHAR[]",
    list[float]: "DOUBLE[]",
    list[list[float]]: "DOUBLE[][]",
    bytes: "BLOB",
}


@dataclass(frozen=True)
class Col:
    """What a row field means and how the index treats it."""

    description: str
    primary_key: bool = False
    encodable: bool = False  # its non-empty cells are embedded as search entries
    # ... and also indexed for BM25. Off for short names (entities.name): thousands of
    # one-word entries would shrink BM25's average length and tilt it against long passages.
    keyword: bool = True
    # ... and also given vectors in the dense collections. Off where vector_search over the view
    # found less than the pooled view it sums up, which costs no encoding (docs/RESULTS.md).
    dense: bool = True
    sql_type: str | None = None  # when the Python type says too little (BIGINT)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    primary_key: bool = False
    encodable: bool = False
    keyword: bool = True
    dense: bool = True
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    gist: str  # a few words for prompts; the description is for the schema resource
    columns: tuple[Column, ...]
    indexes: tuple[str, ...]  # columns to index, e.g. "doc_id"
    row_type: type[Row]

    @property
    def primary_key(self) -> str:
        return next(c.name for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name} has no column {name!r}")


class Row:
    """Base of every view's row type; ``table`` is the view it belongs to."""

    __slots__ = ()
    table: ClassVar[Table]

    def value(self, column: str) -> Any:
        return getattr(self, column)


R = TypeVar("R", bound=Row)


@dataclass_transform(kw_only_default=True)
def view(
    name: str, description: str, gist: str, indexes: tuple[str, ...] = ()
) -> Callable[[type[R]], type[R]]:
    """Make the decorated class a row type (a slotted, keyword-only dataclass) of table ``name``."""

    def declare(cls: type[R]) -> type[R]:
        row_type = dataclass(slots=True, kw_only=True)(cls)
        row_type.table = Table(name, description, gist, _columns(row_type), indexes, row_type)
        return row_type

    return declare


def _columns(row_type: type) -> tuple[Column, ...]:
    hints = typing.get_type_hints(row_type, include_extras=True)
    columns = []
    for f in dataclasses.fields(row_type):
        annotated = hints[f.name]
        meta = next((m for m in getattr(annotated, "__metadata__", ()) if isinstance(m, Col)), None)
        if meta is None:
            raise TypeError(f"{row_type.__name__}.{f.name} needs Annotated[type, Col(...)]")
        python_type, nullable = _unwrap_optional(typing.get_args(annotated)[0])
        sql_type = meta.sql_type or _SQL_TYPES.get(python_type)
        if sql_type is None:
            raise TypeError(f"{row_type.__name__}.{f.name}: no SQL type for {python_type!r}")
        columns.append(
            Column(
                f.name,
                sql_type,
                meta.description,
                primary_key=meta.primary_key,
                encodable=meta.encodable,
                keyword=meta.keyword,
                dense=meta.dense,
                nullable=nullable and not meta.primary_key,
            )
        )
    return tuple(columns)


def _unwrap_optional(python_type: Any) -> tuple[Any, bool]:
    """(the type without None, whether None was allowed)."""
    if isinstance(python_type, types.UnionType) or typing.get_origin(python_type) is typing.Union:
        members = [a for a in typing.get_args(python_type) if a is not type(None)]
        if len(members) == 1:
            return members[0], True
    return python_type, False


class DocumentRows:
    """One document's rows of every view, grouped by row type. Built once, then read."""

    def __init__(self, rows: Iterable[Row] = ()) -> None:
        self._by_type: dict[type[Row], list[Row]] = {}
        for row in rows:
            if not isinstance(row, Row):
                raise TypeError(f"expected a view row (storage.schema), got {type(row).__name__}")
            self._by_type.setdefault(type(row), []).append(row)

    def of(self, row_type: type[R]) -> list[R]:
        return self._by_type.get(row_type, [])  # type: ignore[return-value]

    def of_table(self, table: Table) -> list[Row]:
        return self._by_type.get(table.row_type, [])

    def merged(self, other: DocumentRows) -> DocumentRows:
        """These rows and ``other``'s, in one new collection."""
        return DocumentRows([*self, *other])

    def __iter__(self) -> typing.Iterator[Row]:
        for group in self._by_type.values():
            yield from group
