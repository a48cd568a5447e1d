"""What classes claim: device classes, extended resources, DRA drivers or hardware ids.

A *class* is one thing that must be scheduled as a whole (an InferenceClass, a workload): its
claims are checked together, because some claims only fail in combination. Claims come from a
claims file, from command-line flags, or from the workloads already on a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llm_d_lens.k8s.objects import is_extended_resource, items, name_of, namespace_of, whole_quantity
from llm_d_lens.monitoring.gpu_driver.errors import ClaimsInvalid
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.runner import CommandFailed

ClaimKind = Literal["device_class", "resource", "dra_driver", "hardware"]
CLAIM_KINDS: tuple[ClaimKind, ...] = ("device_class", "resource", "dra_driver", "hardware")

PODS_ARGV = ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
TEMPLATES_ARGV = ["kubectl", "get", "resourceclaimtemplates.resource.k8s.io", "--all-namespaces", "-o", "json"]
CLAIMS_ARGV = ["kubectl", "get", "resourceclaims.resource.k8s.io", "--all-namespaces", "-o", "json"]
_REPLICASET_HASH = re.compile(r"-[a-z0-9]{5,10}$")


@dataclass(frozen=True)
class Claim:
    kind: ClaimKind
    key: str
    count: int | None = 1  # devices in one request; None = allocationMode All
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "count": self.count, "source": self.source}

    def describe(self) -> str:
        return f"{self.key} ({self.kind.replace('_', ' ')})"


@dataclass
class RequestedClass:
    name: str
    claims: list[Claim] = field(default_factory=list)


class _ClaimEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device_class: str | None = Field(default=None, min_length=1)
    resource: str | None = Field(default=None, min_length=1)
    dra_driver: str | None = Field(default=None, min_length=1)
    hardware: str | None = Field(default=None, min_length=1)
    count: int | Literal["All"] = 1

    @model_validator(mode="after")
    def _exactly_one(self) -> _ClaimEntry:
        given = [k for k in CLAIM_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(CLAIM_KINDS)} (got {', '.join(given) or 'none'})")
        if isinstance(self.count, int) and self.count < 1:
            raise ValueError("count must be at least 1, or All")
        return self


class _ClassEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    claims: list[_ClaimEntry] = Field(min_length=1)


class ClaimsDocument(BaseModel):
    """The claims file: classes and their claims, plus names provided outside Lens (e.g. dra.net)."""

    model_config = ConfigDict(extra="forbid")
    classes: list[_ClassEntry] = Field(default_factory=list)
    external: list[str] = Field(default_factory=list)


def parse_claims(data: Any, where: str) -> tuple[list[RequestedClass], list[str]]:
    """A claims document (already parsed from YAML/JSON) -> classes and external names."""
    try:
        document = ClaimsDocument.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"$.{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (value: {e.get('input')!r})" for e in exc.errors()
        )
        raise ClaimsInvalid(f"{where}: {problems}", details={"source": where, "errors": exc.errors(include_url=False)}) from None
    first_of: dict[str, int] = {}
    for i, entry in enumerate(document.classes):
        if entry.name in first_of:
            raise ClaimsInvalid(f"{where}: $.classes[{i}].name: {entry.name!r} is already the name of "
                                f"$.classes[{first_of[entry.name]}]", details={"source": where, "name": entry.name})
        first_of[entry.name] = i
    classes = []
    for i, entry in enumerate(document.classes):
        claims = []
        for j, c in enumerate(entry.claims):
            kind = next(k for k in CLAIM_KINDS if getattr(c, k) is not None)
            claims.append(Claim(kind, getattr(c, kind), None if c.count == "All" else c.count,
                                f"{where} $.classes[{i}].claims[{j}]"))
        classes.append(RequestedClass(entry.name, claims))
    return classes, list(document.external)


def single_claim_classes(kind: ClaimKind, keys: Iterable[str]) -> list[RequestedClass]:
    """Command-line flags: each value is its own class, named after itself."""
    keys = list(keys)
    flag = f"--{kind.replace('_', '-')}"
    for key in keys:
        if not all(part.strip() for part in (key.split(":") if kind == "hardware" else [key])):
            raise ClaimsInvalid(f"{flag} {key!r}: give a non-empty value", details={"flag": flag, "value": key})
    return [RequestedClass(key, [Claim(kind, key, 1, flag)]) for key in dict.fromkeys(keys)]


# -- from a cluster's workloads -----------------------------------------------------------------


def workload_name(pod: Mapping[str, Any]) -> str:
    """namespace/owner: the Deployment behind a ReplicaSet, else the controller, else the pod."""
    metadata = pod.get("metadata") or {}
    owners = [o for o in metadata.get("ownerReferences") or [] if o.get("controller", True)]
    name = name_of(pod)
    if owners:
        owner = owners[0]
        name = str(owner.get("name", name))
        if owner.get("kind") == "ReplicaSet":
            name = _REPLICASET_HASH.sub("", name)
    return f"{namespace_of(pod)}/{name}"


def extended_resources(pod: Mapping[str, Any]) -> dict[str, int | None]:
    """Extended resources a pod's containers ask for (largest count per name); core resources are skipped."""
    spec = pod.get("spec") or {}
    found: dict[str, int | None] = {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            for name, quantity in (resources.get(section) or {}).items():
                if not is_extended_resource(name):
                    continue
                count = whole_quantity(quantity)
                previous = found.get(name, 0)
                found[name] = None if count is None or previous is None else max(previous, count)
    return found


def device_requests(claim_spec: Mapping[str, Any]) -> list[tuple[str, int | None, str]]:
    """(deviceClassName, count, request name) for every request and firstAvailable alternative."""
    out = []
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        name = str(request.get("name", ""))
        choices = [request.get("exactly") or request] + list(request.get("firstAvailable") or [])
        for choice in choices:
            cls = choice.get("deviceClassName")
            if not cls:
                continue
            count = None if choice.get("allocationMode") == "All" else int(choice.get("count", 1))
            out.append((str(cls), count, name))
    return out


def _generated_claim(pod: Mapping[str, Any], pod_claim: str) -> str | None:
    for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if entry.get("name") == pod_claim and entry.get("resourceClaimName"):
            return str(entry["resourceClaimName"])
    return None


async def _optional_list(view: ClusterView, argv: list[str]) -> list[dict[str, Any]]:
    """Clusters without the DRA API answer "doesn't have a resource type": that is no claims, not an error."""
    try:
        return items((await view.runner.arun(argv)).json())
    except CommandFailed as exc:
        if "doesn't have a resource type" in exc.stderr or "the server could not find" in exc.stderr:
            return []
        raise


async def classes_from_cluster(view: ClusterView) -> list[RequestedClass]:
    """One class per workload with the devices its pods claim, from pods, claims and claim templates."""
    pods = items((await view.runner.arun(PODS_ARGV)).json())
    templates = {(namespace_of(t), name_of(t)): (t.get("spec") or {}).get("spec") or {}
                 for t in await _optional_list(view, TEMPLATES_ARGV)}
    standalone = {(namespace_of(c), name_of(c)): c.get("spec") or {} for c in await _optional_list(view, CLAIMS_ARGV)}
    classes: dict[str, RequestedClass] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        workload = workload_name(pod)
        found: list[Claim] = []
        for resource, count in extended_resources(pod).items():
            found.append(Claim("resource", resource, count, f"pod {namespace_of(pod)}/{name_of(pod)}"))
        for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
            key = (namespace_of(pod), str(ref.get("resourceClaimTemplateName") or ref.get("resourceClaimName") or ""))
            kind = "ResourceClaimTemplate" if ref.get("resourceClaimTemplateName") else "ResourceClaim"
            spec = templates.get(key) if kind == "ResourceClaimTemplate" else standalone.get(key)
            if spec is None:  # the template is gone or unreadable: its generated claim carries the same spec
                generated = _generated_claim(pod, str(ref.get("name", "")))
                spec = standalone.get((namespace_of(pod), generated)) if generated else None
            for cls, count, request in device_requests(spec or {}):
                found.append(Claim("device_class", cls, count, f"{kind} {key[0]}/{key[1]} request {request}"))
        if found:
            target = classes.setdefault(workload, RequestedClass(workload))
            for claim in found:
                if not any((c.kind, c.key, c.count) == (claim.kind, claim.key, claim.count) for c in target.claims):
                    target.claims.append(claim)
    return [classes[name] for name in sorted(classes)]
