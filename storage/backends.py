"""Which backend serves an index: the factory every reader opens a store through.

It lives apart from ``storage/store.py`` (the interface) because it names the backends, and the
backends import the interface: in one module the two would import each other.
"""

from __future__ import annotations

from pathlib import Path

from docsym.storage.paths import is_store_url
from docsym.storage.store import Store


def open_store(target: Path | str, model_name: str | None = None) -> Store:
    """The store at an index directory or a ``postgresql://`` URL."""
    if is_store_url(target):
        from docsym.storage.postgres.store import PostgresStore

        return PostgresStore(str(target), model_name)
    from docsym.storage.directory_store import DirectoryStore

    return DirectoryStore(Path(target), model_name)
