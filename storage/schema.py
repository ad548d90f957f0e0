"""The index schema: every view (table) and column with its description, in one place.

Each view is a typed row class (``storage/rows.py``): the indexer builds these rows, the writer
stores them, and from the same declarations come the DuckDB DDL (``ddl()``, with ``COMMENT ON``
for every column), the text clients read (``describe()`` for the schema resource, ``compact()``
for prompts) and the *encodable* columns whose cells also become search entries. Changes to
an existing index go through numbered migrations (``storage/migrations.py``).

Conventions stated once for every table:
- ``page_number`` is 1-based; ``bbox`` is ``[x0, y0, x1, y1]`` in PDF points (1/72 inch) with the
  origin at the top-left corner of the page, y growing downwards.
- Ids are stable across re-indexing: ``doc_id`` is derived from the file's content and every other
  id from the ``doc_id`` and the item's position in the document (``storage/ids.py`` builds and
  parses every kind).
"""

from collections.abc import Callable
from datetime import datetime
from typing import Annotated

from docsym.storage.rows import BBOX_NOTE, Col, Row, Table, view

PAGE_NOTE = (
    "1-based; the slide of a PPTX, the sheet of an XLSX; NULL for DOCX, HTML and Markdown, which "
    "have no pages: locate by section instead"
)


def page(what: str = "Page the item is on") -> Col:
    return Col(f"{what} ({PAGE_NOTE}).")


def box(what: str) -> Col:
    return Col(f"Bounding box of {what}: {BBOX_NOTE}.")


DocId = Annotated[str, Col("Document this row belongs to (documents.doc_id).")]
SectionId = Annotated[
    str | None, Col("Innermost section containing the item (sections.section_id).")
]


@view(
    "documents",
    "One row per indexed file: bibliographic metadata and file facts.",
    "one row per file: metadata",
)
class DocumentRow(Row):
    doc_id: Annotated[
        str,
        Col("Stable document id: the first 16 hex digits of the file's SHA-256.", primary_key=True),
    ]
    path: Annotated[
        str,
        Col(
            "Absolute path of the file when it was indexed, as readable text: bytes that are not UTF-8 are shown as \\xNN and control characters escaped (\\n, \\t); path_bytes then holds the exact path."
        ),
    ]
    path_bytes: Annotated[
        bytes | None,
        Col(
            "The path's exact bytes when path had to escape some (a name that is not UTF-8, or holds control characters); NULL otherwise."
        ),
    ]
    file_name: Annotated[str | None, Col("File name without folders, escaped as path is.")]
    format: Annotated[str | None, Col("File format: pdf, docx, html, pptx, xlsx or md.")]
    sha256: Annotated[str | None, Col("SHA-256 of the file's bytes (hex).")]
    size_bytes: Annotated[int | None, Col("File size in bytes.", sql_type="BIGINT")]
    page_count: Annotated[
        int | None,
        Col("Number of pages: PDF pages, PPTX slides, XLSX sheets; 0 for DOCX, HTML and Markdown."),
    ]
    title: Annotated[
        str | None, Col("Title from the file's metadata or first-page layout.", encodable=True)
    ]
    authors: Annotated[list[str] | None, Col("Author names, in printed order.")]
    abstract: Annotated[str | None, Col("Abstract, when the document prints one.", encodable=True)]
    year: Annotated[
        int | None,
        Col("Publication year: as the first pages print it, else the file's creation year."),
    ]
    year_from: Annotated[
        str | None,
        Col(
            "Where year was read: 'page' (printed on the first pages), 'arxiv id', 'doi', or "
            "'file metadata' (the file's creation date, printed nowhere); NULL without a year "
            "or for a document indexed before this was recorded."
        ),
    ]
    venue: Annotated[str | None, Col("Venue or publisher line when printed.")]
    doi: Annotated[str | None, Col("DOI when printed, e.g. 10.18653/v1/2020.acl-main.207.")]
    arxiv_id: Annotated[str | None, Col("arXiv identifier when printed, e.g. 2004.04906v3.")]
    has_text: Annotated[bool | None, Col("False for image-only scans with no text layer.")]
    tldr: Annotated[str | None, Col("Short extractive summary of the document.", encodable=True)]
    indexed_at: Annotated[datetime | None, Col("When this version of the file was indexed (UTC).")]


@view(
    "pages",
    "One row per page: the page text in reading order (two-column aware), without running headers, footers and page numbers.",
    "page text in reading order",
    indexes=("doc_id",),
)
class PageRow(Row):
    page_id: Annotated[str, Col("Page id: '<doc_id>-p<page_number>'.", primary_key=True)]
    doc_id: DocId
    page_number: Annotated[int | None, page("Page number")]
    width: Annotated[float | None, Col("Page width in PDF points (NULL for XLSX sheets).")]
    height: Annotated[float | None, Col("Page height in PDF points (NULL for XLSX sheets).")]
    text: Annotated[str | None, Col("Text of the page in reading order.", encodable=True)]
    has_text: Annotated[bool | None, Col("False when no text was found (not even by OCR).")]
    ocr: Annotated[bool | None, Col("True when the text was read from the page image by OCR.")]
    ocr_confidence: Annotated[
        float | None, Col("Mean OCR confidence (0-1) of that text; NULL without OCR.")
    ]
    summary: Annotated[
        str | None, Col("Extractive summary of the page.", encodable=True, dense=False)
    ]
    label: Annotated[
        str | None,
        Col(
            "The page's own label (the PDF's page labels, e.g. 'iv' or 'A-3'), else the page number printed on it, else NULL; an XLSX sheet's name. It differs from page_number where covers or front matter are unnumbered: cite 'page 26 (printed 24)', or a sheet as 'sheet Revenue'."
        ),
    ]


@view(
    "sections",
    "The heading tree: one row per heading with the text up to the next heading.",
    "the heading tree with each section's text",
    indexes=("doc_id",),
)
class SectionRow(Row):
    section_id: Annotated[str, Col("Section id: '<doc_id>-s<ordinal>'.", primary_key=True)]
    doc_id: DocId
    parent_id: Annotated[
        str | None, Col("Enclosing section (sections.section_id); NULL at the top.")
    ]
    ordinal: Annotated[int | None, Col("Position of the heading in document order (0-based).")]
    level: Annotated[int | None, Col("Heading level, 1 for top-level sections.")]
    number: Annotated[
        str | None,
        Col("Printed section number such as '3', '3.2', 'A' or 'A.1'; NULL if unnumbered."),
    ]
    title: Annotated[str | None, Col("Heading text without its number.", encodable=True)]
    content: Annotated[
        str | None,
        Col("Text under the heading, up to the next heading of any level.", encodable=True),
    ]
    summary: Annotated[
        str | None, Col("Extractive summary of the section.", encodable=True, dense=False)
    ]
    page_start: Annotated[int | None, Col("Page of the heading (1-based; NULL without pages).")]
    page_end: Annotated[int | None, Col("Last page of the section's own text (1-based).")]
    bbox: Annotated[list[float] | None, box("the heading on page_start")]
    source: Annotated[
        str | None,
        Col(
            "Where the heading came from: 'outline' (the PDF's bookmarks), 'layout' (fonts and numbering, bold text in HTML) or 'markup' (heading styles and tags of DOCX, HTML, Markdown; slide titles; sheet names)."
        ),
    ]
    boxes: Annotated[
        list[list[float]] | None,
        Col(
            f"One [page_number, x0, y0, x1, y1] per page the heading and the section's own text cover ({BBOX_NOTE}); NULL without positions (DOCX, HTML, Markdown)."
        ),
    ]


@view(
    "chunks",
    "Sentence-aware passages that fit the embedding model's window, each inside one section.",
    "passages, each in one section",
    indexes=("doc_id",),
)
class ChunkRow(Row):
    chunk_id: Annotated[str, Col("Chunk id: '<doc_id>-c<ordinal>'.", primary_key=True)]
    doc_id: DocId
    section_id: SectionId
    ordinal: Annotated[int | None, Col("Position of the chunk in document order (0-based).")]
    text: Annotated[str | None, Col("Chunk text.", encodable=True)]
    page_number: Annotated[int | None, page("Page where the chunk starts")]
    page_end: Annotated[int | None, Col("Page where the chunk ends (1-based).")]
    token_count: Annotated[
        int | None, Col("Word pieces of the embedding model, special tokens included.")
    ]
    bbox: Annotated[
        list[float] | None,
        box(
            "the chunk's lines on its page (the union of its sentences' boxes; NULL without positions)"
        ),
    ]


@view(
    "sentences",
    "Every sentence of the chunks, with where it is printed: its page and the bounding box of its lines. Cite a fact by the box of the sentence that states it; read_passage reads around it.",
    "each sentence of the chunks with its page and bbox",
    indexes=("doc_id", "chunk_id"),
)
class SentenceRow(Row):
    sentence_id: Annotated[str, Col("Sentence id: '<doc_id>-x<ordinal>'.", primary_key=True)]
    doc_id: DocId
    chunk_id: Annotated[str, Col("Chunk holding the sentence (chunks.chunk_id).")]
    section_id: SectionId
    ordinal: Annotated[int, Col("Position of the sentence in document order (0-based).")]
    text: Annotated[str, Col("The sentence: chunks.text from char_start to char_end.")]
    char_start: Annotated[int, Col("Offset of its first character in chunks.text (0-based).")]
    char_end: Annotated[int, Col("Offset just past its last character in chunks.text.")]
    page_number: Annotated[int | None, page("Page the sentence is on")]
    bbox: Annotated[
        list[float] | None,
        box("the sentence's lines on its page (NULL for formats without positions)"),
    ]
    continued: Annotated[
        bool,
        Col(
            "True when the sentence goes on in the next sentence row: a page or column break cut it."
        ),
    ]


@view(
    "tables",
    "Tables found in the documents, with caption, HTML rendering and header depths.",
    "tables with caption, HTML, header depths",
    indexes=("doc_id",),
)
class TableRow(Row):
    table_id: Annotated[str, Col("Table id: '<doc_id>-t<ordinal>'.", primary_key=True)]
    doc_id: DocId
    section_id: SectionId
    ordinal: Annotated[int | None, Col("Position of the table in document order (0-based).")]
    page_number: Annotated[int | None, page("Page the item is on")]
    bbox: Annotated[list[float] | None, box("the table body")]
    label: Annotated[str | None, Col("Printed label such as 'Table 2'.")]
    caption: Annotated[str | None, Col("Caption text, label included.", encodable=True)]
    html: Annotated[str | None, Col("The table as HTML with <th> header cells and row/col spans.")]
    n_rows: Annotated[int | None, Col("Number of grid rows, header rows included.")]
    n_cols: Annotated[int | None, Col("Number of grid columns, header columns included.")]
    header_rows: Annotated[int | None, Col("Depth of the top (column) header in rows.")]
    header_cols: Annotated[int | None, Col("Depth of the left (row) header in columns.")]
    summary: Annotated[
        str | None, Col("Summary of the table built from its caption and headers.", encodable=True)
    ]
    confidence: Annotated[
        float | None,
        Col(
            "How far the structure can be trusted, 0.1-1.0: 1 when nothing looks wrong; below 0.8, check the page with view_page before quoting a value."
        ),
    ]
    doubts: Annotated[
        list[str] | None,
        Col(
            "Why the structure may be wrong, e.g. 'values without a column header: 3 of 40 cells', 'no caption: found from rows of numbers'."
        ),
    ]


@view(
    "table_cells",
    "Every cell of every table, with its header paths. Find a value by path, e.g. 'TREC' = ANY(col_path) AND 'BM25 + DPR' = ANY(row_path).",
    "every cell with its row_path/col_path headers",
    indexes=("table_id", "doc_id"),
)
class TableCellRow(Row):
    cell_id: Annotated[str, Col("Cell id: '<table_id>-r<row>c<col>'.", primary_key=True)]
    table_id: Annotated[str, Col("Table of the cell (tables.table_id).")]
    doc_id: DocId
    row: Annotated[int | None, Col("Grid row of the cell's top-left corner (0-based).")]
    col: Annotated[int | None, Col("Grid column of the cell's top-left corner (0-based).")]
    row_span: Annotated[int | None, Col("Rows the cell spans.")]
    col_span: Annotated[int | None, Col("Columns the cell spans.")]
    text: Annotated[str | None, Col("Cell text as printed.")]
    value: Annotated[
        float | None,
        Col(
            "Numeric value parsed from text (thousands separators, % and currency removed, parentheses as negative); NULL if not a number."
        ),
    ]
    unit: Annotated[str | None, Col("Unit found next to the number, e.g. '%' or '$'.")]
    is_col_header: Annotated[bool | None, Col("Cell belongs to the top (column) header.")]
    is_row_header: Annotated[bool | None, Col("Cell belongs to the left (row) header.")]
    row_path: Annotated[
        list[str] | None,
        Col(
            "Left-header labels above this cell's row, outermost first, e.g. ['Multi', 'BM25 + DPR']."
        ),
    ]
    col_path: Annotated[
        list[str] | None,
        Col(
            "Top-header labels over this cell's column, outermost first, e.g. ['Top-100', 'TREC']."
        ),
    ]
    page_number: Annotated[int | None, page("Page the item is on")]
    bbox: Annotated[list[float] | None, box("the cell")]
    address: Annotated[
        str | None,
        Col(
            "The cell's A1 address in its spreadsheet sheet, e.g. 'C7' (a merged range's top-left cell), in the sheet's own rows and columns, not the grid's; the sheet is the page (pages.label names it). NULL outside XLSX."
        ),
    ]


@view(
    "images",
    "Figures and other meaningful images, with their captions.",
    "figures with captions",
    indexes=("doc_id",),
)
class ImageRow(Row):
    image_id: Annotated[str, Col("Image id: '<doc_id>-i<ordinal>'.", primary_key=True)]
    doc_id: DocId
    section_id: SectionId
    ordinal: Annotated[int | None, Col("Position of the figure in document order (0-based).")]
    page_number: Annotated[int | None, page("Page the item is on")]
    bbox: Annotated[list[float] | None, box("the figure")]
    label: Annotated[
        str | None, Col("Printed label such as 'Figure 3'; NULL for uncaptioned images.")
    ]
    caption: Annotated[str | None, Col("Caption text, label included.", encodable=True)]
    summary: Annotated[
        str | None,
        Col(
            "Summary of the figure from its caption and the text that mentions it.", encodable=True
        ),
    ]


@view(
    "equations",
    "Display equations (set apart from the text), with their printed numbers.",
    "display equations with their numbers",
    indexes=("doc_id",),
)
class EquationRow(Row):
    equation_id: Annotated[str, Col("Equation id: '<doc_id>-e<ordinal>'.", primary_key=True)]
    doc_id: DocId
    section_id: SectionId
    ordinal: Annotated[int | None, Col("Position of the equation in document order (0-based).")]
    page_number: Annotated[int | None, page("Page the item is on")]
    bbox: Annotated[list[float] | None, box("the equation")]
    number: Annotated[
        str | None,
        Col("Printed equation number without parentheses, e.g. '3'; NULL if unnumbered."),
    ]
    text: Annotated[str | None, Col("Text content of the equation as extracted.", encodable=True)]


@view(
    "doc_references",
    "Bibliography entries, one row each (named doc_references because REFERENCES is a SQL keyword).",
    "bibliography entries",
    indexes=("doc_id",),
)
class ReferenceRow(Row):
    reference_id: Annotated[str, Col("Reference id: '<doc_id>-r<ordinal>'.", primary_key=True)]
    doc_id: DocId
    ordinal: Annotated[int | None, Col("Position in the bibliography (0-based).")]
    label: Annotated[
        str | None, Col("Printed label such as '12' for '[12]'; NULL for author-year styles.")
    ]
    text: Annotated[str | None, Col("Full text of the entry.", encodable=True)]
    year: Annotated[int | None, Col("Year of the cited work when printed.")]
    doi: Annotated[str | None, Col("DOI of the cited work when printed.")]
    arxiv_id: Annotated[str | None, Col("arXiv id of the cited work when printed.")]
    page_number: Annotated[int | None, page("Page the entry starts on")]


# The kinds of tree_nodes below the document node, as subtree and rank_nodes accept them.
NODE_TYPES = ("section", "text", "table", "image", "equation")


@view(
    "tree_nodes",
    "The document tree: document › sections › leaves (text chunks, tables, images, equations), in document order. ref_table/ref_id point to the leaf's row in its view table.",
    "document › sections › text/table/image/equation leaves",
    indexes=("doc_id",),
)
class TreeNodeRow(Row):
    node_id: Annotated[str, Col("Node id: '<doc_id>-n<ordinal>'.", primary_key=True)]
    doc_id: DocId
    parent_id: Annotated[
        str | None, Col("Parent node (tree_nodes.node_id); NULL for the document node.")
    ]
    ordinal: Annotated[
        int | None, Col("Position of the node in document order (0-based, the document node is 0).")
    ]
    depth: Annotated[
        int | None, Col("Depth in the tree: 0 for the document, 1 for top-level sections.")
    ]
    node_type: Annotated[
        str | None, Col("One of: document, section, text, table, image, equation.")
    ]
    title: Annotated[str | None, Col("Section title, caption, or the first words of a text leaf.")]
    page_start: Annotated[int | None, Col("First page covered by the node (1-based).")]
    page_end: Annotated[int | None, Col("Last page covered by the node (1-based).")]
    ref_table: Annotated[
        str | None,
        Col(
            "View table holding the node's row: documents, sections, chunks, tables, images or equations."
        ),
    ]
    ref_id: Annotated[str | None, Col("Primary key of that row.")]


@view(
    "entities",
    "Named things found in each document without an LLM (indexer/entities.py): methods, datasets, metrics, organisations, people, acronyms with their expansions, defined terms, tables and figures (by label), table headers, citations. Mentions of one thing are merged per document by gradient-based entity resolution (BookRAG); other spellings are aliases.",
    "named things per document (methods, datasets, acronyms, tables ...)",
    indexes=("doc_id",),
)
class EntityRow(Row):
    entity_id: Annotated[str, Col("Entity id: '<doc_id>-ent<n>'.", primary_key=True)]
    doc_id: DocId
    name: Annotated[
        str | None,
        Col(
            "Canonical name (an acronym's long form, else the most frequent spelling). Embedded for semantic search, not in the BM25 collection.",
            encodable=True,
            keyword=False,
        ),
    ]
    entity_type: Annotated[
        str | None,
        Col(
            "One of: method, dataset, metric, software, organisation, person, term, acronym, name, table, figure, header, citation, concept."
        ),
    ]
    aliases: Annotated[list[str] | None, Col("Other spellings met in the document (e.g. 'DPR').")]
    description: Annotated[
        str | None,
        Col("Acronym definition, table/figure caption, or the first sentence mentioning it."),
    ]
    mention_count: Annotated[int | None, Col("Number of mentions in the document.")]
    node_count: Annotated[int | None, Col("Number of tree nodes mentioning it.")]
    page_number: Annotated[int | None, page("First page mentioning it")]


@view(
    "relations",
    "Edges of the entity graph. relation is co_occurs (same sentence), is_a ('X is a Y'), cites (X followed by a citation), mentions (a table or figure caption names X) or header_of (a header cell of a table). Evidence nodes are tree_nodes.node_id values.",
    "entity graph edges with evidence",
    indexes=("doc_id", "source_id", "target_id"),
)
class RelationRow(Row):
    relation_id: Annotated[str, Col("Relation id: '<doc_id>-rel<n>'.", primary_key=True)]
    doc_id: DocId
    source_id: Annotated[str | None, Col("Entity the edge starts from (entities.entity_id).")]
    target_id: Annotated[str | None, Col("Entity the edge ends at (entities.entity_id).")]
    relation: Annotated[str | None, Col("co_occurs, is_a, cites, mentions or header_of.")]
    weight: Annotated[int | None, Col("Number of sentences or cells giving this edge.")]
    evidence_node_ids: Annotated[
        list[str] | None, Col("Tree nodes where the edge was seen (at most 20, document order).")
    ]
    evidence: Annotated[str | None, Col("The first sentence giving the edge (trimmed).")]
    page_number: Annotated[int | None, page("Page of the first evidence")]


@view(
    "entity_links",
    "GT-links (BookRAG): which tree nodes mention which entity, so an entity selects the sections, text, tables and figures it appears in.",
    "which tree nodes mention which entity",
    indexes=("doc_id", "entity_id", "node_id"),
)
class EntityLinkRow(Row):
    link_id: Annotated[str, Col("Link id: '<entity_id>-n<node ordinal>'.", primary_key=True)]
    entity_id: Annotated[str, Col("The entity (entities.entity_id).")]
    node_id: Annotated[str, Col("The tree node (tree_nodes.node_id).")]
    doc_id: DocId
    mention_count: Annotated[int | None, Col("Mentions of the entity in that node.")]
    page_number: Annotated[int | None, page("First page of the node")]


@view(
    "table_summaries",
    "Row- and column-level summaries of every table (HD-RAG's RCL corpus): one per row path and per column path at each header level, naming the path and the values it spans, e.g. 'Table 2 (…) — row Revenue › Mobility: 2021 = 6,953; 2020 = 6,089'. Search them to find the table and the region of it that answers a question, then read exact cells in table_cells with list_has_all(row_path, path) / list_has_all(col_path, path).",
    "one summary per table row path and column path",
    indexes=("table_id", "doc_id"),
)
class TableSummaryRow(Row):
    summary_id: Annotated[
        str,
        Col(
            "Summary id: '<table_id>-row<ordinal>' or '<table_id>-col<ordinal>' (0-based, in table order, outer levels before the inner levels under them).",
            primary_key=True,
        ),
    ]
    table_id: Annotated[str, Col("Table summarised (tables.table_id).")]
    doc_id: DocId
    axis: Annotated[str | None, Col("'row' (a row path) or 'col' (a column path).")]
    level: Annotated[int | None, Col("Header level of the path: 1 for the outermost label.")]
    path: Annotated[
        list[str] | None,
        Col(
            "The header path summarised, outermost first: the first labels of the row_path (axis 'row') or col_path (axis 'col') of every table_cells data cell it covers (values a header row picked up by mistake are left out of column paths)."
        ),
    ]
    text: Annotated[
        str | None,
        Col(
            "The summary: table label and caption, the path, then 'label = value' for each data cell it spans (cut with '… (+N more)' past about 480 characters).",
            encodable=True,
        ),
    ]
    page_number: Annotated[int | None, page("Page of the table")]
    bbox: Annotated[
        list[float] | None, box("the cells the path spans (the table's box when cells have none)")
    ]
    cell_count: Annotated[int | None, Col("Number of data cells the path spans.")]


TABLES: tuple[Table, ...] = tuple(
    row.table
    for row in (
        DocumentRow,
        PageRow,
        SectionRow,
        ChunkRow,
        SentenceRow,
        TableRow,
        TableCellRow,
        ImageRow,
        EquationRow,
        ReferenceRow,
        TreeNodeRow,
        EntityRow,
        RelationRow,
        EntityLinkRow,
        TableSummaryRow,
    )
)


@view(
    "failed_files",
    "One row per file the index could not read: what a run reported instead of indexing it, "
    "kept until a later run reads the file or finds it gone.",
    "files that could not be indexed, with why",
)
class FailedFileRow(Row):
    path: Annotated[
        str,
        Col(
            "Absolute path of the file, escaped as documents.path is.",
            primary_key=True,
        ),
    ]
    path_bytes: Annotated[
        bytes | None, Col("The path's exact bytes where path had to escape some; else NULL.")
    ]
    file_name: Annotated[str | None, Col("File name without folders, escaped as path is.")]
    outcome: Annotated[
        str,
        Col(
            "failed (the file was read and could not be indexed) or skipped (not read: a link "
            "leading outside the folders given, or nowhere; a folder that could not be listed)."
        ),
    ]
    reason: Annotated[
        str, Col("Why, in the run report's words: the limit passed or the error raised.")
    ]
    recorded_at: Annotated[
        datetime, Col("When the run that reported it wrote it (UTC).", sql_type="TIMESTAMP")
    ]


# Tables of the index's own records, not of any document: written by runs, never by a parse.
RECORDS: tuple[Table, ...] = (FailedFileRow.table,)

META_TABLE = "docsym_meta"


def table(name: str) -> Table:
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(f"unknown table {name!r}; tables are: {', '.join(t.name for t in TABLES)}")


def encodable_columns() -> list[tuple[str, str]]:
    """The (table, column) pairs whose cells become search entries."""
    return [(t.name, c.name) for t in TABLES for c in t.columns if c.encodable]


def dense_columns() -> set[tuple[str, str]]:
    """The encodable (table, column) pairs whose cells are given vectors (the others are
    searched by keyword only)."""
    return {(t.name, c.name) for t in TABLES for c in t.columns if c.encodable and c.dense}


def keyword_columns() -> set[tuple[str, str]]:
    """The encodable (table, column) pairs whose cells are also in the BM25 collection."""
    return {(t.name, c.name) for t in TABLES for c in t.columns if c.encodable and c.keyword}


# Views whose vectors are the mean of their chunks' (they hold the same words): no encoding.
POOLED = frozenset({("pages", "text"), ("sections", "content")})
# A pooled entry (a page's text, a section's content) -> the chunks whose vectors it averages.
PoolMembers = dict[tuple[str, str], list[str]]

# The chunks of one document each page and section holds, for pooling their vectors (the dense
# stage reads them back from the store, so a later run can finish it without parsing again).
POOL_MEMBERS_SQL = """
    SELECT 'sections', section_id, chunk_id FROM chunks
     WHERE doc_id = ? AND section_id IS NOT NULL
    UNION ALL
    SELECT 'pages', p.page_id, c.chunk_id FROM chunks c
      JOIN pages p ON p.doc_id = c.doc_id
       AND p.page_number BETWEEN c.page_number AND COALESCE(c.page_end, c.page_number)
     WHERE c.doc_id = ?
"""


def pool_members(rows: list[tuple[str, str, str]]) -> PoolMembers:
    """``POOL_MEMBERS_SQL``'s rows as a map."""
    members: PoolMembers = {}
    for view_name, key, chunk_id in rows:
        members.setdefault((view_name, key), []).append(chunk_id)
    return members


def create_table(t: Table, sql_type: Callable[[str], str] = str) -> list[str]:
    """CREATE statements for one table and its indexes (idempotent); ``sql_type`` names a
    column type in another engine's words."""
    cols = []
    for c in t.columns:
        constraint = " PRIMARY KEY" if c.primary_key else ("" if c.nullable else " NOT NULL")
        cols.append(f"{c.name} {sql_type(c.type)}{constraint}")
    statements = [f"CREATE TABLE IF NOT EXISTS {t.name} ({', '.join(cols)})"]
    statements += [
        f"CREATE INDEX IF NOT EXISTS idx_{t.name}_{column} ON {t.name} ({column})"
        for column in t.indexes
    ]
    return statements


def comments() -> list[str]:
    """COMMENT ON statements: every table's and column's description, in the database too."""
    statements = []
    for t in (*TABLES, *RECORDS):
        statements.append(f"COMMENT ON TABLE {t.name} IS {sql_str(t.description)}")
        for c in t.columns:
            statements.append(f"COMMENT ON COLUMN {t.name}.{c.name} IS {sql_str(c.description)}")
    return statements


def ddl() -> list[str]:
    """CREATE statements for the whole schema, then its comments (idempotent)."""
    statements = [
        f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)"
    ]
    for t in (*TABLES, *RECORDS):
        statements += create_table(t)
    return statements + comments()


def sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def compact() -> str:
    """The schema in one line per table: its columns (* = encodable, [] = a list) and a gist.
    For prompts; ``describe()`` has every column's description. Binary columns are left out:
    they hold exact bytes for the indexer (a file name that is not UTF-8), never an answer."""
    lines = []
    for t in TABLES:  # the records of failed files answer no question: prompts stay lean
        columns = ", ".join(
            c.name + ("[]" if c.type.endswith("[]") else "") + ("*" if c.encodable else "")
            for c in t.columns
            if c.type != "BLOB"
        )
        lines.append(f"- {t.name}({columns}): {t.gist}")
    return "\n".join(lines)


def describe(dialect: str = "DuckDB") -> str:
    """The schema as text for clients: tables, columns with types and descriptions, encodable.
    ``dialect`` names the SQL that ``run_sql`` takes (types are shown as DuckDB names them;
    on PostgreSQL VARCHAR is text and DOUBLE double precision)."""
    lines = [
        f"# docsym index schema ({dialect} SQL)",
        "",
        f"Conventions: page_number is 1-based; bbox is {BBOX_NOTE}. "
        "Ids are stable across re-indexing. Columns marked [encodable] are also search entries (vector_search, hybrid_search).",
    ]
    for t in (*TABLES, *RECORDS):
        lines += ["", f"## {t.name}", t.description]
        for c in t.columns:
            flags = " [primary key]" if c.primary_key else ""
            flags += " [encodable]" if c.encodable else ""
            flags += " [not in bm25]" if c.encodable and not c.keyword else ""
            lines.append(f"- {c.name} {c.type}{flags}: {c.description}")
    return "\n".join(lines)
