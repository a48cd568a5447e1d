"""Smoke test of bench/watch.py: it runs at a tiny size and prints every line it promises, ratios agreeing with the times."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "watch.py"
NUMBER = r"([\d.]+)"


def test_the_benchmark_prints_memory_latency_and_catch_up_ratios() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--nodes", "16", "--pods-per-node", "2", "--repeat", "3"],
                          capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "cluster: 16 nodes, 32 pods"
    memory = re.fullmatch(rf"memory: watch {NUMBER} MiB, parsed snapshot {NUMBER} MiB, ratio {NUMBER}", lines[1])
    latency = re.fullmatch(rf"overview, no event: {NUMBER} ms; right after an event: {NUMBER} ms; "
                           rf"ratio {NUMBER} \(goal <= 1\.2\)", lines[2])
    catch_up = re.fullmatch(rf"event in the answer after {NUMBER} s; one build of the parsed snapshot {NUMBER} s; "
                            rf"ratio {NUMBER}", lines[3])
    demand = re.fullmatch(rf"on demand \(a request builds after each event\): {NUMBER} ms; ratio {NUMBER} "
                          "to the answer without events", lines[4])
    assert memory and latency and catch_up and demand, lines
    watch, snapshot = float(memory[1]), float(memory[2])
    assert watch > 0 and snapshot > 0
    # each ratio agrees with the figures printed beside it (within their rounding)
    for first, second, ratio, digits in ((watch, snapshot, float(memory[3]), 0.05),
                                         (float(latency[2]), float(latency[1]), float(latency[3]), 0.05),
                                         (float(catch_up[1]), float(catch_up[2]), float(catch_up[3]), 0.0005)):
        low, high = (first - digits) / (second + digits), (first + digits) / max(second - digits, 1e-9)
        assert low - 0.005 <= ratio <= high + 0.005, (first, second, ratio)
    # an event reaches the answer no sooner than the builder settles
    assert float(catch_up[1]) >= 0.2
