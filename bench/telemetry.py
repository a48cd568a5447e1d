"""How one telemetry refresh scales: queries sent and time, against a raw client sending the same requests.

A synthetic cluster (by default 1,000 devices on 125 nodes across three hardware profiles) is
generated from the profiles themselves: every metric each profile's device sources read, with the
labels its label_schema names and values its matchers accept. It is backfilled into a real
Prometheus, and a second one holds the same samples plus what the generated recording rules record
from them (Prometheus' own rule backfill, ``promtool tsdb create-blocks-from rules``).

Timed, each run alternating with the others (medians of ``--repeats``), each until the event loop has
let its finished tasks go (:func:`settled`), so every run pays for freeing what it made and nothing
of the run before:

* the refresh without rules (``read_devices``: the recorded selector finds nothing, then one query
  per hardware, all in flight) against a raw client sending the same requests the same way (the
  probe, then every hardware's query at once; httpx with Lens' limit of requests in flight, gzip
  asked for alike; one untyped msgspec JSON decode per answer, nothing else, as orjson would, which
  Lens does not install);
* the same without the probe (``--raw``) against the raw client without it;
* the refresh with recording rules (one query of the recorded selector) against one raw query of it.

On a machine others share, wall time follows their load; the CPU time a run costs Lens and the
Prometheus server together (read from /proc) is printed beside it. Each ratio is given twice: of the
medians, and the median of the runs' paired ratios (each Lens run against the raw run beside it, the
two in turn first, :func:`run_order`); a goal counts as met only when both are within it.

Goal: a refresh at most 1.2x the raw client's wall time, with and without recording rules.

    python bench/telemetry.py [--devices 1000] [--nodes 125] [--hardware nvidia,amd,intel-xpu] [--repeats 9]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from llm_d_lens.cluster.snapshot import gc_paused
from llm_d_lens.monitoring.accelerator.recorded import recorded_query
from llm_d_lens.monitoring.accelerator.refresh import refresh_query
from llm_d_lens.monitoring.accelerator.rules import rules_file, to_yaml
from llm_d_lens.monitoring.accelerator.service import Selected, read_devices, refresh_plan, select
from llm_d_lens.prometheus.client import MAX_IN_FLIGHT, PrometheusClient
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, backfill_rules, run_prometheus, skip_reason, to_openmetrics
from llm_d_lens.testing.telemetry import series_for

GOAL = 1.2
#: each Lens action and the raw client's run of the same requests, measured beside it (:func:`run_order`)
PAIRS = (("refresh", "raw"), ("unprobed", "raw_unprobed"), ("recorded", "raw_recorded"))
#: the end of the rule backfill's window [BASE_TIMESTAMP, RECORDED_AT]: each group's one evaluation lies in it
RECORDED_AT = BASE_TIMESTAMP + 60


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


def refresh_requests(selection: list[Selected]) -> list[list[str]]:
    """What a refresh sends where no recording rules run, batch by batch: the recorded selector (the probe),
    then every hardware's refresh query at once."""
    parts = refresh_plan(selection)
    return [[recorded_query([s.plan for s in selection])],
            [refresh_query(s.plan, targets="targets" in parts[s.profile.id]).promql for s in selection]]


async def measure(url: str, selection: list[Selected], largest: str, repeats: int, at: float,
                  server_pid: int | None = None, recorded_server: tuple[str, int] | None = None) -> dict[str, object]:
    """Median wall, CPU (Lens and Prometheus) and Lens CPU of each action, alternating, on ``url`` (no rules) and
    ``recorded_server`` (url, pid: the same samples with what the recording rules recorded)."""
    import httpx
    import msgspec

    limits = httpx.Limits(max_connections=MAX_IN_FLIGHT, max_keepalive_connections=MAX_IN_FLIGHT)
    requests = refresh_requests(selection)
    probe = requests[0]

    def raw(http: httpx.AsyncClient, batches: list[list[str]]):
        """The raw client: the same requests, httpx and one untyped JSON decode each, nothing else."""
        async def one(promql: str) -> object:
            response = await http.post("/api/v1/query", data={"query": promql, "time": repr(float(at))})
            return msgspec.json.decode(response.content)

        async def run() -> None:
            for batch in batches:
                await asyncio.gather(*(one(q) for q in batch))
        return run

    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(PrometheusClient(url, timeout=60))
        http = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60, limits=limits))
        actions = {
            "floor": (lambda: client.query(largest, at), server_pid),
            "refresh": (lambda: read_devices(client, selection, at=at), server_pid),
            "raw": (raw(http, requests), server_pid),
            "unprobed": (lambda: read_devices(client, selection, at=at, recorded=False), server_pid),
            "raw_unprobed": (raw(http, requests[1:]), server_pid),
        }
        if recorded_server is not None:
            recorded_url, recorded_pid = recorded_server
            rclient = await stack.enter_async_context(PrometheusClient(recorded_url, timeout=60))
            rhttp = await stack.enter_async_context(httpx.AsyncClient(base_url=recorded_url, timeout=60, limits=limits))
            actions["recorded"] = (lambda: read_devices(rclient, selection, at=at), recorded_pid)
            actions["raw_recorded"] = (raw(rhttp, [probe]), recorded_pid)
        for action, _ in actions.values():  # warm the connections and the servers' caches alike
            await action()
        wall: dict[str, list[float]] = {name: [] for name in actions}
        cpu: dict[str, list[float]] = {name: [] for name in actions}
        lens: dict[str, list[float]] = {name: [] for name in actions}
        for name in run_order(list(actions), repeats):
            action, pid = actions[name]
            # the refresh pauses the cyclic collector while it runs; the floors are given the same
            with gc_paused():
                lens_before, server_before, started = time.process_time(), _cpu(pid or 0), time.perf_counter()
                await action()
                await settled()
                wall[name].append(time.perf_counter() - started)
                lens[name].append(time.process_time() - lens_before)
                cpu[name].append(lens[name][-1] + _cpu(pid or 0) - server_before)
        counts = {}
        for name, reader in (("refresh", client), *((("recorded", rclient),) if recorded_server else ())):
            before = reader.queries_sent
            report = await read_devices(reader, selection, at=at)
            counts[name] = (reader.queries_sent - before, len(report.devices), report.recorded)
    out: dict[str, object] = {name: statistics.median(times) for name, times in wall.items()}
    out.update({f"{lens}/{raw}": statistics.median(a / b for a, b in zip(wall[lens], wall[raw], strict=True))
                for lens, raw in PAIRS if lens in wall})
    out.update({f"{name}_cpu": statistics.median(times) for name, times in cpu.items()})
    out.update({f"{name}_lens": statistics.median(times) for name, times in lens.items()})
    out.update({"queries": counts["refresh"][0], "devices": counts["refresh"][1]})
    if "recorded" in counts:
        out.update({"recorded_queries": counts["recorded"][0], "recorded_devices": counts["recorded"][1],
                    "recorded_hardware": counts["recorded"][2]})
    return out


async def settled() -> None:
    """Give the event loop the turns a run's finished tasks need to be let go, so a run's objects are freed within its
    own time. A task ``gather`` awaited holds its result until the loop next runs the callbacks its end scheduled: a
    refresh's readings (about 44,000 blocks at 1,000 devices) and the raw client's decoded answers would otherwise be
    freed inside the next run's time, whichever kind that is."""
    for _ in range(_SETTLE_TURNS):
        await asyncio.sleep(0)


#: the loop turns :func:`settled` gives (the tasks' done callbacks, then the gathering future's)
_SETTLE_TURNS = 2


def run_order(names: list[str], repeats: int) -> list[str]:
    """The timed runs, in order: every action once per repeat, each Lens action beside its raw client's run, the two
    in turn first (ABBA), so whatever a run leaves to the next (a neighbour's burst, a server still busy after the
    largest answers) falls on both alike rather than always on the same one.
    """
    paired = {name for pair in PAIRS for name in pair if all(n in names for n in pair)}
    groups = [[name] for name in names if name not in paired] + [list(pair) for pair in PAIRS if pair[0] in paired]
    return [name for repeat in range(repeats) for group in groups for name in (group if repeat % 2 == 0 else group[::-1])]


def _ms(seconds: object) -> str:
    return f"{float(seconds) * 1000:.1f} ms"  # type: ignore[arg-type]


def run(devices: int, nodes: int, hardware: list[str], repeats: int) -> list[str]:
    selection = select(hardware)
    lines = []
    small_devices, small_nodes = max(len(selection), devices // 10), max(len(selection), nodes // 10)
    results = {}
    for size, (d, n) in (("small", (small_devices, small_nodes)), ("full", (devices, nodes))):
        openmetrics, counts = generate(selection, d, n)
        largest, largest_series = counts.most_common(1)[0]
        with tempfile.TemporaryDirectory(prefix="lens-bench-") as tmp, run_prometheus(openmetrics) as server:
            recorded = None
            with contextlib.ExitStack() as stack:
                if size == "full":  # Prometheus' own rule backfill evaluates the generated rules over the samples
                    rules = Path(tmp) / "rules.yaml"
                    rules.write_text(to_yaml(rules_file(selection, alerts=False), "bench"), encoding="utf-8")
                    blocks = backfill_rules(server.url, rules, Path(tmp) / "blocks", BASE_TIMESTAMP, RECORDED_AT)
                    with_rules = stack.enter_context(run_prometheus(openmetrics, blocks=[blocks]))
                    recorded = (with_rules.url, with_rules.process.pid)
                results[size] = {**asyncio.run(measure(server.url, selection, largest, repeats if size == "full" else 1,
                                                       RECORDED_AT, server.process.pid, recorded)),
                                 "largest": largest, "largest_series": largest_series, "series": sum(counts.values()),
                                 "nodes": n}
    small, full = results["small"], results["full"]
    lines.append(f"devices: {full['devices']} on {full['nodes']} nodes ({', '.join(hardware)}); series backfilled: {full['series']}")
    constant = "yes" if small["queries"] == full["queries"] else "NO"
    lines.append(f"queries per refresh without recording rules: {small['queries']} at {small['devices']} devices, "
                 f"{full['queries']} at {full['devices']} devices (constant: {constant}; the recorded selector, then one "
                 f"per hardware)")
    lines.append(f"one raw /api/v1/query of {full['largest']} ({full['largest_series']} series): median {_ms(full['floor'])}")
    def ratios(lens: str, raw: str, goal: bool = True) -> str:
        medians, paired = full[lens] / full[raw], full[f"{lens}/{raw}"]
        verdict = f" (goal <= {GOAL:g}x: {'met' if max(medians, paired) <= GOAL else 'NOT met'})" if goal else ""
        return f"ratio {medians:.2f}x, paired {paired:.2f}x{verdict}"  # type: ignore[str-format]

    lines.append(f"refresh without rules: median {_ms(full['refresh'])}; the raw client sending the same requests the "
                 f"same way (httpx + msgspec decode, nothing else; at most {MAX_IN_FLIGHT} in flight, as Lens): "
                 f"{_ms(full['raw'])}; {ratios('refresh', 'raw')}")
    lines.append(f"refresh --raw (no probe, one query per hardware): median {_ms(full['unprobed'])}; raw client "
                 f"{_ms(full['raw_unprobed'])}; {ratios('unprobed', 'raw_unprobed', goal=False)}; the probe costs "
                 f"{_ms(full['refresh'] - full['unprobed'])}")
    every = "all" if full["recorded_hardware"] == [s.profile.id for s in selection] else f"only {full['recorded_hardware']}"
    lines.append(f"refresh with recording rules ({full['recorded_queries']} query, {full['recorded_devices']} devices, "
                 f"{every} read from recorded series): median {_ms(full['recorded'])}; one raw query of the recorded "
                 f"selector: {_ms(full['raw_recorded'])}; {ratios('recorded', 'raw_recorded')}; "
                 f"{full['recorded'] / full['refresh']:.2f}x the refresh without rules")
    lines.append("cpu time of Lens and Prometheus: " + ", ".join(
        f"{name} {full[name + '_cpu'] * 1000:.0f} ms (Lens {full[name + '_lens'] * 1000:.0f} ms)"
        for name in ("refresh", "raw", "unprobed", "raw_unprobed", "recorded", "raw_recorded")))
    lines.append(f"load average {os.getloadavg()[0]:.1f}")
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
