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


def test_capabilities_are_fastapis_own_bytes_tagged_by_the_version_and_revalidated(client):
    from typing import Any

    from fastapi import FastAPI

    from llm_d_lens.hardware.views import capabilities

    bare = FastAPI()

    @bare.get("/c")
    def plain() -> dict[str, Any]:  # what the endpoint answered before it was cached
        return capabilities()

    first = client.get("/api/v1/hardware/capabilities")
    assert first.content == TestClient(bare).get("/c").content
    etag = first.headers["etag"]
    assert etag.startswith(f'"{first.json()["version"]}-') and first.headers["cache-control"] == "no-cache"
    again = client.get("/api/v1/hardware/capabilities", headers={"If-None-Match": etag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)


def test_a_new_registry_is_a_new_capabilities_document(client):
    from llm_d_lens.hardware.registry import Registry, get_registry, set_registry

    before = client.get("/api/v1/hardware/capabilities")
    kept = get_registry()
    set_registry(Registry([]))
    try:
        after = client.get("/api/v1/hardware/capabilities", headers={"If-None-Match": before.headers["etag"]})
    finally:
        set_registry(kept)
    assert after.status_code == 200 and after.json()["profiles"] == [] and after.headers["etag"] != before.headers["etag"]
    assert client.get("/api/v1/hardware/capabilities", headers={"If-None-Match": before.headers["etag"]}).status_code == 304
