"""``GET /api/v1/clusters/overview`` serves the configured cluster; errors are problem+json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cluster.source import ClusterSource, SourceConflict
from llm_d_lens.testing.cluster import as_list, node, pod
from llm_d_lens.serving import api
from llm_d_lens.testing.fake_runner import FakeRunner


def client_for(source: ClusterSource, runner: FakeRunner | None = None) -> TestClient:
    app = create_app()
    app.dependency_overrides[api.cluster_source] = lambda: source
    if runner is not None:
        app.dependency_overrides[api.cluster_runner] = lambda: runner
    return TestClient(app)


def test_overview_of_a_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(as_list(node("mi300x", resources={"amd.com/gpu": "8"}), pod("a", "mi300x", limits={"amd.com/gpu": "5"}))))
    response = client_for(ClusterSource(snapshot=path)).get("/api/v1/clusters/overview")
    assert response.status_code == 200
    data = response.json()
    assert data["source"] == {"kind": "snapshot", "path": str(path)}
    assert data["total_gpu_count"] == 8
    assert [(v["profile_id"], v["allocated"], v["available"]) for v in data["vendors"]] == [("amd", 5, 3)]
    assert [n["name"] for n in data["nodes"]] == ["mi300x"]


def test_overview_of_a_live_cluster_without_node_detail() -> None:
    fake = FakeRunner(context="prod")
    fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body=as_list(node("h100", resources={"nvidia.com/gpu": "8"})))
    fake.reply(["kubectl", "get", "pods", ...], json_body=as_list())
    fake.reply(["kubectl", "get", "resourceslices.resource.k8s.io", ...], json_body=as_list())
    fake.reply(["kubectl", "get", "deviceclasses.resource.k8s.io", ...], json_body=as_list())
    fake.reply(["kubectl", "get", "resourceclaims.resource.k8s.io", ...], json_body=as_list())
    response = client_for(ClusterSource(context="prod"), fake).get("/api/v1/clusters/overview", params={"nodes": "false"})
    assert response.status_code == 200
    data = response.json()
    assert "nodes" not in data
    assert (data["total_gpu_count"], data["dra_api"], data["source"]["context"]) == (8, True, "prod")
    assert all(argv[1:3] == ["--context", "prod"] for argv in fake.argvs())


def test_a_bad_snapshot_is_a_problem_document(tmp_path: Path) -> None:
    # the snapshot is the server's configuration: the operator's problem (503), with the cause kept
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "Node"}')
    response = client_for(ClusterSource(snapshot=path)).get("/api/v1/clusters/overview")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert response.json()["details"]["cause"] == "CLUSTER_SNAPSHOT_INVALID"
    assert response.json()["detail"].startswith(f"the server's LENS_CLUSTER_SNAPSHOT cannot be used: {path}: is not a Kubernetes List")


def test_a_bad_server_setting_is_the_servers_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_KUBECTL_TIMEOUT", "soon")
    response = TestClient(create_app()).get("/api/v1/clusters/overview")
    assert response.status_code == 503 and response.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert "LENS_KUBECTL_TIMEOUT='soon'" in response.json()["detail"]


def test_the_demo_is_served_when_configured() -> None:
    data = client_for(ClusterSource(demo=True)).get("/api/v1/clusters/overview").json()
    assert (data["source"]["kind"], data["total_gpu_count"]) == ("demo", 60)


def test_the_server_reads_its_source_from_the_environment(tmp_path: Path) -> None:
    assert ClusterSource.from_env({}) == ClusterSource()
    assert ClusterSource.from_env({"LENS_CLUSTER_SNAPSHOT": str(tmp_path)}).snapshot == tmp_path
    assert ClusterSource.from_env({"LENS_CLUSTER_DEMO": "true"}).demo is True
    live = ClusterSource.from_env({"LENS_KUBE_CONTEXT": "prod", "LENS_KUBECONFIG": "/k", "LENS_KUBECTL_TIMEOUT": "300"})
    assert (live.context, live.kubeconfig, live.timeout) == ("prod", "/k", 300.0)
    with pytest.raises(SourceConflict, match="LENS_KUBECTL_TIMEOUT='soon' is not a positive number"):
        ClusterSource.from_env({"LENS_KUBECTL_TIMEOUT": "soon"})
    with pytest.raises(SourceConflict):
        ClusterSource.from_env({"LENS_CLUSTER_DEMO": "1", "LENS_CLUSTER_SNAPSHOT": "x.json"})


@pytest.mark.parametrize("env,expected", [
    ({"LENS_CLUSTER_SNAPSHOT": "/srv/cluster.json", "LENS_KUBE_CONTEXT": "prod"},
     "the cluster API is misconfigured on the server: a snapshot (LENS_CLUSTER_SNAPSHOT) is read from a file; "
     "LENS_KUBE_CONTEXT/LENS_KUBECONFIG select a live cluster"),
    ({"LENS_CLUSTER_SNAPSHOT": "/srv/cluster.json", "LENS_CLUSTER_DEMO": "1"},
     "the cluster API is misconfigured on the server: give a snapshot (LENS_CLUSTER_SNAPSHOT) "
     "or the demo (LENS_CLUSTER_DEMO), not both"),
])
def test_conflicting_server_settings_name_the_variables_not_cli_flags(monkeypatch: pytest.MonkeyPatch,
                                                                      env: dict[str, str], expected: str) -> None:
    """The operator sets environment variables; --context is a flag of `lens cluster inspect`, not of `lens serve`."""
    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    response = TestClient(create_app()).get("/api/v1/clusters/overview")
    assert response.status_code == 503 and response.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert response.json()["detail"] == expected
