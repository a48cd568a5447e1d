"""Is each hardware's exporter there, on every node with the hardware, and does Prometheus scrape it?

A profile's ``telemetry.exporter`` names the labels of the exporter's pods and its port. Nodes come
from the cluster (those carrying the profile's ``node_label_selector``), pods from every namespace,
and scrape targets from Prometheus' ``/api/v1/targets``: an exporter pod is scraped when a target
names it (the ``pod``/``namespace`` target labels, or the Kubernetes discovery labels) or scrapes its
address and port. Installing the exporter is the drivers' pinned, idempotent install of the
profile's chart (seed 000 section 6: the vendor's chart into the existing monitoring stack).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.models import Exporter, HardwareProfile
from llm_d_lens.k8s.objects import items, labels_of

PODS_ARGV = ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
#: Where Prometheus' Kubernetes discovery names a target's pod, when relabelling kept no pod label.
DISCOVERED_POD, DISCOVERED_NAMESPACE = "__meta_kubernetes_pod_name", "__meta_kubernetes_namespace"


class ExporterNotManaged(LensError):
    """The profile's exporter is deployed by something else (an operator, the platform); Lens installs nothing."""

    code = "EXPORTER_NOT_MANAGED"
    http_status = 409


class ExporterNotDeclared(LensError):
    code = "EXPORTER_NOT_DECLARED"
    http_status = 404


@dataclass
class ExporterPod:
    namespace: str
    name: str
    node: str
    phase: str
    scrape: str  # up | down | not scraped | unknown (no Prometheus asked)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "pod": self.name, "node": self.node or None, "phase": self.phase,
                "scrape": self.scrape, "error": self.error}


@dataclass
class ExporterStatus:
    hardware: str
    exporter: Exporter
    nodes: list[str] = field(default_factory=list)  # nodes that have the hardware
    pods: list[ExporterPod] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        """Nodes with the hardware but no running exporter pod."""
        running = {p.node for p in self.pods if p.phase == "Running"}
        return [n for n in self.nodes if n not in running]

    @property
    def unscraped(self) -> list[ExporterPod]:
        return [p for p in self.pods if p.scrape in ("down", "not scraped")]

    def to_dict(self) -> dict[str, Any]:
        release = self.exporter.release
        return {
            "hardware": self.hardware,
            "chart": release.manifest_ref if release else None,
            "version": release.chart_version if release else None,
            "managed_by": None if release else self.exporter.unmanaged_reason,
            "port": self.exporter.port,
            "monitor": self.exporter.monitor,
            "nodes": self.nodes,
            "missing_nodes": self.missing,
            "pods": [p.to_dict() for p in self.pods],
            "ok": bool(self.nodes) and not self.missing and not self.unscraped,
        }


def _selected(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Every wanted label present, with its value ("*" only has to exist)."""
    return all(k in labels and (v == "*" or labels[k] == v) for k, v in wanted.items())


def hardware_nodes(profile: HardwareProfile, nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    selector = profile.node_label_selector or (profile.presence.node_label_selector if profile.presence else {})
    if not selector:
        return []
    return sorted(n["metadata"]["name"] for n in nodes if _selected(labels_of(n), selector))


def _target_of(pod: Mapping[str, Any], port: int, targets: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    meta, status = pod.get("metadata", {}), pod.get("status", {})
    name, namespace, ip = meta.get("name"), meta.get("namespace"), status.get("podIP")
    for target in targets:
        labels, found = target.get("labels", {}), target.get("discoveredLabels", {})
        if labels.get("pod") == name and labels.get("namespace") == namespace:
            return target
        if found.get(DISCOVERED_POD) == name and found.get(DISCOVERED_NAMESPACE) == namespace:
            return target
        if ip and urlsplit(target.get("scrapeUrl", "")).netloc == f"{ip}:{port}":
            return target
    return None


def exporter_status(profile: HardwareProfile, nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
                    targets: Sequence[Mapping[str, Any]] | None) -> ExporterStatus:
    """The exporter of ``profile`` against the cluster's nodes and pods, and Prometheus' targets when known."""
    exporter = profile.telemetry.exporter if profile.telemetry else None
    assert exporter is not None
    out = ExporterStatus(profile.id, exporter, hardware_nodes(profile, nodes))
    for pod in pods:
        labels = labels_of(pod)
        if not any(_selected(labels, wanted) for wanted in exporter.pod_selectors):
            continue
        meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
        scrape, error = "unknown", None
        if targets is not None:
            target = _target_of(pod, exporter.port, targets)
            if target is None:
                scrape = "not scraped"
            else:
                scrape = "up" if target.get("health") == "up" else "down"
                error = target.get("lastError") or None
        out.pods.append(ExporterPod(meta.get("namespace", ""), meta.get("name", ""), spec.get("nodeName", ""),
                                    status.get("phase", ""), scrape, error))
    out.pods.sort(key=lambda p: (p.node, p.namespace, p.name))
    return out


def with_exporters(profiles: Sequence[HardwareProfile]) -> list[HardwareProfile]:
    return [p for p in profiles if p.telemetry is not None and p.telemetry.exporter is not None]


async def read_exporters(profiles: Sequence[HardwareProfile], view: Any, client: Any | None) -> list[ExporterStatus]:
    """Nodes and pods through ``view`` (a drivers ClusterView), targets through ``client`` when given."""
    nodes = await view.nodes()
    pods = items((await view.runner.arun(PODS_ARGV)).json())
    targets = await client.targets() if client is not None else None
    return [exporter_status(p, nodes, pods, targets) for p in with_exporters(profiles)]


def exporter_profiles(registry: Any, hardware: Sequence[str]) -> list[HardwareProfile]:
    """The named hardware (ids or aliases; an unknown one is its coded error), or every registered profile."""
    return [registry.get(h) for h in hardware] if hardware else registry.profiles()


async def exporters_status(registry: Any, hardware: Sequence[str], view: Any, client: Any | None) -> list[ExporterStatus]:
    """What ``lens telemetry exporters``, ``GET /api/v1/telemetry/exporters`` and the console show: one reading."""
    return await read_exporters(exporter_profiles(registry, hardware), view, client)


async def install_exporter(registry: Any, hardware: str, view: Any, *, dry_run: bool,
                           options: Mapping[str, Any] | None = None) -> Any:
    """The hardware's exporter chart installed like a driver (pinned, idempotent); ``dry_run`` runs nothing."""
    from llm_d_lens.monitoring.gpu_driver.install import install

    return await install(install_target(registry.get(hardware), options), view, dry_run=dry_run)


def install_target(profile: HardwareProfile, options: Mapping[str, Any] | None = None) -> Any:
    """The exporter's chart as a drivers install target (pinned, idempotent, values checked the same way)."""
    from llm_d_lens.monitoring.gpu_driver.target import DriverTarget

    exporter = profile.telemetry.exporter if profile.telemetry else None
    if exporter is None:
        raise ExporterNotDeclared(f"hardware {profile.id!r} declares no telemetry.exporter", details={"hardware": profile.id})
    if exporter.release is None:
        raise ExporterNotManaged(f"hardware {profile.id!r}: Lens does not install its exporter: {exporter.unmanaged_reason}",
                                 details={"hardware": profile.id, "reason": exporter.unmanaged_reason})
    return DriverTarget(profile.id, "exporter", exporter.release, "helm", {**exporter.release.options, **(options or {})})
