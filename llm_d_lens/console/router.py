"""The console's pages: overview at ``/``, one tab per hardware under ``/accelerators``, and ``/doctor``.

These pages read; the actions (deploy a render, cordon a node) are console/actions.py's, off by default.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from llm_d_lens import __version__
from llm_d_lens.console import data, pages
from llm_d_lens.console.charts import capacity_bars, line_chart, stacked_bars
from llm_d_lens.console.format import clock, gib, iso, moment, number, quantity, since
from llm_d_lens.console.tables import paginate
from llm_d_lens.errors import LensError

router = APIRouter(include_in_schema=False)


def _include_actions() -> None:
    from llm_d_lens.console import actions, installs

    router.include_router(actions.router)
    router.include_router(installs.router)

STATIC_URL = "/console/static"
VENDOR_URL = "/console/vendor"
#: ReDoc's bundle as /redoc loads it: the packaged file with its one remote image made local.
REDOC_BUNDLE_URL = "/console/redoc.standalone.js"
#: ReDoc draws its maker's logo (beside the "API docs by Redocly" credit, which stays) from its
#: maker's CDN, unconditionally: no option turns it off. The console's policy allows images from
#: this server and data: only, so the browser refused it and logged a console error on every
#: visit. Every absolute image address in the bundle is served as :data:`EMPTY_IMAGE` instead,
#: so the bundle, whichever version is installed, asks no other origin for an image.
REMOTE_IMAGE = re.compile(r"https?://[^\s\"'`()<>]+?\.(?:svg|png|gif|jpe?g|webp|ico)(?=[\"'`)])")
#: An empty image in its place: nothing is fetched, nothing is refused, the policy stays as strict.
EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27 width=%270%27 height=%270%27/%3E"


def _templates() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("llm_d_lens.console", "templates"),
                      autoescape=select_autoescape(["html", "svg"], default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(static=STATIC_URL, redoc_bundle=REDOC_BUNDLE_URL, version=__version__, number=number, gib=gib, quantity=quantity,
                       moment=moment, clock=clock, link=link, iso=iso, since=since, refresh=data.refresh_seconds,
                       range_label=range_label, deploy_link=deploy_link)
    return env


def link(path: str, params: dict[str, Any], **changes: Any) -> str:
    """``path`` with ``params`` updated by ``changes`` as its query; empty and false values are left out."""
    from urllib.parse import quote, urlencode

    merged = {**params, **changes}
    query = urlencode({k: ("1" if v is True else v) for k, v in merged.items() if v not in (None, "", False)})
    return quote(path) + ("?" + query if query else "")


_env = None


#: the ``lens deploy render`` flags a plan's hand-off uses -> the deploy page's fields
RENDER_FLAGS = {"--guide": "guide", "--hardware": "hardware", "--overlay": "overlay", "--mode": "mode",
                "--model-server": "model_server", "--model": "model", "--tensor-parallel": "tensor_parallel",
                "--pipeline-parallel": "pipeline_parallel", "--max-model-len": "max_model_len", "--replicas": "replicas", "--resource": "resource_name"}


def deploy_link(command: str) -> str | None:
    """The deploy page for a plan's ``lens deploy render ...`` hand-off: the same fields, so it renders the same objects.

    None when the command has a flag the page does not take (the page would render something else).
    """
    import shlex

    words = shlex.split(command)[3:]
    fields: dict[str, str] = {}
    while words:
        flag = words.pop(0)
        if flag not in RENDER_FLAGS or not words:
            return None
        fields[RENDER_FLAGS[flag]] = words.pop(0)
    return link("/deploy", fields)


def range_label(minutes: int) -> str:
    """15 min, 1 h, 6 h, 24 h."""
    return f"{minutes // 60} h" if minutes >= 60 and minutes % 60 == 0 else f"{minutes} min"


def render_text(name: str, **context: Any) -> str:
    global _env
    if _env is None:
        _env = _templates()
    return _env.get_template(name).render(**context)


def render(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render_text(name, **context), status_code=status_code)


#: pages rendered without an inventory to keep them beside (the doctor, a tab that is not registered, failures)
_loose: dict[Any, pages.Rendered] = {}
#: accelerator tabs with live telemetry, kept for one refresh step (the step is in the key)
_live_pages: dict[Any, pages.Rendered] = {}


@dataclass(frozen=True)
class Frame:
    """What every page's frame shows (the tabs, the banner's problems, the capabilities panel), and its key."""

    tabs: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    registry: data.Panel
    #: the same key is the same frame: a new frame gets a new one (a serial number, never reused)
    key: Any


_frame_serial = itertools.count()
#: ((the capabilities document, the registry problems, the watch problems), their frame)
_last_frame: tuple[tuple[Any, Any, list[dict[str, Any]]], Frame] | None = None


def frame() -> Frame:
    """The frame, built again only when the registry's document, its problems or a watch's problems change.

    The registry and its problems are kept by their owners (``data.registry_state``,
    ``readiness.registry_problems``) and compared by identity; the watches' problems by value (an
    empty list when nothing is watched). A registry that cannot load is shown, not raised, and not kept.
    """
    global _last_frame
    from llm_d_lens.serving.readiness import registry_problems, watch_problems

    try:
        document, tabs = data.registry_state()
        static = registry_problems()  # with the watches' below: exactly what /readyz reports
    except LensError as exc:
        return Frame([], [], data.failed(exc), ("registry failed", next(_frame_serial)))
    watches = watch_problems()
    known = _last_frame
    if known is not None and known[0][0] is document and known[0][1] is static and known[0][2] == watches:
        return known[1]
    made = Frame(tabs, [*static, *watches], data.Panel(document), ("frame", next(_frame_serial)))
    _last_frame = ((document, static, watches), made)
    return made


def settled(path: str, query: str) -> tuple[dict[Any, pages.Rendered], Any] | None:
    """Where a *settled* page is kept: (its inventory view's store, its key), or None when the page is not settled.

    A page is settled when everything it shows is kept already or follows from the server's
    settings alone: the default cluster's inventory is kept (an unchanged snapshot or the demo),
    and, on an accelerator tab, no panel reads anything live (drivers need a live cluster, no llm-d
    checkout or Prometheus or demo telemetry is configured) and the benchmark block is built. The
    key names the path and query as sent, the frame, the inventory (its view) and its freshness,
    and the settings the panels follow; the same key is the same page, so console/front.py answers
    it without routing, and the route itself keeps what it renders under it.
    """
    known = data.kept_inventory()
    if known is None:
        return None
    shown = frame()
    view = known["view"]
    base = (path, query, shown.key, view.serial, _freshness_key(data.Panel(known)))
    if path == "/":
        if query or data.telemetry_settings() != (False, False):
            return None  # a chosen cluster or range, or live sparklines: the route keys it
        return view.pages, ("settled", *base, tuple((c["name"], c["label"]) for c in data.cluster_choices()))
    key = path.removeprefix("/accelerators/")
    tab = next((t for t in shown.tabs if t["id"] == key or key in t["profile"].get("aliases", [])), None)
    if tab is None or "/" in key or data.llm_d_root_configured():
        return None
    profile = tab["profile"]
    telemetry = data.telemetry_settings()
    if (profile.get("telemetry") or {}).get("device_metric_sources") and telemetry != (False, False):
        return None
    benchmark = data.kept_benchmark(profile["id"])
    if benchmark is None:
        return None
    return view.pages, ("settled", *base, telemetry, id(benchmark))


def _registry_state() -> tuple[list[dict[str, Any]], list[dict[str, Any]], data.Panel]:
    """(tabs, the banner's problems as /readyz lists them, the capabilities panel)."""
    found = frame()
    return found.tabs, found.failures, found.registry


def _freshness_key(found: data.Panel) -> Any:
    f = (found.data or {}).get("freshness") or {} if found.ok else {}
    return (f.get("mode"), f.get("state"), f.get("observed_at"), found.data.get("read_at") if found.ok else None,
            data.refresh_seconds())


def _panel_key(panel: data.Panel) -> Any:
    """A small panel (driver status, an expected state) as a key; a kept panel (the benchmark's) by identity."""
    import json

    if not panel.ok:
        return (panel.code, panel.status, panel.message, panel.expected, panel.enable)
    return json.dumps(panel.data, sort_keys=True, default=str)


@router.get("/", response_class=HTMLResponse)
async def overview_page(request: Request, cluster: str | None = Query(None), minutes: int | None = Query(None)) -> Response:
    place = settled(request.url.path, request.url.query)  # before anything is read: a page never outlives its key
    shown = frame()
    tabs, failures, registry = shown.tabs, shown.failures, shown.registry
    inventory = await data.inventory(cluster or None)
    clusters = data.cluster_choices()
    chosen = cluster or (clusters[0]["name"] if clusters else None)
    minutes = minutes if minutes in data.RANGES else 60
    telemetry = data.telemetry_settings()
    live = telemetry != (False, False)
    # the cards' sparklines: read once per refresh step (the page is kept under that step, see below)
    step = data.now_step() if live else None
    sparks: dict[str, data.Panel] = {}

    def build() -> pages.Rendered:
        cards, bars, chart = [], [], None
        view = inventory.data["view"] if inventory.ok else None
        if view is not None:
            for tab in tabs:
                bucket = view.bucket(tab["id"])
                cards.append({"tab": tab, "bucket": bucket, "spark": _spark(sparks.get(tab["id"]))})
                if bucket and bucket["allocatable"]:
                    bars.append((tab["name"], bucket["allocated"], max(bucket["allocatable"] - bucket["allocated"], 0)))
            chart = capacity_bars(bars) if bars else None
        return pages.rendered(render_text(
            "overview.html", page="overview", tabs=tabs, failures=failures, registry=registry, inventory=inventory,
            view=view, cards=cards, chart=chart, clusters=clusters, cluster=chosen, live=live, minutes=minutes,
            ranges=data.RANGES, step=step, params={"cluster": cluster or "", "minutes": minutes},
            telemetry_note=None if live else data.telemetry_not_configured("the cards' utilisation sparklines")))

    if place is not None:
        return pages.respond(request, pages.kept(place[0], place[1], build))
    store = inventory.data["view"].pages if inventory.ok else _loose
    key = ("overview", chosen, tuple((c["name"], c["label"]) for c in clusters), shown.key,
           _freshness_key(inventory), None if inventory.ok else (inventory.code, inventory.message),
           minutes, telemetry, step)
    if live and inventory.ok:
        found = store.get(key)
        if found is not None:
            return pages.respond(request, found)
        sparks.update(await data.sparklines(tabs, minutes))
        if not all(p.ok for p in sparks.values()):
            return pages.respond(request, build())  # a failed read is shown, never kept
    return pages.respond(request, pages.kept(store, key, build))


def _spark(panel: data.Panel | None) -> Any:
    """A card's sparkline: None (no telemetry declared), the panel's error, or the drawn line (None inside: no data)."""
    if panel is None or not panel.ok:
        return panel
    from llm_d_lens.console.charts import sparkline

    found = panel.data
    return data.Panel({**found, "line": sparkline(found["values"], "ratio", found["start"], found["end"])})


@router.get("/fleet", response_class=HTMLResponse)
async def fleet_page() -> HTMLResponse:
    tabs, failures, registry = _registry_state()
    return render("fleet.html", page="fleet", tabs=tabs, failures=failures, registry=registry, fleet=await data.fleet())


@router.get("/accelerators", response_class=HTMLResponse)
async def accelerators_page() -> Response:
    tabs, failures, registry = _registry_state()
    if not tabs:
        return render("accelerator.html", page="accelerators", tabs=[], failures=failures, registry=registry, tab=None)
    return RedirectResponse(f"/accelerators/{tabs[0]['id']}", status_code=303)


NODE_COLUMNS = {
    "node": lambda r: r["name"], "status": lambda r: r["status"], "devices": lambda r: r["devices"],
    "partitions": lambda r: r["partitions"], "allocatable": lambda r: r["allocatable"],
    "allocated": lambda r: r["allocated"], "available": lambda r: r["available"], "vram": lambda r: r["vram"],
}


def _node_page(view: Any, profile_id: str, sort: str, descending: bool, query: str, page: int) -> Any:
    """One page of the hardware's nodes: sorted once per column and kept on the view, filtered only when asked."""
    column = sort if sort in NODE_COLUMNS else next(iter(NODE_COLUMNS))
    rows = view.sorted_rows(profile_id, column, NODE_COLUMNS[column], descending) if view is not None else []
    return paginate(rows, columns=NODE_COLUMNS, sort=column, descending=descending, query=query, page=page, presorted=True,
                    searchable=lambda r: " ".join([r["name"], r["status"], *r["products"], *r["holders"]]))


DEVICE_COLUMNS = {
    "device": lambda r: r["name"], "util": lambda r: r["utilization_ratio"], "memory": lambda r: r["memory_used_bytes"],
    "power": lambda r: r["power_watts"], "temperature": lambda r: r["temperature_celsius"],
    "health": lambda r: (r.get("health") or {}).get("status"),
}


def _device_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for d in document.get("devices", []):
        name = "/".join(p for p in (d["node"] or "-", d["device"], d.get("sub_device") or "") if p)
        attribution = d.get("attribution") or {}
        holder = "/".join(p for p in (attribution.get("namespace"), attribution.get("pod")) if p)
        rows.append({**d, "name": name, "holder": holder, "attribution_status": attribution.get("status")})
    return rows


def _charts(profile: dict[str, Any], report: dict[str, Any], first: str, minutes: int) -> list[Any]:
    titles = {**data.TITLES, **((profile.get("ui") or {}).get("chart_titles") or {})}
    units = {q["key"]: (q["field"], q["unit"]) for q in report["quantities"]}
    order = [first] + [q for q in data.CHARTED if q != first]
    charts = []
    for key in order:
        if key not in units:
            continue
        field, unit = units[key]
        series = [(d["name"], [(t, v) for t, v in d["series"].get(field, [])]) for d in report["devices"]]
        charts.append(line_chart(titles.get(key, key), key, unit, [s for s in series if s[1]],
                                 report["start"], report["end"]))
    return charts


@router.get("/accelerators/{key}", response_class=HTMLResponse)
async def accelerator_page(
    request: Request,
    key: str,
    q: str = Query("", max_length=200, description="Filter nodes: every word must appear."),
    sort: str = Query("node", max_length=40),
    desc: bool = False,
    page: int = Query(1, ge=1, le=10**6),
    dq: str = Query("", max_length=200),
    dsort: str = Query("device", max_length=40),
    ddesc: bool = False,
    dpage: int = Query(1, ge=1, le=10**6),
    minutes: int | None = Query(None, description="Chart range in minutes."),
    quantity_: str | None = Query(None, alias="quantity", max_length=40),
    node: str | None = Query(None, max_length=253, description="Chart and devices of this node only."),
    namespace: str | None = Query(None, max_length=63, description="Serving pods in this namespace."),
) -> Response:
    place = settled(request.url.path, request.url.query)  # before anything is read: a page never outlives its key
    shown = frame()
    tabs, failures, registry = shown.tabs, shown.failures, shown.registry
    tab = next((t for t in tabs if t["id"] == key or key in t["profile"].get("aliases", [])), None)
    if tab is None:
        return render("accelerator.html", status_code=404, page="accelerators", tabs=tabs, failures=failures,
                      registry=registry, tab=None, missing=key)
    profile = tab["profile"]
    panel = (profile.get("ui") or {}).get("telemetry_panel") or {}
    first = quantity_ if quantity_ in data.TITLES else panel.get("quantity", "utilization")
    minutes = minutes if minutes in data.RANGES else panel.get("range_minutes", 60)
    ranges = sorted({*data.RANGES, minutes})
    namespace = namespace if namespace is not None else panel.get("namespace")
    node = node or None
    has_telemetry = bool((profile.get("telemetry") or {}).get("device_metric_sources"))

    prometheus, demo = data.telemetry_settings()
    live_key = None
    if has_telemetry and (prometheus or demo):
        # live figures: kept for one refresh step under everything they were read with (a failure never kept)
        known = data.kept_inventory()
        if known is not None and data.kept_benchmark(profile["id"]) is not None:
            live_key = ("live", request.url.path, request.url.query, shown.key, known["view"].serial,
                        _freshness_key(data.Panel(known)), data.now_step(), (prometheus, demo),
                        data.llm_d_root_configured(), id(data.kept_benchmark(profile["id"])))
            found = _live_pages.get(live_key)
            if found is not None:
                return pages.respond(request, found)
    inventory, drivers, benchmark, overlays = await asyncio.gather(
        data.inventory(), data.driver_status(profile["id"]), data.benchmark(profile["id"]), data.overlays(profile["id"]))
    if not has_telemetry:
        series = devices = pods = data.not_configured(
            "TELEMETRY_NOT_DECLARED", f"{profile['id']} declares no telemetry, so Lens reads no device metrics for it.",
            "declare telemetry.device_metric_sources in its profile (docs/telemetry.md)", status=422)
    elif not prometheus and not demo:
        series = data.telemetry_not_configured("the charts")
        devices = data.telemetry_not_configured("the devices' figures")
        pods = data.telemetry_not_configured("the serving pods' figures")
    else:
        request_ = data.TelemetryRequest(first, minutes, node, namespace)
        if prometheus:
            series, devices, pods = await asyncio.gather(
                data.series(profile["id"], request_), data.devices(profile["id"], node), data.pods(profile["id"], namespace))
        else:  # the demo telemetry has device figures only
            series, devices = await asyncio.gather(data.series(profile["id"], request_), data.devices(profile["id"], node))
            pods = data.not_configured("SERVER_NOT_CONFIGURED", "the demo telemetry has device metrics only; serving "
                                       "pods' figures come from vLLM's metrics in a Prometheus.", data.PROMETHEUS_HINT)
    view = inventory.data["view"] if inventory.ok else None
    params = {"q": q, "sort": sort if sort in NODE_COLUMNS else "node", "desc": desc, "dq": dq,
              "dsort": dsort if dsort in DEVICE_COLUMNS else "device", "ddesc": ddesc,
              "minutes": minutes, "quantity": first, "node": node or "", "namespace": namespace or ""}

    def build() -> pages.Rendered:
        nodes = _node_page(view, profile["id"], sort, desc, q, page)
        device_page = paginate(_device_rows(devices.data) if devices.ok else [], columns=DEVICE_COLUMNS, sort=dsort,
                               descending=ddesc, query=dq, page=dpage,
                               searchable=lambda r: " ".join(str(r.get(k) or "") for k in ("name", "model", "holder")))
        charts = _charts(profile, series.data, first, minutes) if series.ok else []
        chart_nodes = sorted({d["node"] for d in devices.data.get("devices", []) if d["node"]}) if devices.ok else []
        return pages.rendered(render_text(
            "accelerator.html", page="accelerators", tabs=tabs, failures=failures, registry=registry, tab=tab,
            profile=profile, inventory=inventory, view=view, bucket=view.bucket(profile["id"]) if view else None,
            nodes=nodes, drivers=drivers, presence=data.presence(profile, view), benchmark=benchmark, overlays=overlays,
            series=series, devices=devices, device_page=device_page, pods=pods, charts=charts, ranges=ranges,
            chart_nodes=chart_nodes, params=params, quantities=data.TITLES, has_telemetry=has_telemetry,
        ))

    if place is not None:
        return pages.respond(request, pages.kept(place[0], place[1], build))
    if view is None or series.ok or devices.ok or pods.ok:
        page_ = build()
        if live_key is not None and all(p.ok or p.expected for p in (inventory, drivers, benchmark, overlays, series, devices, pods)):
            pages.kept(_live_pages, live_key, lambda: page_)
        return pages.respond(request, page_)  # live figures: kept for this refresh step at most
    key_ = ("accelerator", profile["id"], q, sort, desc, page, dq, dsort, ddesc, dpage, minutes, first, node, namespace,
            shown.key, _freshness_key(inventory), _panel_key(drivers), id(benchmark),
            _panel_key(benchmark) if not benchmark.ok else None, _panel_key(overlays),
            *(_panel_key(p) for p in (series, devices, pods)))
    return pages.respond(request, pages.kept(view.pages, key_, build))


@router.get("/plan", response_class=HTMLResponse)
async def plan_page(
    model: str = Query("llama-3.1-8b", max_length=200),
    context: int = Query(8192, ge=1, le=10**7),
    concurrency: int = Query(1, ge=1, le=10**6),
    dtype: str = Query("", max_length=32),
    discover: bool = Query(False),
) -> HTMLResponse:
    """``POST /api/v1/planning/plan`` for a catalogue model, as a form and a table."""
    params = {"model": model, "context": context, "concurrency": concurrency, "dtype": dtype, "discover": discover}
    return _plan_page(params, None, await data.plan(params))


@router.post("/plan", response_class=HTMLResponse)
async def plan_upload(request: Request) -> HTMLResponse:
    """The plan form as posted: a catalogue model, or a config.json file (at most 256 KiB) planned instead.

    Planning changes nothing, so the form may post; its answer is the same page as ``GET /plan``.
    """
    params, uploaded, found = await data.posted_plan(request)
    return _plan_page(params, uploaded, found)


def _plan_page(params: dict[str, Any], uploaded: str | None, found: Any) -> HTMLResponse:
    tabs, failures, registry = _registry_state()
    chart = None
    if found.ok:
        fitting = [p for p in found.data["pools"] if p.get("best")]
        chart = stacked_bars([(p["product"] + (f" {p['partition'].rsplit('/', 1)[-1]}" if p.get("partition") else ""), [
            ("weights", p["best"]["weights_gib"]), ("KV cache", p["best"]["kv_cache_gib"]),
            ("overhead", p["best"]["overhead_gib"]), ("headroom", p["best"]["headroom_gib"])]) for p in fitting], "GiB") if fitting else None
    response = render("plan.html", page="plan", tabs=tabs, failures=failures, registry=registry, params=params,
                      uploaded=uploaded, models=data.models(), dtypes=data.DTYPES, plan=found, chart=chart,
                      upload_limit_kib=data.upload_limit() // 1024)
    if not found.ok and found.code == "PLANNING_CONFIG_TOO_LARGE":
        response.status_code = 413
    return response


@router.get("/doctor", response_class=HTMLResponse)
async def doctor_page() -> HTMLResponse:
    report = await asyncio.to_thread(data.doctor)
    tabs, failures, registry = _registry_state()
    return render("doctor.html", page="doctor", tabs=tabs, failures=failures, registry=registry, report=report)


_include_actions()


@functools.cache
def redoc_bundle() -> bytes:
    """The installed ReDoc bundle with its remote images replaced by :data:`EMPTY_IMAGE` (read once)."""
    text = Path(vendor_directory(), "redoc.standalone.js").read_text(encoding="utf-8")
    return REMOTE_IMAGE.sub(EMPTY_IMAGE, text).encode()


@router.get(REDOC_BUNDLE_URL)
def redoc_script() -> Response:
    return Response(redoc_bundle(), media_type="text/javascript", headers={"cache-control": "public, max-age=3600"})


def static_directory() -> str:
    return str(resources.files("llm_d_lens.console").joinpath("static"))


def vendor_directory() -> str:
    """Swagger UI's and ReDoc's files, from the installed ``fastapi-offline`` package (no CDN)."""
    return str(resources.files("fastapi_offline").joinpath("static"))
