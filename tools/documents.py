"""What is indexed: the document list and the index's row counts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from docsym.runtime.bounds import jsonable
from docsym.runtime.formats import format_of
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.filters import MAX_FILTER_CHARS
from docsym.tools.results import TableResult, growth_note, trimmed
from docsym.tools.spec import MAX_NAME_CHARS, Arguments, Offset, ToolSpec

MAX_DOCUMENTS = 200
MAX_COMPLETIONS = 100  # MCP caps a completion at 100 values


# A document's stage (indexer/dense_stage.py): written and searchable by keyword, then complete
# once its vectors are written.
KEYWORD_ONLY = "keyword only (vectors coming)"
COMPLETE = "complete"


# How many failed files a status shows (all are counted, and list_documents pages them).
MAX_FAILED_SHOWN = 50


class FailedFileStatus(BaseModel):
    path: str
    outcome: str  # failed or skipped
    reason: str
    recorded_at: str  # ISO 8601, UTC


class IndexStatus(BaseModel):
    index: str  # the index directory, or the PostgreSQL store's URL without its password
    row_counts: dict[str, int]
    awaiting_vectors: int  # documents searchable by keyword only, their vectors still coming
    indexing: bool = Field(description="An index run is alive (its vectors are being written).")
    failed_count: int = Field(description="Files the index could not read.")
    failed_files: list[FailedFileStatus] = Field(
        description=f"The newest {MAX_FAILED_SHOWN} of them, with why."
    )


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
    documents = con.execute(f"SELECT count(*) FROM documents {where}", [filter]).fetchone()[0]
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
    # After the documents, the files that could not be indexed, paged alike.
    failed = _failed_rows(store, filter)
    start = max(0, offset - documents)
    rows += failed[start : start + limit - len(rows)]
    total = documents + len(failed)
    notes = [growth_note(store), _empty_note(total, filter)]
    if offset + len(rows) < total:
        notes.append(
            f"{total} in all ({documents} documents, {len(failed)} files not indexed); call "
            f"again with offset={offset + len(rows)} for more."
        )
    note = "\n".join(n for n in notes if n) or None
    return TableResult(columns=columns, rows=rows, truncated=offset + len(rows) < total, note=note)


def _failed_rows(store: Store, filter: str) -> list[list]:
    """Files that could not be indexed, as list_documents rows: no doc_id, the stage saying
    what happened ("failed: <reason>")."""
    rows = []
    for failed in store.failed_files():
        fmt = format_of(Path(failed.path))
        name = fmt.name if fmt else None
        if filter.lower() in f"{failed.file_name} {name or ''}".lower():
            stage = f"{failed.outcome}: {trimmed(failed.reason, 300)}"
            rows.append([None, None, failed.file_name, name, None, None, None, stage])
    return rows


def _empty_note(total: int, filter: str) -> str | None:
    if total:
        return None
    if filter:
        return (
            f"No document's title, file name or format contains {trimmed(filter, 50)!r}: "
            "call list_documents with filter='' to list them all."
        )
    return "The index holds no documents yet: docsym index PATH... adds them."


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
    counts = store.row_counts()
    failed = store.failed_files()
    return IndexStatus(
        index=store.location,
        row_counts=counts,
        awaiting_vectors=len(store.awaiting_vectors()),
        indexing=store.indexing().alive,
        failed_count=len(failed),
        failed_files=[
            FailedFileStatus(
                path=f.path,
                outcome=f.outcome,
                reason=f.reason,
                recorded_at=f.recorded_at.isoformat(timespec="seconds"),
            )
            for f in failed[:MAX_FAILED_SHOWN]
        ],
    )


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
        "stage ('complete', or 'keyword only' while its vectors are still being written); then "
        "the files that could not be indexed, without a doc_id, their stage 'failed: <reason>' "
        "or 'skipped: <reason>'. Use the doc_id in run_sql WHERE clauses and in other tools."
    ),
    arguments=ListDocumentsArgs,
    function=list_documents,
)
