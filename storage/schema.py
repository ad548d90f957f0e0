"""The index schema: every table and column with its description, in one place.

This module is the single source of truth for the symbolic side of the index. It produces the
DuckDB DDL (``ddl()``) and the text rendering clients read (``describe()``), and it marks the
*encodable* columns whose cells also go into the vector store.

Conventions stated once for every table:
- ``page_number`` is 1-based; ``bbox`` is ``[x0, y0, x1, y1]`` in PDF points (1/72 inch) with the
  origin at the top-left corner of the page, y growing downwards.
- Ids are stable across re-indexing: ``doc_id`` is derived from the file's content and every other
  id from the ``doc_id`` and the item's position in the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA_VERSION = 2  # 2: entities, relations, entity_links

BBOX_NOTE = "[x0, y0, x1, y1] in PDF points, origin top-left of the page"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    primary_key: bool = False
    encodable: bool = False  # its non-empty cells are embedded into the vector store
    # ... and also indexed for BM25. Off for short names (entities.name): thousands of
    # one-word entries would shrink BM25's average length and tilt it against long passages.
    keyword: bool = True
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    columns: tuple[Column, ...]
    indexes: tuple[str, ...] = field(default=())  # columns to index, e.g. "doc_id"

    @property
    def primary_key(self) -> str:
        return next(c.name for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


def _id(name: str, what: str) -> Column:
    return Column(name, "VARCHAR", what, primary_key=True, nullable=False)


def _doc_id() -> Column:
    return Column(
        "doc_id", "VARCHAR", "Document this row belongs to (documents.doc_id).", nullable=False
    )


def _page(what: str = "Page the item is on") -> Column:
    return Column(
        "page_number",
        "INTEGER",
        f"{what} (1-based; the slide of a PPTX, the sheet of an XLSX; NULL for DOCX, HTML and "
        "Markdown, which have no pages: locate by section instead).",
    )


def _bbox(what: str) -> Column:
    return Column("bbox", "DOUBLE[]", f"Bounding box of {what}: {BBOX_NOTE}.")


def _section_id() -> Column:
    return Column(
        "section_id", "VARCHAR", "Innermost section containing the item (sections.section_id)."
    )


TABLES: tuple[Table, ...] = (
    Table(
        "documents",
        "One row per indexed file: bibliographic metadata and file facts.",
        (
            _id("doc_id", "Stable document id: the first 16 hex digits of the file's SHA-256."),
            Column(
                "path", "VARCHAR", "Absolute path of the file when it was indexed.", nullable=False
            ),
            Column("file_name", "VARCHAR", "File name without folders."),
            Column("format", "VARCHAR", "File format: pdf, docx, html, pptx, xlsx or md."),
            Column("sha256", "VARCHAR", "SHA-256 of the file's bytes (hex)."),
            Column("size_bytes", "BIGINT", "File size in bytes."),
            Column(
                "page_count",
                "INTEGER",
                "Number of pages: PDF pages, PPTX slides, XLSX sheets; 0 for DOCX, HTML and Markdown.",
            ),
            Column(
                "title",
                "VARCHAR",
                "Title from the file's metadata or first-page layout.",
                encodable=True,
            ),
            Column("authors", "VARCHAR[]", "Author names, in printed order."),
            Column(
                "abstract", "VARCHAR", "Abstract, when the document prints one.", encodable=True
            ),
            Column(
                "year",
                "INTEGER",
                "Publication year when printed (else from the file's creation date).",
            ),
            Column("venue", "VARCHAR", "Venue or publisher line when printed."),
            Column("doi", "VARCHAR", "DOI when printed, e.g. 10.18653/v1/2020.acl-main.207."),
            Column("arxiv_id", "VARCHAR", "arXiv identifier when printed, e.g. 2004.04906v3."),
            Column("has_text", "BOOLEAN", "False for image-only scans with no text layer."),
            Column("tldr", "VARCHAR", "Short extractive summary of the document.", encodable=True),
            Column("indexed_at", "TIMESTAMP", "When this version of the file was indexed (UTC)."),
        ),
    ),
    Table(
        "pages",
        "One row per page: the page text in reading order (two-column aware), without running "
        "headers, footers and page numbers.",
        (
            _id("page_id", "Page id: '<doc_id>-p<page_number>'."),
            _doc_id(),
            _page("Page number"),
            Column("width", "DOUBLE", "Page width in PDF points (NULL for XLSX sheets)."),
            Column("height", "DOUBLE", "Page height in PDF points (NULL for XLSX sheets)."),
            Column("text", "VARCHAR", "Text of the page in reading order.", encodable=True),
            Column("has_text", "BOOLEAN", "False when the page has no text layer (a scan)."),
            Column("summary", "VARCHAR", "Extractive summary of the page.", encodable=True),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "sections",
        "The heading tree: one row per heading with the text up to the next heading.",
        (
            _id("section_id", "Section id: '<doc_id>-s<ordinal>'."),
            _doc_id(),
            Column(
                "parent_id", "VARCHAR", "Enclosing section (sections.section_id); NULL at the top."
            ),
            Column("ordinal", "INTEGER", "Position of the heading in document order (0-based)."),
            Column("level", "INTEGER", "Heading level, 1 for top-level sections."),
            Column(
                "number",
                "VARCHAR",
                "Printed section number such as '3', '3.2', 'A' or 'A.1'; NULL if unnumbered.",
            ),
            Column("title", "VARCHAR", "Heading text without its number.", encodable=True),
            Column(
                "content",
                "VARCHAR",
                "Text under the heading, up to the next heading of any level.",
                encodable=True,
            ),
            Column("summary", "VARCHAR", "Extractive summary of the section.", encodable=True),
            Column("page_start", "INTEGER", "Page of the heading (1-based; NULL without pages)."),
            Column("page_end", "INTEGER", "Last page of the section's own text (1-based)."),
            _bbox("the heading on page_start"),
            Column(
                "source",
                "VARCHAR",
                "Where the heading came from: 'outline' (the PDF's bookmarks), 'layout' (fonts and numbering, bold text in HTML) or 'markup' (heading styles and tags of DOCX, HTML, Markdown; slide titles; sheet names).",
            ),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "chunks",
        "Sentence-aware passages that fit the embedding model's window, each inside one section.",
        (
            _id("chunk_id", "Chunk id: '<doc_id>-c<ordinal>'."),
            _doc_id(),
            _section_id(),
            Column("ordinal", "INTEGER", "Position of the chunk in document order (0-based)."),
            Column("text", "VARCHAR", "Chunk text.", encodable=True),
            _page("Page where the chunk starts"),
            Column("page_end", "INTEGER", "Page where the chunk ends (1-based)."),
            Column(
                "token_count",
                "INTEGER",
                "Word pieces of the embedding model, special tokens included.",
            ),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "tables",
        "Tables found in the documents, with caption, HTML rendering and header depths.",
        (
            _id("table_id", "Table id: '<doc_id>-t<ordinal>'."),
            _doc_id(),
            _section_id(),
            Column("ordinal", "INTEGER", "Position of the table in document order (0-based)."),
            _page(),
            _bbox("the table body"),
            Column("label", "VARCHAR", "Printed label such as 'Table 2'."),
            Column("caption", "VARCHAR", "Caption text, label included.", encodable=True),
            Column(
                "html", "VARCHAR", "The table as HTML with <th> header cells and row/col spans."
            ),
            Column("n_rows", "INTEGER", "Number of grid rows, header rows included."),
            Column("n_cols", "INTEGER", "Number of grid columns, header columns included."),
            Column("header_rows", "INTEGER", "Depth of the top (column) header in rows."),
            Column("header_cols", "INTEGER", "Depth of the left (row) header in columns."),
            Column(
                "summary",
                "VARCHAR",
                "Summary of the table built from its caption and headers.",
                encodable=True,
            ),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "table_cells",
        "Every cell of every table, with its header paths. Find a value by path, e.g. "
        "list_contains(col_path, 'TREC') AND list_contains(row_path, 'BM25 + DPR').",
        (
            _id("cell_id", "Cell id: '<table_id>-r<row>c<col>'."),
            Column("table_id", "VARCHAR", "Table of the cell (tables.table_id).", nullable=False),
            _doc_id(),
            Column("row", "INTEGER", "Grid row of the cell's top-left corner (0-based)."),
            Column("col", "INTEGER", "Grid column of the cell's top-left corner (0-based)."),
            Column("row_span", "INTEGER", "Rows the cell spans."),
            Column("col_span", "INTEGER", "Columns the cell spans."),
            Column("text", "VARCHAR", "Cell text as printed."),
            Column(
                "value",
                "DOUBLE",
                "Numeric value parsed from text (thousands separators, % and currency removed, parentheses as negative); NULL if not a number.",
            ),
            Column("unit", "VARCHAR", "Unit found next to the number, e.g. '%' or '$'."),
            Column("is_col_header", "BOOLEAN", "Cell belongs to the top (column) header."),
            Column("is_row_header", "BOOLEAN", "Cell belongs to the left (row) header."),
            Column(
                "row_path",
                "VARCHAR[]",
                "Left-header labels above this cell's row, outermost first, e.g. ['Multi', 'BM25 + DPR'].",
            ),
            Column(
                "col_path",
                "VARCHAR[]",
                "Top-header labels over this cell's column, outermost first, e.g. ['Top-100', 'TREC'].",
            ),
            _page(),
            _bbox("the cell"),
        ),
        indexes=("table_id", "doc_id"),
    ),
    Table(
        "images",
        "Figures and other meaningful images, with their captions.",
        (
            _id("image_id", "Image id: '<doc_id>-i<ordinal>'."),
            _doc_id(),
            _section_id(),
            Column("ordinal", "INTEGER", "Position of the figure in document order (0-based)."),
            _page(),
            _bbox("the figure"),
            Column(
                "label", "VARCHAR", "Printed label such as 'Figure 3'; NULL for uncaptioned images."
            ),
            Column("caption", "VARCHAR", "Caption text, label included.", encodable=True),
            Column(
                "summary",
                "VARCHAR",
                "Summary of the figure from its caption and the text that mentions it.",
                encodable=True,
            ),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "equations",
        "Display equations (set apart from the text), with their printed numbers.",
        (
            _id("equation_id", "Equation id: '<doc_id>-e<ordinal>'."),
            _doc_id(),
            _section_id(),
            Column("ordinal", "INTEGER", "Position of the equation in document order (0-based)."),
            _page(),
            _bbox("the equation"),
            Column(
                "number",
                "VARCHAR",
                "Printed equation number without parentheses, e.g. '3'; NULL if unnumbered.",
            ),
            Column("text", "VARCHAR", "Text content of the equation as extracted.", encodable=True),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "doc_references",
        "Bibliography entries, one row each (named doc_references because REFERENCES is a SQL keyword).",
        (
            _id("reference_id", "Reference id: '<doc_id>-r<ordinal>'."),
            _doc_id(),
            Column("ordinal", "INTEGER", "Position in the bibliography (0-based)."),
            Column(
                "label",
                "VARCHAR",
                "Printed label such as '12' for '[12]'; NULL for author-year styles.",
            ),
            Column("text", "VARCHAR", "Full text of the entry.", encodable=True),
            Column("year", "INTEGER", "Year of the cited work when printed."),
            Column("doi", "VARCHAR", "DOI of the cited work when printed."),
            Column("arxiv_id", "VARCHAR", "arXiv id of the cited work when printed."),
            _page("Page the entry starts on"),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "tree_nodes",
        "The document tree: document › sections › leaves (text chunks, tables, images, equations), "
        "in document order. ref_table/ref_id point to the leaf's row in its view table.",
        (
            _id("node_id", "Node id: '<doc_id>-n<ordinal>'."),
            _doc_id(),
            Column(
                "parent_id",
                "VARCHAR",
                "Parent node (tree_nodes.node_id); NULL for the document node.",
            ),
            Column(
                "ordinal",
                "INTEGER",
                "Position of the node in document order (0-based, the document node is 0).",
            ),
            Column(
                "depth",
                "INTEGER",
                "Depth in the tree: 0 for the document, 1 for top-level sections.",
            ),
            Column(
                "node_type", "VARCHAR", "One of: document, section, text, table, image, equation."
            ),
            Column(
                "title", "VARCHAR", "Section title, caption, or the first words of a text leaf."
            ),
            Column("page_start", "INTEGER", "First page covered by the node (1-based)."),
            Column("page_end", "INTEGER", "Last page covered by the node (1-based)."),
            Column(
                "ref_table",
                "VARCHAR",
                "View table holding the node's row: documents, sections, chunks, tables, images or equations.",
            ),
            Column("ref_id", "VARCHAR", "Primary key of that row."),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "entities",
        "Named things found in each document without an LLM (indexer/entities.py): methods, "
        "datasets, metrics, organisations, people, acronyms with their expansions, defined terms, "
        "tables and figures (by label), table headers, citations. Mentions of one thing are merged "
        "per document by gradient-based entity resolution (BookRAG); other spellings are aliases.",
        (
            _id("entity_id", "Entity id: '<doc_id>-e<n>'."),
            _doc_id(),
            Column(
                "name",
                "VARCHAR",
                "Canonical name (an acronym's long form, else the most frequent spelling). "
                "Embedded for semantic search, not in the BM25 collection.",
                encodable=True,
                keyword=False,
            ),
            Column(
                "entity_type",
                "VARCHAR",
                "One of: method, dataset, metric, software, organisation, person, term, acronym, "
                "name, table, figure, header, citation, concept.",
            ),
            Column("aliases", "VARCHAR[]", "Other spellings met in the document (e.g. 'DPR')."),
            Column(
                "description",
                "VARCHAR",
                "Acronym definition, table/figure caption, or the first sentence mentioning it.",
            ),
            Column("mention_count", "INTEGER", "Number of mentions in the document."),
            Column("node_count", "INTEGER", "Number of tree nodes mentioning it."),
            _page("First page mentioning it"),
        ),
        indexes=("doc_id",),
    ),
    Table(
        "relations",
        "Edges of the entity graph. relation is co_occurs (same sentence), is_a ('X is a Y'), "
        "cites (X followed by a citation), mentions (a table or figure caption names X) or "
        "header_of (a header cell of a table). Evidence nodes are tree_nodes.node_id values.",
        (
            _id("relation_id", "Relation id: '<doc_id>-r<n>'."),
            _doc_id(),
            Column("source_id", "VARCHAR", "Entity the edge starts from (entities.entity_id)."),
            Column("target_id", "VARCHAR", "Entity the edge ends at (entities.entity_id)."),
            Column("relation", "VARCHAR", "co_occurs, is_a, cites, mentions or header_of."),
            Column("weight", "INTEGER", "Number of sentences or cells giving this edge."),
            Column(
                "evidence_node_ids",
                "VARCHAR[]",
                "Tree nodes where the edge was seen (at most 20, document order).",
            ),
            Column("evidence", "VARCHAR", "The first sentence giving the edge (trimmed)."),
            _page("Page of the first evidence"),
        ),
        indexes=("doc_id", "source_id", "target_id"),
    ),
    Table(
        "entity_links",
        "GT-links (BookRAG): which tree nodes mention which entity, so an entity selects the "
        "sections, text, tables and figures it appears in.",
        (
            _id("link_id", "Link id: '<entity_id>-n<node ordinal>'."),
            Column("entity_id", "VARCHAR", "The entity (entities.entity_id).", nullable=False),
            Column("node_id", "VARCHAR", "The tree node (tree_nodes.node_id).", nullable=False),
            _doc_id(),
            Column("mention_count", "INTEGER", "Mentions of the entity in that node."),
            _page("First page of the node"),
        ),
        indexes=("doc_id", "entity_id", "node_id"),
    ),
    Table(
        "table_summaries",
        "Row- and column-level summaries of every table (HD-RAG's RCL corpus): one per row path "
        "and per column path at each header level, naming the path and the values it spans, "
        "e.g. 'Table 2 (…) — row Revenue › Mobility: 2021 = 6,953; 2020 = 6,089'. Search them to "
        "find the table and the region of it that answers a question, then read exact cells in "
        "table_cells with list_has_all(row_path, path) / list_has_all(col_path, path).",
        (
            _id(
                "summary_id",
                "Summary id: '<table_id>-row<ordinal>' or '<table_id>-col<ordinal>' (0-based, "
                "in table order, outer levels before the inner levels under them).",
            ),
            Column("table_id", "VARCHAR", "Table summarised (tables.table_id).", nullable=False),
            _doc_id(),
            Column("axis", "VARCHAR", "'row' (a row path) or 'col' (a column path)."),
            Column("level", "INTEGER", "Header level of the path: 1 for the outermost label."),
            Column(
                "path",
                "VARCHAR[]",
                "The header path summarised, outermost first: the first labels of the row_path "
                "(axis 'row') or col_path (axis 'col') of every table_cells data cell it covers "
                "(values a header row picked up by mistake are left out of column paths).",
            ),
            Column(
                "text",
                "VARCHAR",
                "The summary: table label and caption, the path, then 'label = value' for each "
                "data cell it spans (cut with '… (+N more)' past about 480 characters).",
                encodable=True,
            ),
            _page("Page of the table"),
            _bbox("the cells the path spans (the table's box when cells have none)"),
            Column("cell_count", "INTEGER", "Number of data cells the path spans."),
        ),
        indexes=("table_id", "doc_id"),
    ),
)

META_TABLE = "docsym_meta"


def table(name: str) -> Table:
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(f"unknown table {name!r}; tables are: {', '.join(t.name for t in TABLES)}")


def encodable_columns() -> list[tuple[str, str]]:
    """The (table, column) pairs whose cells are embedded into the vector store."""
    return [(t.name, c.name) for t in TABLES for c in t.columns if c.encodable]


def keyword_columns() -> set[tuple[str, str]]:
    """The encodable (table, column) pairs whose cells are also in the BM25 collection."""
    return {(t.name, c.name) for t in TABLES for c in t.columns if c.encodable and c.keyword}


def ddl() -> list[str]:
    """CREATE statements for the whole schema (idempotent)."""
    statements = [
        f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)"
    ]
    for t in TABLES:
        cols = []
        for c in t.columns:
            constraint = " PRIMARY KEY" if c.primary_key else ("" if c.nullable else " NOT NULL")
            cols.append(f"{c.name} {c.type}{constraint}")
        statements.append(f"CREATE TABLE IF NOT EXISTS {t.name} ({', '.join(cols)})")
        for column in t.indexes:
            statements.append(
                f"CREATE INDEX IF NOT EXISTS idx_{t.name}_{column} ON {t.name} ({column})"
            )
    for t in TABLES:
        statements.append(f"COMMENT ON TABLE {t.name} IS {_sql_str(t.description)}")
        for c in t.columns:
            statements.append(f"COMMENT ON COLUMN {t.name}.{c.name} IS {_sql_str(c.description)}")
    return statements


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def describe() -> str:
    """The schema as text for clients: tables, columns with types and descriptions, encodable."""
    lines = [
        "# docsym index schema (DuckDB)",
        "",
        f"Conventions: page_number is 1-based; bbox is {BBOX_NOTE}. "
        "Ids are stable across re-indexing. Columns marked [encodable] are also in the vector store.",
    ]
    for t in TABLES:
        lines += ["", f"## {t.name}", t.description]
        for c in t.columns:
            flags = " [primary key]" if c.primary_key else ""
            flags += " [encodable]" if c.encodable else ""
            flags += " [not in bm25]" if c.encodable and not c.keyword else ""
            lines.append(f"- {c.name} {c.type}{flags}: {c.description}")
    return "\n".join(lines)
