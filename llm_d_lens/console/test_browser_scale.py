"""The console in Chromium as a demo visitor and a phone sees it: no failure box in the demo, nothing wider than 390 px.

Debian's Chromium driven by Playwright against a real ``lens serve --demo`` (fixtures from conftest.py
and test_browser.py).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from llm_d_lens.console.conftest import needs_chromium
from llm_d_lens.console import test_browser
from llm_d_lens.testing.console import lens_serve

pytestmark = needs_chromium
#: the page-visiting fixture of test_browser.py (console messages and requests recorded)
visit = test_browser.visit


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    with lens_serve({}, "--demo") as url:
        yield url


def pages(url: str, *, plan: bool) -> list[str]:
    """Every console page: the overview, the fleet, one tab per registered hardware, the doctor (and the plan, empty
    and with a plan on the demo, if asked)."""
    with urllib.request.urlopen(url + "/api/v1/hardware/capabilities", timeout=30) as answer:
        ids = [p["id"] for p in json.load(answer)["profiles"]]
    assert len(ids) >= 6
    return ["/", "/fleet", *(f"/accelerators/{i}" for i in ids), "/doctor",
            *(["/plan", "/plan?model=llama-3.1-8b"] if plan else [])]


def test_the_demo_shows_no_failure_box_on_any_page(demo, visit):
    v = visit(demo)
    seen_notes = 0
    for path in pages(demo, plan=True):
        response = v.go(path)
        assert response.status == 200, path
        boxes = v.page.locator(".problem, .banner")
        assert boxes.count() == 0, (path, [boxes.nth(i).inner_text() for i in range(boxes.count())])
        notes = v.page.locator('.state-note[data-expected="true"]')
        for i in range(notes.count()):  # each expected state says what enables it, in a neutral colour
            assert "To enable:" in notes.nth(i).inner_text(), path
            colour = notes.nth(i).evaluate("e => getComputedStyle(e).borderLeftColor")
            assert colour != v.page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--bad')"), path
        seen_notes += notes.count()
    assert seen_notes >= 6  # drivers and overlays on every hardware tab are not configured in the demo
    v.go("/")
    notes = v.page.locator("#note-list li")
    assert notes.count() >= 2 and "driver missing?" in v.page.locator("#note-list").inner_text()
    assert v.errors == []


def test_at_390_px_no_page_is_wider_than_the_screen(demo, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=3, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        for path in pages(demo, plan=False):
            page.goto(demo + path)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)
            # the nav stays inside its bar: every link within the screen and inside the header
            header = page.locator("header.top").bounding_box()
            links = page.locator("header.top nav a")
            for i in range(links.count()):
                box = links.nth(i).bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (path, i, box)
                assert header["y"] <= box["y"] and box["y"] + box["height"] <= header["y"] + header["height"], (path, i)
            # a wide table scrolls inside its card instead of widening the page
            for table in page.locator("main table").all():
                holder = table.evaluate("t => t.parentElement.className")
                assert holder == "scroll", path
    finally:
        context.close()


def test_at_390_px_a_wide_node_table_scrolls_inside_its_card(demo, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(demo + "/accelerators/nvidia")
        scroller = page.locator("#node-table").locator("xpath=..")
        inner, outer = scroller.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert inner > outer  # the table is wider than the phone: it scrolls in its box
        card = page.locator("#nodes").bounding_box()
        assert card["x"] >= 0 and card["x"] + card["width"] <= 390
    finally:
        context.close()

