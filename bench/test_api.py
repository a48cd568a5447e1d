"""Smoke test of bench/api.py: a tiny run prints every ratio, the 304s and the parse count it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "api.py"
NUMBER = r"\d+\.\d+"


def test_a_tiny_run_prints_ratios_against_a_bare_app_304s_and_one_parse() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--nodes", "12", "--pods-per-node", "2", "--requests", "5", "--rounds", "1",
                           "--clients", "4"], capture_output=True, text=True, timeout=300, check=True)
    lines = done.stdout.splitlines()
    assert re.fullmatch(rf"snapshot: {NUMBER} MiB; 5 sequential requests per measurement", lines[0]), lines[0]
    paths = ["/api/v1/clusters/overview", "/api/v1/clusters/overview?nodes=false", "/api/v1/hardware/capabilities"]
    sizes = []
    for line, path in zip(lines[1:4], paths, strict=True):
        found = re.fullmatch(rf"{re.escape(path)}: ({NUMBER}) KiB, lens ({NUMBER}) req/s, bare FastAPI ({NUMBER}) req/s, "
                             rf"ratio ({NUMBER}) \(goal >= 0\.8\)", line)
        assert found, line
        size, lens, bare, ratio = (float(g) for g in found.groups())
        assert lens > 0 and bare > 0 and abs(ratio - lens / bare) <= 0.01 + 0.01 * ratio  # one round: the ratio of the rates
        sizes.append(size)
    assert sizes[1] < sizes[0]  # without nodes is smaller
    assert re.fullmatch(rf"/api/v1/clusters/overview with If-None-Match: 304, {NUMBER} req/s", lines[4]), lines[4]
    assert re.fullmatch(rf"/api/v1/hardware/capabilities with If-None-Match: 304, {NUMBER} req/s", lines[5]), lines[5]
    assert lines[6] == "4 concurrent first requests: the snapshot was parsed 1 time(s) (goal: 1)"
