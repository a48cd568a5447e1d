"""A watched live cluster: overview latency right after an event against the same overview without events,
and the memory the watch keeps against the parsed snapshot of the same cluster.

The cluster is bench/inventory.py's synthetic one (5,000 nodes, 20 pods each, DRA slices and
claims by default). kubectl is the recording FakeRunner, answering each kind's list as the API
server does (a typed list with a resourceVersion); events are applied as the watch applies them.

It prints, in one run:

* **memory**: what the watch keeps (each kind's objects, by key) against what ``load_snapshot`` of
  the same objects keeps, both measured by one walk of ``sys.getsizeof`` over everything they
  hold, and the ratio (goal: close to 1, the watch keeping nothing but the objects);
* **latency**: the overview as the API answers it (``inventory`` + ``to_dict`` + JSON), median of
  ``--repeat`` requests with no event, then of requests each made right after a pod event, with
  the builder running as in ``lens serve``; the ratio's goal is at most 1.2;
* **catch-up**: how long after an event the answer includes it (settling plus one build), against
  one build of the parsed snapshot (the floor: what re-reading would cost without kubectl), and
  the on-demand alternative (a request that builds after each event) against the no-event answer.

    python bench/watch.py                          # 5,000 nodes
    python bench/watch.py --nodes 50 --pods-per-node 2 --repeat 3
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import inventory as synthetic  # noqa: E402  (bench/inventory.py: the synthetic cluster)

from llm_d_lens.cluster.catalog import Catalog  # noqa: E402
from llm_d_lens.cluster.inventory import build_inventory  # noqa: E402
from llm_d_lens.cluster.snapshot import load_snapshot  # noqa: E402
from llm_d_lens.cluster.source import ClusterSource  # noqa: E402
from llm_d_lens.serving.watch import DRA_DISCOVERY, KINDS  # noqa: E402
from llm_d_lens.serving.watched import WatchedCluster  # noqa: E402
from llm_d_lens.testing.fake_runner import FakeRunner  # noqa: E402

MIB = 1024 * 1024
SOURCE = ClusterSource(context="bench")


def scripted(items: list[dict[str, Any]]) -> FakeRunner:
    """kubectl answering each kind's list as the API server does."""
    runner = FakeRunner()
    runner.reply(list(DRA_DISCOVERY), json_body={"kind": "APIGroup", "preferredVersion": {"version": "v1"}})
    for kind in KINDS:
        listed = [{k: v for k, v in item.items() if k != "kind"} for item in items if item["kind"] == kind.kind]
        runner.reply(kind.list_argv("v1"), json_body={"kind": f"{kind.kind}List", "apiVersion": "v1",
                                                     "metadata": {"resourceVersion": "1000"}, "items": listed})
    return runner


def deep_size(root: Any) -> int:
    """Bytes of ``root`` and everything it holds (each object once), as ``sys.getsizeof`` counts them.

    The same walk measures the watch's kept objects and the parsed snapshot, so their ratio is fair;
    tracing allocations instead (``tracemalloc``) makes parsing a 5,000-node cluster take many minutes.
    """
    seen: set[int] = set()
    total = 0
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return total


def kept_by_watch(watch: WatchedCluster) -> int:
    """What the watch keeps: each kind's key -> object map (keys and objects)."""
    return deep_size([kind.objects for kind in watch.kinds.values()])


def kept_by_snapshot(objects: Any) -> int:
    """What a parsed snapshot keeps of the objects the inventory reads (its per-kind lists)."""
    from llm_d_lens.cluster.objects import KINDS as OBJECT_KINDS

    return deep_size([getattr(objects, attr) for attr in OBJECT_KINDS.values()])


def answer(watch: WatchedCluster) -> str:
    """What ``GET /api/v1/clusters/{name}/overview`` does with the inventory: a document, as JSON."""
    return json.dumps(watch.inventory().overview.to_dict())


def pod_event(pods: list[dict[str, Any]], number: int) -> dict[str, Any]:
    """A pod's status changing (a new resourceVersion), as a MODIFIED event carries it."""
    item = copy.deepcopy(pods[number % len(pods)])
    item["metadata"]["resourceVersion"] = str(2000 + number)
    item["status"]["startTime"] = f"2026-12-01T12:{number % 60:02d}:00Z"
    return {"type": "MODIFIED", "object": item}


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=9, help="requests per measurement; the median is printed")
    args = parser.parse_args(argv)
    Catalog()  # profile discovery happens once per process, outside the measurements

    items = list(synthetic.items(args.nodes, args.pods_per_node))
    pods = [item for item in items if item["kind"] == "Pod"]
    runner = scripted(items)
    with tempfile.TemporaryDirectory(prefix="lens-bench-watch-") as directory:
        path = Path(directory) / "cluster.json"
        synthetic.write_snapshot(path, args.nodes, args.pods_per_node, 0)
        snapshot = load_snapshot(path)
    del items
    snapshot_bytes = kept_by_snapshot(snapshot)

    watch = WatchedCluster("bench", SOURCE, runner)
    for kind in watch.kinds.values():
        kind.list()
    watch_bytes = kept_by_watch(watch)
    print(f"cluster: {args.nodes} nodes, {len(pods)} pods")
    print(f"memory: watch {watch_bytes / MIB:.1f} MiB, parsed snapshot {snapshot_bytes / MIB:.1f} MiB, "
          f"ratio {watch_bytes / snapshot_bytes:.2f}")

    catalog = Catalog()
    started = time.perf_counter()
    build_inventory(snapshot, catalog, source=SOURCE.describe())
    one_build = time.perf_counter() - started
    del snapshot

    # on demand (no builder): a request after each event builds first
    answer(watch)
    quiet = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        answer(watch)
        quiet.append(time.perf_counter() - started)
    on_demand = []
    for number in range(args.repeat):
        watch.kinds["Pod"].apply(pod_event(pods, number))
        started = time.perf_counter()
        answer(watch)
        on_demand.append(time.perf_counter() - started)

    # as `lens serve` runs: the builder rebuilds after changes, a request answers the latest build
    watch.start_builder()
    try:
        after_event, catch_up = [], []
        for number in range(args.repeat):
            generation = watch.generation
            watch.kinds["Pod"].apply(pod_event(pods, args.repeat + number))
            changed = time.perf_counter()
            answer(watch)
            after_event.append(time.perf_counter() - changed)
            while watch.inventory().generation <= generation:
                time.sleep(0.005)
            catch_up.append(time.perf_counter() - changed)
    finally:
        watch.stop()

    base, after, lag, demand = median(quiet), median(after_event), median(catch_up), median(on_demand)
    print(f"overview, no event: {base * 1000:.1f} ms; right after an event: {after * 1000:.1f} ms; "
          f"ratio {after / base:.2f} (goal <= 1.2)")
    print(f"event in the answer after {lag:.3f} s; one build of the parsed snapshot {one_build:.3f} s; "
          f"ratio {lag / one_build:.2f}")
    print(f"on demand (a request builds after each event): {demand * 1000:.1f} ms; ratio {demand / base:.2f} "
          "to the answer without events")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
