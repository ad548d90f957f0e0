"""Office formats parse into the same document model as PDFs: sections, tables, images, chunks.

Each real file of ../shared/corpus/office is parsed once per module; expectations come from the
files themselves (the DOCX's heading styles, the HTML's tags), not from the parser under test.
"""

from __future__ import annotations

import html
import re
import zipfile
from pathlib import Path

import pytest
from defusedxml import ElementTree
from docx import Document as WordDocument

from docsym.indexer.model import ParsedDocument
from docsym.indexer.office import parse_docx, parse_html, parse_markdown, parse_pptx
from tests.conftest import CORPUS

OFFICE = CORPUS / "office"
needs_office = pytest.mark.skipif(
    not OFFICE.is_dir(), reason=f"office corpus not found at {OFFICE} (set DOCSYM_CORPUS)"
)
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _parsed(parse, name: str) -> ParsedDocument:
    path = OFFICE / name
    if not path.is_file():
        pytest.skip(f"{path} not found (set DOCSYM_CORPUS)")
    return parse(path)


@pytest.fixture(scope="module")
def handbook() -> ParsedDocument:
    return _parsed(parse_docx, "handbook-872p.docx")


@pytest.fixture(scope="module")
def tenk() -> ParsedDocument:
    return _parsed(parse_html, "example-10k.html")


@pytest.fixture(scope="module")
def duck() -> ParsedDocument:
    return _parsed(parse_html, "wiki_duck.html")


@pytest.fixture(scope="module")
def word_sample() -> ParsedDocument:
    return _parsed(parse_docx, "word_sample.docx")


@pytest.fixture(scope="module")
def slides() -> ParsedDocument:
    return _parsed(parse_pptx, "powerpoint_sample.pptx")


def _styled_headings(docx: Path) -> list[tuple[int, str]]:
    """(level, text) of every non-empty Heading 1-9 paragraph, read from the DOCX's XML."""
    with zipfile.ZipFile(docx) as archive:
        root = ElementTree.fromstring(archive.read("word/document.xml"))
    out = []
    for paragraph in root.iter(f"{W}p"):
        style = paragraph.find(f"{W}pPr/{W}pStyle")
        name = style.get(f"{W}val") if style is not None else ""
        text = "".join(t.text or "" for t in paragraph.iter(f"{W}t"))
        if re.fullmatch(r"Heading[1-9]", name) and text.strip():
            out.append((int(name[-1]), text))
    return out


def _squash(text: str) -> str:
    return re.sub(r"\W+", "", text).lower()


def _expected_parents(levels: list[int]) -> list[int | None]:
    """Each heading's parent: the nearest earlier heading of a lower level (levels may skip)."""
    parents: list[int | None] = []
    for i, level in enumerate(levels):
        parents.append(next((j for j in reversed(range(i)) if levels[j] < level), None))
    return parents


@needs_office
def test_handbook_heading_tree_matches_its_heading_styles(handbook: ParsedDocument) -> None:
    styled = _styled_headings(OFFICE / "handbook-872p.docx")
    # SOURCES.md counts 16/92/192 heading-styled paragraphs; six of them are empty.
    assert len(styled) >= 290
    assert [s.level for s in handbook.sections] == [level for level, _ in styled]
    for section, (_, text) in zip(handbook.sections, styled, strict=True):
        assert _squash(text).endswith(_squash(section.title)), (section.title, text)
    expected = _expected_parents([level for level, _ in styled])
    assert [s.parent for s in handbook.sections] == expected


@needs_office
def test_handbook_sections_have_numbers_content_and_no_pages(handbook: ParsedDocument) -> None:
    lettered = [s for s in handbook.sections if s.level == 2 and s.number]
    assert lettered and all(re.fullmatch(r"[A-Z]", s.number) for s in lettered)
    assert sum(bool(s.content) for s in handbook.sections) > len(handbook.sections) // 2
    assert handbook.pages == []
    assert all(s.page_start is None and s.page_end is None for s in handbook.sections)
    assert all(c.page_number is None for c in handbook.chunks)
    assert len(handbook.tables) == 2
    # chunks follow reading order and sit in the section whose heading precedes them
    seqs = [c.seq for c in handbook.chunks]
    assert seqs == sorted(seqs)
    heading_seq = {s.ordinal: s.seq for s in handbook.sections}
    assert all(heading_seq[c.section] <= c.seq for c in handbook.chunks if c.section is not None)
    assert max(c.token_count for c in handbook.chunks) <= 256


@needs_office
def test_10k_tables_and_styled_headings(tenk: ParsedDocument) -> None:
    raw = (OFFICE / "example-10k.html").read_text(encoding="utf-8", errors="replace")
    assert len(tenk.tables) == len(re.findall(r"<table\b", raw, re.IGNORECASE)) == 84
    # No <h1>-<h6> in the file: sections come from bold blocks, "PART" over "ITEM".
    assert not re.search(r"<h[1-6]\b", raw, re.IGNORECASE)
    by_ordinal = {s.ordinal: s for s in tenk.sections}
    parts = [s for s in tenk.sections if s.title.startswith("PART ")]
    items = [s for s in tenk.sections if s.title.startswith("ITEM ")]
    assert [p.number for p in parts] == ["I", "II", "III", "IV"]
    assert len(items) >= 15
    assert all(s.level == 1 for s in parts)
    assert all(by_ordinal[s.parent].title.startswith("PART ") for s in items)
    assert all(s.source == "layout" for s in tenk.sections)
    assert tenk.meta.title == "Galaxy Gaming, Inc."


@needs_office
def test_10k_financial_rows_have_values_under_their_years(tenk: ParsedDocument) -> None:
    cells = [
        c
        for t in tenk.tables
        for c in t.cells
        if c.row_path == ["Raw materials and component parts"] and c.value is not None
    ]
    years = {c.col_path[-1] for c in cells}
    assert {"2021", "2020"} <= years
    assert len({c.value for c in cells}) == len(cells)  # two different amounts


@needs_office
def test_10k_prose_in_layout_tables_is_searchable_text(tenk: ParsedDocument) -> None:
    text = " ".join(c.text for c in tenk.chunks)
    assert "We have audited the accompanying consolidated balance sheets" in text


@needs_office
def test_wiki_duck_sections_tables_and_figure_captions(duck: ParsedDocument) -> None:
    raw = (OFFICE / "wiki_duck.html").read_text(encoding="utf-8")
    figcaptions = [
        html.unescape(re.sub(r"<[^>]+>", "", m))
        for m in re.findall(r"<figcaption[^>]*>(.*?)</figcaption>", raw, re.S)
    ]
    captions = {_squash(f.caption) for f in duck.figures if f.caption}
    assert len(figcaptions) == 13
    assert {_squash(c) for c in figcaptions} <= captions
    assert duck.meta.title == "Duck"
    titles = {s.title: s for s in duck.sections}
    assert titles["Breeding"].parent == titles["Behaviour"].ordinal
    assert titles["Hunting"].parent == titles["Relationship with humans"].ordinal
    assert titles["Etymology"].level == 1 and titles["Etymology"].parent is None
    assert len(duck.tables) == 2
    infobox = duck.tables[0]
    eukaryota = next(c for c in infobox.cells if c.text == "Eukaryota")
    assert eukaryota.row_path[-1] == "Domain:"


@needs_office
def test_word_sample_table_image_caption_and_sections(word_sample: ParsedDocument) -> None:
    assert word_sample.meta.title == "Swimming in the lake"
    assert [(s.title, s.level) for s in word_sample.sections] == [
        ("Let’s swim!", 1),
        ("Let’s eat", 2),
    ]
    assert word_sample.sections[1].parent == 0
    (table,) = word_sample.tables
    leaves = next(c for c in table.cells if c.value == 50)
    assert leaves.col_path == ["Calories per portion"] and leaves.row_path[0] == "Leaves"
    (figure,) = word_sample.figures
    assert figure.label == "Figure 1" and "cute duckling" in figure.caption


@needs_office
def test_pptx_slides_are_pages_and_sections(slides: ParsedDocument) -> None:
    assert [p.number for p in slides.pages] == [1, 2, 3]
    assert all(p.width == 960 and p.height == 540 for p in slides.pages)  # 16:9 in points
    assert [s.title for s in slides.sections] == [
        "Test Table Slide",
        "Second slide title",
        "Slide 3",
    ]
    assert [(s.page_start, s.page_end) for s in slides.sections] == [(1, 1), (2, 2), (3, 3)]
    assert "List item4" in slides.pages[2].text
    assert {c.page_number for c in slides.chunks} == {1, 2, 3}
    (table,) = slides.tables
    assert table.page_number == 1 and table.bbox is not None


@needs_office
def test_pptx_two_level_merged_header(slides: ParsedDocument) -> None:
    (table,) = slides.tables
    assert table.header_rows == 2 and table.header_cols == 1
    class1 = next(c for c in table.cells if c.text == "Class1")
    assert (class1.row, class1.col_span, class1.is_col_header) == (0, 3, True)

    def at(row: int, col: int):
        return next(c for c in table.cells if (c.row, c.col) == (row, col))

    assert at(2, 1).row_path == ["R1"]
    assert at(2, 1).col_path == ["Class1", "A merged with B"]
    assert at(2, 6).col_path == ["Class2", "C"]
    assert at(7, 2).row_path == ["R4"]  # R4 spans three rows


def test_markdown_levels_tables_images_and_inline_runs(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(
        "# Field Guide\n\nIntro about waterfowl.\n\n## Dabbling ducks\n\n"
        "Mallards feed at the [surface](https://example.org/surface) of ponds.\n\n"
        "#### Skipped level\n\nDeep note.\n\n"
        "| Species | Mass (g) |\n|---|---|\n| Mallard | 1100 |\n| Teal | 350 |\n\n"
        '![A teal resting](teal.png "Figure 2: Teal at rest")\n\n'
        "## Diving ducks\n\n- Scaup\n- Canvasback\n",
        encoding="utf-8",
    )
    parsed = parse_markdown(path)
    assert parsed.format == "md" and parsed.meta.title == "Field Guide"
    assert [(s.title, s.level, s.parent) for s in parsed.sections] == [
        ("Dabbling ducks", 1, None),
        ("Skipped level", 3, 0),
        ("Diving ducks", 1, None),
    ]
    assert any("at the surface of ponds." in c.text for c in parsed.chunks)
    (table,) = parsed.tables
    mass = next(c for c in table.cells if c.row_path == ["Teal"] and not c.is_row_header)
    assert (mass.value, mass.col_path) == (350.0, ["Mass (g)"])
    (figure,) = parsed.figures
    assert figure.caption == "Figure 2: Teal at rest" and figure.label == "Figure 2"
    assert parsed.pages == [] and all(c.page_number is None for c in parsed.chunks)


def test_a_paragraph_carrying_on_a_sentence_joins_it(tmp_path: Path) -> None:
    """A document converted from print keeps each printed line a paragraph: a lower-case
    paragraph after one with no sentence end carries that sentence on. An item marker, a
    capital or a finished sentence starts anew."""
    document = WordDocument()
    for text in (
        "For claims to be paid by the trustee under the plan, the trustee must, at a",
        "minimum: keep the records.",
        "Filing a motion to dismiss or convert the case; or",
        "c. following other appropriate procedures.",
        "The trustee must not deposit",
        "any funds received into the business account.",
        "It ends here.",
        "and this is another sentence.",
    ):
        document.add_paragraph(text)
    path = tmp_path / "printed.docx"
    document.save(path)
    texts = [s.text for s in parse_docx(path).sentences]
    assert texts == [
        "For claims to be paid by the trustee under the plan, the trustee must, at a minimum: "
        "keep the records.",
        "Filing a motion to dismiss or convert the case; or",
        "c. following other appropriate procedures.",
        "The trustee must not deposit any funds received into the business account.",
        "It ends here.",
        "and this is another sentence.",
    ]
