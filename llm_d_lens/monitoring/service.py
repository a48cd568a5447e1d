"""The server's telemetry: its Prometheus (or the demo history) and the cluster objects the joins use.

The Prometheus URL and the cluster objects come from the server's environment (see
:mod:`llm_d_lens.monitoring.settings`), never from a request, so a caller cannot point the server
at an address of its choosing. The API's routes and the console's panels both answer from here.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def server_context(cluster_name: str | None = None) -> tuple[Any, Any]:
    """The server's Prometheus URL and cluster objects; anything wrong with them is a 503, never the caller's 4xx.

    With ``cluster_name`` the objects are that configured cluster's (an unknown name is a 404).
    """
    from llm_d_lens.errors import LensError, ServerNotConfigured
    from llm_d_lens.monitoring.accelerator.k8s import load
    from llm_d_lens.monitoring.settings import KUBECTL, TelemetrySettings
    from llm_d_lens.prometheus.client import normalise_url

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
    objects = cluster.source(kubectl_timeout()).load(None)  # None: the source builds its CommandRunner
    return ClusterObjects.from_documents([(f"cluster {name}", {"kind": "List", "items": list(objects.all_items())})])


def _misconfigured(variable: str, exc: Any) -> Exception:
    from llm_d_lens.errors import ServerNotConfigured

    return ServerNotConfigured(f"the telemetry API is misconfigured on the server: {variable}: {exc.message}",
                               details={"cause": exc.code, **exc.details})


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


async def devices_document(hardware: list[str], *, node: str | None = None, mode: str | None = None,
                           at: float | None = None, cluster: str | None = None) -> dict[str, Any]:
    """Every device of the selected hardware with its common quantities and attribution (``/telemetry/devices``)."""
    from llm_d_lens.monitoring.accelerator.service import read_devices, select
    from llm_d_lens.prometheus.client import PrometheusClient

    selection = select(hardware)
    settings, objects = await server_context(cluster)
    if settings.demo and not settings.prometheus_url:
        from llm_d_lens.monitoring.demo import demo_devices

        return demo_devices(selection, at=at, node=node, cluster=objects, mode=mode).to_dict()
    async with PrometheusClient(settings.require_url(), timeout=settings.timeout) as client:
        report = await read_devices(client, selection, at=at, node=node, cluster=objects, mode=mode)
    return report.to_dict()


async def pods_document(hardware: list[str], *, namespace: str | None = None, pod: str | None = None,
                        mode: str | None = None, at: float | None = None, cluster: str | None = None) -> dict[str, Any]:
    """Serving pods' KV-cache and request figures with the devices they hold (``/telemetry/pods``)."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.service import select
    from llm_d_lens.monitoring.profiling.service import read_pod_report
    from llm_d_lens.prometheus.client import PrometheusClient

    selection = select(hardware, require_sources=False)
    registry = get_registry()
    pod_profiles = [registry.get(h) for h in hardware] if hardware else registry.profiles()
    settings, objects = await server_context(cluster)
    if settings.demo and not settings.prometheus_url:
        from llm_d_lens.errors import ServerNotConfigured

        raise ServerNotConfigured("the demo telemetry has device metrics only; serving pods' figures need a Prometheus "
                                  "(start the server with LENS_PROMETHEUS_URL set)")
    async with PrometheusClient(settings.require_url(), timeout=settings.timeout) as client:
        report = await read_pod_report(client, selection, pod_profiles, at=at, namespace=namespace, pod=pod,
                                       cluster=objects, mode=mode)
    return report.to_dict()
