"""Printed heading numbers: "3.2 Training", "A.1 Details", "Appendix B: Proofs", "PART II",
"Item 7." The same reading for every format (PDF layout and outline, HTML, DOCX, Markdown)."""

from __future__ import annotations

import re

# "3", "3.2", "3.2.1." followed by the title.
DECIMAL = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+(\S.*)$")
# "A", "A.1", "B.2.3" followed by the title (appendices).
LETTER = re.compile(r"^([A-Z](?:\.\d{1,2}){0,3})\.?\s+(\S.*)$")
# Headings led by a keyword: "PART II", "Chapter 3", "ITEM 1A. RISK FACTORS", "Appendix B: Foo".
KEYWORD = re.compile(
    r"^(part|chapter|item|section|appendix|annex)\s+([IVXLC]{1,6}|\d{1,3}[A-Z]?|[A-Z])\b(?!\.\d)"
    r"[.:]?"
    r"\s*(?:[-–—:]\s*)?(.*)$",
    re.IGNORECASE,
)


def split_heading_number(text: str) -> tuple[str, str | None, str]:
    """(kind, number, title) of a heading text; kind "unnumbered" when it has no number."""
    text = text.strip()
    match = KEYWORD.match(text)
    if match:
        keyword = match.group(1).lower()
        number = match.group(2)
        rest = match.group(3).strip()
        if keyword in ("appendix", "annex"):
            return "letter" if number.isalpha() else keyword, number, rest or text
        return keyword, number, text
    match = DECIMAL.match(text)
    if match:
        return "decimal", match.group(1), match.group(2).strip()
    match = LETTER.match(text)
    if match:
        return "letter", match.group(1), match.group(2).strip()
    return "unnumbered", None, text
