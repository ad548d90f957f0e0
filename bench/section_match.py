"""How well the layout heading tree matches the S2ORC (GROBID) section ground truth.

Usage: python bench/section_match.py [CORPUS_DIR]

The ground truth is the set of distinct (sec_num, section) pairs of the paragraphs in
``body_text`` and ``back_matter``. GROBID output is machine-made, so it is cleaned first:
empty titles and the "annex" catch-all are dropped, a heading GROBID glued to its first
subsection ("Model 2.1 Overview") is split in two, and a number GROBID saw twice (a table row
"5. ELMo ELMo" after section "5 Results") keeps its first title only. A ground-truth heading is
found when an extracted section has the same number and the same title (Unicode-normalised,
case and whitespace folded).
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import pymupdf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.indexer.pdf.layout import read_layout  # noqa: E402
from docsym.indexer.pdf.sections import extract_sections  # noqa: E402

PAIRS = {
    "papers/2020.acl-main.207_specter.pdf": "groundtruth/s2orc-doc2json/2020.acl-main.207.json",
    "papers/N18-3011_literature_graph.pdf": "groundtruth/s2orc-doc2json/N18-3011.json",
}
_GLUED = re.compile(r"^(.*?\S)\s+(\d+(?:\.\d+)+)\s+(\S.*)$")

Heading = tuple[str | None, str]


def normalise_title(title: str) -> str:
    folded = unicodedata.normalize("NFKC", title).casefold()
    return " ".join(folded.split()).strip(" .:")


def normalise_number(number: str | None) -> str | None:
    return number.strip().rstrip(".") or None if number else None


def ground_truth(path: Path) -> tuple[list[Heading], list[str]]:
    """The cleaned (number, title) pairs and a note for every GROBID oddity handled."""
    parse = json.loads(path.read_text())["pdf_parse"]
    raw: list[Heading] = []
    for paragraph in parse["body_text"] + parse["back_matter"]:
        pair = (paragraph.get("sec_num"), paragraph.get("section") or "")
        if pair not in raw:
            raw.append(pair)
    cleaned: list[Heading] = []
    notes: list[str] = []
    seen_numbers: set[str] = set()
    for number, title in raw:
        title = " ".join(title.split())
        if not title or title.lower() == "annex":
            notes.append(f"dropped empty/catch-all section {title!r}")
            continue
        glued = _GLUED.match(title) if number else None
        parts = [(number, title)]
        if glued:
            notes.append(f"split glued heading {number} {title!r}")
            parts = [(number, glued.group(1)), (glued.group(2), glued.group(3))]
        for part_number, part_title in parts:
            part_number = normalise_number(part_number)
            if part_number is not None and part_number in seen_numbers:
                notes.append(f"dropped repeated number {part_number} {part_title!r}")
                continue
            if part_number is not None:
                seen_numbers.add(part_number)
            cleaned.append((part_number, part_title))
    return cleaned, notes


def extracted(pdf: Path) -> list[Heading]:
    doc = pymupdf.open(pdf)
    try:
        sections = extract_sections(doc, read_layout(doc))
    finally:
        doc.close()
    return [(s.number, s.title) for s in sections]


def match_rate(truth: list[Heading], found: list[Heading]) -> tuple[float, list[Heading]]:
    """Share of ground-truth headings found with the same number and title; and the misses."""
    keys = {(normalise_number(n), normalise_title(t)) for n, t in found}
    missed = [h for h in truth if (normalise_number(h[0]), normalise_title(h[1])) not in keys]
    return (1 - len(missed) / len(truth)) if truth else 0.0, missed


def main(corpus: Path) -> int:
    for pdf_name, truth_name in PAIRS.items():
        truth, notes = ground_truth(corpus / truth_name)
        rate, missed = match_rate(truth, extracted(corpus / pdf_name))
        print(f"{pdf_name}: {len(truth) - len(missed)}/{len(truth)} = {rate:.1%}")
        for note in notes:
            print(f"  ground truth: {note}")
        for number, title in missed:
            print(f"  missed: {number} {title}")
    return 0


if __name__ == "__main__":
    default = REPO.parent / "shared" / "corpus"
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else default))
