"""``POST /api/v1/deploy/render`` and ``GET /api/v1/deploy/guides`` through the real app."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.deploy.api import get_runner
from llm_d_lens.deploy.conftest import needs_kustomize
from llm_d_lens.runner import FakeRunner


@pytest.fixture
def client(tree: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setenv("LLM_D_ROOT", str(tree))
    return TestClient(create_app())


@needs_kustomize
def test_render_returns_the_fitted_objects_and_the_explanation(client: TestClient) -> None:
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "xpu", "mode": "dra", "count": 2})
    assert response.status_code == 200
    body = response.json()
    assert (body["hardware"], body["mode"], body["counts"]) == ("intel-xpu", "dra", {"Deployment/decode": 2})
    assert body["overlay"]["path"] == "guides/demo/modelserver/xpu/vllm"
    template = next(o for o in body["objects"] if o["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert body["manifests"].count("\n---\n") == len(body["objects"]) - 1


def test_errors_are_problem_documents(client: TestClient) -> None:
    unknown = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nope"})
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    assert unknown.json()["code"] == "ACCELERATOR_NOT_REGISTERED"
    traversal = client.post("/api/v1/deploy/render", json={"guide": "../../etc", "hardware": "nvidia"})
    assert (traversal.status_code, traversal.json()["code"]) == (400, "DEPLOY_UNSAFE_PATH")
    no_path_field = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia", "llm_d_root": "/"})
    assert (no_path_field.status_code, no_path_field.json()["code"]) == (422, "REQUEST_INVALID")


def test_missing_kustomize_is_a_server_problem(client: TestClient) -> None:
    client.app.dependency_overrides[get_runner] = lambda: FakeRunner().missing("kubectl", "kustomize")
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia"})
    assert (response.status_code, response.json()["code"]) == (500, "KUSTOMIZE_NOT_FOUND")


def test_guides_lists_the_servers_source(client: TestClient) -> None:
    response = client.get("/api/v1/deploy/guides", params={"hardware": "tpu"})
    assert response.status_code == 200
    assert {(o["guide"], o["overlay"]) for o in response.json()["overlays"]} == {
        ("demo", "v6"), ("demo", "v7"), ("demo", "base"), ("flat-tpu", ".")}


def test_guides_takes_empty_query_parameters_as_not_given(client: TestClient) -> None:
    # what a form (or the documented `?guide=&hardware=&revision=`) sends for fields left blank
    response = client.get("/api/v1/deploy/guides?guide=&hardware=tpu&revision=")
    assert response.status_code == 200
    assert {(o["guide"], o["overlay"]) for o in response.json()["overlays"]} == {
        ("demo", "v6"), ("demo", "v7"), ("demo", "base"), ("flat-tpu", ".")}
    assert response.json()["source"]["revision"] is None
