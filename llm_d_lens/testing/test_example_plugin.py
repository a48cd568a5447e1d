"""examples/nimbus-lens, pip-installed into a throwaway place, driven through the CLI and the API.

The example is a complete external plugin (a fictional vendor): two access modes, a provider that
overrides one hook, a telemetry provider deriving a quantity, and its own tests using the kit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.testing.pip_install import env_with, pip_install

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nimbus-lens"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    target = tmp_path_factory.mktemp("site")
    copy = pip_install(EXAMPLE, target, tmp_path_factory.mktemp("src"))
    return target, copy


def lens(installed, *args: str) -> subprocess.CompletedProcess[str]:
    target, _ = installed
    env = env_with(target, LENS_CACHE_DIR=str(target.parent / "cache"))
    return subprocess.run([sys.executable, "-m", "llm_d_lens.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_pip_left_real_metadata_with_all_three_entry_point_groups(installed):
    target, _ = installed
    [info] = target.glob("nimbus_lens-0.1.0.dist-info")
    groups = [line for line in (info / "entry_points.txt").read_text().splitlines() if line.startswith("[")]
    assert groups == ["[llm_d_lens.hardware.profiles]", "[llm_d_lens.hardware.providers]", "[llm_d_lens.telemetry.providers]"]
    assert (target / "nimbus_lens" / "profiles" / "nimbus-npu.json").is_file()  # package data travelled


def test_the_cli_lists_resolves_and_doctors_it(installed):
    listed = lens(installed, "hardware", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["id"] == "nimbus-npu")
    assert row["status"] == "registered" and row["origins"] == ["entry point 'nimbus-npu' of nimbus-lens 0.1.0"]
    assert row["access_modes"] == {"plugin": "extended-resource", "dra": "dra"}
    resolved = lens(installed, "hardware", "resolve", "--key", "nimbus", "--key", "NMB", "--key", "nimbus-npu",
                    "--device-class", "npu.nimbus.example.com", "--resource", "nimbus.example.com/npu",
                    "--dra-driver", "npu.nimbus.example.com", "-o", "json")
    assert [r["id"] for r in json.loads(resolved.stdout)] == ["nimbus-npu"] * 6
    doctor = lens(installed, "hardware", "doctor", "-o", "json")
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 0 and report["ok"] is True
    assert next(p for p in report["profiles"] if p["id"] == "nimbus-npu")["provider"] == "NimbusProvider"


def test_its_telemetry_provider_derives_memory_headroom(installed):
    _, copy = installed
    read = lens(installed, "telemetry", "devices", "--snapshot", str(copy / "tests" / "metrics.prom"),
                "--hardware", "nimbus", "-o", "json")
    assert read.returncode == 0, read.stderr
    devices = json.loads(read.stdout)["devices"]
    assert [(d["device"], d["derived"]) for d in devices] == [("0", {"memory_free_bytes": 21474836480.0}),
                                                              ("1", {"memory_free_bytes": 34359738368.0})]


def test_the_api_serves_it_and_installs_its_driver_with_the_providers_hook(installed, monkeypatch):
    target, _ = installed
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.setenv("LENS_CACHE_DIR", str(target.parent / "cache"))
    monkeypatch.setenv("LENS_API_TOKEN", "t0ken")
    from fastapi.testclient import TestClient

    from llm_d_lens.api.app import create_app
    from llm_d_lens.hardware.registry import set_registry
    from llm_d_lens.monitoring.accelerator.registry import set_telemetry_registry
    from llm_d_lens.monitoring.gpu_driver import api as driver_api
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
    from llm_d_lens.testing.fake_runner import FakeRunner

    set_registry(None)
    set_telemetry_registry(None)  # both registries are read once per process: this one must see the plugin
    fake = FakeRunner()
    fake.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"],
               json_body={"kind": "List", "items": [{"metadata": {"name": "nimbus"}, "handler": "nimbus"}]})
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    app = create_app()
    app.dependency_overrides[driver_api.view_factory] = lambda: (lambda context: ClusterView(fake))
    client = TestClient(app)
    try:
        body = client.get("/api/v1/hardware/capabilities").json()
        nimbus = next(p for p in body["profiles"] if p["id"] == "nimbus-npu")
        assert nimbus["access_mode_details"]["dra"]["device_class"] == "npu.nimbus.example.com"
        assert body["failures"] == [] and client.get("/readyz").status_code == 200
        installed = client.post("/api/v1/drivers/install", json={"hardware": "nmb", "mode": "plugin"},
                                headers={"Authorization": "Bearer t0ken"})
        assert installed.status_code == 200, installed.text
        [command] = [argv for argv in fake.argvs() if argv[:2] == ["helm", "upgrade"]]
        assert command[:7] == ["helm", "upgrade", "--install", "nimbus-device-plugin", "nimbus-device-plugin",
                               "--version", "1.4.2"]
        assert 'runtimeClassName="nimbus"' in command  # the provider's one hook, from the cluster
    finally:
        set_registry(None)
        set_telemetry_registry(None)


def test_its_own_tests_pass_with_the_contract_kit(installed):
    target, copy = installed
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "llm_d_lens.testing.contract", "-p",
                             "no:cacheprovider", "tests"], cwd=copy, capture_output=True, text=True, timeout=300,
                            env=env_with(target, LENS_CACHE_DIR=str(target.parent / "cache")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
