"""Office formats: DOCX, HTML, PPTX and Markdown through docling, XLSX through openpyxl.

Every format ends in the same ``ParsedDocument`` as a PDF, so the same views, tree and search
serve it. What a "page" is depends on the format: a PPTX page is a slide, an XLSX page a sheet
(1-based, workbook order, and a level-1 section named after the sheet); DOCX, HTML and Markdown
have no pages: their items have page_number NULL and no ``pages`` rows, and are located by
section and reading order (``seq``, ``tree_nodes.ordinal``) instead.
"""

from __future__ import annotations

from docsym.indexer.office.parsers import (
    parse_docx,
    parse_html,
    parse_markdown,
    parse_pptx,
    parse_xlsx,
)

__all__ = ["parse_docx", "parse_html", "parse_markdown", "parse_pptx", "parse_xlsx"]
