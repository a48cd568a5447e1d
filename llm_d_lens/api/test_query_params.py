"""The overview reads ``nodes`` itself (query_flag); it must answer exactly as FastAPI's ``Query`` did."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, Query
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cluster import cache
from llm_d_lens.cluster.api import NODES_HELP

#: what clients send, what pydantic also accepts, and what it refuses
VALUES = ["true", "false", "0", "1", "no", "yes", "off", "on", "FALSE", "True", "f", "t", "", "maybe", "2", " true"]


@pytest.fixture
def demo(monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTERS", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    cache.forget()
    yield
    cache.forget()


def reference() -> TestClient:
    """A route that lets FastAPI solve the parameter, mounted with Lens's error rendering."""
    app = create_app()

    @app.get("/reference")
    async def solved(nodes: bool = Query(True, description=NODES_HELP)) -> dict[str, bool]:
        return {"nodes": nodes}

    return TestClient(app)


@pytest.mark.parametrize("value", VALUES)
def test_nodes_takes_the_values_and_gives_the_errors_fastapi_gave(demo, value):
    client = reference()
    expected = client.get("/reference", params={"nodes": value})
    answer = client.get("/api/v1/clusters/overview", params={"nodes": value})
    assert answer.status_code == expected.status_code
    if expected.status_code == 200:
        assert ("nodes" in answer.json()) is expected.json()["nodes"]
    else:
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json() == expected.json()  # same code, same path (query.nodes), same message


def test_a_repeated_nodes_keeps_the_last_value_as_fastapi_did(demo):
    client = reference()
    for query in ("nodes=true&nodes=false", "nodes=false&nodes=true"):
        expected = client.get(f"/reference?{query}").json()["nodes"]
        assert ("nodes" in client.get(f"/api/v1/clusters/overview?{query}").json()) is expected


def test_the_document_declares_nodes_as_fastapi_did_and_unknown_names_are_still_refused(demo):
    client = reference()
    paths = client.get("/openapi.json").json()["paths"]
    mine, solved = paths["/api/v1/clusters/overview"]["get"], paths["/reference"]["get"]
    assert mine["parameters"] == solved["parameters"]
    assert "422" in mine["responses"]
    refused = client.get("/api/v1/clusters/overview?nodes=false&node=false")
    assert refused.status_code == 400 and refused.json()["code"] == "QUERY_PARAMETER_UNKNOWN"
    assert refused.json()["details"] == {"unknown": ["node"], "allowed": ["nodes"]}
