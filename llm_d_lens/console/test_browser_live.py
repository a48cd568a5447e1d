"""The console live, in Chromium against ``lens serve --demo``: sparklines, charts first, range zoom, freshness,
re-reads driven by the page's ETag; and the same pages without JavaScript."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from llm_d_lens.console import test_browser
from llm_d_lens.console.conftest import needs_chromium
from llm_d_lens.testing.console import lens_serve

pytestmark = needs_chromium
visit = test_browser.visit
#: the demo's step: a re-read every 2 s, and a new telemetry step as often
REFRESH = 2


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    with lens_serve({"LENS_CONSOLE_REFRESH": str(REFRESH)}, "--demo") as url:
        yield url


def test_cards_carry_sparklines_and_the_range_zooms_them(demo, visit):
    v = visit(demo)
    v.go("/")
    cards = v.page.locator(".card[data-hardware]")
    drawn = v.page.locator(".card .spark-box svg.spark polyline")
    assert drawn.count() >= 4  # every demo hardware with telemetry
    for i in range(drawn.count()):
        assert int(drawn.nth(i).get_attribute("data-points")) >= 10
    hour = int(v.page.locator('.card[data-hardware="nvidia"] svg.spark polyline').get_attribute("data-points"))
    label = v.page.locator('.card[data-hardware="nvidia"] svg.spark').get_attribute("aria-label")
    assert "over the last 1 h" in label and re.search(r"latest \d+%", label)
    # a hardware that declares no telemetry says so in its card, not with a failure
    assert "No device telemetry declared" in v.page.locator('.card[data-hardware="cpu"]').inner_text()
    assert cards.count() >= 6
    v.page.locator('#cards-panel .ranges a[data-minutes="15"]').click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.url.endswith("/?minutes=15")
    assert v.page.locator('#cards-panel .ranges a[aria-current="true"]').inner_text() == "15 min"
    quarter = int(v.page.locator('.card[data-hardware="nvidia"] svg.spark polyline').get_attribute("data-points"))
    assert quarter < hour
    assert v.errors == [] and v.foreign() == []


def test_charts_open_each_tab_and_the_range_links_zoom_them(demo, visit):
    v = visit(demo)
    v.go("/accelerators/nvidia")
    telemetry = v.page.locator("#telemetry").bounding_box()
    assert telemetry["y"] < v.page.locator("#identity").bounding_box()["y"]
    assert telemetry["y"] < 400  # above the fold: right under the tabs
    assert v.page.locator("#telemetry figure.chart").count() >= 3
    before = v.page.locator("#telemetry-source").inner_text()
    v.page.locator('#telemetry .ranges a[data-minutes="15"]').click()
    v.page.wait_for_load_state("networkidle")
    assert "minutes=15" in v.page.url and v.page.locator("#telemetry-source").inner_text() != before
    points = v.page.locator("#telemetry figure.chart polyline.series").first.get_attribute("data-points")
    assert 10 <= int(points) <= 16  # a point a minute over 15 minutes
    assert v.errors == []


def test_every_live_panel_says_how_fresh_it_is_and_updates_in_place(demo, visit):
    v = visit(demo)
    v.go("/accelerators/nvidia")
    ages = v.page.locator("time[data-age]")
    assert ages.count() >= 2  # the charts and the inventory
    v.page.wait_for_function("() => [...document.querySelectorAll('time[data-age]')].every(t => / ago$/.test(t.textContent))")
    for i in range(ages.count()):
        assert re.fullmatch(r"updated \d+ (s|min|h) ago", ages.nth(i).inner_text()), ages.nth(i).inner_text()
    v.page.evaluate("window.__same_page = true")
    stamp = v.page.locator("#telemetry-fresh time").get_attribute("datetime")
    with v.page.expect_request(lambda r: r.url == v.page.url and "if-none-match" in r.headers) as asked:
        pass
    assert asked.value.method == "GET"
    # a new telemetry step brings a new page (a new ETag): the charts panel is swapped in, the page never reloads
    v.page.wait_for_function(f"() => document.querySelector('#telemetry-fresh time').getAttribute('datetime') !== '{stamp}'",
                             timeout=60_000)
    assert v.page.evaluate("window.__same_page") is True
    assert v.page.locator("#telemetry").get_attribute("data-updated")
    assert v.page.locator("#telemetry figure.chart").count() >= 3
    assert v.errors == []


def test_an_unchanged_page_is_revalidated_with_a_304(demo, visit):
    v = visit(demo)
    v.go("/accelerators/cpu")  # no telemetry: the page only changes with the inventory
    answers = []
    v.page.on("response", lambda r: answers.append(r.status) if r.url == v.page.url else None)
    v.page.wait_for_function("() => document.body.hasAttribute('data-checked')", timeout=60_000)
    v.page.wait_for_function("n => Number(document.body.getAttribute('data-checked')) > n",
                             arg=float(v.page.evaluate("Number(document.body.getAttribute('data-checked'))")), timeout=60_000)
    assert 304 in answers


def test_without_javascript_every_panel_still_says_when_it_was_read(demo, browser):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        for path in ("/", "/accelerators/nvidia"):
            page.goto(demo + path)
            ages = page.locator("time[data-age]")
            assert ages.count() >= 2, path
            for i in range(ages.count()):
                assert re.fullmatch(r"updated at \d\d:\d\d:\d\d UTC", ages.nth(i).inner_text()), path
            assert page.locator("svg polyline").count() >= 1, path  # sparklines and charts are drawn by the server
        page.locator('#telemetry .ranges a[data-minutes="360"]').click()
        assert "minutes=360" in page.url
    finally:
        context.close()
