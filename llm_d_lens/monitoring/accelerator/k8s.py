"""The few fields of Pods, ResourceClaims, ResourceSlices and Nodes the allocation joins read.

Input is plain Kubernetes JSON (``kubectl get ... -o json``: a ``List``, one object, or an array),
from files or from kubectl through the CommandRunner. Anything shaped wrong is reported with the
source, the object and the field path; kinds the joins do not read are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_d_lens.monitoring.errors import ClusterObjectsInvalid

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
KINDS = ("Pod", "ResourceClaim", "ResourceSlice", "Node")
#: bytes one --cluster file may hold (a 5,000-node cluster's pods, claims and slices are a few hundred MB at most)
MAX_OBJECTS_FILE_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True)
class ContainerInfo:
    name: str
    resources: frozenset[str]  # resource names in limits or requests
    claims: tuple[str, ...]  # pod-level claim names the container uses


@dataclass(frozen=True)
class AllocatedStatus:
    """One ``status.containerStatuses[].allocatedResourcesStatus[]`` entry."""

    container: str
    name: str  # a resource name, or claim:<pod claim>[/<request>]
    resource_ids: tuple[str, ...]


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    node: str
    phase: str
    containers: tuple[ContainerInfo, ...]
    claim_names: dict[str, str] = field(default_factory=dict)  # pod claim name -> ResourceClaim name
    extended_claim: str | None = None  # status.extendedResourceClaimStatus.resourceClaimName
    allocated: tuple[AllocatedStatus, ...] = ()

    @property
    def ref(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def active(self) -> bool:
        """Bound to a node and not finished: only such pods hold devices."""
        return bool(self.node) and self.phase not in TERMINAL_PHASES

    def resource_names(self) -> set[str]:
        return {r for c in self.containers for r in c.resources}

    def container_for_claim(self, pod_claim: str) -> str | None:
        return next((c.name for c in self.containers if pod_claim in c.claims), None)


@dataclass(frozen=True)
class AllocationResult:
    request: str
    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class ClaimInfo:
    namespace: str
    name: str
    device_classes: tuple[str, ...]
    results: tuple[AllocationResult, ...]
    consumers: tuple[str, ...]  # pods in status.reservedFor
    owner_pod: str | None  # the pod a template-generated claim belongs to


@dataclass(frozen=True)
class SliceDevice:
    driver: str
    pool: str
    node: str
    name: str
    attributes: dict[str, str]  # fully qualified attribute name -> value as text


@dataclass(frozen=True)
class NodeInfo:
    name: str
    addresses: tuple[str, ...]


def qualified(attribute: str, driver: str) -> str:
    """A DRA attribute name with its domain: a bare name belongs to the driver's own domain."""
    return attribute if "/" in attribute else f"{driver}/{attribute}"


@dataclass
class ClusterObjects:
    pods: list[PodInfo] = field(default_factory=list)
    claims: list[ClaimInfo] = field(default_factory=list)
    devices: dict[tuple[str, str, str], SliceDevice] = field(default_factory=dict)  # (driver, pool, name)
    nodes: list[NodeInfo] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    # built on first lookup; the object lists are not changed after reading
    _pod_index: dict[tuple[str, str], PodInfo] | None = field(default=None, init=False, repr=False)
    _claim_index: dict[tuple[str, str], ClaimInfo] | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_documents(cls, documents: Iterable[tuple[str, Any]]) -> ClusterObjects:
        """Objects from parsed JSON documents, each with the name of where it came from."""
        out = cls()
        slices: list[tuple[int, dict[str, Any], str, str]] = []
        for source, document in documents:
            out.sources.append(source)
            for where, item in _items(source, document):
                kind = item.get("kind")
                reader = _Reader(source, where, item)
                if kind == "Pod":
                    out.pods.append(_pod(reader))
                elif kind == "ResourceClaim":
                    out.claims.append(_claim(reader))
                elif kind == "ResourceSlice":
                    slices.append((reader.int_(("spec", "pool", "generation"), 0), item, source, where))
                elif kind == "Node":
                    out.nodes.append(_node(reader))
        out.devices = _slice_devices(slices)
        return out

    @classmethod
    def from_files(cls, paths: Sequence[str | Path]) -> ClusterObjects:
        documents = []
        for path in paths:
            from llm_d_lens.files import TextUnreadable, read_text

            try:
                text = read_text(path, limit=MAX_OBJECTS_FILE_BYTES)
            except TextUnreadable as exc:
                raise ClusterObjectsInvalid(str(path), "$", exc.problem) from None
            from llm_d_lens.jsonread import JsonRefused, loads

            try:
                documents.append((str(path), loads(text)))
            except json.JSONDecodeError as exc:
                raise ClusterObjectsInvalid(str(path), "$", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
            except JsonRefused as exc:
                first = exc.findings[0]
                raise ClusterObjectsInvalid(str(path), first.path, f"{first.value} {first.message}") from None
        return cls.from_documents(documents)

    def pod(self, namespace: str, name: str) -> PodInfo | None:
        if self._pod_index is None:
            self._pod_index = {p.ref: p for p in self.pods}
        return self._pod_index.get((namespace, name))

    def claim(self, namespace: str, name: str) -> ClaimInfo | None:
        if self._claim_index is None:
            self._claim_index = {(c.namespace, c.name): c for c in self.claims}
        return self._claim_index.get((namespace, name))

    def node_name(self, seen: str) -> str:
        """The Node an exporter's node label means: its name, or the node with that address."""
        if not seen or any(n.name == seen for n in self.nodes):
            return seen
        return next((n.name for n in self.nodes if seen in n.addresses), seen)


def _items(source: str, document: Any) -> Iterable[tuple[str, dict[str, Any]]]:
    if isinstance(document, list):
        entries, prefix = document, "$"
    elif isinstance(document, dict) and "items" in document:
        entries, prefix = document["items"] or [], "$.items"
        if not isinstance(entries, list):
            raise ClusterObjectsInvalid(source, prefix, "is not a list", entries)
    elif isinstance(document, dict) and "kind" in document:
        yield "$", document
        return
    else:
        raise ClusterObjectsInvalid(source, "$", "expected a Kubernetes object, a List with items, or a JSON array of objects")
    for i, item in enumerate(entries):
        if not isinstance(item, dict):
            raise ClusterObjectsInvalid(source, f"{prefix}[{i}]", "is not an object", item)
        yield f"{prefix}[{i}]", item


class _Reader:
    """Typed access to one object's fields; a wrong type names the object and the field path."""

    def __init__(self, source: str, where: str, item: dict[str, Any]):
        self.source, self.item = source, item
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        name = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
        self.where = f"{where} ({item.get('kind')} {name})" if name else f"{where} ({item.get('kind')})"

    def fail(self, path: Sequence[str | int], message: str, value: Any) -> ClusterObjectsInvalid:
        shown = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        return ClusterObjectsInvalid(self.source, f"{self.where} {shown}", message, value)

    def get(self, path: Sequence[str | int], kind: type, default: Any) -> Any:
        node: Any = self.item
        for i, step in enumerate(path):
            if node is None:
                return default
            if isinstance(step, int):
                node = node[step] if isinstance(node, list) and step < len(node) else None
            elif isinstance(node, dict):
                node = node.get(step)
            else:
                raise self.fail(path[:i], "is not an object", node)
        if node is None:
            return default
        if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
            raise self.fail(path, f"has type {type(node).__name__}, expected {kind.__name__}", node)
        return node

    def str_(self, path: Sequence[str | int], default: str = "") -> str:
        return self.get(path, str, default)

    def int_(self, path: Sequence[str | int], default: int = 0) -> int:
        return self.get(path, int, default)

    def list_(self, path: Sequence[str | int]) -> list[Any]:
        return self.get(path, list, [])

    def dict_(self, path: Sequence[str | int]) -> dict[str, Any]:
        return self.get(path, dict, {})


def _pod(r: _Reader) -> PodInfo:
    containers = []
    for i, _ in enumerate(r.list_(("spec", "containers"))):
        base = ("spec", "containers", i)
        resources = set(r.dict_((*base, "resources", "limits"))) | set(r.dict_((*base, "resources", "requests")))
        claims = tuple(r.str_((*base, "resources", "claims", j, "name")) for j, _ in enumerate(r.list_((*base, "resources", "claims"))))
        containers.append(ContainerInfo(r.str_((*base, "name")), frozenset(resources), claims))
    claim_names = {}
    for i, _ in enumerate(r.list_(("status", "resourceClaimStatuses"))):
        claim = r.str_(("status", "resourceClaimStatuses", i, "resourceClaimName"))
        if claim:
            claim_names[r.str_(("status", "resourceClaimStatuses", i, "name"))] = claim
    allocated = []
    for i, _ in enumerate(r.list_(("status", "containerStatuses"))):
        base = ("status", "containerStatuses", i)
        for j, _ in enumerate(r.list_((*base, "allocatedResourcesStatus"))):
            entry = (*base, "allocatedResourcesStatus", j)
            ids = tuple(
                r.str_((*entry, "resources", k, "resourceID")) for k, _ in enumerate(r.list_((*entry, "resources")))
            )
            allocated.append(AllocatedStatus(r.str_((*base, "name")), r.str_((*entry, "name")), tuple(x for x in ids if x)))
    return PodInfo(
        namespace=r.str_(("metadata", "namespace"), "default"),
        name=r.str_(("metadata", "name")),
        node=r.str_(("spec", "nodeName")),
        phase=r.str_(("status", "phase")),
        containers=tuple(containers),
        claim_names=claim_names,
        extended_claim=r.str_(("status", "extendedResourceClaimStatus", "resourceClaimName")) or None,
        allocated=tuple(allocated),
    )


def _claim(r: _Reader) -> ClaimInfo:
    classes = []
    for i, _ in enumerate(r.list_(("spec", "devices", "requests"))):
        base = ("spec", "devices", "requests", i)
        classes.append(r.str_((*base, "exactly", "deviceClassName")) or r.str_((*base, "deviceClassName")))
        for j, _ in enumerate(r.list_((*base, "firstAvailable"))):
            classes.append(r.str_((*base, "firstAvailable", j, "deviceClassName")))
    results = []
    for i, _ in enumerate(r.list_(("status", "allocation", "devices", "results"))):
        base = ("status", "allocation", "devices", "results", i)
        results.append(AllocationResult(r.str_((*base, "request")), r.str_((*base, "driver")), r.str_((*base, "pool")), r.str_((*base, "device"))))
    consumers = tuple(
        r.str_(("status", "reservedFor", i, "name"))
        for i, _ in enumerate(r.list_(("status", "reservedFor")))
        if r.str_(("status", "reservedFor", i, "resource")) in ("pods", "")
    )
    owner = next(
        (r.str_(("metadata", "ownerReferences", i, "name")) for i, _ in enumerate(r.list_(("metadata", "ownerReferences")))
         if r.str_(("metadata", "ownerReferences", i, "kind")) == "Pod"),
        None,
    )
    return ClaimInfo(
        namespace=r.str_(("metadata", "namespace"), "default"),
        name=r.str_(("metadata", "name")),
        device_classes=tuple(c for c in classes if c),
        results=tuple(results),
        consumers=consumers,
        owner_pod=owner,
    )


def _slice_devices(slices: list[tuple[int, dict[str, Any], str, str]]) -> dict[tuple[str, str, str], SliceDevice]:
    """Devices of the newest generation of each pool: older generations are stale by definition."""
    newest: dict[tuple[str, str], int] = {}
    readers = []
    for generation, item, source, where in slices:
        r = _Reader(source, where, item)
        pool = (r.str_(("spec", "driver")), r.str_(("spec", "pool", "name")))
        newest[pool] = max(newest.get(pool, generation), generation)
        readers.append((generation, pool, r))
    devices = {}
    for generation, (driver, pool), r in readers:
        if generation != newest[(driver, pool)]:
            continue
        node = r.str_(("spec", "nodeName")) or pool
        for i, _ in enumerate(r.list_(("spec", "devices"))):
            base = ("spec", "devices", i)
            name = r.str_((*base, "name"))
            attributes = {}
            for key, value in r.dict_((*base, "attributes")).items():
                text = _attribute_text(value)
                if text is not None:
                    attributes[qualified(key, driver)] = text
            devices[(driver, pool, name)] = SliceDevice(driver, pool, node, name, attributes)
    return devices


def _attribute_text(value: Any) -> str | None:
    """A DeviceAttribute's scalar (``{"string": ...}``, ``{"int": ...}``, ...) as text; lists are skipped."""
    if not isinstance(value, dict):
        return None
    for kind in ("string", "version", "int", "bool"):
        if kind in value and not isinstance(value[kind], (list, dict)):
            scalar = value[kind]
            return str(scalar).lower() if isinstance(scalar, bool) else str(scalar)
    return None


def _node(r: _Reader) -> NodeInfo:
    addresses = tuple(r.str_(("status", "addresses", i, "address")) for i, _ in enumerate(r.list_(("status", "addresses"))))
    return NodeInfo(r.str_(("metadata", "name")), tuple(a for a in addresses if a))


#: Object kinds a cluster without DRA does not serve; their absence is not an error.
DRA_KINDS = "resourceclaims.resource.k8s.io,resourceslices.resource.k8s.io"


def read_from_kubectl(runner: Any) -> ClusterObjects:
    """Pods, Nodes, ResourceClaims and ResourceSlices of the current cluster, through the CommandRunner."""
    core = ["kubectl", "get", "pods,nodes", "--all-namespaces", "-o", "json"]
    documents = [(" ".join(core), runner.run(core).json())]
    dra = ["kubectl", "get", DRA_KINDS, "--all-namespaces", "-o", "json"]
    result = runner.run(dra, check=False)
    if result.ok:
        documents.append((" ".join(dra), result.json()))
    elif "doesn't have a resource type" not in result.stderr:
        result.check()
    return ClusterObjects.from_documents(documents)


def load(sources: Sequence[str], runner: Any = None) -> ClusterObjects | None:
    """Cluster objects from files, or from kubectl when the one source is ``kubectl``; None without sources."""
    if not sources:
        return None
    if list(sources) == ["kubectl"]:
        if runner is None:
            from llm_d_lens.runner import CommandRunner

            runner = CommandRunner()
        return read_from_kubectl(runner)
    return ClusterObjects.from_files(sources)
