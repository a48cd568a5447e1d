"""``/api/v1/telemetry/devices`` and ``/pods`` through the real app, against a real Prometheus."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.testing.telemetry_pages import needs_prometheus, shared
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, free_port


@pytest.fixture
def api(monkeypatch) -> TestClient:
    monkeypatch.delenv("LENS_PROMETHEUS_URL", raising=False)
    monkeypatch.delenv("LENS_CLUSTER_OBJECTS", raising=False)
    return TestClient(create_app())


@needs_prometheus
def test_devices(api, prometheus, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", prometheus.url)
    answer = api.get("/api/v1/telemetry/devices", params={"hardware": "amd", "node": "amd-node-01", "at": BASE_TIMESTAMP})
    assert answer.status_code == 200
    devices = {d["device"]: d for d in answer.json()["devices"]}
    assert devices["PCB049874-0071"]["memory_total_bytes"] == 196592 * 2**20
    assert devices["PCB049874-0071"]["attribution"]["pod"] == "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz"
    assert answer.json()["queries"] == 2  # the recorded selector (none here), then the inventory, quantities and targets in one


@needs_prometheus
def test_devices_with_cluster_objects_from_the_environment(api, prometheus, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", prometheus.url)
    monkeypatch.setenv("LENS_CLUSTER_OBJECTS", str(shared("clusters", "dra-intel-cpu.json")))
    answer = api.get("/api/v1/telemetry/devices", params=[("hardware", "intel-xpu"), ("node", "xpu-max1550-01"), ("at", BASE_TIMESTAMP)])
    owners = {d["device"]: d["attribution"]["pod"] for d in answer.json()["devices"]}
    assert owners["0000:9a:00.0"] == "vllm-xpu-qwen2-5-32b-59d7f8c6b4-k7wqz"


@needs_prometheus
def test_pods(api, prometheus, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", prometheus.url)
    answer = api.get("/api/v1/telemetry/pods", params={"hardware": "nvidia", "namespace": "llm-serving", "at": BASE_TIMESTAMP})
    assert answer.status_code == 200
    (pod,) = answer.json()["pods"]
    # the shared samples name this pod on GPU 0 of two nodes: refused, not summed
    assert pod["kv_cache_usage_ratio"] == 0.4375 and pod["devices"]["status"] == "unavailable"
    amd = api.get("/api/v1/telemetry/pods", params={"hardware": "amd", "namespace": "llm-serving", "pod": pod["pod"], "at": BASE_TIMESTAMP})
    assert amd.json()["pods"][0]["devices"]["power_watts"] == 688
    cpu = api.get("/api/v1/telemetry/pods", params={"hardware": "cpu", "namespace": "llm-serving", "at": BASE_TIMESTAMP})
    assert cpu.status_code == 200 and cpu.json()["pods"][0]["kv_cache_usage_ratio"] == 0.4375


@needs_prometheus
def test_a_node_parameter_cannot_widen_the_query(api, prometheus, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", prometheus.url)
    answer = api.get("/api/v1/telemetry/devices", params={"node": 'x"} or vector(1) or {a="', "at": BASE_TIMESTAMP})
    assert answer.status_code == 200 and answer.json()["devices"] == []


def test_without_a_configured_prometheus_the_answer_says_how(api):
    # the server's configuration, not the caller's request: 503, and no CLI flag the caller can't pass
    answer = api.get("/api/v1/telemetry/devices")
    assert answer.status_code == 503 and answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert body["code"] == "SERVER_NOT_CONFIGURED"
    assert "LENS_PROMETHEUS_URL" in body["detail"] and "--prometheus" not in body["detail"]


def test_a_misconfigured_timeout_is_the_servers_problem(api, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", "http://prometheus.test:9090")
    monkeypatch.setenv("LENS_PROMETHEUS_TIMEOUT", "soon")
    answer = api.get("/api/v1/telemetry/pods")
    assert answer.status_code == 503 and answer.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert "LENS_PROMETHEUS_TIMEOUT='soon'" in answer.json()["detail"]


def test_prometheus_down_is_a_bad_gateway(api, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", f"http://127.0.0.1:{free_port()}")
    answer = api.get("/api/v1/telemetry/pods")
    assert answer.status_code == 502 and answer.json()["code"] == "PROMETHEUS_UNREACHABLE"


def test_unknown_hardware_is_not_found(api, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", "http://prometheus.test:9090")
    answer = api.get("/api/v1/telemetry/devices", params={"hardware": "no-such-chip"})
    assert answer.status_code == 404 and answer.json()["code"] == "ACCELERATOR_NOT_REGISTERED"


def test_the_prometheus_url_is_not_a_request_parameter(api):
    # the server asks only the Prometheus it is configured with; a caller cannot point it elsewhere,
    # and the attempt is refused by name rather than ignored
    answer = api.get("/api/v1/telemetry/devices", params={"prometheus": "http://169.254.169.254"})
    assert answer.status_code == 400 and answer.json()["code"] == "QUERY_PARAMETER_UNKNOWN"
    assert answer.json()["details"]["unknown"] == ["prometheus"]


@pytest.mark.parametrize("path", ["/api/v1/telemetry/devices", "/api/v1/telemetry/pods"])
@pytest.mark.parametrize("at", ["nan", "inf"])
def test_a_time_that_is_not_finite_is_a_request_error(api, monkeypatch, path, at):
    """Sent on to Prometheus it answered 200 with nothing in it, as if no device reported."""
    monkeypatch.setenv("LENS_PROMETHEUS_URL", f"http://127.0.0.1:{free_port()}")
    answer = api.get(path, params={"at": at})
    assert answer.status_code == 422 and answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "REQUEST_INVALID" and answer.json()["errors"][0]["path"] == "query.at"


@pytest.mark.parametrize("path", ["/api/v1/telemetry/devices", "/api/v1/telemetry/pods"])
@pytest.mark.parametrize("at", ["-1", "1e300", "253402300800"])
def test_a_time_before_1970_or_after_9999_is_a_request_error(api, monkeypatch, path, at):
    """Prometheus clamps such a time and answers 200 with nothing in it, as if no device reported."""
    monkeypatch.setenv("LENS_PROMETHEUS_URL", f"http://127.0.0.1:{free_port()}")
    answer = api.get(path, params={"at": at})
    assert answer.status_code == 422 and answer.json()["code"] == "REQUEST_INVALID"
    assert answer.json()["errors"][0]["path"] == "query.at"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "prometheus.monitoring:9090", "http://prometheus.test:9090/?x=1"])
def test_an_unusable_prometheus_url_is_the_servers_problem(api, monkeypatch, url):
    # the URL is the server's setting: a 4xx would tell the caller to fix a request that is fine
    monkeypatch.setenv("LENS_PROMETHEUS_URL", url)
    answer = api.get("/api/v1/telemetry/devices")
    assert answer.status_code == 503 and answer.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert "LENS_PROMETHEUS_URL" in answer.json()["detail"]
    assert answer.json()["details"]["cause"] == "PROMETHEUS_URL_INVALID"


def test_unusable_cluster_object_files_are_the_servers_problem(api, monkeypatch, tmp_path):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("LENS_CLUSTER_OBJECTS", str(tmp_path / "missing.json"))
    answer = api.get("/api/v1/telemetry/pods")
    assert answer.status_code == 503 and answer.json()["code"] == "SERVER_NOT_CONFIGURED"
    assert "LENS_CLUSTER_OBJECTS" in answer.json()["detail"] and "missing.json" in answer.json()["detail"]
    assert answer.json()["details"]["cause"] == "CLUSTER_OBJECTS_INVALID"


@needs_prometheus
def test_series_reads_a_range_from_prometheus(api, prometheus, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", prometheus.url)
    answer = api.get("/api/v1/telemetry/series", params={"hardware": "nvidia", "quantity": "power", "start": BASE_TIMESTAMP - 60,
                                                          "end": BASE_TIMESTAMP, "step": 60})
    assert answer.status_code == 200
    body = answer.json()
    assert body["quantities"] == [{"key": "power", "field": "power_watts", "unit": "W", "title": "power"}]
    series = {d["name"]: d["series"]["power_watts"] for d in body["devices"] if "power_watts" in d["series"]}
    # the sample's GPU 0 draws 612.35 W; backfilled at BASE_TIMESTAMP, so only that instant has a point
    assert series["gpu-node-01/0"] == [[BASE_TIMESTAMP, 612.35]]
    assert body["queries"] == 2  # the inventory and the one quantity asked for


def test_series_in_demo_mode_reads_the_embedded_history_ending_now(api, monkeypatch):
    import time

    monkeypatch.setenv("LENS_TELEMETRY_DEMO", "1")
    body = api.get("/api/v1/telemetry/series", params={"hardware": "amd", "quantity": "temperature"}).json()
    assert body["source"].startswith("demo telemetry")
    # the demo inventory's AMD devices: eight on gpu-mi300x-01 (its second AMD node advertises none)
    assert {d["node"] for d in body["devices"]} == {"gpu-mi300x-01"} and len(body["devices"]) == 8
    latest = max(t for d in body["devices"] for t, _ in d["series"]["temperature_celsius"])
    assert time.time() - 120 < latest <= time.time()
    assert all(20 < v < 100 for d in body["devices"] for _, v in d["series"]["temperature_celsius"])


@pytest.mark.parametrize(("params", "fragment"), [
    ({"start": 200, "end": 100}, "must be before end"),
    ({"start": 0, "end": 10**7}, "longer than a week"),
    ({"quantity": "fan_speed"}, "unknown quantity 'fan_speed'"),
])
def test_a_range_lens_cannot_chart_is_a_request_error(api, monkeypatch, params, fragment):
    monkeypatch.setenv("LENS_TELEMETRY_DEMO", "1")
    answer = api.get("/api/v1/telemetry/series", params=params)
    assert answer.status_code == 400 and answer.json()["code"] == "TELEMETRY_RANGE_INVALID"
    assert fragment in answer.json()["detail"]


def test_series_without_prometheus_or_demo_is_the_servers_problem(api):
    answer = api.get("/api/v1/telemetry/series")
    assert answer.status_code == 503 and answer.json()["code"] == "SERVER_NOT_CONFIGURED"


def test_demo_devices_join_the_demo_pods_so_no_busy_device_is_idle(api, monkeypatch):
    monkeypatch.setenv("LENS_TELEMETRY_DEMO", "1")
    answer = api.get("/api/v1/telemetry/devices")
    assert answer.status_code == 200
    devices = answer.json()["devices"]
    busy = [d for d in devices if (d["utilization_ratio"] or 0) > 0]
    assert busy and not [d["node"] + "/" + d["device"] for d in busy if d["attribution"]["status"] == "idle"]
    assert all(d["attribution"]["status"] == "attributed" for d in busy)
    # the holders are the demo cluster's own pods, by both joins: pod labels and DRA claims
    holders = {(d["attribution"]["join"], d["attribution"]["pod"]) for d in busy}
    assert ("extended-resource", "vllm-llama-3-1-405b-rocm-0") in holders
    assert ("dra", "vllm-deepseek-r1-distill-70b-0") in holders and ("dra", "vllm-xpu-llama-3-1-70b-0") in holders
    # a device no demo pod holds reads 0 % and is idle by the objects' evidence
    quiet = [d for d in devices if d["attribution"]["status"] == "idle"]
    assert quiet and all(d["utilization_ratio"] == 0 for d in quiet)
    # and health is known from the demo's health fields (the TPU device plugin publishes none)
    assert {d["health"]["status"] for d in devices if d["hardware"] != "google-tpu"} == {"ok"}
