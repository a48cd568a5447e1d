"""Device readings: the rows of one refresh put together per physical device (or tile)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.monitoring.accelerator.fold import per_device, relabelled
from llm_d_lens.monitoring.accelerator.plan import COMMON_LABELS, QUANTITIES, DevicePlan
from llm_d_lens.prometheus.client import Sample


@dataclass(frozen=True)
class Owner:
    """A pod the exporter's pod labels name for a device."""

    namespace: str
    pod: str
    container: str = ""

    @property
    def ref(self) -> tuple[str, str]:
        return (self.namespace, self.pod)


@dataclass(frozen=True)
class Attribution:
    """Who a device is working for, or why Lens will not say.

    ``attributed``: one pod holds it. ``idle``: nothing holds it. ``unavailable``: the join cannot
    tell (no identity to match, or two pods claim it). ``unattributed``: no join applies (the
    profile's join is ``none``, the node mixes request models, or the cluster objects are missing).
    """

    status: str
    join: str
    mode: str | None = None
    namespace: str | None = None
    pod: str | None = None
    container: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("status", "join", "mode", "namespace", "pod", "container", "reason")}


@dataclass
class DeviceReading:
    hardware: str
    node: str
    device: str
    sub: str = ""  # the tile, when the hardware lists tiles as devices
    device_id: str | None = None
    model: str | None = None
    uuids: list[str] = field(default_factory=list)
    pci_bus_ids: list[str] = field(default_factory=list)
    serials: list[str] = field(default_factory=list)
    tiles: list[str] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)  # quantity field -> value in its common unit
    owners: list[Owner] = field(default_factory=list)
    attribution: Attribution | None = None

    @property
    def name(self) -> str:
        """How a user refers to the device: ``node/device`` (``/tile`` when tiles are listed)."""
        parts = [self.node or "-", self.device] + ([self.sub] if self.sub else [])
        return "/".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hardware": self.hardware, "node": self.node or None, "device": self.device, "sub_device": self.sub or None,
            "device_id": self.device_id, "model": self.model, "uuids": self.uuids, "pci_bus_ids": self.pci_bus_ids,
            "serials": self.serials, "tiles": self.tiles,
        }
        for quantity in QUANTITIES:
            value = self.values.get(quantity.field)
            out[quantity.field] = value if value is not None and math.isfinite(value) else None
        # what a plugin's telemetry provider added (monitoring/accelerator/registry.py)
        common = {q.field for q in QUANTITIES}
        out["derived"] = {k: (v if isinstance(v, (int, float)) and math.isfinite(v) else None)
                          for k, v in sorted(self.values.items()) if k not in common}
        out["exporter_pods"] = [{"namespace": o.namespace or None, "pod": o.pod, "container": o.container or None} for o in self.owners]
        out["attribution"] = self.attribution.to_dict() if self.attribution else None
        return out


@dataclass
class Assembled:
    devices: list[DeviceReading]
    warnings: list[str]


def assemble(plan: DevicePlan, rows: Mapping[str, Sequence[Sample]]) -> Assembled:
    """Readings from the inventory and quantity rows of one hardware (from Prometheus or a snapshot).

    Rows carry the exporter's own labels; they are folded and relabelled here (see :mod:`.fold`).
    """
    folded = plan.folded
    commons = [c for c in COMMON_LABELS if c in plan.labels]
    devices: dict[tuple[str, str, str], DeviceReading] = {}
    anonymous: dict[str, int] = defaultdict(int)

    def reading(node: str, device: str, sub: str) -> DeviceReading:
        key = (node, device, "" if folded else sub)
        if key not in devices:
            devices[key] = DeviceReading(plan.hardware, node, device, key[2])
        return devices[key]

    for row in rows.get("inventory", ()):
        common = relabelled(dict(row.labels), plan, commons)
        n, device, sub = common.get("node", ""), common.get("device", ""), common.get("sub", "")
        if not device:
            anonymous[n] += 1
            continue
        r = reading(n, device, sub)
        _add(r.uuids, common.get("uuid", ""))
        _add(r.pci_bus_ids, common.get("pci_bus_id", ""))
        _add(r.serials, common.get("serial", ""))
        if folded:
            _add(r.tiles, sub)
        r.model = r.model or common.get("model") or None
        r.device_id = r.device_id or common.get("source") or None
        if common.get("pod"):
            owner = Owner(common.get("namespace", ""), common["pod"], common.get("container", ""))
            if owner not in r.owners:
                r.owners.append(owner)
    for quantity in plan.quantities:
        for (n, device, sub), value in per_device(plan, quantity, rows.get(quantity.quantity.key, ())).items():
            reading(n, device, sub).values[quantity.quantity.field] = value
    warnings = [
        f"{plan.hardware}: {count} series on node {n or '(none)'} carry no device label "
        f"({', '.join(plan.labels.get('device', ())) or 'label_schema.device is not set'}); they are left out"
        for n, count in sorted(anonymous.items())
    ]
    ordered = sorted(devices.values(), key=lambda d: (d.node, _natural(d.device), _natural(d.sub)))
    for d in ordered:
        d.tiles.sort(key=_natural)
    return Assembled(ordered, warnings)


def _add(values: list[str], value: str) -> None:
    if value and value not in values:
        values.append(value)


def _natural(text: str) -> tuple[int, int, str]:
    """Sort key putting device 2 before device 10; other ids sort as text."""
    return (0, int(text), "") if text.isdigit() else (1, 0, text)
