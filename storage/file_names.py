"""File names as the index keeps them: readable text for people and SQL, exact bytes to reopen.

A POSIX file name is any bytes but ``/`` and NUL. Python reads the bytes that are not UTF-8 as
lone surrogates (``surrogateescape``), which no database text column accepts, and a name may
hold newlines or other control characters that break a printed report. So the index stores
``documents.path`` as *readable* text (undecodable bytes as ``\\xNN``, control characters as
``\\n``, ``\\t``, ``\\x1b``, ...) and, only when that text is not the exact name,
``documents.path_bytes``: the path's raw bytes, from which ``original_path`` rebuilds the file
name to open.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def readable(text: str | os.PathLike[str]) -> str:
    """``text`` (a path or file name) with undecodable bytes and control characters escaped."""
    return "".join(_readable_char(c) for c in os.fspath(text))


def _readable_char(c: str) -> str:
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if c in _NAMED:
        return _NAMED[c]
    if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp"):
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return c


def stored_path(path: Path) -> tuple[str, bytes | None]:
    """What the index stores for ``path``: its readable text, and its bytes when that text is
    not the path itself."""
    text = readable(path)
    return text, (None if text == os.fspath(path) else os.fsencode(path))


def original_path(text: str, raw: bytes | None) -> Path:
    """The path to open, from what ``stored_path`` gave."""
    return Path(os.fsdecode(raw)) if raw is not None else Path(text)
