"""Smoke test of bench/console.py: a tiny run prints both ratios and the page weight it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from llm_d_lens.testing.console import CHROMIUM

SCRIPT = Path(__file__).resolve().parent / "console.py"
NUMBER = r"\d+\.\d+"


def test_a_tiny_run_prints_cold_and_warm_ratios_and_the_page_weight() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--nodes", "20", "--pods-per-node", "2", "--repeat", "1", "--seconds", "0.5"],
                          capture_output=True, text=True, timeout=300, check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "snapshot: 20 nodes, 40 pods; 1 fresh server(s) per measurement"
    browser = Path(CHROMIUM).is_file()
    page = r"page \(first contentful paint\)" if browser else r"page \(HTML received, no browser\)"
    for line, label in zip(lines[1:3], ("cold", "warm")):
        found = re.fullmatch(rf"{label}: /api/v1/clusters/overview ({NUMBER}) s, {page} ({NUMBER}) s, ratio ({NUMBER}) \(goal <= 1\.5\)", line)
        assert found, line
        floor, shown, ratio = (float(g) for g in found.groups())
        assert floor > 0 and shown > 0
        # the ratio agrees with the printed times, within their rounding (4 decimals) and its own (2)
        low, high = (shown - 5e-5) / (floor + 5e-5), (shown + 5e-5) / max(floor - 5e-5, 1e-9)
        assert low - 0.005 <= ratio <= high + 0.005, line
    if browser:
        weight = re.fullmatch(rf"page weight: ({NUMBER}) KiB \((.+)\)", lines[3])
        assert weight, lines[3]
        parts = dict(re.findall(rf"(\w+) ({NUMBER}) KiB", weight.group(2)))
        assert {"document", "stylesheet", "script"} <= parts.keys()
        assert abs(sum(map(float, parts.values())) - float(weight.group(1))) < 0.1 * len(parts)
    else:
        assert lines[3] == "page weight: not measured (no browser)"
    # under load: each page against a bare route serving its bytes, the ratio agreeing with the two rates
    for line, path in zip(lines[4:6], ("/", "/accelerators/nvidia")):
        found = re.fullmatch(rf"load {re.escape(path)}: ({NUMBER}) req/s \(p50 {NUMBER} ms, p99 {NUMBER} ms\), bare route "
                             rf"({NUMBER}) req/s \(p99 {NUMBER} ms\), ratio ({NUMBER}) \(goal >= 0\.5, median of (\d+) rounds\); {NUMBER} KiB (gzip|identity)", line)
        assert found, line
        page, bare, ratio = (float(g) for g in found.groups()[:3])
        # the ratio is the median of the rounds' own ratios: positive, and not far from the overall rates' ratio
        assert page > 0 and bare > 0 and 0 < ratio and int(found.group(4)) == 5, line
        assert found.group(5) == "gzip"  # the pages come compressed, as a browser asks
    assert len(lines) == 6
