"""One file -> the first stage of its index: its rows and search entries, and what the run
report says of it (its vectors follow in the indexing process: ``indexer/dense_stage.py``).
Runs in worker processes (``indexer/workers.py``, or Dask workers with ``docsym index
--dask``) while the indexing process writes what they return."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from docsym.indexer.discover import doc_id_for, sha256_of
from docsym.indexer.embedding import build_entries
from docsym.indexer.errors import ParseError
from docsym.indexer.graph import build_graph
from docsym.indexer.limits import FileLimits, check_file
from docsym.indexer.model import ParsedDocument
from docsym.indexer.ocr.pages import OcrRun
from docsym.indexer.ocr.pool import OcrCache, OcrPool
from docsym.indexer.pdf.parser import NO_TEXT_WARNING
from docsym.indexer.plans import FilePlan, Prepared, WorkerSetup
from docsym.indexer.progress import Beat, PagesRead, ReportingSummariser
from docsym.indexer.summaries import LlmSummariser, summarise_document, summariser_from_settings
from docsym.indexer.views import FileFacts, build_rows
from docsym.runtime.formats import FileFormat, reads
from docsym.runtime.settings import get_settings

log = logging.getLogger(__name__)

# Every format's parser: the file, the run's OCR, and a callback told of pages read.
Parser = Callable[[Path, OcrRun, Callable[[int, int], None]], ParsedDocument]

# A file rewritten while it is read is read again, up to this many times in all.
READS = 3


@dataclass
class WorkerState:
    """A worker's tools, made once: the OCR pool, the LLM summariser, the limits."""

    reading: OcrRun
    llm: LlmSummariser | None
    limits: FileLimits

    def close(self) -> None:
        self.reading.pool.close()  # its OCR processes end with the worker's last file


def start_worker_state(setup: WorkerSetup) -> WorkerState:
    """Load what preparing files needs."""
    pool = OcrPool(setup.ocr_processes, OcrCache(setup.ocr_cache))
    return WorkerState(
        OcrRun(pool, setup.ocr),
        summariser_from_settings(get_settings()),
        setup.limits,
    )


@contextmanager
def _stage(seconds: dict[str, float], name: str, beat: Beat) -> Iterator[None]:
    beat(name)
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started


def refusal(plan: FilePlan, limits: FileLimits) -> str | None:
    """Why an input limit refuses the file, found before any parser is loaded; None if none."""
    try:
        check_file(plan.path, reads(plan.path), limits)
    except ParseError as exc:
        return str(exc)
    return None


def prepare(plan: FilePlan, state: WorkerState, beat: Beat | None = None) -> Prepared:
    """Read, summarise and link one file (its input limits already checked). A file that
    cannot be read comes back with its ``failure``; a file rewritten while it was read is read
    again, so what is indexed is the content its sha256 and doc_id name. Running out of memory
    raises ``MemoryError``, whichever library ran out."""
    beat = beat or Beat()
    seconds: dict[str, float] = {}
    try:
        parsed, plan = _read_whole(plan, reads(plan.path), state, seconds, beat)
    except ParseError as exc:
        return Prepared(plan, failure=str(exc))
    except RecursionError:
        return Prepared(plan, failure="nested too deeply for its reader (Python's recursion limit)")
    except Exception as exc:  # a parser bug on one file must not stop the run
        if out_of_memory(exc):
            raise MemoryError from exc
        log.debug("unexpected error parsing %s", plan.path, exc_info=True)
        return Prepared(plan, failure=f"internal error: {type(exc).__name__}: {exc}")
    return _finish(plan, parsed, state, seconds, beat)


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failing, as Python or a C library reports it (ONNX
    Runtime: "Failed to allocate memory", MuPDF: "malloc ... failed")."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or "failed to allocate" in text or "malloc" in text


def _read_whole(
    plan: FilePlan, fmt: FileFormat, state: WorkerState, seconds: dict[str, float], beat: Beat
) -> tuple[ParsedDocument, FilePlan]:
    """Parse the file, then hash it again: if it changed since it was planned or while it was
    parsed, parse what it holds now, so the content and its doc_id agree."""
    for _ in range(READS):
        with _stage(seconds, "parse", beat):
            parsed = _parse(plan.path, fmt, state, beat)
        try:
            now = sha256_of(plan.path)
        except OSError as exc:
            raise ParseError(f"the file went away while it was read: {exc.strerror}") from None
        if now == plan.sha256:
            return parsed, plan
        plan = dataclasses.replace(plan, sha256=now, doc_id=doc_id_for(now))
    raise ParseError(
        f"the file changed each of the {READS} times it was read: index it when it is complete"
    )


def _parse(path: Path, fmt: FileFormat, state: WorkerState, beat: Beat) -> ParsedDocument:
    state.reading.on_page = lambda done, total: beat("ocr", done, total)
    return parser_of(fmt)(path, state.reading, PagesRead(beat))


def _finish(
    plan: FilePlan, parsed: ParsedDocument, state: WorkerState, seconds: dict, beat: Beat
) -> Prepared:
    facts = FileFacts(plan.doc_id, plan.path, plan.sha256, plan.path.stat().st_size)
    llm = ReportingSummariser(state.llm, beat) if state.llm is not None else None
    with _stage(seconds, "summaries", beat):
        summaries = summarise_document(parsed, llm=llm)
        views = build_rows(facts, parsed, summaries)
    with _stage(seconds, "graph", beat):
        graph = build_graph(plan.doc_id, views)
        rows = views.merged(graph.rows)
    return Prepared(
        plan,
        rows=rows,
        entries=build_entries(rows),
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


def load_reader(path: Path, state: WorkerState) -> None:
    """Import the parser ``path`` needs and the libraries it loads, so a budget measured after
    this counts the file's own memory, not the library's. OCR processes kept from the scans
    before a file that OCR does not read end first (the one place they end for such a file; a
    Dask task ends them after each document): they are not needed, and another library's
    memory would sit beside theirs."""
    fmt = reads(path)
    if not fmt.page_images:  # OCR reads page images only
        state.reading.pool.release()
    for module in fmt.libraries:
        importlib.import_module(module)
    parser_of(fmt)


def parser_of(fmt: FileFormat) -> Parser:
    """The format's parser, imported on first use: an office library takes seconds to import,
    which a folder of PDFs should not pay."""
    module, _, function = fmt.parser.partition(":")
    return getattr(importlib.import_module(module), function)


# -- on a Dask worker ------------------------------------------------------------------------
_DASK_WORKER: dict[str, WorkerState] = {}


def prepare_in_worker(plan: FilePlan, setup: WorkerSetup) -> Prepared:
    """``prepare`` on a Dask worker (any machine), set up on its first document. Dask gives no
    way to stop one task, so only the input limits hold there, not the time and memory budget.
    Nor does a Dask worker learn when the run ends: its OCR processes end after each document."""
    if not _DASK_WORKER:
        _DASK_WORKER["state"] = start_worker_state(setup)
    failure = refusal(plan, setup.limits)
    if failure:
        return Prepared(plan, failure=failure)
    state = _DASK_WORKER["state"]
    try:
        return prepare(plan, state)
    finally:
        state.reading.pool.release()
