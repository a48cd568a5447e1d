"""The profile facts the inventory needs, looked up through the resolver once per distinct name.

A cluster of thousands of nodes names only a handful of distinct resources, drivers and device
classes, so each answer is cached here and the per-node loops do dict lookups instead of prefix
scans and regular expressions. This is the only module of the inventory that reads profiles: the
rest asks it "whose is this?" and "how much memory has that product?", and never names a vendor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from llm_d_lens.hardware.models import HardwareProfile, MemoryLabel
from llm_d_lens.hardware.registry import Registry, get_registry
from llm_d_lens.hardware.resolution import Resolver

GIB = 2**30
MIB = 2**20
# Resource names Kubernetes itself owns; they never name an accelerator.
_CORE_DOMAINS = ("kubernetes.io/", "requests.", "limits.")
_PRODUCT_SEPARATORS = re.compile(r"[\s_\-]+")
_LABEL_NUMBER = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")
# Suffixes a memory label may carry after its number, per declared unit.
_LABEL_SUFFIXES: dict[str, tuple[int, frozenset[str]]] = {
    "MiB": (MIB, frozenset({"", "M", "Mi", "MiB", "MB"})),
    "GiB": (GIB, frozenset({"", "G", "Gi", "GiB", "GB"})),
    "bytes": (1, frozenset({"", "B"})),
}


class ResourceRole(msgspec.Struct, frozen=True):
    """What one extended resource name is: whose, and whether it counts whole devices or partitions."""

    profile_id: str
    kind: str  # "device" | "partition" | "share" | "fraction" | "other"


class NetworkRole(msgspec.Struct, frozen=True):
    """Which network device profile an extended resource belongs to, and which NIC of the node it names."""

    profile_id: str
    nic: str  # resource names with the same nic are one NIC (rdma-0 and rdma-0.IP)


class MemoryFigure(msgspec.Struct, frozen=True):
    bytes: int
    source: str  # "node-label:<label>", "memory-model:<product>"


class Catalog:
    def __init__(self, registry: Registry | None = None):
        self.registry = registry or get_registry()
        self.resolver = Resolver(self.registry)
        self._resources: dict[str, ResourceRole | None] = {}
        self._drivers: dict[str, str | None] = {}
        self._classes: dict[str, str | None] = {}
        self._patterns: dict[str, tuple[list[re.Pattern[str]], ...]] = {}
        self._network_roles: dict[str, NetworkRole | None] = {}
        networks = self.registry.network_profiles()
        self._networks = {p.id: p for p in networks}
        self._network_names = {name: p.id for p in networks for name in p.resource_names}
        self._network_patterns = [(re.compile(pattern), p.id) for p in networks for pattern in p.resource_patterns]
        self._network_groups = {p.id: re.compile(p.network.device_group_pattern) for p in networks
                                if p.network.device_group_pattern}
        self._network_drivers = {driver: p.id for p in networks for driver in p.dra_drivers}
        self._network_classes = {cls: p.id for p in networks for cls in p.device_classes}
        self._models: dict[str, dict[str, tuple[float, str]]] = {}
        self._selectors: dict[str, dict[str, str]] = {
            p.id: dict(p.node_label_selector) for p in self.registry.profiles() if p.node_label_selector
        }
        self._order = {profile_id: position for position, profile_id in enumerate(self._selectors)}
        index = self.registry.index
        self._pairs, self._keys = index.selector_pairs, index.selector_keys

    def profile(self, profile_id: str) -> HardwareProfile:
        return self.registry.get(profile_id)

    # -- names a cluster uses ----------------------------------------------------------------

    def resource(self, name: str) -> ResourceRole | None:
        """The profile claiming an extended resource, or None (a core or unclaimed resource)."""
        try:
            return self._resources[name]
        except KeyError:
            pass
        role = None
        if self.is_extended(name):
            found = self.resolver.match_resource(name)
            if found.supported and found.profile_id is not None:
                partitions, others, shares, fractions = self._resource_patterns(found.profile_id)
                kind = "other" if any(p.search(name) for p in others) else (
                    "fraction" if any(p.search(name) for p in fractions) else
                    "share" if any(p.search(name) for p in shares) else
                    "partition" if any(p.search(name) for p in partitions) else "device")
                role = ResourceRole(found.profile_id, kind)
        self._resources[name] = role
        return role

    def is_extended(self, name: str) -> bool:
        """Whether a resource name is a (domain-qualified, non-core) extended resource."""
        return "/" in name and not name.startswith(_CORE_DOMAINS) and ".kubernetes.io/" not in name

    def driver(self, name: str) -> str | None:
        """The profile whose DRA driver publishes ResourceSlices under this name."""
        try:
            return self._drivers[name]
        except KeyError:
            found = self.resolver.match_dra_driver(name)
            self._drivers[name] = found.profile_id if found.supported else None
            return self._drivers[name]

    def device_class(self, name: str) -> str | None:
        try:
            return self._classes[name]
        except KeyError:
            found = self.resolver.match_device_class(name)
            self._classes[name] = found.profile_id if found.supported else None
            return self._classes[name]

    def present(self, labels: Mapping[str, str]) -> list[tuple[str, dict[str, str]]]:
        """The profiles whose node_label_selector these node labels satisfy, with the selector, in registry order.

        Through the registry's selector postings: each of the node's labels looks up the profiles
        that name it (with that value, or ``"*"``), and a profile matches when every one of its
        selector's labels was hit. O(labels) per node, however many profiles are installed.
        """
        pairs, keys = self._pairs, self._keys
        hits: dict[str, int] | None = None
        for item in labels.items():
            for found in (pairs.get(item), keys.get(item[0])):
                if found:
                    if hits is None:
                        hits = {}
                    for profile_id in found:
                        hits[profile_id] = hits.get(profile_id, 0) + 1
        if hits is None:
            return []
        selectors = self._selectors
        matched = [pid for pid, count in hits.items() if pid in selectors and count == len(selectors[pid])]
        matched.sort(key=self._order.__getitem__)
        return [(pid, selectors[pid]) for pid in matched]

    def _resource_patterns(self, profile_id: str) -> tuple[list[re.Pattern[str]], ...]:
        if profile_id not in self._patterns:
            inventory = self.profile(profile_id).inventory
            self._patterns[profile_id] = (
                [re.compile(p) for p in inventory.partition_resource_patterns],
                [re.compile(p) for p in inventory.non_device_resource_patterns],
                [re.compile(p) for p in inventory.shared_resource_patterns],
                [re.compile(p) for p in inventory.fractional_resource_patterns],
            )
        return self._patterns[profile_id]

    # -- network devices -------------------------------------------------------------------------

    def network_resource(self, name: str) -> NetworkRole | None:
        """The network device profile an extended resource belongs to, with the NIC it names; None if none."""
        try:
            return self._network_roles[name]
        except KeyError:
            pass
        profile_id = self._network_names.get(name)
        if profile_id is None:
            profile_id = next((pid for pattern, pid in self._network_patterns if pattern.search(name)), None)
        role = None
        if profile_id is not None:
            group = self._network_groups.get(profile_id)
            found = group.search(name) if group is not None else None
            role = NetworkRole(profile_id, found.group(1) if found is not None and found.groups() else name)
        self._network_roles[name] = role
        return role

    def network_driver(self, driver: str) -> str | None:
        return self._network_drivers.get(driver)

    def network_class(self, name: str) -> str | None:
        return self._network_classes.get(name)

    def network(self, profile_id: str) -> Any:
        return self._networks[profile_id]

    def network_ids(self) -> list[str]:
        return sorted(self._networks)

    # -- memory --------------------------------------------------------------------------------

    def memory_model(self, profile_id: str, product: str | None) -> MemoryFigure | None:
        """The profile's ``planning.memory_models`` entry for a product, matched loosely.

        Products are spelled differently by each source (``Acme X1 80GB`` from a DRA attribute,
        ``Acme-X1-80GB`` or ``Acme_X1_80GB`` from a node label), so case, spaces, underscores and
        hyphens are ignored.
        """
        if not product:
            return None
        models = self._models.get(profile_id)
        if models is None:
            models = {}
            for name, model in self.profile(profile_id).planning.memory_models.items():
                models.setdefault(product_key(name), (model.memory_gib, name))  # the first spelling names it
            self._models[profile_id] = models
        found = models.get(product_key(product))
        if found is None:
            return None
        gib, name = found
        return MemoryFigure(int(gib * GIB), f"memory-model:{name}")

    def memory_models(self, profile_id: str) -> list[str]:
        return sorted(self.profile(profile_id).planning.memory_models)


def product_key(product: str) -> str:
    return _PRODUCT_SEPARATORS.sub("-", product.strip().lower())


def memory_label_bytes(label: MemoryLabel, value: str) -> int | None:
    """A memory label's value in bytes, read in the unit the profile declares; None if unreadable."""
    if label.unit == "quantity":
        from llm_d_lens.cluster.quantity import QuantityError, parse_bytes

        try:
            return parse_bytes(value)
        except QuantityError:
            return None
    match = _LABEL_NUMBER.fullmatch(value)
    if match is None:
        return None
    scale, suffixes = _LABEL_SUFFIXES[label.unit]
    if match[2] not in suffixes:
        return None
    from decimal import Decimal

    from llm_d_lens.cluster.quantity import MAX_QUANTITY

    size = Decimal(match[1]) * scale
    return int(size) if size <= MAX_QUANTITY else None  # a 400-digit label is as unreadable as "lots"


def attribute_value(raw: Any) -> Any:
    """The value inside a DRA DeviceAttribute (``{"string": "x"}``, ``{"int": 5}``, ...)."""
    if not isinstance(raw, dict):
        return None
    for key in ("string", "int", "bool", "version", "strings", "ints", "bools", "versions"):
        if key in raw:
            return raw[key]
    return None
