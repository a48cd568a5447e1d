"""``POST /api/v1/evaluate/config`` through the real app: what a JSON caller may and may not send."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app())


def test_a_hardware_and_parallelism_give_the_scenario_count(client: TestClient) -> None:
    response = client.post("/api/v1/evaluate/config", json={"hardware": "cuda", "tensor_parallel": 4})
    assert response.status_code == 200
    summary = response.json()["summary"]
    assert (summary["hardware"], summary["resource"], summary["accelerators_per_pod"]) == ("nvidia", "nvidia.com/gpu", {"decode": 4})


@pytest.mark.parametrize("field,value", [
    ("tensor_parallel", 10**30), ("tensor_parallel", 1025), ("tensor_parallel", 0), ("tensor_parallel", True),
    ("tensor_parallel", "2"), ("replicas", 10**30), ("replicas", -1), ("replicas", False), ("hardware", 1),
    ("manifest", ["kind: Pod"]), ("nonsense", 1),
])
def test_absurd_or_wrongly_typed_values_are_refused_naming_the_field(client: TestClient, field: str, value: object) -> None:
    response = client.post("/api/v1/evaluate/config", json={"hardware": "nvidia", field: value})
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "REQUEST_INVALID"
    assert [e["path"] for e in response.json()["errors"]] == [f"body.{field}"]


def test_a_workload_profile_is_chosen_by_name_never_by_path(client: TestClient) -> None:
    response = client.post("/api/v1/evaluate/config", json={"hardware": "nvidia", "profile": "../../../etc/passwd"})
    assert (response.status_code, response.json()["code"]) == (404, "WORKLOAD_PROFILE_NOT_FOUND")
