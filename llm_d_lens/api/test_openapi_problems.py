"""The OpenAPI document declares the problem answers the API gives, and the API gives no others.

A bounded, schema-driven pass over every operation (few requests each, all through the real ASGI
app): odd path values, empty and hostile bodies. Every answer must be declared for its operation,
and every error must be problem+json; none may be a 500.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.api.openapi_problems import STATUSES

PATH_VALUES = ["nvidia", "no-such-thing", "%ff", "a" * 300, "..", "%00", "%ed%b2%80"]
BODIES = [b"{}", b'{"unknown": 1}', b"[]", b"null", b'{"a": NaN}', b"{" * 5000, b'{"x": 1, "x": 2}',
          b'"' + b"\\udc80" + b'"', b"not json", b"1" * 6000]


@pytest.fixture(scope="module")
def app_and_document():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LENS_CLUSTER_DEMO", "1")
        patch.setenv("LENS_TELEMETRY_DEMO", "1")
        for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG"):
            patch.delenv(name, raising=False)
        app = create_app()
        client = TestClient(app, raise_server_exceptions=False)
        yield client, client.get("/openapi.json").json()


def operations(document):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and "responses" in operation:
                yield path, method, operation


def test_every_operation_declares_every_problem_answer_as_problem_json(app_and_document):
    _, document = app_and_document
    assert document["components"]["schemas"]["Problem"]["required"] == ["type", "title", "status", "detail", "code"]
    found = list(operations(document))
    assert len(found) >= 19
    for path, method, operation in found:
        for status in STATUSES:
            declared = operation["responses"].get(status)
            assert declared is not None, f"{method.upper()} {path} does not declare {status}"
            assert declared["content"]["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}


def _requests(document):
    for path, method, operation in operations(document):
        names = re.findall(r"{([^}]+)}", path)
        values = PATH_VALUES if names else [None]
        for value in values:
            url = path
            for name in names:
                url = url.replace("{" + name + "}", value)
            if method in ("post", "put", "patch"):
                for body in BODIES:
                    yield operation, method, url, body
            else:
                yield operation, method, url, None


def test_a_bounded_schema_driven_run_finds_no_500_and_no_undeclared_answer(app_and_document):
    client, document = app_and_document
    failures = []
    count = 0
    for operation, method, url, body in _requests(document):
        count += 1
        headers = {"content-type": "application/json"} if body is not None else {}
        response = client.request(method, url, content=body, headers=headers)
        status = str(response.status_code)
        if response.status_code >= 500 and response.status_code not in (502, 503):
            failures.append(f"{method.upper()} {url[:60]} -> {status}: {response.text[:200]}")
        elif status not in operation["responses"]:
            failures.append(f"{method.upper()} {url[:60]} -> undeclared {status}")
        elif response.status_code >= 400 and response.headers["content-type"] != "application/problem+json":
            failures.append(f"{method.upper()} {url[:60]} -> {status} as {response.headers['content-type']}")
    assert count >= 70
    assert failures == []
