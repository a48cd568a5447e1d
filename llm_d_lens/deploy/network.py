"""GPU:NIC pairing of a render, per model-server pod, from the network device profiles.

llm-d's disaggregated and wide-EP overlays give each pod RDMA NICs beside its accelerators: an
extended resource (a shared RDMA device, an SR-IOV function, one resource per numbered interface)
or a request in the accelerator's own ResourceClaim (a network DeviceClass, or a selector on a
network DRA driver's attributes) tied to the accelerator by a ``matchAttribute`` constraint. Lens
reports, per pod, how many accelerators and NICs it asks for and whether the pairing holds:

* ``per-device`` NICs must number the pod's accelerators (one NIC per accelerator);
* ``shared`` NICs serve every accelerator of the pod with one handle;
* a NIC asked for as ``0`` is left to the platform (a webhook injects the real request).

A render whose fitting breaks a pairing the overlay had is refused (NIC_PAIRING_BROKEN); an overlay
that never paired is warned about (NIC_PAIRING_UPSTREAM). No vendor is named here: the resource
names, classes, drivers and pairings are the network profiles'.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from llm_d_lens.deploy.validate import Issue
from llm_d_lens.deploy.workloads import (
    DeviceView,
    PodTemplate,
    all_pod_templates,
    container_resources,
    request_class,
    request_count,
    template_requests,
)
from llm_d_lens.hardware.models import HardwareProfile, NetworkProfile
from llm_d_lens.hardware.registry import Registry

_CEL_ATTRIBUTE_DOMAIN = re.compile(r'device\.attributes\[\s*"([^"]+)"\s*\]')
_CEL_DRIVER = re.compile(r'device\.driver\s*==\s*"([^"]+)"')


class PodPairing(msgspec.Struct):
    """One pod's accelerators and NICs, and whether they pair."""

    pod: str
    accelerators: int
    nics: dict[str, int] = msgspec.field(default_factory=dict)  # network profile id -> NICs the pod asks for
    pairing: dict[str, str] = msgspec.field(default_factory=dict)  # network profile id -> per-device | shared
    constraints: list[str] = msgspec.field(default_factory=list)  # matchAttribute attributes tying NICs to accelerators
    platform: list[str] = msgspec.field(default_factory=list)  # NIC resources asked for as 0 (the platform fills them)

    @property
    def status(self) -> str:
        if not self.nics:
            return "platform" if self.platform else "none"
        if any(self.pairing[p] == "per-device" and n != self.accelerators for p, n in self.nics.items()):
            return "broken"
        return "paired" if any(self.pairing[p] == "per-device" for p in self.nics) else "shared"

    def describe(self) -> str:
        nics = ", ".join(f"{n} × {p} ({self.pairing[p]})" for p, n in sorted(self.nics.items())) or "no NIC"
        tied = f", tied by matchAttribute {', '.join(self.constraints)}" if self.constraints else ""
        return f"{self.accelerators} accelerator(s) : {nics}{tied} [{self.status}]"

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "accelerators": self.accelerators, "nics": dict(sorted(self.nics.items())),
                "pairing": dict(sorted(self.pairing.items())), "constraints": list(self.constraints),
                "platform": list(self.platform), "status": self.status}


class NetworkMatcher:
    """Which network profile a resource name, device class or CEL selector belongs to."""

    def __init__(self, profiles: list[NetworkProfile]):
        self.profiles = {p.id: p for p in profiles}
        self._names = {name: p.id for p in profiles for name in p.resource_names}
        self._patterns = [(re.compile(x), p.id) for p in profiles for x in p.resource_patterns]
        self._groups = {p.id: re.compile(p.network.device_group_pattern) for p in profiles if p.network.device_group_pattern}
        self._classes = {c: p.id for p in profiles for c in p.device_classes}
        self._drivers = {d: p.id for p in profiles for d in p.dra_drivers}

    def resource(self, name: str) -> tuple[str, str] | None:
        """(profile id, the NIC it names) for a NIC resource name; None otherwise."""
        profile_id = self._names.get(name) or next((pid for pattern, pid in self._patterns if pattern.search(name)), None)
        if profile_id is None:
            return None
        group = self._groups.get(profile_id)
        found = group.search(name) if group is not None else None
        return profile_id, (found.group(1) if found is not None and found.groups() else name)

    def request(self, request: dict[str, Any]) -> str | None:
        """The network profile a claim request asks for, by its class or by the driver its selectors name."""
        device_class = request_class(request)
        if device_class in self._classes:
            return self._classes[device_class]
        body = request.get("exactly") if isinstance(request.get("exactly"), dict) else request
        for selector in body.get("selectors") or []:
            expression = str(((selector or {}).get("cel") or {}).get("expression") or "") if isinstance(selector, dict) else ""
            for domain in [*_CEL_ATTRIBUTE_DOMAIN.findall(expression), *_CEL_DRIVER.findall(expression)]:
                if domain in self._drivers:
                    return self._drivers[domain]
        return None


def pairings(objects: list[dict[str, Any]], profile: HardwareProfile, registry: Registry,
             view: DeviceView) -> list[PodPairing]:
    """Every accelerated pod's pairing (pods asking for no NIC included, as ``none``)."""
    matcher = NetworkMatcher(registry.network_profiles())
    if not matcher.profiles:
        return []
    view = DeviceView(view.resolver, objects)
    out = []
    for pod in all_pod_templates(objects):
        if not view.is_accelerated(pod):
            continue
        accelerators = sum(r.count or 0 for r in view.pod_requests(pod, profile.id))
        out.append(_pod(pod, accelerators, matcher, view))
    return out


def _pod(pod: PodTemplate, accelerators: int, matcher: NetworkMatcher, view: DeviceView) -> PodPairing:
    entry = PodPairing(pod.display, accelerators)
    groups: dict[tuple[str, str], int] = {}
    seen_claims: set[tuple[str | None, str | None]] = set()
    for container in pod.containers():
        resources = container_resources(container)
        limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
        for name in dict.fromkeys([*limits, *requests]):
            found = matcher.resource(str(name))
            if found is None:
                continue
            count = _count(limits.get(name, requests.get(name)))
            if count == 0:
                entry.platform.append(str(name))
                continue
            groups[found] = max(groups.get(found, 0), count or 0)  # one NIC under two names counts once
        for claim, template_name, request in view.claims(pod, container):
            if request is None or (template_name, request.get("name")) in seen_claims:
                continue
            seen_claims.add((template_name, request.get("name")))
            profile_id = matcher.request(request)
            if profile_id is None:
                continue
            groups[(profile_id, f"{template_name}/{request.get('name')}")] = request_count(request) or 1
            entry.constraints += _constraints(view.templates.get(str(template_name)), str(request.get("name")))
    for (profile_id, _), count in groups.items():
        network = matcher.profiles[profile_id]
        pairing = network.network.pairing
        entry.pairing[profile_id] = pairing
        entry.nics[profile_id] = entry.nics.get(profile_id, 0) + (min(count, 1) if pairing == "shared" else count)
    entry.constraints = sorted(set(entry.constraints))
    entry.platform = sorted(set(entry.platform))
    return entry


def _constraints(template: dict[str, Any] | None, request: str) -> list[str]:
    if template is None:
        return []
    devices = ((template.get("spec") or {}).get("spec") or {}).get("devices") or {}
    found = []
    names = {str(r.get("name")) for r in template_requests(template)}
    for constraint in devices.get("constraints") or []:
        if not isinstance(constraint, dict) or not constraint.get("matchAttribute"):
            continue
        over = constraint.get("requests") or sorted(names)  # no list: every request of the claim
        if request in over and len(over) > 1:
            found.append(str(constraint["matchAttribute"]))
    return found


def _count(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def pairing_issues(before: list[PodPairing], after: list[PodPairing]) -> list[Issue]:
    """NIC_PAIRING_BROKEN where the fitted render breaks a pairing the overlay held; a warning where
    the overlay itself never paired; NIC_CONSTRAINT_LOST where a matchAttribute tie was dropped."""
    was = {p.pod: p for p in before}
    issues = []
    for pod in after:
        old = was.get(pod.pod)
        if pod.status == "broken":
            code, severity = ("NIC_PAIRING_UPSTREAM", "warning") if old is not None and old.status == "broken" else (
                "NIC_PAIRING_BROKEN", "error")
            issues.append(Issue(severity, code, pod.pod,
                                f"asks for {pod.describe()}: a per-device NIC needs one per accelerator"
                                + ("" if severity == "warning" else
                                   (f" (the overlay paired {old.describe()}); keep the overlay's count or give the pod "
                                    "as many NICs" if old is not None else ""))))
        if old is not None and set(old.constraints) - set(pod.constraints):
            lost = ", ".join(sorted(set(old.constraints) - set(pod.constraints)))
            issues.append(Issue("warning", "NIC_CONSTRAINT_LOST", pod.pod,
                                f"the overlay tied its NICs to its accelerators by matchAttribute {lost}, which the "
                                "fitted claim does not keep (the access mode asks for the accelerator another way)"))
    return issues
