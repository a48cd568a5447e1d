"""Pools of alike devices, read from the cluster inventory (``lens cluster inspect``'s overview).

A pool is one hardware profile's nodes that carry the same product with the same device memory:
80 GiB and 141 GiB devices of one profile plan differently. Device memory comes from the inventory, which already names its source (DRA capacity, a node label, or the profile's
``planning.memory_models`` fallback); a node discovery reading (``discovery.py``) can fill the
gap for nodes the inventory knows no memory for, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.cluster.model import GIB, NodeHardware, NodeRecord, Overview


@dataclass
class PoolNode:
    name: str
    devices: int
    whole_devices: int  # devices not carved into partitions
    free_devices: int
    schedulable: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "devices": self.devices, "whole_devices": self.whole_devices,
                "free_devices": self.free_devices, "schedulable": self.schedulable}


@dataclass
class Pool:
    profile_id: str
    display_name: str
    vendor: str
    product: str
    device_memory_bytes: int | None
    memory_source: str
    nodes: list[PoolNode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.profile_id}/{self.product}"

    @property
    def devices_per_node(self) -> int:
        """The largest node's device count: the widest parallelism one pod can take here."""
        return max((n.whole_devices for n in self.nodes if n.schedulable), default=0)

    @property
    def devices(self) -> int:
        return sum(n.devices for n in self.nodes)

    @property
    def free_devices(self) -> int:
        return sum(n.free_devices for n in self.nodes if n.schedulable)

    def replicas(self, width: int, *, free_only: bool) -> int:
        """Pods of ``width`` devices each that fit on schedulable nodes, none spanning two nodes."""
        return sum((n.free_devices if free_only else n.whole_devices) // width for n in self.nodes if n.schedulable)

    def deploy_options(self) -> list[str]:
        """``lens deploy render`` options that make a pod ask for this pool's devices (none for whole devices)."""
        return []

    def to_dict(self) -> dict[str, Any]:
        memory = self.device_memory_bytes
        return {
            "pool": self.name, "profile_id": self.profile_id, "display_name": self.display_name, "vendor": self.vendor,
            "product": self.product, "device_memory_bytes": memory,
            "device_memory_gib": round(memory / GIB, 2) if memory else None, "memory_source": self.memory_source,
            "nodes": [n.to_dict() for n in self.nodes], "devices_per_node": self.devices_per_node,
            "devices": self.devices, "free_devices": self.free_devices, "notes": list(self.notes),
        }


def whole_devices(hardware: NodeHardware) -> int:
    """Devices a pod can take whole: those its whole-device channels offer, never more than the node has.

    A node whose GPUs are partly split into MIG slices offers only the rest as whole devices; a
    node showing the same devices through a plugin and a DRA driver is capped at its device count.
    """
    offered = sum(c.allocatable for c in hardware.channels if c.kind == "device")
    return max(0, min(offered, hardware.counts.devices))


def free_whole_devices(node: NodeRecord, hardware: NodeHardware) -> int:
    """Whole devices no pod or claim holds: partitions (MIG slices, compute partitions) never count.

    The smaller of the node's available units and what its whole-device channels have free, so
    devices carved into partitions, or held through one of two channels, are not offered twice.
    """
    if not node.schedulable:
        return 0
    channel_free = sum(max(0, c.allocatable - c.allocated) for c in hardware.channels if c.kind == "device")
    return max(0, min(hardware.counts.available, channel_free, hardware.counts.devices))


def _per_device(hardware: NodeHardware) -> tuple[int | None, str]:
    vram = hardware.vram
    if vram.devices_known <= 0:
        return None, "unknown"
    return vram.total_bytes // vram.devices_known, ", ".join(sorted(vram.sources)) or "inventory"


def pools_from_overview(overview: Overview) -> tuple[list[Pool], list[str]]:
    """Accelerator pools of the overview, plus notes on what was left out and why."""
    accelerator = {b.profile_id: b for b in overview.buckets if b.accelerator}
    notes = [f"{b.profile_id}: not an accelerator pool (inventory.accelerator is false); device memory plans skip it"
             for b in overview.buckets if not b.accelerator]
    pools: dict[tuple[str, str, int | None], Pool] = {}
    for node in overview.nodes:
        for hardware in node.hardware:
            bucket = accelerator.get(hardware.profile_id)
            if bucket is None or hardware.counts.devices <= 0:
                continue
            product = ", ".join(sorted(hardware.products)) or "unknown product"
            memory, source = _per_device(hardware)
            key = (hardware.profile_id, product, memory)
            pool = pools.get(key)
            if pool is None:
                pool = pools[key] = Pool(hardware.profile_id, bucket.display_name, bucket.vendor, product, memory, source)
                if memory is None:
                    pool.notes.append("device memory unknown: no DRA capacity, memory label or planning.memory_models "
                                      f"entry for {product!r}; nothing can be judged to fit (node discovery can read it)")
            pool.nodes.append(PoolNode(node.name, hardware.counts.devices, whole_devices(hardware),
                                      free_whole_devices(node, hardware), node.schedulable))
            if hardware.counts.partitions:
                pool.notes.append(f"{node.name}: {hardware.counts.partitions} partitions are not planned; "
                                  "only whole devices count")
    return list(pools.values()), notes
