"""The console's overview page against the JSON call it is built from, on the same big snapshot.

For a synthetic snapshot (bench/inventory.py's generator; 5,000 nodes by default) it starts a fresh
``lens serve`` per measurement, so every first request reads the snapshot cold, and prints the median
of:

- the floor: ``GET /api/v1/clusters/overview`` until its whole body has arrived;
- the page: ``/`` in headless Chromium until its first contentful paint (Debian's ``/usr/bin/chromium``
  through Playwright; with ``--no-browser``, or without Chromium, until the HTML has arrived);

then both again on the warm server (the inventory of an unchanged snapshot is kept), the ratios
(goal <= 1.5), and the page weight: every byte the page loads, by kind.

    python bench/console.py                      # 5,000 nodes
    python bench/console.py --nodes 200 --repeat 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from inventory import write_snapshot  # noqa: E402

from llm_d_lens.testing.console import CHROMIUM, CHROMIUM_ARGS, lens_serve  # noqa: E402


def json_call(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url + "/api/v1/clusters/overview", timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started


def html_call(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url + "/", timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started


class Browser:
    """Headless Chromium measuring first contentful paint, and the bytes a page loads."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        home = tempfile.mkdtemp(prefix="lens-bench-chromium-")
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}
        self.browser = self._playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, env=env)

    def first_render(self, url: str) -> float:
        page = self.browser.new_page()
        try:
            page.goto(url + "/", timeout=600_000)
            paint = page.evaluate(
                "new Promise(done => { const seen = () => performance.getEntriesByName('first-contentful-paint');"
                " if (seen().length) return done(seen()[0].startTime);"
                " new PerformanceObserver(() => done(seen()[0].startTime)).observe({type: 'paint', buffered: true}); })")
            return float(paint) / 1000
        finally:
            page.close()

    def weight(self, url: str) -> dict[str, int]:
        page = self.browser.new_page()
        sizes: dict[str, int] = {}

        def count(response: Any) -> None:
            kind = response.request.resource_type
            sizes[kind] = sizes.get(kind, 0) + len(response.body())

        page.on("response", count)
        try:
            page.goto(url + "/", wait_until="networkidle", timeout=600_000)
        finally:
            page.close()
        return sizes

    def close(self) -> None:
        self.browser.close()
        self._playwright.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="fresh servers per measurement; the median is printed")
    parser.add_argument("--no-browser", action="store_true", help="time the page's HTML instead of its first paint")
    args = parser.parse_args(argv)

    browser = None
    if not args.no_browser and Path(CHROMIUM).is_file():
        browser = Browser()
    page_name = "page (first contentful paint)" if browser else "page (HTML received, no browser)"
    render = browser.first_render if browser else html_call
    with tempfile.TemporaryDirectory(prefix="lens-bench-console-") as tmp:
        snapshot = Path(tmp) / "cluster.json"
        write_snapshot(snapshot, args.nodes, args.pods_per_node, 4)
        env = {"LENS_CLUSTER_SNAPSHOT": str(snapshot)}
        cold: dict[str, list[float]] = {"json": [], "page": []}
        warm: dict[str, list[float]] = {"json": [], "page": []}
        weight: dict[str, int] = {}
        for _ in range(args.repeat):
            for name, measure in (("json", json_call), ("page", render)):
                with lens_serve(env) as url:
                    cold[name].append(measure(url))
                    warm[name].append(measure(url))
                    if name == "page" and browser and not weight:
                        weight = browser.weight(url)
    if browser:
        browser.close()

    print(f"snapshot: {args.nodes:,} nodes, {args.nodes * args.pods_per_node:,} pods; {args.repeat} fresh server(s) per measurement")
    for label, runs in (("cold", cold), ("warm", warm)):
        floor, page = statistics.median(runs["json"]), statistics.median(runs["page"])
        print(f"{label}: /api/v1/clusters/overview {floor:.4f} s, {page_name} {page:.4f} s, ratio {page / floor:.2f} (goal <= 1.5)")
    if weight:
        total = sum(weight.values())
        parts = ", ".join(f"{kind} {size / 1024:.1f} KiB" for kind, size in sorted(weight.items()))
        print(f"page weight: {total / 1024:.1f} KiB ({parts})")
    else:
        print("page weight: not measured (no browser)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
