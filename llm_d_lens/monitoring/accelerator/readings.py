"""Device readings: the rows of one refresh put together per physical device (or tile)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.monitoring.accelerator.fold import Key, Keys, fallbacks_used, per_device, relabeller
from llm_d_lens.monitoring.accelerator.plan import (
    COMMON_LABELS, HEALTH_FLAGS, HEALTH_SIGNALS, QUANTITIES, QUANTITY_BY_KEY, SENTINEL_LABEL, DevicePlan,
)
from llm_d_lens.monitoring.accelerator.tilerows import TileRows
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


#: HEALTH_FLAGS and HEALTH_SIGNALS with each quantity's reading field (health is worked out for every device of a refresh)
_FLAG_FIELDS = tuple((key, QUANTITY_BY_KEY[key].field, meaning, when) for key, meaning, when in HEALTH_FLAGS)
_SIGNAL_FIELDS = tuple((key, QUANTITY_BY_KEY[key].field) for key in HEALTH_SIGNALS)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


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
    fallbacks: dict[str, str] = field(default_factory=dict)  # quantity field -> the fallback source that answered
    unavailable: dict[str, str] = field(default_factory=dict)  # quantity field -> why it is null (a sentinel's reason)
    owners: list[Owner] = field(default_factory=list)
    exporter: Owner | None = None  # the exporter's own pod, when Prometheus wrote it into the pod labels
    attribution: Attribution | None = None

    def health(self) -> dict[str, Any]:
        """``ok``, ``problem`` (with what), or ``unknown`` when the exporter reports none of the health quantities.

        A flag (:data:`.plan.HEALTH_FLAGS`) can make a device a problem; a signal (:data:`.plan.HEALTH_SIGNALS`,
        counts that rise in normal service) only makes its health known. ``signals`` names what was read.
        """
        problems, values = self.problems(), self.values
        signals = [key for key, field_, *_ in _FLAG_FIELDS if _finite(values.get(field_))]
        signals.extend(key for key, field_ in _SIGNAL_FIELDS if _finite(values.get(field_)))
        status = "problem" if problems else "ok" if signals else "unknown"
        return {"status": status, "problems": problems, "signals": signals}

    def problems(self) -> list[str]:
        """What the device's health flags (:data:`.plan.HEALTH_FLAGS`) say is wrong, worded; empty when nothing is."""
        problems, values = [], self.values
        for _, field_, meaning, problem_when in _FLAG_FIELDS:
            value = values.get(field_)
            if value is None or not math.isfinite(value):
                continue
            if (value > 0) if problem_when == "nonzero" else (value == 0):
                problems.append(f"{meaning}: {value:g}" if problem_when == "nonzero" else meaning)
        return problems

    @property
    def name(self) -> str:
        """How a user refers to the device: ``node/device`` (``/tile`` when tiles are listed)."""
        return f"{self.node or '-'}/{self.device}/{self.sub}" if self.sub else f"{self.node or '-'}/{self.device}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hardware": self.hardware, "node": self.node or None, "device": self.device, "sub_device": self.sub or None,
            "device_id": self.device_id, "model": self.model, "uuids": self.uuids, "pci_bus_ids": self.pci_bus_ids,
            "serials": self.serials, "tiles": self.tiles,
        }
        for quantity in QUANTITIES:
            value = self.values.get(quantity.field)
            out[quantity.field] = value if value is not None and math.isfinite(value) else None
        out["health"] = self.health()
        out["fallbacks"] = dict(self.fallbacks)
        out["unavailable"] = dict(self.unavailable)
        # what a plugin's telemetry provider added (monitoring/accelerator/registry.py)
        common = {q.field for q in QUANTITIES}
        out["derived"] = {k: (v if isinstance(v, (int, float)) and math.isfinite(v) else None)
                          for k, v in sorted(self.values.items()) if k not in common}
        out["exporter_pods"] = [{"namespace": o.namespace or None, "pod": o.pod, "container": o.container or None} for o in self.owners]
        out["exporter_pod"] = {"namespace": self.exporter.namespace or None, "pod": self.exporter.pod} if self.exporter else None
        out["attribution"] = self.attribution.to_dict() if self.attribution else None
        return out


@dataclass
class Assembled:
    devices: list[DeviceReading]
    warnings: list[str]


#: Prometheus keeps an exporter label that clashes with a target label under this prefix.
EXPORTED = "exported_"


def _target(labels: Mapping[str, str]) -> tuple[str, str]:
    return labels.get("job", ""), labels.get("instance", "")


def target_pods(targets: Sequence[Sample]) -> dict[tuple[str, str], tuple[str, str]]:
    """(job, instance) -> (namespace, pod) of each scrape target, from Prometheus' ``up`` series."""
    return {_target(t.labels): (t.labels.get("namespace", ""), t.labels["pod"]) for t in targets if t.labels.get("pod")}


def assemble(plan: DevicePlan, rows: Mapping[str, Sequence[Sample] | TileRows], targets: Sequence[Sample] = (),
             recorded: tuple[Mapping[Key, Mapping[str, float]], Mapping[str, Mapping[Key, int]]] | None = None) -> Assembled:
    """Readings from the inventory and quantity rows of one hardware (from Prometheus or a snapshot).

    The inventory's and the sentinels' rows carry the exporter's own labels, each quantity's are
    :class:`.tilerows.TileRows` (keyed by the tile labels); they are folded and relabelled here (see :mod:`.fold`).
    ``recorded`` gives each device's quantities instead (per device, field -> value), and per quantity the fallback
    that answered it, as the recording rules stored them (:mod:`.recorded`): the inventory and sentinel rows are read
    as ever.
    A pod label naming the scrape target itself (the exporter's pod, which Prometheus writes into
    ``pod`` of every series the exporter did not label, and of all of them once it renamed the
    exporter's own to ``exported_pod``) is never taken for the device's owner; ``targets`` are the
    ``up`` series that say which pod each target is.
    """
    own_pods = target_pods(targets)
    pod_names = plan.labels.get("pod", ())
    inventory: Sequence[Sample] = rows.get("inventory", ())  # type: ignore[assignment]
    # one pass over every inventory label name (in C) finds the renamed ones; a row has one if it has any of those
    exported = [name for name in set().union(*(row.labels for row in inventory)) if name.startswith(EXPORTED)]
    renamed = {_target(row.labels) for row in inventory if any(map(row.labels.__contains__, exported))} if exported else set()
    folded = plan.folded
    commons = [c for c in COMMON_LABELS if c in plan.labels]
    common_labels = relabeller(plan, commons)
    devices: dict[tuple[str, str, str], DeviceReading] = {}
    anonymous: dict[str, int] = defaultdict(int)

    def reading(node: str, device: str, sub: str) -> DeviceReading:
        key = (node, device, "" if folded else sub)
        found = devices.get(key)
        if found is None:
            found = devices[key] = DeviceReading(plan.hardware, node, device, key[2])
        return found

    for row in inventory:
        common = common_labels(row.labels)
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
            spelling = next(n for n in pod_names if row.labels.get(n))
            target = _target(row.labels)
            own = own_pods.get(target)
            if (own is not None and owner.pod == own[1] and owner.namespace in ("", own[0])) or (
                target in renamed and not spelling.startswith(EXPORTED)
            ):
                r.exporter = r.exporter or owner
            elif owner not in r.owners:
                r.owners.append(owner)
    keys = Keys()  # per_device's, shared by the quantities
    known = devices.get
    if recorded is not None:
        for key3, fields in recorded[0].items():  # reading() only for a device not listed yet, or a tile of a folded one
            (known(key3) or reading(*key3)).values.update(fields)
    for quantity in plan.quantities:
        key = quantity.quantity.key
        if recorded is None:
            quantity_rows: TileRows | None = rows.get(key)  # type: ignore[assignment]
            if quantity_rows is None:
                continue
            values, used = per_device(plan, quantity, quantity_rows, keys), fallbacks_used(plan, quantity, quantity_rows)
            field_ = quantity.quantity.field
            for key3, value in values.items():
                (known(key3) or reading(*key3)).values[field_] = value
        else:
            used = recorded[1].get(key, {})
        for (n, device, sub), number in used.items():
            reading(n, device, sub).fallbacks[quantity.quantity.field] = quantity.fallbacks[number - 1].describe()
    _mark_sentinels(plan, rows.get("sentinels", ()), common_labels, reading)
    warnings = [
        f"{plan.hardware}: {count} series on node {n or '(none)'} carry no device label "
        f"({', '.join(plan.labels.get('device', ())) or 'label_schema.device is not set'}); they are left out"
        for n, count in sorted(anonymous.items())
    ]

    ordered = sorted(devices.values(), key=lambda d: (d.node, _natural(d.device), _natural(d.sub)))
    for d in ordered:
        if len(d.tiles) > 1:
            d.tiles.sort(key=_natural)
    return Assembled(ordered, warnings)


def _mark_sentinels(plan: DevicePlan, rows: Sequence[Sample], common_labels: Callable[[Mapping[str, str]], dict[str, str]],
                    reading: Callable[[str, str, str], DeviceReading]) -> None:
    """Each quantity left without a value because a metric it reads carried a sentinel: null, with the reason."""
    for row in rows:
        metric = row.labels.get(SENTINEL_LABEL, "")
        reason = plan.sentinel_reason(metric, row.value)
        common = common_labels(row.labels)
        if not reason or not common.get("device"):
            continue
        r = reading(common.get("node", ""), common["device"], common.get("sub", ""))
        for quantity in plan.quantities:
            field_ = quantity.quantity.field
            if field_ in r.values or field_ in r.unavailable:
                continue
            if any(metric in source.metrics for source in quantity.sources):
                r.unavailable[field_] = f"{metric} reported {row.value:g}, a sentinel: {reason}"


def _add(values: list[str], value: str) -> None:
    if value and value not in values:
        values.append(value)


def _natural(text: str) -> tuple[int, int, str]:
    """Sort key putting device 2 before device 10; other ids sort as text."""
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def fallback_warnings(plan: DevicePlan, devices: Sequence[DeviceReading]) -> list[str]:
    """One warning per fallback with a ``note`` (a degraded reading) that answered for any of ``devices``."""
    out = []
    for quantity in plan.quantities:
        for fallback in quantity.fallbacks:
            if not fallback.note:
                continue
            field_, described = quantity.quantity.field, fallback.describe()
            names = [d.name for d in devices if d.fallbacks.get(field_) == described]
            if names:
                out.append(f"{plan.hardware}: {quantity.quantity.key} of {len(names)} device(s) ({', '.join(names)}) "
                           f"is read from {described}: {fallback.note}")
    return out
