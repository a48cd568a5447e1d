"""Every documented /api/v1 operation is answered by its own route, whatever order the routers are mounted in.

``api/app.py`` mounts the most requested routers first (a request is matched against the routes in
order); that is only safe while no route's pattern also matches another's path. Each operation the
OpenAPI document lists is requested with sample path values; the mounting dependency every
/api/v1 route shares records which route the request reached, then stops it before the endpoint runs
(no kubectl, no file read).
"""

from __future__ import annotations

import re

from fastapi import HTTPException, Request
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.api.query_params import reject_unknown_query

SAMPLES = {"int": "7", "float": "7.5", "path": "some/where", "uuid": "00000000-0000-0000-0000-000000000000"}


def concrete(path: str) -> str:
    """The path with each ``{param}`` (or ``{param:convertor}``) replaced by a value it accepts."""
    return re.sub(r"{(\w+)(?::(\w+))?}", lambda m: SAMPLES.get(m.group(2) or "", f"sample-{m.group(1)}"), path)


def test_every_documented_operation_resolves_to_its_own_route():
    app = create_app()
    reached: list[tuple[str, frozenset[str]]] = []

    async def record(request: Request) -> None:
        route = request.scope["route"]
        full = "/api/v1" + route.path  # included routers' routes are declared without the prefix
        reached.append((full, frozenset(route.methods)))
        raise HTTPException(status_code=418, detail="stopped before the endpoint")

    app.dependency_overrides[reject_unknown_query] = record
    client = TestClient(app)
    operations = [(path, method.upper()) for path, item in client.get("/openapi.json").json()["paths"].items()
                  for method in item if path.startswith("/api/v1/")]
    assert ("/api/v1/clusters/overview", "GET") in operations and ("/api/v1/hardware/{key}", "GET") in operations
    wrong = []
    for path, method in operations:
        reached.clear()
        response = client.request(method, concrete(path))
        if response.status_code != 418 or len(reached) != 1 or reached[0][0] != path or method not in reached[0][1]:
            wrong.append((method, path, response.status_code, reached[:]))
    assert wrong == []


def test_the_sample_paths_fill_every_parameter():
    assert concrete("/api/v1/clusters/{name}/overview") == "/api/v1/clusters/sample-name/overview"
    assert concrete("/x/{n:int}/{rest:path}") == "/x/7/some/where"
