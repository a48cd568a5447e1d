"""The blocking presence preflight: is the hardware really on some node?

First the profile's ``ensure_refs`` (NFD NodeFeatureRules) are applied, since they are what puts
the labels on nodes. Then nodes are listed until one carries every label of the presence
selector, for at most ``timeout_seconds``. With nothing to ensure, a listing without a match is
final: no rule is coming to add the label, so waiting would only delay the same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.resolution import selector_matches
from llm_d_lens.k8s.objects import labels_of, name_of
from llm_d_lens.monitoring.gpu_driver.clock import Clock
from llm_d_lens.monitoring.gpu_driver.commands import ensure_ref_argv
from llm_d_lens.k8s.version import format_version, parse_version
from llm_d_lens.monitoring.gpu_driver.errors import (
    HardwareNotPresent,
    KubernetesTooOld,
    PresenceNotDeclared,
    PresenceTimedOut,
    PresenceTimeoutInvalid,
)
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView

DEFAULT_TIMEOUT_SECONDS = 90
POLL_SECONDS = 5.0


@dataclass
class PresenceReport:
    hardware: str
    selector: dict[str, str]
    matched_nodes: list[str]
    nodes_checked: int
    ensured: list[str] = field(default_factory=list)
    attempts: int = 0
    waited_seconds: float = 0.0
    #: the access mode preflight checked and its Kubernetes minimum against the server's version
    kubernetes: dict[str, Any] | None = None

    @property
    def present(self) -> bool:
        return bool(self.matched_nodes)

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "present": self.present, "selector": self.selector,
                "matched_nodes": self.matched_nodes, "nodes_checked": self.nodes_checked,
                "ensured": self.ensured, "attempts": self.attempts, "waited_seconds": self.waited_seconds,
                "kubernetes": self.kubernetes}


async def check_kubernetes(profile: HardwareProfile, mode_name: str | None, view: ClusterView) -> dict[str, Any]:
    """The mode's ``min_kubernetes_version`` (its chart's and its prerequisites', the highest) against the
    server, before presence applies anything: the guide's order is preflight, then install, and install
    would refuse this cluster. ``mode_name`` None is the mode install picks (the first access mode).
    A mode Lens installs nothing for, or that names no minimum, reads nothing from the cluster.
    """
    from llm_d_lens.monitoring.gpu_driver.target import resolve_mode_name

    name = resolve_mode_name(profile, mode_name)
    mode = profile.driver.modes.get(name) if profile.driver is not None else None
    needed = [(parse_version(r.min_kubernetes_version), r) for r in ([mode, *mode.prerequisites] if mode else [])
              if r.min_kubernetes_version]
    needed = [(version, r) for version, r in needed if version is not None]
    if not needed:
        return {"mode": name, "minimum": None, "server_version": None}
    minimum, release = max(needed, key=lambda item: item[0])
    wanted = release.min_kubernetes_version or format_version(minimum)
    version, shown = await view.server_version()
    if version < minimum:
        others = [m for m in profile.access_modes if m != name]
        hint = f"; or check another mode (--mode {' / '.join(others)})" if others else ""
        raise KubernetesTooOld(
            f"hardware {profile.id!r} mode {name!r} needs Kubernetes {wanted} or newer ({release.manifest_ref}"
            f"{' ' + release.chart_version if release.chart_version else ''}); the cluster runs {shown}. "
            f"Preflight stopped before applying anything. Next step: upgrade the cluster to {wanted}{hint}.",
            details={"hardware": profile.id, "mode": name, "minimum": wanted, "server_version": shown},
        )
    return {"mode": name, "minimum": wanted, "server_version": shown}


def selector_text(selector: dict[str, str]) -> str:
    return ",".join(k if v == "*" else f"{k}={v}" for k, v in sorted(selector.items()))


def presence_selectors(profile: HardwareProfile) -> list[dict[str, str]]:
    """Every label set that proves presence: the selector, then the presence block's alternatives."""
    selector, _, _ = presence_settings(profile)
    return [selector, *(dict(a) for a in (profile.presence.alternatives if profile.presence else []))]


def presence_settings(profile: HardwareProfile) -> tuple[dict[str, str], list[str], int]:
    """(selector, ensure_refs, timeout): the presence block, else the profile's node_label_selector."""
    if profile.presence is not None:
        p = profile.presence
        return dict(p.node_label_selector), list(p.ensure_refs), p.timeout_seconds
    if profile.node_label_selector:
        return dict(profile.node_label_selector), [], DEFAULT_TIMEOUT_SECONDS
    raise PresenceNotDeclared(
        f"hardware {profile.id!r} declares neither presence.node_label_selector nor node_label_selector; "
        "there is no label to wait for",
        details={"hardware": profile.id},
    )


async def ensure_presence(profile: HardwareProfile, view: ClusterView, clock: Clock, *,
                          timeout_seconds: float | None = None, poll_seconds: float = POLL_SECONDS) -> PresenceReport:
    if timeout_seconds is not None and not (math.isfinite(timeout_seconds) and timeout_seconds >= 0):
        raise PresenceTimeoutInvalid(f"timeout {timeout_seconds:g}: give a finite number of seconds, 0 or more",
                                     details={"timeout_seconds": str(timeout_seconds)})
    selector, refs, default_timeout = presence_settings(profile)
    selectors = presence_selectors(profile)
    timeout = default_timeout if timeout_seconds is None else timeout_seconds
    for ref in refs:
        await view.runner.arun(ensure_ref_argv(ref))
    started = clock.monotonic()
    report = PresenceReport(profile.id, selector, [], 0, ensured=refs)
    while True:
        nodes = await view.nodes(fresh=True)
        report.attempts += 1
        report.nodes_checked = len(nodes)
        report.matched_nodes = sorted(name_of(n) for n in nodes
                                      if any(selector_matches(s, labels_of(n)) for s in selectors))
        report.waited_seconds = clock.monotonic() - started
        if report.matched_nodes:
            return report
        label = " or ".join(selector_text(s) for s in selectors)
        if not refs:
            raise HardwareNotPresent(
                f"no node carries {label} for hardware {profile.id!r} ({len(nodes)} node(s) checked) and the "
                "profile has no ensure_refs that could add it, so Lens is not waiting. Next step: make sure the "
                "host driver is installed on the hardware's nodes and that node-feature-discovery (or the vendor's "
                "labeller) labels them, or fix presence.node_label_selector.",
                details=report.to_dict(),
            )
        remaining = timeout - report.waited_seconds
        if remaining <= 0:
            raise PresenceTimedOut(
                f"no node got {label} for hardware {profile.id!r} within {timeout:g}s after applying "
                f"{', '.join(refs)} ({len(nodes)} node(s) checked, {report.attempts} listings). Next step: check "
                "that node-feature-discovery runs and that the host driver is loaded on the hardware's nodes.",
                details=report.to_dict(),
            )
        await clock.sleep(min(poll_seconds, remaining))
