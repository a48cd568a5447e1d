"""How one telemetry refresh scales: queries sent and time, against a floor measured in the same run.

A synthetic cluster (by default 1,000 devices on 125 nodes across three hardware profiles) is
generated from the profiles themselves: every metric each profile's device sources read, with the
labels its label_schema names and values its matchers accept. It is backfilled into a real
Prometheus, and one refresh (``read_devices``: per hardware, the inventory query and one per
quantity combined into one expression, all hardware in flight together) is timed against the
floor: one raw ``/api/v1/query`` of the metric with the most series, through the same client.
The same refresh with one query per part (``combined=False``, what Lens sent before) is timed
alongside, each run alternating with the others, so the gain of the single round trip shows.

On a machine others share, wall time follows their load; the CPU time a run costs Lens and the
Prometheus server together (read from /proc) is printed beside it, as a ratio to the floor's.

Goal: one query per hardware whatever the devices, and a refresh takes at most 3x the floor.

    python bench/telemetry.py [--devices 1000] [--nodes 125] [--hardware nvidia,amd,intel-xpu] [--repeats 9]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from collections import Counter
from pathlib import Path

from llm_d_lens.cluster.snapshot import gc_paused
from llm_d_lens.monitoring.accelerator.service import Selected, read_devices, select
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, run_prometheus, skip_reason, to_openmetrics
from llm_d_lens.testing.telemetry import series_for

GOAL = 3.0


def generate(selection: list[Selected], devices: int, nodes: int, seed: int = 7) -> tuple[str, Counter[str]]:
    rng = random.Random(seed)
    per_node = max(1, devices // nodes)
    samples = []
    for n in range(nodes):
        chosen = selection[n % len(selection)]
        node = f"{chosen.profile.id}-node-{n:03d}"
        for index in range(per_node):
            samples.extend(series_for(chosen.plan, node, index, rng))
    return to_openmetrics(samples), Counter(name for name, _, _ in samples)


def _cpu(pid: int) -> float:
    """CPU seconds process ``pid`` has run, summed over its threads (nanosecond schedstat); 0 without /proc."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total / 1e9


async def measure(url: str, selection: list[Selected], largest: str, repeats: int,
                  metrics: list[str] | None = None, server_pid: int | None = None) -> dict[str, object]:
    async with PrometheusClient(url, timeout=60) as client:
        await client.query(largest, BASE_TIMESTAMP)  # warm the connection and Prometheus' caches alike
        await read_devices(client, selection, at=BASE_TIMESTAMP)
        await read_devices(client, selection, at=BASE_TIMESTAMP, combined=False)
        actions = {
            "floor": lambda: client.query(largest, BASE_TIMESTAMP),
            "refresh": lambda: read_devices(client, selection, at=BASE_TIMESTAMP),
            "separate": lambda: read_devices(client, selection, at=BASE_TIMESTAMP, combined=False),
            # a second floor: every metric the refresh reads, fetched raw and all in flight, so the
            # ratio to it is Lens' own overhead rather than the series Prometheus must read anyway
            "every": lambda: asyncio.gather(*(client.query(m, BASE_TIMESTAMP) for m in metrics or [largest])),
        }
        wall: dict[str, list[float]] = {name: [] for name in actions}
        cpu: dict[str, list[float]] = {name: [] for name in actions}
        lens: dict[str, list[float]] = {name: [] for name in actions}
        for _ in range(repeats):  # alternating, so a neighbour's burst of load falls on every kind alike
            for name, action in actions.items():
                # the refresh pauses the cyclic collector while it runs; the floors are given the same
                with gc_paused():
                    lens_before, server_before, started = time.process_time(), _cpu(server_pid or 0), time.perf_counter()
                    await action()
                    wall[name].append(time.perf_counter() - started)
                    lens[name].append(time.process_time() - lens_before)
                    cpu[name].append(lens[name][-1] + _cpu(server_pid or 0) - server_before)
        counts = {}
        for combined in (True, False):
            before = client.queries_sent
            report = await read_devices(client, selection, at=BASE_TIMESTAMP, combined=combined)
            counts[combined] = client.queries_sent - before
    out: dict[str, object] = {name: statistics.median(times) for name, times in wall.items()}
    out.update({f"{name}_cpu": statistics.median(times) for name, times in cpu.items()})
    out.update({f"{name}_lens": statistics.median(times) for name, times in lens.items()})
    out.update({"queries": counts[True], "separate_queries": counts[False], "metrics": len(metrics or [largest]),
                "devices": len(report.devices)})
    return out


def run(devices: int, nodes: int, hardware: list[str], repeats: int) -> list[str]:
    selection = select(hardware)
    lines = []
    small_devices, small_nodes = max(len(selection), devices // 10), max(len(selection), nodes // 10)
    results = {}
    for size, (d, n) in (("small", (small_devices, small_nodes)), ("full", (devices, nodes))):
        openmetrics, counts = generate(selection, d, n)
        with run_prometheus(openmetrics) as server:
            largest, largest_series = counts.most_common(1)[0]
            results[size] = {**asyncio.run(measure(server.url, selection, largest, repeats if size == "full" else 1,
                                                   sorted(counts), server.process.pid)),
                             "largest": largest, "largest_series": largest_series, "series": sum(counts.values()),
                             "nodes": n}
    small, full = results["small"], results["full"]
    lines.append(f"devices: {full['devices']} on {full['nodes']} nodes ({', '.join(hardware)}); series backfilled: {full['series']}")
    constant = "yes" if small["queries"] == full["queries"] else "NO"
    lines.append(f"queries per refresh: {small['queries']} at {small['devices']} devices, {full['queries']} at "
                 f"{full['devices']} devices (constant: {constant})")
    lines.append(f"floor (one raw /api/v1/query of {full['largest']}, {full['largest_series']} series): "
                 f"median {full['floor'] * 1000:.1f} ms")
    ratio = full["refresh"] / full["floor"]
    verdict = "met" if ratio <= GOAL else "NOT met"
    lines.append(f"refresh ({len(selection)} hardware, {full['queries']} queries): median {full['refresh'] * 1000:.1f} ms "
                 f"= {ratio:.2f}x floor (goal <= {GOAL:g}x: {verdict})")
    lines.append(f"one query per part ({full['separate_queries']} queries): median {full['separate'] * 1000:.1f} ms "
                 f"= {full['separate'] / full['floor']:.2f}x floor; the combined refresh takes "
                 f"{full['refresh'] / full['separate']:.2f}x its time")
    lines.append(f"second floor (each of the {full['metrics']} metrics read, raw, all in flight, {full['series']} series): "
                 f"median {full['every'] * 1000:.1f} ms; refresh = {full['refresh'] / full['every']:.2f}x that")
    floor_cpu = full["floor_cpu"] or float("nan")
    lines.append(f"cpu time of Lens and Prometheus: floor {full['floor_cpu'] * 1000:.0f} ms, refresh "
                 f"{full['refresh_cpu'] * 1000:.0f} ms ({full['refresh_cpu'] / floor_cpu:.2f}x), one query per part "
                 f"{full['separate_cpu'] * 1000:.0f} ms ({full['separate_cpu'] / floor_cpu:.2f}x)")
    lines.append(f"of which Lens: floor {full['floor_lens'] * 1000:.0f} ms, refresh {full['refresh_lens'] * 1000:.0f} ms, "
                 f"one query per part {full['separate_lens'] * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=125)
    parser.add_argument("--hardware", default="nvidia,amd,intel-xpu", help="comma-separated profile ids")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    if skip_reason():
        print(f"skipped: {skip_reason()}")
        return 0
    for line in run(args.devices, args.nodes, [h for h in args.hardware.split(",") if h], args.repeats):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
