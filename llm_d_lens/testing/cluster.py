"""Small builders of real-shaped Kubernetes objects for the cluster tests (no tests here).

Each builder writes only the fields the inventory reads, in the shape ``kubectl get -o json``
prints them, so a test states its cluster in a few lines and its expected counts stay easy to
work out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.model import Overview
from llm_d_lens.cluster.objects import ClusterObjects, Document

Obj = dict[str, Any]


def shared_root() -> Path | None:
    """../shared beside the repository (or $LENS_SHARED_ROOT), if present."""
    import os

    env = os.environ.get("LENS_SHARED_ROOT")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared"
    return root if root.is_dir() else None


def node(name: str, *, labels: dict[str, str] | None = None, resources: dict[str, Any] | None = None,
         allocatable: dict[str, Any] | None = None, ready: bool | None = True, unschedulable: bool = False) -> Obj:
    capacity = {"cpu": "64", "memory": "527939064Ki", "pods": "110", "hugepages-2Mi": "0", **(resources or {})}
    status: Obj = {"capacity": capacity, "allocatable": {**capacity, **(allocatable or {})}}
    if ready is not None:
        status["conditions"] = [{"type": "MemoryPressure", "status": "False"},
                                {"type": "Ready", "status": "True" if ready else "False"}]
    spec: Obj = {"unschedulable": True} if unschedulable else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": spec, "status": status}


def container(name: str = "main", limits: dict[str, Any] | None = None, requests: dict[str, Any] | None = None,
              claims: list[Obj] | None = None, restart_policy: str | None = None) -> Obj:
    resources: Obj = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    if claims:
        resources["claims"] = claims
    out: Obj = {"name": name, "image": "vllm/vllm-openai:v0.11.0", "resources": resources}
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def pod(name: str, node_name: str | None, *, namespace: str = "llm", phase: str = "Running",
        containers: list[Obj] | None = None, init: list[Obj] | None = None, limits: dict[str, Any] | None = None,
        claims: list[Obj] | None = None, status: Obj | None = None) -> Obj:
    spec: Obj = {"containers": containers or [container(limits=limits or {}, requests=dict(limits or {}))]}
    if node_name:
        spec["nodeName"] = node_name
    if init:
        spec["initContainers"] = init
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"phase": phase, **(status or {})}}


def attributes(**values: Any) -> Obj:
    """DRA attributes from plain values: ``type="gpu"`` -> ``{"type": {"string": "gpu"}}``; ``__`` spells ``/``."""
    out: Obj = {}
    for key, value in values.items():
        name = key.replace("__", "/")
        if isinstance(value, bool):
            out[name] = {"bool": value}
        elif isinstance(value, int):
            out[name] = {"int": value}
        else:
            out[name] = {"string": value}
    return out


def device(name: str, *, attrs: Obj | None = None, capacity: dict[str, str] | None = None, **extra: Any) -> Obj:
    out: Obj = {"name": name, "attributes": attrs or {}}
    if capacity:
        out["capacity"] = {key: {"value": value} for key, value in capacity.items()}
    out.update(extra)
    return out


def resource_slice(name: str, *, driver: str, node_name: str | None, devices: list[Obj], pool: str | None = None,
                   generation: int = 1, slice_count: int = 1) -> Obj:
    spec: Obj = {"driver": driver, "pool": {"name": pool or node_name or name, "generation": generation,
                                            "resourceSliceCount": slice_count}, "devices": devices}
    if node_name:
        spec["nodeName"] = node_name
    else:
        spec["allNodes"] = True
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def device_class(name: str, *, driver: str | None = None, extended_resource: str | None = None) -> Obj:
    spec: Obj = {}
    if driver:
        spec["selectors"] = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
    if extended_resource:
        spec["extendedResourceName"] = extended_resource
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def claim(name: str, *, results: list[tuple[str, str, str]] | None, namespace: str = "llm",
          reserved_for: list[str] = (), consumed: dict[str, str] | None = None, node_name: str | None = None,
          requests: list[Obj] | None = None) -> Obj:
    """A ResourceClaim; ``results=None`` leaves it unallocated."""
    status: Obj = {}
    if results is not None:
        entries = []
        for driver, pool, dev in results:
            entry: Obj = {"driver": driver, "pool": pool, "device": dev, "request": "gpus"}
            if consumed:
                entry["consumedCapacity"] = consumed
            entries.append(entry)
        allocation: Obj = {"devices": {"results": entries}}
        if node_name:
            allocation["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
        status["allocation"] = allocation
        status["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved_for]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": requests or []}}, "status": status}


def as_list(*items: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def objects(*items: Obj, source: str = "test.json") -> ClusterObjects:
    return ClusterObjects.from_documents([Document(source, json.loads(json.dumps(as_list(*items))))])


def inventory(*items: Obj) -> Overview:
    return build_inventory(objects(*items), Catalog())


def bucket(overview: Overview, profile_id: str) -> Obj:
    found = [b for b in overview.to_dict()["vendors"] if b["profile_id"] == profile_id]
    assert found, f"no bucket {profile_id!r}; buckets: {[b['profile_id'] for b in overview.to_dict()['vendors']]}"
    return found[0]


def hardware(overview: Overview, node_name: str, profile_id: str) -> Obj:
    for record in overview.to_dict()["nodes"]:
        if record["name"] == node_name:
            for entry in record["hardware"]:
                if entry["profile_id"] == profile_id:
                    return entry
            raise AssertionError(f"node {node_name!r} has no {profile_id!r} hardware: {record['hardware']}")
    raise AssertionError(f"no node {node_name!r}")


def node_record(overview: Overview, node_name: str) -> Obj:
    for record in overview.to_dict()["nodes"]:
        if record["name"] == node_name:
            return record
    raise AssertionError(f"no node {node_name!r}")
