"""Smoke test of bench/inventory.py: it runs at a tiny size and prints every line it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "inventory.py"
ROW = re.compile(r"^\s*(\d+)\s+(\d+)" + r"\s+([\d.]+)" * 10 + "$")


def test_the_benchmark_prints_a_row_per_size_with_ratios_against_orjson_and_json_load_peak(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "12,24", "--pods-per-node", "3", "--repeat", "1",
                           "--keep", str(tmp_path), "--plugin-profiles", "5"], capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["nodes", "pods", "MiB", "json.load", "s", "msgspec", "s", "orjson", "s", "inventory", "s",
                                "ratio", "ms/1k", "nodes", "peak", "json", "MiB", "peak", "inv", "MiB", "ratio"]
    rows = [ROW.match(line) for line in lines[1:3]]
    assert all(rows), lines
    assert [(int(r[1]), int(r[2])) for r in rows] == [(12, 36), (24, 72)]  # type: ignore[index]
    for row in rows:
        floor, inventory, ratio = float(row[6]), float(row[7]), float(row[8])  # type: ignore[index]
        assert floor > 0 and inventory > 0
        # the ratio agrees with the printed times, within their rounding (4 decimals) and its own (2)
        low, high = (inventory - 5e-5) / (floor + 5e-5), (inventory + 5e-5) / (floor - 5e-5)
        assert low - 0.005 <= ratio <= high + 0.005
        json_peak, inventory_peak, peak_ratio = float(row[10]), float(row[11]), float(row[12])  # type: ignore[index]
        assert json_peak > 10 and inventory_peak > 10  # a Python process, measured (VmHWM), not zero
        low, high = (inventory_peak - 0.05) / (json_peak + 0.05), (inventory_peak + 0.05) / (json_peak - 0.05)
        assert low - 0.005 <= peak_ratio <= high + 0.005
    assert re.fullmatch(r"time per node, largest vs smallest size: inventory [\d.]+x, GC-paused orjson.loads [\d.]+x "
                        r"\(1\.00x is linear\)", lines[3])
    plugins = re.fullmatch(r"inventory build at 12 nodes with 5 plugin profiles: ([\d.]+) s, with the (\d+) built-ins: ([\d.]+) s, "
                           r"ratio ([\d.]+) \(goal <= 1\.2\)", lines[4])
    assert plugins, lines[4]
    crowded, builtins, plain, ratio = float(plugins[1]), int(plugins[2]), float(plugins[3]), float(plugins[4])
    assert builtins >= 6 and plain > 0
    low, high = (crowded - 5e-5) / (plain + 5e-5), (crowded + 5e-5) / (plain - 5e-5)  # the printed times' rounding
    assert low - 0.005 <= ratio <= high + 0.005
    for line, size in zip(lines[5:7], (12, 24), strict=True):
        cli = re.fullmatch(rf"lens cluster inspect -o json at {size} nodes, CPU of the process: ([\d.]+) s, of a process that "
                           r"only orjson.loads the file \(GC paused\): ([\d.]+) s, ratio ([\d.]+) \(goal <= 1\.2\)", line)
        assert cli, line
        lens, floor, ratio = float(cli[1]), float(cli[2]), float(cli[3])
        assert floor > 0 and lens > 0
        low, high = (lens - 5e-4) / (floor + 5e-4), (lens + 5e-4) / (floor - 5e-4)
        assert low - 0.005 <= ratio <= high + 0.005
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster-12.json", "cluster-24.json"]


def test_the_generated_snapshot_is_a_cluster_the_inventory_counts_as_designed(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import inventory as bench  # the bench script, imported as a module
    finally:
        sys.path.pop(0)
    from llm_d_lens.cluster.inventory import build_inventory
    from llm_d_lens.cluster.snapshot import load_snapshot

    path = tmp_path / "c.json"
    bench.write_snapshot(path, 100, 2, indent=0)
    data = build_inventory(load_snapshot(path)).to_dict()
    found = {b["profile_id"]: (b["nodes"], b["devices"], b["allocated"]) for b in data["vendors"]}
    # Per 100 nodes: 45 NVIDIA plugin + 14 NVIDIA DRA nodes of 8 GPUs, one vLLM pod holding 4 on each;
    # 14 AMD (8, 4 held), 7 TPU (4, 2 held), 6 Gaudi (8, 4 held), 4 Intel DRA (8, 4 held by a claim);
    # 5 CPU nodes by label and 5 with a dra.cpu slice of two shared NUMA devices.
    assert found == {"nvidia": (59, 472, 236), "amd": (14, 112, 56), "google-tpu": (7, 28, 14), "intel-gaudi": (6, 48, 24),
                     "intel-xpu": (4, 32, 16), "cpu": (10, 10, 0)}
    assert data["total_gpu_count"] == 472 + 112 + 28 + 48 + 32
