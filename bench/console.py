"""The console's overview page against the JSON call it is built from, on the same big snapshot.

For a synthetic snapshot (bench/inventory.py's generator; 5,000 nodes by default) it starts a fresh
``lens serve`` per measurement, so every first request reads the snapshot cold, and prints the median
of:

- the floor: ``GET /api/v1/clusters/overview`` until its whole body has arrived;
- the page: ``/`` in headless Chromium until its first contentful paint (Debian's ``/usr/bin/chromium``
  through Playwright; with ``--no-browser``, or without Chromium, until the HTML has arrived);

then both again on the warm server (the inventory of an unchanged snapshot is kept), the ratios
(goal <= 1.5), and the page weight: every byte the page loads, by kind.

Then throughput, as issue 29 asks: ``/`` and an accelerator tab on the warm server, against a bare
route serving the very bytes that page answered (a one-route Starlette app under the same uvicorn),
both hammered by the same client (``--clients`` threads, each on one kept-alive connection, asking
for gzip as a browser does) for ``--seconds`` each: requests/s, p50 and p99, and the ratio (goal
>= 0.5, p99 <= 50 ms).

    python bench/console.py                      # 5,000 nodes
    python bench/console.py --nodes 200 --repeat 1 --seconds 2
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from inventory import write_snapshot  # noqa: E402

from llm_d_lens.testing.console import CHROMIUM, CHROMIUM_ARGS, lens_serve  # noqa: E402
from llm_d_lens.testing.processes import stop  # noqa: E402
from llm_d_lens.testing.prometheus import free_port  # noqa: E402

#: the pages measured under load: the overview and one accelerator tab
LOADED = ("/", "/accelerators/nvidia")
#: what a browser sends; the bare route answers with the same encoding the page came in
ASK = {"Accept-Encoding": "gzip, deflate, br", "Accept": "text/html"}
#: a one-route app answering the captured bytes with their type and encoding, under uvicorn as lens serve runs
#: it (log level info: one access-log line per request, to the same closed output)
BARE = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
body = open(sys.argv[2], "rb").read()
headers = {"content-type": sys.argv[3]}
if sys.argv[4]:
    headers["content-encoding"] = sys.argv[4]
async def page(request):
    return Response(body, headers=headers)
uvicorn.run(Starlette(routes=[Route("/{path:path}", page)]), host="127.0.0.1", port=int(sys.argv[1]), log_level="info")
"""


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


def capture(url: str, path: str) -> tuple[bytes, str, str]:
    """The page's bytes as a browser receives them, their type and their encoding."""
    origin = url.removeprefix("http://")
    connection = http.client.HTTPConnection(origin, timeout=600)
    connection.request("GET", path, headers=ASK)
    answer = connection.getresponse()
    body = answer.read()
    connection.close()
    return body, answer.getheader("content-type") or "text/html", answer.getheader("content-encoding") or ""


def hammer(url: str, path: str, seconds: float, clients: int) -> dict[str, float]:
    """``clients`` threads GETting ``path`` for ``seconds``: requests/s and latency percentiles (ms)."""
    origin = url.removeprefix("http://")
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[int] = [0] * clients
    start = threading.Barrier(clients + 1)
    stop_at: list[float] = [0.0]

    def client(index: int) -> None:
        connection = http.client.HTTPConnection(origin, timeout=60)
        start.wait()
        while time.perf_counter() < stop_at[0]:
            began = time.perf_counter()
            connection.request("GET", path, headers=ASK)
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                failures[index] += 1
            latencies[index].append(time.perf_counter() - began)
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    stop_at[0] = time.perf_counter() + seconds
    began = time.perf_counter()
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    every = sorted(x for each in latencies for x in each)
    if not every:
        return {"rps": 0.0, "p50": float("nan"), "p99": float("nan"), "failed": float(sum(failures))}
    return {"rps": len(every) / elapsed, "p50": every[len(every) // 2] * 1000,
            "p99": every[min(len(every) - 1, int(len(every) * 0.99))] * 1000, "failed": float(sum(failures))}


def bare_server(body: bytes, media_type: str, encoding: str, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The bare route serving ``body``; returns the process and its URL once it answers."""
    page = folder / f"bare-{time.monotonic_ns()}.bin"
    page.write_bytes(body)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", BARE, str(port), str(page), media_type, encoding],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/", timeout=1):
                return process, url
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                stop(process)
                raise RuntimeError("the bare route did not start") from None
            time.sleep(0.1)


def throughput(url: str, folder: Path, seconds: float, clients: int, rounds: int = 5) -> list[str]:
    """One line per loaded page: the page against a bare route serving its bytes, on the same warm server.

    Both servers run side by side and are loaded in turn, ``rounds`` times for ``seconds / rounds``
    each, so a neighbour's burst on a shared machine lands on both; the ratio printed is the median
    of the rounds' ratios, the rates and percentiles are over all rounds.
    """
    lines = []
    for path in LOADED:
        body, media_type, encoding = capture(url, path)
        process, bare_url = bare_server(body, media_type, encoding, folder)
        try:
            hammer(url, path, min(seconds, 1.0), clients)  # warm: the first requests may build what later ones reuse
            hammer(bare_url, path, min(seconds, 1.0), clients)
            page_runs, bare_runs = [], []
            for _ in range(rounds):
                page_runs.append(hammer(url, path, seconds / rounds, clients))
                bare_runs.append(hammer(bare_url, path, seconds / rounds, clients))
        finally:
            stop(process)
        ratio = statistics.median(p["rps"] / b["rps"] if b["rps"] else 0.0 for p, b in zip(page_runs, bare_runs))
        page, bare = _overall(page_runs), _overall(bare_runs)
        lines.append(f"load {path}: {page['rps']:.1f} req/s (p50 {page['p50']:.1f} ms, p99 {page['p99']:.1f} ms), "
                     f"bare route {bare['rps']:.1f} req/s (p99 {bare['p99']:.1f} ms), ratio {ratio:.3f} (goal >= 0.5, "
                     f"median of {rounds} rounds); {len(body) / 1024:.1f} KiB {encoding or 'identity'}")
    return lines


def _overall(runs: list[dict[str, float]]) -> dict[str, float]:
    """Rounds taken together: the mean rate, the worst round's p99, the median round's p50."""
    return {"rps": statistics.mean(r["rps"] for r in runs), "p50": statistics.median(r["p50"] for r in runs),
            "p99": max(r["p99"] for r in runs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="fresh servers per measurement; the median is printed")
    parser.add_argument("--no-browser", action="store_true", help="time the page's HTML instead of its first paint")
    parser.add_argument("--seconds", type=float, default=5.0, help="load per page and per bare route (0: no load test)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent kept-alive connections under load")
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
        loaded: list[str] = []
        if args.seconds > 0:
            with lens_serve(env) as url:
                html_call(url)  # read the snapshot once: the load is measured on the warm server
                loaded = throughput(url, Path(tmp), args.seconds, args.clients)
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
    for line in loaded:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
