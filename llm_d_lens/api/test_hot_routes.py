"""Hot routes answer exactly what they answer when mounted like every other route.

``api/hot_routes.py`` mounts the most requested routes flat, calling their endpoints without
FastAPI's dependency solving. Every request below goes to two apps: the real one, and one whose
hot routers are included the ordinary way (with the shared unknown-parameter dependency); status,
headers and bytes must be the same, for answers, validation errors, unknown parameters, ETags and
304s, and ``dependency_overrides`` must be honoured by both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.routing import APIRouter
from fastapi.testclient import TestClient

from llm_d_lens.api import app as app_module
from llm_d_lens.api.hot_routes import RequestOnlyRoute, mount_hot
from llm_d_lens.api.query_params import reject_unknown_query
from llm_d_lens.cluster import api as cluster_api
from llm_d_lens.cluster.source import ClusterSource

REQUESTS = [
    "/api/v1/clusters/overview",
    "/api/v1/clusters/overview?nodes=false",
    "/api/v1/clusters/overview?nodes=0",
    "/api/v1/clusters/overview?nodes=maybe",
    "/api/v1/clusters/overview?nodes=true&nodes=false",
    "/api/v1/clusters/overview?nodes=false&context=prod",
    "/api/v1/clusters/overview?other=1",
    "/api/v1/hardware/capabilities",
    "/api/v1/hardware/capabilities?nodes=false",
]


def ordinary_mount(app: FastAPI, router: APIRouter, prefix: str) -> None:
    app.include_router(router, prefix=prefix, dependencies=[Depends(reject_unknown_query)])


@pytest.fixture()
def apps(monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, TestClient]:
    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_CLUSTERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    hot = app_module.create_app()
    with monkeypatch.context() as patch:
        patch.setattr(app_module, "mount_hot", ordinary_mount)
        ordinary = app_module.create_app()
    return TestClient(hot), TestClient(ordinary)


def answer(client: TestClient, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    response = client.get(path, headers=headers or {})
    kept = {k: v for k, v in response.headers.items() if k.lower() != "date"}
    return response.status_code, kept, response.content


def test_the_hot_routes_are_mounted_flat(apps: tuple[TestClient, TestClient]) -> None:
    hot, ordinary = apps
    flat = {route.path for route in hot.app.routes if isinstance(route, RequestOnlyRoute)}  # type: ignore[attr-defined]
    assert flat == {"/api/v1/clusters/overview", "/api/v1/hardware/capabilities"}
    assert not any(isinstance(route, RequestOnlyRoute) for route in ordinary.app.routes)  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", REQUESTS)
def test_every_answer_is_the_ordinary_routes(apps: tuple[TestClient, TestClient], path: str) -> None:
    hot, ordinary = apps
    mine, theirs = answer(hot, path), answer(ordinary, path)
    assert mine == theirs
    assert mine[0] in (200, 400, 422)


@pytest.mark.parametrize("path", ["/api/v1/clusters/overview?nodes=false", "/api/v1/hardware/capabilities"])
def test_conditional_requests_answer_alike(apps: tuple[TestClient, TestClient], path: str) -> None:
    hot, ordinary = apps
    tag = answer(hot, path)[1]["etag"]
    assert answer(hot, path, {"If-None-Match": tag}) == answer(ordinary, path, {"If-None-Match": tag})
    assert answer(hot, path, {"If-None-Match": tag})[0] == 304
    assert answer(hot, path, {"If-None-Match": '"stale"'}) == answer(ordinary, path, {"If-None-Match": '"stale"'})


def test_wrong_methods_answer_alike(apps: tuple[TestClient, TestClient]) -> None:
    hot, ordinary = apps
    for path in ("/api/v1/clusters/overview", "/api/v1/hardware/capabilities"):
        mine, theirs = hot.post(path), ordinary.post(path)
        assert (mine.status_code, mine.content) == (theirs.status_code, theirs.content)
        assert mine.status_code == 405


def test_dependency_overrides_reach_a_hot_route(apps: tuple[TestClient, TestClient], tmp_path: Path) -> None:
    from llm_d_lens.cluster.cache import forget

    snapshot = tmp_path / "cluster.json"
    snapshot.write_text('{"kind": "List", "items": []}')
    forget()
    for client in apps:
        client.app.dependency_overrides[cluster_api.cluster_source] = lambda: ClusterSource(snapshot=snapshot)  # type: ignore[attr-defined]
    mine, theirs = answer(apps[0], "/api/v1/clusters/overview"), answer(apps[1], "/api/v1/clusters/overview")
    assert mine == theirs
    assert b'"kind":"snapshot"' in mine[2].replace(b" ", b"") and str(snapshot).encode() in mine[2]


async def takes_a_parameter(request: Request, limit: int = Query(3)) -> Response:
    return Response(str(limit))


def needs(request: Request) -> int:
    return 1


async def depends(request: Request, found: int = Depends(needs)) -> Response:
    return Response(str(found))


def sync(request: Request) -> Response:
    return Response("")


@pytest.mark.parametrize("endpoint, said", [(takes_a_parameter, "limit"), (depends, "dependencies"), (sync, "sync")])
def test_a_route_the_hot_path_would_break_is_refused(endpoint: Any, said: str) -> None:
    router = APIRouter()
    router.add_api_route("/x", endpoint)
    with pytest.raises(TypeError, match=said) as refused:
        mount_hot(FastAPI(), router, "/api/v1")
    assert endpoint.__qualname__ in str(refused.value)


async def plain(request: Request) -> Response:
    return Response("")


def test_a_routers_own_dependency_is_refused_not_dropped() -> None:
    router = APIRouter(dependencies=[Depends(needs)])
    router.add_api_route("/x", plain)
    with pytest.raises(TypeError, match="dependencies"):
        mount_hot(FastAPI(), router, "/api/v1")
