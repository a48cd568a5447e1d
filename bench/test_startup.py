"""The startup benchmark runs end to end (tiny sizes; no timing thresholds)."""

import re
import subprocess
import sys
from pathlib import Path


def test_startup_benchmark_prints_ratios_and_counts_plugins():
    script = Path(__file__).with_name("startup.py")
    result = subprocess.run([sys.executable, str(script), "--runs", "1", "--plugins", "3"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"lens hardware list\s+median\s+[\d.]+ ms\s+ratio\s+[\d.]+x", out)
    assert re.search(r"discovery, 0 plugins\s+median\s+[\d.]+ ms\s+profiles 6", out)
    assert re.search(r"discovery, 3 plugins\s+median\s+[\d.]+ ms\s+profiles 9", out)
    assert "heavy modules imported by 'lens hardware list': none" in out
