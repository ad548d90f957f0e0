"""Header paths that ``table_model.finish_table`` cannot see from the grid alone.

Statistical tables (HiTab, Statistics Canada) use two devices that a plain grid loses:
- nested row groups: "Including fruit juice" › "Sex" › "Male", where the nesting is given by
  the labels' indentation, not by separate columns. finish_table keeps one group level (the last
  group row); ``nest_row_groups`` rebuilds the chain from the indents.
- column-header dividers: a row "2015" spanning the same columns as the top header "2004" starts
  a second block whose cells belong to 2015, not 2004. ``apply_column_dividers`` makes the
  divider a header cell and puts its label in the column paths of the cells below it.
Both change only what the grid cannot tell; a table without indents or dividers is untouched.
(These are format-independent and could move into table_model; they run after finish_table
because that module is owned separately.)
"""

from __future__ import annotations

from collections import defaultdict

from docsym.indexer.model import Table, TableCell


def nest_row_groups(table: Table, indents: dict[int, float]) -> None:
    """Prefix each body row's path with the chain of group rows it sits under (by indent)."""
    stub = table.header_cols
    if not stub or table.n_cols <= stub:
        return
    rows = _by_row(table)
    stack: list[tuple[float, str]] = []  # open groups: (indent, label)
    last_group: str | None = None  # the one group finish_table prefixed
    for r in range(table.header_rows, table.n_rows):
        cells = rows.get(r, [])
        labels = [c for c in cells if c.col < stub and c.text.strip()]
        data = [c for c in cells if c.col >= stub and c.text.strip()]
        indent = indents.get(r, 0.0)
        if labels and not data:  # a group row: it labels the rows below it
            while stack and stack[-1][0] >= indent:
                stack.pop()
            outer = [label for _, label in stack]
            last_group = " ".join(_clean(c.text) for c in labels)
            stack.append((indent, last_group))
            for cell in labels:
                cell.row_path = outer + [p for p in cell.row_path if p not in outer]
            continue
        while stack and stack[-1][0] > indent:
            stack.pop()
        outer = [label for _, label in stack]
        for cell in cells:
            path = cell.row_path
            if last_group and path[:1] == [last_group]:
                path = path[1:]
            cell.row_path = outer + path


def apply_column_dividers(table: Table) -> None:
    """Turn body rows that only repeat a top-header span ("2015" under "2004") into headers."""
    stub = table.header_cols
    headers = [c for c in table.cells if c.is_col_header and c.text.strip()]
    rows = _by_row(table)
    active: dict[tuple[int, int], tuple[str, str]] = {}  # (col, span) -> (old, new) label
    for r in range(table.header_rows, table.n_rows):
        cells = rows.get(r, [])
        divider = _divider(cells, stub, headers)
        if divider is not None:
            cell, header = divider
            old, new = _clean(header.text), _clean(cell.text)
            cell.is_col_header, cell.is_row_header = True, False
            cell.value, cell.unit, cell.row_path = None, None, []
            cell.col_path = [*header.col_path[:-1], new]
            active[(cell.col, cell.col_span)] = (old, new)
            continue
        for cell in cells:
            for (col, span), (old, new) in active.items():
                if col <= cell.col < col + span and old in cell.col_path:
                    i = cell.col_path.index(old)
                    cell.col_path = [*cell.col_path[:i], new, *cell.col_path[i + 1 :]]


def _divider(
    cells: list[TableCell], stub: int, headers: list[TableCell]
) -> tuple[TableCell, TableCell] | None:
    texts = [c for c in cells if c.text.strip()]
    if len(texts) != 1 or texts[0].col < stub or texts[0].col_span < 2:
        return None
    cell = texts[0]
    for header in headers:
        if header.col == cell.col and header.col_span == cell.col_span:
            return cell, header
    return None


def _by_row(table: Table) -> dict[int, list[TableCell]]:
    rows: dict[int, list[TableCell]] = defaultdict(list)
    for cell in table.cells:
        rows[cell.row].append(cell)
    return rows


def _clean(text: str) -> str:
    return " ".join(text.split())
