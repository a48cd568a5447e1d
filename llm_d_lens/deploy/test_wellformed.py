"""Rendered objects whose fields have the wrong JSON type are named errors, never tracebacks.

kustomize does not check a Deployment's schema: a patch that writes ``limits`` as a list, or a
label as a number, renders fine and reaches Lens as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.deploy.api import get_runner
from llm_d_lens.deploy.conftest import GPU2, claim_template, deployment
from llm_d_lens.deploy.errors import RenderedObjectInvalid
from llm_d_lens.deploy.wellformed import check_rendered
from llm_d_lens.testing.fake_runner import FakeRunner

Edit = Callable[[dict[str, Any], dict[str, Any]], None]


def _container(d: dict[str, Any]) -> dict[str, Any]:
    return d["spec"]["template"]["spec"]["containers"][0]


CASES: list[tuple[Edit, str]] = [
    (lambda d, t: _container(d)["resources"].__setitem__("limits", ["nvidia.com/gpu"]),
     'Deployment/ob-decode: spec.template.spec.containers[0].resources.limits: ["nvidia.com/gpu"] is a JSON array, not an object'),
    (lambda d, t: d["spec"]["template"]["metadata"].__setitem__("labels", {**d["metadata"]["labels"], "llm-d.ai/accelerator-variant": ["gpu"]}),
     'Deployment/ob-decode: spec.template.metadata.labels["llm-d.ai/accelerator-variant"]: ["gpu"] is a JSON array, not a string'),
    (lambda d, t: d["metadata"].__setitem__("name", ["x"]), 'Deployment/?: metadata.name: ["x"] is a JSON array, not a string'),
    (lambda d, t: _container(d).__setitem__("args", 2.5), "Deployment/ob-decode: spec.template.spec.containers[0].args: 2.5 is a JSON number, not a list"),
    (lambda d, t: d["spec"]["template"]["spec"]["containers"].__setitem__(1, None),
     "Deployment/ob-decode: spec.template.spec.containers[1]: null is a JSON null, not an object"),
    (lambda d, t: _container(d)["resources"].__setitem__("claims", {"name": "gpu"}),
     'Deployment/ob-decode: spec.template.spec.containers[0].resources.claims: {"name": "gpu"} is a JSON object, not a list'),
    (lambda d, t: d["spec"]["template"]["spec"].__setitem__("resourceClaims", [{"name": ["gpu"]}]),
     'Deployment/ob-decode: spec.template.spec.resourceClaims[0].name: ["gpu"] is a JSON array, not a string'),
    (lambda d, t: t["spec"]["spec"]["devices"]["requests"][0]["exactly"].__setitem__("deviceClassName", ["gpu.nvidia.com"]),
     'ResourceClaimTemplate/gpu: spec.spec.devices.requests[0].exactly.deviceClassName: ["gpu.nvidia.com"] is a JSON array, not a string'),
    (lambda d, t: t["spec"]["spec"].__setitem__("devices", "gpu"), 'ResourceClaimTemplate/gpu: spec.spec.devices: "gpu" is a JSON string, not an object'),
    (lambda d, t: d["spec"].__setitem__("template", []), "Deployment/ob-decode: spec.template: [] is a JSON array, not an object"),
]


@pytest.mark.parametrize(("edit", "message"), CASES)
def test_a_field_of_the_wrong_type_is_named_with_its_object_and_path(edit: Edit, message: str) -> None:
    workload = deployment(GPU2)
    template = claim_template("gpu", {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}})
    check_rendered([workload, template], "guides/demo/modelserver/gpu/vllm/base")  # well formed: no error
    edit(workload, template)
    with pytest.raises(RenderedObjectInvalid) as caught:
        check_rendered([workload, template], "guides/demo/modelserver/gpu/vllm/base")
    assert str(caught.value) == f"rendered guides/demo/modelserver/gpu/vllm/base: {message}"
    assert caught.value.code == "RENDERED_OBJECT_INVALID"


def test_the_api_answers_a_problem_not_a_500_for_a_badly_typed_render(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_D_ROOT", str(tree))
    workload = deployment(GPU2)
    _container(workload)["resources"]["limits"] = ["nvidia.com/gpu"]
    fake = FakeRunner().reply(["kubectl", "kustomize", ...], stdout=yaml.safe_dump(workload))
    client = TestClient(create_app(), raise_server_exceptions=False)
    client.app.dependency_overrides[get_runner] = lambda: fake
    response = client.post("/api/v1/deploy/render", json={"guide": "demo", "hardware": "nvidia"})
    assert (response.status_code, response.headers["content-type"]) == (422, "application/problem+json")
    assert response.json()["code"] == "RENDERED_OBJECT_INVALID"
    assert response.json()["detail"].endswith(
        'Deployment/ob-decode: spec.template.spec.containers[0].resources.limits: ["nvidia.com/gpu"] is a JSON array, not an object')
