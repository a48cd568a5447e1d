"""axe-core on every console page at 1400 px and 390 px: no violation of any impact.

axe-core comes from the ``axe-playwright-python`` wheel (its ``axe.min.js``, injected by Playwright's
evaluate, which the page's Content-Security-Policy does not govern); Chromium is Debian's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_d_lens.console.conftest import needs_chromium
from llm_d_lens.console.test_browser_scale import pages
from llm_d_lens.testing.console import lens_serve

pytestmark = needs_chromium
WIDTHS = ((1400, 900), (390, 844))
#: the action pages as a demo server shows them (actions off: the note saying how to enable them)
ACTION_PAGES = ("/deploy", "/deploy?guide=optimized-baseline&hardware=nvidia", "/session", "/nodes/maintenance")


def axe_violations(page) -> list[str]:
    """axe-core's violations on the page as ``rule (impact): targets``; empty when it passes."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{v['id']} ({v['impact']}): {', '.join(str(n['target']) for n in v['nodes'][:5])}"
            for v in results.response["violations"]]


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    with lens_serve({}, "--demo") as url:
        yield url


@pytest.mark.parametrize("width,height", WIDTHS, ids=["1400px", "390px"])
def test_axe_finds_no_violation_on_any_page(demo, browser, width, height):
    pytest.importorskip("axe_playwright_python", reason="needs the test extra's axe-playwright-python (axe-core)")
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        found = {}
        for path in (*pages(demo, plan=True), "/?minutes=15", "/accelerators/nvidia?minutes=15", *ACTION_PAGES):
            answer = page.goto(demo + path)
            page.wait_for_load_state("networkidle")
            assert answer.status == 200, path
            violations = axe_violations(page)
            if violations:
                found[path] = violations
        assert found == {}
    finally:
        context.close()
