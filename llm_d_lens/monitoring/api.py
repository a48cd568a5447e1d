"""``/api/v1/telemetry``: devices and pods in common units, and the exporters that publish them.

The Prometheus URL and the cluster objects come from the server's environment (see
:mod:`llm_d_lens.monitoring.settings`), never from a request, so a caller cannot point the server
at an address of its choosing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Header, Query
from pydantic import BaseModel, ConfigDict, Field

from llm_d_lens.monitoring.gpu_driver.api import context_token, require_token
from llm_d_lens.monitoring.gpu_driver.views import choose_view, named_view_factory, view_factory

from llm_d_lens.monitoring.service import (
    devices_document,
    pods_document,
    read_series_for,
    server_context,
)

router = APIRouter(tags=["telemetry"])


#: the ``cluster`` query parameter of the routes that join devices with a cluster's objects
CLUSTER_QUERY = Query(default=None, description="A configured cluster (GET /api/v1/clusters) whose objects the joins use "
                                                "(default: LENS_CLUSTER_OBJECTS).")


#: Unix seconds of 9999-12-31T23:59:59Z; Prometheus clamps later (and pre-1970) times and finds nothing
LATEST_TIME = 253402300799.0


@router.get("/telemetry/devices")
async def devices(
    hardware: list[str] = Query(default=[], description="Hardware ids or aliases (default: all that declare device sources)."),
    node: str | None = Query(default=None, description="Only this node's devices."),
    mode: str | None = Query(default=None, description="Join every node with this access mode."),
    at: float | None = Query(default=None, allow_inf_nan=False, ge=0, le=LATEST_TIME,
                             description="Evaluation time, Unix seconds (default: now)."),
    cluster: str | None = CLUSTER_QUERY,
) -> dict[str, Any]:
    """Every device of the selected hardware with its common quantities and attribution."""
    return await devices_document(hardware, node=node, mode=mode, at=at, cluster=cluster)


#: the longest range a chart may ask for (a week): longer ranges are a Grafana's job
MAX_RANGE_SECONDS = 7 * 24 * 3600


@router.get("/telemetry/series")
async def series(
    hardware: list[str] = Query(default=[], description="Hardware ids or aliases (default: all that declare device sources)."),
    quantity: list[str] = Query(default=[], description="Quantities (utilization, memory_used, power, temperature, ...; default: all)."),
    node: str | None = Query(default=None, description="Only this node's devices."),
    start: float | None = Query(default=None, allow_inf_nan=False, ge=0, le=LATEST_TIME,
                                description="Range start, Unix seconds (default: an hour before end)."),
    end: float | None = Query(default=None, allow_inf_nan=False, ge=0, le=LATEST_TIME,
                              description="Range end, Unix seconds (default: now)."),
    step: float | None = Query(default=None, allow_inf_nan=False, gt=0, le=MAX_RANGE_SECONDS,
                               description="Seconds between points (default: the range in about 60 points)."),
) -> dict[str, Any]:
    """Every selected device's quantities over a time range, in common units: the data of a chart."""
    from llm_d_lens.monitoring.accelerator.service import select

    selection = select(hardware)
    window = _window(start, end)
    _check_quantities(quantity)
    settings, _ = await server_context()
    return (await read_series_for(settings, selection, window, step=step, quantities=quantity, node=node)).to_dict()


def _window(start: float | None, end: float | None) -> tuple[float, float]:
    import time

    from llm_d_lens.monitoring.errors import RangeInvalid

    end = time.time() if end is None else end
    start = end - 3600 if start is None else start
    if start >= end:
        raise RangeInvalid(f"start {start:g} must be before end {end:g}", details={"start": start, "end": end})
    if end - start > MAX_RANGE_SECONDS:
        raise RangeInvalid(f"the range {end - start:g} s is longer than a week ({MAX_RANGE_SECONDS} s)",
                           details={"start": start, "end": end})
    return start, end


def _check_quantities(quantities: list[str]) -> None:
    from llm_d_lens.monitoring.accelerator.plan import QUANTITIES
    from llm_d_lens.monitoring.errors import RangeInvalid

    known = [q.key for q in QUANTITIES] + [q.field for q in QUANTITIES]
    unknown = [q for q in quantities if q not in known]
    if unknown:
        raise RangeInvalid(f"unknown quantity {unknown[0]!r}; known: {', '.join(q.key for q in QUANTITIES)}",
                           details={"quantity": unknown[0], "known": [q.key for q in QUANTITIES]})


@router.get("/telemetry/pods")
async def pods(
    hardware: list[str] = Query(default=[], description="Hardware ids or aliases (default: all)."),
    namespace: str | None = Query(default=None, description="Only pods in this namespace."),
    pod: str | None = Query(default=None, description="Only this pod."),
    mode: str | None = Query(default=None, description="Join every node with this access mode."),
    at: float | None = Query(default=None, allow_inf_nan=False, ge=0, le=LATEST_TIME,
                             description="Evaluation time, Unix seconds (default: now)."),
    cluster: str | None = CLUSTER_QUERY,
) -> dict[str, Any]:
    """Serving pods' KV-cache and request figures, with the figures of the devices they hold."""
    return await pods_document(hardware, namespace=namespace, pod=pod, mode=mode, at=at, cluster=cluster)


class ExporterInstallRequest(BaseModel):
    """One hardware's exporter chart; types are exact (``"dry_run": "false"`` is refused, not read as an install)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    hardware: str
    options: dict[str, Any] = Field(default_factory=dict)
    dry_run: bool = False
    cluster: str | None = None
    context: str | None = None


@router.get("/telemetry/exporters")
async def exporters(
    hardware: list[str] = Query(default=[], description="Hardware ids or aliases (default: every one that declares an exporter)."),
    cluster: str | None = Query(default=None, description="A configured cluster (GET /api/v1/clusters); no token needed."),
    context: str | None = Query(default=None, description="Another context of the server's kubeconfig; needs the token."),
    authorization: str | None = Header(default=None),
    views: Callable[[str | None], Any] = Depends(view_factory),
    named: Callable[[Any], Any] = Depends(named_view_factory),
) -> dict[str, Any]:
    """Per hardware: the nodes that have it, whether its exporter runs on each, and whether Prometheus scrapes it
    (``scrape`` is ``unknown`` when the server has no ``LENS_PROMETHEUS_URL``)."""
    from llm_d_lens.monitoring.accelerator.exporters import exporters_status

    if context is not None:
        context_token(context, authorization)
    view = choose_view(cluster, context, views, named)
    url, timeout = _prometheus()
    if url is None:
        found = await exporters_status(_registry(), hardware, view, None)
    else:
        from llm_d_lens.prometheus.client import PrometheusClient

        async with PrometheusClient(url, timeout=timeout) as client:
            found = await exporters_status(_registry(), hardware, view, client)
    return {"exporters": [s.to_dict() for s in found], "prometheus": url is not None}


@router.post("/telemetry/exporters/install", dependencies=[Depends(require_token)])
async def exporters_install(
    request: ExporterInstallRequest, views: Callable[[str | None], Any] = Depends(view_factory),
    named: Callable[[Any], Any] = Depends(named_view_factory),
) -> dict[str, Any]:
    """The hardware's exporter chart, pinned and idempotent, exactly like a driver (``lens telemetry exporters install``)."""
    from llm_d_lens.monitoring.accelerator.exporters import install_exporter

    view = choose_view(request.cluster, request.context, views, named)
    result = await install_exporter(_registry(), request.hardware, view, dry_run=request.dry_run, options=request.options)
    return {"results": [result.to_dict()]}


def _registry() -> Any:
    from llm_d_lens.hardware.registry import get_registry

    return get_registry()


def _prometheus() -> tuple[str | None, float]:
    """The server's Prometheus (None: scrapes are not checked); a bad setting is the server's 503."""
    from llm_d_lens.errors import LensError, ServerNotConfigured
    from llm_d_lens.monitoring.settings import TelemetrySettings

    try:
        settings = TelemetrySettings.from_env()
    except LensError as exc:
        raise ServerNotConfigured(f"the telemetry API is misconfigured on the server: {exc.message}") from None
    return settings.prometheus_url or None, settings.timeout
