"""``docsym index``: discover files, skip unchanged ones, parse, write one document at a time."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from indexer.discover import discover, doc_id_for, file_format, sha256_of
from indexer.errors import ParseError
from indexer.graph import build_graph
from indexer.model import ParsedDocument
from indexer.ocr.need import OcrMode
from indexer.ocr.pages import OcrRun
from indexer.ocr.pool import OcrCache, OcrPool
from indexer.office import OFFICE_PARSERS
from indexer.pdf.parser import NO_TEXT_WARNING, parse_pdf
from indexer.sinks import Sink, ocr_cache_path, open_sink
from indexer.summaries import LlmSummariser, summarise_document, summariser_from_settings
from indexer.views import FileFacts, build_rows
from storage.encoder import get_encoder
from storage.settings import get_settings

log = logging.getLogger(__name__)

OFFICE: dict[str, Callable[[Path], ParsedDocument]] = OFFICE_PARSERS


@dataclass
class IndexReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    no_text: list[str] = field(default_factory=list)  # scans: recorded, but nothing to search
    ocr_pages: int = 0  # pages whose text was read by OCR
    warnings: list[tuple[str, str]] = field(default_factory=list)
    pages: int = 0
    tables: int = 0
    figures: int = 0
    equations: int = 0
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


class Progress:
    """What the pipeline tells its caller as it goes (the CLI draws a progress bar from it)."""

    def start(self, files: int) -> None: ...
    def file_started(self, path: Path) -> None: ...
    def file_done(self, path: Path, pages: int) -> None: ...
    def ocr_page(self, path: Path, done: int, total: int) -> None: ...


@dataclass
class _Plan:
    path: Path
    sha256: str
    doc_id: str
    replaces: list[str]  # doc_ids this file's new version replaces
    is_update: bool


def index_paths(
    paths: list[Path],
    target: Path | str,
    *,
    prune: bool = False,
    progress: Progress | None = None,
    model_name: str | None = None,
    ocr: OcrMode | None = None,
) -> IndexReport:
    """Index the files under ``paths`` into ``target``, an index directory or a
    ``postgresql://`` store URL; ``ocr`` overrides DOCSYM_OCR."""
    started = time.perf_counter()
    progress = progress or Progress()
    report = IndexReport()
    files = discover(paths)
    settings = get_settings()
    sink = open_sink(target, get_encoder(model_name))
    pool = OcrPool(settings.ocr_workers or os.cpu_count() or 1, OcrCache(ocr_cache_path(target)))
    reading = OcrRun(pool, ocr or settings.ocr)
    failed = True
    try:
        stale = sink.stale()
        if sink.needs_reindex:
            stale |= {doc_id for doc_id, _ in sink.documents_by_path().values()}
        plans = _plan(files, sink.documents_by_path(), stale, report)
        progress.start(len(plans))
        llm = summariser_from_settings(settings)
        busy: list[_Plan] = []  # being indexed by another run: come back to them at the end
        for plan in plans:
            if not _claimed_and_indexed(plan, sink, llm, report, reading, progress, wait=False):
                busy.append(plan)
        for plan in busy:  # waits for the other run; if it died, its claim died with it
            _claimed_and_indexed(plan, sink, llm, report, reading, progress, wait=True)
        if prune:
            _prune(sink, report)
        if sink.needs_reindex:
            sink.reindex_done()
        failed = False
    finally:
        try:
            sink.close(failed)
        finally:
            pool.close()
    report.elapsed = time.perf_counter() - started
    return report


def _plan(
    files: list[Path], known: dict[str, tuple[str, str]], stale: set[str], report: IndexReport
) -> list[_Plan]:
    plans: list[_Plan] = []
    known_ids = {doc_id: path for path, (doc_id, _) in known.items()}
    planned_ids: set[str] = set()
    for path in files:
        try:
            sha = sha256_of(path)
        except OSError as exc:
            report.failed.append((str(path), f"cannot read file: {exc.strerror or exc}"))
            continue
        doc_id = doc_id_for(sha)
        previous = known.get(str(path))
        if previous and previous[1] == sha and doc_id not in stale:
            report.unchanged.append(str(path))
            continue
        twin = known_ids.get(doc_id)
        if doc_id in planned_ids or (twin and twin != str(path) and Path(twin).exists()):
            report.unchanged.append(str(path))
            report.warnings.append(
                (str(path), f"same content as {twin or 'another file'}; skipped")
            )
            continue
        planned_ids.add(doc_id)
        replaces = [previous[0]] if previous else []
        if twin and twin != str(path):  # the file moved: re-index it under its new path
            replaces.append(doc_id)
        plans.append(_Plan(path, sha, doc_id, replaces, is_update=previous is not None))
    return plans


def _claimed_and_indexed(
    plan: _Plan,
    sink: Sink,
    llm: LlmSummariser | None,
    report: IndexReport,
    reading: OcrRun,
    progress: Progress,
    *,
    wait: bool,
) -> bool:
    """Index the planned file unless another run holds its document; False if one does (and
    ``wait`` is off). A document another run wrote meanwhile is not written again."""
    with sink.claim(plan.doc_id, plan.sha256, wait=wait) as claim:
        if claim == "busy":
            return False
        progress.file_started(plan.path)
        pages = 0
        if claim == "done":
            report.unchanged.append(str(plan.path))
        else:
            reading.on_page = partial(progress.ocr_page, plan.path)
            pages = _index_one(plan, sink, llm, report, reading)
        progress.file_done(plan.path, pages)
    return True


def _index_one(
    plan: _Plan, sink: Sink, llm: LlmSummariser | None, report: IndexReport, reading: OcrRun
) -> int:
    path = str(plan.path)
    fmt = file_format(plan.path) or "pdf"  # explicitly named files are tried as PDF
    try:
        parsed = parse_pdf(plan.path, reading) if fmt == "pdf" else OFFICE[fmt](plan.path)
    except ParseError as exc:
        report.failed.append((path, str(exc)))
        return 0
    except Exception as exc:  # a parser bug on one file must not stop the run
        log.exception("unexpected error parsing %s", path)
        report.failed.append((path, f"internal error: {type(exc).__name__}: {exc}"))
        return 0
    facts = FileFacts(plan.doc_id, plan.path, plan.sha256, plan.path.stat().st_size)
    summaries = summarise_document(parsed, llm=llm)
    report.warnings.extend((path, f"LLM summariser: {e}") for e in summaries.llm_errors)
    views = build_rows(facts, parsed, summaries)
    graph = build_graph(plan.doc_id, views, sink.encoder.encode, sink.encoder.dim)
    sink.write(views.merged(graph.rows), plan.doc_id, plan.replaces, known=graph.vectors)
    (report.updated if plan.is_update else report.added).append(path)
    if NO_TEXT_WARNING in parsed.warnings:
        report.no_text.append(path)
    report.warnings.extend((path, w) for w in parsed.warnings if w != NO_TEXT_WARNING)
    report.pages += len(parsed.pages)
    report.ocr_pages += sum(1 for p in parsed.pages if p.ocr)
    report.tables += len(parsed.tables)
    report.figures += len(parsed.figures)
    report.equations += len(parsed.equations)
    return len(parsed.pages)


def _prune(sink: Sink, report: IndexReport) -> None:
    known = sink.documents_by_path().items()
    gone = [(p, doc_id) for p, (doc_id, _) in known if not Path(p).exists()]
    sink.remove([doc_id for _, doc_id in gone])
    report.removed.extend(p for p, _ in gone)
