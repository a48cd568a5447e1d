"""Driver status: the DaemonSets a mode runs as, how many are ready, which version, and which
hardware nodes have none of its pods.

A mode's DaemonSets are found by the profile's ``daemonset_matchers`` (managed or unmanaged modes
alike); hardware nodes by the presence selector, so a missing node is one that has the hardware's
labels but no running pod of the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from llm_d_lens.hardware.models import DaemonSetMatcher, HardwareProfile
from llm_d_lens.hardware.resolution import selector_matches
from llm_d_lens.k8s.objects import labels_of, name_of, namespace_of
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.monitoring.gpu_driver.target import unmanaged_reason

State = Literal["ready", "degraded", "not-installed", "no-matchers"]
VERSION_LABEL = "app.kubernetes.io/version"
CHART_LABEL = "helm.sh/chart"


def matcher_matches(matcher: DaemonSetMatcher, ds: Mapping[str, Any]) -> bool:
    name, labels = name_of(ds), labels_of(ds)
    return (
        (matcher.name is None or name == matcher.name)
        and (matcher.name_contains is None or matcher.name_contains in name)
        and (matcher.namespace is None or namespace_of(ds) == matcher.namespace)
        and all(labels.get(k) == v for k, v in matcher.labels.items())
    )


def matching_daemonsets(matchers: Sequence[DaemonSetMatcher], daemonsets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(ds) for ds in daemonsets if any(matcher_matches(m, ds) for m in matchers)]


def daemonset_version(ds: Mapping[str, Any]) -> str | None:
    """app.kubernetes.io/version, else the helm.sh/chart suffix, else the first container's image tag."""
    labels = labels_of(ds)
    if labels.get(VERSION_LABEL):
        return labels[VERSION_LABEL]
    chart = labels.get(CHART_LABEL, "")
    if "-" in chart:
        return chart.rsplit("-", 1)[1]
    containers = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
    image = str(containers[0].get("image", "")) if containers else ""
    tail = image.rsplit("/", 1)[-1]
    return tail.split(":", 1)[1].split("@", 1)[0] if ":" in tail else None


@dataclass
class DaemonSetStatus:
    namespace: str
    name: str
    desired: int
    ready: int
    available: int
    updated: int
    version: str | None
    nodes: list[str]  # nodes with a ready pod of this DaemonSet

    @classmethod
    def of(cls, ds: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> DaemonSetStatus:
        status = ds.get("status") or {}
        name = name_of(ds)
        nodes = sorted({str((pod.get("spec") or {}).get("nodeName")) for pod in pods
                        if owned_by(pod, name) and pod_ready(pod) and (pod.get("spec") or {}).get("nodeName")})
        return cls(namespace_of(ds), name, int(status.get("desiredNumberScheduled", 0)),
                   int(status.get("numberReady", 0)), int(status.get("numberAvailable", 0)),
                   int(status.get("updatedNumberScheduled", 0)), daemonset_version(ds), nodes)

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def owned_by(pod: Mapping[str, Any], daemonset: str) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("kind") == "DaemonSet" and o.get("name") == daemonset for o in owners)


def pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class ModeStatus:
    hardware: str
    mode: str
    managed: bool
    state: State
    daemonsets: list[DaemonSetStatus] = field(default_factory=list)
    hardware_nodes: list[str] = field(default_factory=list)
    missing_nodes: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def desired(self) -> int:
        return sum(d.desired for d in self.daemonsets)

    @property
    def ready(self) -> int:
        return sum(d.ready for d in self.daemonsets)

    @property
    def versions(self) -> list[str]:
        return sorted({d.version for d in self.daemonsets if d.version})

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": self.hardware, "mode": self.mode, "managed": self.managed, "state": self.state,
            "desired": self.desired, "ready": self.ready, "versions": self.versions,
            "daemonsets": [d.to_dict() for d in self.daemonsets],
            "hardware_nodes": self.hardware_nodes, "missing_nodes": self.missing_nodes, "note": self.note,
        }


def presence_selector(profile: HardwareProfile) -> dict[str, str]:
    """The labels that mark a node as having this hardware: presence's, else the profile's own."""
    if profile.presence is not None:
        return dict(profile.presence.node_label_selector)
    return dict(profile.node_label_selector)


def mode_matchers(profile: HardwareProfile, mode: str) -> list[DaemonSetMatcher]:
    if profile.driver is None:
        return []
    if mode in profile.driver.modes:
        return list(profile.driver.modes[mode].daemonset_matchers)
    if mode in profile.driver.unmanaged_modes:
        return list(profile.driver.unmanaged_modes[mode].daemonset_matchers)
    return []


async def mode_status(profile: HardwareProfile, mode: str, view: ClusterView,
                      nodes: list[dict[str, Any]] | None = None) -> ModeStatus:
    reason = unmanaged_reason(profile, mode)
    managed = reason is None
    matchers = mode_matchers(profile, mode)
    if not matchers:
        return ModeStatus(profile.id, mode, managed, "no-matchers", note=reason or "the profile names no DaemonSet for this mode")
    found = matching_daemonsets(matchers, await view.daemonsets())
    statuses = []
    for ds in found:
        statuses.append(DaemonSetStatus.of(ds, await view.pods(namespace_of(ds))))
    selector = presence_selector(profile)
    hardware_nodes = sorted(name_of(n) for n in (nodes or []) if selector and selector_matches(selector, labels_of(n)))
    running = {node for d in statuses for node in d.nodes}
    missing = [n for n in hardware_nodes if n not in running] if statuses else list(hardware_nodes)
    if not statuses:
        state: State = "not-installed"
    elif missing or any(d.ready < d.desired for d in statuses):
        state = "degraded"
    else:
        state = "ready"
    return ModeStatus(profile.id, mode, managed, state, statuses, hardware_nodes, missing, reason or "")


async def driver_status(profile: HardwareProfile, view: ClusterView, modes: Sequence[str] | None = None) -> list[ModeStatus]:
    """Every requested (default: every declared) access mode of one hardware."""
    nodes = await view.nodes()
    return [await mode_status(profile, mode, view, nodes) for mode in (modes or profile.access_modes)]
