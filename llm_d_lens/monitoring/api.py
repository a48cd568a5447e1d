"""``/api/v1/telemetry``: devices and pods in common units.

The Prometheus URL and the cluster objects come from the server's environment (see
:mod:`llm_d_lens.monitoring.settings`), never from a request, so a caller cannot point the server
at an address of its choosing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

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
