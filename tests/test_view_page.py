"""view_page: page images from the indexed PDF, bounded, checked against the indexed bytes."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pymupdf
import pytest

from docsym.storage.backends import open_store
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.pages import BBOX_HELP, MAX_PIXELS, view_page
from tests.pdf_factory import scanned_pdf, text_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "docsym" / "samples"
REPORT = "hybrid-retrieval-report.pdf"
TABLE_1_BBOX = [73.0, 510.95, 522.0, 641.95]
CELL_091_BBOX = [208.88, 626.12, 224.62, 638.13]


@pytest.fixture(scope="module")
def own_store(tmp_path_factory: pytest.TempPathFactory):
    """An index over files this module may move or change, plus one row claiming a docx file."""
    from docsym.indexer.pipeline import index_paths

    docs = tmp_path_factory.mktemp("view-page-docs")
    text_pdf(docs / "moved.pdf", marker="moved")
    text_pdf(docs / "changed.pdf", marker="changed")
    scanned_pdf(docs / "scan.pdf")
    index_dir = tmp_path_factory.mktemp("view-page-index")
    index_paths([docs], index_dir)
    # The indexer only reads PDFs today; fake a row of another format to test the refusal.
    with duckdb.connect(str(index_dir / "index.duckdb")) as con:
        con.execute(
            "INSERT INTO documents SELECT * REPLACE ('docx000000000001' AS doc_id, "
            "'docx' AS format, 0 AS page_count) FROM documents WHERE file_name = 'moved.pdf'"
        )
    store = open_store(index_dir)
    yield store, docs
    store.close()


def doc_id(store: Store, file_name: str) -> str:
    sql = "SELECT doc_id FROM documents WHERE file_name = ? AND format = 'pdf'"
    return store.sql().execute(sql, [file_name]).fetchone()[0]


def decoded(png: bytes) -> pymupdf.Pixmap:
    pix = pymupdf.Pixmap(png)
    assert pix.n >= 3
    return pix


def test_full_page_at_72_dpi_is_page_size_in_points(sample_store: Store):
    report = doc_id(sample_store, REPORT)
    width, height = (
        sample_store.sql()
        .execute("SELECT width, height FROM pages WHERE doc_id = ? AND page_number = 3", [report])
        .fetchone()
    )
    image = view_page(sample_store, report, 3, dpi=72)
    pix = decoded(image.png)
    assert (pix.width, pix.height) == (round(width), round(height))
    assert (image.width_px, image.height_px, image.dpi) == (pix.width, pix.height, 72)
    assert image.bbox == [0.0, 0.0, round(width, 2), round(height, 2)]
    assert image.note is None
    assert "png" not in image.model_dump_json()


def test_bbox_crop_at_144_dpi_is_twice_the_bbox(sample_store: Store):
    report = doc_id(sample_store, REPORT)
    image = view_page(sample_store, report, 3, bounding_box=[100, 200, 300, 260], dpi=144)
    pix = decoded(image.png)
    assert (pix.width, pix.height) == (400, 120)
    assert image.bbox == [100, 200, 300, 260]
    assert image.note is None


def test_table_crop_shows_ink(sample_store: Store):
    report = doc_id(sample_store, REPORT)
    pix = decoded(view_page(sample_store, report, 3, bounding_box=TABLE_1_BBOX, dpi=72).png)
    dark = sum(1 for i in range(0, len(pix.samples), pix.n) if pix.samples[i] < 100)
    assert dark > 500, "the Table 1 region of page 3 should contain printed text"


def test_bbox_is_clipped_to_the_page(sample_store: Store):
    report = doc_id(sample_store, REPORT)
    image = view_page(sample_store, report, 3, bounding_box=[-50, 800, 100, 2000], dpi=72)
    assert image.bbox == [0, 800, 100, 842]
    assert (image.width_px, image.height_px) == (100, 42)
    assert "clipped to the page" in image.note


def test_highlights_change_pixels_inside_the_box_only(sample_store: Store):
    report = doc_id(sample_store, REPORT)
    args = dict(bounding_box=TABLE_1_BBOX, dpi=144)
    plain = decoded(view_page(sample_store, report, 3, **args).png)
    marked = decoded(view_page(sample_store, report, 3, highlights=[CELL_091_BBOX], **args).png)
    assert (plain.width, plain.height) == (marked.width, marked.height)
    scale = 144 / 72
    x0, y0, x1, y1 = (
        int((v - origin) * scale)
        for v, origin in zip(CELL_091_BBOX, TABLE_1_BBOX[:2] * 2, strict=True)
    )
    # Stay 3 px inside the box, clear of the stroke, and compare the paper under it.
    inside = [(x, y) for x in range(x0 + 3, x1 - 3) for y in range(y0 + 3, y1 - 3)]
    changed = [p for p in inside if plain.pixel(*p) != marked.pixel(*p)]
    assert len(changed) > 0.5 * len(inside), "the highlight should tint the box"
    reddish = [p for p in changed if _is_reddish(marked.pixel(*p))]
    assert len(reddish) > 0.5 * len(changed)
    outside = [(x, y) for x in range(0, 200) for y in range(0, 40)]
    assert all(plain.pixel(*p) == marked.pixel(*p) for p in outside), "the rest is as printed"


def _is_reddish(rgb: tuple[int, ...]) -> bool:
    red, green, blue = rgb[:3]
    return red > green + 40 and red > blue + 40


def test_pixel_cap_lowers_dpi(sample_store: Store):
    report = doc_id(sample_store, REPORT)
    image = view_page(sample_store, report, 1, dpi=300)
    pix = decoded(image.png)
    assert image.dpi < 300
    assert pix.width * pix.height <= MAX_PIXELS
    assert (pix.width, pix.height) == (image.width_px, image.height_px)
    assert f"dpi lowered from 300 to {image.dpi}" in image.note


def test_scanned_pages_render(own_store):
    store, _ = own_store
    image = view_page(store, doc_id(store, "scan.pdf"), 1, bounding_box=[72, 72, 472, 272])
    pix = decoded(image.png)
    assert pix.pixel(pix.width // 2, pix.height // 2) == (200, 200, 200)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"page_number": 0}, "has pages 1..6"),
        ({"page_number": 7}, "has pages 1..6"),
        ({"dpi": 35}, "between 36 and 300"),
        ({"dpi": 301}, "between 36 and 300"),
        ({"bounding_box": [1, 2, 3]}, "must be 4 numbers"),
        ({"bounding_box": [10, 10, 5, 20]}, "x0 < x1 and y0 < y1"),
        ({"bounding_box": [0, 0, float("inf"), 10]}, "finite"),
        ({"bounding_box": [0, 0, "a", 10]}, "numbers only"),
        ({"bounding_box": [700, 0, 900, 100]}, "outside the page"),
        ({"highlights": [[5, 5, 5, 9]]}, "highlights[0] needs x0 < x1"),
    ],
)
def test_bad_calls_say_how_to_fix_them(sample_store: Store, kwargs: dict, message: str):
    call = {"doc_id": doc_id(sample_store, REPORT), "page_number": 3, **kwargs}
    with pytest.raises(ToolError) as refused:
        view_page(sample_store, **call)
    assert message in str(refused.value)


def test_bbox_errors_state_the_convention(sample_store: Store):
    with pytest.raises(ToolError) as refused:
        view_page(sample_store, doc_id(sample_store, REPORT), 3, bounding_box=[5, 5, 1, 1])
    assert BBOX_HELP in str(refused.value)
    assert "top-left" in BBOX_HELP


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "/etc/passwd", "nope", "' OR 1=1 --"])
def test_unknown_and_path_like_ids_are_refused(sample_store: Store, bad_id: str):
    with pytest.raises(NotFoundError) as refused:
        view_page(sample_store, bad_id, 1)
    assert "list_documents" in str(refused.value)


def test_non_pdf_documents_have_no_page_images(own_store):
    store, _ = own_store
    with pytest.raises(ToolError) as refused:
        view_page(store, "docx000000000001", 1)
    assert "docx file, which has no page images" in str(refused.value)


def test_moved_file_asks_for_reindexing(own_store, tmp_path: Path):
    store, docs = own_store
    moved = doc_id(store, "moved.pdf")
    shutil.move(docs / "moved.pdf", tmp_path / "elsewhere.pdf")
    with pytest.raises(ToolError) as refused:
        view_page(store, moved, 1)
    assert "moved or deleted" in str(refused.value)
    assert "re-run docsym index" in str(refused.value)


def test_changed_file_asks_for_reindexing(own_store):
    store, docs = own_store
    changed = doc_id(store, "changed.pdf")
    assert view_page(store, changed, 2, dpi=36).page_number == 2
    text_pdf(docs / "changed.pdf", marker="edited")
    with pytest.raises(ToolError) as refused:
        view_page(store, changed, 1)
    assert "changed since it was indexed" in str(refused.value)
    assert "re-run docsym index" in str(refused.value)
