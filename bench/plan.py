"""How long a plan takes: the memory fit against a CLI start-up, and the AIC path against AIC itself.

1. The memory fit of one model on 6 pools (one a hardware kind) with 32 devices a node, so every
   pool has 21 tensor/pipeline parallelism options (126 options in all), against the floor of a
   bare ``lens --help`` start-up measured in the same run. Goal: a ratio well under 1 (<= 0.1).
2. With the planning extra installed: one AIC search through Lens's worker process (the catalogue
   loaded first, as every plan does) against ``aiconfigurator``'s own ``cli_default`` called
   directly with the same inputs in this process. Goal: ratio <= 1.1. Then the same request again,
   which Lens answers from its cache.

    python bench/plan.py                 # 5 runs of the fit, the AIC path when installed
    python bench/plan.py --runs 1 --skip-aic
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm_d_lens.planning import aic  # noqa: E402
from llm_d_lens.planning.catalogue import catalogue_spec  # noqa: E402
from llm_d_lens.planning.fit import FitRequest, fit_pool, parallelisms  # noqa: E402
from llm_d_lens.planning.pools import Pool, PoolNode  # noqa: E402

GIB = 2**30
POOLS = [("nvidia", "H200", 141), ("amd", "MI300X", 192), ("intel-gaudi", "Gaudi3", 128), ("intel-xpu", "Max 1550", 128),
         ("google-tpu", "v6e", 32), ("nvidia", "H100", 80)]


def median_seconds(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def memory_fit(runs: int) -> None:
    model = catalogue_spec("llama-3.1-70b")
    request = FitRequest(context=8192, concurrency=16).checked(model)
    pools = [Pool(p, p, "v", product, memory * GIB, "bench", [PoolNode(f"n{i}", 32, 32, 16, True) for i in range(4)])
             for p, product, memory in POOLS]
    options = sum(len(parallelisms(p.devices_per_node)) for p in pools)
    fit = median_seconds(lambda: [fit_pool(model, request, p) for p in pools], max(runs, 1) * 20)
    startup = median_seconds(lambda: subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "--help"],
                                                    capture_output=True, check=True), runs)
    print(f"memory fit: {len(pools)} pools x {options // len(pools)} options = {options} options, median "
          f"{fit * 1000:.3f} ms; lens --help start-up {startup * 1000:.1f} ms; ratio {fit / startup:.4f} (goal <= 0.1)")


def aic_path() -> None:
    current = aic.status()
    if not current.available:
        print(f"aic: skipped: {current.message}")
        return
    query = {"model": "Qwen/Qwen3-32B", "system": "h200_sxm", "total_gpus": 8, "backend": "vllm",
             "isl": 4000, "osl": 1000, "ttft": 2000.0, "tpot": 30.0}
    direct = median_seconds(lambda: aic.direct_search(**query), 1)
    engine = aic.Engine()
    try:
        engine.catalogue()  # the worker starts and imports AIC once, as before a plan's first search
        lens = median_seconds(lambda: engine.answer(*engine.submit(("bench", *query.values()), **query)), 1)
        cached = median_seconds(lambda: engine.answer(*engine.submit(("bench", *query.values()), **query)), 1)
    finally:
        engine.close()
    print(f"aic: direct cli_default {direct:.2f} s, through Lens's worker {lens:.2f} s, ratio {lens / direct:.2f} "
          f"(goal <= 1.1); the same request again {cached * 1000:.2f} ms (cached)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-aic", action="store_true")
    args = parser.parse_args()
    memory_fit(args.runs)
    if not args.skip_aic:
        aic_path()


if __name__ == "__main__":
    main()
