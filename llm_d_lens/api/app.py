"""The FastAPI application: every domain's router under ``/api/v1``, errors as problem+json.

Domains own their routes (``llm_d_lens/<domain>/api.py`` exposing ``router``); this module only
mounts them and renders :class:`LensError` once, as RFC 9457 ``application/problem+json``.
"""

from __future__ import annotations

import importlib

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from llm_d_lens import __version__
from llm_d_lens.errors import LensError

PROBLEM_JSON = "application/problem+json"

#: modules exposing an ``APIRouter`` named ``router``, mounted under /api/v1
ROUTERS: tuple[str, ...] = (
    "llm_d_lens.hardware.api",
    "llm_d_lens.evaluate.api",
    "llm_d_lens.monitoring.gpu_driver.api",
    "llm_d_lens.deploy.api",
    "llm_d_lens.monitoring.api",
    "llm_d_lens.cluster.api",
)


def problem(status: int, code: str, detail: str, **extra: object) -> JSONResponse:
    body = {"type": f"urn:llm-d-lens:error:{code}", "title": code, "status": status, "detail": detail, "code": code, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def create_app() -> FastAPI:
    app = FastAPI(title="Lens", version=__version__, description="The hardware layer for llm-d.")

    @app.exception_handler(LensError)
    async def lens_error(_: Request, exc: LensError) -> JSONResponse:
        return JSONResponse(exc.to_problem(), status_code=exc.http_status, media_type=PROBLEM_JSON)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        return problem(422, "REQUEST_INVALID", "; ".join(f"{e['path']}: {e['message']}" for e in errors), errors=errors)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    for module in ROUTERS:
        app.include_router(importlib.import_module(module).router, prefix="/api/v1")
    return app
