"""What travels to a client, bounded: values read from the index, and the text of refusals.

The store's SQL answers (``jsonable``), the tools' refusals and the server's error messages
(``echo``, ``scrub``) are all cut here, to one set of sizes, so no layer has its own.
"""

from __future__ import annotations

import re
from typing import Any

MAX_CELL_CHARS = 2_000
MAX_LIST_ITEMS = 200
MAX_ECHO_CHARS = 200  # how much of a client's input a refusal quotes back
MAX_MESSAGE_CHARS = 2_000
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-~]+){2,}/?")


def jsonable(value: Any) -> Any:
    """A DuckDB value as JSON: long strings and lists cut (and marked), the rest as text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if len(value) > MAX_CELL_CHARS:
            return value[:MAX_CELL_CHARS] + f"… [{len(value) - MAX_CELL_CHARS} more chars]"
        return value
    if isinstance(value, list | tuple):
        kept = [jsonable(v) for v in value[:MAX_LIST_ITEMS]]
        if len(value) > MAX_LIST_ITEMS:
            kept.append(f"… [{len(value) - MAX_LIST_ITEMS} more items]")
        return kept
    if isinstance(value, dict):
        items = list(value.items())[:MAX_LIST_ITEMS]
        return {str(k)[:MAX_CELL_CHARS]: jsonable(v) for k, v in items}
    return jsonable(str(value))


def echo(text: str, size: int = MAX_ECHO_CHARS) -> str:
    """At most ``size`` characters of client input for an error message, marked when cut."""
    if len(text) <= size:
        return text
    return f"{text[:size]}… [{len(text) - size:,} more chars]"


def scrub(message: str, size: int = MAX_MESSAGE_CHARS) -> str:
    """An engine's error message fit for a client: host paths replaced, length bounded."""
    return echo(_PATH.sub("<path>", message), size)
