"""Run docling's converter for DOCX, HTML, PPTX and Markdown (no PDF pipeline, no models).

The converter is restricted to the declarative formats, so it loads no layout or OCR model and
never touches the network (remote and local image fetching stay off, docling's default). docling
takes several seconds to import, so it is imported on first use: indexing only PDFs never pays.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from docsym.indexer.errors import ParseError

if TYPE_CHECKING:
    from docling.document_converter import DocumentConverter
    from docling_core.types.doc import DoclingDocument

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def converter() -> DocumentConverter:
    from docling.datamodel.base_models import InputFormat
    from docling.document_converter import DocumentConverter

    formats = [InputFormat.DOCX, InputFormat.HTML, InputFormat.PPTX, InputFormat.MD]
    return DocumentConverter(allowed_formats=formats)


def convert(path: Path, fmt: str, data: bytes | None = None) -> DoclingDocument:
    """The DoclingDocument of ``path`` (or of ``data``, e.g. rewritten HTML, named like it)."""
    from docling.datamodel.base_models import ConversionStatus, DocumentStream

    suffix = {"docx": ".docx", "html": ".html", "pptx": ".pptx", "md": ".md"}[fmt]
    source = DocumentStream(name=f"{path.stem}{suffix}", stream=BytesIO(data or path.read_bytes()))
    try:
        result = converter().convert(source, raises_on_error=False)
    except Exception as exc:  # docling raises its own types for unsupported or broken input
        raise ParseError(f"cannot read {fmt.upper()}: {type(exc).__name__}: {exc}") from None
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        reasons = "; ".join(e.error_message for e in result.errors) or str(result.status)
        raise ParseError(f"cannot read {fmt.upper()}: {reasons}")
    if result.status == ConversionStatus.PARTIAL_SUCCESS:
        log.warning("%s: partial conversion: %s", path, [e.error_message for e in result.errors])
    return result.document
