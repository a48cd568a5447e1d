"""The most requested routes, mounted flat on the app and answered without FastAPI's per-request machinery.

The console polls the cluster overview and the hardware capabilities; once cached, either answer
is bytes already, so what a request costs is FastAPI's: an included router is matched twice (the
router, then its route), the endpoint's dependencies are solved even when there are none, and two
exit stacks are opened for dependencies with ``yield``. A hot route's endpoint takes only the
:class:`Request` and reads what it needs itself (see ``query_params.query_flag``), so none of that
is needed. A domain lists such routers in ``HOT_ROUTERS``; they stay ``APIRoute``s (the OpenAPI
document, ``app.routes`` and ``dependency_overrides`` read through ``inline_dependency`` are as
before) whose ASGI app calls the endpoint directly, after the same unknown-parameter check
(same 400) every other ``/api/v1`` route gets as a dependency.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute, APIRouter
from starlette.routing import request_response

from llm_d_lens.api import query_params


class RequestOnlyRoute(APIRoute):
    """An ``APIRoute`` whose endpoint is ``async def f(request: Request) -> Response``, called directly.

    Refuses, when the route is built, an endpoint that declares anything FastAPI would have to solve
    (a parameter, a dependency, a body): such a route would silently lose it here.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        solved = self.dependant
        extra = [p.name for p in (*solved.path_params, *solved.query_params, *solved.header_params,
                                  *solved.cookie_params, *solved.body_params)]
        declared = ", ".join(extra) or ("dependencies" if solved.dependencies else "")
        if declared or not inspect.iscoroutinefunction(endpoint):
            raise TypeError(f"{endpoint.__qualname__}: a hot route is an async endpoint taking only the request; "
                            f"this one {'declares ' + declared if declared else 'is sync'}")
        self.app = request_response(self._answer(endpoint))

    def _answer(self, endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            await query_params.reject_unknown_query(request)
            return await endpoint(request)
        return answer


def mount_hot(app: FastAPI, router: APIRouter, prefix: str) -> None:
    """Each of ``router``'s routes as a :class:`RequestOnlyRoute` directly on ``app``, under ``prefix``."""
    for route in router.routes:
        if not isinstance(route, APIRoute):
            raise TypeError(f"{route!r}: a hot router holds API routes only")
        app.router.add_api_route(
            prefix + route.path, route.endpoint, methods=sorted(route.methods), name=route.name,
            response_model=route.response_model, responses=route.responses, tags=route.tags,
            summary=route.summary, description=route.description, openapi_extra=route.openapi_extra,
            operation_id=route.operation_id, include_in_schema=route.include_in_schema,
            response_description=route.response_description, deprecated=route.deprecated,
            status_code=route.status_code, response_class=route.response_class,
            dependencies=route.dependencies,  # the router's too: a hot route refuses them, never drops them
            route_class_override=RequestOnlyRoute)
