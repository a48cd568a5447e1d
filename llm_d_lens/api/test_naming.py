"""One naming on every endpoint: the JSON keys Lens writes are snake_case (Kubernetes' own stay as they are).

The routes are enumerated from the app, so a new endpoint is checked too: every GET route without
a path parameter (from the app's OpenAPI document) is called against the embedded demo cluster and demo telemetry.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.testing.tables import camel_keys

#: documents in another tool's format, whose keys are that format's (OpenAPI's operationId, ...)
FOREIGN = {"/openapi.json"}


@pytest.fixture()
def client(monkeypatch: pytest.MonkeyPatch) -> TestClient:
    from llm_d_lens.api.app import create_app

    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_CLUSTERS", "LENS_PROMETHEUS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    monkeypatch.setenv("LENS_TELEMETRY_DEMO", "1")
    return TestClient(create_app())


def test_every_get_endpoint_answers_snake_case_keys(client: TestClient) -> None:
    schema = client.app.openapi()  # type: ignore[attr-defined]
    paths = sorted(path for path, operations in schema["paths"].items()
                   if "get" in operations and "{" not in path and path.startswith("/api/") and path not in FOREIGN)
    assert "/api/v1/clusters/overview" in paths and len(paths) > 5
    checked = 0
    for path in paths:
        response = client.get(path)
        if not response.headers.get("content-type", "").startswith("application/json"):
            continue
        checked += 1
        assert not camel_keys(response.json()), f"GET {path}: camelCase keys {camel_keys(response.json())[:8]}"
    assert checked > 5


def test_the_overview_speaks_snake_case(client: TestClient) -> None:
    body = client.get("/api/v1/clusters/overview").json()
    overview = body.get("overview", body)
    assert overview["total_gpu_count"] > 0 and "totalGpuCount" not in overview
    assert all("profile_id" in bucket for bucket in overview["vendors"])
