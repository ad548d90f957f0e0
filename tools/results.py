"""Bounded tabular results shared by the tools: rows plus a note on what was cut."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from docsym.runtime.formats import format_named
from docsym.storage.derived import of_documents
from docsym.storage.store import Store

# Clients reject responses over ~25k tokens; NeuSym-RAG caps an observation at ~5k tokens.
MAX_RESULT_CHARS = 20_000


class ToolResult(BaseModel):
    """What every tool returns: structured content (the model's fields) that also renders
    itself as the markdown a model reads."""

    def to_markdown(self) -> str:
        raise NotImplementedError

    def image_png(self) -> bytes | None:
        """A picture to send along with the text (view_page); None for the rest."""
        return None


class TableResult(ToolResult):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False
    note: str | None = Field(default=None, description="What was cut and how to get the rest.")

    def to_markdown(self) -> str:
        if not self.rows:  # one line, not a bare header
            return f"No rows. {self.note}" if self.note else "No rows."
        return with_note(markdown_table(self.columns, self.rows), self.note)


def markdown_row(values: list[Any]) -> str:
    return "| " + " | ".join(markdown_cell(v) for v in values) + " |"


def with_note(text: str, note: str | None) -> str:
    return f"{text}\n\n{note}" if note else text


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A GitHub markdown table; cells escaped by ``markdown_cell``."""
    rule = "|" + "---|" * len(header)
    return "\n".join([markdown_row(header), rule, *map(markdown_row, rows)])


# What a page_label field holds: how a page is cited where its number alone would not do.
PAGE_LABEL_HELP = (
    "how the page is cited where its number alone differs from what the reader sees: "
    "'printed 24' (the number printed on a PDF page), 'sheet Revenue' (an XLSX sheet's name); "
    "cite 'page N (printed 24)' or 'page N (sheet Revenue)'"
)


@dataclass(frozen=True)
class PageLabels:
    """(doc_id, page_number) -> how the page is cited besides its number, held per document."""

    by_document: Mapping[str, Mapping[int, str]]

    def get(self, page: tuple[str, int], default: str | None = None) -> str | None:
        doc_id, page_number = page
        return self.by_document.get(doc_id, {}).get(page_number, default)


def page_labels(store: Store) -> PageLabels:
    """How each page is cited besides its number: 'printed 24' where a PDF page's printed label
    differs from its number ('iv', '24' on PDF page 26), 'sheet Revenue' for every sheet of a
    spreadsheet; read per index version for the documents added or changed since the last."""
    return PageLabels(store.library("page-labels", _read_page_labels, {}))


def _read_page_labels(store: Store, doc_ids: list[str] | None) -> dict[str, dict[int, str]]:
    where, params = of_documents(doc_ids, "p.doc_id")
    sql = (
        "SELECT p.doc_id, p.page_number, p.label, d.format FROM pages p "
        f"JOIN documents d ON d.doc_id = p.doc_id WHERE p.label IS NOT NULL AND {where}"
    )
    rows = store.sql().execute(sql, params).fetchall()
    labels: dict[str, dict[int, str]] = {}
    for doc, page, label, format_name in rows:
        fmt = format_named(format_name)
        if fmt is not None and fmt.pages == "sheet":  # known by its name, whatever its position
            labels.setdefault(doc, {})[page] = f"sheet {label}"
        elif label and label != str(page):
            labels.setdefault(doc, {})[page] = f"printed {label}"
    return labels


def growth_note(store: Store, dense: bool = True) -> str | None:
    """What a result cannot show because the index is incomplete, if anything: files a run
    under way has not made searchable, documents still without vectors (only where ``dense``
    search took part), files that could not be indexed."""
    notes = []
    indexing = store.indexing()
    if indexing.files_waiting:
        notes.append(
            f"The index is still growing: {indexing.files_waiting} file(s) of the index run "
            "under way are not searchable yet, so a document that is missing may still come."
        )
    awaiting = len(store.awaiting_vectors()) if dense else 0
    if awaiting:
        when = (
            "their vectors are still being written"
            if indexing.alive
            else "their vectors are waiting for the next run (docsym index writes them)"
        )
        notes.append(
            f"{awaiting} document(s) are searchable by keyword only for now: {when}, so dense "
            "search cannot find them yet and hybrid_search ranks them by their keywords."
        )
    failed = len(store.failed_files())
    if failed:
        notes.append(
            f"{failed} file(s) could not be indexed: list_documents shows each with its reason."
        )
    return " ".join(notes) or None


def page_citation(page_number: int | None, label: str | None) -> str:
    """'26 (printed 24)' where the printed label differs, '2 (sheet Revenue)' for a sheet, else
    '26'; '' without a page. ``label`` is a value of ``page_labels``."""
    if page_number is None:
        return ""
    return f"{page_number} ({label})" if label else str(page_number)


TRIM_MARK = " …"  # ends a text cut to a budget; also joins a table's caption to its cited rows


def one_spaced(text: str | None) -> str:
    """Text with every run of whitespace made one space: how a shown text is compared with the
    stored text it comes from, and with other hits' texts."""
    return " ".join((text or "").split())


def caption_then_rows(caption: str, rows: str) -> str:
    """A table's text as a hit shows it: its caption, one mark, then the rows it cites (a
    caption cut to a budget already ends with the mark)."""
    joint = " " if caption.endswith(TRIM_MARK) else f"{TRIM_MARK} "
    return f"{caption}{joint}{rows}"


def trimmed(text: str | None, size: int = 200) -> str:
    """Text for one cell of a listing, cut to ``size`` characters."""
    return (text or "")[:size]


def markdown_cell(value: Any) -> str:
    """A value made safe for one markdown table cell: pipes escaped, lines joined."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def fit_rows(rows: list[list[Any]], budget: int = MAX_RESULT_CHARS) -> tuple[list[list[Any]], bool]:
    """Keep leading rows while their rendering stays within ``budget`` characters."""
    used = 0
    for i, row in enumerate(rows):
        used += sum(len(markdown_cell(v)) + 3 for v in row)
        if used > budget:
            return rows[:i], True
    return rows, False
