"""The browser view (``/view``): a real ``docsym serve --transport http`` with a token, over a
two-page synthetic PDF, opened in a real headless Chromium at the URL the server prints.

What the screenshots must show: the page image, each cited box drawn in the view's colour where
its bbox says, the other hit's page once it is chosen; and no request may leave the server's
origin. The screenshots are kept under test-artifacts/ (git ignores it) for a person to look
at; a failed check names the one it read."""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2
import pymupdf
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO
from tests.test_mcp_http import TOKEN, RunningServer, served_over_http

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)"
)

QUERY = "lighthouse"
# Each page: (x, baseline y, text, font size). One sentence about the lighthouse a page, on
# different lines, so each page has one hit and the two hits' boxes are far apart; page 1 is
# blank where page 2's lighthouse sentence stands.
HARBOUR_PAGES = (
    (
        (72, 72, "Harbour notes", 16),
        (72, 150, "Quarterly report of the harbour authority.", 12),
        (72, 210, "The lighthouse keeper logs the tide every morning.", 12),
        (72, 270, "Gulls nest on the northern cliffs in spring.", 12),
    ),
    (
        (72, 72, "Harbour notes", 16),
        (72, 150, "Fishing boats unload their catch before the market opens.", 12),
        (72, 210, "A ferry crosses to the island twice a day.", 12),
        (200, 460, "The lighthouse lamp is visible from twenty miles at night.", 12),
    ),
)
ARTIFACTS = REPO / "test-artifacts" / "browser-view"
MARK = (230, 0, 126)  # the view's box colour, rgb(230, 0, 126)
EDGE_SLACK_PX = 5  # a box edge may be this far from where its bbox puts it
VIEWPORT = {"width": 1280, "height": 1600}
WAIT_MS = 60_000


def harbour_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    for lines in HARBOUR_PAGES:
        page = doc.new_page()
        for x, y, text, size in lines:
            page.insert_text((x, y), text, fontsize=size)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def harbour_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from docsym.indexer.pipeline import index_paths

    docs = tmp_path_factory.mktemp("harbour-docs")
    harbour_pdf(docs / "harbour.pdf")
    index_dir = tmp_path_factory.mktemp("harbour-index")
    assert index_paths([docs], index_dir).ok
    return index_dir


@pytest.fixture(scope="module")
def server(
    harbour_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    with served_over_http(harbour_index, tmp_path_factory.mktemp("view-server-logs")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Path:
    folder = ARTIFACTS / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Traffic:
    """Every request the page made, and those that went anywhere but ``origin`` (aborted)."""

    origin: str
    requests: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    policy_violations: list[str] = field(default_factory=list)

    def is_own(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        return f"{parts.scheme}://{parts.netloc}" == self.origin


def open_page(browser: sync_api.Browser, origin: str) -> tuple[sync_api.Page, Traffic]:
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    traffic = Traffic(origin)

    def guard(route: sync_api.Route) -> None:
        if traffic.is_own(route.request.url):
            route.continue_()
        else:
            traffic.foreign.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("request", lambda request: traffic.requests.append(request.url))
    page.on(
        "console",
        lambda message: (
            traffic.policy_violations.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    return page, traffic


def printed_view_url(server: RunningServer) -> str:
    printed = re.search(r"docsym view at (\S+)", server.stderr.read_text())
    assert printed, server.stderr.read_text()
    return printed.group(1)


def search_results(server: RunningServer) -> tuple[list[dict], dict[int, dict]]:
    """What the view is shown, asked by an MCP client of its own: the hits for QUERY and, for
    each page they are on, page_image's size of it (width_pt, height_pt)."""

    async def scenario() -> tuple[list[dict], dict[int, dict]]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            found = await client.call_tool("hybrid_search", {"query": QUERY, "limit": 10})
            hits = found.structured_content["hits"]
            sizes = {}
            for number in {hit["page_number"] for hit in hits}:
                arguments = {"doc_id": hits[0]["doc_id"], "page_number": number}
                shown = await client.call_tool("page_image", arguments)
                assert not shown.is_error, shown.content
                sizes[number] = shown.structured_content
            return hits, sizes

    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(anyio.run, scenario).result()


def app_frame(page: sync_api.Page) -> sync_api.Frame:
    frame = page.locator("#app-frame").element_handle().content_frame()
    assert frame is not None
    return frame


def wait_for_page(frame: sync_api.Frame, number: int, ids: list[str]) -> None:
    """Until page ``number`` is shown, its image loaded and exactly the boxes of ``ids`` drawn."""
    frame.wait_for_function(
        """([number, ids]) => {
          const image = document.querySelector("#page-image");
          const label = document.querySelector("#page-label").textContent;
          const drawn = [...document.querySelectorAll("div.box")].map((b) => b.dataset.id);
          return label.startsWith(`page ${number} `) && image.complete && image.naturalWidth > 0
            && drawn.length === ids.length && ids.every((id) => drawn.includes(id));
        }""",
        arg=[number, ids],
        timeout=WAIT_MS,
    )


def screenshot(page: sync_api.Page, path: Path):
    from PIL import Image

    page.screenshot(path=path)
    return Image.open(path).convert("RGB")


def is_mark(pixel: tuple[int, int, int]) -> bool:
    return all(
        abs(have - want) <= tolerance
        for have, want, tolerance in zip(pixel, MARK, (40, 50, 50), strict=True)
    )


def is_ink(pixel: tuple[int, int, int]) -> bool:
    return sum(pixel) < 3 * 110


def to_screen(bbox: list[float], image: dict, size: dict) -> tuple[float, float, float, float]:
    """A bbox in points, where it lands on the screenshot: scaled as the image is shown."""
    sx, sy = image["width"] / size["width_pt"], image["height"] / size["height_pt"]
    x0, y0, x1, y1 = bbox
    return image["x"] + x0 * sx, image["y"] + y0 * sy, image["x"] + x1 * sx, image["y"] + y1 * sy


def assert_box_drawn(shot, rect: tuple[float, float, float, float], where: Path) -> None:
    """The mark colour along each edge of ``rect``, within EDGE_SLACK_PX of it."""
    x0, y0, x1, y1 = rect
    missing = []
    for step in range(1, 10):
        x = round(x0 + (x1 - x0) * step / 10)
        y = round(y0 + (y1 - y0) * step / 10)
        probes = {
            "top": [(x, round(y0) + d) for d in range(-EDGE_SLACK_PX, EDGE_SLACK_PX + 1)],
            "bottom": [(x, round(y1) + d) for d in range(-EDGE_SLACK_PX, EDGE_SLACK_PX + 1)],
            "left": [(round(x0) + d, y) for d in range(-EDGE_SLACK_PX, EDGE_SLACK_PX + 1)],
            "right": [(round(x1) + d, y) for d in range(-EDGE_SLACK_PX, EDGE_SLACK_PX + 1)],
        }
        for edge, points in probes.items():
            if not any(is_mark(shot.getpixel(point)) for point in points):
                missing.append((edge, points[EDGE_SLACK_PX]))
    assert not missing, f"no box edge near {missing} (expected box {rect}); see {where}"


def assert_marks_only_at(shot, image: dict, rects: list, where: Path) -> None:
    """No mark colour on the page image farther than the slack from every expected box."""
    slack = EDGE_SLACK_PX + 1
    strays = []
    for y in range(round(image["y"]), round(image["y"] + image["height"]), 2):
        for x in range(round(image["x"]), round(image["x"] + image["width"]), 2):
            near = any(
                r[0] - slack <= x <= r[2] + slack and r[1] - slack <= y <= r[3] + slack
                for r in rects
            )
            if not near and is_mark(shot.getpixel((x, y))):
                strays.append((x, y))
    assert not strays, f"{len(strays)} mark pixels away from the boxes, e.g. {strays[:5]}; {where}"


def assert_text_shown(shot, rect: tuple[float, float, float, float], where: Path) -> None:
    """The page image carries text inside the box (the cited sentence, drawn there)."""
    x0, y0, x1, y1 = (round(v) for v in rect)
    inked = sum(
        is_ink(shot.getpixel((x, y))) for y in range(y0 + 4, y1 - 3) for x in range(x0 + 4, x1 - 3)
    )
    assert inked > 40, f"no text inside {rect} on the page image; see {where}"


def wait_for_frame_to_hold(page: sync_api.Page, image: dict) -> None:
    """Until the app's frame has grown to show the whole page image: the host sizes the frame
    when the app reports its size, after the app has drawn (a screenshot taken between the two
    shows the frame at its first height, the image cut off)."""
    page.wait_for_function(
        """(bottom) => {
          const frame = document.querySelector("#app-frame");
          return frame !== null && frame.getBoundingClientRect().bottom >= bottom;
        }""",
        arg=image["y"] + image["height"],
        timeout=WAIT_MS,
    )
    # Then two frames of the page, so what the screenshot shows is painted, not only laid out.
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def check_page_shown(page, frame, hits, sizes, number: int, path: Path) -> None:
    on_page = [hit for hit in hits if hit["page_number"] == number]
    wait_for_page(frame, number, [cited for hit in on_page for cited in hit["cited"]])
    image = frame.locator("#page-image").bounding_box()
    assert image and image["width"] > 200, image
    wait_for_frame_to_hold(page, image)
    shot = screenshot(page, path)
    rects = [to_screen(hit["bbox"], image, sizes[number]) for hit in on_page]
    for rect in rects:
        assert_box_drawn(shot, rect, path)
        assert_text_shown(shot, rect, path)
    assert_marks_only_at(shot, image, rects, path)


def test_search_shows_page_image_with_cited_boxes(
    browser: sync_api.Browser, server: RunningServer, shots: Path
) -> None:
    hits, sizes = search_results(server)
    assert [hit["page_number"] for hit in hits[:2]] == [1, 2], hits
    assert all(hit["bbox"] and hit["cited"] for hit in hits), hits
    url = printed_view_url(server)
    origin = f"http://127.0.0.1:{server.port}"
    assert url == f"{origin}/view#token={TOKEN}"
    page, traffic = open_page(browser, origin)
    page.goto(url)
    assert "token" not in page.url  # taken out of the address bar (and history)

    page.fill("#query", QUERY)
    page.click("button[type=submit]")
    frame = app_frame(page)
    frame.wait_for_selector("li.hit", timeout=WAIT_MS)
    assert frame.locator("li.hit").count() == len(hits)
    check_page_shown(page, frame, hits, sizes, 1, shots / "first-hit.png")
    assert "selected" in (frame.locator("li.hit").nth(0).get_attribute("class") or "")

    frame.locator("li.hit").nth(1).click()
    check_page_shown(page, frame, hits, sizes, 2, shots / "second-hit.png")
    assert "selected" in (frame.locator("li.hit").nth(1).get_attribute("class") or "")

    assert traffic.requests and not traffic.foreign, traffic.foreign
    assert all(traffic.is_own(url) for url in traffic.requests), traffic.requests
    assert not traffic.policy_violations, traffic.policy_violations
    page.context.close()


def test_without_the_token_the_page_says_401(
    browser: sync_api.Browser, server: RunningServer
) -> None:
    origin = f"http://127.0.0.1:{server.port}"
    page, traffic = open_page(browser, origin)
    statuses = []
    page.on("response", lambda response: statuses.append((response.url, response.status)))
    page.goto(f"{origin}/view")
    page.fill("#query", QUERY)
    page.click("button[type=submit]")
    page.wait_for_selector("#status.error", timeout=WAIT_MS)
    assert "401" in page.text_content("#status")
    assert page.is_visible("#token")  # where the token can be typed
    assert (f"{origin}/mcp", 401) in statuses
    assert page.is_hidden("#app-frame")
    # Typed in, it works.
    page.fill("#token", TOKEN)
    page.click("button[type=submit]")
    app_frame(page).wait_for_selector("li.hit", timeout=WAIT_MS)
    assert not traffic.foreign
    page.context.close()


def _outward_address() -> str | None:
    """An address of this machine other than loopback, or None. (A UDP socket's connect sends
    nothing: it only picks the interface a route would use.)"""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_served_on_all_interfaces_with_allowed_origin(
    browser: sync_api.Browser, harbour_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Bound to 0.0.0.0 and reached by another name: --allow-origin admits that origin, and the
    view works from it as from loopback."""
    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    logs = tmp_path_factory.mktemp("view-wide-logs")
    with socket.socket() as probe:  # the port is chosen here, as the origin must name it
        probe.bind(("0.0.0.0", 0))
        port = probe.getsockname()[1]
    origin = f"http://{address}:{port}"
    options = ["--host", "0.0.0.0", "--allow-origin", origin]
    with served_over_http(harbour_index, logs, options=options, port=port) as running:
        page, traffic = open_page(browser, origin)
        page.goto(f"{origin}/view#token={TOKEN}")
        page.fill("#query", QUERY)
        page.click("button[type=submit]")
        app_frame(page).wait_for_selector("li.hit", timeout=WAIT_MS)
        assert not traffic.foreign and "127.0.0.1" not in " ".join(traffic.requests)
        page.context.close()
        assert f"http://127.0.0.1:{running.port}/view#token=" in running.stderr.read_text()
