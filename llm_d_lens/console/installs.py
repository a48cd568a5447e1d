"""The console's driver and exporter install: status → dry-run plan → confirmed apply, with the actions' safety.

``/install?hardware=ID`` reads the hardware's driver modes and exporter from the served cluster
and shows, for the component chosen (a driver mode or the exporter), the dry-run plan: the release,
chart, pinned version, namespace and values, the exact ``helm``/``kubectl`` command and the reads
that decide whether it is needed. A plan runs nothing and is the drivers' own dry run
(:func:`~llm_d_lens.monitoring.gpu_driver.install.install` with ``dry_run``), the one the CLI's
``--dry-run`` prints and the API's ``dry_run`` answers.

The apply is an action of console/actions.py: on only with ``LENS_CONSOLE_ACTIONS`` and
``LENS_API_TOKEN``, signed in, a one-time form token, the confirm box, a cluster this server serves,
one audit line whatever happens. It plans again and refuses when the plan's hash is not the one the
person saw, then installs through a runner that lets through only the commands that plan showed
(and reads): a command the person was not shown (a provider's install-time values, a changed
profile) is refused before it runs. kubectl and helm run with the server's own credentials, the
same runner as every action (see docs/console.md, "Whose credentials").
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from llm_d_lens.console import actions
from llm_d_lens.console.actions import ActionRefused
from llm_d_lens.errors import LensError

router = APIRouter(include_in_schema=False)

COMPONENTS = ("driver", "exporter")
#: commands that only read: let through whatever the plan showed (a provider may read more to decide)
READS = (("kubectl", "get"), ("kubectl", "version"), ("helm", "list"), ("helm", "get"))


class ShownOnly:
    """A runner that runs the commands a plan showed, and reads; anything else is refused before it runs.

    ``ran`` lists the shown commands that ran, in order (what the outcome and the audit line report).
    """

    def __init__(self, runner: Any, shown: Sequence[Sequence[str]]):
        self.runner = runner
        self.shown = [list(argv) for argv in shown]
        self.ran: list[list[str]] = []

    def _allowed(self, argv: Sequence[str]) -> None:
        argv = list(argv)
        if tuple(argv[:2]) in READS:
            return
        if argv not in self.shown:
            from llm_d_lens.runner import format_command, redact

            raise ActionRefused("COMMAND_NOT_SHOWN", f"the install asked to run {format_command(redact(argv))[:300]}, "
                                "which the plan did not show: refused before it ran; plan again", 409)
        self.ran.append(argv)

    def which(self, binary: str) -> str | None:
        return self.runner.which(binary)

    def run(self, argv: Sequence[str], **kwargs: Any) -> Any:
        self._allowed(argv)
        return self.runner.run(argv, **kwargs)

    async def arun(self, argv: Sequence[str], **kwargs: Any) -> Any:
        self._allowed(argv)
        return await self.runner.arun(argv, **kwargs)

    def stream(self, argv: Sequence[str], **kwargs: Any) -> Any:
        self._allowed(argv)
        return self.runner.stream(argv, **kwargs)


def install_params(values: Mapping[str, str]) -> dict[str, Any]:
    """hardware (a registered id or alias, given back as its id), component, mode, cluster; each checked, coded."""
    from llm_d_lens.hardware.registry import get_registry

    hardware = (values.get("hardware") or "").strip()
    if not hardware:
        raise ActionRefused("REQUEST_INVALID", "name a hardware (hardware=ID)", 422)
    if len(hardware) > 100:
        raise ActionRefused("REQUEST_INVALID", f"hardware {hardware[:40]!r}…: longer than 100 characters", 422)
    profile = get_registry().get(hardware)
    component = (values.get("component") or "driver").strip()
    if component not in COMPONENTS:
        raise ActionRefused("REQUEST_INVALID", f"component {component[:40]!r}: give driver or exporter", 422)
    mode = (values.get("mode") or "").strip() or None
    if mode is not None and len(mode) > 40:
        raise ActionRefused("REQUEST_INVALID", f"mode {mode[:40]!r}…: longer than 40 characters", 422)
    cluster = (values.get("cluster") or "").strip() or None
    if cluster is not None and len(cluster) > 100:
        raise ActionRefused("REQUEST_INVALID", f"cluster {cluster[:40]!r}…: longer than 100 characters", 422)
    return {"hardware": profile.id, "component": component, "mode": mode if component == "driver" else None,
            "cluster": cluster}


async def plan(params: Mapping[str, Any], runner: Any = None) -> Any:
    """The dry run of the component's install: what would run. Its view lets reads through to ``runner`` (a
    provider may read to decide) and refuses every write; without a runner nothing reaches a cluster."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView

    registry = get_registry()
    view = ClusterView(ShownOnly(runner or _NoCluster(), []), cluster_id=_cluster_name(params.get("cluster")))
    if params["component"] == "exporter":
        from llm_d_lens.monitoring.accelerator.exporters import install_exporter

        return await install_exporter(registry, params["hardware"], view, dry_run=True)
    from llm_d_lens.monitoring.gpu_driver import service

    return await service.install_one(registry, params["hardware"], params["mode"], view, dry_run=True)


class _NoCluster:
    """A plan's runner off a live cluster: a read is refused as the not-live state it is."""

    def _refuse(self, argv: Sequence[str], *_: Any, **__: Any) -> Any:
        raise ActionRefused("LIVE_CLUSTER_NEEDED", f"the plan needs {' '.join(argv)[:200]} on a live cluster; this "
                            "server reads the demo or a snapshot", 409)

    run = stream = _refuse

    async def arun(self, argv: Sequence[str], *_: Any, **__: Any) -> Any:
        self._refuse(argv)

    def which(self, binary: str) -> str | None:
        return None


def every_command(result: Any) -> list[list[str]]:
    """The plan's commands that change the cluster: its prerequisites' first, in their order, then its own."""
    return [list(argv) for step in (*result.prerequisites, result) for argv in step.commands]


def digest(result: Any) -> str:
    """sha256 of what the plan shows (targets, commands, checks) and of the exact argv it would run."""
    shown = json.dumps([result.to_dict(), every_command(result)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(shown.encode()).hexdigest()


def shown_plan(result: Any) -> dict[str, Any]:
    """What the plan panel shows: the plan, its hash, and each step's commands and checks shell-quoted (secrets redacted)."""
    from llm_d_lens.runner import format_command, redact

    steps = [{"commands": [format_command(redact(argv)) for argv in step.commands],
              "checks": [format_command(redact(argv)) for argv in step.checks]} for step in (*result.prerequisites, result)]
    return {"result": result.to_dict(), "digest": digest(result), "commands": every_command(result), "steps": steps}


def _cluster_name(cluster: str | None) -> str:
    from llm_d_lens.cluster import served

    return cluster or served.served_clusters().clusters[0].name


async def status(params: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(driver modes, exporters, the runner) of the hardware on the served cluster: two console panels (a neutral
    note off a live cluster, and no runner), read through the runner the actions use."""
    from llm_d_lens.console import data
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.gpu_driver import service
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView

    try:
        runner = actions.cluster_target(params.get("cluster"))
    except ActionRefused as exc:
        if exc.code == "LIVE_CLUSTER_NEEDED":
            note = data.not_configured(exc.code, "driver and exporter status read a live cluster; " + exc.message.split("; ")[0] + ".",
                                       "start the server with LENS_KUBE_CONTEXT naming a live cluster", status=409)
            return note, note, None
        return data.failed(exc), data.failed(exc), None
    except LensError as exc:
        return data.failed(exc), data.failed(exc), None
    view = ClusterView(runner, cluster_id=_cluster_name(params.get("cluster")))
    registry = get_registry()

    async def drivers() -> Any:
        return [s.to_dict() for s in await service.status(registry, [params["hardware"]], None, view)]

    async def exporters() -> Any:
        from llm_d_lens.monitoring.accelerator.exporters import exporters_status

        return [s.to_dict() for s in await exporters_status(registry, [params["hardware"]], view, None)]

    return await data.guarded(drivers), await data.guarded(exporters), runner


def _components(hardware: str) -> list[dict[str, Any]]:
    """What the hardware lets Lens install: each driver mode, and the exporter, with why not when it cannot."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.gpu_driver.target import unmanaged_reason

    profile = get_registry().get(hardware)
    out = [{"component": "driver", "mode": mode, "label": f"driver, mode {mode}",
            "why_not": unmanaged_reason(profile, mode) if profile.driver is not None else "this hardware declares no driver"}
           for mode in profile.access_modes]
    exporter = profile.telemetry.exporter if profile.telemetry else None
    if exporter is not None:
        out.append({"component": "exporter", "mode": None, "label": "exporter",
                    "why_not": None if exporter.release is not None else exporter.unmanaged_reason})
    return out


def _page(request: Request, status_code: int = 200, **context: Any) -> HTMLResponse:
    from llm_d_lens.console.router import frame, render as render_page
    from llm_d_lens.hardware.registry import get_registry

    shown = frame()
    state = actions.state(request)
    here = request.url.path + ("?" + request.url.query if request.url.query and request.method == "GET" else "")
    response = render_page("install.html", status_code=status_code, page="install", tabs=shown.tabs,
                           failures=shown.failures, registry=shown.registry, actions=state,
                           csrf=actions.issue(state["session"]), here=here if request.method == "GET" else "/install",
                           hardware_choices=[p.id for p in get_registry().profiles()], **context)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/install", response_class=HTMLResponse)
async def install_page(request: Request) -> Response:
    """The hardware's driver and exporter status, and the dry-run plan of the component chosen."""
    from llm_d_lens.console import data

    values = dict(request.query_params)
    context: dict[str, Any] = {"params": values, "drivers": None, "exporters": None, "planned": None, "problem": None,
                               "components": [], "outcome": None}
    if not values.get("hardware"):
        return _page(request, **context)
    try:
        params = install_params(values)
        context.update(params=params, components=_components(params["hardware"]))
        context["drivers"], context["exporters"], runner = await status(params)
        if values.get("component"):
            result = await plan(params, runner)
            context["planned"] = shown_plan(result)
    except LensError as exc:
        context["problem"] = data.failed(exc)
        return _page(request, exc.http_status, **context)
    return _page(request, **context)


@router.post("/install/apply", response_class=HTMLResponse)
async def install_apply(request: Request) -> Response:
    """The plan the person confirmed, planned again and compared by hash, run through :class:`ShownOnly`."""
    from llm_d_lens.console import data
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
    from llm_d_lens.runner import format_command, redact

    session = None
    params: dict[str, Any] = {}
    target: dict[str, Any] = {}
    guarded: ShownOnly | None = None
    action = "install.apply"
    try:
        form = await actions.read_form(request)
        target = {k: (form.get(k) or "")[:100] for k in ("hardware", "component", "mode", "cluster") if form.get(k)}
        params = install_params(form)
        action = f"install.{params['component']}"
        target = {k: v for k, v in params.items() if v}
        session = actions.guard(request, form)
        if form.get("confirm") != "yes":
            raise ActionRefused("CONFIRM_NEEDED", "an install needs its confirm box ticked: nothing was run", 422)
        runner = actions.cluster_target(params["cluster"])
        planned = await plan(params, runner)
        shown = form.get("digest", "")
        now = digest(planned)
        if not hmac.compare_digest(shown.encode(), now.encode()):
            raise ActionRefused("PLAN_CHANGED", f"the plan's hash is {now[:16]}…, not the {shown[:16] or 'missing'}… that "
                                "was shown: nothing was run; look at the new plan", 409)
        guarded = ShownOnly(runner, every_command(planned))
        view = ClusterView(guarded, cluster_id=_cluster_name(params["cluster"]))
        registry = get_registry()
        if params["component"] == "exporter":
            from llm_d_lens.monitoring.accelerator.exporters import install_exporter

            result = await install_exporter(registry, params["hardware"], view, dry_run=False)
        else:
            from llm_d_lens.monitoring.gpu_driver import service

            result = await service.install_one(registry, params["hardware"], params["mode"], view, dry_run=False)
    except LensError as exc:
        ran = [format_command(redact(argv)) for argv in (guarded.ran if guarded else [])]
        actions.audit(request, session, action, {**target, "ran": ran}, f"refused: {exc.code}", exc.message)
        context = {"params": params or {"hardware": target.get("hardware", "")}, "drivers": None, "exporters": None,
                   "planned": None, "problem": data.failed(exc), "components": [], "outcome": None, "ran": ran}
        return _page(request, exc.http_status, **context)
    ran = [format_command(redact(argv)) for argv in guarded.ran]
    actions.audit(request, session, action, {**target, "digest": now, "ran": ran}, "done" if ran else "nothing to do",
                  "; ".join(ran) or result.message)
    drivers, exporters, _ = await status(params)
    return _page(request, params=params, drivers=drivers, exporters=exporters, planned=None, problem=None,
                 components=_components(params["hardware"]), outcome={"result": result.to_dict(), "ran": ran})
