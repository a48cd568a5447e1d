"""``lens hardware``: what is registered, what a name resolves to, and whether a profile is valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import OutputOption
from llm_d_lens.errors import LensError
from llm_d_lens.hardware.errors import ProfileInvalid, RegistrationConflict
from llm_d_lens.hardware.views import list_names, registered_rows, summary
from llm_d_lens.terminal.output import ListFormat, OutputFormat, emit, list_output_option
from llm_d_lens.terminal.printable import cell, printable

app = commands.Group(no_args_is_help=True)



def _failure_row(failure: Any) -> dict[str, Any]:
    """A plugin that is not registered, as a ``list`` row: named, with its distribution and why."""
    return {"id": failure.profile_id or failure.name, "status": failure.kind, "entry_point": failure.name,
            "group": failure.group, "distribution": failure.distribution, "reason": failure.reason}


@app.command("list")
def list_profiles(output: ListFormat = list_output_option()) -> None:
    """Every registered hardware profile, then every plugin that was skipped and why."""
    from llm_d_lens.hardware import notice
    from llm_d_lens.hardware.registry import get_registry

    registry = get_registry()
    rows = registered_rows(registry)
    failed = [_failure_row(f) for f in registry.failures]
    notice.shown = True

    def table(rows: list[dict[str, Any]], wide: bool = False) -> Any:
        from rich.console import Group
        from rich.text import Text

        from llm_d_lens.hardware.views import LIST_COLUMNS, list_cells, list_title
        from llm_d_lens.terminal.output import columns_table

        t = columns_table(LIST_COLUMNS, list_cells(rows), wide=wide, title=list_title(len(registry), registry.version_hash()))
        parts: list[Any] = [t]
        for f in failed:
            parts.append(Text(printable(f"✗ {f['id']} ({f['status']}) from {f['distribution']}: {f['reason']}"), style="red"))
        return Group(*parts)

    emit([*rows, *failed], output, table, names=list_names)


@app.command("network")
def network(output: ListFormat = list_output_option()) -> None:
    """Every network device profile (RDMA NICs, SR-IOV functions, DRA network drivers): a kind apart from
    the accelerators, counted per node by ``lens cluster inspect`` and paired with accelerators in renders."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.hardware.views import network_rows

    rows = network_rows(get_registry())

    def table(rows: list[dict[str, Any]], wide: bool = False) -> Any:
        from llm_d_lens.terminal.output import Column, columns_table

        columns = [Column("ID"), Column("PAIRING"), Column("ADVERTISED AS"), Column("BENCHMARK RESOURCE", wide_only=True),
                   Column("FROM", wide_only=True)]
        cells = [[cell(r["id"]), cell(r["pairing"]), cell(", ".join(r["resource_names"] + r["resource_patterns"]
                                                                        + r["device_classes"] + r["dra_drivers"])),
                  cell(r["benchmark_resource"]), cell(", ".join(r["from"]))] for r in rows]
        return columns_table(columns, cells, wide=wide, title=f"{len(rows)} network device profiles")

    emit(rows, output, table, names=lambda rows: [r["id"] for r in rows])


@app.command("show")
def show(key: str = commands.Argument(..., metavar="ID_OR_ALIAS"), output: OutputFormat = OutputOption) -> None:
    """One profile, by id or any alias (accelerator key, benchmark profile), and the provider serving it.

    ``-o json`` is the profile plus ``served_by``: the provider's class, its status (serving,
    default, failed), where it comes from, and any rival provider entry point refused for this id.
    """
    from llm_d_lens.hardware.errors import PluginLoadFailed
    from llm_d_lens.hardware.registry import get_registry

    registry = get_registry()
    profile = registry.get(key)
    try:
        registry.provider(profile.id)  # import it now: "serving" must mean it loaded
    except PluginLoadFailed:
        pass  # reported as status "failed" with the reason
    served = registry.provider_status(profile.id)
    data = {**profile.to_data(), "served_by": served}

    def table(data: dict[str, Any]) -> Any:
        from rich.table import Table

        t = Table(title=f"{profile.display_name} ({profile.id})", show_header=False)
        t.add_column("field", style="bold")
        t.add_column("value")
        for field, value in summary(profile, registry.origins(profile.id)).items():
            shown = ", ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, dict) else (
                ", ".join(map(str, value)) if isinstance(value, list) else str(value))
            t.add_row(field, shown)
        t.add_row("aliases", ", ".join(profile.aliases))
        t.add_row("device classes", ", ".join(profile.device_classes) or "-")
        t.add_row("resource prefixes", ", ".join(profile.resource_prefixes) or "-")
        t.add_row("node labels", ", ".join(f"{k}={v}" for k, v in profile.node_label_selector.items()) or "-")
        t.add_row("overlay root", profile.deployment.overlay_root)
        status = "" if served["status"] == "serving" else f" ({served['status']})"
        t.add_row("provider", f"{served['provider'] or '-'}{status} from {served['from']}")
        for refused in served["refused"]:
            t.add_row("refused provider", f"{refused['distribution']}: {refused['reason']}")
        if profile.driver:
            t.add_row("drivers", ", ".join(f"{m}: {d.manifest_ref} {d.chart_version or ''}".strip()
                                          for m, d in profile.driver.modes.items()))
        return t

    emit(data, output, table)


@app.command("validate")
def validate(
    files: list[Path] = commands.Argument(..., metavar="FILE...", help="Profile JSON files."),
    output: OutputFormat = OutputOption,
) -> None:
    """Check profile files against the contract and the registered hardware; every error at once.

    Warnings (valid but probably wrong: an unknown benchmark profile, an arch that is not the
    overlay directory) are printed under each file and carried in ``-o json``; they never fail it.
    """
    from llm_d_lens.hardware.benchmark_profiles import known_profiles

    together: list[Any] = []  # the valid profiles of earlier files: a plugin's profiles must not clash either
    known = known_profiles()
    results = [_validate_one(path, together, known) for path in files]

    def table(results: list[dict[str, Any]]) -> Any:
        from rich.console import Group
        from rich.text import Text

        parts = []
        for r in results:
            if r["valid"]:
                parts.append(Text(f"✓ {r['file']}: profile {r['id']!r} is valid", style="green"))
            else:
                parts.append(Text(f"✗ {r['file']}: {len(r['issues'])} problem(s)", style="red bold"))
                for issue in r["issues"]:
                    value = f" (value: {issue['shown']})" if "shown" in issue else ""
                    parts.append(Text(f"    {issue['path']}: {issue['message']}{value}"))
            for warning in r["warnings"]:
                value = f" (value: {warning['shown']})" if "shown" in warning else ""
                parts.append(Text(f"    warning: {warning['path']}: {warning['message']}{value}", style="yellow"))
        return Group(*parts)

    emit(results, output, table)
    if not all(r["valid"] for r in results):
        raise commands.Exit(1)


def _validate_one(path: Path, together: list[Any], known: Any) -> dict[str, Any]:
    from llm_d_lens.hardware.errors import render_value
    from llm_d_lens.hardware.loader import load_profile_file

    def issue_dict(issue: Any) -> dict[str, Any]:
        out = issue.to_dict()
        if issue.has_value:
            out["shown"] = render_value(issue.value)
        return out

    from llm_d_lens.hardware import rules

    try:
        profile = load_profile_file(path)
    except ProfileInvalid as exc:
        return {"file": str(path), "valid": False, "id": exc.profile_id, "issues": [issue_dict(i) for i in exc.issues],
                "warnings": []}
    warnings = [issue_dict(w) for w in rules.advise(profile, known)]
    conflicts = _conflicts_with_registered(profile, path, together)
    if conflicts:
        issues = [{"path": path_of, "message": c.message, "value": c.details.get("value")} for path_of, c in conflicts]
        return {"file": str(path), "valid": False, "id": profile.id, "issues": issues, "warnings": warnings}
    return {"file": str(path), "valid": True, "id": profile.id, "issues": [], "warnings": warnings}


def _conflicts_with_registered(profile: Any, path: Path, together: list[Any]) -> list[tuple[str, RegistrationConflict]]:
    """Every collision with installed hardware or with the files checked before it, each with its JSON path.

    A new version of installed hardware never collides with its old self; once it passes, it
    joins ``together`` so the next files are checked against it as well.
    """
    from llm_d_lens.hardware.conflicts import FIELD_PATHS, all_clashes
    from llm_d_lens.hardware.discovery import DiscoveredProfile, canonical
    from llm_d_lens.hardware.errors import ProfileOrigin
    from llm_d_lens.hardware.registry import get_registry

    try:
        installed = get_registry()
    except LensError:
        installed = None
    replaced = {profile.id, *(entry.profile.id for entry in together)}
    others = [
        DiscoveredProfile(p, canonical(p.to_data()), installed.origins(p.id))
        for p in (installed.profiles() if installed is not None else []) if p.id not in replaced
    ]
    candidate = DiscoveredProfile(profile, canonical(profile.to_data()), [ProfileOrigin("file", str(path))])
    from llm_d_lens.hardware.conflicts import Clash

    found = []
    same_id = [Clash("id", profile.id, entry, candidate) for entry in together
               if entry.profile.id == profile.id and entry.canonical != candidate.canonical][:1]
    for clash in [*same_id, *all_clashes(candidate, [*others, *together])]:
        value = list(clash.value) if isinstance(clash.value, tuple) else clash.value
        owner = clash.first
        conflict = RegistrationConflict(clash.field, value, (owner.profile.id, ", ".join(map(str, owner.origins))),
                                        (profile.id, str(path)))
        found.append((FIELD_PATHS[clash.field], conflict))
    if not found:
        together.append(candidate)
    return found


@app.command("resolve")
def resolve(
    device_class: list[str] = commands.Option([], "--device-class", help="A DRA DeviceClass name."),
    resource: list[str] = commands.Option([], "--resource", help="An extended resource name."),
    label: list[str] = commands.Option([], "--label", help="KEY=VALUE; repeat to give a label set matched together."),
    key: list[str] = commands.Option([], "--key", help="An id, accelerator key or benchmark profile (explicit: unknown is an error)."),
    aic_system: list[str] = commands.Option([], "--aic-system", help="An AIC system name."),
    dra_driver: list[str] = commands.Option([], "--dra-driver", help="A ResourceSlice driver name."),
    output: OutputFormat = OutputOption,
) -> None:
    """What a device class, resource, label set, key or AIC system name resolves to."""
    from llm_d_lens.hardware.resolution import Resolver, resolve_queries

    results = resolve_queries(Resolver(), keys=key, device_classes=device_class, resources=resource, dra_drivers=dra_driver,
                              labels=label, parse_labels=_parse_labels, aic_systems=aic_system)
    if not results:
        raise commands.BadParameter("give at least one of --device-class, --resource, --label, --key, --aic-system, --dra-driver")

    def table(results: list[dict[str, Any]], wide: bool = False) -> Any:
        from llm_d_lens.hardware.views import RESOLVE_COLUMNS, resolve_cells
        from llm_d_lens.terminal.output import columns_table

        return columns_table(RESOLVE_COLUMNS, resolve_cells(results), wide=wide)

    emit(results, output, table)


def _parse_labels(items: list[str]) -> dict[str, str]:
    from llm_d_lens.hardware.resolution import split_labels

    labels, malformed = split_labels(items)
    if malformed:
        raise commands.BadParameter(f"--label {malformed[0]!r}: expected KEY=VALUE")
    return labels


@app.command("new")
def new(
    profile_id: str = commands.Argument(..., metavar="ID", help="The profile id (also the entry-point name)."),
    vendor: str = commands.Option(..., "--vendor", help="Vendor name, lower-case (the llm-d accelerator-vendor label)."),
    display_name: str | None = commands.Option(None, "--display-name", help="Human name (default: from ID)."),
    request_model: str = commands.Option("extended-resource", "--request-model", help="extended-resource or dra."),
    resource_name: str | None = commands.Option(None, "--resource-name", help="Extended resource, e.g. vendor.com/npu."),
    device_class: str | None = commands.Option(None, "--device-class", help="DRA DeviceClass, e.g. npu.vendor.com."),
    node_label: str = commands.Option(..., "--node-label", help="KEY=VALUE marking nodes with the hardware."),
    provider: bool = commands.Option(False, "--provider", help="Also write a provider stub and its entry point."),
    directory: Path | None = commands.Option(None, "--dir", help="Where to write (default: ./ID-lens); must be new or empty."),
    output: OutputFormat = OutputOption,
) -> None:
    """Write an installable external plugin package for a new hardware (profile, entry points, tests)."""
    from llm_d_lens.hardware.scaffold import ScaffoldRequest, pip_path, write

    if request_model not in ("extended-resource", "dra"):
        raise commands.BadParameter(f"--request-model {request_model!r}: expected extended-resource or dra")
    [(key, value)] = _parse_labels([node_label]).items()
    req = ScaffoldRequest(profile_id, vendor, display_name or profile_id.replace("-", " ").title(), request_model,
                          resource_name, device_class, (key, value), provider, directory or Path(f"{profile_id}-lens"))
    written = write(req)
    result = {"directory": str(req.directory), "distribution": req.distribution, "files": [str(p) for p in written],
              "install": f"pip install {pip_path(req.directory)}"}

    def table(result: dict[str, Any]) -> Any:
        from rich.text import Text

        lines = [f"wrote {result['distribution']} in {result['directory']}:"] + [f"  {f}" for f in result["files"]]
        where = pip_path(Path(result["directory"]))
        lines.append(f"next: pip install {where} && lens hardware show {profile_id} && pytest {where}")
        return Text("\n".join(lines))

    emit(result, output, table)


def _provider_cell(row: dict[str, Any]) -> str:
    """The provider that serves a hardware, marked when it failed to import or is the default one."""
    if row["provider_status"] == "failed":
        return "[red]failed[/red]"
    if row["provider_status"] == "default":
        return f"{row['provider']} (default)"
    return str(row["provider"])


@app.command("doctor")
def doctor(output: OutputFormat = OutputOption) -> None:
    """Load every plugin afresh (no cache), import every provider, and report what failed and why.

    Exits 1 while any plugin failure or conflict exists, so it can gate a deployment.
    """
    from llm_d_lens.hardware.doctor import doctor_report

    report = doctor_report()

    def table(report: dict[str, Any]) -> Any:
        from rich.console import Group
        from rich.text import Text

        from llm_d_lens.terminal.output import Column, columns_table

        parts: list[Any] = []
        columns = [Column("ID"), Column("PROVIDER"), Column("PROVIDER FROM"), Column("PROFILE FROM")]
        t = columns_table(columns, [[cell(p["id"]), _provider_cell(p), cell(p["provider_from"] or ""),
                                     "\n".join(cell(o) for o in p["origins"])]
                                    for p in report["profiles"]], title=f"{len(report['profiles'])} hardware profiles registered")
        parts.append(t)
        for d in report["distributions"]:
            serves = ", ".join(f"{s['id']} ({s['provider']})" for s in d["serves"]) or "-"
            parts.append(Text(printable(f"{d['distribution']}: hardware {', '.join(d['profiles']) or '-'}; "
                                        f"serves providers for {serves}")))
            for r in d["refused"]:
                parts.append(Text(printable(f"    refused provider {r['id']!r}: {r['reason']}"), style="yellow"))
        for f in report["failures"]:
            parts.append(Text(printable(f"✗ {f['kind']}: {f['name']!r} from {f['distribution']}: {f['reason']}"), style="red"))
        for s in report["skipped"]:
            parts.append(Text(printable(f"- skipped {s['name']!r} from {s['distribution']}: {s['reason']}"), style="yellow"))
        if report["ok"]:
            parts.append(Text("✓ no problems found", style="green bold"))
        return Group(*parts)

    emit(report, output, table)
    if not report["ok"]:
        raise commands.Exit(1)
