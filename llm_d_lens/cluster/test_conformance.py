"""Conformance: the real-shaped snapshots in ../shared/clusters and the shipped demo, counted by hand.

The expected figures below were worked out by reading the snapshots (and the notes describing them
in ../shared/reference/k8s-objects.md, section 4), never by running the inventory.
"""

from __future__ import annotations

from typing import Any

import pytest

from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.snapshot import load_snapshot
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.testing.cluster import shared_root

GIB = 2**30
MIB = 2**20
SHARED = shared_root()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared (or $LENS_SHARED_ROOT) is absent: no real-shaped snapshots to read")


def overview_of(name: str) -> dict[str, Any]:
    assert SHARED is not None
    return build_inventory(load_snapshot(SHARED / "clusters" / name)).to_dict()


def buckets(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["profile_id"]: b for b in data["vendors"]}


def figures(bucket: dict[str, Any]) -> tuple[int, ...]:
    return (bucket["nodes"], bucket["devices"], bucket["partitions"], bucket["allocatable"], bucket["allocated"], bucket["available"])


@needs_shared
def test_heterogeneous_small() -> None:
    data = overview_of("heterogeneous-small.json")
    found = buckets(data)
    # 2 x 8 H100 (h100-01: 4 + 4 held, h100-02: 8 held); the Pending 70B pod is unbound and holds nothing.
    assert figures(found["nvidia"]) == (2, 16, 0, 16, 16, 0)
    assert found["nvidia"]["vram"]["total_bytes"] == 16 * 81559 * MIB  # 1,304,944 MiB from GFD's per-GPU label
    assert found["nvidia"]["pending"] == {"requests": 1, "units": 4}
    # 8 MI300X, 4 + 1 held; 192 GiB each from the labeller's rounded "192G".
    assert figures(found["amd"]) == (1, 8, 0, 8, 5, 3)
    assert found["amd"]["vram"]["total_bytes"] == 8 * 192 * GIB
    # 8 Gaudi through habana.ai/gaudi, 2 held; no product is published, so VRAM is unknown, not guessed.
    assert figures(found["intel-gaudi"]) == (1, 8, 0, 8, 2, 6)
    assert (found["intel-gaudi"]["vram"]["total_bytes"], found["intel-gaudi"]["vram"]["devices_without_vram"]) == (0, 8)
    # cp-01 (QEMU VGA label) and cpu-01 (Intel NIC, ASPEED BMC labels) have no accelerator: no other bucket.
    assert set(found) == {"nvidia", "amd", "intel-gaudi"}
    assert data["total_gpu_count"] == 32
    assert (data["summary"]["accelerator_nodes"], data["summary"]["available"]) == (4, 9)
    assert data["unsupported"] == []
    holders = {n["name"]: {h["holder"]: h["count"] for hw in n["hardware"] for h in hw["holders"]} for n in data["nodes"]}
    assert holders["gpu-h100-02"] == {"llm/vllm-qwen3-235b-0": 8}  # the metrics-proxy sidecar asks for no GPU
    assert holders["cp-01"] == {} and holders["cpu-01"] == {}


@needs_shared
def test_dra_intel_cpu() -> None:
    data = overview_of("dra-intel-cpu.json")
    found = buckets(data)
    # 8 Max 1550 + 4 Max 1100, only through DRA; claims hold 4 + 2 + 1; the 405B claim (8) is unallocated.
    assert figures(found["intel-xpu"]) == (2, 12, 0, 12, 7, 5)
    assert found["intel-xpu"]["vram"]["total_bytes"] == (8 * 128 + 4 * 48) * GIB  # 1216 GiB of DRA memory capacity
    assert found["intel-xpu"]["vram"]["sources"] == ["dra-capacity"]
    assert found["intel-xpu"]["products"] == ["Max 1100", "Max 1550"]
    assert found["intel-xpu"]["pending"] == {"requests": 1, "units": 8}
    # Two grouped NUMA devices of 96 CPUs; claims consume 32 (numa0) and 16 (numa1). Not accelerators.
    assert found["cpu"]["devices"] == 2 and found["cpu"]["accelerator"] is False
    assert found["cpu"]["capacity"] == {"dra.cpu/cpu": {"total": 192, "consumed": 48}}
    assert set(found) == {"intel-xpu", "cpu"}
    assert (data["total_gpu_count"], data["dra_api"]) == (12, True)
    per_node = {n["name"]: {hw["profile_id"]: (hw["devices"], hw["allocated"]) for hw in n["hardware"]} for n in data["nodes"]}
    assert per_node == {"cp-01": {}, "cpu-spr-01": {"cpu": (2, 0)}, "xpu-max1100-01": {"intel-xpu": (4, 1)},
                        "xpu-max1550-01": {"intel-xpu": (8, 6)}}


@needs_shared
def test_every_shared_snapshot_builds_an_overview() -> None:
    assert SHARED is not None
    files = sorted((SHARED / "clusters").glob("*.json"))
    assert files, "../shared/clusters holds no snapshots"
    for path in files:
        data = build_inventory(load_snapshot(path)).to_dict()
        assert data["summary"]["nodes"] == data["objects"]["Node"] > 0, path


def test_the_demo_cluster() -> None:
    data = build_inventory(ClusterSource(demo=True).load()).to_dict()
    found = buckets(data)
    # NVIDIA: h100-01 (8, 4 + 2 held; a Failed and a Succeeded pod hold nothing), h100-02 (8, NotReady),
    # h100-mig-01 (8 physical: 4 whole + 28 MIG slices; 2 + 3 held), h200-dra-01 (8 on DRA in a pool split over
    # two generation-3 slices, a stale generation-2 slice ignored; 4 by a claim + 1 by an extended-resource claim).
    assert figures(found["nvidia"]) == (4, 32, 28, 8 + 8 + 32 + 8, 6 + 0 + 5 + 5, 2 + 8 + 27 + 3)
    assert found["nvidia"]["schedulable"] == {"nodes": 3, "allocatable": 48, "available": 32}
    assert found["nvidia"]["vram"]["total_bytes"] == (24 * 81559 + 8 * 143771) * MIB
    assert found["nvidia"]["request_models"] == ["dra", "extended-resource"]
    assert found["nvidia"]["pending"] == {"requests": 1, "units": 8}
    # AMD: mi300x-01 fully held by a 405B pod; mi300x-02 is labelled, cordoned, and advertises nothing yet.
    assert figures(found["amd"]) == (2, 8, 0, 8, 8, 0)
    assert found["amd"]["nodes_without_devices"] == 1
    # Intel XPU on DRA: 8 Max 1550, one tainted unhealthy (not allocatable), 4 held.
    assert figures(found["intel-xpu"]) == (1, 8, 0, 7, 4, 3)
    # Gaudi on DRA: 8 "Gaudi3" devices without memory capacity: 128 GiB each from the memory model.
    assert figures(found["intel-gaudi"]) == (1, 8, 0, 8, 2, 6)
    assert found["intel-gaudi"]["vram"] == {"total_bytes": 8 * 128 * GIB, "total_gib": 1024.0, "devices_with_vram": 8,
                                            "devices_without_vram": 0, "sources": ["memory-model:Gaudi3"]}
    # TPU v6e: 4 chips x 32 GiB, all held.
    assert figures(found["google-tpu"]) == (1, 4, 0, 4, 4, 0)
    assert found["google-tpu"]["vram"]["total_bytes"] == 4 * 32 * GIB
    # CPU pool: two NUMA devices of 112 CPUs, 32 consumed.
    assert found["cpu"]["capacity"] == {"dra.cpu/cpu": {"total": 224, "consumed": 32}}
    assert data["total_gpu_count"] == 32 + 8 + 8 + 8 + 4
    # the NICs are network devices now (issue 31), no longer "not claimed by any profile"
    assert data["unsupported"] == []
    assert [(n["profile_id"], n["nodes"], n["nics"], n["handles"], n["via"]) for n in data["network"]] == [
        ("dranet", 1, 2, 2, ["dra"]), ("rdma-shared-device", 2, 2, 2000, ["extended-resource"])]
    assert data["summary"]["nics"] == 4 and data["total_gpu_count"] == 32 + 8 + 8 + 8 + 4
    assert {n["name"] for n in data["nodes"] if not n["schedulable"]} == {"gpu-h100-02", "gpu-mi300x-02"}
