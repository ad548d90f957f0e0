"""Where a scanned page's OCR time goes: CPU seconds a page per stage, in this one process.

    python bench/ocr_stages.py [--dpi 150] [--turn 0] [--skew 0] [--pages N]

The pages of bench/ocr_quality.py, scanned the same way, are read one by one by the engine (no
pool, no cache); CPU time (less sensitive to a loaded machine than wall time) is summed for the
detector, the line classifier, the recogniser and docsym's own steps around them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ocr_quality import CORPUS, PAGES  # noqa: E402
from docsym.indexer.ocr import engine  # noqa: E402
from docsym.indexer.ocr.pages import _render  # noqa: E402
from tests.pdf_factory import scan_of  # noqa: E402

OWN_STEPS = ("_crops", "_orientation", "_straighten", "_respace", "_ruled_lines")
spent: defaultdict[str, float] = defaultdict(float)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--turn", type=int, default=0)
    parser.add_argument("--skew", type=float, default=0.0)
    parser.add_argument("--pages", type=int, default=20)
    args = parser.parse_args()
    images = _scans(args.dpi, args.turn, args.skew)[: args.pages]
    _time_stages()
    started = time.process_time()
    for image in images:
        engine.read_image(image.gray, image.points_per_pixel)
    total = (time.process_time() - started) / len(images)
    print(f"{len(images)} pages at {args.dpi} dpi: {total:.2f} s of CPU a page")
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"  {name:14} {seconds / len(images):6.2f}")


def _scans(dpi: int, turn: int, skew: float) -> list:
    work = Path(tempfile.mkdtemp(prefix="docsym-ocr-stages-"))
    images = []
    for name, numbers in PAGES.items():
        scan = scan_of(
            CORPUS / name, work / Path(name).name, dpi=dpi, turn=turn, skew=skew, pages=numbers
        )
        with pymupdf.open(scan) as doc:
            images += [_render(page) for page in doc]
    return images


def _time_stages() -> None:
    """Wrap the engine's models and its own steps so each call's CPU time is counted."""
    stages = engine._engine()  # loaded here, outside the timing
    timed = engine._Stages(*(_timed(name, stage) for name, stage in stages._asdict().items()))
    engine._engine = lambda: timed
    for name in OWN_STEPS:
        setattr(engine, name, _timed(name, getattr(engine, name)))


def _timed(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - started

    return wrapper


if __name__ == "__main__":
    main()
