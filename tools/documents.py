"""What is indexed: the document list and the index's row counts."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from docsym.runtime.bounds import jsonable
from docsym.storage import schema
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.filters import MAX_FILTER_CHARS
from docsym.tools.results import TableResult, growth_note
from docsym.tools.spec import MAX_NAME_CHARS, Arguments, Offset, ToolSpec

MAX_DOCUMENTS = 200
MAX_COMPLETIONS = 100  # MCP caps a completion at 100 values


# A document's stage (indexer/dense_stage.py): written and searchable by keyword, then complete
# once its vectors are written.
KEYWORD_ONLY = "keyword only (vectors coming)"
COMPLETE = "complete"


class IndexStatus(BaseModel):
    index: str  # the index directory, or the PostgreSQL store's URL without its password
    row_counts: dict[str, int]
    awaiting_vectors: int  # documents searchable by keyword only, their vectors still coming


def list_documents(store: Store, filter: str = "", limit: int = 50, offset: int = 0) -> TableResult:
    """Documents whose title, file name, format or doc_id contains ``filter`` (any case)."""
    if not 1 <= limit <= MAX_DOCUMENTS:
        raise ToolError(f"limit must be between 1 and {MAX_DOCUMENTS}, got {limit}")
    if offset < 0:
        raise ToolError(f"offset must be >= 0, got {offset}")
    if len(filter) > 200:
        raise ToolError("filter is a plain substring of title or file name; keep it short")
    con = store.sql()
    where = "WHERE strpos(lower(concat_ws(' ', title, file_name, format, doc_id)), lower(?)) > 0"
    total = con.execute(f"SELECT count(*) FROM documents {where}", [filter]).fetchone()[0]
    cursor = con.execute(
        "SELECT doc_id, title, file_name, format, page_count, year, has_text FROM documents "
        f"{where} ORDER BY file_name, doc_id LIMIT ? OFFSET ?",
        [filter, limit, offset],
    )
    columns = [d[0] for d in cursor.description] + ["stage"]
    awaiting = store.awaiting_vectors()
    rows = [
        [jsonable(v) for v in row] + [KEYWORD_ONLY if row[0] in awaiting else COMPLETE]
        for row in cursor.fetchall()
    ]
    notes = [growth_note(store)]
    if offset + len(rows) < total:
        notes.append(
            f"{total} documents in all; call again with offset={offset + len(rows)} for more."
        )
    note = "\n".join(n for n in notes if n) or None
    return TableResult(columns=columns, rows=rows, truncated=offset + len(rows) < total, note=note)


def doc_ids_starting(
    store: Store, prefix: str, limit: int = MAX_COMPLETIONS
) -> tuple[list[str], int]:
    """The first ``limit`` doc_ids that start with ``prefix`` (any case), in order, and how many
    start with it in all: what a client offers as it completes a doc_id."""
    if len(prefix) > MAX_NAME_CHARS:  # longer than any id a tool takes: it matches nothing
        return [], 0
    con = store.sql()
    where = "WHERE strpos(lower(doc_id), lower(?)) = 1"
    total = con.execute(f"SELECT count(*) FROM documents {where}", [prefix]).fetchone()[0]
    rows = con.execute(
        f"SELECT doc_id FROM documents {where} ORDER BY doc_id LIMIT ?", [prefix, limit]
    ).fetchall()
    return [row[0] for row in rows], int(total)


def index_status(store: Store) -> IndexStatus:
    con = store.sql()
    counts = {
        t.name: con.execute(f"SELECT count(*) FROM {t.name}").fetchone()[0] for t in schema.TABLES
    }
    awaiting = len(store.awaiting_vectors())
    return IndexStatus(index=store.location, row_counts=counts, awaiting_vectors=awaiting)


class ListDocumentsArgs(Arguments):
    filter: Annotated[
        str,
        Field(
            description="Substring of title, file name or format; empty for all",
            max_length=MAX_FILTER_CHARS,
        ),
    ] = ""
    limit: Annotated[int, Field(ge=1, le=MAX_DOCUMENTS)] = 50
    offset: Offset = 0


LIST_DOCUMENTS = ToolSpec(
    name="list_documents",
    summary="what is indexed (doc_id, title, pages).",
    description=(
        "List indexed documents: doc_id, title, file name, format, page count, year, and "
        "stage ('complete', or 'keyword only' while its vectors are still being written). Use "
        "the doc_id in run_sql WHERE clauses and in other tools."
    ),
    arguments=ListDocumentsArgs,
    function=list_documents,
)
