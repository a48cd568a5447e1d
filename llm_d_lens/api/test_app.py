"""Every answer that is not a success is a problem document, whatever went wrong."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app


def test_an_unknown_route_is_a_problem_document():
    response = TestClient(create_app()).get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "NOT_FOUND"


def test_a_wrong_method_is_a_problem_document_and_keeps_the_allow_header():
    response = TestClient(create_app()).delete("/healthz")
    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert "GET" in response.headers["allow"]


def test_an_unexpected_exception_is_a_500_problem_without_a_stack_trace(caplog):
    app = create_app()
    router = APIRouter()

    @router.get("/boom")
    def boom() -> None:
        raise KeyError("secret-internal-detail")

    app.include_router(router)
    response = TestClient(app, raise_server_exceptions=False).get("/boom")
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "INTERNAL_ERROR" and "KeyError" in body["detail"]
    assert "secret-internal-detail" not in response.text and "Traceback" not in response.text
    assert any("unexpected error while serving GET /boom" in r.message for r in caplog.records)


def test_a_json_body_naming_one_key_twice_is_refused_naming_the_key():
    """Python's json keeps the last value silently: {"dry_run": true, "dry_run": false} would install."""
    app = create_app()
    seen: list[object] = []
    router = APIRouter()

    @router.post("/echo")
    def echo(body: dict[str, object]) -> dict[str, object]:
        seen.append(body)
        return body

    app.include_router(router)
    client = TestClient(app)
    response = client.post("/echo", content=b'{"outer": {"dry_run": true, "dry_run": false}}',
                           headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "REQUEST_INVALID"
    assert response.json()["errors"] == [{"path": "body.outer.dry_run", "message": "appears twice; only one value can be meant"}]
    assert seen == []
    # the same keys in different objects, and a body sent in several chunks, still get through whole
    fine = client.post("/echo", content=iter([b'{"a": {"x": 1}, ', b'"b": {"x": 2}}']), headers={"content-type": "application/json"})
    assert fine.status_code == 200 and fine.json() == {"a": {"x": 1}, "b": {"x": 2}}


def test_the_openapi_document_lists_every_endpoint_the_issues_name():
    response = TestClient(create_app()).get("/openapi.json")
    assert response.status_code == 200
    methods = {path: set(operations) for path, operations in response.json()["paths"].items()}
    expected = {
        "/healthz": {"get"}, "/api/v1/hardware/capabilities": {"get"}, "/api/v1/hardware/{key}": {"get"},
        "/api/v1/clusters/overview": {"get"}, "/api/v1/deploy/render": {"post"}, "/api/v1/drivers/status": {"get"},
        "/api/v1/drivers/install": {"post"}, "/api/v1/preflight": {"post"}, "/api/v1/telemetry/devices": {"get"},
        "/api/v1/telemetry/pods": {"get"}, "/api/v1/evaluate/config": {"post"},
    }
    assert {path: methods.get(path) for path in expected} == expected


def test_a_json_body_nested_too_deeply_is_a_422_not_a_500():
    """Python's json parser recurses: 100,000 nested arrays raised RecursionError, answered as a 500."""
    body = b'{"hardware": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = TestClient(create_app()).post("/api/v1/evaluate/config", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["code"] == "REQUEST_INVALID"
    assert response.json()["errors"] == [{"path": "body", "message": "is nested too deeply to read"}]
