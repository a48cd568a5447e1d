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
