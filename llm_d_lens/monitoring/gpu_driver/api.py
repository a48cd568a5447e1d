"""``/api/v1/drivers`` and ``/api/v1/preflight``.

Status is read-only and always on. Install and preflight change the cluster (preflight applies NFD
rules), so they are off unless an API token is configured (``LENS_API_TOKEN``), and then every
call must carry ``Authorization: Bearer <token>``.

The cluster is the server's: ``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, as for the cluster API,
or with ``LENS_CLUSTERS`` its first configured cluster. A request may name any configured cluster
(``cluster``) without the token; it may pick another context of the server's kubeconfig
(``context``) only with the token, so an anonymous status call can't read every cluster the server
can reach. Providers receive the cluster's name as ``cluster_id``.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Header, Query
from pydantic import BaseModel, ConfigDict, Field

from llm_d_lens import settings
from llm_d_lens.errors import LensError
from llm_d_lens.limits import MAX_WAIT_SECONDS
from llm_d_lens.monitoring.gpu_driver.clock import Clock, SystemClock
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.monitoring.gpu_driver.views import (
    choose_view,
    named_view_factory,
    view_factory,
)

TOKEN_ENV = "LENS_API_TOKEN"

router = APIRouter(tags=["drivers"])


class MutationsDisabled(LensError):
    code = "MUTATIONS_DISABLED"
    http_status = 403


class ContextNeedsToken(LensError):
    code = "CONTEXT_NEEDS_TOKEN"
    http_status = 403


class Unauthorized(LensError):
    code = "UNAUTHORIZED"
    http_status = 401
    #: RFC 9110: a 401 says which scheme would be accepted
    headers = {"WWW-Authenticate": 'Bearer realm="lens"'}


def require_token(authorization: str | None = Header(default=None)) -> None:
    """Mutating calls need a configured token, presented as a Bearer token; compared in constant time."""
    # surrounding whitespace is no part of a token (a Secret made --from-file keeps the file's newline)
    token = settings.text(TOKEN_ENV)
    if token is None:
        raise MutationsDisabled(f"this endpoint changes the cluster and is off: set {TOKEN_ENV} on the server to enable it")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Unauthorized("missing or wrong 'Authorization: Bearer <token>'")


def context_token(context: str, authorization: str | None) -> None:
    """A read of another context of the server's kubeconfig needs the token, so an anonymous call reads only the server's own."""
    try:
        require_token(authorization)
    except (MutationsDisabled, Unauthorized):
        raise ContextNeedsToken(
            f"context {context!r}: choosing a cluster needs the API token ({TOKEN_ENV} on the server and "
            "'Authorization: Bearer <token>'); without it the server reads its own (LENS_KUBE_CONTEXT)"
        ) from None


def clock() -> Clock:
    return SystemClock()


def _registry() -> Any:
    from llm_d_lens.hardware.registry import get_registry

    return get_registry()


class InstallRequest(BaseModel):
    """Either one hardware (with mode/options), or claims exactly as in a claims file.

    Types are exact: lax coercion would read ``"dry_run": "false"`` as a real install.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    hardware: str | None = None
    mode: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    classes: list[dict[str, Any]] = Field(default_factory=list)
    external: list[str] = Field(default_factory=list)
    dry_run: bool = False
    cluster: str | None = None
    context: str | None = None


class PreflightRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    hardware: list[str] = Field(min_length=1)
    timeout_seconds: float | None = Field(default=None, ge=0, le=MAX_WAIT_SECONDS)
    #: the access mode whose min_kubernetes_version is checked; None: the one install picks
    mode: str | None = None
    cluster: str | None = None
    context: str | None = None


@router.get("/drivers/status")
async def drivers_status(
    hardware: list[str] = Query(default=[]),
    mode: str | None = None,
    cluster: str | None = Query(default=None, description="A configured cluster (GET /api/v1/clusters); no token needed."),
    context: str | None = Query(default=None, description="Another context of the server's kubeconfig; needs the token."),
    authorization: str | None = Header(default=None),
    views: Callable[[str | None], ClusterView] = Depends(view_factory),
    named: Callable[[Any], ClusterView] = Depends(named_view_factory),
) -> dict[str, Any]:
    from llm_d_lens.monitoring.gpu_driver import service

    if context is not None:
        context_token(context, authorization)
    found = await service.status(_registry(), hardware, mode, choose_view(cluster, context, views, named))
    return {"modes": [s.to_dict() for s in found]}


@router.post("/drivers/install", dependencies=[Depends(require_token)])
async def drivers_install(
    request: InstallRequest, views: Callable[[str | None], ClusterView] = Depends(view_factory),
    named: Callable[[Any], ClusterView] = Depends(named_view_factory),
) -> dict[str, Any]:
    from llm_d_lens.monitoring.gpu_driver import service
    from llm_d_lens.monitoring.gpu_driver.claims import parse_claims
    from llm_d_lens.monitoring.gpu_driver.errors import ClaimsInvalid

    view = choose_view(request.cluster, request.context, views, named)
    registry = _registry()
    if request.hardware is not None:
        if request.classes:
            raise ClaimsInvalid("give either hardware or classes, not both")
        result = await service.install_one(registry, request.hardware, request.mode, view, dry_run=request.dry_run,
                                           options=request.options)
        return {"results": [result.to_dict()]}
    if request.mode is not None or request.options:
        raise ClaimsInvalid("mode and options go with hardware; claims choose their modes")
    if not request.classes:
        raise ClaimsInvalid("nothing is claimed: give hardware (with mode and options), or classes with their claims")
    classes, external = parse_claims({"classes": request.classes, "external": request.external}, "request body")
    built = await service.plan(registry, classes, external, None if request.dry_run else view)
    results = await service.install_plan(registry, built, view, dry_run=request.dry_run)
    return {"plan": built.to_dict(), "results": [r.to_dict() for r in results]}


@router.post("/preflight", dependencies=[Depends(require_token)])
async def preflight(
    request: PreflightRequest,
    views: Callable[[str | None], ClusterView] = Depends(view_factory),
    named: Callable[[Any], ClusterView] = Depends(named_view_factory),
    wait: Clock = Depends(clock),
) -> dict[str, Any]:
    from llm_d_lens.monitoring.gpu_driver import service

    view = choose_view(request.cluster, request.context, views, named)
    reports = await service.preflight(_registry(), request.hardware, view, wait, request.timeout_seconds, request.mode)
    return {"reports": [r.to_dict() for r in reports]}
