"""Which backend holds an index: the factories every reader opens a store through and every
index run opens a sink through.

They live apart from ``storage/store.py`` and ``storage/sink.py`` (the interfaces) because they
name the backends, and the backends import the interfaces: in one module they would import each
other.
"""

from __future__ import annotations

from pathlib import Path

from docsym.storage.paths import is_store_url
from docsym.storage.sink import Sink
from docsym.storage.store import Store


def open_store(target: Path | str, model_name: str | None = None) -> Store:
    """The store at an index directory or a ``postgresql://`` URL."""
    if is_store_url(target):
        from docsym.storage.postgres.store import PostgresStore

        return PostgresStore(str(target), model_name)
    from docsym.storage.directory.store import DirectoryStore

    return DirectoryStore(Path(target), model_name)


def open_sink(target: Path | str, model_name: str) -> Sink:
    """The sink for an index directory or a ``postgresql://`` store URL; vectors of
    ``model_name`` go to its collection."""
    if is_store_url(target):
        from docsym.storage.postgres.sink import PostgresSink

        return PostgresSink(str(target), model_name)
    from docsym.storage.directory.sink import DirectorySink

    return DirectorySink(Path(target), model_name)
