"""The server with broken plugins: hardware routes keep working, /readyz tells, --strict refuses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.hardware.conftest import _forget_registry, fresh_registry, plugins  # noqa: F401 - fixtures
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.monitoring.accelerator.registry import set_telemetry_registry
from llm_d_lens.testing.prometheus import free_port


@pytest.fixture(autouse=True)
def _fresh_telemetry_registry():
    set_telemetry_registry(None)
    yield
    set_telemetry_registry(None)


def install_trouble(plugins) -> None:  # noqa: F811
    plugins.make("exiter", module_source="import sys\nsys.exit(3)\n", profile_entry_points={"exiter": "exiter_lens:x"})
    plugins.make("rogue-lens", version="0.9.0",
                 profiles={"rogue": [minimal_profile("rogue", device_classes=["gpu.nvidia.com"])]})
    plugins.make("good-lens", profiles={"good": [minimal_profile("good")]})


def test_the_api_keeps_serving_every_other_hardware_and_lists_the_failures(plugins, fresh_registry):  # noqa: F811
    install_trouble(plugins)
    fresh_registry()
    client = TestClient(create_app())
    body = client.get("/api/v1/hardware/capabilities").json()
    assert {"nvidia", "good"} <= {p["id"] for p in body["profiles"]} and "rogue" not in {p["id"] for p in body["profiles"]}
    failures = {f["name"]: f for f in body["failures"]}
    assert failures["exiter"]["kind"] == "import" and "SystemExit: 3" in failures["exiter"]["reason"]
    assert failures["rogue"]["kind"] == "conflict" and failures["rogue"]["distribution"] == "rogue-lens 0.9.0"
    assert [o["id"] for o in failures["rogue"]["details"]["owners"]] == ["nvidia", "rogue"]
    assert client.get("/api/v1/hardware/cuda").json()["id"] == "nvidia"
    skipped = client.get("/api/v1/hardware/rogue")
    assert skipped.status_code == 503 and skipped.headers["content-type"] == "application/problem+json"
    assert skipped.json()["code"] == "PLUGIN_LOAD_FAILED" and "registration conflict" in skipped.json()["detail"]

    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.headers["content-type"] == "application/problem+json"
    assert ready.json()["code"] == "NOT_READY"
    assert sorted(p["name"] for p in ready.json()["problems"]) == ["exiter", "rogue"]


def test_readyz_is_200_when_every_plugin_registered(plugins, fresh_registry):  # noqa: F811
    plugins.make("good-lens", profiles={"good": [minimal_profile("good")]})
    fresh_registry()
    ready = TestClient(create_app()).get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_readyz_names_a_profile_whose_telemetry_provider_nobody_registered(plugins, fresh_registry):  # noqa: F811
    telemetry = {"provider_id": "ghost-telemetry", "allocation_join": "none"}
    plugins.make("ghost-lens", profiles={"ghost": [minimal_profile("ghost", telemetry=telemetry)]})
    fresh_registry()
    ready = TestClient(create_app()).get("/readyz")
    assert ready.status_code == 503
    [problem] = ready.json()["problems"]
    assert (problem["kind"], problem["profile_id"], problem["name"]) == ("telemetry-provider", "ghost", "ghost-telemetry")
    assert "$.telemetry.provider_id" in problem["reason"]


def env_with(plugins, **extra: str) -> dict[str, str]:  # noqa: F811 - the factory the fixture gives
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugins.root), *sys.path]), **extra)


def test_serve_strict_refuses_to_start_and_names_the_problems(plugins):  # noqa: F811
    install_trouble(plugins)
    result = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "serve", "--strict", "--port", str(free_port())],
                            capture_output=True, text=True, env=env_with(plugins), timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: PLUGIN_LOAD_FAILED: lens serve --strict: not starting, 2 hardware plugin problems")
    assert "exiter from exiter 1.0.0 (import)" in result.stderr and "rogue from rogue-lens 0.9.0 (conflict)" in result.stderr


def test_a_hanging_plugin_neither_blocks_the_server_nor_its_shutdown(plugins):  # noqa: F811
    plugins.make("hanger", module_source="import time\ntime.sleep(600)\n", profile_entry_points={"hanger": "hanger_lens:x"})
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               # no cluster watch: its kubectl failing against no cluster is not this test's problem
                               env=env_with(plugins, LENS_PLUGINS_TIMEOUT="1", LENS_CLUSTER_WATCH="0"))
    try:
        deadline, ready = time.monotonic() + 60, None
        while time.monotonic() < deadline and ready is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2)
            except urllib.error.HTTPError as error:
                ready = json.load(error)
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None
                time.sleep(0.2)
        assert ready is not None and [p["kind"] for p in ready["problems"]] == ["timeout"]
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(20)  # it does not ignore SIGTERM (wait would time out)
    assert code in (0, -signal.SIGTERM)  # uvicorn shuts down, then re-raises the signal it caught
