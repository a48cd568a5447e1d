"""Checks on a fitted render: does every model-server pod ask for the hardware the way its mode says?

The checks mirror the guide's common errors: a DRA mode whose pods reference no
ResourceClaimTemplate on the mode's device class ("ResourceClaimTemplate is missing"), a claim
left in an extended-resource render, a count that is not the one asked for, labels naming other
hardware, and roles of one deployment on different hardware. A device request that resolves to no
registered profile (a NIC such as an RDMA resource beside the GPU) is reported as a warning:
Lens cannot check it, but it is not wrong.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import msgspec

from llm_d_lens.deploy.workloads import (
    CLAIM_TEMPLATE_KIND,
    DRA_API_VERSION,
    DeviceRequest,
    DeviceView,
    PodTemplate,
    all_pod_templates,
    is_placeholder_image,
    request_class,
    template_requests,
)
from llm_d_lens.hardware.models import DeploymentMode, HardwareProfile
from llm_d_lens.hardware.resolution import VARIANT_LABEL, VENDOR_LABEL, Resolver


class Issue(msgspec.Struct, frozen=True):
    severity: str  # "error" | "warning"
    code: str
    where: str  # Kind/name of the object
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message} [{self.code}]"

    def to_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "where": self.where, "message": self.message}


def hardware_by_role(objects: list[dict[str, Any]], resolver: Resolver) -> dict[str, dict[str, set[str]]]:
    """role -> registered hardware -> the resources/device classes through which the role asks for it."""
    view = DeviceView(resolver, objects)
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for pod in all_pod_templates(objects):
        for container in pod.containers():
            for request in view.requests(pod, container):
                if request.profile_id:
                    found[pod.role][request.profile_id].add(request.key)
    return found


def mixed_hardware(objects: list[dict[str, Any]], resolver: Resolver) -> Issue | None:
    """One deployment, one hardware: roles (or containers) asking for different hardware are refused."""
    by_role = hardware_by_role(objects, resolver)
    profiles = {p for hardware in by_role.values() for p in hardware}
    if len(profiles) < 2:
        return None
    described = "; ".join(
        f"role {role} asks for " + ", ".join(f"{pid} ({', '.join(sorted(keys))})" for pid, keys in sorted(hw.items()))
        for role, hw in sorted(by_role.items())
    )
    return Issue("error", "MIXED_HARDWARE", "deployment",
                 f"the roles of one deployment must run on one hardware, found {', '.join(sorted(profiles))}: {described}")


def validate(objects: list[dict[str, Any]], profile: HardwareProfile, mode_name: str, mode: DeploymentMode,
             counts: dict[str, int], resolver: Resolver) -> list[Issue]:
    """Every problem with a fitted render, errors first."""
    issues: list[Issue] = []
    view = DeviceView(resolver, objects)
    mixed = mixed_hardware(objects, resolver)
    if mixed is not None:
        issues.append(mixed)
    accelerated = [pod for pod in all_pod_templates(objects) if view.is_accelerated(pod)]
    from llm_d_lens.deploy.network import NetworkMatcher

    nics = NetworkMatcher(resolver.registry.network_profiles())
    if not accelerated:
        issues.append(Issue("error", "NO_MODEL_SERVER", "render",
                            f"no pod template is labelled {VARIANT_LABEL} or asks for registered hardware"))
    for pod in accelerated:
        issues += _labels(pod, profile, resolver)
        requests = [r for c in pod.containers() for r in view.requests(pod, c)]
        for request in requests:
            if request.profile_id is None and request.count != 0 and not _is_nic(request, nics, view, pod):
                # a limit of 0 asks for nothing; a NIC is checked by its pairing (network.py)
                issues.append(Issue("warning", "DEVICE_NOT_REGISTERED", pod.display,
                                    f"container {request.container} asks for {request.describe()}, which resolves to no "
                                    f"registered hardware; Lens cannot check it"))
        issues += _shape(pod, requests, profile, mode_name, mode, counts.get(pod.display))
    for pod in all_pod_templates(objects):
        for entry in pod.spec.get("resourceClaims") or []:
            name = entry.get("resourceClaimTemplateName") if isinstance(entry, dict) else None
            # a template the render lacks may come from an operator (a ComputeDomain creates its own); one the
            # render holds under a prefixed name is a reference kustomize's namePrefix did not follow
            similar = sorted(t for t in view.templates if t.endswith(f"-{name}")) if name and name not in view.templates else []
            if similar:
                issues.append(Issue("error", "CLAIM_TEMPLATE_NOT_RENDERED", pod.display,
                                    f"claim {entry.get('name')} names ResourceClaimTemplate {name}, which the render does "
                                    f"not contain (an upstream problem); the render has {', '.join(similar)}: a namePrefix "
                                    f"renamed it without a nameReference"))
        for container in [*pod.containers(), *(c for c in pod.spec.get("initContainers") or [] if isinstance(c, dict))]:
            image = container.get("image")
            if isinstance(image, str) and is_placeholder_image(image):
                issues.append(Issue("error", "PLACEHOLDER_IMAGE", pod.display,
                                    f"container {container.get('name')} keeps the placeholder image {image}, which no "
                                    f"registry serves; upstream fills it in an overlay built on this one"))
    if mode.request_model != "dra":
        for obj in objects:
            if obj.get("kind") == CLAIM_TEMPLATE_KIND:
                classes = {request_class(r) for r in template_requests(obj)}
                if any(view.class_owner(c) for c in classes):
                    issues.append(Issue("error", "UNEXPECTED_RESOURCE_CLAIM", f"{CLAIM_TEMPLATE_KIND}/{obj['metadata'].get('name')}",
                                        f"a claim on {', '.join(sorted(str(c) for c in classes))} in a {mode.request_model} "
                                        f"render (access mode {mode_name!r})"))
    for name, template in view.templates.items():
        if template.get("apiVersion") != DRA_API_VERSION and any(view.class_owner(request_class(r)) for r in template_requests(template)):
            issues.append(Issue("error", "CLAIM_API_VERSION", f"{CLAIM_TEMPLATE_KIND}/{name}",
                                f"is {template.get('apiVersion')}; Lens writes {DRA_API_VERSION}"))
    return sorted(issues, key=lambda i: i.severity != "error")


def _is_nic(request: DeviceRequest, nics: Any, view: DeviceView, pod: PodTemplate) -> bool:
    if request.kind == "resource":
        return nics.resource(request.key) is not None
    template = view.templates.get(str(request.template)) if request.template else None
    return template is not None and any(
        r.get("name") == request.request and nics.request(r) is not None for r in template_requests(template))


def _labels(pod: PodTemplate, profile: HardwareProfile, resolver: Resolver) -> list[Issue]:
    variant, vendor = pod.labels.get(VARIANT_LABEL), pod.labels.get(VENDOR_LABEL)
    if variant is None and vendor is None:
        return []
    found = resolver.match_labels({k: v for k, v in ((VARIANT_LABEL, variant), (VENDOR_LABEL, vendor)) if v is not None})
    if found.profile_id == profile.id:
        return []
    return [Issue("error", "LABEL_MISMATCH", pod.display,
                  f"labels {VARIANT_LABEL}={variant}, {VENDOR_LABEL}={vendor} resolve to "
                  f"{found.profile_id or found.status}, not {profile.id}")]


def _shape(pod: PodTemplate, requests: list[DeviceRequest], profile: HardwareProfile, mode_name: str,
           mode: DeploymentMode, count: int | None) -> list[Issue]:
    mine = [r for r in requests if r.profile_id == profile.id]
    claims = [r for r in mine if r.kind == "claim"]
    resources = [r for r in mine if r.kind == "resource"]
    any_claim = [r for r in requests if r.kind == "claim" and r.profile_id]
    where, issues = pod.display, []
    if mode.request_model == "dra":
        wanted = [r for r in claims if r.key == mode.device_class
                  or (mode.partition_device_class is not None and r.key == mode.partition_device_class)]
        if not wanted:
            issues.append(Issue("error", "RESOURCE_CLAIM_TEMPLATE_MISSING", where,
                                f"ResourceClaimTemplate is missing: no container asks for {mode.device_class} through a "
                                f"ResourceClaimTemplate, which access mode {mode_name!r} of {profile.id} needs"))
        elif count is not None and any(n != count for n in _per_container(wanted).values()):
            issues.append(Issue("error", "COUNT_MISMATCH", where,
                                f"asks for {', '.join(r.describe() for r in wanted)}, not {count} device(s)"))
        for r in resources:
            issues.append(Issue("error", "MIXED_REQUEST_MODEL", where,
                                f"container {r.container} still asks for {r.describe()} beside its DRA claim"))
    elif mode.request_model == "extended-resource":
        for r in any_claim:
            issues.append(Issue("error", "UNEXPECTED_RESOURCE_CLAIM", where,
                                f"container {r.container} asks for {r.describe()}, a claim in an extended-resource render "
                                f"(access mode {mode_name!r})"))
        wanted = [r for r in resources if r.key in mode.resource_names
                  or any(re.fullmatch(p, r.key) for p in profile.inventory.partition_resource_patterns)]
        if not wanted:
            issues.append(Issue("error", "EXTENDED_RESOURCE_MISSING", where,
                                f"no container asks for {' or '.join(mode.resource_names)}, which access mode {mode_name!r} needs"))
        elif count is not None and any(r.count != count for r in wanted):
            issues.append(Issue("error", "COUNT_MISMATCH", where,
                                f"asks for {', '.join(r.describe() for r in wanted)}, not {count} device(s)"))
    else:
        for r in [r for r in requests if r.profile_id]:
            issues.append(Issue("error", "UNEXPECTED_DEVICE_REQUEST", where,
                                f"container {r.container} asks for {r.describe()}, but access mode {mode_name!r} asks for none"))
    return issues


def _per_container(requests: list[DeviceRequest]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for request in requests:
        totals[request.container] += request.count or 0
    return totals
