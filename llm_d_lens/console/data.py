"""What each console panel shows, read through the same domain services the API's routes call.

Every loader returns a :class:`Panel`: the data, or the coded error that kept it from being read
(no Prometheus configured, Prometheus down, kubectl failing, no llm-d checkout). A panel never
fails the page: the other panels still render, and the failed one says what went wrong and its
code. Numbers are never computed here; they are the API's.

A state that is expected (the demo has no DaemonSets, no Prometheus or llm-d checkout was
configured, a profile declares no telemetry) is an *expected* panel: shown as a neutral note with
the one thing that enables it, never as a failure. Whether a setting is absent is read from the
configuration itself, not guessed from an error's wording.
"""

from __future__ import annotations

import functools

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool

from llm_d_lens.errors import LensError

#: the quantities a telemetry panel charts, in this order after the profile's default
CHARTED = ("utilization", "memory_used", "power", "temperature")
TITLES = {"utilization": "Utilisation", "memory_used": "Memory used", "memory_total": "Memory total",
          "power": "Power", "energy": "Energy", "temperature": "Temperature", "tensor_activity": "Tensor activity"}
#: the time ranges a chart offers, in minutes
RANGES = (15, 60, 360, 1440)


@dataclass
class Panel:
    data: Any = None
    code: str | None = None
    status: int | None = None
    message: str | None = None
    #: an expected state (not configured, not declared, the demo), not a failure
    expected: bool = False
    #: the one thing that enables the panel, for an expected state
    enable: str | None = None

    @property
    def ok(self) -> bool:
        return self.code is None


def not_configured(code: str, message: str, enable: str, status: int = 503) -> Panel:
    """An expected state: what is not there and the one setting that brings it."""
    return Panel(code=code, status=status, message=message, expected=True, enable=enable)


def failed(exc: LensError) -> Panel:
    return Panel(code=exc.code, status=exc.http_status, message=exc.message)


async def guarded(load: Callable[[], Awaitable[Any]]) -> Panel:
    """``load()`` as a panel: its data, or its coded error; an unexpected error is named, never raised."""
    try:
        return Panel(await load())
    except LensError as exc:
        return failed(exc)
    except Exception as exc:  # noqa: BLE001 - a panel must not take the page down; the log keeps the rest
        import logging

        logging.getLogger("llm_d_lens.console").exception("console panel failed")
        return Panel(code="INTERNAL_ERROR", status=500, message=f"Lens failed unexpectedly ({type(exc).__name__})")


_capabilities: tuple[Any, int, dict[str, Any], list[dict[str, Any]]] | None = None


def capabilities() -> dict[str, Any]:
    """``GET /api/v1/hardware/capabilities``, exactly; built once per registry (its profiles are fixed when it is built)."""
    return registry_state()[0]


def registry_state() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the capabilities document, its tabs), rebuilt only when the registry or its failures change."""
    global _capabilities
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.hardware.views import capabilities_document

    registry = get_registry()
    known = _capabilities
    if known is not None and known[0] is registry and known[1] == len(registry.failures):
        return known[2], known[3]
    document = capabilities_document(registry)
    _capabilities = (registry, len(registry.failures), document, tabs(document))
    return document, _capabilities[3]


def tabs(document: dict[str, Any]) -> list[dict[str, Any]]:
    """One tab per registered hardware, in ``ui.order`` then display-name order, named and grouped by its ``ui`` block."""
    out = []
    for profile in document["profiles"]:
        ui = profile.get("ui") or {}
        labels = ui.get("labels") or {}
        out.append({
            "id": profile["id"], "name": profile["display_name"], "icon": ui.get("icon") or "Chip",
            "vendor": labels.get("vendor") or profile["vendor"], "group": labels.get("metric_group") or "",
            "order": ui.get("order", 100), "profile": profile,
        })
    return sorted(out, key=lambda t: (t["order"], t["name"].lower(), t["id"]))


def kept_inventory(cluster: str | None = None) -> dict[str, Any] | None:
    """The inventory panel's data when it is kept already (an unchanged snapshot whose view was built), else None.

    No work: a settings check, one ``stat`` and two lookups, so it is safe on the event loop and
    cheap enough to run before every page (console/front.py). Only the default cluster is looked up here.
    """
    from llm_d_lens.cluster import served
    from llm_d_lens.console.views import cached_view
    from llm_d_lens.serving.inventories import kept_inventory as kept
    from llm_d_lens.serving.watched import freshness

    if cluster is not None:
        return None
    try:
        source = served.cluster_source()
    except LensError:
        return None
    found = kept(source, served.cluster_runner())
    view = cached_view(found) if found is not None else None
    if view is None:
        return None
    return {"view": view, "read_at": found.read_at, "freshness": freshness(source, found)}


async def inventory(cluster: str | None = None) -> Panel:
    """A configured cluster's inventory (the first without a name) as its kept :class:`~.views.InventoryView`, and when it was read.

    An unchanged snapshot's view is found without a worker thread; reading a source and the
    first walk over an inventory's nodes run in one, so the event loop never waits for them.
    """
    from llm_d_lens.cluster import served
    from llm_d_lens.console.views import cached_view, view_of
    from llm_d_lens.serving.inventories import read_inventory
    from llm_d_lens.serving.watched import freshness

    async def load() -> dict[str, Any]:
        known = kept_inventory(cluster)
        if known is not None:
            return known
        if cluster is None:
            source = served.cluster_source()
        else:
            source = served.served_clusters().get(cluster).source(served.kubectl_timeout())
        runner = served.cluster_runner()
        found = await read_inventory(source, runner)
        view = cached_view(found) or await run_in_threadpool(view_of, found)
        return {"view": view, "read_at": found.read_at, "freshness": freshness(source, found)}

    return await guarded(load)


async def fleet() -> Panel:
    """``GET /api/v1/fleet/overview``: every served cluster's share of each hardware, unreadable ones with their error."""
    from llm_d_lens.cluster import served
    from llm_d_lens.cluster.fleet import fleet_document
    from llm_d_lens.serving.fleet import gather_members

    async def load() -> dict[str, Any]:
        runner = served.cluster_runner()
        return fleet_document(await gather_members(served.served_clusters().clusters, served.kubectl_timeout(),
                                                   lambda _: runner))

    return await guarded(load)


#: (the served clusters' settings key, the selector's choices): see :func:`cluster_choices`
_choices: tuple[tuple[object, ...], list[dict[str, str]]] | None = None


def cluster_choices() -> list[dict[str, str]]:
    """The served clusters for the selector; none when there is only one (or they cannot be read: the page says why).

    Kept while :func:`~llm_d_lens.cluster.served.settings_key` is unchanged; an unreadable
    configuration is never kept.
    """
    global _choices
    from llm_d_lens.cluster.served import served_clusters, settings_key

    key = settings_key()
    known = _choices
    if known is not None and known[0] == key:
        return known[1]
    try:
        found = served_clusters().clusters
    except LensError:
        return []
    choices = [{"name": c.name, "label": c.display_name} for c in found] if len(found) > 1 else []
    if key[-1] is not None:
        _choices = (key, choices)
    return choices


async def driver_status(profile_id: str) -> Panel:
    """``GET /api/v1/drivers/status?hardware=ID``; a snapshot or demo server has no DaemonSets to read."""
    from llm_d_lens.cluster import served

    try:
        source = served.cluster_source()
    except LensError as exc:
        return failed(exc)
    if not source.live:
        return not_configured("LIVE_CLUSTER_NEEDED", "driver status reads the driver DaemonSets of a live cluster; this "
                              f"server reads {'the demo' if source.demo else 'a snapshot'}.",
                              "start the server with LENS_KUBE_CONTEXT naming a live cluster", status=409)

    async def load() -> Any:
        from llm_d_lens.hardware.registry import get_registry
        from llm_d_lens.monitoring.gpu_driver import service
        from llm_d_lens.monitoring.gpu_driver.views import choose_view, named_view_factory, view_factory

        view = choose_view(None, None, view_factory(), named_view_factory())
        return [s.to_dict() for s in await service.status(get_registry(), [profile_id], None, view)]

    return await guarded(load)


def presence(profile: dict[str, Any], view: Any) -> dict[str, Any]:
    """The profile's presence rule and the inventory's nodes that carry its labels (kept on the view)."""
    block = profile.get("presence") or {}
    selector = block.get("node_label_selector") or profile.get("node_label_selector") or {}
    nodes = view.present(profile["id"]) if view is not None else None
    return {"selector": selector, "timeout_seconds": block.get("timeout_seconds"), "nodes": nodes}


#: (registry, profile id) -> its scenario panel: the document depends on the profile only
_benchmarks: dict[tuple[int, str], tuple[Any, Panel]] = {}


def kept_benchmark(profile_id: str) -> Panel | None:
    """The hardware's scenario panel if it was built for this registry already, else None (no work)."""
    from llm_d_lens.hardware.registry import get_registry

    registry = get_registry()
    known = _benchmarks.get((id(registry), profile_id))
    return known[1] if known is not None and known[0] is registry else None


async def benchmark(profile_id: str) -> Panel:
    """``POST /api/v1/evaluate/config`` for the hardware: the llm-d-benchmark scenario block, built once per registry."""
    from llm_d_lens.hardware.registry import get_registry

    registry = get_registry()
    known = kept_benchmark(profile_id)
    if known is not None:
        return known

    async def load() -> Any:
        from llm_d_lens.evaluate.service import scenario_document

        return await run_in_threadpool(lambda: scenario_document(hardware=profile_id))

    panel = await guarded(load)
    if panel.ok:
        if len(_benchmarks) > 64:
            _benchmarks.clear()
        _benchmarks[(id(registry), profile_id)] = (registry, panel)
    return panel


def llm_d_root_configured() -> bool:
    """Whether the server was started with an llm-d checkout (either of the two settings)."""
    import os

    from llm_d_lens.deploy.source import LEGACY_ROOT_ENV, ROOT_ENV

    return any((os.environ.get(name) or "").strip() for name in (ROOT_ENV, LEGACY_ROOT_ENV))


async def overlays(profile_id: str) -> Panel:
    """``GET /api/v1/deploy/guides?hardware=ID`` from the server's llm-d checkout, grouped by guide."""
    if not llm_d_root_configured():
        from llm_d_lens.deploy.source import ROOT_ENV

        return not_configured("SERVER_NOT_CONFIGURED", "this server was started without an llm-d checkout, so it has no "
                              "overlays to list.", f"start the server with {ROOT_ENV} set to an llm-d checkout")

    async def load() -> Any:
        from llm_d_lens.deploy.service import describe_guides, server_source_errors
        from llm_d_lens.runner import CommandRunner

        def read() -> dict[str, Any]:
            with server_source_errors():
                return describe_guides(hardware=profile_id, runner=CommandRunner())

        document = await run_in_threadpool(read)
        by_guide: dict[str, list[dict[str, Any]]] = {}
        for overlay in document.get("overlays", []):
            by_guide.setdefault(overlay["guide"], []).append(overlay)
        return {"source": document.get("source", {}), "guides": by_guide}

    return await guarded(load)


@dataclass
class TelemetryRequest:
    quantity: str
    minutes: int
    node: str | None
    namespace: str | None


#: (the telemetry settings' values, what they say): see :func:`telemetry_settings`
_telemetry: tuple[tuple[str | None, ...], tuple[bool, bool]] | None = None


def telemetry_settings() -> tuple[bool, bool]:
    """(a Prometheus is configured, the demo telemetry is on), read from the server's settings; a bad setting reads as
    configured so its error is shown. Worked out again only when a telemetry setting's value changes."""
    global _telemetry
    import os

    from llm_d_lens.monitoring.settings import TelemetrySettings
    from llm_d_lens.settings import SETTINGS

    key = tuple(os.environ.get(s.name) for s in SETTINGS if s.concern == "telemetry")
    known = _telemetry
    if known is not None and known[0] == key:
        return known[1]
    try:
        settings = TelemetrySettings.from_env()
    except LensError:
        return True, False
    _telemetry = (key, (bool(settings.prometheus_url), bool(settings.demo)))
    return _telemetry[1]


PROMETHEUS_HINT = "start the server with LENS_PROMETHEUS_URL set to a Prometheus that scrapes the exporters"


def telemetry_not_configured(what: str) -> Panel:
    return not_configured("SERVER_NOT_CONFIGURED", f"this server has no Prometheus, so {what} cannot be read.", PROMETHEUS_HINT)


async def series(profile_id: str, request: TelemetryRequest) -> Panel:
    """``GET /api/v1/telemetry/series`` for the hardware over the chosen range."""

    async def load() -> Any:
        from llm_d_lens.monitoring.accelerator.service import select
        from llm_d_lens.monitoring.service import read_series_for, server_context

        selection = select([profile_id])
        settings, _ = await server_context()
        end = now_step()
        report = await read_series_for(settings, selection, (end - request.minutes * 60, end), step=None,
                                       quantities=list(CHARTED), node=request.node)
        return report.to_dict()

    return await guarded(load)


def refresh_seconds() -> int:
    """``LENS_CONSOLE_REFRESH``: seconds between a page's conditional re-reads (1 to 3600; default 15)."""
    from llm_d_lens.settings import SettingInvalid, text

    raw = text("LENS_CONSOLE_REFRESH")
    if raw is None:
        return 15
    if not raw.isdigit() or not 1 <= int(raw) <= 3600:
        raise SettingInvalid(f"LENS_CONSOLE_REFRESH={raw[:40]}: give whole seconds from 1 to 3600",
                             details={"variable": "LENS_CONSOLE_REFRESH", "value": raw[:40]})
    return int(raw)


def now_step() -> float:
    """Now, rounded down to the refresh step: a chart read twice in one step is the same chart (and the same ETag)."""
    step = refresh_seconds()
    return float(int(time.time()) // step * step)


async def sparklines(tabs: list[dict[str, Any]], minutes: int) -> dict[str, Panel]:
    """Per hardware that declares telemetry: the mean utilisation of its devices over the last ``minutes``.

    ``{"values": [(t, ratio)], "start", "end", "devices", "source"}`` per hardware, read with the same
    series query as its tab's charts (one query per hardware, all at once); a hardware without
    telemetry is left out, a failed read is that card's coded error.
    """
    import asyncio

    from llm_d_lens.console.charts import mean_series

    wanted = [t for t in tabs if (t["profile"].get("telemetry") or {}).get("device_metric_sources")]

    async def one(profile_id: str) -> Panel:
        found = await series(profile_id, TelemetryRequest("utilization", minutes, None, None))
        if not found.ok:
            return found
        report = found.data
        field = next((q["field"] for q in report["quantities"] if q["key"] == "utilization"), None)
        lines = [d["series"].get(field, []) for d in report["devices"]] if field else []
        return Panel({"values": mean_series(lines), "start": report["start"], "end": report["end"],
                      "devices": sum(1 for line in lines if line), "source": report.get("source")})

    found = await asyncio.gather(*(one(t["id"]) for t in wanted))
    return {t["id"]: panel for t, panel in zip(wanted, found)}


async def devices(profile_id: str, node: str | None) -> Panel:
    """``GET /api/v1/telemetry/devices?hardware=ID``: every device's latest figures and who holds it."""

    async def load() -> Any:
        from llm_d_lens.monitoring.service import devices_document

        return await devices_document([profile_id], node=node)

    return await guarded(load)


async def pods(profile_id: str, namespace: str | None) -> Panel:
    """``GET /api/v1/telemetry/pods?hardware=ID&namespace=NS``: the serving pods on this hardware."""

    async def load() -> Any:
        from llm_d_lens.monitoring.service import pods_document

        return await pods_document([profile_id], namespace=namespace)

    return await guarded(load)


def doctor() -> dict[str, Any]:
    """``lens hardware doctor``'s report."""
    from llm_d_lens.hardware.doctor import doctor_report

    return doctor_report()


#: the weight formats the plan form offers (the planning domain accepts more by name)
DTYPES = ("bf16", "fp16", "fp8", "int8", "int4")


def models() -> list[dict[str, Any]]:
    """``GET /api/v1/planning/models``."""
    from llm_d_lens.planning.catalogue import models_document

    return models_document()


async def plan(params: dict[str, Any], upload: tuple[str, bytes] | None = None) -> Panel:
    """``POST /api/v1/planning/plan`` for the form's model (or its uploaded config.json), on the server's cluster."""

    async def load() -> Any:
        return await _plan_document(params, upload)

    return await guarded(load)


async def _plan_document(params: dict[str, Any], upload: tuple[str, bytes] | None) -> dict[str, Any]:
    from llm_d_lens.cluster import served
    from llm_d_lens.planning.errors import ModelUnknown
    from llm_d_lens.planning.fit import FitRequest
    from llm_d_lens.planning.service import model_spec, server_plan, uploaded_config

    spec = uploaded_config(upload[1], upload[0]) if upload else model_spec(params["model"], None, ModelUnknown.API_HINT)
    fit = FitRequest(params["context"], params["concurrency"], params["dtype"] or None, None)
    fit.checked(spec)
    result = await run_in_threadpool(functools.partial(server_plan, discover=bool(params.get("discover"))), spec, fit,
                                     served.cluster_source(), served.cluster_runner())
    return result.to_dict()


def upload_limit() -> int:
    """Bytes a config.json upload may have (the form says it)."""
    from llm_d_lens.planning.service import MAX_UPLOAD_BYTES

    return MAX_UPLOAD_BYTES


#: what the plan form sends besides the file: field -> (default, how it is read)
PLAN_FIELDS: dict[str, Any] = {"model": "llama-3.1-8b", "context": 8192, "concurrency": 1, "dtype": "", "discover": False}
#: the form's other fields and multipart framing, beyond the config.json itself
FORM_OVERHEAD_BYTES = 16 * 1024


async def posted_plan(request: Any) -> tuple[dict[str, Any], str | None, Panel]:
    """The plan form as posted (``multipart/form-data``, a config.json file optional): its fields, the
    uploaded file's name, and the plan; a form too large or a field out of bounds is the panel's coded error.

    The body is read only up to the upload cap, so an oversize upload is refused without being held.
    """
    params = dict(PLAN_FIELDS)
    names: list[str] = []

    async def load() -> Any:
        fields, upload = await _read_plan_form(request)
        params.update(fields)
        if upload is not None:
            names.append(upload[0])
        return await _plan_document(params, upload)

    found = await guarded(load)
    return params, (names[0] if names else None), found


async def _read_plan_form(request: Any) -> tuple[dict[str, Any], tuple[str, bytes] | None]:
    from llm_d_lens.planning.errors import ConfigTooLarge, RequestInvalid
    from llm_d_lens.planning.service import MAX_UPLOAD_BYTES

    limit = MAX_UPLOAD_BYTES + FORM_OVERHEAD_BYTES
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ConfigTooLarge("the plan form", int(declared), MAX_UPLOAD_BYTES)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ConfigTooLarge("the plan form", len(body), MAX_UPLOAD_BYTES)
    fields, files = _form_parts(request.headers.get("content-type", ""), bytes(body))
    out: dict[str, Any] = {}
    for name, (low, high) in (("context", (1, 10**7)), ("concurrency", (1, 10**6))):
        text = fields.get(name, str(PLAN_FIELDS[name])).strip()
        if not text.isdigit() or not low <= int(text) <= high:
            raise RequestInvalid(name, text, f"is not a whole number from {low:,} to {high:,}")
        out[name] = int(text)
    for name, longest in (("model", 200), ("dtype", 32)):
        text = fields.get(name, str(PLAN_FIELDS[name])).strip()
        if len(text) > longest:
            raise RequestInvalid(name, text, f"is longer than {longest} characters")
        out[name] = text
    out["discover"] = fields.get("discover", "") in ("on", "1", "true")
    upload = files.get("config")
    if upload is not None and len(upload[1]) > MAX_UPLOAD_BYTES:
        raise ConfigTooLarge(f"upload:{upload[0]}", len(upload[1]), MAX_UPLOAD_BYTES)
    return out, (upload if upload is not None and upload[1] else None)


def _form_parts(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, tuple[str, bytes]]]:
    """A posted form's text fields and its files (name -> (filename, bytes)), multipart or urlencoded."""
    from email.parser import BytesParser
    from email.policy import HTTP
    from urllib.parse import parse_qs

    from llm_d_lens.planning.errors import RequestInvalid

    if content_type.startswith("application/x-www-form-urlencoded"):
        query = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[-1] for k, v in query.items()}, {}
    if not content_type.startswith("multipart/form-data"):
        raise RequestInvalid("Content-Type", content_type or "none", "is not a form (multipart/form-data)")
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    fields: dict[str, str] = {}
    files: dict[str, tuple[str, bytes]] = {}
    if not message.is_multipart():
        raise RequestInvalid("Content-Type", content_type, "names no boundary the body is split by")
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            files[name] = (filename, payload)
        else:
            fields[name] = payload.decode("utf-8", "replace")
    return fields, files
