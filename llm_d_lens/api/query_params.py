"""A query parameter a route does not take is a 400, never silently ignored.

FastAPI drops unknown query parameters without a word, so ``?context=prod`` on a route that has no
``context`` answered 200 with the server's own cluster: the caller believed it read ``prod``. Every
``/api/v1`` route is mounted with :func:`reject_unknown_query`, which compares the request's
parameters with the ones the route (and its dependencies) declare.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
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
        # a route that reads a parameter itself (see query_flag) declares it in openapi_extra
        names.update(p["name"] for p in (route.openapi_extra or {}).get("parameters", []) if p.get("in") == "query")
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


def flag_parameter(name: str, default: bool, description: str) -> dict[str, Any]:
    """The OpenAPI parameter FastAPI writes for ``name: bool = Query(default, description=...)``."""
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": "boolean", "description": description, "default": default, "title": name.title()}}


_BOOL: Any = None
#: what a client sends nearly always; anything else goes through pydantic, as FastAPI would send it
_PLAIN = {"true": True, "false": False}


def query_flag(request: Request, name: str, default: bool) -> bool:
    """A boolean query parameter read as FastAPI reads ``name: bool = Query(default)``: same values, same 400.

    Letting FastAPI solve the parameter cost a cached overview more than everything else it does;
    the last value of a repeated name wins, as there. Declare it with :func:`flag_parameter` in
    the route's ``openapi_extra`` so the document and :func:`reject_unknown_query` know it.
    """
    global _BOOL
    raw = request.query_params.get(name)
    if raw is None:
        return default
    plain = _PLAIN.get(raw)
    if plain is not None:
        return plain
    from pydantic import TypeAdapter, ValidationError

    if _BOOL is None:
        _BOOL = TypeAdapter(bool)
    try:
        return bool(_BOOL.validate_python(raw))
    except ValidationError as exc:
        raise RequestValidationError([{**error, "loc": ("query", name)} for error in exc.errors()]) from None
