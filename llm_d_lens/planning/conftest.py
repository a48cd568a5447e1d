"""Inventories built from the cluster domain's own records, shaped as `lens cluster inspect` builds them."""

from __future__ import annotations

import pytest

from llm_d_lens.cluster.model import (
    GIB,
    Bucket,
    Channel,
    Counts,
    NodeHardware,
    NodeRecord,
    Overview,
    Vram,
)


def node(name: str, profile: str, devices: int, memory_gib: float | None, *, allocated: int = 0,
         product: str = "Example-GPU", ready: bool = True, source: str = "node-label:example.com/gpu.memory") -> NodeRecord:
    vram = Vram()
    if memory_gib is not None:
        vram.add(int(memory_gib * GIB) * devices, devices, source)
    else:
        vram.devices_unknown = devices
    hardware = NodeHardware(profile, counts=Counts(devices=devices, allocatable=devices, allocated=allocated,
                                                   available=devices - allocated), vram=vram, products={product},
                            channels=[Channel("example.com/gpu", "extended-resource", "device", devices, devices, allocated)])
    return NodeRecord(name, ready=ready, cordoned=False, hardware=[hardware])


def overview(*nodes: NodeRecord, accelerator: bool = True) -> Overview:
    profiles = sorted({h.profile_id for n in nodes for h in n.hardware})
    buckets = [Bucket(p, p.upper(), "Example", accelerator) for p in profiles]
    return Overview({"kind": "snapshot", "path": "test"}, True, buckets, list(nodes), [], [], {})


@pytest.fixture
def make_node():
    return node


@pytest.fixture
def make_overview():
    return overview
