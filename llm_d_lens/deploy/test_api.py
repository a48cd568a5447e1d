"""``POST /api/v1/deploy/render`` and ``GET /api/v1/deploy/guides`` through the real app."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.deploy.api import get_runner
from llm_d_lens.deploy.conftest import needs_kustomize
from llm_d_lens.testing.fake_runner import FakeRunner


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
    assert (response.status_code, response.json()["code"]) == (503, "KUSTOMIZE_NOT_FOUND")


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


@pytest.mark.parametrize("root", [None, "/nonexistent-llm-d-checkout"])
def test_a_server_without_an_llm_d_source_is_a_503_naming_the_variable(root: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The llm-d source is the server's setting: the caller can't fix it and has no --llm-d-root to pass."""
    monkeypatch.delenv("LENS_LLM_D_ROOT", raising=False)
    if root is None:
        monkeypatch.delenv("LLM_D_ROOT", raising=False)
    else:
        monkeypatch.setenv("LLM_D_ROOT", root)
    client = TestClient(create_app())
    for response in (client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia"}),
                     client.get("/api/v1/deploy/guides")):
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["code"] == "SERVER_NOT_CONFIGURED"
        assert "LLM_D_ROOT" in body["detail"] and "--llm-d-root" not in body["detail"]


def test_an_ambiguous_overlay_names_the_body_field_not_the_cli_flag(client: TestClient) -> None:
    # demo has three tpu overlays (base, v6, v7): the caller must choose one with the `overlay` field
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "tpu"})
    assert (response.status_code, response.json()["code"]) == (409, "OVERLAY_AMBIGUOUS")
    assert response.json()["detail"] == "several overlays fit google-tpu (vllm) in guide demo: base, v6, v7; set overlay"


@needs_kustomize
def test_a_bad_pci_address_names_the_body_field_not_the_cli_flag(client: TestClient) -> None:
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "xpu", "mode": "dra", "pci_allow": ["zzz"]})
    assert (response.status_code, response.json()["code"]) == (422, "DEPLOY_REQUEST_INVALID")
    assert response.json()["detail"] == "pci_allow 'zzz' is not a PCI address such as 0000:3b:00.0"


@pytest.mark.parametrize("field,value", [
    ("count", 10**30), ("count", 1025), ("count", 0), ("count", True), ("count", "2"), ("count", 2.5),
    ("pci_allow", "0000:3b:00.0"), ("guide", 7), ("mode", False),
])
def test_absurd_or_wrongly_typed_values_are_refused_naming_the_field(client: TestClient, field: str, value: object) -> None:
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "xpu", field: value})
    assert response.status_code == 422
    assert response.json()["code"] == "REQUEST_INVALID"
    assert [e["path"] for e in response.json()["errors"]] == [f"body.{field}"]


@needs_kustomize
def test_the_explanation_of_a_render_names_body_fields_not_cli_flags(client: TestClient) -> None:
    # demo has vllm and sglang for nvidia, and the overlays base, broken and gke: both defaults are explained
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "cuda", "mode": "dra", "count": 2})
    assert response.status_code == 200
    body = response.json()
    assert "model server vllm: the default (others: sglang; set model_server)" in body["explanation"]
    assert "overlay base: the plain one (others: broken, gke; set overlay)" in body["explanation"]
    assert body["count_sources"] == {"Deployment/decode": "count"}
    assert not [line for line in body["explanation"] if "--" in line]


@needs_kustomize
def test_image_policy_is_a_body_field_and_the_answer_lists_the_images(client: TestClient) -> None:
    kept = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "rocm"}).json()
    assert [(i["action"], i["image"]) for i in kept["images"]] == [("kept", "ghcr.io/llm-d/llm-d-rocm:v0.0.1")]
    replaced = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "rocm", "image_policy": "profile"}).json()
    assert [(i["action"], i["image"]) for i in replaced["images"]] == [("replaced", "ghcr.io/llm-d/llm-d-rocm:v0.7.0")]
    bad = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "rocm", "image_policy": "newest"})
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
    assert "image_policy" in bad.text


@needs_kustomize
def test_the_engine_fields_size_the_engine_and_the_pod_or_are_refused_with_their_code(client: TestClient) -> None:
    # the demo nvidia overlay runs the vllm/vllm-openai image with args ["Qwen/Qwen3-0.6B"] and no command: a plain argv
    body = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia",
                                                      "tensor_parallel": 4, "replicas": 3}).json()
    assert body["counts"] == {"Deployment/decode": 4} and body["count_sources"] == {"Deployment/decode": "the engine's sizes Lens set"}
    (deployment,) = [o for o in body["objects"] if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 3
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["Qwen/Qwen3-0.6B", "--tensor-parallel-size=4"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 4
    assert any("added --tensor-parallel-size=4" in line for line in body["engine_changes"])
    # no command names the model (the image's entrypoint does): Lens does not guess which argument it is
    refused = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia", "model": "org/other"})
    assert refused.status_code == 422 and refused.json()["code"] == "DEPLOY_ENGINE_ARGUMENT_FIXED"
    assert "names no model" in refused.json()["detail"]
    # an image Lens cannot tell the engine of: nothing to set the size in
    unknown = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "xpu", "tensor_parallel": 2})
    assert unknown.status_code == 422 and "no model-server container whose engine Lens knows" in unknown.json()["detail"]
    typed = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia", "tensor_parallel": "2"})
    assert typed.status_code == 422 and "tensor_parallel" in typed.text


def test_the_body_offers_every_field_of_the_services_request_with_its_default() -> None:
    """The HTTP edge's schema and the service's request name the same fields, in order, with the same defaults:
    a field added to one and not the other would be refused by the API or never reach the render."""
    import msgspec

    from llm_d_lens.deploy.api import RenderBody
    from llm_d_lens.deploy.service import RenderRequest

    fields = msgspec.structs.fields(RenderRequest)
    assert list(RenderBody.model_fields) == [f.name for f in fields]
    for f in fields:
        body = RenderBody.model_fields[f.name]
        assert (f.name, body.is_required()) == (f.name, f.required)
        if not f.required:
            default = f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default
            assert (f.name, body.get_default(call_default_factory=True)) == (f.name, default)
