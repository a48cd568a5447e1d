"""Pools of alike devices, read from the cluster inventory (``lens cluster inspect``'s overview).

A pool is one hardware profile's nodes that carry the same product with the same device memory:
80 GiB and 141 GiB devices of one profile plan differently. A partition (a device slice, a compute
partition) the inventory counts is a pool of its own, one per partition name, with one
partition's memory from the profile's ``planning.partition_memory`` rules; a pod takes one
partition (engines do not shard a model over partitions of a device). Device memory comes from the inventory, which already names its source (DRA capacity, a node label, or the profile's
``planning.memory_models`` fallback); a node discovery reading (``discovery.py``) can fill the
gap for nodes the inventory knows no memory for, and says so.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from llm_d_lens.cluster.model import GIB, NodeHardware, NodeRecord, Overview


class PoolNode(msgspec.Struct):
    name: str
    devices: int
    whole_devices: int  # devices not carved into partitions
    free_devices: int
    schedulable: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "devices": self.devices, "whole_devices": self.whole_devices,
                "free_devices": self.free_devices, "schedulable": self.schedulable}


class Pool(msgspec.Struct):
    profile_id: str
    display_name: str
    vendor: str
    product: str
    device_memory_bytes: int | None
    memory_source: str
    nodes: list[PoolNode] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    partition: str | None = None  # the partition channel (an extended resource or a DRA driver); None: whole devices
    partition_via: str | None = None  # "extended-resource" | "dra"

    @property
    def name(self) -> str:
        suffix = f":{self.partition.rsplit('/', 1)[-1]}" if self.partition else ""
        return f"{self.profile_id}/{self.product}{suffix}"

    @property
    def devices_per_node(self) -> int:
        """The largest node's device count: the widest parallelism one pod can take here (one partition)."""
        widest = max((n.whole_devices for n in self.nodes if n.schedulable), default=0)
        return min(widest, 1) if self.partition else widest

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
        return ["--resource", self.partition] if self.partition and self.partition_via == "extended-resource" else []

    def to_dict(self) -> dict[str, Any]:
        memory = self.device_memory_bytes
        return {
            "pool": self.name, "profile_id": self.profile_id, "display_name": self.display_name, "vendor": self.vendor,
            "product": self.product, "device_memory_bytes": memory,
            "device_memory_gib": round(memory / GIB, 2) if memory else None, "memory_source": self.memory_source,
            "partition": self.partition, "partition_via": self.partition_via,
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


def pools_from_overview(overview: Overview, profiles: dict[str, Any] | None = None) -> tuple[list[Pool], list[str]]:
    """Accelerator pools of the overview (whole devices, and partitions ``profiles`` know the memory of),
    plus notes on what was left out and why. ``profiles``: id -> profile; default the registry's."""
    if profiles is None:
        from llm_d_lens.hardware.registry import get_registry

        profiles = {p.id: p for p in get_registry().profiles()}
    accelerator = {b.profile_id: b for b in overview.buckets if b.accelerator}
    notes = [f"{b.profile_id}: not an accelerator pool (inventory.accelerator is false); device memory plans skip it"
             for b in overview.buckets if not b.accelerator]
    pools: dict[tuple[str, str, int | None, str | None], Pool] = {}
    for node in overview.nodes:
        for hardware in node.hardware:
            bucket = accelerator.get(hardware.profile_id)
            if bucket is None:
                continue
            product = ", ".join(sorted(hardware.products)) or "unknown product"
            memory, source = _per_device(hardware)
            if hardware.counts.devices > 0:
                key = (hardware.profile_id, product, memory, None)
                pool = pools.get(key)
                if pool is None:
                    pool = pools[key] = Pool(hardware.profile_id, bucket.display_name, bucket.vendor, product, memory, source)
                    if memory is None:
                        pool.notes.append("device memory unknown: no DRA capacity, memory label or planning.memory_models "
                                          f"entry for {product!r}; nothing can be judged to fit (node discovery can read it)")
                pool.nodes.append(PoolNode(node.name, hardware.counts.devices, whole_devices(hardware),
                                          free_whole_devices(node, hardware), node.schedulable))
            profile = profiles.get(hardware.profile_id)
            for channel in hardware.channels:
                if channel.kind != "partition" or channel.capacity <= 0:
                    continue
                if memory is None and profile is not None:  # a node of partitions only publishes no device memory
                    memory = _memory_model(profile, hardware.products)
                rules = getattr(getattr(profile, "planning", None), "partition_memory", [])
                size, size_source = partition_memory(channel.name, memory, rules)
                key = (hardware.profile_id, product, size, channel.name)
                part = pools.get(key)
                if part is None:
                    part = pools[key] = Pool(hardware.profile_id, bucket.display_name, bucket.vendor, product, size,
                                             size_source, partition=channel.name, partition_via=channel.via)
                    part.notes.append("partitions: one a pod (engines do not shard a model over partitions)")
                    if size is None:
                        part.notes.append(f"partition memory unknown: {size_source}; nothing can be judged to fit")
                free = max(0, channel.allocatable - channel.allocated) if node.schedulable else 0
                part.nodes.append(PoolNode(node.name, channel.capacity, channel.allocatable, free, node.schedulable))
    return list(pools.values()), notes


def _memory_model(profile: Any, products: set[str]) -> int | None:
    """A product's ``planning.memory_models`` memory (names matched loosely), for a node that publishes none."""
    from llm_d_lens.cluster.catalog import product_key

    wanted = {product_key(p) for p in products}
    for name, model in profile.planning.memory_models.items():
        if product_key(name) in wanted:
            return int(model.memory_gib * GIB)
    return None


def partition_memory(channel: str, device_memory: int | None, rules: list[Any]) -> tuple[int | None, str]:
    """One partition's memory by the first rule matching the channel's name, and that rule as the source.

    A rule reads the memory from the name (a slice named for its size), or the parts a device is split
    into, then one part holds ``device_memory`` divided by them. None, with why, when neither is known.
    """
    units = {"GB": 10**9, "GiB": GIB, "MiB": 2**20}
    for rule in rules:
        match = re.fullmatch(rule.pattern, channel)
        if match is None:
            continue
        if rule.memory_group is not None:
            return int(float(match.group(rule.memory_group)) * units[rule.memory_unit]), \
                f"partition-name:{channel} ({rule.memory_unit} in the name)"
        mode = match.group(rule.split_group)
        parts = rule.splits.get(mode)
        if parts is None:
            return None, f"planning.partition_memory splits has no {mode!r} (from {channel})"
        if device_memory is None:
            return None, f"{channel}: the device's memory is not known, so its 1/{parts} is not either"
        return device_memory // parts, f"partition-split:{channel} (1/{parts} of the device's {device_memory / GIB:,.1f} GiB)"
    return None, f"no planning.partition_memory rule of the profile matches {channel!r}"
