"""The inventory kept as a state that objects are applied to one by one: the one way an overview is counted.

A one-shot read applies every object of a snapshot (or of one ``kubectl get``) to an empty state;
a watched cluster (``serving/watched.py``) applies each watch event as it arrives. Either way an
object only touches its own part:

* a **pod** is read into its :class:`~llm_d_lens.cluster.pods.PodPart` (what it holds on which node,
  or wants while unbound) when it arrives, and the pod itself is not kept; its node is counted again;
* a **node** is checked into its :class:`~llm_d_lens.cluster.inventory.NodeBase` when it arrives (the
  object is not kept either), and its record is counted again from that, its pods' parts and its
  DRA devices;
* **ResourceSlices, ResourceClaims and DeviceClasses** are kept as decoded (they are few). A
  change re-reads only the pools whose slices changed, applies the claims again to the pools'
  devices, and counts again only the nodes whose devices came out different.

The buckets (per hardware profile) and the unclaimed resources are totals kept by adding a node's
record when it is counted and subtracting it when it is counted again or removed; sets (products,
VRAM sources) are kept as counts of the records that name them. A node's record carries its NICs
(extended resources from its base, network DRA devices from the pools) and its shared and fractional
figures; the network totals are kept the same way, by adding and subtracting records. The overview asked for after a
change is assembled from the totals and the kept records, and each record keeps its encoded JSON
(:meth:`~llm_d_lens.cluster.model.NodeRecord.json`), so an answer re-encodes only the nodes that changed.

An object the inventory cannot read raises :class:`~llm_d_lens.cluster.errors.ObjectInvalid` when it
is applied (a node or a pod: it is then left out) or when the overview is counted (a DRA object:
the caller removes it and asks again, see ``serving/watched.py``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.dra import (
    Device,
    DraDevices,
    apply_claims,
    group_pools,
    merge_pools,
    read_pool,
    unclaim,
)
from llm_d_lens.cluster.inventory import NodeBase, Rules
from llm_d_lens.cluster.model import (
    Bucket,
    Counts,
    NetworkBucket,
    NodeHardware,
    NodeNetwork,
    NodeRecord,
    Overview,
    Unsupported,
    Vram,
)
from llm_d_lens.cluster.objects import ClusterObjects
from llm_d_lens.cluster.pods import TERMINAL_PHASES, Hold, PodPart, pod_part

Key = tuple[str, str]  # (namespace or "", name)
NODE, POD, SLICE, CLASS, CLAIM = "Node", "Pod", "ResourceSlice", "DeviceClass", "ResourceClaim"
#: the kinds a state keeps, in the order an overview counts them
KINDS = (NODE, POD, SLICE, CLASS, CLAIM)
_ZERO = Decimal(0)


def key_of(item: Mapping[str, Any]) -> Key:
    metadata = item["metadata"]
    return (metadata.get("namespace") or "", metadata["name"])


class _Tally:
    """One profile's totals over the node records counted in it (what a :class:`Bucket` shows of nodes)."""

    __slots__ = ("refs", "nodes", "counts", "schedulable_nodes", "schedulable", "vram", "sources", "products",
                 "request_models", "capacity", "without_devices", "shared_nodes", "fractional")

    def __init__(self) -> None:
        self.refs = self.nodes = self.schedulable_nodes = self.without_devices = self.shared_nodes = 0
        self.counts = [0] * 7
        self.schedulable = [0] * 7
        self.fractional: dict[str, list[int]] = {}  # name -> [capacity, allocatable, records]
        self.vram = [0, 0, 0]  # total bytes, devices known, devices unknown
        self.sources: dict[str, int] = {}
        self.products: dict[str, int] = {}
        self.request_models: dict[str, int] = {}
        self.capacity: dict[str, list[Any]] = {}  # name -> [total, consumed, records]

    def add(self, hardware: NodeHardware, schedulable: bool, sign: int) -> None:
        self.refs += sign
        self.nodes += sign
        figures = _figures(hardware.counts)
        for index, value in enumerate(figures):
            self.counts[index] += sign * value
        if schedulable:
            self.schedulable_nodes += sign
            for index, value in enumerate(figures):
                self.schedulable[index] += sign * value
        vram = hardware.vram
        self.vram[0] += sign * vram.total_bytes
        self.vram[1] += sign * vram.devices_known
        self.vram[2] += sign * vram.devices_unknown
        _count_names(self.sources, vram.sources, sign)
        _count_names(self.products, hardware.products, sign)
        _count_names(self.request_models, hardware.request_models, sign)
        for name, (total, consumed) in hardware.capacity.items():
            entry = self.capacity.setdefault(name, [_ZERO, _ZERO, 0])
            entry[0] += total if sign > 0 else -total
            entry[1] += consumed if sign > 0 else -consumed
            entry[2] += sign
            if not entry[2]:
                del self.capacity[name]
        if not hardware.counts.devices and not hardware.counts.partitions:
            self.without_devices += sign
        if hardware.sharing is not None:
            self.shared_nodes += sign
        for name, (total, usable) in hardware.fractional.items():
            found = self.fractional.setdefault(name, [0, 0, 0])
            found[0] += sign * total
            found[1] += sign * usable
            found[2] += sign
            if not found[2]:
                del self.fractional[name]

    def fill(self, bucket: Bucket) -> None:
        bucket.nodes = self.nodes
        bucket.counts = Counts(*self.counts)
        bucket.schedulable_nodes = self.schedulable_nodes
        bucket.schedulable = Counts(*self.schedulable)
        bucket.vram = Vram(self.vram[0], self.vram[1], self.vram[2], set(self.sources))
        bucket.products = set(self.products)
        bucket.request_models = set(self.request_models)
        bucket.capacity = {name: [total, consumed] for name, (total, consumed, _) in self.capacity.items()}
        bucket.nodes_without_devices = self.without_devices
        bucket.shared_nodes = self.shared_nodes
        bucket.fractional = {name: [total, usable] for name, (total, usable, _) in self.fractional.items()}


def _figures(counts: Counts) -> tuple[int, int, int, int, int, int, int]:
    return (counts.devices, counts.partitions, counts.allocatable, counts.allocated, counts.available,
            counts.overcommitted, counts.shares)


class _NetTally:
    """One network device profile's totals over the node records counted in it (a :class:`NetworkBucket`)."""

    __slots__ = ("nodes", "nics", "handles", "allocated", "via")

    def __init__(self) -> None:
        self.nodes = self.nics = self.handles = self.allocated = 0
        self.via: dict[str, int] = {}

    def add(self, entry: NodeNetwork, sign: int) -> None:
        self.nodes += sign
        self.nics += sign * entry.nics
        self.handles += sign * entry.handles
        self.allocated += sign * entry.allocated
        _count_names(self.via, entry.via, sign)


def _count_names(counted: dict[str, int], names: Iterable[str], sign: int) -> None:
    for name in names:
        left = counted.get(name, 0) + sign
        if left:
            counted[name] = left
        else:
            del counted[name]


class _Unclaimed:
    """An extended resource no profile claims: on which nodes, how much in all."""

    __slots__ = ("nodes", "quantity", "refs")

    def __init__(self) -> None:
        self.nodes: dict[str, int] = {}
        self.quantity = 0
        self.refs = 0


def _signature(devices: Iterable[Device], orphans: Iterable[tuple[str, str]], dra: DraDevices,
               network: Mapping[str, tuple[int, int]]) -> tuple[Any, ...]:
    """Everything a node's record reads of its DRA devices: equal signatures, equal records."""
    return (tuple((d.driver, d.pool, d.name, d.profile_id, d.partition, d.dynamic, d.shared, d.tainted, d.product,
                   d.memory_bytes, d.counter_sets, tuple(d.capacity.items()), tuple(d.consumed.items()), d.allocated,
                   d.occupied, tuple(d.holders), bool(d.dynamic and d.allocated and not dra.parents_of(d)))
                  for d in devices), tuple(orphans), tuple(sorted(network.items())))


class InventoryState:
    """A cluster's objects as the inventory reads them, and its overview kept counted (see the module).

    Not thread-safe: a caller that applies objects from several threads holds its own lock.
    """

    def __init__(self, catalog: Catalog | None = None, source: Mapping[str, Any] | None = None, *,
                 dra_api: bool | None = None):
        self.catalog = catalog or Catalog()
        self.rules = Rules(self.catalog)
        self.source: dict[str, Any] = dict(source or {})
        self.dra_api = dra_api
        #: notes on objects met twice, and kinds not read (a snapshot's; a watch has none)
        self.duplicates: list[str] = []
        self.ignored_kinds: dict[str, int] = {}
        # what is kept of each object, by key
        self.nodes: dict[Key, NodeBase] = {}
        self.pods: dict[Key, PodPart | None] = {}
        self.slices: dict[Key, dict[str, Any]] = {}
        self.classes: dict[Key, dict[str, Any]] = {}
        self.claims: dict[Key, dict[str, Any]] = {}
        #: objects applied or removed since :meth:`settled` was last called (the server's collector policy)
        self.changes = 0
        # indexes
        self._names: dict[str, list[Key]] = {}  # node name -> node keys (one, unless namespaced twice)
        self._sorted: list[tuple[str, str]] = []  # (name, namespace) of every kept node, in answer order
        self._records: list[NodeRecord | None] = []  # their records, in the same order (None until counted)
        #: with :meth:`keep_encoded`, each record's JSON and digest in the same order (see there)
        self._encoded = False
        self._jsons: list[bytes | None] = []
        self._digests: list[bytes | None] = []
        self._held: dict[str, dict[Key, PodPart]] = {}  # node name -> the pods holding resources on it
        self._strays: set[str] = set()  # names in _held that no kept node has (kept as both change)
        self._pending: dict[str, list[int]] = {}  # resource -> [unbound pods, units] asking for it
        self._phases: dict[Key, str | None] = {}  # phases of pods that use ResourceClaims
        # counted
        self._counted: dict[Key, tuple[NodeRecord, NodeBase]] = {}
        self._dirty: set[Key] = set()
        self._tallies: dict[str, _Tally] = {}
        self._networks: dict[str, _NetTally] = {}
        self._unclaimed: dict[str, _Unclaimed] = {}
        self._totals = {"nodes": 0, "ready": 0, "not_ready": 0, "cordoned": 0, "accelerator": 0}
        # DRA, counted again when its objects change
        self._slices_dirty = self._claims_dirty = True
        self._pools: dict[tuple[str, str], tuple[int, list[dict[str, Any]], int | None, DraDevices]] = {}
        self._dra = DraDevices()
        self._dra_by_node: dict[str | None, list[Device]] = {}
        self._orphans_by_node: dict[str | None, list[tuple[str, str]]] = {}
        #: node name (None: no single node) -> network profile id -> (NICs, other devices) network DRA drivers publish
        self._network_dra: dict[str | None, dict[str, tuple[int, int]]] = {}
        self._signatures: dict[str | None, tuple[Any, ...]] = {}
        self._dra_resources: dict[str, str] = {}
        self._unclaimed_classes: list[str] = []
        self._nodeless_dirty = True
        self._nodeless: list[NodeHardware] = []
        self._nodeless_notes: list[str] = []
        self._accelerator: dict[str, bool] = {}

    @classmethod
    def from_objects(cls, objects: ClusterObjects, catalog: Catalog | None = None,
                     source: Mapping[str, Any] | None = None) -> InventoryState:
        """Every object applied to an empty state, checked in the order the inventory has always checked them
        (slices' pools, pods, claims, device classes, nodes): the first unreadable one raises."""
        state = cls(catalog, source, dra_api=objects.dra_api)
        state.duplicates = list(objects.duplicates)
        state.ignored_kinds = dict(objects.ignored_kinds)
        for item in objects.resource_slices:
            state.slices[key_of(item)] = item
        state._read_pools()
        for item in objects.pods:
            state.put(POD, item)
        for item in objects.resource_claims:
            state.claims[key_of(item)] = item
        for item in objects.device_classes:
            state.classes[key_of(item)] = item
        state._apply_claims()
        for item in objects.nodes:
            state.put(NODE, item)
        return state

    # -- applying objects ----------------------------------------------------------------------

    def kept(self, kind: str) -> dict[Key, Any]:
        """What is kept of each object of ``kind``, by key (a pod's part, a node's base, a DRA object)."""
        return {NODE: self.nodes, POD: self.pods, SLICE: self.slices, CLASS: self.classes, CLAIM: self.claims}[kind]

    def put(self, kind: str, item: dict[str, Any]) -> None:
        """An object added or changed. A node or pod the inventory cannot read raises
        :class:`ObjectInvalid` and is left out (what was kept of it before is removed)."""
        key = key_of(item)
        self.changes += 1
        if kind == POD:
            self._forget_pod(key)
            part = pod_part(item, self.catalog)
            self.pods[key] = part
            self._count_pod(key, part, 1)
        elif kind == NODE:
            self._forget_node(key)
            base = self.rules.node_base(item)
            self.nodes[key] = base
            self._know(key, base.name)
        elif kind == SLICE:
            self.slices[key] = item
            self._slices_dirty = True
        elif kind == CLAIM:
            self.claims[key] = item
            self._claims_dirty = True
        elif kind == CLASS:
            self.classes[key] = item
            self._claims_dirty = True
        else:
            raise ValueError(f"an inventory keeps no {kind!r} objects")

    def remove(self, kind: str, key: Key) -> bool:
        """An object deleted; False when nothing was kept of it."""
        if key not in self.kept(kind):
            return False
        self.changes += 1
        if kind == POD:
            self._forget_pod(key)
        elif kind == NODE:
            self._forget_node(key)
        else:
            del self.kept(kind)[key]
            if kind == SLICE:
                self._slices_dirty = True
            else:
                self._claims_dirty = True
        return True

    def replace(self, kind: str, items: Iterable[dict[str, Any]]) -> list[Any]:
        """Every object of ``kind`` at once (a new list): the ones not listed are removed.

        Returns the :class:`ObjectInvalid` errors of the objects left out, in list order.
        """
        fresh = {key_of(item): item for item in items}
        if kind in (SLICE, CLASS, CLAIM):  # their order is the list's, as a fresh read has it
            self.changes += len(fresh)
            if kind == SLICE:
                self.slices, self._slices_dirty = fresh, True
            elif kind == CLAIM:
                self.claims, self._claims_dirty = fresh, True
            else:
                self.classes, self._claims_dirty = fresh, True
            return []
        from llm_d_lens.cluster.errors import ObjectInvalid

        for key in [key for key in self.kept(kind) if key not in fresh]:
            self.remove(kind, key)
        errors: list[Any] = []
        for item in fresh.values():
            try:
                self.put(kind, item)
            except ObjectInvalid as exc:
                errors.append(exc)
        return errors

    def settled(self) -> int:
        """The changes since the last call, and the count started afresh."""
        changes, self.changes = self.changes, 0
        return changes

    def _forget_pod(self, key: Key) -> None:
        if key in self.pods:
            self._count_pod(key, self.pods.pop(key), -1)

    def _count_pod(self, key: Key, part: PodPart | None, sign: int) -> None:
        if part is None:
            return
        if part.claims:
            before = self._phases.get(key)
            if sign > 0:
                self._phases[key] = part.phase
            else:
                self._phases.pop(key, None)
            after = self._phases.get(key)
            if (before in TERMINAL_PHASES) != (after in TERMINAL_PHASES):
                self._claims_dirty = True  # a claim's note says whether its pods finished
        node = part.node
        if node:
            if part.requests:
                if sign > 0:
                    held = self._held.get(node)
                    if held is None:
                        held = self._held[node] = {}
                        if node not in self._names:
                            self._strays.add(node)
                    held[key] = part
                else:
                    held = self._held[node]
                    del held[key]
                    if not held:
                        del self._held[node]
                        self._strays.discard(node)
                self._dirty_name(node)
            return
        for resource, count in part.requests:
            entry = self._pending.setdefault(resource, [0, 0])
            entry[0] += sign
            entry[1] += sign * count
            if not entry[0]:
                del self._pending[resource]

    def _forget_node(self, key: Key) -> None:
        base = self.nodes.pop(key, None)
        if base is None:
            return
        self._dirty.add(key)
        keys = self._names[base.name]
        keys.remove(key)
        if not keys:
            del self._names[base.name]
            self._known_changed(base.name)
            if base.name in self._held:
                self._strays.add(base.name)
        index = bisect.bisect_left(self._sorted, (key[1], key[0]))
        del self._sorted[index]
        del self._records[index]
        del self._jsons[index]
        del self._digests[index]

    def _know(self, key: Key, name: str) -> None:
        self._dirty.add(key)
        keys = self._names.setdefault(name, [])
        keys.append(key)
        if len(keys) == 1:
            self._known_changed(name)
            self._strays.discard(name)
        index = bisect.bisect_left(self._sorted, (key[1], key[0]))
        self._sorted.insert(index, (key[1], key[0]))
        self._records.insert(index, None)
        self._jsons.insert(index, None)
        self._digests.insert(index, None)

    def _known_changed(self, name: str) -> None:
        if name in self._dra_by_node or name in self._orphans_by_node:
            self._nodeless_dirty = True

    def _dirty_name(self, name: str | None) -> None:
        for key in self._names.get(name or "", ()):  # type: ignore[call-overload]
            self._dirty.add(key)

    # -- counting --------------------------------------------------------------------------------

    def keep_encoded(self) -> None:
        """From now on keep each node record's encoded JSON and digest in answer order, encoded when it
        is counted, and hand both lists with every overview (``Overview.node_json``): a server answering
        this cluster's nodes then joins and tags kept bytes without touching 5,000 records per answer.
        A state nobody asks the nodes of (a one-shot read, a fleet's member) encodes nothing."""
        if self._encoded:
            return
        self._encoded = True
        for index, record in enumerate(self._records):
            if record is not None:  # the rest are counted (and encoded) by the next overview
                self._jsons[index], self._digests[index] = record.json(), record.digest()

    def overview(self) -> Overview:
        """The overview of the objects applied so far; only what changed since the last one is counted again."""
        self._read_pools()
        self._apply_claims()
        if self._nodeless_dirty:
            self._nodeless, self._nodeless_notes = self.rules.nodeless(self._dra_by_node, self._orphans_by_node,
                                                                       self._names, self._dra)
            self._nodeless_dirty = False
        for key in self._dirty:
            self._count_node(key)
        self._dirty.clear()
        return self._assemble()

    def _read_pools(self) -> None:
        """The slices' pools read again, only those whose slices changed (a pool is read as a whole)."""
        if not self._slices_dirty:
            return
        pools = {}
        for key, (generation, items, expected) in group_pools(self.slices.values()).items():
            cached = self._pools.get(key)
            if (cached is not None and cached[0] == generation and cached[2] == expected and len(cached[1]) == len(items)
                    and all(a is b for a, b in zip(cached[1], items))):
                pools[key] = cached
            else:
                pools[key] = (generation, items, expected, read_pool(*key, generation, items, expected, self.catalog))
        self._pools, self._slices_dirty, self._claims_dirty = pools, False, True

    def _apply_claims(self) -> None:
        """The claims applied again to the pools' devices; the nodes whose devices changed are counted again."""
        if not self._claims_dirty:
            return
        dra = merge_pools(pool[3] for pool in self._pools.values())
        unclaim(dra.devices.values())
        apply_claims(dra, self.claims.values(), self.catalog, self._phases)
        resources, unclaimed_classes = self.rules.device_classes(self.classes.values())
        network = self.rules.network_dra(dra)
        by_node = dra.by_node()
        orphans: dict[str | None, list[tuple[str, str]]] = {}
        for orphan in dra.orphans:
            orphans.setdefault(orphan.node, []).append((orphan.profile_id, f"{'/'.join(orphan.key)} ({orphan.holder})"))
        signatures = {name: _signature(by_node.get(name, ()), orphans.get(name, ()), dra, network.get(name, {}))
                      for name in {*by_node, *orphans, *network}}
        if resources != self._dra_resources:
            self._dirty.update(self.nodes)
        else:
            for name in {*signatures, *self._signatures}:
                if signatures.get(name) != self._signatures.get(name):
                    self._dirty_name(name)
        self._dra, self._dra_by_node, self._orphans_by_node, self._signatures = dra, by_node, orphans, signatures
        self._network_dra = network
        self._dra_resources, self._unclaimed_classes = resources, unclaimed_classes
        self._claims_dirty, self._nodeless_dirty = False, True

    def _count_node(self, key: Key) -> None:
        counted = self._counted.pop(key, None)
        if counted is not None:
            self._tally(*counted, -1)
        base = self.nodes.get(key)
        if base is None:
            return
        name = base.name
        held: dict[str, int] = {}
        holds: list[Hold] = []
        for part in self._held.get(name, {}).values():
            for resource, count in part.requests:
                held[resource] = held.get(resource, 0) + count
                holds.append(Hold(part.who, resource, count))
        record = self.rules.node_record(base, held, holds, self._dra_by_node.get(name, ()),
                                        self._orphans_by_node.get(name, ()), self._dra_resources, self._dra,
                                        self._network_dra.get(name))
        self._counted[key] = (record, base)
        index = bisect.bisect_left(self._sorted, (key[1], key[0]))
        self._records[index] = record
        if self._encoded:
            self._jsons[index], self._digests[index] = record.json(), record.digest()
        self._tally(record, base, 1)

    def _tally(self, record: NodeRecord, base: NodeBase, sign: int) -> None:
        schedulable = record.schedulable
        accelerator = False
        for hardware in record.hardware:
            tally = self._tallies.get(hardware.profile_id)
            if tally is None:
                tally = self._tallies[hardware.profile_id] = _Tally()
            tally.add(hardware, schedulable, sign)
            if not tally.refs:
                del self._tallies[hardware.profile_id]
            if (hardware.counts.devices or hardware.counts.partitions) and self._is_accelerator(hardware.profile_id):
                accelerator = True
        for entry in record.network:
            network = self._networks.get(entry.profile_id)
            if network is None:
                network = self._networks[entry.profile_id] = _NetTally()
            network.add(entry, sign)
            if not network.nodes:
                del self._networks[entry.profile_id]
        for resource, quantity in base.unclaimed:
            entry = self._unclaimed.get(resource)
            if entry is None:
                entry = self._unclaimed[resource] = _Unclaimed()
            entry.refs += sign
            entry.quantity += sign * quantity
            _count_names(entry.nodes, (base.name,), sign)
            if not entry.refs:
                del self._unclaimed[resource]
        totals = self._totals
        totals["nodes"] += sign
        totals["ready" if record.ready else "not_ready"] += sign
        if record.cordoned:
            totals["cordoned"] += sign
        if accelerator:
            totals["accelerator"] += sign

    def _is_accelerator(self, profile_id: str) -> bool:
        found = self._accelerator.get(profile_id)
        if found is None:
            found = self._accelerator[profile_id] = self.catalog.profile(profile_id).inventory.accelerator
        return found

    def _assemble(self) -> Overview:
        catalog = self.catalog
        buckets: dict[str, Bucket] = {}

        def bucket(profile_id: str) -> Bucket:
            found = buckets.get(profile_id)
            if found is None:
                profile = catalog.profile(profile_id)
                found = buckets[profile_id] = Bucket(profile.id, profile.display_name, profile.vendor,
                                                     profile.inventory.accelerator)
            return found

        for profile_id, tally in self._tallies.items():
            tally.fill(bucket(profile_id))
        for hardware in self._nodeless:
            found = bucket(hardware.profile_id)
            found.counts.add(hardware.counts)
            found.vram.merge(hardware.vram)
            found.products |= hardware.products
            found.request_models |= hardware.request_models
        for resource, (pods, units) in self._pending.items():
            role = catalog.resource(resource)
            if role is None or role.kind == "other":
                continue
            found = bucket(role.profile_id)
            found.pending_requests += pods
            found.pending_units += units
        for profile_id, (claims, units) in self._dra.pending.items():
            found = bucket(profile_id)
            found.pending_requests += claims
            found.pending_units += units

        unsupported: dict[tuple[str, str], Unsupported] = {}
        for resource, entry in self._unclaimed.items():
            unsupported[("resource", resource)] = Unsupported("resource", resource, set(entry.nodes), entry.quantity)
        for driver, unclaimed in self._dra.unclaimed.items():
            unsupported[("dra-driver", driver)] = Unsupported("dra-driver", driver, set(unclaimed.nodes),
                                                              len(unclaimed.devices))
        for class_name in self._unclaimed_classes:
            unsupported.setdefault(("device-class", class_name), Unsupported("device-class", class_name))

        notes = list(self._nodeless_notes)
        unknown: dict[tuple[str, str], int] = {}
        for node_name in self._strays:
            for part in self._held[node_name].values():
                for resource, _ in part.requests:
                    unknown[(resource, node_name)] = unknown.get((resource, node_name), 0) + 1
        for (resource, node_name), pods in sorted(unknown.items()):
            notes.append(f"{pods} pod(s) on node {node_name!r}, which is not in the cluster, hold {resource}")
        notes += self._dra.notes
        notes += self.duplicates
        if self.ignored_kinds:
            shown = ", ".join(f"{count} {kind}" for kind, count in sorted(self.ignored_kinds.items()))
            notes.append(f"ignored objects of kinds the inventory does not read: {shown}")
        for node_name, found in sorted(self._network_dra.items(), key=lambda item: item[0] or ""):
            if node_name is not None and node_name in self._names:
                continue
            for profile_id, (nics, _others) in sorted(found.items()):
                where = "not tied to a single node" if node_name is None else f"for node {node_name!r}, which is not in the cluster"
                notes.append(f"{profile_id}: {nics} DRA network device(s) published {where}")
        network: list[NetworkBucket] = []
        for profile_id in sorted(self._networks):
            tally = self._networks[profile_id]
            found = self.rules.network_bucket(profile_id)
            found.nodes, found.nics, found.handles, found.allocated = tally.nodes, tally.nics, tally.handles, tally.allocated
            found.via = set(tally.via)
            network.append(found)

        nodes: list[NodeRecord] = list(self._records)  # type: ignore[arg-type]  (every one counted above)
        ordered = sorted(buckets.values(), key=lambda b: (not b.accelerator, -b.counts.devices, b.profile_id))
        counts = {NODE: len(self.nodes), POD: len(self.pods), SLICE: len(self.slices), CLASS: len(self.classes),
                  CLAIM: len(self.claims)}
        return Overview(dict(self.source), self.dra_api, ordered, nodes,
                        sorted(unsupported.values(), key=lambda u: (u.kind, u.name)), notes, counts, network,
                        node_totals=dict(self._totals),
                        node_json=list(self._jsons) if self._encoded else None,  # type: ignore[arg-type]
                        node_digests=list(self._digests) if self._encoded else None)  # type: ignore[arg-type]
