"""Write the demo history (``python -m llm_d_lens.monitoring.demo.make_telemetry``).

Vendor-neutral by construction: for every node of the demo inventory and every hardware on it
whose profile declares device metrics, one series per declared metric, labelled with the labels the
profile's ``label_schema`` names, valued in the source unit (the inverse of the plan's factor) so
that reading it back gives the intended common-unit value. Values follow slow deterministic waves,
so the file is the same every time it is written.

The history joins the demo cluster's own pods, as a real exporter's page does: a device a pod holds
is busy and, where the hardware's join reads the exporter's pod labels, carries the holder in the
profile's pod, namespace and container labels (the exporter's own spelling, not Prometheus'
``exported_*``); on a node whose pods hold devices through ResourceClaims, each device carries the
identity (PCI bus id, uuid, serial) its ResourceSlice entry publishes, so the DRA join finds it. A
device no pod holds is idle.
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Iterator
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects, SliceDevice, qualified
from llm_d_lens.monitoring.accelerator.plan import DevicePlan, QuantityPlan, plan_for

HERE = Path(__file__).parent
DURATION = 3600
STEP = 60
EQUALS = re.compile(r'^(?P<name>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>[^"]*)"$')


def _wanted(device: int, busy: bool, t: int, memory_total: float) -> dict[str, float]:
    """The common-unit values of one device at ``t`` seconds."""
    phase = device * 0.7
    wave = 0.5 + 0.5 * math.sin(2 * math.pi * t / 1800 + phase)
    utilization = 0.62 + 0.3 * wave if busy else 0.0  # an idle device reads 0 %, as a real one does
    power = 180 + 420 * utilization if busy else 70 + 8 * wave
    return {
        "utilization": round(utilization, 4),
        "tensor_activity": round(utilization * 0.8, 4),
        "memory_total": memory_total,
        "memory_used": float(int(memory_total * (0.55 + 0.3 * wave if busy else 0.01)) // 2**20 * 2**20),
        "power": round(power, 1),
        "temperature": round(38 + 40 * utilization, 1),
        "energy": round(power * t + 1_000_000 * (device + 1), 1),
        "memory_temperature": round(42 + 36 * utilization, 1),
        "memory_bandwidth": round(utilization * 0.7, 4),
        # health: a demo device is well (nothing failed, every link up, the exporter's verdict healthy)
        "ecc_corrected": 0.0, "ecc_uncorrected": 0.0, "pcie_replays": 0.0, "critical_event": 0.0, "link_errors": 0.0,
        "row_remap_failure": 0.0, "remapped_rows_correctable": 0.0, "remapped_rows_uncorrectable": 0.0,
        "device_healthy": 1.0, "links_up": 1.0,
    }


@dataclass(frozen=True)
class Device:
    """One demo device: who holds it (if anyone) and the identity labels its slice entry gives it."""

    holder: tuple[str, str, str] | None = None  # namespace, pod, container
    identity: dict[str, str] = field(default_factory=dict)  # common label (pci_bus_id, uuid, serial) -> value


def _spelling(plan: DevicePlan, common: str) -> str | None:
    """The exporter's own label for ``common``: the first spelling that is not Prometheus' ``exported_*``."""
    names = plan.labels.get(common, ())
    return next((n for n in names if not n.startswith("exported_")), names[0] if names else None)


def _natural(text: str) -> tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _slice_devices(profile: HardwareProfile, cluster: ClusterObjects, node: str) -> list[SliceDevice]:
    allocation = profile.telemetry.allocation if profile.telemetry else None
    drivers = set(allocation.drivers if allocation else ()) | set(profile.inventory.dra_drivers)
    found = [d for (driver, _, _), d in cluster.devices.items() if driver in drivers and d.node == node]
    return sorted(found, key=lambda d: _natural(d.name))


def _identity(profile: HardwareProfile, device: SliceDevice) -> dict[str, str]:
    allocation = profile.telemetry.allocation if profile.telemetry else None
    if allocation is None:
        return {}
    out = {}
    for common, names in (("pci_bus_id", allocation.pci_attributes), ("uuid", allocation.uuid_attributes),
                          ("serial", allocation.serial_attributes)):
        value = next((device.attributes.get(qualified(n, device.driver)) for n in names
                      if device.attributes.get(qualified(n, device.driver))), None)
        if value:
            out[common] = value
    return out


def _holders_by_claim(profile: HardwareProfile, cluster: ClusterObjects, node: str) -> dict[str, tuple[str, str, str]]:
    """Slice device name -> the active pod whose ResourceClaim holds it, on ``node``."""
    out: dict[str, tuple[str, str, str]] = {}
    for claim in cluster.claims:
        for result in claim.results:
            for name in claim.consumers or tuple(filter(None, [claim.owner_pod])):
                pod = cluster.pod(claim.namespace, name)
                if pod is None or not pod.active or pod.node != node:
                    continue
                pod_claim = next((k for k, v in pod.claim_names.items() if v == claim.name), None)
                container = (pod.container_for_claim(pod_claim) if pod_claim else None) or ""
                out.setdefault(result.device, (pod.namespace, pod.name, container))
    return out


def _holders_by_resource(profile: HardwareProfile, cluster: ClusterObjects, items: list[dict[str, Any]],
                         node: str) -> list[tuple[str, str, str]]:
    """One entry per device the node's active pods request as extended resources (a partition counts as one device)."""
    names = {n for m in profile.effective_modes().values() for n in m.resource_names}
    out = []
    pods = sorted((i for i in items if i.get("kind") == "Pod" and i.get("spec", {}).get("nodeName") == node),
                  key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"]))
    for item in pods:
        namespace, name = item["metadata"].get("namespace", ""), item["metadata"]["name"]
        pod = cluster.pod(namespace, name)
        if pod is None or not pod.active or pod.extended_claim is not None:
            continue
        for container in item["spec"].get("containers", []):
            limits = (container.get("resources") or {}).get("limits") or {}
            count = sum(int(float(v)) for k, v in limits.items()
                        if k in names or any(k.startswith(prefix) for prefix in profile.resource_prefixes))
            out.extend([(namespace, name, container["name"])] * count)
    return out


def devices_of(profile: HardwareProfile, cluster: ClusterObjects, items: list[dict[str, Any]], node: str,
               count: int) -> list[Device]:
    """The ``count`` devices of ``profile`` on ``node``, each with its holder and identity, from the demo cluster."""
    slices = _slice_devices(profile, cluster, node)
    claimed = _holders_by_claim(profile, cluster, node)
    if slices and claimed:
        return [Device(claimed.get(d.name), _identity(profile, d)) for d in slices[:count]] + [Device()] * (count - len(slices))
    holders = _holders_by_resource(profile, cluster, items, node)[:count]
    return [Device(h) for h in holders] + [Device() for _ in range(count - len(holders))]


def _labels(plan: DevicePlan, quantity: QuantityPlan, node: str, device: int, model: str, held: Device) -> dict[str, str]:
    labels = {plan.labels["node"][0]: node, plan.labels["device"][0]: str(device)}
    if "model" in plan.labels and model:
        labels[plan.labels["model"][0]] = model
    for common, value in held.identity.items():  # the slice's identity (it may also be the device label)
        name = _spelling(plan, common)
        if name:
            labels[name] = value
    if held.holder is not None:
        for common, value in zip(("namespace", "pod", "container"), held.holder):
            name = _spelling(plan, common)
            if name:
                labels[name] = value
    for matcher in quantity.matchers:  # equality matchers select the series the exporter labels so
        found = EQUALS.match(matcher.strip())
        if found and found["value"]:
            labels[found["name"]] = found["value"]
    return labels


def _metrics(plan: DevicePlan, wanted: dict[str, float]) -> dict[str, tuple[QuantityPlan, float]]:
    """metric -> (the quantity it was set for, value in the source unit), honouring each combine rule."""
    values: dict[str, tuple[QuantityPlan, float]] = {}
    for q in plan.quantities:
        if q.quantity.key not in wanted:  # throughputs and traffic counters: the demo publishes none
            continue
        target = wanted[q.quantity.key] / float(q.factor)
        if q.combine == "divide":
            numerator = values.get(q.metrics[0], (q, target * 0.5))[1]
            values.setdefault(q.metrics[0], (q, numerator))
            values.setdefault(q.metrics[1], (q, numerator / target if target else 0.0))
        elif q.combine == "sum":
            missing = [m for m in q.metrics if m not in values]
            rest = target - sum(values[m][1] for m in q.metrics if m in values)
            for index, metric in enumerate(missing):
                values[metric] = (q, rest if index == 0 else 0.0)
        else:
            values.setdefault(q.metrics[0], (q, target))
    return values


def demo_items() -> list[dict[str, Any]]:
    """The demo cluster's objects as Kubernetes documents."""
    from llm_d_lens.cluster.source import ClusterSource

    return list(ClusterSource(demo=True).load(None).all_items())


def demo_cluster() -> ClusterObjects:
    """The demo cluster's pods, nodes, claims and slices, as the telemetry joins read them."""
    return ClusterObjects.from_documents([("demo cluster", {"kind": "List", "items": demo_items()})])


def lines() -> Iterator[str]:
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.hardware.registry import get_registry

    registry = get_registry()
    overview = inspect(ClusterSource(demo=True)).to_dict()
    items = demo_items()
    cluster = ClusterObjects.from_documents([("demo cluster", {"kind": "List", "items": items})])
    layout = {}
    for node in overview["nodes"]:
        for held in node["hardware"]:
            profile = registry.get(held["profile_id"])
            if plan_for(profile) is not None and held["devices"]:
                layout[(node["name"], held["profile_id"])] = devices_of(profile, cluster, items, node["name"], held["devices"])
    for t in range(0, DURATION + 1, STEP):
        for node in overview["nodes"]:
            for held in node["hardware"]:
                plan = plan_for(registry.get(held["profile_id"]))
                if plan is None or not held["devices"]:
                    continue
                per_device = held["vram"]["total_bytes"] / held["devices"] if held["vram"]["total_bytes"] else 64 * 2**30
                model = (held["products"] or [""])[0]
                for device, placed in enumerate(layout[(node["name"], held["profile_id"])]):
                    wanted = _wanted(device, placed.holder is not None, t, float(per_device // 2**20 * 2**20))
                    for metric, (q, value) in _metrics(plan, wanted).items():
                        labels = _labels(plan, q, node["name"], device, model, placed)
                        rendered = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                        yield f"{metric}{{{rendered}}} {value!r} {t * 1000}"


def main() -> None:
    text = "\n".join(lines()) + "\n"
    (HERE / "telemetry.prom.gz").write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))


if __name__ == "__main__":
    main()
