"""The cluster overview: per-hardware buckets, per-node detail, what no profile claims.

Plain records with a ``to_dict`` in snake_case like every Lens document; building thousands of node
records must stay cheap, and the output shape is documented in ``docs/cluster.md``. They are msgspec
Structs (cheaper to define and to make than dataclasses; a dataclass is built by ``exec`` when its
module is imported, on every command's start-up). The two that keep encoded bytes beside their
fields are not compared (``eq=False``): nothing compares whole overviews, and their JSON is what
tests and clients compare.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import msgspec

GIB = 2**30


def _number(value: Decimal) -> int | str:
    return int(value) if value == value.to_integral_value() else str(value.normalize())


class Vram(msgspec.Struct):
    """Device memory of a set of devices; each figure says where it was read."""

    total_bytes: int = 0
    devices_known: int = 0
    devices_unknown: int = 0
    sources: set[str] = msgspec.field(default_factory=set)

    def add(self, amount: int, devices: int, source: str) -> None:
        self.total_bytes += amount
        self.devices_known += devices
        self.sources.add(source)

    def merge(self, other: Vram) -> None:
        self.total_bytes += other.total_bytes
        self.devices_known += other.devices_known
        self.devices_unknown += other.devices_unknown
        self.sources |= other.sources

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_bytes": self.total_bytes,
            "total_gib": round(self.total_bytes / GIB, 2),
            "devices_with_vram": self.devices_known,
            "devices_without_vram": self.devices_unknown,
            "sources": sorted(self.sources),
        }


class Channel(msgspec.Struct):
    """One way devices are advertised on a node: an extended resource, or a DRA driver's devices."""

    name: str
    via: str  # "extended-resource" | "dra"
    kind: str  # "device" | "partition"
    capacity: int = 0
    allocatable: int = 0
    allocated: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "via": self.via, "kind": self.kind, "capacity": self.capacity,
                "allocatable": self.allocatable, "allocated": self.allocated}


class Counts(msgspec.Struct):
    """Figures summed the same way for a node's hardware and for a whole bucket."""

    devices: int = 0
    partitions: int = 0
    allocatable: int = 0
    allocated: int = 0
    available: int = 0
    overcommitted: int = 0
    #: time-slicing / MPS replicas: schedulable shares of the physical devices above, never extra devices
    shares: int = 0

    def add(self, other: Counts) -> None:
        self.devices += other.devices
        self.partitions += other.partitions
        self.shares += other.shares
        self.allocatable += other.allocatable
        self.allocated += other.allocated
        self.available += other.available
        self.overcommitted += other.overcommitted

    def to_dict(self) -> dict[str, Any]:
        return {"devices": self.devices, "partitions": self.partitions, "allocatable": self.allocatable,
                "allocated": self.allocated, "available": self.available, "overcommitted": self.overcommitted,
                "shares": self.shares}


class Sharing(msgspec.Struct):
    """How a node's devices are shared: replicas per physical device and the strategy, as published."""

    strategy: str | None = None  # "time-slicing" | "mps" | ... (the node's label), None when not published
    replicas: int = 1
    resources: list[str] = msgspec.field(default_factory=list)  # the resources advertising shares

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "replicas": self.replicas, "resources": list(self.resources)}


class NodeNetwork(msgspec.Struct):
    """One network device profile on one node: NICs counted once, however many names advertise them."""

    profile_id: str
    pairing: str
    nics: int = 0
    handles: int = 0  # schedulable units (a shared device's handles, one per VF or interface otherwise)
    allocated: int = 0
    via: set[str] = msgspec.field(default_factory=set)  # "extended-resource" | "dra"
    resources: list[str] = msgspec.field(default_factory=list)
    other_devices: int = 0  # DRA devices of the driver that are not NICs of this profile (no RDMA)

    def to_dict(self) -> dict[str, Any]:
        return {"profile_id": self.profile_id, "pairing": self.pairing, "nics": self.nics, "handles": self.handles,
                "allocated": self.allocated, "via": sorted(self.via), "resources": list(self.resources),
                "other_devices": self.other_devices}


class NodeHardware(msgspec.Struct):
    """One profile's hardware on one node."""

    profile_id: str
    counts: Counts = msgspec.field(default_factory=Counts)
    vram: Vram = msgspec.field(default_factory=Vram)
    products: set[str] = msgspec.field(default_factory=set)
    request_models: set[str] = msgspec.field(default_factory=set)
    channels: list[Channel] = msgspec.field(default_factory=list)
    capacity: dict[str, list[Decimal]] = msgspec.field(default_factory=dict)  # consumable capacity: [total, consumed]
    holders: dict[str, int] = msgspec.field(default_factory=dict)
    present_by_labels: bool = False
    notes: list[str] = msgspec.field(default_factory=list)
    sharing: Sharing | None = None
    #: declared quantities (virtual-GPU memory MiB, compute percent): resource -> [capacity, allocatable]
    fractional: dict[str, list[int]] = msgspec.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile_id": self.profile_id,
            **self.counts.to_dict(),
            "sharing": self.sharing.to_dict() if self.sharing else None,
            "fractional": {name: {"capacity": c, "allocatable": a} for name, (c, a) in sorted(self.fractional.items())},
            "vram": self.vram.to_dict(),
            "products": sorted(self.products),
            "request_models": sorted(self.request_models),
            "present_by_labels": self.present_by_labels,
            "channels": [c.to_dict() for c in self.channels],
            "capacity": capacity_dict(self.capacity),
            "holders": [{"holder": who, "count": n} for who, n in sorted(self.holders.items())],
            "notes": list(self.notes),
        }


class NodeRecord(msgspec.Struct, eq=False):
    name: str
    ready: bool
    cordoned: bool
    hardware: list[NodeHardware] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    network: list[NodeNetwork] = msgspec.field(default_factory=list)
    #: ``to_dict`` as the API's JSON, once encoded (a record is not changed after it is counted)
    _json: bytes | None = None
    _digest: bytes | None = None

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.cordoned

    def json(self) -> bytes:
        """:meth:`to_dict` encoded as the API encodes it, kept: an answer re-encodes only the nodes that changed."""
        found = self._json
        if found is None:
            found = self._json = dumps(self.to_dict())
        return found

    def digest(self) -> bytes:
        """A short hash of :meth:`json`, kept: a live answer's weak tag is made of these, not of megabytes."""
        found = self._digest
        if found is None:
            import hashlib

            found = self._digest = hashlib.blake2b(self.json(), digest_size=8).digest()
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ready": self.ready, "cordoned": self.cordoned, "schedulable": self.schedulable,
                "hardware": [h.to_dict() for h in self.hardware], "network": [n.to_dict() for n in self.network],
                "notes": list(self.notes)}


class Bucket(msgspec.Struct):
    """Everything one hardware profile has in the cluster."""

    profile_id: str
    display_name: str
    vendor: str
    accelerator: bool
    nodes: int = 0
    counts: Counts = msgspec.field(default_factory=Counts)
    schedulable_nodes: int = 0
    schedulable: Counts = msgspec.field(default_factory=Counts)
    vram: Vram = msgspec.field(default_factory=Vram)
    products: set[str] = msgspec.field(default_factory=set)
    request_models: set[str] = msgspec.field(default_factory=set)
    capacity: dict[str, list[Decimal]] = msgspec.field(default_factory=dict)
    pending_requests: int = 0  # unbound pods and unallocated claims asking for this hardware
    pending_units: int = 0
    nodes_without_devices: int = 0
    shared_nodes: int = 0  # nodes whose devices are shared (time-slicing, MPS)
    fractional: dict[str, list[int]] = msgspec.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile_id": self.profile_id,
            "display_name": self.display_name,
            "vendor": self.vendor,
            "accelerator": self.accelerator,
            "nodes": self.nodes,
            **self.counts.to_dict(),
            "schedulable": {"nodes": self.schedulable_nodes, "allocatable": self.schedulable.allocatable,
                            "available": self.schedulable.available},
            "vram": self.vram.to_dict(),
            "products": sorted(self.products),
            "request_models": sorted(self.request_models),
            "capacity": capacity_dict(self.capacity),
            "pending": {"requests": self.pending_requests, "units": self.pending_units},
            "nodes_without_devices": self.nodes_without_devices,
            "shared_nodes": self.shared_nodes,
            "fractional": {name: {"capacity": c, "allocatable": a} for name, (c, a) in sorted(self.fractional.items())},
        }


class Unsupported(msgspec.Struct):
    """A resource, DRA driver or device class seen in the cluster that no profile claims."""

    kind: str  # "resource" | "dra-driver" | "device-class"
    name: str
    nodes: set[str] = msgspec.field(default_factory=set)
    quantity: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "nodes": sorted(self.nodes), "quantity": self.quantity}


class NetworkBucket(msgspec.Struct):
    """Everything one network device profile has in the cluster."""

    profile_id: str
    display_name: str
    pairing: str
    benchmark_resource: str
    nodes: int = 0
    nics: int = 0
    handles: int = 0
    allocated: int = 0
    via: set[str] = msgspec.field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {"profile_id": self.profile_id, "display_name": self.display_name, "pairing": self.pairing,
                "benchmark_resource": self.benchmark_resource, "nodes": self.nodes, "nics": self.nics,
                "handles": self.handles, "allocated": self.allocated, "via": sorted(self.via)}


class Overview(msgspec.Struct, eq=False):
    source: dict[str, Any]
    dra_api: bool | None
    buckets: list[Bucket]
    nodes: list[NodeRecord]
    unsupported: list[Unsupported]
    notes: list[str]
    object_counts: dict[str, int]
    network: list[NetworkBucket] = msgspec.field(default_factory=list)
    #: node counts kept as nodes come and go (``cluster/state.py``): nodes, ready, not_ready, cordoned, accelerator
    node_totals: dict[str, int] | None = None
    #: each node's ``NodeRecord.json()`` and ``digest()`` in ``nodes``' order, when the state keeps them
    #: (``InventoryState.keep_encoded``); None: ask the records
    node_json: list[bytes] | None = None
    node_digests: list[bytes] | None = None

    def nodes_json(self) -> list[bytes]:
        """Each node's :meth:`NodeRecord.json` in ``nodes``' order: the state's kept list when it keeps one."""
        return self.node_json if self.node_json is not None else [record.json() for record in self.nodes]

    def nodes_digest(self) -> list[bytes]:
        """Each node's :meth:`NodeRecord.digest` in ``nodes``' order: the state's kept list when it keeps one."""
        return self.node_digests if self.node_digests is not None else [record.digest() for record in self.nodes]

    @property
    def total_gpu_count(self) -> int:
        return sum(b.counts.devices for b in self.buckets if b.accelerator)

    def summary(self) -> dict[str, Any]:
        accelerators = [b for b in self.buckets if b.accelerator]
        accelerator_ids = {b.profile_id for b in accelerators}
        vram = Vram()
        for bucket in accelerators:
            vram.merge(bucket.vram)
        totals = self.node_totals
        if totals is None:
            totals = {"nodes": len(self.nodes), "ready": sum(1 for n in self.nodes if n.ready),
                      "not_ready": sum(1 for n in self.nodes if not n.ready),
                      "cordoned": sum(1 for n in self.nodes if n.cordoned),
                      "accelerator": sum(1 for n in self.nodes if any(
                          h.counts.devices or h.counts.partitions for h in n.hardware if h.profile_id in accelerator_ids))}
        return {
            "nodes": totals["nodes"],
            "ready_nodes": totals["ready"],
            "not_ready_nodes": totals["not_ready"],
            "cordoned_nodes": totals["cordoned"],
            "accelerator_nodes": totals["accelerator"],
            "total_gpu_count": self.total_gpu_count,
            "partitions": sum(b.counts.partitions for b in accelerators),
            "shares": sum(b.counts.shares for b in accelerators),
            "nics": sum(n.nics for n in self.network),
            "allocatable": sum(b.counts.allocatable for b in accelerators),
            "allocated": sum(b.counts.allocated for b in accelerators),
            "available": sum(b.counts.available for b in accelerators),
            "schedulable_available": sum(b.schedulable.available for b in accelerators),
            "vram": vram.to_dict(),
        }

    def to_dict(self, nodes: bool = True) -> dict[str, Any]:
        """The overview as a document; without ``nodes`` the per-node detail is left out (a fleet reads that).

        With the cyclic collector paused: the document holds no cycle, and on a big cluster the
        collections its containers would set off walk them again and again (6 to 18 us per node
        from 500 to 5,000 nodes before).
        """
        from llm_d_lens.cluster.snapshot import gc_paused

        with gc_paused():
            return self._document(nodes)

    def _document(self, nodes: bool) -> dict[str, Any]:
        if not nodes:
            return {"source": self.source, "dra_api": self.dra_api, "total_gpu_count": self.total_gpu_count,
                    "summary": self.summary(), "vendors": [b.to_dict() for b in self.buckets],
                    "unsupported": [u.to_dict() for u in self.unsupported],
                    "network": [n.to_dict() for n in self.network], "notes": list(self.notes),
                    "objects": dict(self.object_counts)}
        return {
            "source": self.source,
            "dra_api": self.dra_api,
            "total_gpu_count": self.total_gpu_count,
            "summary": self.summary(),
            "vendors": [b.to_dict() for b in self.buckets],
            "nodes": [n.to_dict() for n in self.nodes],
            "unsupported": [u.to_dict() for u in self.unsupported],
            "network": [n.to_dict() for n in self.network],
            "notes": list(self.notes),
            "objects": dict(self.object_counts),
        }


def dumps(document: Any) -> bytes:
    """JSON bytes as the API writes them (``web/conditional.encode``: compact, UTF-8, no NaN)."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


def capacity_dict(capacity: dict[str, list[Decimal]]) -> dict[str, Any]:
    return {name: {"total": _number(total), "consumed": _number(consumed)}
            for name, (total, consumed) in sorted(capacity.items())}
