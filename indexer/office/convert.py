"""Read DOCX, HTML, PPTX and Markdown into a DoclingDocument with docling's format backends.

The backends are called directly, as docling's own simple pipeline calls them, rather than
through its ``DocumentConverter``: the converter module imports every pipeline docling has, its
speech pipeline among them, and that one imports torch, which the default install does not have
(docling-slim 2.143: every office file failed with ``No module named 'torch'``). The backends
load no model and fetch nothing: remote and local fetching are off, set here rather than left
to a default that a release could change. docling is imported on first use, so indexing only
PDFs never pays its import; a worker imports the backend its file needs before its memory
budget is measured (``runtime/formats.py``'s ``libraries``).
"""

from __future__ import annotations

import importlib
import logging
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from docsym.indexer.errors import ParseError
from docsym.runtime.formats import BY_NAME

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

log = logging.getLogger(__name__)

# Format -> (docling's InputFormat member, its backend class, that class's options class).
_BACKENDS = {
    "docx": ("DOCX", "MsWordDocumentBackend", None),
    "html": ("HTML", "HTMLDocumentBackend", "HTMLBackendOptions"),
    "pptx": ("PPTX", "MsPowerpointDocumentBackend", None),
    "md": ("MD", "MarkdownDocumentBackend", "MarkdownBackendOptions"),
}


def convert(path: Path, fmt: str, data: bytes | None = None) -> DoclingDocument:
    """The DoclingDocument of ``path`` (or of ``data``, e.g. rewritten HTML, named like it)."""
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    member, backend_name, options_name = _BACKENDS[fmt]
    record = BY_NAME[fmt]
    (module,) = record.libraries  # the backend's module
    backend = getattr(importlib.import_module(module), backend_name)
    name = f"{path.stem}{record.suffixes[0]}"
    stream = BytesIO(data if data is not None else path.read_bytes())
    try:
        document = InputDocument(
            stream,
            InputFormat[member],
            backend=backend,
            backend_options=_options(options_name),
            filename=name,
        )
        if not document.valid:
            raise ParseError(f"cannot read {record.title}: docling found it invalid")
        # docling's simple pipeline does exactly this with a declarative backend.
        return document._backend.convert()
    except ParseError:
        raise
    except (ImportError, MemoryError, RecursionError):
        raise  # a missing library or the memory limit, reported as such by the worker
    except Exception as exc:  # docling raises its own types for broken input
        raise ParseError(f"cannot read {record.title}: {type(exc).__name__}: {exc}") from None


def _options(name: str | None) -> object | None:
    """The backend's options with every fetch off; None where the backend takes none."""
    if name is None:
        return None
    from docling.datamodel import backend_options

    return getattr(backend_options, name)(enable_remote_fetch=False, enable_local_fetch=False)
