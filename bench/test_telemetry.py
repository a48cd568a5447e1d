"""Smoke test of bench/telemetry.py at a tiny size: it runs and reports every line (no timing thresholds).

The query counts are asserted: one per hardware combined, one per part separately, at any size.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.testing.prometheus import skip_reason

SCRIPT = Path(__file__).resolve().parent / "telemetry.py"


@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_the_benchmark_reports_query_count_and_ratio():
    done = subprocess.run([sys.executable, str(SCRIPT), "--devices", "24", "--nodes", "6", "--repeats", "1"],
                          capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == 8, done.stdout
    assert lines[0].startswith("devices: 24 on 6 nodes (nvidia, amd, intel-xpu); series backfilled: ")
    queries = re.fullmatch(r"queries per refresh: (\d+) at (\d+) devices, (\d+) at 24 devices \(constant: yes\)", lines[1])
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.plan import plan_for

    # one combined query per hardware
    assert queries and queries.group(1) == queries.group(3) == "3"
    assert re.fullmatch(r"floor \(one raw /api/v1/query of \S+, \d+ series\): median [\d.]+ ms", lines[2])
    assert re.fullmatch(r"refresh \(3 hardware, 3 queries\): median [\d.]+ ms = [\d.]+x floor \(goal <= 3x: (met|NOT met)\)", lines[3])
    # one query per part: per hardware its inventory, quantities and (where declared) sentinels, plus one targets query
    from llm_d_lens.monitoring.accelerator.queries import queries as parts_of

    separate = sum(len(parts_of(plan_for(get_registry().get(h)))) for h in ("nvidia", "amd", "intel-xpu")) + 1
    assert re.fullmatch(rf"one query per part \({separate} queries\): median [\d.]+ ms = [\d.]+x floor; "
                        r"the combined refresh takes [\d.]+x its time", lines[4])
    assert re.fullmatch(r"second floor \(each of the \d+ metrics read, raw, all in flight, \d+ series\): "
                        r"median [\d.]+ ms; refresh = [\d.]+x that", lines[5])
    assert re.fullmatch(r"cpu time of Lens and Prometheus: floor \d+ ms, refresh \d+ ms \([\d.]+x\), "
                        r"one query per part \d+ ms \([\d.]+x\)", lines[6])
    assert re.fullmatch(r"of which Lens: floor \d+ ms, refresh \d+ ms, one query per part \d+ ms; load average [\d.]+", lines[7])
