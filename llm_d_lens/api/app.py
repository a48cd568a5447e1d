"""The FastAPI application: every domain's router under ``/api/v1``, errors as problem+json.

Domains own their routes (``llm_d_lens/<domain>/api.py`` exposing ``router``); this module only
mounts them and renders :class:`LensError` once, as RFC 9457 ``application/problem+json``.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.middleware.gzip import GZipMiddleware
from starlette.exceptions import HTTPException as StarletteHTTPException

from llm_d_lens import __version__
from llm_d_lens.api.body_limit import BodyLimit, max_body_bytes
from llm_d_lens.api.json_body import RepeatedKeyGuard
from llm_d_lens.api.openapi_problems import declare_problems
from llm_d_lens.api.problems import PROBLEM_JSON, invalid_request, problem
from llm_d_lens.api.query_params import reject_unknown_query
from llm_d_lens.errors import LensError

log = logging.getLogger("llm_d_lens.api")
#: smallest answer worth compressing (below it, gzip's header and the CPU cost more than they save)
GZIP_MINIMUM = 500

#: modules exposing an ``APIRouter`` named ``router``, mounted under /api/v1. A request is matched
#: against the routes in this order, so the most requested (cluster overview, hardware capabilities)
#: come first; test_routes.py checks that no route shadows another, whatever the order.
ROUTERS: tuple[str, ...] = (
    "llm_d_lens.serving.api",
    "llm_d_lens.hardware.api",
    "llm_d_lens.evaluate.api",
    "llm_d_lens.monitoring.gpu_driver.api",
    "llm_d_lens.deploy.api",
    "llm_d_lens.monitoring.api",
    "llm_d_lens.serving.lifespan",
    "llm_d_lens.incluster.api",
    "llm_d_lens.planning.api",
)


def create_app() -> FastAPI:
    from llm_d_lens.console.front import SettledPages
    from llm_d_lens.console.security import SecurityHeaders

    # /docs and /redoc are served below from local files: FastAPI's own pages load their assets from a CDN
    app = FastAPI(title="Lens", version=__version__, description="The hardware layer for llm-d.",
                  docs_url=None, redoc_url=None)
    app.add_middleware(RepeatedKeyGuard)
    app.add_middleware(BodyLimit, limit=max_body_bytes())  # outside the guard: nothing reads a body over the limit
    # answers over GZIP_MINIMUM bytes are gzipped for clients that take it (level 6: most of level 9's saving
    # at a fraction of its time); a console page that is already gzipped (console/pages.py) passes through,
    # a 304 has no body to compress, and the ETag stays (it names the content, not its encoding)
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM, compresslevel=6)
    # a settled console page (kept bytes, already gzipped) is answered here, before routing (console/front.py)
    app.add_middleware(SettledPages)
    app.add_middleware(SecurityHeaders)  # every answer carries the headers, compressed or not
    from llm_d_lens.api.hosts import TrustedHosts, from_env

    app.add_middleware(TrustedHosts, hosts=from_env())  # outermost: a foreign Host (DNS rebinding) reaches nothing

    @app.exception_handler(LensError)
    async def lens_error(_: Request, exc: LensError) -> JSONResponse:
        # an error class may carry response headers (a 401's WWW-Authenticate challenge)
        headers = getattr(exc, "headers", None)
        return JSONResponse(exc.to_problem(), status_code=exc.http_status, media_type=PROBLEM_JSON, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return invalid_request([{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()])

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # unknown routes (404) and wrong methods (405) answer in the same shape as every other error
        codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
        code = codes.get(exc.status_code, f"HTTP_{exc.status_code}")
        response = problem(exc.status_code, code, str(exc.detail))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # a bug must not leak a stack trace to a client: log it here, answer with a problem document
        log.exception("unexpected error while serving %s %s", request.method, request.url.path)
        return problem(500, "INTERNAL_ERROR", f"Lens failed unexpectedly ({type(exc).__name__}); the server log has the details")

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get("/readyz", tags=["health"])
    def readyz() -> Any:
        """503 problem+json listing every skipped plugin or conflict; liveness stays on /healthz."""
        from llm_d_lens.serving.readiness import describe, problems

        found = problems()
        if found:
            return problem(503, "NOT_READY", describe(found), problems=found)
        return {"status": "ready", "version": __version__}

    # the console first: its pages are what a browser asks for most, and FastAPI tries routes in order (an
    # API request passes the console's few routes at the cost of a failed match each; none shadows another)
    _mount_console(app)
    for module in ROUTERS:
        domain = importlib.import_module(module)
        # a query parameter a route does not declare is a 400 (see api/query_params.py)
        app.include_router(domain.router, prefix="/api/v1", dependencies=[Depends(reject_unknown_query)])
    declare_problems(app)
    return app


def _mount_console(app: FastAPI) -> None:
    """The web console at ``/``, its assets, and the API docs, every file from the installed packages."""
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    from llm_d_lens.console import actions, data, router as console

    # a bad LENS_CONSOLE_REFRESH or LENS_CONSOLE_ACTIONS stops the server at start with its coded error
    # (SETTING_INVALID naming the variable), as a bad body limit does, rather than failing every page
    data.refresh_seconds()
    actions.enabled()
    app.mount(console.STATIC_URL, StaticFiles(directory=console.static_directory()), name="console-static")
    app.mount(console.VENDOR_URL, StaticFiles(directory=console.vendor_directory()), name="console-vendor")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return console.render("swagger.html", vendor=console.VENDOR_URL, openapi_url=app.openapi_url)

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return console.render("redoc.html", vendor=console.VENDOR_URL, openapi_url=app.openapi_url)

    app.include_router(console.router)
