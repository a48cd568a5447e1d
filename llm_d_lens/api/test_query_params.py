"""A query parameter a route does not declare is a 400 naming it, never silently dropped."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.serving import inventories as cache


@pytest.fixture
def demo(monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTERS", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    cache.forget()
    yield
    cache.forget()


def test_an_unknown_name_beside_a_known_one_is_refused_with_both_named(demo):
    client = TestClient(create_app())
    refused = client.get("/api/v1/clusters/overview?nodes=false&node=false")
    assert refused.status_code == 400 and refused.json()["code"] == "QUERY_PARAMETER_UNKNOWN"
    assert refused.json()["details"] == {"unknown": ["node"], "allowed": ["nodes"]}
    assert "nodes" not in client.get("/api/v1/clusters/overview?nodes=false").json()


def test_a_bad_flag_value_is_a_problem_document_naming_the_parameter(demo):
    answer = TestClient(create_app()).get("/api/v1/clusters/overview", params={"nodes": "maybe"})
    assert answer.status_code == 422 and answer.headers["content-type"] == "application/problem+json"
    assert [e["path"] for e in answer.json()["errors"]] == ["query.nodes"]
