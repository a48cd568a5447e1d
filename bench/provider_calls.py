"""Why a provider's hooks go to a long-lived worker: a call to a running worker against a process per call.

Builds a throwaway plugin distribution whose provider answers one hook, then prints the median time
of a call to its running worker (``hardware/provider_host.py``) and of a fresh worker started, built
and called once (what a process per call would cost), and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--fresh", type=int, default=5)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        site = Path(scratch)
        (site / "bench_calls_lens.py").write_text("class Provider:\n    async def driver_status(self, mode, *, cluster_id=None):\n"
                                                  "        return [mode]\n")
        info = site / "bench_calls_lens-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bench-calls-lens\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[llm_d_lens.hardware.providers]\nbench = bench_calls_lens:Provider\n")
        sys.path.insert(0, str(site))
        from importlib.metadata import EntryPoint

        from llm_d_lens.hardware.provider_host import RemoteProvider, close_all

        ep = EntryPoint(name="bench", value="bench_calls_lens:Provider", group="llm_d_lens.hardware.providers")
        provider = RemoteProvider.build(ep, ("driver_status",), timeout=30)
        warm = []
        for _ in range(options.calls):
            started = time.perf_counter()
            provider.call("driver_status", ["plugin"])
            warm.append(time.perf_counter() - started)
        close_all()
        fresh = []
        for _ in range(options.fresh):
            started = time.perf_counter()
            RemoteProvider.build(ep, ("driver_status",), timeout=30).call("driver_status", ["plugin"])
            fresh.append(time.perf_counter() - started)
            close_all()
    worker, per_call = statistics.median(warm), statistics.median(fresh)
    print(f"call to a running worker: {worker * 1000:.3f} ms (median of {options.calls})")
    print(f"process per call: {per_call * 1000:.1f} ms (median of {options.fresh})")
    print(f"ratio: {per_call / worker:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
