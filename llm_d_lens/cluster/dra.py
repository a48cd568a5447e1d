"""DRA: devices from ResourceSlices, and which of them ResourceClaims hold.

ResourceSlices are read per pool (driver + pool name): only the slices of the newest pool
generation count, a pool split over several slices is read as one, and a device listed twice is
counted once. Attribute and capacity names are accepted bare (``productName``, meaning the
driver's own domain) or qualified (``gpu.example.com/productName``, ``dra.cpu/cpu``).

A device is held while a claim's ``status.allocation`` names it, whatever its pods are doing: the
scheduler keeps it in use until the claim is deallocated. Devices that allow several allocations
(consumable capacity, e.g. CPU pools) are held by the capacity each claim consumes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import msgspec

from llm_d_lens.cluster.catalog import Catalog, attribute_value
from llm_d_lens.cluster.errors import ObjectInvalid
from llm_d_lens.cluster.objects import list_at, mapping_at, string_at
from llm_d_lens.cluster.quantity import QuantityError, parse_bytes, parse_quantity

DeviceKey = tuple[str, str, str]  # (driver, pool, device)
_BLOCKING_TAINTS = frozenset({"NoSchedule", "NoExecute"})


class Device(msgspec.Struct, eq=False):
    driver: str
    pool: str
    name: str
    node: str | None
    profile_id: str | None
    partition: bool = False
    #: A partition carved on demand from shared counters (dynamic partitioning): a possibility, not a unit.
    dynamic: bool = False
    shared: bool = False
    tainted: bool = False
    product: str | None = None
    memory_bytes: int | None = None
    counter_sets: tuple[str, ...] = ()
    #: consumable capacity of a shared device, and how much of it claims use (qualified names)
    capacity: dict[str, Decimal] = msgspec.field(default_factory=dict)
    consumed: dict[str, Decimal] = msgspec.field(default_factory=dict)
    allocated: bool = False
    #: A whole device some of whose capacity a dynamic partition now holds.
    occupied: bool = False
    holders: list[str] = msgspec.field(default_factory=list)

    @property
    def exhausted(self) -> bool:
        if not self.shared or not self.capacity or not self.consumed:
            return False
        return any(self.consumed.get(key, 0) >= total for key, total in self.capacity.items() if total > 0)

    @property
    def in_use(self) -> bool:
        return self.allocated or self.occupied or self.exhausted

    @property
    def available(self) -> bool:
        return not self.tainted and not self.in_use


class UnclaimedDriver(msgspec.Struct):
    devices: set[tuple[str, str]] = msgspec.field(default_factory=set)  # (pool, device)
    nodes: set[str] = msgspec.field(default_factory=set)
    #: (pool, device) -> (node, attributes): what a network device profile reads of a driver no accelerator claims
    details: dict[tuple[str, str], tuple[str | None, dict[str, Any]]] = msgspec.field(default_factory=dict)


class OrphanAllocation(msgspec.Struct):
    """A claim holds a device no ResourceSlice publishes (a stale slice, a driver being replaced)."""

    node: str | None
    profile_id: str
    key: DeviceKey
    holder: str


class DraDevices(msgspec.Struct):
    devices: dict[DeviceKey, Device] = msgspec.field(default_factory=dict)
    unclaimed: dict[str, UnclaimedDriver] = msgspec.field(default_factory=dict)
    orphans: list[OrphanAllocation] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    #: profile id -> [unallocated claims, devices they ask for]: demand DRA has not met yet
    pending: dict[str, list[int]] = msgspec.field(default_factory=dict)
    _parents: dict[tuple[str, str, str], list[Device]] | None = None

    def by_node(self) -> dict[str | None, list[Device]]:
        nodes: dict[str | None, list[Device]] = {}
        for device in self.devices.values():
            if device.profile_id is not None:
                nodes.setdefault(device.node, []).append(device)
        return nodes

    def parents_of(self, device: Device) -> list[Device]:
        """The whole devices drawing on the same shared counters as a dynamic partition."""
        if self._parents is None:
            self._parents = {}
            for candidate in self.devices.values():
                if candidate.counter_sets and not candidate.partition:
                    for counter_set in candidate.counter_sets:
                        self._parents.setdefault((candidate.driver, candidate.pool, counter_set), []).append(candidate)
        found: list[Device] = []
        for counter_set in device.counter_sets:
            found += self._parents.get((device.driver, device.pool, counter_set), [])
        return found


#: (driver, pool name) -> (generation, the slices of that generation, resourceSliceCount when published)
Pools = dict[tuple[str, str], tuple[int, list[dict[str, Any]], "int | None"]]


def group_pools(slices: Iterable[dict[str, Any]]) -> Pools:
    """Slices by pool, only those of each pool's newest generation (each slice's pool fields checked)."""
    pools: Pools = {}
    for item in slices:
        spec = mapping_at(item, "spec", item.get("spec"))
        driver = spec.get("driver")
        if not isinstance(driver, str) or not driver:
            raise ObjectInvalid(item, "spec.driver", driver, "is not a DRA driver name")
        pool = mapping_at(item, "spec.pool", spec.get("pool"))
        pool_name = pool.get("name")
        if not isinstance(pool_name, str) or not pool_name:
            raise ObjectInvalid(item, "spec.pool.name", pool_name, "is not a pool name")
        generation = pool.get("generation", 0)
        if type(generation) is not int:
            raise ObjectInvalid(item, "spec.pool.generation", generation, "is not an integer")
        expected = pool.get("resourceSliceCount")
        key = (driver, pool_name)
        current = pools.get(key)
        if current is None or generation > current[0]:
            pools[key] = (generation, [item], expected if type(expected) is int else None)
        elif generation == current[0]:
            current[1].append(item)
    return pools


def read_pool(driver: str, pool_name: str, generation: int, pool_slices: list[dict[str, Any]], expected: int | None,
              catalog: Catalog) -> DraDevices:
    """One pool's devices, as its slices of the newest generation publish them (no claim applied yet)."""
    result = DraDevices()
    if expected is not None and len(pool_slices) < expected:
        result.notes.append(
            f"DRA pool {pool_name!r} of {driver}: {len(pool_slices)} of {expected} ResourceSlices of generation "
            f"{generation} are published; the pool is incomplete and only those devices are counted"
        )
    profile_id = catalog.driver(driver)
    for item in pool_slices:
        _read_slice(item, driver, pool_name, profile_id, catalog, result)
    return result


def merge_pools(parts: Iterable[DraDevices]) -> DraDevices:
    """The cluster's DRA devices from its pools' (each pool's devices, unclaimed drivers and notes, in pool order)."""
    result = DraDevices()
    for part in parts:
        result.devices.update(part.devices)
        result.notes += part.notes
        for driver, unclaimed in part.unclaimed.items():
            merged = result.unclaimed.setdefault(driver, UnclaimedDriver())
            merged.devices |= unclaimed.devices
            merged.nodes |= unclaimed.nodes
            merged.details.update(unclaimed.details)
    return result


def unclaim(devices: Iterable[Device]) -> None:
    """Forget what claims did to these devices, so that the claims can be applied again."""
    for device in devices:
        device.allocated = device.occupied = False
        if device.consumed:
            device.consumed = {}
        if device.holders:
            device.holders = []


def read_slices(slices: Iterable[dict[str, Any]], catalog: Catalog) -> DraDevices:
    return merge_pools(read_pool(driver, pool_name, generation, pool_slices, expected, catalog)
                       for (driver, pool_name), (generation, pool_slices, expected) in group_pools(slices).items())


def _read_slice(item: dict[str, Any], driver: str, pool: str, profile_id: str | None, catalog: Catalog,
                result: DraDevices) -> None:
    spec = item["spec"]
    slice_node = string_at(item, "spec.nodeName", spec.get("nodeName"))
    devices = list_at(item, "spec.devices", spec.get("devices"))
    if profile_id is None:
        unclaimed = result.unclaimed.setdefault(driver, UnclaimedDriver())
        for device in devices:
            if isinstance(device, dict):
                unclaimed.devices.add((pool, str(device.get("name"))))
                node = slice_node or device.get("nodeName")
                if node:
                    unclaimed.nodes.add(node)
                body = device["basic"] if isinstance(device.get("basic"), dict) else device
                attributes = body.get("attributes")
                unclaimed.details[(pool, str(device.get("name")))] = (
                    node if isinstance(node, str) else None, attributes if isinstance(attributes, dict) else {})
        return
    inventory = catalog.profile(profile_id).inventory
    partition_rule = inventory.dra_partition
    for index, device in enumerate(devices):
        if not isinstance(device, dict):
            raise ObjectInvalid(item, f"spec.devices[{index}]", device, "is not a device object")
        name = device.get("name")
        if not isinstance(name, str) or not name:
            raise ObjectInvalid(item, f"spec.devices[{index}].name", name, "is not a device name")
        key = (driver, pool, name)
        if key in result.devices:
            continue
        # resource.k8s.io/v1beta1 nests a device's fields under "basic".
        body, path = (device["basic"], f"spec.devices[{index}].basic") if isinstance(device.get("basic"), dict) \
            else (device, f"spec.devices[{index}]")
        attributes = mapping_at(item, f"{path}.attributes", body.get("attributes"))
        capacity = mapping_at(item, f"{path}.capacity", body.get("capacity"))
        record = Device(driver, pool, name, slice_node or string_at(item, f"{path}.nodeName", body.get("nodeName")), profile_id)
        for attribute in inventory.dra_product_attributes:
            value = attribute_value(lookup(attributes, attribute, driver))
            if value not in (None, ""):
                record.product = str(value)
                break
        if partition_rule is not None:
            value = attribute_value(lookup(attributes, partition_rule.attribute, driver))
            record.partition = value is not None and str(value) in partition_rule.values
        counters = body.get("consumesCounters") or []
        record.counter_sets = tuple(c["counterSet"] for c in counters if isinstance(c, dict) and c.get("counterSet"))
        record.dynamic = record.partition and bool(record.counter_sets)
        record.shared = body.get("allowMultipleAllocations") is True
        record.tainted = any(isinstance(t, dict) and string_at(item, f"{path}.taints[{i}].effect", t.get("effect")) in _BLOCKING_TAINTS
                             for i, t in enumerate(list_at(item, f"{path}.taints", body.get("taints"))))
        for capacity_name in inventory.dra_memory_capacities:
            found = lookup_key(capacity, capacity_name, driver)
            if found is not None:
                memory = _capacity_bytes(item, f"{path}.capacity[{_quote(found)}].value", capacity[found])
                if memory:  # "0" means the driver could not read it
                    record.memory_bytes = memory
                    break
        if record.shared:
            record.capacity = {
                qualify(cap, driver): _capacity_quantity(item, f"{path}.capacity[{_quote(cap)}].value", raw)
                for cap, raw in capacity.items()
            }
        result.devices[key] = record


def apply_claims(dra: DraDevices, claims: Iterable[dict[str, Any]], catalog: Catalog,
                 pod_phases: Mapping[tuple[str, str], str | None]) -> None:
    """Mark every device an allocated claim holds; note what is surprising about it."""
    for claim in claims:
        status = mapping_at(claim, "status", claim.get("status"))
        allocation = mapping_at(claim, "status.allocation", status.get("allocation"))
        if not allocation:
            _pending_claim(dra, claim, catalog)
            continue
        devices = mapping_at(claim, "status.allocation.devices", allocation.get("devices"))
        results = list_at(claim, "status.allocation.devices.results", devices.get("results"))
        metadata = claim["metadata"]
        namespace, claim_name = metadata.get("namespace") or "", metadata["name"]
        pods = [string_at(claim, f"status.reservedFor[{i}].name", r.get("name"))
                for i, r in enumerate(list_at(claim, "status.reservedFor", status.get("reservedFor")))
                if isinstance(r, dict) and r.get("resource") == "pods"]
        holder = ", ".join(f"{namespace}/{pod}" for pod in pods) if pods else f"claim {namespace}/{claim_name}"
        finished = [pod for pod in pods if pod_phases.get((namespace, pod)) in ("Succeeded", "Failed")]
        if finished and results:
            dra.notes.append(
                f"ResourceClaim {namespace}/{claim_name} is still allocated although pod(s) {', '.join(finished)} "
                "finished: its devices stay held until the claim is deallocated"
            )
        for index, result in enumerate(results):
            if not isinstance(result, dict) or result.get("adminAccess"):
                continue  # admin access (monitoring) shares a device without holding it
            where = f"status.allocation.devices.results[{index}]"
            key = tuple(_result_part(claim, f"{where}.{part}", result.get(part)) for part in ("driver", "pool", "device"))
            device = dra.devices.get(key)
            if device is None:
                profile_id = catalog.driver(key[0])
                if profile_id is not None:
                    dra.orphans.append(OrphanAllocation(_allocated_node(allocation) or key[1], profile_id, key, holder))
                continue
            if device.shared:
                where = f"status.allocation.devices.results[{index}].consumedCapacity"
                for cap, value in mapping_at(claim, where, result.get("consumedCapacity")).items():
                    name = qualify(cap, device.driver)
                    amount = _capacity_quantity(claim, f"{where}[{_quote(cap)}]", value)
                    device.consumed[name] = device.consumed.get(name, Decimal(0)) + amount
            elif device.allocated:
                dra.notes.append(f"device {'/'.join(key)} is allocated to both {device.holders[0]} and {holder}")
            device.allocated = device.allocated or not device.shared
            device.holders.append(holder)
            if device.dynamic:
                for parent in dra.parents_of(device):
                    parent.occupied = True


def _result_part(claim: dict[str, Any], path: str, value: Any) -> str:
    """driver, pool and device of an allocation result: required, or which device is held is unknown."""
    text = string_at(claim, path, value)
    if not text:
        raise ObjectInvalid(claim, path, value, "is missing; an allocation result names its driver, pool and device")
    return text


def _pending_claim(dra: DraDevices, claim: dict[str, Any], catalog: Catalog) -> None:
    """Count what an unallocated claim asks for, per profile of its device class."""
    wanted: dict[str, int] = {}
    spec = mapping_at(claim, "spec", claim.get("spec"))
    devices = mapping_at(claim, "spec.devices", spec.get("devices"))
    for request in list_at(claim, "spec.devices.requests", devices.get("requests")):
        if not isinstance(request, dict):
            continue
        # v1 nests the request under "exactly" (or alternatives under "firstAvailable"); v1beta1 does not.
        exact = request.get("exactly") or next(iter(request.get("firstAvailable") or ()), None) or request
        if not isinstance(exact, dict):
            continue
        profile_id = catalog.device_class(str(exact.get("deviceClassName") or ""))
        if profile_id is None:
            continue
        count = exact.get("count", 1) if exact.get("allocationMode", "ExactCount") == "ExactCount" else 0
        wanted[profile_id] = wanted.get(profile_id, 0) + (count if type(count) is int and count > 0 else 0)
    for profile_id, units in wanted.items():
        entry = dra.pending.setdefault(profile_id, [0, 0])
        entry[0] += 1
        entry[1] += units


def lookup(attributes: Mapping[str, Any], name: str, driver: str) -> Any:
    found = lookup_key(attributes, name, driver)
    return attributes[found] if found is not None else None


def lookup_key(mapping: Mapping[str, Any], name: str, driver: str) -> str | None:
    """The key under which a bare or qualified attribute/capacity name is stored, if any."""
    if name in mapping:
        return name
    domain, slash, bare = name.partition("/")
    if slash:
        return bare if domain == driver and bare in mapping else None
    qualified = f"{driver}/{name}"
    return qualified if qualified in mapping else None


def qualify(name: str, driver: str) -> str:
    """Capacity names in one spelling: a bare name belongs to the driver's domain."""
    return name if "/" in name else f"{driver}/{name}"


def _allocated_node(allocation: Mapping[str, Any]) -> str | None:
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field_ in term.get("matchFields") or []:
            if field_.get("key") == "metadata.name" and field_.get("operator") == "In" and field_.get("values"):
                return str(field_["values"][0])
    return None


def _capacity_raw(raw: Any) -> Any:
    return raw.get("value") if isinstance(raw, dict) else raw


def _capacity_bytes(item: Any, path: str, raw: Any) -> int:
    value = _capacity_raw(raw)
    try:
        return parse_bytes(value)
    except QuantityError as exc:
        raise ObjectInvalid(item, path, value, exc.reason) from None


def _capacity_quantity(item: Any, path: str, raw: Any) -> Decimal:
    """A capacity or an amount consumed of it: a quantity, never negative (a total cannot shrink by it)."""
    value = _capacity_raw(raw)
    try:
        quantity = parse_quantity(value)
    except QuantityError as exc:
        raise ObjectInvalid(item, path, value, exc.reason) from None
    if quantity < 0:
        raise ObjectInvalid(item, path, value, "is not a capacity (negative)")
    return quantity


def _quote(name: str) -> str:
    return f'"{name}"'
