"""Bounded tabular results shared by the tools: rows plus a note on what was cut."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

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
        return with_note(markdown_table(self.columns, self.rows), self.note)


def markdown_row(values: list[Any]) -> str:
    return "| " + " | ".join(markdown_cell(v) for v in values) + " |"


def with_note(text: str, note: str | None) -> str:
    return f"{text}\n\n{note}" if note else text


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A GitHub markdown table; cells escaped by ``markdown_cell``."""
    rule = "|" + "---|" * len(header)
    return "\n".join([markdown_row(header), rule, *map(markdown_row, rows)])


def page_labels(store: Store) -> dict[tuple[str, int], str]:
    """(doc_id, page_number) -> the page's printed label, for the pages whose label differs from
    their number ('iv', '24' on PDF page 26); read once per index version."""
    return store.derived("page-labels", _read_page_labels)


def _read_page_labels(store: Store) -> dict[tuple[str, int], str]:
    sql = "SELECT doc_id, page_number, label FROM pages WHERE label IS NOT NULL"
    rows = store.sql().execute(sql).fetchall()
    return {(doc, page): label for doc, page, label in rows if label and label != str(page)}


def page_citation(page_number: int | None, label: str | None) -> str:
    """'26 (printed 24)' where the printed label differs, else '26'; '' without a page."""
    if page_number is None:
        return ""
    return f"{page_number} (printed {label})" if label else str(page_number)


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
