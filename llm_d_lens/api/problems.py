"""The one shape of every non-2xx answer: an RFC 9457 ``application/problem+json`` document."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from llm_d_lens.errors import MAX_MESSAGE, MAX_REPORTED, echo, limited

PROBLEM_JSON = "application/problem+json"


def problem(status: int, code: str, detail: str, **extra: object) -> JSONResponse:
    """A problem document; ``detail`` and ``extra`` are bounded (see :func:`llm_d_lens.errors.echo`)."""
    body = {"type": f"urn:llm-d-lens:error:{code}", "title": code, "status": status, "detail": echo(detail, MAX_MESSAGE),
            "code": code, **{key: echo(value) for key, value in extra.items()}}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def invalid_request(errors: list[dict[str, str]]) -> JSONResponse:
    """422 REQUEST_INVALID listing each ``{"path", "message"}``, the first :data:`MAX_REPORTED` of them."""
    shown = [{"path": echo(e["path"]), "message": echo(e["message"])} for e in errors[:MAX_REPORTED]]
    detail = limited([f"{e['path']}: {e['message']}" for e in shown] + [""] * (len(errors) - len(shown)))
    return problem(422, "REQUEST_INVALID", detail, errors=shown, **({"errors_total": len(errors)} if len(errors) > len(shown) else {}))
