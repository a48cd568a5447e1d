"""Smoke test of bench/fleet.py: a tiny fleet is listed, counted and asked, and every promised line is printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "fleet.py"
NUMBER = r"([\d.]+)"


def test_the_fleet_benchmark_prints_memory_and_answer_percentiles() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--clusters", "2", "--nodes", "20", "--pods-per-node", "2",
                           "--requests", "10"], capture_output=True, text=True, timeout=180, check=True)
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"fleet: 2 clusters, 40 nodes, 80 pods, listed and counted in \d+ s", lines[0]), lines
    memory = re.fullmatch(rf"memory: resident {NUMBER} MiB \({NUMBER} GiB; goal <= 4 GiB\), peak {NUMBER} MiB", lines[1])
    assert memory and float(memory[1]) <= float(memory[3])
    assert re.fullmatch(r"fleet overview: 2 of 2 clusters read, \d+ accelerator devices", lines[2]), lines[2]
    answers = re.fullmatch(rf"fleet overview answers: p50 {NUMBER} ms, p99 {NUMBER} ms \(goal <= 100 ms\) of 10, "
                           r"while \d+ pod events arrived \(\d+/s\)", lines[3])
    assert answers and float(answers[1]) <= float(answers[2])
    assert re.fullmatch(rf"collector: longest pause {NUMBER} ms of \d+ runs over the {NUMBER} s of requests "
                        r"\(goal <= 50 ms\)", lines[4]), lines[4]
