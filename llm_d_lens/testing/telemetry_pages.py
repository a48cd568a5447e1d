"""Helpers the telemetry tests share: where the samples are, and exporter pages as Prometheus stores them."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects
from llm_d_lens.monitoring.accelerator.service import DeviceReport, read_devices, select, snapshot_devices
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, exposition_to_openmetrics, skip_reason

REPO = Path(__file__).resolve().parents[2]
TESTDATA = Path(__file__).resolve().parents[1] / "monitoring" / "accelerator" / "testdata"
needs_prometheus = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
#: how an attribution without cluster objects begins its reason (the joins cannot call a device idle then)
NO_OBJECTS = "no cluster objects to show that no pod holds it"

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def shared_root() -> Path:
    return Path(os.environ.get("LENS_SHARED_ROOT") or REPO / ".." / "shared")


def shared(*parts: str) -> Path:
    """A file under ../shared, or a skip saying it is missing."""
    path = shared_root().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the shared samples; set LENS_SHARED_ROOT to their directory)")
    return path


def sample_text(name: str) -> str:
    return shared("telemetry", name).read_text(encoding="utf-8")


def fixture_text(name: str) -> str:
    return (TESTDATA / name).read_text(encoding="utf-8")


def labels_of(text: str, metric: str, marker: str) -> str:
    """The label block of ``metric``'s sample carrying ``marker``: to add lines an exporter writes with a device's own labels."""
    line = next(l for l in text.splitlines() if l.startswith(metric + "{") and marker in l)
    return line[len(metric) + 1:line.rindex("}")]


def as_stored(text: str, target: dict[str, str] | None = None, honor_labels: bool = False, rename: dict[str, str] | None = None) -> str:
    """Exposition text as Prometheus stores it after a scrape: empty labels dropped, target labels added.

    With ``honor_labels`` off (Prometheus' default, and the GPU operator's), an exporter label that
    clashes with a target label is kept as ``exported_<name>``. ``rename`` changes label names first
    (to give a sample another release's spelling).
    """
    target, rename = target or {}, rename or {}
    out = []
    for line in text.splitlines():
        found = _SAMPLE.match(line.strip())
        if line.startswith("#") or not found:
            continue
        name, body, value = found.groups()
        labels = {rename.get(k, k): v for k, v in _LABEL.findall(body or "") if v != ""}
        for key, value_ in target.items():
            if key in labels:
                if honor_labels:
                    continue
                labels[f"exported_{key}"] = labels.pop(key)
            labels[key] = value_
        rendered = ",".join(f'{k}="{v}"' for k, v in labels.items())
        out.append(f"{name}{{{rendered}}} {value}")
    return "\n".join(out) + "\n"


def up_page(target: dict[str, str]) -> str:
    """The ``up`` sample Prometheus writes for a scrape target: its target labels, value 1."""
    labels = {k: v for k, v in target.items() if k in ("instance", "job", "namespace", "pod", "container", "node")}
    return "up{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "} 1\n"


def backfill(*texts: str, timestamp: int = BASE_TIMESTAMP) -> str:
    """OpenMetrics of several exposition pages, to backfill into one Prometheus."""
    body = "".join(exposition_to_openmetrics(t, timestamp).removesuffix("# EOF\n") for t in texts)
    return body + "# EOF\n"


def refresh(url: str, hardware: list[str] | None = None, at: float | None = BASE_TIMESTAMP, **options: object) -> DeviceReport:
    """One device refresh against ``url``, evaluated at ``at`` (the backfilled samples' time by default)."""

    async def run() -> DeviceReport:
        async with PrometheusClient(url) as client:
            return await read_devices(client, select(hardware), at=at, **options)  # type: ignore[arg-type]

    return asyncio.run(run())


def snapshot(text: str, hardware: list[str], **options: object) -> DeviceReport:
    return snapshot_devices(text, "page", select(hardware), **options)  # type: ignore[arg-type]


def by_name(report: DeviceReport) -> dict[str, dict]:
    """Each device's document, keyed ``node/device``."""
    return {d.name: d.to_dict() for d in report.devices}


def cluster(*objects: dict) -> ClusterObjects:
    return ClusterObjects.from_documents([("test", {"apiVersion": "v1", "kind": "List", "items": list(objects)})])


# -- real-shaped Kubernetes objects, only the fields the joins read plus the usual neighbours -------

def pod_object(
    name: str,
    node: str,
    namespace: str = "llm-serving",
    limits: dict[str, str] | None = None,
    claims: dict[str, str] | None = None,
    allocated: list[tuple[str, list[str]]] | None = None,
    phase: str = "Running",
    container: str = "vllm",
) -> dict:
    """A Pod; ``claims`` maps the pod's claim names to generated ResourceClaim names."""
    claims = claims or {}
    resources: dict = {"limits": {"cpu": "8", "memory": "64Gi", **(limits or {})}, "requests": {"cpu": "8", **(limits or {})}}
    if claims:
        resources["claims"] = [{"name": c} for c in claims]
    status: dict = {"phase": phase, "containerStatuses": [{"name": container, "ready": True}]}
    if allocated:
        status["containerStatuses"][0]["allocatedResourcesStatus"] = [
            {"name": n, "resources": [{"health": "Healthy", "resourceID": i} for i in ids]} for n, ids in allocated
        ]
    if claims:
        status["resourceClaimStatuses"] = [{"name": c, "resourceClaimName": g} for c, g in claims.items()]
    spec: dict = {"containers": [{"name": container, "image": "vllm/vllm-openai:v0.11.0", "resources": resources}], "nodeName": node}
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimTemplateName": f"{c}-template"} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": spec, "status": status}


def node_object(name: str, address: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}]}}


def claim_object(name: str, results: list[tuple[str, str, str]], reserved_for: list[str], namespace: str = "llm-serving",
                 device_class: str = "gpu.example.com") -> dict:
    """A ResourceClaim allocated to ``results`` (driver, pool, device) and reserved for ``reserved_for`` pods."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": device_class, "count": len(results)}}]}},
        "status": {
            "allocation": {"devices": {"results": [{"request": "gpus", "driver": d, "pool": p, "device": n} for d, p, n in results]}},
            "reservedFor": [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved_for],
        },
    }


def slice_object(node: str, driver: str, devices: dict[str, dict[str, str]], generation: int = 1) -> dict:
    """A ResourceSlice publishing ``devices`` (name -> string attributes) for ``node``."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}-abcde"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                 "devices": [{"name": n, "attributes": {k: {"string": v} for k, v in a.items()}} for n, a in devices.items()]},
    }
