"""Smoke test of bench/provider_calls.py: a tiny run prints both medians and their ratio."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "provider_calls.py"


def test_a_tiny_run_prints_both_medians_and_their_ratio() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--calls", "5", "--fresh", "1"], capture_output=True, text=True,
                          timeout=120, check=True)
    lines = done.stdout.splitlines()
    warm = re.fullmatch(r"call to a running worker: (\d+\.\d+) ms \(median of 5\)", lines[0])
    fresh = re.fullmatch(r"process per call: (\d+\.\d+) ms \(median of 1\)", lines[1])
    ratio = re.fullmatch(r"ratio: (\d+\.\d+)x", lines[2])
    assert warm and fresh and ratio, done.stdout
    assert abs(float(ratio.group(1)) - float(fresh.group(1)) / float(warm.group(1))) <= 0.1 + 0.01 * float(ratio.group(1))
