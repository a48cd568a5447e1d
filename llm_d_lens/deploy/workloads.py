"""Pod templates in rendered objects, and the devices their containers ask for.

Fitting and validation read a render the same way: every pod template (Deployments, StatefulSets,
Jobs, LeaderWorkerSets and any custom object with ``spec.template``), each container's extended
resources and DRA claims, and which registered hardware each of those resolves to. Keeping that
in one place means the validator checks exactly what the fitter wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import msgspec

from llm_d_lens.hardware.resolution import VARIANT_LABEL, Resolver
from llm_d_lens.k8s.objects import get_path, is_extended_resource, name_of, whole_quantity

ROLE_LABEL = "llm-d.ai/role"
#: An image that is a recipe's placeholder (``REPLACE_MODEL_SERVER_IMAGE``): one upper-case word, no registry or tag.
PLACEHOLDER_IMAGE = re.compile(r"[A-Z][A-Z0-9_]*")
CLAIM_TEMPLATE_KIND = "ResourceClaimTemplate"
DRA_API_VERSION = "resource.k8s.io/v1"

# Where the pod template sits, for kinds that do not keep it at spec.template.
_TEMPLATE_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "CronJob": (("spec", "jobTemplate", "spec", "template"),),
    "LeaderWorkerSet": (("spec", "leaderWorkerTemplate", "leaderTemplate"), ("spec", "leaderWorkerTemplate", "workerTemplate")),
}


class PodTemplate(msgspec.Struct):
    """One pod template inside a rendered object (the object itself for a bare Pod)."""

    workload: dict[str, Any]
    where: str
    metadata: dict[str, Any]
    spec: dict[str, Any]

    @property
    def name(self) -> str:
        return name_of(self.workload) or "?"

    @property
    def display(self) -> str:
        suffix = f" ({self.where})" if self.where not in ("spec", "spec.template") else ""
        return f"{self.workload.get('kind', '?')}/{self.name}{suffix}"

    @property
    def labels(self) -> dict[str, str]:
        labels = self.metadata.get("labels")
        return labels if isinstance(labels, dict) else {}

    @property
    def role(self) -> str:
        return str(self.labels.get(ROLE_LABEL) or self.name)

    def containers(self) -> list[dict[str, Any]]:
        containers = self.spec.get("containers")
        return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


class DeviceRequest(msgspec.Struct, frozen=True):
    """One device a container asks for: an extended resource, or a request inside a claim."""

    container: str
    kind: str  # "resource" | "claim"
    key: str  # the resource name, or the DRA device class
    count: int | None
    profile_id: str | None  # the registered hardware it resolves to
    template: str | None = None  # the ResourceClaimTemplate, for claims
    request: str | None = None  # the request name inside it, for claims
    claim: str | None = None  # the pod's resourceClaims entry, for claims

    def describe(self) -> str:
        if self.kind == "resource":
            return f"{self.key}: {self.count if self.count is not None else '?'}"
        where = f"ResourceClaimTemplate {self.template}" if self.template else "a ResourceClaim"
        return f"{self.count if self.count is not None else '?'} × {self.key} ({where}, request {self.request})"


def is_placeholder_image(image: str) -> bool:
    return PLACEHOLDER_IMAGE.fullmatch(image) is not None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def filled(parent: dict[str, Any], key: str, empty: Any) -> Any:
    """``parent[key]``, set to ``empty`` when absent or null (YAML's ``resources:`` with nothing under it)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = empty
    return value


def template_paths(obj: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    """Where ``obj`` keeps its pod templates (``("spec",)`` for a bare Pod, whose spec is the pod spec)."""
    kind = obj.get("kind")
    if kind == "Pod":
        return (("spec",),)
    return _TEMPLATE_PATHS.get(str(kind), (("spec", "template"),))


def pod_templates(obj: dict[str, Any]) -> list[PodTemplate]:
    kind = obj.get("kind")
    if kind == "Pod":
        spec = obj.get("spec")
        metadata = filled(obj, "metadata", {})
        return [PodTemplate(obj, "spec", metadata, spec)] if isinstance(spec, dict) else []
    found = []
    for path in template_paths(obj):
        template = get_path(obj, *path)
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            metadata = filled(template, "metadata", {})
            found.append(PodTemplate(obj, ".".join(path), metadata, template["spec"]))
    return found


def all_pod_templates(objects: list[dict[str, Any]]) -> Iterator[PodTemplate]:
    for obj in objects:
        yield from pod_templates(obj)


def claim_templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name_of(o): o for o in objects if o.get("kind") == CLAIM_TEMPLATE_KIND}


def template_requests(template: dict[str, Any]) -> list[dict[str, Any]]:
    requests = get_path(template, "spec", "spec", "devices", "requests")
    return [r for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []


def request_class(request: dict[str, Any]) -> str | None:
    """The device class of a claim request, in the v1 (``exactly``) or v1beta1 (flat) shape."""
    exactly = request.get("exactly")
    if isinstance(exactly, dict):
        return exactly.get("deviceClassName")
    if isinstance(request.get("firstAvailable"), list) and request["firstAvailable"]:
        first = request["firstAvailable"][0]
        return first.get("deviceClassName") if isinstance(first, dict) else None
    return request.get("deviceClassName")


def request_count(request: dict[str, Any]) -> int | None:
    exactly = request.get("exactly")
    body: dict[str, Any] = exactly if isinstance(exactly, dict) else request
    if body.get("allocationMode") == "All":
        return None
    return whole_quantity(body.get("count", 1))


def container_resources(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    resources = container.get("resources")
    return resources if isinstance(resources, dict) else {}


class DeviceView:
    """Reads device requests off pod templates, resolving each through the registry."""

    def __init__(self, resolver: Resolver, objects: list[dict[str, Any]]):
        self.resolver = resolver
        self.templates = claim_templates(objects)

    def resource_owner(self, name: str) -> str | None:
        return self.resolver.match_resource(name).profile_id

    def class_owner(self, device_class: str | None) -> str | None:
        return self.resolver.match_device_class(device_class).profile_id if device_class else None

    def requests(self, pod: PodTemplate, container: dict[str, Any]) -> list[DeviceRequest]:
        found: list[DeviceRequest] = []
        name = str(container.get("name", "?"))
        resources = container_resources(container)
        limits = _mapping(resources.get("limits"))
        requests = _mapping(resources.get("requests"))
        for resource in dict.fromkeys([*limits, *requests]):
            if is_extended_resource(resource):
                count = whole_quantity(limits.get(resource, requests.get(resource)))
                found.append(DeviceRequest(name, "resource", resource, count, self.resource_owner(resource)))
        for claim, template_name, request in self.claims(pod, container):
            device_class = request_class(request) if request is not None else None
            found.append(DeviceRequest(name, "claim", device_class or "?", request_count(request) if request else None,
                                       self.class_owner(device_class), template_name,
                                       request.get("name") if request else claim, claim))
        return found

    def claims(self, pod: PodTemplate, container: dict[str, Any]) -> Iterator[tuple[str, str | None, dict[str, Any] | None]]:
        """(pod claim name, template name, request) for each claim the container uses."""
        entries = {e.get("name"): e for e in pod.spec.get("resourceClaims") or [] if isinstance(e, dict)}
        for use in container_resources(container).get("claims") or []:
            if not isinstance(use, dict):
                continue
            entry = entries.get(use.get("name"))
            template_name = entry.get("resourceClaimTemplateName") if entry else None
            template = self.templates.get(str(template_name)) if template_name else None
            if template is None:
                yield str(use.get("name")), template_name, None
                continue
            for request in template_requests(template):
                if use.get("request") in (None, request.get("name")):
                    yield str(use.get("name")), str(template_name), request

    def pod_requests(self, pod: PodTemplate, profile_id: str,
                     containers: list[dict[str, Any]] | None = None) -> list[DeviceRequest]:
        """The requests for ``profile_id`` that stated a count, each allocation once.

        A pod may ask through several claims (one per device, four for a tensor-parallel-4 engine) or
        several requests in one claim; each is its own allocation, so their counts add up. A claim two
        containers share is one allocation and is listed once.
        """
        found: list[DeviceRequest] = []
        seen: set[tuple[str | None, str | None, str | None]] = set()
        for container in pod.containers() if containers is None else containers:
            for request in self.requests(pod, container):
                if request.profile_id != profile_id or request.count is None:
                    continue
                if request.kind == "claim":
                    key = (request.claim, request.template, request.request)
                    if key in seen:
                        continue
                    seen.add(key)
                found.append(request)
        return found

    def is_accelerated(self, pod: PodTemplate) -> bool:
        """A model-server pod: it asks for registered hardware, or llm-d labelled it with a variant."""
        if VARIANT_LABEL in pod.labels:
            return True
        return any(r.profile_id for c in pod.containers() for r in self.requests(pod, c))

    def targets(self, pod: PodTemplate) -> list[dict[str, Any]]:
        """The containers that get the accelerator: those already asking for one, else the first."""
        containers = pod.containers()
        asking = [c for c in containers if any(r.profile_id for r in self.requests(pod, c))]
        return asking or containers[:1]
