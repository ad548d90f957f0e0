"""Features whose packages are optional extras of the install, and the one error that says so.

The default install serves the embedded index, office formats and OCR; the shared PostgreSQL
store, Dask clusters and the torch encoder need packages most users never want (torch alone is
750 MB). A feature reached without its extra raises ``MissingExtra`` naming the command that
adds it, which the CLI prints as one line.
"""

from __future__ import annotations

from importlib.util import find_spec


class MissingExtra(ImportError):
    """A feature was asked for whose packages this install lacks."""


def require(feature: str, modules: tuple[str, ...], extra: str) -> None:
    """Raise ``MissingExtra`` unless every module of ``feature`` can be imported."""
    missing = [name for name in modules if find_spec(name) is None]
    if missing:
        raise MissingExtra(
            f"{feature} needs {', '.join(missing)}, which this install lacks: "
            f"pip install 'docsym[{extra}]'"
        )
