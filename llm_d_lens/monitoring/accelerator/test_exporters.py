"""Exporter discovery and install: on every node with the hardware, scraped by a real Prometheus, installed
through the drivers' pinned path.

Prometheus here scrapes a real HTTP exporter page on 127.0.0.1 (up) and an address nothing listens on
(down); the cluster's nodes and pods are real-shaped objects served by the recording FakeRunner.
"""

from __future__ import annotations

import asyncio
import copy
import http.server
import json
import threading
import time
from collections.abc import Iterator
from importlib.resources import files

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.monitoring.accelerator.exporters import PODS_ARGV, ExporterNotManaged, install_target, read_exporters
from llm_d_lens.monitoring.gpu_driver.kube import NODES_ARGV, ClusterView
from llm_d_lens.testing.telemetry_pages import needs_prometheus, sample_text
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.testing.fake_runner import FakeRunner
from llm_d_lens.testing.prometheus import free_port, run_prometheus


def payload(profile_id: str) -> dict:
    return copy.deepcopy(json.loads(files("llm_d_lens.hardware").joinpath("profiles", f"{profile_id}.json").read_text()))


def nvidia_on(port: int):
    data = payload("nvidia")
    data["telemetry"]["exporter"]["port"] = port
    return validate_payload(data, "nvidia (test variant)")


def node(name: str, gpu: bool) -> dict:
    labels = {"kubernetes.io/hostname": name, **({"nvidia.com/gpu.present": "true"} if gpu else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def pod(name: str, node_name: str, ip: str, labels: dict[str, str], namespace: str = "gpu-operator", phase: str = "Running") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": node_name, "containers": [{"name": "exporter"}]}, "status": {"phase": phase, "podIP": ip}}


def cluster_runner() -> FakeRunner:
    runner = FakeRunner()
    runner.reply(NODES_ARGV, json_body={"kind": "List", "items": [node("gpu-1", True), node("gpu-2", True), node("gpu-3", True),
                                                                  node("cpu-1", False)]})
    runner.reply(PODS_ARGV, json_body={"kind": "List", "items": [
        # the GPU operator's exporter on gpu-1 (scraped, up); the standalone chart's on gpu-2 (its address refuses)
        pod("nvidia-dcgm-exporter-a1", "gpu-1", "127.0.0.1", {"app": "nvidia-dcgm-exporter"}),
        pod("dcgm-exporter-b2", "gpu-2", "127.0.0.2", {"app.kubernetes.io/name": "dcgm-exporter"}, namespace="gpu-monitoring"),
        pod("vllm-0", "gpu-3", "127.0.0.3", {"app": "vllm"}, namespace="llm-serving"),  # not an exporter
    ]})
    return runner


@pytest.fixture(scope="module")
def exporter_page() -> Iterator[int]:
    """A real HTTP exporter on 127.0.0.1 serving the DCGM sample."""
    body = sample_text("dcgm-exporter.prom").encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server name)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def statuses(prometheus_url: str | None, port: int) -> dict:
    async def run():
        view = ClusterView(cluster_runner())
        if prometheus_url is None:
            return await read_exporters([nvidia_on(port)], view, None)
        async with PrometheusClient(prometheus_url) as client:
            return await read_exporters([nvidia_on(port)], view, client)
    (status,) = asyncio.run(run())
    return status.to_dict()


def wait_scraped(url: str, count: int) -> None:
    async def targets():
        async with PrometheusClient(url) as client:
            return await client.targets()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if sum(t.get("health") in ("up", "down") for t in asyncio.run(targets())) >= count:
            return
        time.sleep(0.2)
    raise AssertionError("Prometheus scraped nothing within 20 s")


@needs_prometheus
def test_each_node_with_the_hardware_is_checked_for_a_running_scraped_exporter(exporter_page):
    port = exporter_page
    with run_prometheus(scrape_targets=[f"127.0.0.1:{port}", f"127.0.0.2:{port}"], scrape_interval="1s") as server:
        wait_scraped(server.url, 2)
        status = statuses(server.url, port)
    assert status["nodes"] == ["gpu-1", "gpu-2", "gpu-3"]  # cpu-1 has no GPU label
    assert status["missing_nodes"] == ["gpu-3"]
    scrapes = {p["pod"]: p["scrape"] for p in status["pods"]}
    assert scrapes == {"nvidia-dcgm-exporter-a1": "up", "dcgm-exporter-b2": "down"}  # both label sets select exporter pods
    assert next(p for p in status["pods"] if p["pod"] == "dcgm-exporter-b2")["error"]
    assert status["ok"] is False
    assert (status["chart"], status["version"], status["port"]) == ("dcgm-exporter", "4.8.2", port)


def test_without_prometheus_the_scrape_is_unknown_not_guessed(exporter_page):
    status = statuses(None, exporter_page)
    assert {p["scrape"] for p in status["pods"]} == {"unknown"}
    assert status["missing_nodes"] == ["gpu-3"]


def test_install_is_the_drivers_pinned_path(capsys):
    assert main(["telemetry", "exporters", "install", "--hardware", "nvidia", "--dry-run", "-o", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["action"] == "dry-run" and row["mode"] == "exporter"
    assert row["commands"] == [["helm", "upgrade", "--install", "dcgm-exporter", "dcgm-exporter", "--version", "4.8.2",
                                "--namespace", "gpu-monitoring", "--create-namespace",
                                "--repo", "https://nvidia.github.io/dcgm-exporter/helm-charts"]]


def test_installing_an_installed_exporter_changes_nothing():
    runner = FakeRunner()
    release = [{"name": "dcgm-exporter", "namespace": "gpu-monitoring", "chart": "dcgm-exporter-4.8.2", "status": "deployed",
                "app_version": "4.5.3-4.8.2"}]
    runner.reply(["helm", "list", ...], json_body=release)
    runner.reply(["helm", "get", "values", ...], json_body={})
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.gpu_driver.install import install

    result = asyncio.run(install(install_target(get_registry().get("nvidia")), ClusterView(runner)))
    assert result.action == "none" and not result.ran
    assert not any(call.argv[:2] == ["helm", "upgrade"] for call in runner.calls)


def test_an_exporter_another_component_deploys_is_not_installed(capsys):
    from llm_d_lens.hardware.registry import get_registry

    with pytest.raises(ExporterNotManaged):
        install_target(get_registry().get("google-tpu"))
    assert main(["telemetry", "exporters", "install", "--hardware", "google-tpu"]) == 1
    assert "EXPORTER_NOT_MANAGED" in capsys.readouterr().err


@pytest.mark.parametrize("mutate, path", [
    (lambda e: e.update(unmanaged_reason="the operator"), "$.telemetry.exporter.release"),
    (lambda e: e["release"].update(chart_version="latest"), "$.telemetry.exporter.release.chart_version"),
    (lambda e: e.update(pod_selectors=[{}]), "$.telemetry.exporter.pod_selectors[0]"),
])
def test_an_exporter_block_is_checked_like_a_driver(mutate, path):
    data = payload("nvidia")
    mutate(data["telemetry"]["exporter"])
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(data, "x.json")
    assert path in [issue.path for issue in caught.value.issues]


@pytest.fixture
def api(monkeypatch):
    """The real app with the drivers' view factory given the fake cluster (the exporter routes share it)."""
    from fastapi.testclient import TestClient

    from llm_d_lens.api.app import create_app
    from llm_d_lens.monitoring.gpu_driver import views

    for name in ("LENS_CLUSTERS", "LENS_PROMETHEUS_URL", "LENS_CLUSTER_DEMO", "LENS_CLUSTER_SNAPSHOT"):
        monkeypatch.delenv(name, raising=False)
    runner = cluster_runner()
    app = create_app()
    app.dependency_overrides[views.view_factory] = lambda: (lambda context: ClusterView(runner))
    return TestClient(app), runner


def test_api_exporter_status_is_the_cli_reading(api):
    client, runner = api
    answer = client.get("/api/v1/telemetry/exporters", params={"hardware": "nvidia"})
    assert answer.status_code == 200, answer.text
    [status] = answer.json()["exporters"]
    assert answer.json()["prometheus"] is False and {p["scrape"] for p in status["pods"]} == {"unknown"}
    assert (status["hardware"], status["missing_nodes"]) == ("nvidia", ["gpu-3"])
    assert not any(call.argv[0] == "helm" for call in runner.calls)


@pytest.mark.parametrize("params, status, code", [
    ({"hardware": "no-such-npu"}, 404, "ACCELERATOR_NOT_REGISTERED"),
    ({"hardware": "nvidia", "context": "other"}, 403, "CONTEXT_NEEDS_TOKEN"),
    ({"hardware": "nvidia", "cluster": "nope"}, 404, "CLUSTER_NOT_FOUND"),
])
def test_api_exporter_status_bad_input_is_a_problem(api, params, status, code):
    client, runner = api
    answer = client.get("/api/v1/telemetry/exporters", params=params)
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")


def test_api_exporter_install_needs_the_token_and_runs_only_the_shown_command(api, monkeypatch):
    client, runner = api
    monkeypatch.delenv("LENS_API_TOKEN", raising=False)
    off = client.post("/api/v1/telemetry/exporters/install", json={"hardware": "nvidia"}, headers={"Authorization": "Bearer x"})
    assert (off.status_code, off.json()["code"]) == (403, "MUTATIONS_DISABLED")
    monkeypatch.setenv("LENS_API_TOKEN", "s3cret")
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = client.post("/api/v1/telemetry/exporters/install", json={"hardware": "nvidia"}, headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (401, "UNAUTHORIZED")
    auth = {"Authorization": "Bearer s3cret"}
    strict = client.post("/api/v1/telemetry/exporters/install", json={"hardware": "nvidia", "dry_run": "false"}, headers=auth)
    assert strict.status_code == 422 and strict.headers["content-type"].startswith("application/problem+json")
    unmanaged = client.post("/api/v1/telemetry/exporters/install", json={"hardware": "google-tpu"}, headers=auth)
    assert (unmanaged.status_code, unmanaged.json()["code"]) == (409, "EXPORTER_NOT_MANAGED")
    assert runner.calls == []  # nothing refused reached the cluster
    planned = client.post("/api/v1/telemetry/exporters/install", json={"hardware": "nvidia", "dry_run": True}, headers=auth)
    [shown] = planned.json()["results"][0]["commands"]
    assert planned.status_code == 200 and runner.calls == []
    runner.reply(["helm", "list", ...], json_body=[])
    runner.reply(["helm", "upgrade", "--install", ...], stdout="Release \"dcgm-exporter\" has been upgraded.\n")
    done = client.post("/api/v1/telemetry/exporters/install", json={"hardware": "nvidia"}, headers=auth)
    assert done.status_code == 200 and done.json()["results"][0]["action"] == "install"
    assert [list(call.requested) for call in runner.calls if call.requested[:2] == ("helm", "upgrade")] == [shown]
