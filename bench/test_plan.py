"""The plan benchmark runs end to end (tiny sizes; no timing thresholds)."""

import re
import subprocess
import sys
from pathlib import Path


def test_plan_benchmark_prints_the_fit_against_start_up():
    script = Path(__file__).with_name("plan.py")
    result = subprocess.run([sys.executable, str(script), "--runs", "1", "--skip-aic"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    number = r"\d+\.\d+"
    assert re.fullmatch(rf"memory fit: 6 pools x 21 options = 126 options, median {number} ms; lens --help start-up "
                        rf"{number} ms; ratio {number} \(goal <= 0\.1\)\n", result.stdout), result.stdout
