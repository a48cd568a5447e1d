"""``/api/v1/telemetry``: devices and pods in common units.

The Prometheus URL and the cluster objects come from the server's environment (see
:mod:`llm_d_lens.monitoring.settings`), never from a request, so a caller cannot point the server
at an address of its choosing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Query

router = APIRouter(tags=["telemetry"])


#: the ``cluster`` query parameter of the routes that join devices with a cluster's objects
CLUSTER_QUERY = Query(default=None, description="A configured cluster (GET /api/v1/clusters) whose objects the joins use "
                                                "(default: LENS_CLUSTER_OBJECTS).")


async def _context(cluster_name: str | None = None) -> tuple[Any, Any]:
    """The server's Prometheus URL and cluster objects; anything wrong with them is a 503, never the caller's 4xx.

    With ``cluster_name`` the objects are that configured cluster's (an unknown name is a 404).
    """
    from llm_d_lens.monitoring.accelerator.k8s import load
    from llm_d_lens.monitoring.settings import KUBECTL, TelemetrySettings
    from llm_d_lens.prometheus.client import normalise_url

    from llm_d_lens.errors import LensError, ServerNotConfigured

    try:
        settings = TelemetrySettings.from_env()
    except LensError as exc:
        raise ServerNotConfigured(f"the telemetry API is misconfigured on the server: {exc.message}") from None
    if not settings.prometheus_url and not settings.demo:
        raise ServerNotConfigured(
            "the telemetry API has no Prometheus: start the server with LENS_PROMETHEUS_URL set "
            "(e.g. http://prometheus.monitoring:9090)"
        )
    try:
        if settings.prometheus_url:
            normalise_url(settings.prometheus_url)
    except LensError as exc:
        raise _misconfigured("LENS_PROMETHEUS_URL", exc) from None
    if cluster_name is not None:
        return settings, await asyncio.to_thread(named_cluster_objects, cluster_name)
    sources = list(settings.cluster_objects)
    try:
        cluster = await asyncio.to_thread(load, sources) if sources else None
    except LensError as exc:
        if sources == [KUBECTL]:
            raise  # kubectl's own failure (502/504) says what the cluster did
        raise _misconfigured("LENS_CLUSTER_OBJECTS", exc) from None
    return settings, cluster


def named_cluster_objects(name: str) -> Any:
    """A configured cluster's pods, nodes, claims and slices, read as the cluster API reads them, for the joins."""
    from llm_d_lens.cluster.served import kubectl_timeout, served_clusters
    from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects

    cluster = served_clusters().get(name)
    objects = cluster.source(kubectl_timeout()).load(named_cluster_runner(cluster))
    return ClusterObjects.from_documents([(f"cluster {name}", {"kind": "List", "items": list(objects.all_items())})])


def named_cluster_runner(cluster: Any) -> Any:
    """None: the cluster's source builds its CommandRunner; tests replace this with a FakeRunner."""
    return None


def _misconfigured(variable: str, exc: Any) -> Exception:
    from llm_d_lens.errors import ServerNotConfigured

    return ServerNotConfigured(f"the telemetry API is misconfigured on the server: {variable}: {exc.message}",
                               details={"cause": exc.code, **exc.details})


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
    from llm_d_lens.monitoring.accelerator.service import read_devices, select
    from llm_d_lens.prometheus.client import PrometheusClient

    selection = select(hardware)
    settings, objects = await _context(cluster)
    if settings.demo and not settings.prometheus_url:
        from llm_d_lens.monitoring.demo import demo_devices

        return demo_devices(selection, at=at, node=node, cluster=objects, mode=mode).to_dict()
    async with PrometheusClient(settings.require_url(), timeout=settings.timeout) as client:
        report = await read_devices(client, selection, at=at, node=node, cluster=objects, mode=mode)
    return report.to_dict()


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
    settings, _ = await _context()
    return (await read_series_for(settings, selection, window, step=step, quantities=quantity, node=node)).to_dict()


async def read_series_for(settings: Any, selection: Any, window: tuple[float, float], *, step: float | None,
                          quantities: list[str], node: str | None) -> Any:
    """The series report from the server's source: its Prometheus, or the demo history. Shared with the console."""
    from llm_d_lens.monitoring.accelerator.series import history_series, read_series
    from llm_d_lens.prometheus.client import PrometheusClient

    start, end = window
    if settings.demo and not settings.prometheus_url:
        from llm_d_lens.monitoring.demo import history

        return history_series(history(), selection, start=start, end=end, step=step, quantities=quantities, node=node)
    async with PrometheusClient(settings.require_url(), timeout=settings.timeout) as client:
        return await read_series(client, selection, start=start, end=end, step=step, quantities=quantities, node=node)


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
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.service import select
    from llm_d_lens.monitoring.profiling.service import read_pod_report
    from llm_d_lens.prometheus.client import PrometheusClient

    selection = select(hardware, require_sources=False)
    registry = get_registry()
    pod_profiles = [registry.get(h) for h in hardware] if hardware else registry.profiles()
    settings, objects = await _context(cluster)
    if settings.demo and not settings.prometheus_url:
        from llm_d_lens.errors import ServerNotConfigured

        raise ServerNotConfigured("the demo telemetry has device metrics only; serving pods' figures need a Prometheus "
                                  "(start the server with LENS_PROMETHEUS_URL set)")
    async with PrometheusClient(settings.require_url(), timeout=settings.timeout) as client:
        report = await read_pod_report(client, selection, pod_profiles, at=at, namespace=namespace, pod=pod,
                                       cluster=objects, mode=mode)
    return report.to_dict()
