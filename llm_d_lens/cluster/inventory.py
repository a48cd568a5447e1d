"""Devices, partitions, VRAM and allocation per hardware profile, node by node.

How a node's hardware is counted (the rules are the profiles'; see docs/cluster.md):

* **devices** are physical: a profile's count label when the node has one (a node whose GPUs
  are all partitioned advertises ``gpu: 0`` yet holds 8 GPUs), otherwise the larger of the
  whole-device extended resources and the DRA whole devices, so the same GPUs seen through a
  device plugin and a DRA driver count once;
* **partitions** (GPU slices, compute partitions, SR-IOV functions) are counted apart from
  devices, never both;
* **allocatable / allocated / available** are in schedulable units (whole devices and partitions
  alike); available never goes below zero, an excess is reported as ``overcommitted``;
* **VRAM** comes from DRA capacity, then a node label, then the profile's memory model for the
  product, and says which.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping
from decimal import Decimal
from typing import Any

import msgspec

from llm_d_lens.cluster.catalog import Catalog, memory_label_bytes
from llm_d_lens.cluster.dra import Device, DraDevices
from llm_d_lens.cluster.errors import ObjectInvalid
from llm_d_lens.cluster.model import Channel, NetworkBucket, NodeHardware, NodeNetwork, NodeRecord, Overview, Sharing
from llm_d_lens.cluster.objects import ClusterObjects, list_at, mapping_at, string_at
from llm_d_lens.cluster.pods import Hold
from llm_d_lens.cluster.quantity import QuantityError, parse_count

#: The implicit extended resource name of a DeviceClass without ``extendedResourceName``.
IMPLICIT_CLASS_RESOURCE = "deviceclass.resource.kubernetes.io/"
_CEL_DRIVER = re.compile(r'device\.driver\s*==\s*"([^"]+)"')


def build_inventory(objects: ClusterObjects, catalog: Catalog | None = None,
                    source: Mapping[str, Any] | None = None) -> Overview:
    """The overview of a cluster's objects; an unreadable field is an error naming file and object.

    The objects are applied to an empty :class:`~llm_d_lens.cluster.state.InventoryState`: the
    one way an overview is counted, whether from a snapshot, one read of a live cluster, or a
    watch applying its events one by one.
    """
    from llm_d_lens.cluster.state import InventoryState

    try:
        return InventoryState.from_objects(objects, catalog or Catalog(), dict(source or {})).overview()
    except ObjectInvalid as exc:
        where = objects.source_of(exc.item)
        raise (exc.at(where) if where else exc) from None


class _Slot(msgspec.Struct):
    """What one node shows of one profile, gathered before it is counted."""

    profile_id: str
    plugin: dict[str, tuple[int, int, str]] = msgspec.field(default_factory=dict)  # resource -> (capacity, allocatable, kind)
    requested: dict[str, int] = msgspec.field(default_factory=dict)
    holds: list[Hold] = msgspec.field(default_factory=list)
    dra: list[Device] = msgspec.field(default_factory=list)
    orphans: list[str] = msgspec.field(default_factory=list)
    selector: dict[str, str] | None = None
    fractional: dict[str, list[int]] = msgspec.field(default_factory=dict)


class NodeBase(msgspec.Struct, eq=False):
    """What a node object itself says, checked once when it arrives (the object is not kept)."""

    name: str
    ready: bool
    cordoned: bool
    labels: dict[str, str]
    #: profile id -> extended resource -> (capacity, allocatable, kind)
    plugin: dict[str, dict[str, tuple[int, int, str]]]
    #: profile id -> the node-label selector that says it is present
    selectors: dict[str, dict[str, str]]
    #: extended resources no profile claims: (name, quantity)
    unclaimed: tuple[tuple[str, int], ...]
    #: NIC resources: (network profile id, resource, capacity, allocatable), in the node's order
    network: tuple[tuple[str, str, int, int], ...] = ()
    #: profile id -> declared quantity resource (MiB, percent) -> (capacity, allocatable)
    fractional: dict[str, dict[str, tuple[int, int]]] = msgspec.field(default_factory=dict)


class Rules:
    """How a node's hardware is counted (see the module): the catalog's rules, with a few per-profile answers cached."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self._advertises: dict[str, bool] = {}
        self._memory: dict[str, bool] = {}

    # -- one node ------------------------------------------------------------------------------

    def node_base(self, node: dict[str, Any]) -> NodeBase:
        """The node's own part; raises :class:`ObjectInvalid` for a field that cannot be read."""
        catalog = self.catalog
        metadata = node["metadata"]
        name = metadata["name"]
        labels = mapping_at(node, "metadata.labels", metadata.get("labels"))
        for key, value in labels.items():
            if type(value) is not str:  # every label rule below reads strings
                string_at(node, f'metadata.labels["{key}"]', value)
        spec = mapping_at(node, "spec", node.get("spec"))
        status = mapping_at(node, "status", node.get("status"))
        conditions = list_at(node, "status.conditions", status.get("conditions"))
        ready = any(type(c) is dict and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        capacity = mapping_at(node, "status.capacity", status.get("capacity"))
        allocatable = mapping_at(node, "status.allocatable", status.get("allocatable"))
        plugin: dict[str, dict[str, tuple[int, int, str]]] = {}
        unclaimed: list[tuple[str, int]] = []
        network: list[tuple[str, str, int, int]] = []
        fractional: dict[str, dict[str, tuple[int, int]]] = {}
        names = allocatable.keys() if capacity.keys() == allocatable.keys() else allocatable.keys() | capacity.keys()
        for resource in names:
            if "/" not in resource:
                continue
            nic = catalog.network_resource(resource)
            if nic is not None:
                network.append((nic.profile_id, resource,
                                _count(node, "capacity" if resource in capacity else "allocatable", resource,
                                       capacity.get(resource, allocatable.get(resource))),
                                _count(node, "allocatable" if resource in allocatable else "capacity", resource,
                                       allocatable.get(resource, capacity.get(resource)))))
                continue
            role = catalog.resource(resource)
            if role is None:
                if catalog.is_extended(resource):
                    unclaimed.append((resource, _quantity(capacity.get(resource, allocatable.get(resource)))))
                continue
            if role.kind == "other":
                continue
            # One side may be missing; the error then names the field the value was really read from.
            total = _count(node, "capacity" if resource in capacity else "allocatable", resource,
                           capacity.get(resource, allocatable.get(resource)))
            usable = _count(node, "allocatable" if resource in allocatable else "capacity", resource,
                            allocatable.get(resource, capacity.get(resource)))
            if role.kind == "fraction":  # a declared quantity (MiB, percent): never a device or a unit
                fractional.setdefault(role.profile_id, {})[resource] = (total, usable)
                continue
            plugin.setdefault(role.profile_id, {})[resource] = (total, usable, role.kind)
        selectors = dict(catalog.present(labels))
        return NodeBase(name, ready, spec.get("unschedulable") is True, labels, plugin, selectors, tuple(unclaimed),
                        tuple(network), fractional)

    def node_record(self, base: NodeBase, held: Mapping[str, int], holds: Iterable[Hold], devices: Iterable[Device],
                    orphans: Iterable[tuple[str, str]], dra_resources: Mapping[str, str], dra: DraDevices,
                    network_dra: Mapping[str, tuple[int, int]] | None = None) -> NodeRecord:
        """The node's record: its own part with what pods hold on it, its DRA devices and its NICs
        (``network_dra``: network profile id -> (NICs, other devices) its network DRA drivers publish)."""
        record = NodeRecord(base.name, base.ready, base.cordoned)
        slots: dict[str, _Slot] = {}
        groups: dict[str, dict[str, tuple[int, int]]] = {}
        for profile_id, resource, total, usable in base.network:
            self._network_resource(record, groups, profile_id, resource, total, usable)
        for profile_id, plugin in base.plugin.items():
            _slot(slots, profile_id).plugin.update(plugin)
        for profile_id, fractional in base.fractional.items():
            _slot(slots, profile_id).fractional.update({name: list(pair) for name, pair in fractional.items()})
        for profile_id, selector in base.selectors.items():
            _slot(slots, profile_id).selector = selector
        for device in devices:
            if device.profile_id is not None:
                _slot(slots, device.profile_id).dra.append(device)
        for profile_id, what in orphans:
            _slot(slots, profile_id).orphans.append(what)
        if held:
            self._node_usage(record, slots, held, holds, dra_resources)
        for profile_id in sorted(slots):
            record.hardware.append(self.hardware(slots[profile_id], base.labels, dra))
        self._network_usage(record, held)
        if network_dra:
            self._node_network_dra(record, network_dra)
        return record

    def _node_usage(self, record: NodeRecord, slots: dict[str, _Slot], held: Mapping[str, int], holds: Iterable[Hold],
                    dra_resources: Mapping[str, str]) -> None:
        unadvertised: dict[str, int] = {}
        for resource, count in held.items():
            role = self.catalog.resource(resource)
            if role is None or role.kind == "other":
                continue
            slot = slots.get(role.profile_id)
            if slot is not None and resource in slot.plugin:
                slot.requested[resource] = slot.requested.get(resource, 0) + count
            elif resource not in dra_resources:
                unadvertised[resource] = unadvertised.get(resource, 0) + count
        for hold in holds:
            role = self.catalog.resource(hold.resource)
            if role is not None and role.profile_id in slots and hold.resource in slots[role.profile_id].plugin:
                slots[role.profile_id].holds.append(hold)
        for resource, count in sorted(unadvertised.items()):
            record.notes.append(f"pods hold {count} {resource}, which this node does not advertise")

    def hardware(self, slot: _Slot, labels: Mapping[str, str], dra: DraDevices) -> NodeHardware:
        inventory = self.catalog.profile(slot.profile_id).inventory
        hardware = NodeHardware(slot.profile_id, present_by_labels=slot.selector is not None)
        notes, counts = hardware.notes, hardware.counts
        hardware.fractional = dict(slot.fractional)
        sharing = self._sharing(slot, inventory, labels, notes)
        hardware.sharing = sharing
        plugin = _plugin_figures(slot, hardware, sharing)
        claimed = _dra_figures(slot, hardware, dra)

        count_label = self._count_label(inventory.count_labels, labels, notes)
        if count_label is not None:
            counts.devices = max(count_label, claimed.whole)
        else:
            counts.devices = max(plugin.whole, claimed.whole)
            if plugin.shares and not plugin.whole and not claimed.whole:
                counts.devices = plugin.shares // sharing.replicas if sharing and sharing.replicas > 1 else 0
                if not counts.devices:
                    notes.append(f"{plugin.shares} share(s) advertised; the physical device count is not published "
                                 "(no count or replica label)")
        counts.shares = plugin.shares
        counts.partitions = plugin.partitions + claimed.partitions
        counts.allocated = plugin.allocated + claimed.allocated
        if plugin.units and claimed.units:
            counts.allocatable = max(plugin.allocatable, claimed.allocatable)
            counts.available = max(0, counts.allocatable - counts.allocated)
            counts.overcommitted = max(0, counts.allocated - counts.allocatable)
            notes.append(f"seen through extended resources ({plugin.units}) and a DRA driver ({claimed.units}): "
                         "the same devices, counted once")
        else:
            counts.allocatable = plugin.allocatable + claimed.allocatable
            counts.available = plugin.available + claimed.available
            counts.overcommitted = plugin.over + claimed.over
        if counts.overcommitted:
            notes.append(f"over-committed: {counts.overcommitted} more unit(s) held than allocatable")

        label_product = next((labels[key] for key in inventory.product_labels if labels.get(key)), None)
        if label_product:
            hardware.products.add(label_product)
        whole = [d for d in slot.dra if not d.partition]
        self._vram(hardware, whole, counts.devices - len(whole), label_product, labels)

        if not counts.devices and not counts.partitions and not counts.shares and not slot.dra:
            if slot.selector is not None and not plugin.whole:
                shown = ", ".join(f"{k}={v}" for k, v in sorted(slot.selector.items()))
                if self._needs_advertising(slot.profile_id):
                    notes.append(f"present by node labels ({shown}), 0 devices advertised: driver missing? "
                                 f"(lens driver status --hardware {slot.profile_id})")
                else:
                    notes.append(f"present by node labels ({shown}); this hardware needs no device advertising")
        elif not counts.devices and counts.partitions:
            notes.append(f"{counts.partitions} partition(s) advertised; the physical device count is not published "
                         "(no count label)")
        return hardware

    def _vram(self, hardware: NodeHardware, whole: list[Device], label_devices: int, label_product: str | None,
              labels: Mapping[str, str]) -> None:
        catalog, vram, profile_id = self.catalog, hardware.vram, hardware.profile_id
        if not self._has_memory(profile_id):
            return  # hardware without device memory (CPU pools): nothing is unknown
        for device in whole:
            if device.memory_bytes:
                vram.add(device.memory_bytes, 1, "dra-capacity")
                continue
            model = catalog.memory_model(profile_id, device.product)
            if model is not None:
                vram.add(model.bytes, 1, model.source)
            else:
                vram.devices_unknown += 1
        if label_devices <= 0:
            return
        for memory_label in catalog.profile(profile_id).inventory.memory_labels:
            value = labels.get(memory_label.label)
            if value is None:
                continue
            amount = memory_label_bytes(memory_label, value)
            if amount is None:
                hardware.notes.append(f"label {memory_label.label}={value!r} is not a size in {memory_label.unit}; ignored")
                continue
            if memory_label.per == "device":
                vram.add(amount * label_devices, label_devices, f"node-label:{memory_label.label}")
                return
            if not whole:  # a per-node total only describes the node when no device is counted another way
                vram.add(amount, label_devices, f"node-label:{memory_label.label}")
                return
        model = catalog.memory_model(profile_id, label_product)
        if model is not None:
            vram.add(model.bytes * label_devices, label_devices, model.source)
            return
        vram.devices_unknown += label_devices
        if label_product:
            hardware.notes.append(f"VRAM unknown for {label_devices} device(s): product {label_product!r} has no memory "
                                  "model and no memory label or capacity is published")
        else:
            known = ", ".join(catalog.memory_models(profile_id)) or "none"
            hardware.notes.append(f"VRAM unknown for {label_devices} device(s): no product or memory is published "
                                  f"(memory models: {known})")

    def _sharing(self, slot: _Slot, inventory: Any, labels: Mapping[str, str], notes: list[str]) -> Sharing | None:
        """Replicas per physical device (time-slicing, MPS), from the node's labels and share resources.

        A device plugin sharing without renaming advertises the replicas under the device's own
        resource (8 GPUs x 4 replicas = 32 ``gpu``); its replica label says so, and those units
        become shares of the devices, not devices."""
        replicas = self._count_label(inventory.replica_labels, labels, notes)
        strategy = next((labels[key] for key in inventory.sharing_labels if labels.get(key)), None)
        share_resources = sorted(r for r, (_, _, kind) in slot.plugin.items() if kind == "share")
        shared = (replicas is not None and replicas > 1 and strategy != "none") or bool(share_resources)
        if not shared:
            return None
        if not share_resources:  # replicas advertised under the whole-device resource
            share_resources = sorted(r for r, (_, _, kind) in slot.plugin.items() if kind == "device")
            for resource in share_resources:
                total, usable, _ = slot.plugin[resource]
                slot.plugin[resource] = (total, usable, "share")
        return Sharing(strategy, replicas if replicas and replicas > 0 else 1, share_resources)

    def _count_label(self, keys: list[str], labels: Mapping[str, str], notes: list[str]) -> int | None:
        for key in keys:
            value = labels.get(key)
            if value is None:
                continue
            if value.isdigit():
                return int(value)
            notes.append(f"label {key}={value!r} is not a device count; ignored")
        return None

    def _has_memory(self, profile_id: str) -> bool:
        if profile_id not in self._memory:
            profile = self.catalog.profile(profile_id)
            inventory = profile.inventory
            self._memory[profile_id] = bool(inventory.memory_labels or inventory.dra_memory_capacities
                                            or profile.planning.memory_models)
        return self._memory[profile_id]

    def _needs_advertising(self, profile_id: str) -> bool:
        if profile_id not in self._advertises:
            modes = self.catalog.profile(profile_id).effective_modes().values()
            self._advertises[profile_id] = not any(mode.request_model == "none" for mode in modes)
        return self._advertises[profile_id]

    # -- network devices --------------------------------------------------------------------------

    def _network_entry(self, record: NodeRecord, profile_id: str) -> NodeNetwork:
        for entry in record.network:
            if entry.profile_id == profile_id:
                return entry
        profile = self.catalog.network(profile_id)
        entry = NodeNetwork(profile_id, profile.network.pairing)
        record.network.append(entry)
        record.network.sort(key=lambda n: n.profile_id)
        return entry

    def _network_resource(self, record: NodeRecord, groups: dict[str, dict[str, tuple[int, int]]], profile_id: str,
                          resource: str, total: int, usable: int) -> None:
        """A NIC resource: per-device NICs count their units, one NIC named twice (rdma-0, rdma-0.IP) once;
        a shared device is one NIC pool whose units are handles."""
        role = self.catalog.network_resource(resource)
        entry = self._network_entry(record, profile_id)
        entry.via.add("extended-resource")
        entry.resources.append(resource)
        entry.resources.sort()
        group = groups.setdefault(profile_id, {})
        seen_total, seen_usable = group.get(role.nic, (0, 0))
        if entry.pairing == "shared":  # one pool of handles over the node's NICs: one NIC, many handles
            size, handles = (1 if total else 0), usable
            entry.handles += handles
            handles = seen_usable + handles
        else:  # the same NIC under two names (rdma-0 and rdma-0.IP) counts once
            size, handles = max(seen_total, total), max(seen_usable, usable)
            entry.handles += handles - seen_usable
        size = max(seen_total, size)
        entry.nics += size - seen_total
        group[role.nic] = (size, handles)

    def _network_usage(self, record: NodeRecord, held: Mapping[str, int]) -> None:
        if not held or not record.network:
            return
        for resource, count in held.items():
            role = self.catalog.network_resource(resource)
            if role is not None:
                self._network_entry(record, role.profile_id).allocated += count

    def network_dra(self, dra: DraDevices) -> dict[str | None, dict[str, tuple[int, int]]]:
        """NICs the network DRA drivers publish, per node: (NICs, other devices); their drivers are then claimed
        (taken out of ``dra.unclaimed``)."""
        found: dict[str | None, dict[str, tuple[int, int]]] = {}
        for driver in list(dra.unclaimed):
            profile_id = self.catalog.network_driver(driver)
            if profile_id is None:
                continue
            selector = self.catalog.network(profile_id).dra_selector
            for (_pool, _device), (node, attributes) in sorted(dra.unclaimed.pop(driver).details.items()):
                nic = selector is None or _flag(attributes, selector, driver)
                nics, others = found.setdefault(node, {}).get(profile_id, (0, 0))
                found[node][profile_id] = (nics + 1, others) if nic else (nics, others + 1)
        return found

    def _node_network_dra(self, record: NodeRecord, found: Mapping[str, tuple[int, int]]) -> None:
        for profile_id, (nics, others) in sorted(found.items()):
            entry = self._network_entry(record, profile_id)
            entry.via.add("dra")
            entry.nics = max(entry.nics, nics)  # the same NICs through a device plugin and DRA count once
            entry.handles = max(entry.handles, nics)
            entry.other_devices += others

    def network_bucket(self, profile_id: str) -> NetworkBucket:
        """An empty bucket for a network device profile."""
        profile = self.catalog.network(profile_id)
        resource = profile.benchmark_network_resource or next(
            iter([*profile.resource_names, *profile.device_classes, *profile.dra_drivers]), profile.id)
        return NetworkBucket(profile.id, profile.display_name, profile.network.pairing, resource)

    # -- cluster-wide ----------------------------------------------------------------------------

    def device_classes(self, classes: Iterable[dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
        """Extended resource names DRA satisfies (KEP-5004), each mapped to its device class; and the
        classes no profile claims, in order."""
        names: dict[str, str] = {}
        unclaimed: list[str] = []
        for item in classes:
            class_name = item["metadata"]["name"]
            spec = mapping_at(item, "spec", item.get("spec"))
            names[IMPLICIT_CLASS_RESOURCE + class_name] = class_name
            explicit = spec.get("extendedResourceName")
            if isinstance(explicit, str) and explicit:
                names[explicit] = class_name
            if (self.catalog.device_class(class_name) is None and self.catalog.network_class(class_name) is None
                    and not self._class_driver_claimed(item, spec)):
                unclaimed.append(class_name)
        return names, unclaimed

    def _class_driver_claimed(self, item: dict[str, Any], spec: Mapping[str, Any]) -> bool:
        for selector in list_at(item, "spec.selectors", spec.get("selectors")):
            cel = selector.get("cel") if isinstance(selector, dict) else None
            expression = cel.get("expression") if isinstance(cel, dict) else None
            for driver in _CEL_DRIVER.findall(expression if isinstance(expression, str) else ""):
                if self.catalog.driver(driver) is not None or self.catalog.network_driver(driver) is not None:
                    return True
        return False

    def nodeless(self, dra_by_node: Mapping[str | None, list[Device]],
                 orphans_by_node: Mapping[str | None, list[tuple[str, str]]], known: Container[str | None],
                 dra: DraDevices) -> tuple[list[NodeHardware], list[str]]:
        """DRA devices not tied to a node of this cluster: they still count in their bucket, with a note."""
        found: list[NodeHardware] = []
        notes: list[str] = []
        for node_name in sorted({n for n in (*dra_by_node, *orphans_by_node) if n not in known}, key=lambda n: n or ""):
            slots: dict[str, _Slot] = {}
            for device in dra_by_node.get(node_name, ()):
                if device.profile_id is not None:
                    _slot(slots, device.profile_id).dra.append(device)
            for profile_id, what in orphans_by_node.get(node_name, ()):
                _slot(slots, profile_id).orphans.append(what)
            for profile_id, slot in sorted(slots.items()):
                hardware = self.hardware(slot, {}, dra)
                found.append(hardware)
                where = "not tied to a single node" if node_name is None else f"for node {node_name!r}, which is not in the cluster"
                notes.append(f"{profile_id}: {hardware.counts.devices + hardware.counts.partitions} DRA device(s) "
                             f"published {where}")
        return found, notes


class _Figures(msgspec.Struct):
    """What one way of advertising (extended resources, or DRA) shows of a profile on a node."""

    whole: int = 0  # whole devices
    partitions: int = 0
    shares: int = 0  # time-slicing / MPS replicas of whole devices
    allocatable: int = 0
    allocated: int = 0
    available: int = 0
    over: int = 0  # units held beyond what is allocatable

    @property
    def units(self) -> int:
        return self.whole + self.partitions


def _plugin_figures(slot: _Slot, hardware: NodeHardware, sharing: Sharing | None = None) -> _Figures:
    figures = _Figures()
    for resource, (total, usable, kind) in sorted(slot.plugin.items()):
        used = slot.requested.get(resource, 0)
        hardware.channels.append(Channel(resource, "extended-resource", kind, total, usable, used))
        if kind == "device":
            figures.whole += total
        elif kind == "share":
            figures.shares += total
        else:
            figures.partitions += total
        figures.allocatable += usable
        figures.allocated += used
        figures.available += max(0, usable - used)
        figures.over += max(0, used - usable)
    if slot.plugin:
        hardware.request_models.add("extended-resource")
    for hold in slot.holds:
        hardware.holders[hold.pod] = hardware.holders.get(hold.pod, 0) + hold.count
    return figures


def _dra_figures(slot: _Slot, hardware: NodeHardware, dra: DraDevices) -> _Figures:
    """DRA units: whole devices and static partitions; dynamic partitions only once allocated."""
    units = [d for d in slot.dra if not d.dynamic]
    figures = _Figures(whole=sum(1 for d in units if not d.partition), partitions=sum(1 for d in units if d.partition),
                       allocatable=sum(1 for d in units if not d.tainted), allocated=sum(1 for d in units if d.in_use),
                       available=sum(1 for d in units if d.available), over=len(slot.orphans))
    for device in slot.dra:
        if device.dynamic and device.allocated and not dra.parents_of(device):
            figures.allocated += 1  # a dynamic partition of a device the slices do not list
        for holder in device.holders:
            hardware.holders[holder] = hardware.holders.get(holder, 0) + 1
        if device.product:
            hardware.products.add(device.product)
        for name, total in device.capacity.items():
            entry = hardware.capacity.setdefault(name, [Decimal(0), Decimal(0)])
            entry[0] += total
            entry[1] += device.consumed.get(name, Decimal(0))
    if slot.dra:
        hardware.request_models.add("dra")
        for driver in sorted({d.driver for d in units}):
            for partition in (False, True):
                group = [d for d in units if d.driver == driver and d.partition == partition]
                if group:
                    hardware.channels.append(Channel(driver, "dra", "partition" if partition else "device", len(group),
                                                     sum(1 for d in group if not d.tainted), sum(1 for d in group if d.in_use)))
        tainted = sum(1 for d in units if d.tainted)
        if tainted:
            hardware.notes.append(f"{tainted} DRA device(s) carry a NoSchedule/NoExecute taint and are not allocatable")
    if slot.orphans:
        figures.allocated += len(slot.orphans)
        hardware.notes.append("claims hold devices no ResourceSlice publishes: " + ", ".join(slot.orphans))
    return figures


def _flag(attributes: Mapping[str, Any], qualified: str, driver: str) -> bool:
    """A DRA attribute given qualified (``dra.net/rdma``) or bare in the driver's domain (``rdma``), as true."""
    from llm_d_lens.cluster.catalog import attribute_value

    domain, _, bare = qualified.rpartition("/")
    raw = attributes.get(qualified)
    if raw is None and domain == driver:
        raw = attributes.get(bare)
    return attribute_value(raw) is True


def _slot(slots: dict[str, _Slot], profile_id: str) -> _Slot:
    slot = slots.get(profile_id)
    if slot is None:
        slot = slots[profile_id] = _Slot(profile_id)
    return slot


def _count(node: dict[str, Any], field_name: str, resource: str, value: Any) -> int:
    try:
        return parse_count(value)
    except QuantityError as exc:
        raise ObjectInvalid(node, f'status.{field_name}["{resource}"]', value, exc.reason) from None


def _quantity(value: Any) -> int:
    """An unclaimed resource's quantity: observed, not validated (0 when it is not a count)."""
    try:
        return parse_count(value)
    except QuantityError:
        return 0
