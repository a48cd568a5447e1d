"""/api/v1/hardware through the ASGI app."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app())


def test_capabilities_lists_every_profile_complete_with_a_version(client):
    body = client.get("/api/v1/hardware/capabilities").json()
    assert [p["id"] for p in body["profiles"]] == ["amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"]
    assert len(body["version"]) == 16
    xpu = next(p for p in body["profiles"] if p["id"] == "intel-xpu")
    # complete fields: the contract's blocks and the derived views a UI needs
    for key in ("deployment", "driver", "presence", "telemetry", "planning", "inventory", "ui", "aliases", "access_mode_details"):
        assert key in xpu
    assert xpu["access_mode_details"]["dra"]["device_class"] == "gpu.intel.com"
    assert {"variant": "xpu", "vendor": "intel"} in xpu["upstream_label_pairs"]


def test_capabilities_version_is_stable_between_calls(client):
    assert client.get("/api/v1/hardware/capabilities").json()["version"] == client.get("/api/v1/hardware/capabilities").json()["version"]


def test_one_profile_by_alias(client):
    response = client.get("/api/v1/hardware/habana")
    assert response.status_code == 200 and response.json()["id"] == "intel-gaudi"


def test_unknown_hardware_is_a_problem_document(client):
    response = client.get("/api/v1/hardware/nvidai")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "ACCELERATOR_NOT_REGISTERED" and body["status"] == 404
    assert body["details"]["key"] == "nvidai" and "nvidia" in body["details"]["nearest"]


def test_healthz(client):
    assert client.get("/healthz").json()["status"] == "ok"
