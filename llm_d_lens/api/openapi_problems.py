"""Declare, in the OpenAPI document, the problem+json answers the API really gives.

FastAPI documents only 200 and its own 422 schema; the API also answers 400, 401, 403, 404,
409, 413, 502 and 503 (every :class:`~llm_d_lens.errors.LensError` carries its status), always
as ``application/problem+json``. A client generated from the document, or a schema-driven test,
would otherwise treat each of those as a contract violation. Every operation declares them all,
with one shared ``Problem`` schema; the 422 keeps FastAPI's meaning (a request that does not
validate) in the shape Lens gives it.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from llm_d_lens.api.problems import PROBLEM_JSON

#: status -> what it means for any route
STATUSES = {
    "400": "The request cannot be used (a bad value the route checks itself).",
    "401": "Authentication is required (a mutating route with a token configured).",
    "403": "The caller may not do this (mutations disabled on this server).",
    "404": "No such hardware, guide, profile or other named thing.",
    "409": "The request conflicts with the current state (a file or release exists).",
    "413": "The request body is over the server's limit (LENS_API_MAX_BODY_BYTES).",
    "422": "The request does not validate, or names something that does not fit.",
    "502": "A tool or service Lens relies on (kubectl, helm, Prometheus) failed.",
    "503": "The server is not configured or ready for this (a missing setting, a skipped plugin).",
}

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "An RFC 9457 problem document.",
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "details": {"type": "object"},
        "errors": {"type": "array", "items": {"type": "object", "properties": {
            "path": {"type": "string"}, "message": {"type": "string"}}}},
        "errors_total": {"type": "integer"},
    },
    "additionalProperties": True,
}


def declare_problems(app: FastAPI) -> None:
    """Wrap ``app.openapi`` so the generated document declares every problem answer of every operation."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        document.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
        reference = {"$ref": "#/components/schemas/Problem"}
        for operations in document.get("paths", {}).values():
            for operation in operations.values():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                responses = operation["responses"]
                for status, meaning in STATUSES.items():
                    responses[status] = {"description": meaning, "content": {PROBLEM_JSON: {"schema": reference}}}
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
