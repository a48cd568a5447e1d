"""A query parameter a route does not take is a 400, never silently ignored.

FastAPI drops unknown query parameters without a word, so ``?context=prod`` on a route that has no
``context`` answered 200 with the server's own cluster: the caller believed it read ``prod``. Every
``/api/v1`` route is mounted with :func:`reject_unknown_query`, which compares the request's
parameters with the ones the route (and its dependencies) declare.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.routing import APIRoute

from llm_d_lens.errors import LensError

_ALLOWED: dict[int, frozenset[str]] = {}


class QueryParameterUnknown(LensError):
    code = "QUERY_PARAMETER_UNKNOWN"
    http_status = 400


def allowed_parameters(route: APIRoute) -> frozenset[str]:
    """The query parameter names the route declares, its dependencies' included (computed once per route)."""
    key = id(route)
    if key not in _ALLOWED:
        names: set[str] = set()
        pending = [route.dependant]
        while pending:  # the route's own parameters, then each dependency's, however deep
            dependant = pending.pop()
            names.update(param.alias for param in dependant.query_params)
            pending.extend(dependant.dependencies)
        _ALLOWED[key] = frozenset(names)
    return _ALLOWED[key]


async def reject_unknown_query(request: Request) -> None:
    if not request.scope.get("query_string"):
        return  # nothing to check: the common case, answered without parsing anything
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    allowed = allowed_parameters(route)
    unknown = sorted(set(request.query_params.keys()) - allowed)
    if unknown:
        takes = f"it takes {', '.join(sorted(allowed))}" if allowed else "it takes none"
        raise QueryParameterUnknown(
            f"{request.url.path}: unknown query parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(name) for name in unknown)}; {takes}",
            details={"unknown": unknown, "allowed": sorted(allowed)})
