"""Scans read by OCR into the same views as born-digital PDFs: text, boxes on the page as shown,
turned and crooked scans, the cache, failures that cost a page and not the document, and the
corpus scans."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import duckdb
import numpy as np
import onnx
import pymupdf
import pytest
from rapidocr.ch_ppocr_rec.typings import WordInfo

from docsym.indexer.model import Table
from docsym.indexer.ocr import engine as engine_module
from docsym.indexer.ocr import pool as pool_module
from docsym.indexer.ocr.engine import (
    MODELS,
    REC_SQUEEZE,
    OcrLine,
    PageOcr,
    _ruled_lines,
    engine_version,
    read_image,
    rec_model,
)
from docsym.indexer.ocr.need import needs_ocr
from docsym.indexer.ocr.pages import OcrRun
from docsym.indexer.ocr.pool import OcrCache, OcrPool, PageImage
from docsym.indexer.pdf.parser import NO_TEXT_WARNING, parse_pdf
from docsym.indexer.pipeline import index_paths
from tests import pdf_factory

HEADING = "2 Methods of Measurement"
BODY = (
    "The river gauge recorded daily flows for twelve years. Annual runoff fell by forty "
    "percent after the forest was planted, while the number of dry days doubled."
)


def _born_digital(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()  # A4 portrait
    page.insert_text((72, 90), HEADING, fontsize=14, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 110, 520, 220), BODY, fontsize=11)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def pool():
    pool = OcrPool(workers=1)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    return _born_digital(tmp_path_factory.mktemp("ocr") / "original.pdf")


def _words(text: str) -> list[str]:
    return [w.strip(".,").lower() for w in text.split()]


def _recall(read: str, expected: str) -> float:
    got = set(_words(read))
    want = _words(expected)
    return sum(1 for w in want if w in got) / len(want)


def _truth_box(source: Path, phrase: str) -> pymupdf.Rect:
    with pymupdf.open(source) as doc:
        return doc[0].search_for(phrase)[0]


def test_a_scan_is_read_into_pages_sections_chunks_and_sentences(original, pool, tmp_path):
    scan = pdf_factory.scan_of(original, tmp_path / "scan.pdf", dpi=150)
    parsed = parse_pdf(scan, OcrRun(pool))
    page = parsed.pages[0]
    assert page.ocr and page.has_text and page.ocr_confidence > 0.9
    assert _recall(page.text, HEADING + " " + BODY) >= 0.95
    assert [s.title for s in parsed.sections] == ["Methods of Measurement"]
    assert parsed.sections[0].number == "2"
    assert parsed.chunks and "river gauge" in parsed.chunks[0].text
    # Sentences carry boxes on the page: the first one starts where the printed one does.
    first = parsed.sentences[0]
    truth = _truth_box(original, "The river gauge")
    assert first.page_number == 1
    assert abs(first.bbox[0] - truth.x0) < 3 and abs(first.bbox[1] - truth.y0) < 4


def test_a_scan_turned_sideways_and_crooked_is_read_upright(original, pool, tmp_path):
    scan = pdf_factory.scan_of(original, tmp_path / "turned.pdf", dpi=150, turn=90, skew=2.0)
    parsed = parse_pdf(scan, OcrRun(pool))
    page = parsed.pages[0]
    assert _recall(page.text, HEADING + " " + BODY) >= 0.9
    with pymupdf.open(scan) as doc:  # boxes are on the page as the file shows it (landscape)
        shown = doc[0].rect
    assert (page.width, page.height) == pytest.approx((shown.width, shown.height), abs=0.5)
    assert page.width > page.height
    box = parsed.sentences[0].bbox
    # Text of a page turned clockwise runs down the page: its box is tall and narrow, and it
    # sits near the right edge, where the top of the original page went.
    assert box[3] - box[1] > box[2] - box[0]
    assert box[2] > 0.7 * shown.width
    assert all(0 <= v <= max(shown.width, shown.height) for v in box)


def test_a_large_page_image_is_scaled_down_to_find_its_lines(original, tmp_path, settings):
    settings(ocr_megapixels=1)  # the 300-dpi page is 8.7 MP: its lines are found at a third
    scan = pdf_factory.scan_of(original, tmp_path / "fine.pdf", dpi=300)
    pool = OcrPool(workers=1)  # started after the setting, so its process reads it
    try:
        parsed = parse_pdf(scan, OcrRun(pool))
    finally:
        pool.close()
    assert _recall(parsed.pages[0].text, HEADING + " " + BODY) >= 0.95
    first = parsed.sentences[0]  # boxes are on the full page, not the scaled-down one
    truth = _truth_box(original, "The river gauge")
    assert abs(first.bbox[0] - truth.x0) < 3 and abs(first.bbox[1] - truth.y0) < 4


def _line_reading(crop: np.ndarray) -> tuple[str, float, WordInfo]:
    """A stand-in recogniser's reading of a uniform crop: gray 100 is a line of usual print,
    read surely at any width; gray 200 and 150 lines set so tight that only their unsqueezed
    width reads, squeezed read unsurely (200) or surely, a letter on nearly every step (150)."""
    if crop[0, 0, 0] == 100:
        return "usual", 0.99, WordInfo()
    if crop.shape[1] == round(480 * engine_module.REC_HEIGHT / 24):  # unsqueezed
        return "tight", 0.95, WordInfo()
    steps = crop.shape[1] / 8  # a letter or a blank every 8 pixels, as the model reads
    if crop[0, 0, 0] == 150:
        return "x" * round(0.9 * steps), 0.99, WordInfo(line_txt_len=steps)
    return "t  i", 0.4, WordInfo()


def test_a_line_misread_squeezed_is_read_again_unsqueezed(monkeypatch):
    widths: list[list[int]] = []

    def recognise(crops: list[np.ndarray]) -> list[tuple[str, float, WordInfo]]:
        widths.append([crop.shape[1] for crop in crops])
        return [_line_reading(crop) for crop in crops]

    monkeypatch.setattr(engine_module, "_run_rec", recognise)
    lines = [np.full((24, 480, 3), gray, dtype=np.uint8) for gray in (100, 200, 150)]
    read = [text for text, _, _ in engine_module._read(lines)]
    full = round(480 * engine_module.REC_HEIGHT / 24)
    assert widths == [[round(full * REC_SQUEEZE)] * 3, [full] * 2]  # the tight lines again
    assert read == ["usual", "tight", "tight"]


def _printed(text: str, fontsize: float) -> np.ndarray:
    """``text`` printed at 150 dpi and cut out with a margin, as the detector's boxes cut."""
    with pymupdf.open() as doc:
        page = doc.new_page(width=200, height=40)
        page.insert_text((20, 25), text, fontsize=fontsize)
        pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY, alpha=False)
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.stride)[:, : pix.w]
    ys, xs = np.nonzero(gray < 128)
    crop = gray[ys.min() - 4 : ys.max() + 5, xs.min() - 4 : xs.max() + 5]
    return cv2.cvtColor(np.ascontiguousarray(crop), cv2.COLOR_GRAY2BGR)


def test_lines_are_read_at_their_own_width_and_a_lone_letter_padded():
    """Only a crop narrower than REC_PAD_BELOW is padded to the model's training width; its
    letters' steps are still counted across the crop alone, as the spacing step reads them."""
    crops = [_printed(text, 9) for text in ("1", "7", "Annual runoff 412")]
    fitted = [engine_module._fit(crop, REC_SQUEEZE) for crop in crops]
    assert [f.shape[1] < engine_module.REC_PAD_BELOW for f in fitted] == [True, True, False]
    read = engine_module._run_rec(fitted)
    assert [text for text, _, _ in read] == ["1", "7", "Annual runoff 412"]
    for f, (_, _, info) in zip(fitted, read, strict=True):
        assert info.line_txt_len == pytest.approx(f.shape[1] / 8, abs=1)  # a step: 8 pixels


def test_full_width_marks_among_latin_letters_read_as_ascii() -> None:
    assert engine_module._narrow_marks("77.2%\uff0c n=4 \uff08a\uff09") == "77.2%, n=4 (a)"
    assert engine_module._narrow_marks("\u6587\u672c\uff0c\u5b57") == "\u6587\u672c\uff0c\u5b57"


def test_condensed_print_reads_squeezed_as_it_reads_unsqueezed(original, monkeypatch):
    """Print narrower than usual (here 0.6 of its width) leaves the squeezed reading too few
    steps for its letters: such lines are read again unsqueezed, and read as they would be."""
    page = pymupdf.open(original)[0]
    pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY, alpha=False)
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.stride)[:, : pix.w]
    condensed = cv2.resize(gray, (round(pix.w * 0.6), pix.h), interpolation=cv2.INTER_AREA)
    squeezed = [line.text for line in read_image(condensed, 1.0).lines]
    monkeypatch.setattr(engine_module, "REC_SQUEEZE", 1.0)
    assert squeezed == [line.text for line in read_image(condensed, 1.0).lines]
    assert _recall(" ".join(squeezed), HEADING + " " + BODY) >= 0.9


def test_the_int8_recogniser_is_written_once_with_its_alphabet(tmp_path, settings):
    settings(cache=tmp_path)
    path = rec_model()
    written = path.stat().st_mtime_ns
    assert rec_model() == path and path.stat().st_mtime_ns == written
    keys = {prop.key for prop in onnx.load(str(path)).metadata_props}
    assert "character" in keys  # the recogniser's letters travel in the model
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary files left


def _ruled_table(path: Path) -> Path:
    """A captioned table with booktabs rules: top, under the header, bottom."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Table 1: Annual runoff by catchment.", fontsize=11)
    rows = [("Catchment", "2019", "2020"), ("Forest", "412", "389"), ("Pasture", "655", "702")]
    for n, row in enumerate(rows):
        for x, cell in zip((80, 260, 360), row, strict=True):
            page.insert_text((x, 135 + 22 * n), cell, fontsize=11)
    for y in (115, 141, 185):
        page.draw_line((72, y), (440, y), width=1)
    doc.save(path)
    doc.close()
    return path


def test_a_scanned_table_keeps_its_rules_and_cells(pool, tmp_path):
    """The rules a scan shows are drawn on the page, so the table reader finds the table."""
    scan = pdf_factory.scan_of(_ruled_table(tmp_path / "table.pdf"), tmp_path / "scan.pdf")
    (table,) = parse_pdf(scan, OcrRun(pool)).tables
    assert table.caption.startswith("Table 1: Annual runoff")
    assert (table.n_rows, table.n_cols) == (3, 3)
    values = {(c.row, c.col): c.text for c in table.cells}
    assert values[(1, 0)] == "Forest" and values[(2, 2)] == "702" and values[(0, 1)] == "2019"


def _rule_positions(image: np.ndarray) -> set[tuple[str, int]]:
    """The rules ``engine._ruled_lines`` finds on a gray image: ("across", y) or ("down", x)."""
    found = set()
    for quad in _ruled_lines(cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), []):
        (x0, y0), (x1, y1) = quad.min(axis=0), quad.max(axis=0)
        across = x1 - x0 > y1 - y0
        found.add(
            ("across", round((y0 + y1) / 20) * 10)
            if across
            else ("down", round((x0 + x1) / 20) * 10)
        )
    return found


def test_rules_over_and_along_a_shaded_table_head_are_found() -> None:
    page = np.full((400, 900), 255, dtype=np.uint8)
    page[100:200, 100:800] = 175  # the head's shading: not a rule, nor what hides them
    for y, (x0, x1) in {100: (100, 800), 150: (450, 800), 200: (100, 800), 300: (100, 800)}.items():
        page[y - 1 : y + 1, x0:x1] = 0
    for x, y0 in {100: 100, 450: 100, 630: 150, 800: 100}.items():
        page[y0:300, x - 1 : x + 1] = 0
    across = {("across", y) for y in (100, 150, 200, 300)}
    down = {("down", x) for x in (100, 450, 630, 800)}
    assert _rule_positions(page) == across | down


def test_a_photos_long_thin_lines_are_not_rules() -> None:
    page = np.full((400, 900), 255, dtype=np.uint8)
    texture = np.random.default_rng(0).integers(0, 120, (200, 700)).astype(np.uint8)
    page[100:300, 100:800] = cv2.GaussianBlur(texture, (5, 5), 0)
    page[199:201, 100:800] = 0  # its horizon
    page[100:300, 449:451] = 0  # a mast
    assert _rule_positions(page) == set()


# A wide ruled table under its caption: "Results" spans "Yield" and "Cost"; the header is
# shaded, as many tables' heads are; one body cell holds two lines.
GRID_CAPTION = "Table 3: Yield and cost by site."
GRID_HEADER = ("Site", "Samples", "Results")
GRID_SUBHEADER = ("Yield", "Cost")
GRID_BODY = [
    ("North", "12", ("41.5%, n=3",), ("220 kg",)),
    ("South", "9", ("77.2%, n=4", "(70.1%, n=2)"), ("315 kg",)),
    ("West", "7", ("63.8%, n=2",), ("198 kg",)),
]
GRID_XS = (40, 200, 340, 560, 780)  # column edges
GRID_YS = (60, 100, 140, 190, 260, 310)  # row edges: header, subheader, then the body rows


def _grid_table(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=820, height=350)
    page.insert_text((GRID_XS[0], GRID_YS[0] - 18), GRID_CAPTION, fontsize=13)
    page.draw_rect(
        pymupdf.Rect(GRID_XS[0], GRID_YS[0], GRID_XS[-1], GRID_YS[2]),
        color=None,
        fill=(0.55, 0.7, 0.9),
    )
    for x, text in zip(GRID_XS[:3], GRID_HEADER, strict=True):
        page.insert_text((x + 10, GRID_YS[0] + 25), text, fontsize=15, fontname="hebo")
    for x, text in zip(GRID_XS[2:4], GRID_SUBHEADER, strict=True):
        page.insert_text((x + 10, GRID_YS[1] + 25), text, fontsize=15, fontname="hebo")
    for top, (site, samples, yields, costs) in zip(GRID_YS[2:-1], GRID_BODY, strict=True):
        for x, lines in zip(GRID_XS, ((site,), (samples,), yields, costs), strict=False):
            for n, text in enumerate(lines):
                page.insert_text((x + 10, top + 25 + 22 * n), text, fontsize=15)
    black = (0, 0, 0)
    for y in (GRID_YS[0], *GRID_YS[2:]):
        page.draw_line((GRID_XS[0], y), (GRID_XS[-1], y), color=black, width=1.5)
    page.draw_line(
        (GRID_XS[2], GRID_YS[1]), (GRID_XS[-1], GRID_YS[1]), color=black, width=1.5
    )  # under "Results"
    for x in (GRID_XS[0], GRID_XS[1], GRID_XS[2], GRID_XS[-1]):
        page.draw_line((x, GRID_YS[0]), (x, GRID_YS[-1]), color=black, width=1.5)
    page.draw_line((GRID_XS[3], GRID_YS[1]), (GRID_XS[3], GRID_YS[-1]), color=black, width=1.5)
    doc.save(path)
    doc.close()
    return path


def _cell(table: Table, row: list[str], col: list[str]) -> str:
    (text,) = [c.text for c in table.cells if c.row_path == row and c.col_path == col]
    return text


def test_a_scanned_grid_with_a_shaded_spanning_header_becomes_a_table(pool, tmp_path) -> None:
    scan = pdf_factory.scan_of(_grid_table(tmp_path / "grid.pdf"), tmp_path / "scan.pdf")
    parsed = parse_pdf(scan, OcrRun(pool))
    (table,) = parsed.tables
    assert (table.n_rows, table.n_cols, table.header_rows) == (5, 4, 2)
    assert table.label == "Table 3" and table.caption == GRID_CAPTION
    assert _cell(table, ["North"], ["Results", "Yield"]) == "41.5%, n=3"
    assert _cell(table, ["South"], ["Results", "Yield"]) == "77.2%, n=4 (70.1%, n=2)"
    assert _cell(table, ["West"], ["Results", "Cost"]) == "198 kg"
    assert _cell(table, ["West"], ["Samples"]) == "7"
    # Read row by row: a row's values follow its label, not the other half of the table.
    text = parsed.pages[0].text
    assert text.index("North") < text.index("41.5%") < text.index("South") < text.index("315")


def test_ocr_results_are_cached_by_page_image(original, tmp_path):
    scan = pdf_factory.scan_of(original, tmp_path / "scan.pdf", dpi=150)
    cache_path = tmp_path / "ocr-cache.sqlite"
    first_pool = OcrPool(1, OcrCache(cache_path))
    first = parse_pdf(scan, OcrRun(first_pool))
    first_pool.close()
    again = OcrPool(1, OcrCache(cache_path))
    second = parse_pdf(scan, OcrRun(again))
    started = again._executor is not None
    again.close()
    assert second.pages[0].text == first.pages[0].text
    assert not started  # nothing was read again: no worker process was needed


def _ocr_processes() -> set[int]:
    return {child.pid for child in multiprocessing.active_children()}


def test_ocr_processes_are_kept_while_documents_need_them(original, tmp_path):
    """Scanned documents in a row share the OCR processes (each start loads the models, ~1.4 s
    of CPU); a document that needs no OCR ends them, so they never sit beside its parse."""
    scans = [pdf_factory.scan_of(original, tmp_path / f"{n}.pdf", dpi=150 + n) for n in range(2)]
    before = _ocr_processes()  # the module's pool's, kept from earlier tests
    pool = OcrPool(workers=1)
    try:
        read = [parse_pdf(scan, OcrRun(pool)).pages[0] for scan in scans]
        kept = _ocr_processes() - before
        born = parse_pdf(original, OcrRun(pool)).pages[0]
        after_born = _ocr_processes() - before
    finally:
        pool.close()
    assert all(page.ocr and _recall(page.text, BODY) >= 0.95 for page in read)
    assert len(kept) == 1  # the first scan's process read the second too
    assert not born.ocr and not after_born


def test_a_kept_ocr_process_that_died_idle_costs_no_page(original, tmp_path):
    scans = [pdf_factory.scan_of(original, tmp_path / f"{n}.pdf", dpi=150 + n) for n in range(2)]
    before = _ocr_processes()
    pool = OcrPool(workers=1)
    try:
        parse_pdf(scans[0], OcrRun(pool))
        (idle,) = _ocr_processes() - before
        os.kill(idle, signal.SIGKILL)  # between documents, as the kernel's OOM killer would
        _wait_for(lambda: pool._executor is not None and pool._executor._broken)
        parsed = parse_pdf(scans[1], OcrRun(pool))
    finally:
        pool.close()
    assert not parsed.warnings
    assert parsed.pages[0].ocr and _recall(parsed.pages[0].text, BODY) >= 0.95


def _wait_for(condition: Callable[[], object], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_index_worker_ends_kept_ocr_processes_before_a_file_that_is_not_a_pdf(
    original, tmp_path
):
    from docsym.indexer.discover import doc_id_for, sha256_of
    from docsym.indexer.limits import FileLimits
    from docsym.indexer.plans import FilePlan, WorkerSetup
    from docsym.indexer.prepare import load_reader, prepare, start_worker_state

    scan = pdf_factory.scan_of(original, tmp_path / "scan.pdf", dpi=150)
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe gauge was read weekly.\n")
    plans = [FilePlan(p, sha256_of(p), doc_id_for(sha256_of(p)), [], False) for p in (scan, notes)]
    setup = WorkerSetup("auto", tmp_path / "ocr.sqlite", 1, FileLimits.from_settings())
    before = _ocr_processes()
    state = start_worker_state(setup)
    try:
        assert prepare(plans[0], state).ocr_pages == 1
        kept = _ocr_processes() - before
        load_reader(notes, state)  # as the worker does before each file
        after_notes = _ocr_processes() - before
        assert prepare(plans[1], state).failure is None
    finally:
        state.close()
    assert len(kept) == 1 and not after_notes


def _reads_nothing(gray, points_per_pixel):  # runs in a worker process
    return PageOcr((), 0, 0.0)


def test_pages_read_by_another_engine_are_read_again(tmp_path, monkeypatch):
    """The cache key names the OCR package and its models: a page cached by the engine docsym
    used before (rapidocr-onnxruntime, PP-OCRv4) is not taken for this engine's reading."""
    version = engine_version()
    assert version.startswith("rapidocr ") and all(name in version for name in MODELS.values())
    image = PageImage(1, np.full((40, 60), 255, dtype=np.uint8), 1.0)
    cache = OcrCache(tmp_path / "ocr-cache.sqlite")
    with monkeypatch.context() as patch:
        patch.setattr(pool_module, "engine_version", lambda: "rapidocr-onnxruntime 1.4.4, reader 3")
        cache.put(image.key(), PageOcr((OcrLine("stale", (0, 0, 1, 1), 0.9),), 0, 0.0))
    pool = OcrPool(1, cache, reader=_reads_nothing)
    try:
        (result,) = pool.read([image], 1)
    finally:
        pool.close()
    assert result.lines == ()


def _dies(gray, points_per_pixel):  # runs in a worker process
    os._exit(3)


def _fails(gray, points_per_pixel):
    raise ValueError("model file unreadable")


def _open_cache_at_once(path: str, barrier) -> str:  # noqa: ANN001 - a manager's proxy
    barrier.wait()
    try:
        OcrCache(Path(path)).close()
    except Exception as exc:  # the name is enough to report
        return type(exc).__name__
    return "ok"


def test_workers_opening_a_new_cache_at_once_all_get_it(tmp_path: Path) -> None:
    """Index workers open the OCR cache together; switching a new file to WAL answers all but
    one "busy" at once (17 of 120 opens failed before the switch was retried)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(4) as pool:
        for n in range(8):
            barrier = manager.Barrier(4)
            path = str(tmp_path / f"cache-{n}.sqlite")
            assert pool.starmap(_open_cache_at_once, [(path, barrier)] * 4) == ["ok"] * 4


@pytest.mark.parametrize(("reader", "message"), [(_dies, "worker died"), (_fails, "ValueError")])
def test_an_ocr_failure_costs_the_page_not_the_document(original, tmp_path, reader, message):
    scan = pdf_factory.scan_of(original, tmp_path / "scan.pdf", dpi=150)
    pool = OcrPool(1, reader=reader)
    try:
        parsed = parse_pdf(scan, OcrRun(pool))
    finally:
        pool.close()
    assert NO_TEXT_WARNING in parsed.warnings
    assert any(w.startswith("page 1: OCR") and message in w for w in parsed.warnings)
    assert len(parsed.pages) == 1 and not parsed.pages[0].ocr


def test_which_pages_need_ocr(original, tmp_path):
    scan = pdf_factory.scan_of(original, tmp_path / "scan.pdf", dpi=150)
    # A thin caption layer over a scanned page does not stop OCR.
    captioned = tmp_path / "captioned.pdf"
    with pymupdf.open(scan) as doc:
        doc[0].insert_text((40, 820), "Scanned by the records office", fontsize=6)
        doc.save(captioned)
    blank = pdf_factory.scanned_pdf(tmp_path / "blank.pdf", pages=1)  # an image with no ink
    with (
        pymupdf.open(original) as born,
        pymupdf.open(scan) as scanned,
        pymupdf.open(captioned) as thin,
        pymupdf.open(blank) as empty,
    ):
        assert [needs_ocr(d[0], "auto") for d in (born, scanned, thin, empty)] == [
            False,
            True,
            True,
            False,
        ]
        assert not needs_ocr(scanned[0], "off")
        assert needs_ocr(born[0], "force")


def test_index_records_ocr_pages_and_off_leaves_scans_without_text(original, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.scan_of(original, folder / "scan.pdf", dpi=150)
    off = index_paths([folder], tmp_path / "off", ocr="off")
    assert [Path(p).name for p in off.no_text] == ["scan.pdf"] and off.ocr_pages == 0
    on = index_paths([folder], tmp_path / "on", ocr="auto")
    assert on.no_text == [] and on.ocr_pages == 1
    assert (tmp_path / "on" / "ocr-cache.sqlite").exists()
    with duckdb.connect(str(tmp_path / "on" / "index.duckdb"), read_only=True) as con:
        ocr, confidence, has_text = con.execute(
            "SELECT ocr, ocr_confidence, has_text FROM pages"
        ).fetchone()
        hits = con.execute(
            "SELECT count(*) FROM chunks WHERE text ILIKE '%river gauge%'"
        ).fetchone()
    assert ocr and has_text and confidence > 0.9 and hits[0] == 1


# --- the corpus scans ---------------------------------------------------------------------


def _one_page(corpus: Path, name: str, number: int, tmp_path: Path) -> Path:
    """A page of a corpus scan in a file of its own (in the test's temporary folder)."""
    out = tmp_path / f"{Path(name).stem}-p{number}.pdf"
    with pymupdf.open(corpus / name) as src, pymupdf.open() as doc:
        doc.insert_pdf(src, from_page=number - 1, to_page=number - 1)
        doc.save(out)
    return out


def test_corpus_scanned_table_is_read(corpus, pool):
    parsed = parse_pdf(corpus / "scanned/table-multi-row-column-cells.pdf", OcrRun(pool))
    text = parsed.pages[0].text
    for phrase in ("Results", "Accuracy", "Low Vision", "Dexterity", "Mobility", "1199 sec"):
        assert phrase in text
    assert parsed.pages[0].ocr_confidence > 0.95
    # The ruled grid (its head shaded) is one table, read row by row, its paths from the rules.
    assert "Low Vision 5 2 3" in text
    (table,) = parsed.tables
    assert (table.n_rows, table.n_cols, table.header_rows) == (6, 6, 2)
    assert _cell(table, ["Blind"], ["Results", "Accuracy"]) == "34.5%, n=1"
    assert _cell(table, ["Mobility"], ["Results", "Time to complete"]) == "1416 sec, n=3"
    assert _cell(table, ["Low Vision"], ["Results", "Accuracy"]) == "98.3% n=2 (97.7%, n=3)"
    assert _cell(table, ["Dexterity"], ["Ballots Completed"]) == "4"
    # The page is the table and nothing heads it: no title, not its first cell ('Disability'),
    # and no caption made of its rows. It prints no year: the file's, marked as such.
    assert parsed.meta.title is None and table.caption is None
    assert (parsed.meta.year, parsed.meta.year_from) == (2023, "file metadata")


def test_corpus_chinese_scan_is_read(corpus, pool, tmp_path):
    page = _one_page(corpus, "scanned/small_ocr_zh_scan.pdf", 1, tmp_path)
    parsed = parse_pdf(page, OcrRun(pool))
    text = parsed.pages[0].text
    han = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    assert han >= 200 and parsed.pages[0].ocr_confidence > 0.8


def test_corpus_scan_with_an_ocr_layer_keeps_it_unless_forced(corpus, pool, tmp_path):
    page = _one_page(corpus, "scanned/ZFN-A-054-0304-0272.pdf", 1, tmp_path)
    kept = parse_pdf(page, OcrRun(pool, mode="auto"))
    assert not kept.pages[0].ocr and kept.pages[0].has_text
    forced = parse_pdf(page, OcrRun(pool, mode="force"))
    assert forced.pages[0].ocr and "Naturforsch" in forced.pages[0].text.replace(" ", "")


def test_a_caption_layer_over_a_scan_is_kept_once_and_a_chart_is_not_ocred(
    original, pool, tmp_path
):
    scan = pdf_factory.scan_of(original, tmp_path / "scan.pdf", dpi=150)
    captioned = tmp_path / "captioned.pdf"
    with pymupdf.open(scan) as doc:
        doc[0].insert_text((72, 60), "Records office copy", fontsize=9)
        doc.save(captioned)
    parsed = parse_pdf(captioned, OcrRun(pool))
    assert parsed.pages[0].ocr
    assert parsed.pages[0].text.count("Records office copy") == 1
    assert _recall(parsed.pages[0].text, BODY) >= 0.95
    # An image of text on a fifth of a born-digital page (a chart in a report) is left as it is.
    report = tmp_path / "report.pdf"
    with pymupdf.open(original) as doc, pymupdf.open(scan) as image:
        pix = image[0].get_pixmap(dpi=72, clip=pymupdf.Rect(60, 60, 540, 230))
        doc[0].insert_image(pymupdf.Rect(60, 400, 540, 570), pixmap=pix)
        doc.save(report)
    with pymupdf.open(report) as doc:
        assert not needs_ocr(doc[0], "auto")
