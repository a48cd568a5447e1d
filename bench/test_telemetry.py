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
    # the recorded selector (the probe finds nothing there), then one combined query per hardware, at any size
    assert re.fullmatch(r"queries per refresh without recording rules: 4 at \d+ devices, 4 at 24 devices "
                        r"\(constant: yes; the recorded selector, then one per hardware\)", lines[1]), lines[1]
    assert re.fullmatch(r"one raw /api/v1/query of \S+ \(\d+ series\): median [\d.]+ ms", lines[2])
    ratio = r"ratio [\d.]+x, paired [\d.]+x \(goal <= 1.2x: (met|NOT met)\)"
    # the raw client sends the same requests with the same concurrency, and the line says so
    assert re.fullmatch(r"refresh without rules: median [\d.]+ ms; the raw client sending the same requests the same way "
                        r"\(httpx \+ msgspec decode, nothing else; at most 4 in flight, as Lens\): [\d.]+ ms; " + ratio,
                        lines[3]), lines[3]
    assert re.fullmatch(r"refresh --raw \(no probe, one query per hardware\): median [\d.]+ ms; raw client [\d.]+ ms; "
                        r"ratio [\d.]+x, paired [\d.]+x; the probe costs -?[\d.]+ ms", lines[4]), lines[4]
    # with the rules backfilled, every hardware is read from its recorded series in one query
    assert re.fullmatch(r"refresh with recording rules \(1 query, 24 devices, all read from recorded series\): median "
                        r"[\d.]+ ms; one raw query of the recorded selector: [\d.]+ ms; " + ratio +
                        r"; [\d.]+x the refresh without rules", lines[5]), lines[5]
    assert lines[6].startswith("cpu time of Lens and Prometheus: refresh ") and lines[7].startswith("load average ")


def test_each_lens_run_sits_beside_its_raw_run_and_the_two_take_turns_first():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from telemetry import run_order
    finally:
        sys.path.remove(str(SCRIPT.parent))
    names = ["floor", "refresh", "raw", "recorded", "raw_recorded"]
    order = run_order(names, 4)
    assert len(order) == 20 and all(order.count(name) == 4 for name in names)
    rounds = [order[i:i + 5] for i in range(0, 20, 5)]
    assert rounds[0] == ["floor", "refresh", "raw", "recorded", "raw_recorded"]
    assert rounds[1] == ["floor", "raw", "refresh", "raw_recorded", "recorded"]
    assert rounds[2] == rounds[0] and rounds[3] == rounds[1]
    # a pair without its raw run (no recorded server) runs alone, every round
    assert run_order(["floor", "recorded"], 2) == ["floor", "recorded", "floor", "recorded"]


def test_settled_frees_what_a_run_s_finished_tasks_held():
    """A result ``gather`` returned outlives the run until the loop's next turns; settled() gives them inside the run."""
    import asyncio
    import weakref

    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from telemetry import settled
    finally:
        sys.path.remove(str(SCRIPT.parent))

    class Answer:
        pass

    async def one() -> Answer:
        return Answer()

    async def run() -> tuple[bool, bool]:
        async def action() -> weakref.ref:
            return weakref.ref((await asyncio.gather(one(), one()))[0])
        held = await action()
        alive_after_the_run = held() is not None
        await settled()
        return alive_after_the_run, held() is None

    assert asyncio.run(run()) == (True, True)
