"""The console's pages: overview at ``/``, one tab per hardware under ``/accelerators``, and ``/doctor``.

Read-only: no page offers a mutation (driver installs and applies stay API calls with the token).
"""

from __future__ import annotations

import asyncio
import functools
import re
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from llm_d_lens import __version__
from llm_d_lens.console import data
from llm_d_lens.console.charts import capacity_bars, line_chart, stacked_bars
from llm_d_lens.console.format import clock, gib, moment, number, quantity
from llm_d_lens.console.tables import paginate
from llm_d_lens.errors import LensError

router = APIRouter(include_in_schema=False)

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
                       moment=moment, clock=clock, link=link)
    return env


def link(path: str, params: dict[str, Any], **changes: Any) -> str:
    """``path`` with ``params`` updated by ``changes`` as its query; empty and false values are left out."""
    from urllib.parse import quote, urlencode

    merged = {**params, **changes}
    query = urlencode({k: ("1" if v is True else v) for k, v in merged.items() if v not in (None, "", False)})
    return quote(path) + ("?" + query if query else "")


_env = None


def render(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    global _env
    if _env is None:
        _env = _templates()
    return HTMLResponse(_env.get_template(name).render(**context), status_code=status_code)


def _registry_state() -> tuple[list[dict[str, Any]], list[dict[str, Any]], data.Panel]:
    """(tabs, the banner's problems as /readyz lists them, the capabilities panel); a registry that cannot load is shown, not raised."""
    from llm_d_lens.serving.readiness import problems

    try:
        document = data.capabilities()
        found = problems()  # exactly what /readyz reports
    except LensError as exc:
        return [], [], data.failed(exc)
    return data.tabs(document), found, data.Panel(document)


@router.get("/", response_class=HTMLResponse)
async def overview_page(cluster: str | None = Query(None)) -> HTMLResponse:
    tabs, failures, registry = _registry_state()
    inventory = await data.inventory(cluster or None)
    clusters = data.cluster_choices()
    cards, bars, chart = [], [], None
    if inventory.ok:
        buckets = {v["profile_id"]: v for v in inventory.data["overview"]["vendors"]}
        for tab in tabs:
            bucket = buckets.get(tab["id"])
            cards.append({"tab": tab, "bucket": bucket})
            if bucket and bucket["allocatable"]:
                bars.append((tab["name"], bucket["allocated"], max(bucket["allocatable"] - bucket["allocated"], 0)))
        chart = capacity_bars(bars) if bars else None
    return render("overview.html", page="overview", tabs=tabs, failures=failures, registry=registry,
                  inventory=inventory, cards=cards, chart=chart, clusters=clusters,
                  cluster=cluster or (clusters[0]["name"] if clusters else None))


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


def _node_rows(overview: dict[str, Any], profile_id: str) -> list[dict[str, Any]]:
    rows = []
    for n in overview.get("nodes", []):
        for held in n["hardware"]:
            if held["profile_id"] != profile_id:
                continue
            status = "Ready" if n["ready"] else "NotReady"
            if n["cordoned"]:
                status += ", cordoned"
            rows.append({
                "name": n["name"], "status": status, "devices": held["devices"], "partitions": held["partitions"],
                "allocatable": held["allocatable"], "allocated": held["allocated"], "available": held["available"],
                "vram": held["vram"]["total_bytes"], "products": held["products"],
                "holders": [f"{h['holder']} ({h['count']})" for h in held.get("holders", [])],
                "notes": held.get("notes", []) + n.get("notes", []),
            })
    return rows


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
) -> HTMLResponse:
    tabs, failures, registry = _registry_state()
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

    inventory, drivers, benchmark, overlays = await asyncio.gather(
        data.inventory(), data.driver_status(profile["id"]), data.benchmark(profile["id"]), data.overlays(profile["id"]))
    if has_telemetry:
        request = data.TelemetryRequest(first, minutes, node, namespace)
        series, devices, pods = await asyncio.gather(
            data.series(profile["id"], request), data.devices(profile["id"], node), data.pods(profile["id"], namespace))
    else:
        series = devices = pods = data.Panel(code="TELEMETRY_NOT_DECLARED", status=422,
                                            message=f"{profile['id']} declares no telemetry.device_metric_sources")
    overview = inventory.data["overview"] if inventory.ok else None
    nodes = paginate(_node_rows(overview, profile["id"]) if overview else [], columns=NODE_COLUMNS, sort=sort,
                     descending=desc, query=q, page=page,
                     searchable=lambda r: " ".join([r["name"], r["status"], *r["products"], *r["holders"]]))
    bucket = next((v for v in overview["vendors"] if v["profile_id"] == profile["id"]), None) if overview else None
    device_page = paginate(_device_rows(devices.data) if devices.ok else [], columns=DEVICE_COLUMNS, sort=dsort,
                           descending=ddesc, query=dq, page=dpage,
                           searchable=lambda r: " ".join(str(r.get(k) or "") for k in ("name", "model", "holder")))
    charts = _charts(profile, series.data, first, minutes) if series.ok else []
    chart_nodes = sorted({d["node"] for d in devices.data.get("devices", []) if d["node"]}) if devices.ok else []
    params = {"q": q, "sort": nodes.sort, "desc": desc, "dq": dq, "dsort": device_page.sort, "ddesc": ddesc,
              "minutes": minutes, "quantity": first, "node": node or "", "namespace": namespace or ""}
    return render(
        "accelerator.html", page="accelerators", tabs=tabs, failures=failures, registry=registry, tab=tab,
        profile=profile, inventory=inventory, bucket=bucket, nodes=nodes, drivers=drivers,
        presence=data.presence(profile, overview), benchmark=benchmark, overlays=overlays, series=series,
        devices=devices, device_page=device_page, pods=pods, charts=charts, ranges=ranges, chart_nodes=chart_nodes,
        params=params, quantities=data.TITLES, has_telemetry=has_telemetry,
    )


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
