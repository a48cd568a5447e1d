"""Pods with their serving metrics and the device figures of exactly the devices they hold.

A pod's device figures are sums over the devices attributed to it. When any of its devices is
unavailable for attribution (no identity, shared with another pod) or its node is unattributed,
the pod gets no device figures at all and says why: a partial or node-wide number would look right
and be wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.accelerator.attribution import ATTRIBUTED, CLUSTER_OBJECTS_HINT, PodAllocation
from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects
from llm_d_lens.monitoring.accelerator.readings import DeviceReading
from llm_d_lens.monitoring.accelerator.service import DeviceReport, Selected, read_devices
from llm_d_lens.monitoring.profiling.pods import PodReading, metric_names, read_pods
from llm_d_lens.prometheus.client import PrometheusClient, gather_all

#: Device fields summed over a pod's devices, and the one averaged.
SUMMED = ("memory_used_bytes", "memory_total_bytes", "power_watts", "energy_joules")
AVERAGED = ("utilization_ratio",)


@dataclass
class PodReport:
    pods: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    queries_sent: int = 0
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "queries": self.queries_sent, "pods": self.pods, "warnings": self.warnings}


#: Why a pod has no device figures when no device of the selected hardware is attributed to it.
NO_DEVICES = "no device series of the selected hardware is attributed to this pod"


def device_figures(allocations: Sequence[PodAllocation], readings: dict[tuple[str, str], DeviceReading],
                   why_none: str | None = None) -> dict[str, Any]:
    """The pod's share of the devices: all of them, or nothing and the reason (``why_none`` when it holds none Lens sees)."""
    if not allocations:
        return {"status": None, "devices": [], "reason": why_none, **{f: None for f in (*SUMMED, *AVERAGED)}}
    refused = [a for a in allocations if a.status != ATTRIBUTED]
    names = [f"{a.hardware}:{d}" for a in allocations for d in a.devices]
    if refused:
        reason = "; ".join(f"{a.hardware}: {a.to_dict()['reason']}" for a in refused)
        return {"status": refused[0].status, "devices": names, "reason": reason, **{f: None for f in (*SUMMED, *AVERAGED)}}
    held = [readings[(a.hardware, d)] for a in allocations for d in a.devices if (a.hardware, d) in readings]
    out: dict[str, Any] = {"status": ATTRIBUTED, "devices": names, "reason": None}
    for name in SUMMED:
        values = [r.values[name] for r in held if name in r.values and math.isfinite(r.values[name])]
        out[name] = sum(values) if len(values) == len(held) and held else None
    for name in AVERAGED:
        values = [r.values[name] for r in held if name in r.values and math.isfinite(r.values[name])]
        out[name] = sum(values) / len(values) if len(values) == len(held) and held else None
    return out


def combine(readings: Sequence[PodReading], report: DeviceReport, namespace: str | None, pod: str | None,
            cluster: ClusterObjects | None = None) -> list[dict[str, Any]]:
    by_device = {(d.hardware, d.name): d for d in report.devices}
    why_none = None
    if report.hardware:
        why_none = NO_DEVICES + (
            f" (its exporters' pod labels do not name it; to join the allocations give {CLUSTER_OBJECTS_HINT})" if cluster is None
            else " (the cluster objects show it holding none of it)")
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for reading in readings:
        rows[reading.ref] = reading.to_dict()
    for ref in report.pods:
        if (namespace is None or ref[0] == namespace) and (pod is None or ref[1] == pod) and ref not in rows:
            rows[ref] = PodReading(*ref).to_dict()
    for ref, row in rows.items():
        row["devices"] = device_figures(report.pods.get(ref, []), by_device, why_none)
    return [rows[ref] for ref in sorted(rows)]


async def read_pod_report(
    client: PrometheusClient,
    selection: Sequence[Selected],
    pod_profiles: Sequence[HardwareProfile],
    *,
    at: float | None = None,
    namespace: str | None = None,
    pod: str | None = None,
    cluster: ClusterObjects | None = None,
    mode: str | None = None,
) -> PodReport:
    """Serving metrics of every pod (or the ones filtered), with their devices' figures."""
    before = client.queries_sent
    pods_read = read_pods(client, metric_names(pod_profiles), at=at, namespace=namespace, pod=pod)
    if selection:
        readings, devices = await gather_all(pods_read, read_devices(client, selection, at=at, cluster=cluster, mode=mode))
    else:
        readings, devices = await pods_read, DeviceReport()
    return PodReport(
        pods=combine(readings, devices, namespace, pod, cluster),
        warnings=devices.warnings,
        queries_sent=client.queries_sent - before,
        source=client.url,
    )
