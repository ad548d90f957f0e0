"""view_page under its limits: pages costly to draw are drawn in worker processes, stopped at the
time limit, drawn at a lower dpi or refused at the memory limit, each with one clear message,
while the server process holds none of their pixels and its other tools keep answering.

The pages come from ``tests/bad_files.py``'s ``costly_pages_pdf`` (a 20,000 x 20,000 px image
among them, 1.2 MB on disk), indexed by the real indexer. The measured version, against a
running server, is ``bench/view_page_limits.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pymupdf
import pytest

from docsym.storage.backends import open_store
from docsym.tools.errors import ToolError
from docsym.tools.page_render import WORKERS
from docsym.tools.pages import PageImage, view_page
from docsym.tools.search import hybrid_search
from tests.bad_files import COSTLY_PAGES, HUGE_IMAGE_SIDE, costly_pages_pdf
from tests.conftest import REPO

TOP_OF_THE_IMAGE = [72, 100, 540, 200]
HUGE, PLAIN, GROUPS, JPX = (
    COSTLY_PAGES[k] for k in ("huge_image", "plain", "nested_groups", "jpeg2000")
)


@pytest.fixture(scope="module")
def costly(tmp_path_factory: pytest.TempPathFactory):
    """An index over the costly pages; (store, doc_id, index directory)."""
    from docsym.indexer.pipeline import index_paths

    docs = tmp_path_factory.mktemp("costly-docs")
    costly_pages_pdf(docs / "costly.pdf")
    assert (docs / "costly.pdf").stat().st_size < 2 * 2**20
    index_dir = tmp_path_factory.mktemp("costly-index")
    report = index_paths([docs], index_dir, ocr="off")
    assert report.ok and len(report.added) == 1
    store = open_store(index_dir)
    (doc_id,) = store.sql().execute("SELECT doc_id FROM documents").fetchone()
    yield store, doc_id, index_dir
    store.close()
    WORKERS.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _drawn(image: PageImage) -> pymupdf.Pixmap:
    pix = pymupdf.Pixmap(image.png)
    assert (pix.width, pix.height) == (image.width_px, image.height_px)
    return pix


def test_a_render_past_the_time_limit_is_stopped_and_the_next_call_works(costly, settings):
    store, doc_id, _ = costly
    settings(render_seconds=0.25, render_workers=1)
    _drawn(view_page(store, doc_id, PLAIN, dpi=72))  # a worker is ready
    (worker,) = WORKERS.pool().worker_pids()
    with pytest.raises(ToolError) as stopped:
        view_page(store, doc_id, HUGE, dpi=36)  # 1.2 GB of pixels to inflate
    message = str(stopped.value)
    assert "time limit (0.25 s, DOCSYM_RENDER_SECONDS)" in message
    assert f"page {HUGE} of document {doc_id}" in message
    assert f"{HUGE_IMAGE_SIDE:,} x {HUGE_IMAGE_SIDE:,} px image at [72.0, 100.0" in message
    assert "bounding_box" in message and "Traceback" not in message
    assert not _alive(worker)  # killed, not left running
    image = view_page(store, doc_id, PLAIN, dpi=72)  # the next call gets a fresh worker
    assert image.page_number == PLAIN and _drawn(image).width == 595


def test_a_page_needing_more_memory_is_drawn_at_a_lower_dpi(costly, settings):
    store, doc_id, _ = costly
    settings(render_memory_mb=64)
    image = view_page(store, doc_id, GROUPS, dpi=150)
    assert image.dpi < 150
    assert f"dpi lowered from 150 to {image.dpi}" in image.note
    assert "render memory limit (DOCSYM_RENDER_MEMORY_MB)" in image.note
    assert _drawn(image).width < 595 * 150 / 72


def test_an_image_too_large_to_decode_within_the_memory_limit_is_refused(costly, settings):
    store, doc_id, _ = costly
    settings(render_memory_mb=64)
    with pytest.raises(ToolError) as refused:
        view_page(store, doc_id, JPX)  # a JPEG 2000 image is decoded at full size
    message = str(refused.value)
    assert "memory limit (64 MB, DOCSYM_RENDER_MEMORY_MB), not even at 36 dpi" in message
    assert "3,000 x 3,000 px image at [72.0, 100.0, 540.0, 568.0] (JPXDecode)" in message
    assert "leaves the image out" in message and "Traceback" not in message
    # Leaving the image out, as the message says, draws the rest of the page.
    top = view_page(store, doc_id, JPX, bounding_box=[0, 0, 595, 90], dpi=72)
    assert (top.width_px, top.height_px) == (595, 90)


def test_highlights_still_draw_in_the_worker(costly):
    store, doc_id, _ = costly
    box = [72, 60, 300, 76]  # the page's line of text
    plain = _drawn(view_page(store, doc_id, PLAIN, bounding_box=box, dpi=72))
    marked = _drawn(view_page(store, doc_id, PLAIN, bounding_box=box, dpi=72, highlights=[box]))
    inside = [(x, y) for x in range(3, plain.width - 3) for y in range(3, plain.height - 3)]
    changed = [p for p in inside if plain.pixel(*p) != marked.pixel(*p)]
    assert len(changed) > 0.5 * len(inside)
    assert all(r > g + 40 and r > b + 40 for r, g, b in (marked.pixel(*p) for p in changed))


def test_other_tools_answer_while_costly_pages_are_drawn(costly, settings):
    """Three calls on the huge-image page at once, two workers: each is drawn or told the
    server is busy, and every search meanwhile finds its page. (They draw the image's top
    fifth, which is inflated alone, so that the test does not take minutes on a busy machine.)"""
    store, doc_id, _ = costly
    settings(render_seconds=300, render_workers=2, render_wait_seconds=0)
    outcomes: list[str] = []

    def draw() -> None:
        try:
            image = view_page(store, doc_id, HUGE, bounding_box=TOP_OF_THE_IMAGE, dpi=36)
            outcomes.append(f"drawn {image.page_number}")
        except ToolError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=draw) for _ in range(3)]
    for thread in threads:
        thread.start()
    searched = []
    while any(t.is_alive() for t in threads) or len(searched) < 3:
        hit = hybrid_search(store, "platypus page plain text", limit=1).hits[0]
        searched.append((hit.doc_id, hit.page_number))
        time.sleep(0.1)  # a client's pace, not a timing: the searches leave the renders a core
    for thread in threads:
        thread.join()
    assert set(searched) == {(doc_id, PLAIN)}
    assert len(outcomes) == 3
    assert all(o == f"drawn {HUGE}" or o.startswith("busy: 2 pages") for o in outcomes), outcomes


SERVER_SIDE = """
import json, resource, sys
from pathlib import Path
from docsym.storage.backends import open_store
from docsym.tools.pages import view_page

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

store = open_store(Path(sys.argv[1]))
doc_id, huge, plain, out = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
view_page(store, doc_id, plain, dpi=72)  # everything the server loads, loaded
before = rss_mb()
out.write_bytes(view_page(store, doc_id, huge, dpi=36).png)
print(json.dumps({"before": before, "after": rss_mb(), "mupdf": "pymupdf" in sys.modules}))
"""


def test_the_calling_process_holds_none_of_the_pages_pixels(costly, tmp_path):
    """A process serving view_page (a fresh one: this one has PyMuPDF loaded for the tests)
    never loads MuPDF, and drawing the huge image, when the time limit allows, leaves it no
    larger than the PNG it sends."""
    _, doc_id, index_dir = costly
    env = {**os.environ, "DOCSYM_RENDER_SECONDS": "300"}
    png = tmp_path / "huge.png"
    args = [str(index_dir), doc_id, str(HUGE), str(PLAIN), str(png)]
    done = subprocess.run(
        [sys.executable, "-c", SERVER_SIDE, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO.parent,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["mupdf"] is False
    # 1.2 GB of pixels decoded; the process grew by less than 50 MB (the PNG is 3 kB)
    assert seen["after"] - seen["before"] < 50, seen
    pix = pymupdf.Pixmap(png.read_bytes())
    assert pix.pixel(pix.width // 2, pix.height // 2) == (200, 200, 200)  # the image's gray
