"""``lens telemetry``: accelerator devices and serving pods, in common units, from Prometheus.

``devices`` reads every hardware that declares device sources (or the ones named), attributes each
device to the pod holding it, and says why when it cannot. ``pods`` adds each serving pod's KV-cache
and request figures. ``queries`` prints the PromQL a refresh sends.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine
from enum import Enum
from typing import Any, TypeVar

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import ContextOption, DocumentOption, KubeconfigOption, OutputOption
from llm_d_lens.errors import LensError
from llm_d_lens.monitoring.errors import OptionInvalid
from llm_d_lens.terminal.output import DocumentFormat, OutputFormat, console, emit

app = commands.Group(no_args_is_help=True)
T = TypeVar("T")

PrometheusOption = commands.Option(None, "--prometheus", help="Prometheus base URL (default: env LENS_PROMETHEUS_URL).")
HardwareOption = commands.Option([], "--hardware", help="Hardware id or alias; repeat for several (default: all that declare device sources).")
ClusterOption = commands.Option(
    [], "--cluster", metavar="FILE",
    help="Kubernetes JSON (pods, ResourceClaims, ResourceSlices, nodes) for the allocation joins; 'kubectl' reads the current cluster (default: env LENS_CLUSTER_OBJECTS).",
)
ModeOption = commands.Option(None, "--mode", help="Access mode to join every node with, instead of the one its pods use.")
AtOption = commands.Option(None, "--at", help="Evaluation time: Unix seconds or ISO 8601 (default: now).")
TimeoutOption = commands.Option(None, "--timeout", help="Seconds per query (default: env LENS_PROMETHEUS_TIMEOUT, else 10).")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def parse_time(text: str | None) -> float | None:
    from llm_d_lens.prometheus.instants import parse_instant

    if text is None:
        return None
    try:
        return parse_instant(text)
    except ValueError as exc:
        raise OptionInvalid(
            f"--at {text!r}: give Unix seconds or an ISO 8601 time such as 2026-01-01T00:00:00Z ({text!r} {exc})"
        ) from None


def _settings(timeout: float | None) -> Any:
    from dataclasses import replace

    from llm_d_lens.monitoring.settings import TelemetrySettings

    settings = TelemetrySettings.from_env()
    if timeout is not None:
        if not 0 < timeout < math.inf:  # also false for NaN
            raise OptionInvalid(f"--timeout {timeout}: must be a finite number of seconds more than 0")
        settings = replace(settings, timeout=timeout)
    return settings


def _cluster(sources: list[str], settings: Any) -> Any:
    from llm_d_lens.monitoring.accelerator.k8s import load

    return load(sources or list(settings.cluster_objects))


@app.command("devices")
def devices(
    prometheus: str = PrometheusOption,
    hardware: list[str] = HardwareOption,
    node: str = commands.Option(None, "--node", help="Only this node's devices."),
    cluster: list[str] = ClusterOption,
    mode: str = ModeOption,
    at: str = AtOption,
    timeout: float = TimeoutOption,
    snapshot: str = commands.Option(None, "--snapshot", metavar="FILE", help="Read one exporter page from a file instead of Prometheus."),
    scrape: str = commands.Option(None, "--scrape", metavar="URL", help="Read one exporter page over HTTP instead of Prometheus (path defaults to the profile's scrape_path)."),
    per_part: bool = commands.Option(False, "--per-part", help="Send each part of a refresh as its own query instead of one per hardware (for an engine whose matching differs from Prometheus'; VictoriaMetrics needs it no longer)."),
    raw: bool = commands.Option(False, "--raw", help="Read the exporters' series even where Lens' recording rules (lens telemetry rules) recorded them."),
    output: OutputFormat = OutputOption,
) -> None:
    """Every accelerator in common units, with the pod it works for."""
    from llm_d_lens.monitoring.accelerator.service import select

    settings = _settings(timeout)
    selection = select(hardware)
    objects = _cluster(cluster, settings)
    if snapshot and scrape:
        raise OptionInvalid("give --snapshot or --scrape, not both")
    if snapshot or scrape:
        report = _run(_snapshot(snapshot, scrape, selection, settings, node, objects, mode))
    else:
        report = _run(_devices(settings.require_url(prometheus), selection, settings, parse_time(at), node, objects, mode,
                               not per_part, not raw))
    _warn(report.warnings, output)
    emit(report.to_dict(), output, lambda data: _devices_table(data, wide=output is OutputFormat.wide))


async def _devices(url: str, selection: Any, settings: Any, at: float | None, node: str | None, objects: Any, mode: str | None,
                   combined: bool = True, recorded: bool = True) -> Any:
    from llm_d_lens.monitoring.accelerator.service import read_devices
    from llm_d_lens.prometheus.client import PrometheusClient

    async with PrometheusClient(url, timeout=settings.timeout) as client:
        return await read_devices(client, selection, at=at, node=node, cluster=objects, mode=mode, combined=combined,
                                  recorded=recorded)


async def _snapshot(path: str | None, url: str | None, selection: Any, settings: Any, node: str | None, objects: Any, mode: str | None) -> Any:
    from pathlib import Path

    from llm_d_lens.monitoring.accelerator.service import snapshot_devices
    from llm_d_lens.monitoring.errors import SnapshotInvalid
    from llm_d_lens.monitoring.exposition import fetch_exposition, snapshot_url

    target = None
    if path is not None:
        try:
            text, source = Path(path).read_text(encoding="utf-8"), path
        except (OSError, UnicodeDecodeError) as exc:
            raise SnapshotInvalid(f"{path}: cannot read the exporter page ({exc})") from None
    else:
        assert url is not None
        paths = {s.profile.telemetry.scrape_path for s in selection if s.profile.telemetry and s.profile.telemetry.scrape_path}
        source = snapshot_url(url, next(iter(paths)) if len(paths) == 1 else None)
        text, target = await fetch_exposition(source, timeout=settings.timeout)
    return snapshot_devices(text, source, selection, target=target, node=node, cluster=objects, mode=mode)


@app.command("pods")
def pods(
    prometheus: str = PrometheusOption,
    hardware: list[str] = HardwareOption,
    namespace: str = commands.Option(None, "--namespace", "-n", help="Only pods in this namespace."),
    pod: str = commands.Option(None, "--pod", help="Only this pod."),
    cluster: list[str] = ClusterOption,
    mode: str = ModeOption,
    at: str = AtOption,
    timeout: float = TimeoutOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Serving pods: KV-cache usage, running and waiting requests, and their devices' figures."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.service import select

    settings = _settings(timeout)
    selection = select(hardware, require_sources=False)
    registry = get_registry()
    pod_profiles = [registry.get(h) for h in hardware] if hardware else registry.profiles()
    objects = _cluster(cluster, settings)
    report = _run(_pods(settings.require_url(prometheus), selection, pod_profiles, settings, parse_time(at), namespace, pod, objects, mode))
    _warn(report.warnings, output)
    emit(report.to_dict(), output, _pods_table)


async def _pods(url: str, selection: Any, pod_profiles: Any, settings: Any, at: float | None, namespace: str | None,
                pod: str | None, objects: Any, mode: str | None) -> Any:
    from llm_d_lens.monitoring.profiling.service import read_pod_report
    from llm_d_lens.prometheus.client import PrometheusClient

    async with PrometheusClient(url, timeout=settings.timeout) as client:
        return await read_pod_report(client, selection, pod_profiles, at=at, namespace=namespace, pod=pod, cluster=objects, mode=mode)


@app.command("queries")
def show_queries(
    hardware: list[str] = HardwareOption,
    dashboard: bool = commands.Option(False, "--dashboard", help="Self-contained PromQL per quantity (fold and relabel included), for dashboards and alerts."),
    combined: bool = commands.Option(False, "--combined", help="The one query per hardware a refresh sends: each metric read once, the inventory tagged lens_quantity, joined by or."),
    node: str = commands.Option(None, "--node", help="Only this node's devices (with --dashboard)."),
    output: OutputFormat = OutputOption,
) -> None:
    """The PromQL of one refresh per hardware: an inventory query and one per quantity (sent as one query, see --combined), or dashboard PromQL."""
    from llm_d_lens.monitoring.accelerator.queries import dashboard_queries
    from llm_d_lens.monitoring.accelerator.refresh import refresh_query
    from llm_d_lens.monitoring.accelerator.service import refresh_plan, select

    if node is not None and not dashboard:
        raise OptionInvalid("--node applies to --dashboard queries; a refresh reads every node and narrows the answer")
    if dashboard and combined:
        raise OptionInvalid("--combined shows the refresh's own query; dashboard queries stay one per quantity")
    selection = select(hardware)
    if dashboard:
        data = {s.profile.id: dashboard_queries(s.plan, node) for s in selection}
    else:
        parts = refresh_plan(selection)
        plans = {s.profile.id: s.plan for s in selection}
        data = {hw: {"refresh": refresh_query(plans[hw], targets="targets" in named).promql}
                for hw, named in parts.items()} if combined else parts

    def table(data: dict[str, dict[str, str]]) -> Any:
        from rich.table import Table

        kind = "dashboard queries" if dashboard else "queries per refresh" if combined else "parts of the refresh queries"
        t = Table(title=f"{sum(len(q) for q in data.values())} {kind}", show_lines=True)
        for column in ("HARDWARE", "READS", "PROMQL"):
            t.add_column(column, overflow="fold")
        for hw, named in data.items():
            for name, promql in named.items():
                t.add_row(hw, name, promql)
        return t

    emit(data, output, table)


@app.command("dashboard")
def grafana_dashboard(
    hardware: list[str] = HardwareOption,
    file: str = commands.Option(None, "--output-file", metavar="FILE", help="Write the dashboard here instead of printing it."),
    force: bool = commands.Option(False, "--force", help="Replace --output-file when it exists (never done otherwise)."),
    title: str = commands.Option("Lens accelerators", "--title", help="The dashboard's title."),
) -> None:
    """A Grafana dashboard JSON (one row per hardware, panels from the refresh's own PromQL), importable as-is."""
    import json

    from llm_d_lens.monitoring.accelerator.grafana import dashboard
    from llm_d_lens.monitoring.accelerator.service import select
    from llm_d_lens.monitoring.errors import DashboardExists

    text = json.dumps(dashboard(select(hardware), title=title), indent=2) + "\n"
    _print_or_write(text, file, force, DashboardExists)


def _print_or_write(text: str, file: str | None, force: bool, exists: type[LensError]) -> None:
    """``text`` on stdout, or into ``--output-file`` (never replacing a file without ``--force``)."""
    from pathlib import Path

    from llm_d_lens.files import write_file

    if file is None:
        commands.echo(text, nl=False)
        return
    path = Path(file)
    write_file(path, text.encode(), replace=force,
               exists=exists(f"{path}: already exists; give --force to replace it", details={"path": str(path)}))
    console(stderr=True).print(f"wrote {path}")


class RulesKind(str, Enum):
    rules = "rules"  # a plain Prometheus rules file (rule_files:)
    prometheusrule = "prometheusrule"  # a Prometheus Operator PrometheusRule object


@app.command("rules")
def rules(
    hardware: list[str] = HardwareOption,
    kind: RulesKind = commands.Option(RulesKind.rules, "--kind", help="rules: a Prometheus rules file; prometheusrule: a PrometheusRule object."),
    alerts: bool = commands.Option(True, "--alerts/--no-alerts", help="Include the alerting rules (default), or only the recording rules."),
    name: str = commands.Option("lens-accelerators", "--name", help="The PrometheusRule's name (with --kind prometheusrule)."),
    namespace: str = commands.Option(None, "--namespace", "-n", help="The PrometheusRule's namespace (with --kind prometheusrule; default: none, kubectl's)."),
    label: list[str] = commands.Option([], "--label", metavar="KEY=VALUE", help="A label on the PrometheusRule, e.g. the release your Prometheus' ruleSelector matches; repeat for several."),
    file: str = commands.Option(None, "--output-file", metavar="FILE", help="Write the rules here instead of printing them."),
    force: bool = commands.Option(False, "--force", help="Replace --output-file when it exists (never done otherwise)."),
    output: DocumentFormat = DocumentOption,
) -> None:
    """Recording rules (lens:accelerator_*, one group per hardware) and health alerts, from the profiles' PromQL."""
    import json
    import shlex

    from llm_d_lens.monitoring.accelerator import rules as generated
    from llm_d_lens.monitoring.accelerator.service import select
    from llm_d_lens.monitoring.errors import RulesFileExists

    if kind is RulesKind.rules and (namespace or label or name != "lens-accelerators"):
        raise OptionInvalid("--name, --namespace and --label describe a PrometheusRule: give them with --kind prometheusrule")
    labels = {}
    for text in label:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise OptionInvalid(f"--label {text!r}: give KEY=VALUE, e.g. release=kube-prometheus-stack")
        labels[key] = value
    selection = select(hardware)
    if kind is RulesKind.prometheusrule:
        document = generated.prometheus_rule(selection, name=name, namespace=namespace, labels=labels, alerts=alerts)
    else:
        document = generated.rules_file(selection, alerts=alerts)
    if output is DocumentFormat.json:
        text = json.dumps(document, indent=2) + "\n"
    else:
        argv = ["lens", "telemetry", "rules", *(f"--hardware={h}" for h in hardware), f"--kind={kind.value}"]
        if not alerts:
            argv.append("--no-alerts")
        if kind is RulesKind.prometheusrule:
            argv += [f"--name={name}", *([f"--namespace={namespace}"] if namespace else []), *(f"--label={t}" for t in label)]
        text = generated.to_yaml(document, shlex.join(argv))
    _print_or_write(text, file, force, RulesFileExists)


exporters_app = commands.Group(help="The exporters that publish device metrics: present on every node, scraped, installed.")
app.add_group(exporters_app, name="exporters")


@exporters_app.callback(invoke_without_command=True)
def exporters(
    ctx: commands.Context,
    hardware: list[str] = HardwareOption,
    prometheus: str = commands.Option(None, "--prometheus", help="Prometheus base URL to check scrape targets (default: env LENS_PROMETHEUS_URL; none: not checked)."),
    context: str = ContextOption,
    kubeconfig: str = KubeconfigOption,
    timeout: float = TimeoutOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Per hardware: the nodes that have it, whether its exporter runs on each, and whether Prometheus scrapes it."""
    if ctx.invoked_subcommand is not None:
        return
    from pathlib import Path

    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.exporters import exporters_status
    from llm_d_lens.monitoring.gpu_driver.cli import make_view

    settings = _settings(timeout)
    url = prometheus or settings.prometheus_url
    view = make_view(context, Path(kubeconfig) if kubeconfig else None)

    async def run() -> list[Any]:
        if not url:
            return await exporters_status(get_registry(), hardware, view, None)
        from llm_d_lens.prometheus.client import PrometheusClient

        async with PrometheusClient(url, timeout=settings.timeout) as client:
            return await exporters_status(get_registry(), hardware, view, client)

    rows = [s.to_dict() for s in _run(run())]
    emit(rows, output, _exporters_table)


def _exporters_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    t = Table(title=f"{len(rows)} exporters")
    for column in ("HARDWARE", "EXPORTER", "NODES", "MISSING ON", "SCRAPE"):
        t.add_column(column, overflow="fold", justify="right" if column == "NODES" else "left")
    for r in rows:
        exporter = f"{r['chart']} {r['version']}" if r["chart"] else f"(not Lens') {r['managed_by']}"
        scrapes = sorted({p["scrape"] for p in r["pods"]})
        missing = ", ".join(r["missing_nodes"]) or "-"
        t.add_row(r["hardware"], exporter, f"{len(r['nodes']) - len(r['missing_nodes'])}/{len(r['nodes'])}",
                  f"[red]{missing}[/red]" if r["missing_nodes"] else missing, ", ".join(scrapes) or "-")
    return t


@exporters_app.command("install")
def exporters_install(
    hardware: str = commands.Option(..., "--hardware", help="The hardware whose exporter to install."),
    option: list[str] = commands.Option([], "--option", help="KEY=VALUE helm value over the profile's (VALUE as JSON if it parses)."),
    dry_run: bool = commands.Option(False, "--dry-run", help="Print the exact commands and run none."),
    context: str = ContextOption,
    kubeconfig: str = KubeconfigOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Install the hardware's exporter chart, pinned and idempotent, exactly like a driver (lens driver install)."""
    from pathlib import Path

    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.exporters import install_exporter
    from llm_d_lens.monitoring.gpu_driver.cli import make_view, print_install
    from llm_d_lens.monitoring.gpu_driver.target import parse_option

    registry = get_registry()
    options = dict(parse_option(text) for text in option)
    view = make_view(context, Path(kubeconfig) if kubeconfig else None)
    from llm_d_lens.terminal.progress import progress

    with progress(f"installing the {hardware} exporter with helm", for_people=output.is_table and not dry_run):
        rows = [_run(install_exporter(registry, hardware, view, dry_run=dry_run, options=options)).to_dict()]
    if output.is_table:
        print_install(rows)
    else:
        emit(rows, output, lambda data: data)


def _warn(warnings: list[str], output: OutputFormat) -> None:
    if output.is_table:
        for warning in warnings:
            console(stderr=True).print(f"[yellow]warning:[/yellow] {warning}")


def _number(value: float | None, scale: float = 1.0, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}{suffix}"


def _energy(joules: float | None) -> str:
    if joules is None:
        return "-"
    for scale, unit in ((1e9, "GJ"), (1e6, "MJ"), (1e3, "kJ")):
        if abs(joules) >= scale:
            return f"{joules / scale:.2f} {unit}"
    return f"{joules:.1f} J"


def _who(attribution: dict[str, Any] | None) -> str:
    if not attribution:
        return "-"
    status = attribution["status"]
    if status == "attributed":
        return f"{attribution['namespace'] or '-'}/{attribution['pod']}"
    colour = {"idle": "dim", "unavailable": "red", "unattributed": "yellow", "partitioned": "cyan"}.get(status, "")
    reason = f": {attribution['reason']}" if attribution.get("reason") else ""
    return f"[{colour}]{status}{reason}[/{colour}]" if colour else f"{status}{reason}"


#: (header, right-aligned number, in the 80-column table); `-o wide` shows every column.
#: Units sit in the headers so the cells are bare numbers that line up.
_DEVICE_COLUMNS: tuple[tuple[str, bool, bool], ...] = (
    ("HARDWARE", False, False), ("NODE", False, True), ("DEVICE", False, True), ("UTIL %", True, True),
    ("MEM USED GiB", True, True), ("MEM TOTAL GiB", True, False), ("POWER W", True, True), ("ENERGY", True, False),
    ("TEMP °C", True, True), ("TENSOR %", True, False), ("CLOCK MHz", True, False), ("POD", False, True),
)


def _devices_table(report: dict[str, Any], wide: bool = False) -> Any:
    from rich.table import Table

    title = f"{len(report['devices'])} devices from {report['source']}"
    if report["queries"]:
        title += f" ({report['queries']} queries" + (", recorded series)" if report.get("recorded") else ")")
    t = Table(title=title, title_justify="left")
    several = len({d["hardware"] for d in report["devices"]}) > 1  # one hardware: its name is in the command line
    shown = [(h, numeric) for h, numeric, default in _DEVICE_COLUMNS if wide or default or (h == "HARDWARE" and several)]
    for header, numeric in shown:
        whole = numeric or header in ("HARDWARE", "NODE")
        t.add_column(header, justify="right" if numeric else "left", no_wrap=whole, overflow="fold")
    gib = 2**30
    for d in report["devices"]:
        device = d["device"] + (f"/{d['sub_device']}" if d["sub_device"] else "") + (f" ×{len(d['tiles'])}" if len(d["tiles"]) > 1 else "")
        if d["health"]["status"] == "problem":  # what is wrong is printed as a warning above the table
            device += " [red]![/red]"
        cells = {
            "HARDWARE": d["hardware"], "NODE": d["node"] or "-", "DEVICE": device,
            "UTIL %": _number(d["utilization_ratio"], 0.01, 0), "MEM USED GiB": _number(d["memory_used_bytes"], gib),
            "MEM TOTAL GiB": _number(d["memory_total_bytes"], gib), "POWER W": _number(d["power_watts"]),
            "ENERGY": _energy(d["energy_joules"]), "TEMP °C": _number(d["temperature_celsius"], digits=0),
            "TENSOR %": _number(d["tensor_activity_ratio"], 0.01, 0), "CLOCK MHz": _number(d["core_clock_hertz"], 1e6, 0),
            "POD": _who(d["attribution"]),
        }
        t.add_row(*(cells[header] for header, _ in shown))
    return t


def _pods_table(report: dict[str, Any], wide: bool = False) -> Any:
    from llm_d_lens.terminal.output import Column, columns_table

    columns = [Column("POD"), Column("MODEL"), Column("KV CACHE %", numeric=True), Column("RUNNING", numeric=True),
               Column("WAITING", numeric=True), Column("DEVICES"), Column("POWER W", numeric=True),
               Column("MEM USED GiB", numeric=True)]
    rows = []
    for p in report["pods"]:
        figures = p["devices"]
        if figures["status"] in (None, "attributed"):
            held = str(len(figures["devices"])) if figures["status"] else "-"
        else:
            held = f"[red]{figures['status']}[/red]: {figures['reason']}"
        rows.append([
            f"{p['namespace'] or '-'}/{p['pod'] or '-'}", p["model"] or "-",
            _number(p["kv_cache_usage_ratio"], 0.01, 1), _number(p["requests_running"], digits=0),
            _number(p["requests_waiting"], digits=0), held,
            _number(figures["power_watts"]), _number(figures["memory_used_bytes"], 2**30),
        ])
    return columns_table(columns, rows, wide=wide,
                         title=f"{len(report['pods'])} pods from {report['source']} ({report['queries']} queries)")
