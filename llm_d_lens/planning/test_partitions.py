"""Partitions planned: a device slice or compute partition is a pool of its own, with one partition's memory.

The demo's ``gpu-h100-mig-01`` carves 4 of its 8 H100s into 28 ``nvidia.com/mig-1g.10gb`` slices, 3 of
them held by pods (read from llm_d_lens/cluster/demo/demo-cluster.json). The compute-partition case
is the demo with ``gpu-mi300x-01`` switched to CPX: its ``amd.com/gpu`` resource replaced by 64
``amd.com/cpx_nps4`` partitions, as a node in that mode advertises them (8 GPUs x 8).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.hardware.models import PartitionMemory
from llm_d_lens.planning.catalogue import catalogue_spec
from llm_d_lens.planning.fit import FitRequest
from llm_d_lens.planning.pools import GIB, partition_memory
from llm_d_lens.planning.service import plan

DEMO = Path(__file__).parents[1] / "cluster" / "demo" / "demo-cluster.json"
MIG = "nvidia/NVIDIA-H100-80GB-HBM3:mig-1g.10gb"
CPX = "amd/AMD_Instinct_MI300X_OAM:cpx_nps4"


@pytest.fixture
def cpx_snapshot(tmp_path: Path) -> Path:
    document = json.loads(DEMO.read_text())
    for item in document["items"]:
        if item.get("kind") == "Node" and item["metadata"]["name"] == "gpu-mi300x-01":
            for section in ("allocatable", "capacity"):
                item["status"][section].pop("amd.com/gpu")
                item["status"][section]["amd.com/cpx_nps4"] = "64"
            item["metadata"]["labels"]["amd.com/gpu.compute-memory-partition"] = "cpx_nps4"
    path = tmp_path / "cpx.json"
    path.write_text(json.dumps(document))
    return path


def pools_of(model: str, source: ClusterSource) -> dict:
    return {p.pool.name: p for p in plan(catalogue_spec(model), FitRequest(context=8192), source).pools}


def test_a_mig_slice_is_a_pool_with_the_memory_its_name_carries_and_its_own_free_count():
    pools = pools_of("llama-3.2-1b", ClusterSource(demo=True))
    mig = pools[MIG]
    assert mig.pool.partition == "nvidia.com/mig-1g.10gb"
    assert mig.pool.device_memory_bytes == 10 * 10**9  # "10gb" in the name, decimal GB
    assert [(n.name, n.devices, n.whole_devices, n.free_devices) for n in mig.pool.nodes] == [("gpu-h100-mig-01", 28, 28, 25)]
    assert mig.pool.devices_per_node == 1 and [(o.tensor_parallel, o.pipeline_parallel) for o in mig.options] == [(1, 1)]
    # Llama-3.2-1B: 2.30 GiB of weights fit a 9.31 GiB slice; one pod a slice, 25 slices free
    assert mig.best is not None and mig.best.replicas_free == 25 and mig.best.replicas_total == 28
    # the whole-GPU pool still counts only the 4 uncarved GPUs of the MIG node
    whole = pools["nvidia/NVIDIA-H100-80GB-HBM3"]
    assert {n.name: n.whole_devices for n in whole.pool.nodes}["gpu-h100-mig-01"] == 4


def test_a_model_too_large_for_a_slice_says_why_and_the_table_no_longer_says_not_planned(capsys):
    mig = pools_of("llama-3.1-8b", ClusterSource(demo=True))[MIG]
    assert mig.best is None and "exceed the engine's 8.4 GiB" in mig.verdict()  # 0.9 x 9.31 GiB
    assert main(["plan", "--model", "llama-3.1-8b", "--demo", "--no-predict"]) == 0
    out = capsys.readouterr().out
    assert MIG in out and "not planned" not in out


def test_the_slice_pools_hand_off_asks_for_the_slice(capsys):
    assert main(["plan", "--model", "llama-3.2-1b", "--demo", "--no-predict", "-o", "json"]) == 0
    (pool,) = [p for p in json.loads(capsys.readouterr().out)["pools"] if p["pool"] == MIG]
    assert pool["partition"] == "nvidia.com/mig-1g.10gb" and pool["memory_source"].startswith("partition-name:")
    assert pool["hand_off"]["deploy"] == (
        "lens deploy render --guide optimized-baseline --hardware nvidia --resource nvidia.com/mig-1g.10gb "
        "--model meta-llama/Llama-3.2-1B --tensor-parallel 1 --max-model-len 8192 --replicas 25")


def test_compute_partitions_split_the_devices_memory_even_where_the_node_publishes_no_device_count(cpx_snapshot):
    pools = pools_of("llama-3.1-8b", ClusterSource(snapshot=cpx_snapshot))
    cpx = pools[CPX]
    # no whole GPUs are left and no device memory is published: the MI300X memory model's 192 GiB / 8
    assert "amd/AMD_Instinct_MI300X_OAM" not in pools
    assert cpx.pool.device_memory_bytes == 24 * GIB and "1/8 of the device's 192.0 GiB" in cpx.pool.memory_source
    assert cpx.best is not None and cpx.best.replicas_free == 64
    assert cpx.to_dict()["hand_off"]["deploy"].startswith(
        "lens deploy render --guide optimized-baseline --hardware amd --resource amd.com/cpx_nps4 ")


def test_partition_rules_and_their_refusals():
    by_name = PartitionMemory(pattern=r"^x/slice-(?P<gb>\d+)gb$", memory_group="gb", source="s")
    split = PartitionMemory(pattern=r"^x/(?P<mode>half|quarter)$", split_group="mode", splits={"half": 2, "quarter": 4}, source="s")
    assert partition_memory("x/slice-20gb", None, [by_name]) == (20 * 10**9, "partition-name:x/slice-20gb (GB in the name)")
    assert partition_memory("x/quarter", 80 * GIB, [by_name, split])[0] == 20 * GIB
    size, why = partition_memory("x/quarter", None, [split])
    assert size is None and "device's memory is not known" in why
    size, why = partition_memory("y/other", 80 * GIB, [by_name, split])
    assert size is None and "no planning.partition_memory rule" in why and "'y/other'" in why
    for bad in ({"memory_group": "gb", "split_group": "mode", "splits": {"a": 1}},  # both
                {},  # neither
                {"memory_group": "nope"},  # a group the pattern lacks
                {"split_group": "mode", "splits": {"half": 0}}):  # a split of nothing
        with pytest.raises(ValueError):
            PartitionMemory(pattern=r"^x/(?P<gb>\d+)(?P<mode>\w+)$", source="s", **bad)


def test_a_dra_partition_pool_hands_off_no_render_that_would_claim_whole_devices():
    from llm_d_lens.planning.fit import fit_pool
    from llm_d_lens.planning.pools import Pool, PoolNode
    from llm_d_lens.planning.service import PoolPlan

    model = catalogue_spec("llama-3.2-1b")
    pool = Pool("nvidia", "NVIDIA", "nvidia", "NVIDIA-H100-80GB-HBM3", 10 * 10**9, "partition-name:x",
                [PoolNode("n", 7, 7, 7, True)], partition="gpu.nvidia.com", partition_via="dra")
    plans = PoolPlan(pool, fit_pool(model, FitRequest(context=8192).checked(model), pool))
    hand_off = plans.to_dict(model, 8192)["hand_off"]
    assert hand_off["deploy"] is None and "claim the partition in the overlay" in hand_off["note"]
    assert hand_off["evaluate"].startswith("lens evaluate config --hardware nvidia")
