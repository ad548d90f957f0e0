"""Accents a PDF prints as glyphs of their own, put back on their letters.

TeX sets an accent as a glyph of its own: before the letter it sits over ('Lemaˆıtre', 'F¨arber',
'Mitrovi´c'), after the letter it hangs under ('Pas¸ca'). Text extraction gives that glyph as a
spacing character, so 'Lemaître' typed in a question met no word of the page. Each such accent is
joined to its letter where the two make one letter of Unicode ('î', 'ä', 'ć', 'ş'); anything else
('¯ν', an apostrophe written '´') is left as printed.
"""

from __future__ import annotations

import re
import unicodedata

# Spacing accent -> the combining mark it stands for. The grave accent is left out: a backquote
# in code or in plain-text quotes ("`ls`") is no accent.
_ABOVE = {
    "\u00b4": "\u0301",  # acute
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u00af": "\u0304",  # macron
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u00a8": "\u0308",  # diaeresis
    "\u02da": "\u030a",  # ring above
    "\u02dd": "\u030b",  # double acute
    "\u02c7": "\u030c",  # caron
}
_BELOW = {"\u00b8": "\u0327", "\u02db": "\u0328"}  # cedilla, ogonek
_ACCENTS = frozenset(_ABOVE) | frozenset(_BELOW)
_LETTER = r"[^\W\d_]"
_BEFORE_LETTER = re.compile(f"([{''.join(_ABOVE)}])({_LETTER})")
_AFTER_LETTER = re.compile(f"({_LETTER})([{''.join(_BELOW)}])")
_DOTLESS = {"ı": "i", "ȷ": "j"}  # TeX's base letters under an accent: \^{\i}


def place_accents(text: str) -> str:
    """``text`` with each spacing accent joined to the letter it belongs to, where the two are
    one letter of Unicode."""
    if _ACCENTS.isdisjoint(text):
        return text
    text = _BEFORE_LETTER.sub(lambda m: _one_letter(m[2], _ABOVE[m[1]], m[0]), text)
    return _AFTER_LETTER.sub(lambda m: _one_letter(m[1], _BELOW[m[2]], m[0]), text)


def _one_letter(base: str, mark: str, printed: str) -> str:
    letter = unicodedata.normalize("NFC", _DOTLESS.get(base, base) + mark)
    return letter if len(letter) == 1 else printed
