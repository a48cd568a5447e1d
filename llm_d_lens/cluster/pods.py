"""What pods hold through extended resources (``example.com/gpu: 4`` in a container's limits).

Each pod is read once, into its :class:`PodPart`, and indexed by node (``cluster/state.py``). Only pods bound to a node and not finished hold devices:
a Pending pod without a node holds nothing (it is reported as demand), Succeeded and Failed pods
hold nothing. A pod's request follows the scheduler's rule: the larger of its app containers (plus
sidecars) and any single init container (plus the sidecars started before it).

Requests the scheduler satisfied through DRA (``status.extendedResourceClaimStatus``, a DeviceClass
with ``extendedResourceName``) are held by a ResourceClaim and counted there, not here.
"""

from __future__ import annotations

from typing import Any

import msgspec

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.errors import ObjectInvalid
from llm_d_lens.cluster.objects import list_at, mapping_at, object_at, string_at
from llm_d_lens.cluster.quantity import QuantityError, parse_count

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class Hold(msgspec.Struct):
    pod: str  # namespace/name
    resource: str
    count: int


class PodPart(msgspec.Struct, frozen=True):
    """What one pod adds to the inventory, read once when the pod arrives (the pod itself is not kept)."""

    who: str  # namespace/name
    #: the node it is bound to; None: not bound (its requests are demand, ``pending``)
    node: str | None = None
    #: (extended resource, units) held on ``node``, or wanted while unbound; zero counts left out when bound
    requests: tuple[tuple[str, int], ...] = ()
    #: the pod uses ResourceClaims: its phase, which a claim's notes read (``claims`` is False otherwise)
    claims: bool = False
    phase: str | None = None


def pod_part(pod: dict[str, Any], catalog: Catalog) -> PodPart | None:
    """The pod's part: its held or wanted extended resources; None when it adds nothing at all.

    Raises :class:`ObjectInvalid` for a field the inventory cannot read, checked in the order a
    whole-cluster read checks them.
    """
    spec = pod.get("spec")
    if not spec:
        return None
    if type(spec) is not dict:
        mapping_at(pod, "spec", spec)
    status = mapping_at(pod, "status", pod.get("status"))
    phase = string_at(pod, "status.phase", status.get("phase"))
    claims = bool(spec.get("resourceClaims"))
    metadata = pod["metadata"]
    who = f"{metadata.get('namespace') or ''}/{metadata['name']}"
    if phase in TERMINAL_PHASES:
        return PodPart(who, claims=claims, phase=phase) if claims else None
    requests = pod_requests(pod, spec, catalog)
    if not requests:
        return PodPart(who, claims=claims, phase=phase) if claims else None
    mapped = status.get("extendedResourceClaimStatus")
    if mapped:
        where = "status.extendedResourceClaimStatus"
        mappings = list_at(pod, f"{where}.requestMappings", mapping_at(pod, where, mapped).get("requestMappings"))
        for index, mapping in enumerate(mappings):
            if isinstance(mapping, dict):
                path = f"{where}.requestMappings[{index}].resourceName"
                requests.pop(string_at(pod, path, mapping.get("resourceName")), None)
    node = string_at(pod, "spec.nodeName", spec.get("nodeName"))
    if not node:
        return PodPart(who, None, tuple(requests.items()), claims, phase)
    return PodPart(who, node, tuple((r, c) for r, c in requests.items() if c), claims, phase)


def pod_requests(pod: dict[str, Any], spec: dict[str, Any], catalog: Catalog) -> dict[str, int]:
    """Extended-resource units the scheduler reserves for this pod (only resources with a domain)."""
    app: dict[str, int] = {}
    for index, container in enumerate(list_at(pod, "spec.containers", spec.get("containers"))):
        wanted = _container_requests(pod, "containers", index, container, catalog)
        if wanted:
            for name, count in wanted.items():
                app[name] = app.get(name, 0) + count
    init_containers = spec.get("initContainers")
    if not init_containers:
        return app
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for index, container in enumerate(list_at(pod, "spec.initContainers", init_containers)):
        wanted = _container_requests(pod, "initContainers", index, container, catalog) or {}
        if container.get("restartPolicy") == "Always":  # a sidecar keeps running beside the app
            for name, count in wanted.items():
                sidecars[name] = sidecars.get(name, 0) + count
            continue
        for name in wanted.keys() | sidecars.keys():
            init_peak[name] = max(init_peak.get(name, 0), wanted.get(name, 0) + sidecars.get(name, 0))
    total = dict(app)
    for name, count in sidecars.items():
        total[name] = total.get(name, 0) + count
    for name, peak in init_peak.items():
        total[name] = max(total.get(name, 0), peak)
    return total


def _container_requests(pod: dict[str, Any], group: str, index: int, container: dict[str, Any],
                        catalog: Catalog) -> dict[str, int] | None:
    # Paths are spelled only on the way to an error: this runs for every container of every pod.
    if type(container) is not dict:
        object_at(pod, f"spec.{group}[{index}]", container)
    resources = container.get("resources")
    if not resources:
        return None
    if type(resources) is not dict:
        mapping_at(pod, f"spec.{group}[{index}].resources", resources)
    requests = resources.get("requests")
    if type(requests) is not dict:
        requests = mapping_at(pod, f"spec.{group}[{index}].resources.requests", requests)
    limits = resources.get("limits")
    if type(limits) is not dict:
        limits = mapping_at(pod, f"spec.{group}[{index}].resources.limits", limits)
    found: dict[str, int] | None = None
    is_extended = catalog.is_extended
    for field_name, values in (("requests", requests), ("limits", limits)):
        for name, value in values.items():
            if "/" not in name or (found is not None and name in found) or not is_extended(name):
                continue
            # An extended resource's request defaults to its limit; when both are set they are equal.
            if field_name == "limits" and name in requests:
                continue
            try:
                count = parse_count(value)
            except QuantityError as exc:
                raise ObjectInvalid(pod, f'spec.{group}[{index}].resources.{field_name}["{name}"]', value, exc.reason) from None
            if found is None:
                found = {}
            found[name] = count
    return found
