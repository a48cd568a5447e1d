"""The one shape of every non-2xx answer: an RFC 9457 ``application/problem+json`` document."""

from __future__ import annotations

from fastapi.responses import JSONResponse

PROBLEM_JSON = "application/problem+json"


def problem(status: int, code: str, detail: str, **extra: object) -> JSONResponse:
    body = {"type": f"urn:llm-d-lens:error:{code}", "title": code, "status": status, "detail": detail, "code": code, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def invalid_request(errors: list[dict[str, str]]) -> JSONResponse:
    """422 REQUEST_INVALID listing each ``{"path", "message"}``."""
    return problem(422, "REQUEST_INVALID", "; ".join(f"{e['path']}: {e['message']}" for e in errors), errors=errors)
