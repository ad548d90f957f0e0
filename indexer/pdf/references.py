"""Bibliography entries: the lines after the last "References" heading, split into entries.

Three printed styles are recognised, tried in this order:
- labelled entries ("[12] ..." or "12. ..."): a label at the start of a line opens an entry;
- hanging indent (ACL, Elsevier, JSS): an entry's first line sits at its column's left edge and
  its continuation lines are indented;
- neither: entries are separated by vertical gaps larger than the line spacing.
The list ends at the first heading after it (appendices often follow the references).
"""

from __future__ import annotations

import re
from statistics import median

from docsym.indexer.model import Reference
from docsym.indexer.pdf.layout import DocumentLayout, Line
from docsym.language.hyphens import PrintedWords, join_lines

_HEADING = re.compile(
    r"^(?:[0-9]+\.?|[IVX]+\.)?\s*(references|bibliography|literature cited|works cited|"
    r"references and notes|reference list)\s*:?$",
    re.IGNORECASE,
)
_APPENDIX = re.compile(
    r"^(appendix|appendices|supplementary|supplemental|[A-H](?:\.\d+)*\.?\s+[A-Z][A-Za-z]+)",
)
# "[12]" or an alphanumeric key such as "[Smi99]" / "[BKL+20]"; not "[cs, stat]".
_BRACKET_LABEL = re.compile(r"^\[(\d{1,4}|[A-Z][A-Za-z+\-.]{0,8}\d{2,4}[a-z]?)\]\s*")
_NUMBER_LABEL = re.compile(r"^(\d{1,3})\.\s+(?=\S)")
_YEAR = re.compile(r"(?<![\d/.])((?:19|20)\d{2})[a-z]?(?!\d|\.\d)")
_URL = re.compile(r"\S*(?:https?://|www\.|doi\.org|arxiv)\S*|10\.\d{4,9}/\S+", re.IGNORECASE)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)
_ARXIV = re.compile(
    r"(?:arxiv[:\s]*(?:preprint\s*)?(?:arxiv:)?\s*|arxiv\.org/(?:abs|pdf)/)"
    r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})",
    re.IGNORECASE,
)
# A label style is used when at least this share of entries-to-be start with a label.
LABEL_SHARE = 0.5


def extract_references(layout: DocumentLayout) -> list[Reference]:
    lines = _reference_lines(layout)
    if not lines:
        return []
    groups = _split_entries(lines)
    references: list[Reference] = []
    for group in groups:
        reference = _make_reference(group, len(references), layout.printed)
        if reference is not None:
            references.append(reference)
    return references


def _reference_lines(layout: DocumentLayout) -> list[Line]:
    """Body lines between the last references heading and the next heading (or the end)."""
    all_lines = [line for line in layout.lines() if not line.furniture and _is_horizontal(line)]
    start = None
    for index, line in enumerate(all_lines):
        if _HEADING.match(line.text.strip()):
            start = index
    if start is None:
        return []
    heading = all_lines[start]
    out: list[Line] = []
    for line in all_lines[start + 1 :]:
        if _ends_references(line, heading, layout.body_size):
            break
        out.append(line)
    return out


def _is_horizontal(line: Line) -> bool:
    """Rotated margin stamps (arXiv ids, journal codes) are taller than wide."""
    x0, y0, x1, y1 = line.bbox
    return (y1 - y0) < 2.5 * max(x1 - x0, 1.0) or len(line.text) < 3


def _ends_references(line: Line, heading: Line, body_size: float) -> bool:
    text = line.text.strip()
    heading_like = line.bold and line.size >= heading.size - 0.6 and len(text) < 80
    bigger = line.size >= max(heading.size, body_size) + 1.5 and len(text) < 80
    if _APPENDIX.match(text) and (heading_like or bigger or line.size > heading.size):
        return True
    return bigger and not _BRACKET_LABEL.match(text)


def _split_entries(lines: list[Line]) -> list[list[Line]]:
    bracketed = sum(1 for line in lines if _BRACKET_LABEL.match(line.text))
    numbered = sum(1 for line in lines if _NUMBER_LABEL.match(line.text))
    expected = max(len(lines) / 4, 1)
    if bracketed >= LABEL_SHARE * expected and bracketed >= 2:
        return _split_by_label(lines, _BRACKET_LABEL)
    if numbered >= LABEL_SHARE * expected and numbered >= 2 and _numbers_increase(lines):
        return _split_by_label(lines, _NUMBER_LABEL)
    return _split_by_indent(lines)


def _numbers_increase(lines: list[Line]) -> bool:
    """Numbered labels must mostly count upwards, or they are page numbers / list items."""
    numbers = [int(m.group(1)) for line in lines if (m := _NUMBER_LABEL.match(line.text))]
    rising = sum(1 for a, b in zip(numbers, numbers[1:], strict=False) if b == a + 1)
    return rising >= 0.6 * (len(numbers) - 1)


def _split_by_label(lines: list[Line], label: re.Pattern) -> list[list[Line]]:
    groups: list[list[Line]] = []
    for line in lines:
        if label.match(line.text) or not groups:
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


def _column_key(line: Line, page_width: float) -> tuple[int, int]:
    return (line.page, 0 if line.bbox[0] < page_width / 2 - 10 else 1)


def _split_by_indent(lines: list[Line]) -> list[list[Line]]:
    """Hanging indent: a line at its column's left edge opens an entry; else use gaps."""
    page_width = max(line.bbox[2] for line in lines) + 40
    lefts: dict[tuple[int, int], float] = {}
    for line in lines:
        key = _column_key(line, page_width)
        lefts[key] = min(lefts.get(key, line.bbox[0]), line.bbox[0])
    sizes = [line.size for line in lines]
    tolerance = 0.25 * median(sizes)
    at_edge = [line.bbox[0] <= lefts[_column_key(line, page_width)] + tolerance for line in lines]
    indented_share = 1 - sum(at_edge) / len(lines)
    if indented_share < 0.15:
        return _split_by_gap(lines)
    groups: list[list[Line]] = []
    for line, starts in zip(lines, at_edge, strict=True):
        if starts or not groups:
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


def _split_by_gap(lines: list[Line]) -> list[list[Line]]:
    steps = [
        b.bbox[1] - a.bbox[1]
        for a, b in zip(lines, lines[1:], strict=False)
        if b.page == a.page and 0 < b.bbox[1] - a.bbox[1] < 3 * a.size
    ]
    spacing = median(steps) if steps else 12.0
    groups: list[list[Line]] = []
    previous: Line | None = None
    for line in lines:
        step = line.bbox[1] - previous.bbox[1] if previous else 0.0
        new_column = previous is None or line.page != previous.page or step < 0
        if not groups or (not new_column and step > 1.3 * spacing):
            groups.append([line])
        else:
            groups[-1].append(line)
        previous = line
    return groups


def _make_reference(group: list[Line], ordinal: int, printed: PrintedWords) -> Reference | None:
    text = _join_lines([line.text for line in group], printed)
    label = None
    match = _BRACKET_LABEL.match(text) or _NUMBER_LABEL.match(text)
    if match:
        label = match.group(1)
        text = text[match.end() :].strip()
    if len(text) < 12 or not re.search(r"[A-Za-z]{3}", text):
        return None
    doi = _DOI.search(text)
    arxiv = _ARXIV.search(text)
    year = _YEAR.search(_URL.sub(" ", text))
    return Reference(
        ordinal=ordinal,
        page_number=group[0].page,
        label=label,
        text=text,
        year=int(year.group(1)) if year else None,
        doi=doi.group(1).rstrip(".,;)") if doi else None,
        arxiv_id=arxiv.group(1) if arxiv else None,
    )


def _join_lines(texts: list[str], printed: PrintedWords) -> str:
    """Join wrapped lines, end-of-line hyphens read as ``language.hyphens`` reads them."""
    out = ""
    for text in texts:
        text = text.strip()
        if not out:
            out = text
        elif out.endswith("/") or (out.endswith("-") and not text[:1].islower()):
            out += text  # a URL, a DOI or a name broken at a slash or hyphen
        else:
            out = join_lines(out, text, printed)
    return out
