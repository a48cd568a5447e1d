"""A fleet in one server: N watched clusters, each a FakeRunner stream, events arriving, ``/api/v1/fleet/overview`` asked.

Each cluster is bench/inventory.py's synthetic one (by default 20 clusters of 5,000 nodes, 20 pods
each, DRA slices and claims). A child process writes each kind's list once, as the API server
answers it (a typed list with a resourceVersion), so the generator's memory is not the server's;
every cluster then lists every kind from that text through its own FakeRunner and
:class:`~llm_d_lens.serving.watched.WatchedCluster`, counts its inventory and starts its builder,
as ``lens serve`` does. Pod events (JSON lines, decoded and applied as the watch does) then
arrive at ``--rate`` a second spread over the clusters while the app answers
``GET /api/v1/fleet/overview`` (through Starlette's TestClient, in process) ``--requests`` times.

It prints the server's resident memory once every cluster is listed and counted (goal: 20 x
5,000 nodes in <= 4 GB) and the peak on the way, the fleet answer's p50 and p99 (goal p99 <=
100 ms), the longest collector pause over the requests (``gc.callbacks``), and how long the run was.

    python bench/fleet.py                                   # 20 clusters x 5,000 nodes
    python bench/fleet.py --clusters 3 --nodes 50 --requests 20
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

EVENT_PODS = 500


def write_lists(directory: Path, nodes: int, pods_per_node: int) -> None:
    """Each kind's list as the API server answers it, and a few pods to send events about (the child's work)."""
    import inventory as synthetic

    from llm_d_lens.serving.watch import KINDS

    items = list(synthetic.items(nodes, pods_per_node))
    for kind in KINDS:
        listed = [{k: v for k, v in item.items() if k != "kind"} for item in items if item["kind"] == kind.kind]
        body = {"kind": f"{kind.kind}List", "apiVersion": "v1", "metadata": {"resourceVersion": "1000"}, "items": listed}
        (directory / f"{kind.kind}.json").write_text(json.dumps(body))
    pods = [item for item in items if item["kind"] == "Pod"]
    (directory / "events.json").write_text(json.dumps(pods[:: max(1, len(pods) // EVENT_PODS)]))


def memory_mib() -> tuple[float, float]:
    """Resident memory now and its peak so far (``VmRSS``, ``VmHWM``)."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            found[line.split(":")[0]] = int(line.split()[1]) / 1024
    return found.get("VmRSS", 0.0), found.get("VmHWM", 0.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--rate", type=float, default=100.0, help="pod events a second, over all clusters")
    parser.add_argument("--requests", type=int, default=100, help="fleet answers asked")
    parser.add_argument("--write", type=Path, help=argparse.SUPPRESS)  # the child: write the lists there
    args = parser.parse_args(argv)
    if args.write is not None:
        write_lists(args.write, args.nodes, args.pods_per_node)
        return 0

    from watch import Pauses  # bench/watch.py
    from fastapi.testclient import TestClient

    from llm_d_lens.api.app import create_app
    from llm_d_lens.cluster.catalog import Catalog
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.serving import inventories, watched
    from llm_d_lens.serving.watch import DRA_DISCOVERY, KINDS
    from llm_d_lens.testing.fake_runner import FakeRunner

    Catalog()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lens-bench-fleet-") as name:
        directory = Path(name)
        subprocess.run([sys.executable, __file__, "--write", str(directory), "--nodes", str(args.nodes),
                        "--pods-per-node", str(args.pods_per_node)], check=True)
        event_pods = json.loads((directory / "events.json").read_text())
        watches = []
        for index in range(args.clusters):
            runner = FakeRunner()
            discovery = {"kind": "APIGroup", "preferredVersion": {"version": "v1"}}
            runner.reply(list(DRA_DISCOVERY), json_body=discovery)
            source = ClusterSource(context=f"c{index}")
            watch = watched.WatchedCluster(f"c{index}", source, runner)
            for kind in KINDS:
                runner.reply(kind.list_argv("v1"), stdout=(directory / f"{kind.kind}.json").read_text())
                watch.kinds[kind.kind].list()
                runner._scripts.clear()  # the list's text: a server holds none of it once listed
                runner.calls.clear()
                runner.reply(list(DRA_DISCOVERY), json_body=discovery)
            watch.inventory()  # the first count, then the collector's freeze
            with watched._lock:
                watched._watches[watched._key(source)] = watch
            watch.start_builder()
            watches.append(watch)
    listed = time.perf_counter() - started
    gc.collect()
    resident, peak = memory_mib()
    nodes = sum(len(w.kinds["Node"].objects) for w in watches)
    pods = sum(len(w.kinds["Pod"].objects) for w in watches)
    print(f"fleet: {args.clusters} clusters, {nodes} nodes, {pods} pods, listed and counted in {listed:.0f} s")
    print(f"memory: resident {resident:.0f} MiB ({resident / 1024:.2f} GiB; goal <= 4 GiB), peak {peak:.0f} MiB")

    with tempfile.TemporaryDirectory(prefix="lens-bench-fleet-") as name:
        clusters = Path(name) / "clusters.yaml"
        clusters.write_text("clusters:\n" + "".join(f"  - {{name: c{i}, context: c{i}}}\n" for i in range(args.clusters)))
        for variable in ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG",
                         "LENS_API_TOKEN"):
            os.environ.pop(variable, None)
        os.environ["LENS_CLUSTERS"] = str(clusters)
        inventories.forget()
        client = TestClient(create_app())
        first = client.get("/api/v1/fleet/overview")
        assert first.status_code == 200, first.text
        totals = first.json()["totals"]
        stop = threading.Event()
        sent = [0]

        def events() -> None:
            step = 1.0 / args.rate
            next_at = time.perf_counter()
            while not stop.is_set():
                number = sent[0]
                item = copy.deepcopy(event_pods[number % len(event_pods)])
                item["metadata"]["resourceVersion"] = str(2000 + number)
                item["status"]["startTime"] = f"2026-12-01T12:{number % 60:02d}:00Z"
                kind = watches[number % len(watches)].kinds["Pod"]
                kind.apply(kind._event(json.dumps({"type": "MODIFIED", "object": item}), []))
                sent[0] += 1
                next_at += step
                time.sleep(max(0.0, next_at - time.perf_counter()))

        sender = threading.Thread(target=events, daemon=True)
        times = []
        asked = time.perf_counter()
        with Pauses() as pauses:
            sender.start()
            for _ in range(args.requests):
                began = time.perf_counter()
                answered = client.get("/api/v1/fleet/overview")
                times.append(time.perf_counter() - began)
                assert answered.status_code == 200
                time.sleep(0.01)
            stop.set()
            sender.join()
        took = time.perf_counter() - asked
    for watch in watches:
        watch.stop()
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    print(f"fleet overview: {totals['clusters_read']} of {totals['clusters']} clusters read, "
          f"{totals['devices']} accelerator devices")
    print(f"fleet overview answers: p50 {statistics.median(times) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms "
          f"(goal <= 100 ms) of {len(times)}, while {sent[0]} pod events arrived ({sent[0] / took:.0f}/s)")
    print(f"collector: longest pause {pauses.longest * 1000:.1f} ms of {pauses.runs} runs over the "
          f"{took:.1f} s of requests (goal <= 50 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
