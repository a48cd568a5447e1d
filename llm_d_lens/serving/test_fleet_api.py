"""The server's clusters by name: ``/api/v1/clusters``, ``/clusters/{name}/overview``, ``/fleet/overview``,
``cluster`` on the drivers and telemetry routes, and unknown names and query parameters refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.testing.cluster import as_list, node, pod
from llm_d_lens.monitoring.gpu_driver import api as driver_api
from llm_d_lens.monitoring.gpu_driver.conftest import kube_version, node_list
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.serving import api
from llm_d_lens.serving import inventories as cache
from llm_d_lens.testing.fake_runner import FakeRunner

VERSION = ["kubectl", "version", "-o", "json"]
NODES = ["kubectl", "get", "nodes", "-o", "json"]
PODS = ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
REFUSED = "The connection to the server down.example:6443 was refused - did you specify the right host or port?\n"
PROBLEM = "application/problem+json"


def live_fake(cluster: Any) -> FakeRunner:
    """prod answers with 4 GPUs (1 in use); every other live cluster's API server is down."""
    fake = FakeRunner(context=cluster.context, kubeconfig=cluster.kubeconfig)
    if cluster.name == "prod":
        fake.reply(VERSION, json_body={"serverVersion": {"gitVersion": "v1.35.0"}})
        fake.reply(NODES, json_body=as_list(node("g1", resources={"nvidia.com/gpu": "4"})))
        fake.reply(PODS, json_body=as_list(pod("p", "g1", limits={"nvidia.com/gpu": "1"})))
        fake.reply(["kubectl", "get", ...], returncode=1, stderr='error: the server doesn\'t have a resource type "x"\n')
    else:
        fake.reply(["kubectl", ...], returncode=1, stderr=REFUSED)
    return fake


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "lab.json").write_text(json.dumps(as_list(node("a1", resources={"amd.com/gpu": "8"}),
                                                          pod("q", "a1", limits={"amd.com/gpu": "5"}))))
    (tmp_path / "clusters.yaml").write_text("""
clusters:
  - {name: lab, snapshot: lab.json, display_name: Lab, labels: {region: eu}}
  - {name: prod, context: prod-ctx, labels: {environment: prod}}
  - {name: down, context: down-ctx}
  - {name: demo, demo: true}
""")
    monkeypatch.setenv("LENS_CLUSTERS", str(tmp_path / "clusters.yaml"))
    cache.forget()
    app = create_app()
    app.dependency_overrides[api.cluster_runners] = lambda: (lambda c: live_fake(c) if c.live else None)
    return TestClient(app)


def test_the_clusters_route_lists_the_configured_clusters_with_reachability(served: TestClient) -> None:
    body = served.get("/api/v1/clusters").json()
    assert body["origin"] == "file"
    assert [(c["name"], c["kind"], c["reachable"]) for c in body["clusters"]] == [
        ("lab", "snapshot", True), ("prod", "live", True), ("down", "live", False), ("demo", "demo", True)]
    assert body["clusters"][0]["display_name"] == "Lab" and body["clusters"][1]["labels"] == {"environment": "prod"}
    assert "refused" in body["clusters"][2]["detail"]


def test_a_named_overview_reads_that_cluster_and_says_when(served: TestClient) -> None:
    prod = served.get("/api/v1/clusters/prod/overview", params={"nodes": "false"}).json()
    assert prod["cluster"]["name"] == "prod" and prod["source"]["context"] == "prod-ctx"
    assert (prod["summary"]["total_gpu_count"], prod["summary"]["allocated"]) == (4, 1)
    assert "nodes" not in prod and prod["read_at"] > 0
    lab = served.get("/api/v1/clusters/lab/overview").json()
    assert [(v["profile_id"], v["allocated"]) for v in lab["vendors"]] == [("amd", 5)]
    # the unnamed route reads the first configured cluster
    assert served.get("/api/v1/clusters/overview").json()["vendors"] == lab["vendors"]


def test_an_unknown_cluster_is_a_404_problem_naming_the_known_ones(served: TestClient) -> None:
    for answer in (served.get("/api/v1/clusters/nope/overview"), served.get("/api/v1/fleet/overview", params={"cluster": "nope"})):
        assert answer.status_code == 404 and answer.headers["content-type"] == PROBLEM
        assert answer.json()["code"] == "CLUSTER_NOT_FOUND"
        assert answer.json()["details"]["known"] == ["lab", "prod", "down", "demo"]
        assert "clusters.yaml" not in answer.text  # where the server keeps its file is not the caller's business


def test_the_fleet_answers_with_the_unreachable_cluster_listed_with_its_error(served: TestClient) -> None:
    fleet = served.get("/api/v1/fleet/overview").json()
    members = {m["name"]: m for m in fleet["clusters"]}
    assert {n: m["ok"] for n, m in members.items()} == {"lab": True, "prod": True, "down": False, "demo": True}
    assert members["down"]["error"]["code"] == "COMMAND_FAILED"
    by_id = {h["profile_id"]: h for h in fleet["hardware"]}
    demo = served.get("/api/v1/clusters/demo/overview").json()
    demo_buckets = {v["profile_id"]: v for v in demo["vendors"]}
    assert by_id["amd"]["devices"] == 8 + demo_buckets["amd"]["devices"]
    assert by_id["nvidia"]["devices"] == 4 + demo_buckets["nvidia"]["devices"]
    assert by_id["nvidia"]["allocated"] == 1 + demo_buckets["nvidia"]["allocated"]
    assert [(s["cluster"], s["devices"]) for s in by_id["nvidia"]["clusters"]] == [("prod", 4), ("demo", demo_buckets["nvidia"]["devices"])]
    only = served.get("/api/v1/fleet/overview", params=[("cluster", "lab"), ("cluster", "prod")]).json()
    assert [m["name"] for m in only["clusters"]] == ["lab", "prod"] and only["totals"]["devices"] == 12


@pytest.mark.parametrize(("path", "params"), [
    ("/api/v1/clusters/overview", {"context": "other"}),
    ("/api/v1/clusters/lab/overview", {"snapshot": "/etc/passwd"}),
    ("/api/v1/fleet/overview", {"clusters": "lab"}),
    ("/api/v1/hardware/capabilities", {"verbose": "1"}),
    ("/api/v1/drivers/status", {"hardware": "nvidia", "contxt": "prod"}),
])
def test_a_query_parameter_the_route_does_not_take_is_a_400(served: TestClient, path: str, params: dict[str, str]) -> None:
    answer = served.get(path, params=params)
    assert answer.status_code == 400 and answer.headers["content-type"] == PROBLEM
    body = answer.json()
    assert body["code"] == "QUERY_PARAMETER_UNKNOWN" and body["details"]["unknown"] == list(params)[-1:]
    assert list(params)[-1] in body["detail"]


def test_the_server_refuses_a_clusters_file_beside_a_single_cluster_setting(served: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_KUBE_CONTEXT", "prod-ctx")
    answer = served.get("/api/v1/clusters")
    assert answer.status_code == 503 and answer.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert "LENS_KUBE_CONTEXT" in answer.json()["detail"]


def test_a_broken_clusters_file_is_the_servers_503(served: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters:\n  - {name: a, demo: true, colour: blue}\n")
    monkeypatch.setenv("LENS_CLUSTERS", str(bad))
    answer = served.get("/api/v1/clusters/a/overview")
    assert answer.status_code == 503 and answer.json()["details"]["cause"] == "CLUSTERS_FILE_INVALID"
    assert answer.json()["details"]["path"] == "clusters[0].colour"


def test_without_a_clusters_file_the_server_serves_its_one_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LENS_CLUSTERS", raising=False)
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    client = TestClient(create_app())
    body = client.get("/api/v1/clusters").json()
    assert body["origin"] == "environment" and [(c["name"], c["kind"]) for c in body["clusters"]] == [("demo", "demo")]
    assert client.get("/api/v1/clusters/demo/overview").json()["total_gpu_count"] == \
        client.get("/api/v1/clusters/overview").json()["total_gpu_count"]
    assert client.get("/api/v1/clusters/prod/overview").status_code == 404


# -- drivers and telemetry on a named cluster ------------------------------------------------


@pytest.fixture
def driver_views(served: TestClient) -> list[ClusterView]:
    made: list[ClusterView] = []

    def named(cluster: Any) -> ClusterView:
        fake = FakeRunner(context=cluster.context)
        fake.reply(VERSION, json_body=kube_version("v1.34.1"))
        fake.reply(NODES, json_body=node_list(node("g1", resources={"nvidia.com/gpu": "8"})))
        fake.reply(["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"], json_body=node_list())
        made.append(ClusterView(fake, cluster_id=cluster.name))
        return made[-1]

    served.app.dependency_overrides[driver_api.named_view_factory] = lambda: named  # type: ignore[attr-defined]
    return made


def test_driver_status_of_a_configured_cluster_needs_no_token(served: TestClient, driver_views: list[ClusterView]) -> None:
    answer = served.get("/api/v1/drivers/status", params={"hardware": "nvidia", "cluster": "prod"})
    assert answer.status_code == 200, answer.text
    [view] = driver_views
    assert view.cluster_id == "prod" and view.runner.argvs()[0][:3] == ["kubectl", "--context", "prod-ctx"]
    assert {m["hardware"] for m in answer.json()["modes"]} == {"nvidia"}
    # another context still needs the token, as before
    other = served.get("/api/v1/drivers/status", params={"hardware": "nvidia", "context": "anything"})
    assert other.status_code == 403 and other.json()["code"] == "CONTEXT_NEEDS_TOKEN"


@pytest.mark.parametrize(("params", "status", "code"), [
    ({"cluster": "nope"}, 404, "CLUSTER_NOT_FOUND"),
    ({"cluster": "lab"}, 409, "LIVE_CLUSTER_NEEDED"),
    ({"cluster": "prod", "context": "prod-ctx"}, 400, "CLUSTER_SOURCE_CONFLICT"),
])
def test_driver_status_refuses_a_cluster_it_cannot_read(served: TestClient, driver_views: list[ClusterView],
                                                         monkeypatch: pytest.MonkeyPatch, params: dict[str, str],
                                                         status: int, code: str) -> None:
    monkeypatch.setenv("LENS_API_TOKEN", "secret")
    answer = served.get("/api/v1/drivers/status", params={"hardware": "nvidia", **params},
                        headers={"Authorization": "Bearer secret"})
    assert (answer.status_code, answer.json()["code"]) == (status, code)
    assert driver_views == []


def test_a_driver_install_body_names_its_cluster(served: TestClient, driver_views: list[ClusterView],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_API_TOKEN", "secret")
    answer = served.post("/api/v1/drivers/install", json={"hardware": "cpu", "mode": "dra", "dry_run": True, "cluster": "prod"},
                         headers={"Authorization": "Bearer secret"})
    assert answer.status_code == 200, answer.text
    assert [v.cluster_id for v in driver_views] == ["prod"]


def test_telemetry_joins_use_the_named_clusters_objects(served: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_TELEMETRY_DEMO", "1")
    monkeypatch.delenv("LENS_PROMETHEUS_URL", raising=False)
    monkeypatch.delenv("LENS_CLUSTER_OBJECTS", raising=False)

    def holders(answer: Any) -> set[tuple[str, str | None]]:
        assert answer.status_code == 200, answer.text
        return {(d["attribution"]["status"], d["attribution"]["pod"]) for d in answer.json()["devices"] if d["node"] == "gpu-h100-01"}

    # the demo telemetry joins the demo cluster's own pods whether the objects come from the named cluster or not
    without = holders(served.get("/api/v1/telemetry/devices", params={"hardware": "nvidia"}))
    named = holders(served.get("/api/v1/telemetry/devices", params={"hardware": "nvidia", "cluster": "demo"}))
    assert named == without
    assert {pod for status, pod in named if status == "attributed"} == {"vllm-llama-3-1-70b-7d9c6b5f4-m8z7t", "vllm-qwen3-32b-5b9d7c8f6-p4r2t"}
    unknown = served.get("/api/v1/telemetry/pods", params={"cluster": "nope"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "CLUSTER_NOT_FOUND"
    missing = served.get("/api/v1/telemetry/devices", params={"hardware": "nvidia", "cluster": "nope"})
    assert missing.status_code == 404 and missing.json()["code"] == "CLUSTER_NOT_FOUND"


def test_a_named_overview_is_the_document_it_was_with_an_etag_and_a_304(served: TestClient) -> None:
    """The named overview is served from encoded bytes: the same JSON as a route returning the dict, and revalidated."""
    from fastapi import FastAPI

    for name, params in (("lab", {}), ("lab", {"nodes": "false"}), ("demo", {}), ("prod", {"nodes": "false"})):
        first = served.get(f"/api/v1/clusters/{name}/overview", params=params)
        assert first.status_code == 200 and first.headers["content-type"] == "application/json"
        plain = FastAPI()
        plain.get("/o")(lambda: first.json())
        assert first.content == TestClient(plain).get("/o").content  # FastAPI's own rendering of the same data
        etag = first.headers["etag"]
        again = served.get(f"/api/v1/clusters/{name}/overview", params=params, headers={"If-None-Match": etag})
        if name == "prod":  # a live cluster is read again: its read_at and age move on, its state did not
            assert etag.startswith('W/"') and again.status_code == 304 and again.headers["etag"] == etag
            assert first.json()["freshness"]["mode"] == "list"
            continue
        assert first.json()["freshness"]["static"] is True
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    lab, bare = (served.get("/api/v1/clusters/lab/overview", params=p).headers["etag"] for p in ({}, {"nodes": "false"}))
    assert lab != bare
