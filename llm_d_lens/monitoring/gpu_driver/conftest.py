"""Fixtures for the drivers domain: a FakeRunner-backed cluster view and real-shaped objects.

Objects mirror what kubectl/helm print (``kubectl version -o json``, ``kubectl get ... -o json``,
``helm list -o json``), trimmed to the fields Lens reads plus a few it must ignore.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.testing.fake_runner import FakeRunner

#: Words in an argv that would remove or replace something on a cluster.
DESTRUCTIVE = {"delete", "uninstall", "rollback", "--prune", "--force", "--replace", "--cleanup-on-fail", "drain", "cordon"}


def shared_root() -> Path | None:
    root = os.environ.get("LENS_SHARED_ROOT")
    path = Path(root) if root else Path(__file__).resolve().parents[3] / ".." / "shared"
    return path if path.is_dir() else None


def kube_version(git_version: str) -> dict[str, Any]:
    major, minor = git_version.lstrip("v").split(".")[:2]
    return {
        "clientVersion": {"major": "1", "minor": "32", "gitVersion": "v1.32.4", "platform": "linux/amd64"},
        "kustomizeVersion": "v5.5.0",
        "serverVersion": {"major": major, "minor": minor, "gitVersion": git_version, "platform": "linux/amd64",
                          "goVersion": "go1.24.4", "compiler": "gc"},
    }


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.34.2"}},
    }


def node_list(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(nodes), "metadata": {"resourceVersion": ""}}


def daemonset(namespace: str, name: str, *, desired: int, ready: int, labels: dict[str, str] | None = None,
              image: str = "registry.example/plugin:v1.0.0") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}, "generation": 3},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "plugin", "image": image}]}}},
        "status": {"currentNumberScheduled": desired, "desiredNumberScheduled": desired, "numberAvailable": ready,
                   "numberMisscheduled": 0, "numberReady": ready, "observedGeneration": 3, "updatedNumberScheduled": desired},
    }


def ds_pod(namespace: str, daemonset_name: str, node_name: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{daemonset_name}-{node_name[-5:]}", "namespace": namespace,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": daemonset_name,
                                          "controller": True, "blockOwnerDeletion": True, "uid": "u"}]},
        "spec": {"nodeName": node_name, "containers": [{"name": "plugin", "image": "x"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def helm_release(name: str, namespace: str, chart: str, *, status: str = "deployed") -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "revision": "3", "updated": "2026-05-04 10:12:44.123 +0000 UTC",
            "status": status, "chart": chart, "app_version": chart.rsplit("-", 1)[-1]}


def assert_nothing_destructive(fake: FakeRunner) -> None:
    for argv in fake.argvs():
        assert not DESTRUCTIVE.intersection(argv), argv


def mutating_calls(fake: FakeRunner) -> list[list[str]]:
    return [a for a in fake.argvs() if a[:3] == ["helm", "upgrade", "--install"] or a[:2] == ["kubectl", "apply"]]


@pytest.fixture
def registry() -> Any:
    return get_registry()


@pytest.fixture
def fake() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def view(fake: FakeRunner) -> ClusterView:
    return ClusterView(fake)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
