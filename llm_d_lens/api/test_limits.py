"""Sizes through the real ASGI app: a body limit (413), bounded echo of values, bounded error lists."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.api.body_limit import DEFAULT_MAX_BODY_BYTES
from llm_d_lens.errors import MAX_REPORTED, ServerNotConfigured, echo

CONFIG = "/api/v1/evaluate/config"


def client() -> TestClient:
    return TestClient(create_app())


def assert_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code and body["status"] == status
    return body


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_parsed():
    body = b'{"hardware": "' + b"x" * DEFAULT_MAX_BODY_BYTES + b'"}'
    response = client().post(CONFIG, content=body, headers={"content-type": "application/json"})
    problem = assert_problem(response, 413, "REQUEST_TOO_LARGE")
    assert problem["limit"] == DEFAULT_MAX_BODY_BYTES and "LENS_API_MAX_BODY_BYTES" in problem["detail"]
    assert len(response.content) < 1000


def test_a_streamed_body_without_a_length_is_cut_off_at_the_limit():
    def chunks():
        for _ in range(64):  # 4 MiB in all, if it were all read
            yield b"[" * 65536

    response = client().post(CONFIG, content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in response.request.headers  # sent chunked: only counting can stop it
    assert_problem(response, 413, "REQUEST_TOO_LARGE")


def test_the_limit_is_the_operator_s_to_set(monkeypatch):
    monkeypatch.setenv("LENS_API_MAX_BODY_BYTES", "64")
    small = client()
    assert_problem(small.post(CONFIG, json={"hardware": "nvidia", "guide": "g" * 80}), 413, "REQUEST_TOO_LARGE")
    assert small.post(CONFIG, json={"hardware": "nvidia"}).status_code == 200


@pytest.mark.parametrize("setting", ["lots", "-1", "0", "1e6", "99999999999999999999"])
def test_a_limit_that_is_no_number_of_bytes_is_a_server_configuration_error(monkeypatch, setting):
    monkeypatch.setenv("LENS_API_MAX_BODY_BYTES", setting)
    with pytest.raises(ServerNotConfigured, match="LENS_API_MAX_BODY_BYTES"):
        create_app()


def test_a_huge_name_is_refused_without_being_echoed_back():
    guide = "g" * 500_000
    response = client().post(CONFIG, json={"hardware": "nvidia", "guide": guide})
    problem = assert_problem(response, 422, "REQUEST_INVALID")
    assert problem["errors"][0]["path"] == "body.guide"
    assert len(response.content) < 2000


def test_a_million_unknown_keys_yield_a_bounded_list_of_errors():
    body = {f"k{i}": 1 for i in range(60_000)}
    response = client().post(CONFIG, content=json.dumps(body, separators=(",", ":")).encode(),
                             headers={"content-type": "application/json"})
    problem = assert_problem(response, 422, "REQUEST_INVALID")
    assert len(problem["errors"]) == MAX_REPORTED and problem["errors_total"] == 60_000
    assert problem["detail"].endswith(f"... and {60_000 - MAX_REPORTED} more")
    assert len(response.content) < 20_000


def test_echo_keeps_any_value_small_and_encodable():
    value = {"s": "x" * 10**6, "nan": float("nan"), "big": 10**5000, "lone": "\udc80",
             "list": list(range(1000)), "deep": [[[[[[[[[[["bottom"]]]]]]]]]]]}
    shown = echo(value)
    text = json.dumps(shown, allow_nan=False)
    text.encode("utf-8")
    assert len(text) < 2000
    assert shown["s"].endswith("...[999800 more characters]") and shown["nan"] == "nan"
    assert shown["list"][-1] == "... and 950 more" and shown["lone"] == "\\udc80"
