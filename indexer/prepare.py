"""One file -> everything a sink writes: its rows, entries and their vectors, and what the run
report says of it. Runs in the indexing process, or in worker processes (``docsym index
--workers N``) that parse and embed documents in parallel while the one writer writes."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from indexer.discover import file_format
from indexer.embedding import build_entries, embed_entries
from indexer.errors import ParseError
from indexer.graph import build_graph
from indexer.model import ParsedDocument
from indexer.ocr.need import OcrMode
from indexer.ocr.pages import OcrRun
from indexer.ocr.pool import OcrCache, OcrPool
from indexer.pdf.parser import NO_TEXT_WARNING, parse_pdf
from indexer.summaries import LlmSummariser, summarise_document, summariser_from_settings
from indexer.views import FileFacts, build_rows
from storage.encoder import Encoder, get_encoder
from storage.rows import DocumentRows
from storage.settings import get_settings
from storage.vectors import Entry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FilePlan:
    path: Path
    sha256: str
    doc_id: str
    replaces: list[str]  # doc_ids this file's new version replaces
    is_update: bool


@dataclass
class Prepared:
    plan: FilePlan
    failure: str | None = None  # why the file could not be read; nothing to write then
    rows: DocumentRows | None = None
    entries: list[Entry] = field(default_factory=list)
    vectors: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    no_text: bool = False
    pages: int = 0
    ocr_pages: int = 0
    tables: int = 0
    figures: int = 0
    equations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # per stage (see STAGES)


# The stages of preparing a document, as the run report times them (writing is the sink's).
STAGES = ("parse", "summaries", "graph", "encode")


@contextmanager
def _stage(seconds: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started


def prepare(
    plan: FilePlan, reading: OcrRun, encoder: Encoder, llm: LlmSummariser | None
) -> Prepared:
    fmt = file_format(plan.path) or "pdf"  # explicitly named files are tried as PDF
    seconds: dict[str, float] = {}
    try:
        with _stage(seconds, "parse"):
            parsed = parse_pdf(plan.path, reading) if fmt == "pdf" else _office(fmt)(plan.path)
    except ParseError as exc:
        return Prepared(plan, failure=str(exc))
    except Exception as exc:  # a parser bug on one file must not stop the run
        log.exception("unexpected error parsing %s", plan.path)
        return Prepared(plan, failure=f"internal error: {type(exc).__name__}: {exc}")
    facts = FileFacts(plan.doc_id, plan.path, plan.sha256, plan.path.stat().st_size)
    with _stage(seconds, "summaries"):
        summaries = summarise_document(parsed, llm=llm)
        views = build_rows(facts, parsed, summaries)
    with _stage(seconds, "graph"):
        graph = build_graph(plan.doc_id, views, encoder.encode, encoder.dim)
        rows = views.merged(graph.rows)
    with _stage(seconds, "encode"):
        entries = build_entries(rows)
        vectors = embed_entries(entries, rows, encoder, graph.vectors)
    return Prepared(
        plan,
        rows=rows,
        entries=entries,
        vectors=vectors,
        seconds=seconds,
        warnings=[f"LLM summariser: {e}" for e in summaries.llm_errors]
        + [w for w in parsed.warnings if w != NO_TEXT_WARNING],
        no_text=NO_TEXT_WARNING in parsed.warnings,
        pages=len(parsed.pages),
        ocr_pages=sum(1 for p in parsed.pages if p.ocr),
        tables=len(parsed.tables),
        figures=len(parsed.figures),
        equations=len(parsed.equations),
    )


def _office(fmt: str) -> Callable[[Path], ParsedDocument]:
    """The parser of an office format, imported on first use (its libraries take a third of a
    second to import, which a folder of PDFs should not pay)."""
    from indexer.office import OFFICE_PARSERS

    return OFFICE_PARSERS[fmt]


# -- in a worker process ---------------------------------------------------------------------
_WORKER: dict[str, object] = {}


def start_worker(model_name: str | None, ocr: OcrMode, ocr_cache: Path) -> None:
    """Initialise a worker: one encoder thread and one OCR process, so N workers use N cores."""
    os.environ["DOCSYM_ENCODER_THREADS"] = "1"
    get_settings.cache_clear()
    _WORKER["encoder"] = get_encoder(model_name)
    _WORKER["reading"] = OcrRun(OcrPool(1, OcrCache(ocr_cache)), ocr)
    _WORKER["llm"] = summariser_from_settings(get_settings())


def prepare_in_worker(
    plan: FilePlan, model_name: str | None, ocr: OcrMode, ocr_cache: Path
) -> Prepared:
    """``prepare`` in a worker process (local, or a Dask worker on any machine), set up on its
    first document."""
    if not _WORKER:
        start_worker(model_name, ocr, ocr_cache)
    return prepare(plan, _WORKER["reading"], _WORKER["encoder"], _WORKER["llm"])  # type: ignore[arg-type]
