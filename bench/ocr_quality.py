"""OCR on synthetic scans of born-digital pages: accuracy, boxes, speed, memory, retrieval.

    python bench/ocr_quality.py [--retrieval | --retrieval-only] [--workers N] [--setting ROW]

Scans are made from ../shared/corpus PDFs (20 pages of 5 documents, text and tables) at 150 and
300 dpi, turned by 90 degrees, and skewed by 2 degrees. Each is parsed by docsym with OCR, and
each page's text is compared with the born-digital text of the same page read by the same layout
reader: character error rate (Levenshtein distance over the born-digital length, whitespace
runs folded) and word recall (share of the page's words, with repeats, that OCR found; a word is
a run of letters and digits, as the ISRI OCR evaluation tools count them, so a table of
contents' dot leaders are not words). Page CER depends on the order the layout reader gives both
texts; "line CER" does not: each OCR line is compared with the born-digital words whose centres
lie in its box, in order along the line, and born-digital words in no OCR line count as deleted
(not for skewed scans, whose lines are not boxes on the original page). Box agreement: the share
of OCR words whose box centre lies within 3 points of the same word on the born-digital page.
Speed is pages per second of OCR with N worker processes (default: one per core) and a cold
cache, and CPU seconds a page (the parse in this process and all of the OCR processes' time,
starts and model loads included: on a machine shared with other work, the steadier figure);
memory is the peak resident size of the parent and its workers.

With --retrieval, the questions of bench/qa/docsym_qa.jsonl whose documents have at most 40
pages are asked (hybrid search) over an index of 150-dpi scans of those documents and over one
of the documents themselves: recall@5 of both.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psutil
import pymupdf
from rapidfuzz.distance import Levenshtein

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.indexer.ocr.pages import OcrRun, ocr_document  # noqa: E402
from docsym.indexer.ocr.pool import OcrCache, OcrPool  # noqa: E402
from docsym.indexer.pdf.parser import open_pdf, parse_pdf  # noqa: E402
from tests.pdf_factory import scan_of  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
# 5 documents, 20 pages: running text, two-column text, tables, a table-heavy report.
PAGES = {
    "papers/2004.04906v3_dpr.pdf": [1, 4, 5, 6],
    "papers/2020.acl-main.207_specter.pdf": [2, 3, 6, 7],
    "papers/2203.00274v2_tableformer.pdf": [1, 6, 7, 8],
    "papers/2206.10883v3_multilexsum.pdf": [3, 5, 6, 7],
    "long_docs/redp5110_sampled.pdf": [2, 5, 9, 12],
}
SETTINGS = [  # name, dpi, turn, skew
    ("150 dpi", 150, 0, 0.0),
    ("300 dpi", 300, 0, 0.0),
    ("150 dpi, turned 90", 150, 90, 0.0),
    ("150 dpi, skewed 2", 150, 0, 2.0),
]
NEAR = 3.0  # points
WORD = re.compile(r"[^\W_]+")  # letters and digits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--retrieval", action="store_true")
    parser.add_argument(
        "--retrieval-only", action="store_true", help="skip the accuracy rows (slow: 80 pages)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--setting", action="append", choices=[row[0] for row in SETTINGS], help="only these rows"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsym-ocr-bench-"))
    truth = {name: _page_texts(parse_pdf(CORPUS / name), pages) for name, pages in PAGES.items()}
    print(
        f"{sum(map(len, PAGES.values()))} pages of {len(PAGES)} documents, "
        f"{args.workers} OCR workers\n"
    )
    print(
        f"{'setting':22} {'CER':>6} {'line CER':>8} {'word recall':>11} {'boxes<=3pt':>10} "
        f"{'pages/s':>8} {'CPU s/pg':>9} {'peak MB':>8}"
    )
    rows = [row for row in SETTINGS if not args.setting or row[0] in args.setting]
    for name, dpi, turn, skew in [] if args.retrieval_only else rows:
        _quality_row(name, dpi, turn, skew, truth, work, args.workers)
    if args.retrieval or args.retrieval_only:
        _retrieval(work, args.workers)


def _quality_row(name, dpi, turn, skew, truth, work: Path, workers: int) -> None:
    chars = errors = found = words = near = matched = line_errors = line_chars = 0
    seconds = cpu = 0.0
    pages = 0
    children_before = _children_cpu()
    with _PeakMemory() as memory:
        # A cold cache: timing reads every page; the box check below reads them from it.
        pool = OcrPool(workers, OcrCache(work / f"cache-{dpi}-{turn}-{skew}.sqlite"))
        for doc_name, numbers in PAGES.items():
            scan = scan_of(
                CORPUS / doc_name,
                work / f"{Path(doc_name).stem}-{dpi}-{turn}-{skew}.pdf",
                dpi=dpi,
                turn=turn,
                skew=skew,
                pages=numbers,
            )
            started, started_cpu = time.perf_counter(), time.process_time()
            parsed = parse_pdf(scan, OcrRun(pool))
            seconds += time.perf_counter() - started
            cpu += time.process_time() - started_cpu
            pages += len(numbers)
            for page, number in zip(parsed.pages, numbers, strict=True):
                want, got = truth[doc_name][number], _fold(page.text)
                chars += len(want)
                errors += Levenshtein.distance(got, want)
                expected = _words(want)
                words += sum(expected.values())
                found += sum((expected & _words(got)).values())
            if not skew:
                agreement = _positional(CORPUS / doc_name, numbers, scan, turn, pool)
                near += agreement.near
                matched += agreement.matched
                line_errors += agreement.line_errors
                line_chars += agreement.line_chars
        pool.close()
    cpu += _children_cpu() - children_before  # the OCR processes, ended and reaped by now
    boxes = f"{near / matched:.3f}" if matched else "-"
    line_cer = f"{line_errors / line_chars:.3f}" if line_chars else "-"
    print(
        f"{name:22} {errors / chars:6.3f} {line_cer:>8} {found / words:11.3f} {boxes:>10} "
        f"{pages / seconds:8.2f} {cpu / pages:9.2f} {memory.peak_mb:8.0f}",
        flush=True,
    )


def _children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


def _page_texts(parsed, numbers: list[int]) -> dict[int, str]:
    return {n: _fold(parsed.pages[n - 1].text) for n in numbers}


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _words(text: str) -> Counter:
    return Counter(word.lower() for word in WORD.findall(text))


@dataclass
class _Agreement:
    near: int = 0  # OCR words within NEAR points of the same born-digital word
    matched: int = 0  # OCR words that have a born-digital namesake on the page
    line_errors: int = 0  # edits from OCR lines to the born-digital words in their boxes
    line_chars: int = 0


def _positional(source: Path, numbers, scan: Path, turn: int, pool) -> _Agreement:
    """Box agreement and line CER of a scan's pages (read from the OCR cache by now)."""
    original = pymupdf.open(source)
    doc = open_pdf(scan)
    outcome = ocr_document(doc, OcrRun(pool))
    result = _Agreement()
    for index, number in enumerate(numbers):
        page = doc[index]
        # OCR text sits on the page as turned to read it; to_shown maps to the scan as shown.
        to_shown = outcome.pages[index + 1].to_shown if index + 1 in outcome.pages else None
        to_layer = ~to_shown if to_shown else pymupdf.Identity
        height = original[number - 1].rect.height
        truth = []  # born-digital words: text and centre in the OCR text layer's frame
        for x0, y0, x1, y1, word, *_ in original[number - 1].get_text("words"):
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            if turn == 90:  # the scan shows the page turned clockwise
                cx, cy = height - cy, cx
            truth.append((word, pymupdf.Point(cx, cy) * to_layer))
        _score_words(page, truth, result)
        _score_lines(page, truth, result)
    doc.close()
    original.close()
    return result


def _score_words(page: pymupdf.Page, truth, result: _Agreement) -> None:
    at: dict[str, list[pymupdf.Point]] = {}
    for word, centre in truth:
        at.setdefault(word, []).append(centre)
    for x0, y0, x1, y1, word, *_ in page.get_text("words"):
        if word in at:
            centre = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2)
            result.matched += 1
            result.near += min(abs(centre - other) for other in at[word]) <= NEAR


def _score_lines(page: pymupdf.Page, truth, result: _Agreement) -> None:
    taken = [False] * len(truth)
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            box = pymupdf.Rect(line["bbox"])
            text = _fold(" ".join(span["text"] for span in line["spans"]))
            inside = [i for i, (_, centre) in enumerate(truth) if not taken[i] and centre in box]
            for i in inside:
                taken[i] = True
            want = " ".join(truth[i][0] for i in sorted(inside, key=lambda i: truth[i][1].x))
            result.line_errors += Levenshtein.distance(text, want)
            result.line_chars += len(want)
    for (word, _), used in zip(truth, taken, strict=True):
        if not used:
            result.line_errors += len(word) + 1
            result.line_chars += len(word) + 1


class _PeakMemory:
    """Samples the resident size of this process and its children every 50 ms."""

    def __enter__(self):
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.05):
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):  # a worker that just ended
                    total += proc.memory_info().rss
            self.peak_mb = max(self.peak_mb, total / 2**20)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _retrieval(work: Path, workers: int) -> None:
    from docsym.indexer.pipeline import index_paths
    from docsym.storage.backends import open_store
    from docsym.tools.evaluate import evaluate, load_qa

    items = [
        item
        for item in load_qa(REPO / "bench" / "qa" / "docsym_qa.jsonl")
        if pymupdf.open(CORPUS / item.file).page_count <= 40
    ]
    files = sorted({item.file for item in items})
    scans = work / "scans"
    for name in files:
        (scans / name).parent.mkdir(parents=True, exist_ok=True)
        scan_of(CORPUS / name, scans / name, dpi=150)
    os.environ["DOCSYM_OCR_WORKERS"] = str(workers)
    print(
        f"\nretrieval: {len(items)} questions over {len(files)} documents "
        f"({sum(pymupdf.open(CORPUS / f).page_count for f in files)} pages)"
    )
    for label, root in (("born-digital", CORPUS), ("150-dpi scans", scans)):
        index = work / f"index-{label}"
        started = time.perf_counter()
        report = index_paths([root / f for f in files], index)
        took = time.perf_counter() - started
        store = open_store(index)
        score = evaluate(store, items, ["hybrid"], depth=10)[0]
        store.close()
        print(
            f"{label:14} recall@5 {score.recall[5]:.3f}  recall@1 {score.recall[1]:.3f}  "
            f"MRR {score.mrr:.3f}  (indexed in {took:.0f} s, {report.ocr_pages} pages by OCR)",
            flush=True,
        )


if __name__ == "__main__":
    main()
