"""How the command line prints: for a person at a terminal, or for a pipe, a file or a log.

At a terminal, tables are rich tables fitted to the window. Anywhere else nothing is wrapped,
folded or cut to a width: a table is tab-separated lines (a header, then one line per row) that
``cut``, ``sort`` and ``awk`` read, and ``--json`` is the tool's structured content alone.
Notes and errors go to stderr, so stdout holds only the answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:  # the tools load the store's libraries: only the commands that search do
    from docsym.tools.search import SearchHit, SearchResult

# Messages are never folded: a path or a reason stays on one line for logs and pipes.
err = Console(stderr=True, soft_wrap=True)
out = Console()

# Escapes that keep one value in one tab-separated cell (PostgreSQL's COPY text format).
_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def at_terminal() -> bool:
    return out.is_terminal


def tsv_cell(value: Any) -> str:
    """One value as one cell, its tabs, newlines and backslashes escaped."""
    return _shown(value).translate(_TSV_ESCAPES)


def tsv_line(values: Sequence[Any]) -> str:
    return "\t".join(tsv_cell(v) for v in values)


def print_table(
    header: Sequence[str] | None,
    rows: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    right: Sequence[str] = (),
) -> None:
    """A rich table at a terminal; elsewhere the title as a ``# `` line, the header (when there
    is one) and one tab-separated line per row. ``right``: columns aligned right at a terminal."""
    if not at_terminal():
        lines = [f"# {title}"] if title else []
        lines += ([tsv_line(header)] if header else []) + [tsv_line(row) for row in rows]
        _write(lines)
        return
    table = Table(title=Text(title) if title else None, show_header=header is not None)
    for name in header or [""] * (len(rows[0]) if rows else 0):
        table.add_column(name, justify="right" if name in right else "left", overflow="fold")
    for row in rows:
        # Text, not str: a value such as "[red]" is data, never rich markup.
        table.add_row(*(Text(_shown(v)) for v in row))
    out.print(table)


def print_text(text: str) -> None:
    """Text as it is (markdown from a tool): never markup, emoji codes or wrapping."""
    if at_terminal():
        out.print(Text(text), soft_wrap=True)
    else:
        _write([text])


def print_json(data: Any) -> None:
    """JSON on stdout and nothing else: coloured at a terminal, plain text elsewhere."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    if at_terminal():
        out.print_json(text)
    else:
        _write([text])


def print_hits(result: SearchResult) -> None:
    """Each hit with what cites it: hit id (table.column:primary key, as MCP clients see it),
    doc_id, page with its printed label, bounding box, and the answering text. One line per hit
    in a pipe; at a terminal a heading line per hit with its text below, never squeezed into a
    narrow column."""
    header = ("#", "score", "hit", "doc_id", "page", "bbox", "text")
    if not at_terminal():
        _write([tsv_line(header), *(tsv_line(_hit_cells(hit)) for hit in result.hits)])
        return
    out.print(Text(f"{result.mode}: {result.query}", style="bold"))
    for hit in result.hits:
        rank, score, hit_id, doc_id, page, bbox, text = _hit_cells(hit)
        heading = Text.assemble(
            (f"{rank}. ", "bold"),
            f"{score}  ",
            (hit_id, "cyan"),
            f"  doc {doc_id}",
            f"  page {page}" if page else "",
            f"  bbox {bbox}" if bbox else "",
        )
        out.print(heading)
        out.print(Padding(Text(text), (0, 0, 1, 4)))
    if not result.hits:
        err.print("no hits")


def hit_id(hit: SearchHit) -> str:
    """``chunks.text:abc-c12``: the view and row a hit came from, as the MCP result names it."""
    return f"{hit.table_name}.{hit.column_name}:{hit.primary_key}"


def _hit_cells(hit: SearchHit) -> tuple[str, ...]:
    from docsym.tools.results import page_citation

    return (
        str(hit.rank),
        f"{hit.score:.4f}",
        hit_id(hit),
        hit.doc_id,
        page_citation(hit.page_number, hit.page_label),
        json.dumps(hit.bbox) if hit.bbox else "",
        hit.text,
    )


def _shown(value: Any) -> str:
    """A value as text: lists and objects as JSON, None as nothing."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _write(lines: list[str]) -> None:
    """Plain lines on stdout, as they are: no markup, no wrapping, no width."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    sys.stdout.flush()
