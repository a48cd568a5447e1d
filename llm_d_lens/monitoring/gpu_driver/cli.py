"""``lens driver``: plan, install and check the device stacks registered hardware needs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import ClusterNameOption, ClustersFileOption, ContextOption, KubeconfigOption, OutputOption
from llm_d_lens.terminal.output import OutputFormat, emit

app = commands.Group(no_args_is_help=True)



def make_view(context: str | None, kubeconfig: Path | None) -> Any:
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
    from llm_d_lens.runner import CommandRunner

    return ClusterView(CommandRunner(context=context, kubeconfig=kubeconfig))


def named_view(cluster: str | None, clusters_file: Path | None, context: str | None, kubeconfig: Path | None) -> Any:
    """The view of ``--cluster NAME`` (or of --context/--kubeconfig); its providers receive the name as cluster_id."""
    from llm_d_lens.cluster.options import live_target

    target = live_target(cluster, clusters_file, context, kubeconfig, why="the driver commands")
    view = make_view(target.context, Path(target.kubeconfig) if target.kubeconfig else None)
    view.cluster_id = target.cluster_id
    return view


def registry() -> Any:
    from llm_d_lens.hardware.registry import get_registry

    return get_registry()


def _claims(claims_file: Path | None, device_class: list[str], resource: list[str], dra_driver: list[str],
            hardware: list[str], external: list[str]) -> tuple[list[Any], list[str]]:
    from llm_d_lens.monitoring.gpu_driver import service

    data = service.read_claims_file(claims_file) if claims_file is not None else None
    classes, declared = service.gather_classes(
        claims_data=data,
        flags={"device_class": device_class, "resource": resource, "dra_driver": dra_driver, "hardware": hardware},
    )
    return classes, [*declared, *external]


ClaimsFile = commands.Argument(None, metavar="[CLAIMS_FILE]", help="YAML/JSON: classes with their claims, and external names.")
DeviceClassOpt = commands.Option([], "--device-class", help="A DRA DeviceClass a class claims (each flag is its own class).")
ResourceOpt = commands.Option([], "--resource", help="An extended resource a class claims.")
DraDriverOpt = commands.Option([], "--dra-driver", help="A DRA driver name a class claims.")
ExternalOpt = commands.Option([], "--external", help="A device class, resource or driver provided outside Lens (e.g. dra.net).")
FromClusterOpt = commands.Option(False, "--from-cluster", help="Also read the claims of the workloads running on the cluster.")


@app.command("plan")
def plan_command(
    claims_file: Path | None = ClaimsFile,
    device_class: list[str] = DeviceClassOpt,
    resource: list[str] = ResourceOpt,
    dra_driver: list[str] = DraDriverOpt,
    hardware: list[str] = commands.Option([], "--hardware", help="ID or ID:MODE a class claims directly."),
    external: list[str] = ExternalOpt,
    from_cluster: bool = FromClusterOpt,
    offline: bool = commands.Option(False, "--offline", help="Do not read the cluster: no versions, no current releases."),
    context: str | None = ContextOption,
    kubeconfig: Path | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Which drivers the claimed devices need; refuses unsupported or impossible claims. Changes nothing."""
    from llm_d_lens.monitoring.gpu_driver import service

    classes, declared = _claims(claims_file, device_class, resource, dra_driver, hardware, external)
    if offline and from_cluster:
        raise commands.BadParameter("--from-cluster reads the cluster; it cannot be combined with --offline")
    view = None if offline else named_view(cluster, clusters_file, context, kubeconfig)
    built = asyncio.run(service.plan(registry(), classes, declared, view, from_cluster=from_cluster))
    emit(built.to_dict(), output, plan_table)


def plan_table(data: dict[str, Any], wide: bool = False) -> Any:
    from rich.console import Group
    from rich.text import Text

    from llm_d_lens.terminal.output import Column, columns_table

    columns = [Column("HARDWARE"), Column("MODE"), Column("ACTION"), Column("CHART"), Column("VERSION"),
               Column("RELEASE", wide_only=True), Column("FOR CLASSES", wide_only=True)]
    rows: list[list[Any]] = []
    preconditions: list[str] = []
    for s in [each for main in data["steps"] for each in (*main["prerequisites"], main)]:
        where = f"{s['namespace']}/{s['release']}" if s["release"] else "-"
        version = s["version"] if not s["current_version"] else f"{s['current_version']} → {s['version']}"
        mode = s["mode"] + (" (prerequisite)" if s["prerequisite"] else "")
        rows.append([s["hardware"], mode, s["action"], s["chart"], version or "-", where, ", ".join(s["classes"])])
        preconditions += [f"{s['chart']} needs {need}" for need in s["preconditions"]]
    title = "install steps" + ("" if data["cluster_checked"] else " (cluster not read)")
    parts: list[Any] = [columns_table(columns, rows, wide=wide, title=title)]
    parts += [Text(f"• precondition, not installed by Lens: {line}", style="yellow") for line in dict.fromkeys(preconditions)]
    for p in data["provided"]:
        parts.append(Text(f"• {p['hardware']} {p['mode']}: not installed by Lens ({p['reason']})"))
    if data["external"]:
        parts.append(Text(f"• external: {', '.join(data['external'])}"))
    for n in data["not_needed"]:
        parts.append(Text(f"• {n['namespace']}/{n['release']} ({n['hardware']} {n['mode']}): {n['note']}", style="yellow"))
    return Group(*parts)


@app.command("status")
def status_command(
    hardware: list[str] = commands.Option([], "--hardware", help="Hardware id or alias (default: every one with a driver)."),
    mode: str | None = commands.Option(None, "--mode", help="One access mode (default: all)."),
    context: str | None = ContextOption,
    kubeconfig: Path | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    output: OutputFormat = OutputOption,
) -> None:
    """The DaemonSets each driver mode runs as: desired/ready, version, hardware nodes without it."""
    from llm_d_lens.monitoring.gpu_driver import service

    found = asyncio.run(service.status(registry(), hardware, mode, named_view(cluster, clusters_file, context, kubeconfig)))
    emit([s.to_dict() for s in found], output, status_table)


def status_table(rows: list[dict[str, Any]], wide: bool = False) -> Any:
    from llm_d_lens.terminal.output import Column, columns_table

    columns = [Column("HARDWARE"), Column("MODE"), Column("STATE"), Column("READY", numeric=True), Column("VERSION"),
               Column("DAEMONSETS", wide_only=True), Column("NODES WITHOUT IT")]
    style = {"ready": "green", "degraded": "yellow", "not-installed": "red", "no-matchers": "dim"}
    shown = [[r["hardware"], r["mode"] + ("" if r["managed"] else " (unmanaged)"), f"[{style[r['state']]}]{r['state']}[/]",
              f"{r['ready']}/{r['desired']}", ", ".join(r["versions"]) or "-",
              "\n".join(f"{d['namespace']}/{d['name']}" for d in r["daemonsets"]) or "-",
              ", ".join(r["missing_nodes"]) or "-"] for r in rows]
    return columns_table(columns, shown, wide=wide, title="driver status")


@app.command("install")
def install_command(
    claims_file: Path | None = ClaimsFile,
    hardware: str | None = commands.Option(None, "--hardware", help="Install one hardware's driver (with --mode)."),
    mode: str | None = commands.Option(None, "--mode", help="Access mode (default: the profile's first)."),
    option: list[str] = commands.Option([], "--option", help="KEY=VALUE helm value over the profile's (VALUE as JSON if it parses)."),
    device_class: list[str] = DeviceClassOpt,
    resource: list[str] = ResourceOpt,
    dra_driver: list[str] = DraDriverOpt,
    external: list[str] = ExternalOpt,
    from_cluster: bool = FromClusterOpt,
    dry_run: bool = commands.Option(False, "--dry-run", help="Print the exact commands and run none."),
    context: str | None = ContextOption,
    kubeconfig: Path | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Install pinned drivers: one hardware (--hardware), or exactly what the claims need."""
    from llm_d_lens.monitoring.gpu_driver import service
    from llm_d_lens.monitoring.gpu_driver.target import parse_option

    view = named_view(cluster, clusters_file, context, kubeconfig)
    options = dict(parse_option(text) for text in option)
    claimed = claims_file is not None or device_class or resource or dra_driver or from_cluster
    if hardware is not None and claimed:
        raise commands.BadParameter("give either --hardware or claims (a claims file, --device-class, ...), not both")
    from llm_d_lens.terminal.progress import progress

    busy = progress(f"{'planning' if dry_run else 'installing'} the device stack with helm and kubectl",
                    for_people=output.is_table and not dry_run)
    if hardware is not None:
        with busy:
            results = [asyncio.run(service.install_one(registry(), hardware, mode, view, dry_run=dry_run, options=options))]
    else:
        if mode is not None or options:
            raise commands.BadParameter("--mode and --option go with --hardware; claims choose their modes")
        classes, declared = _claims(claims_file, device_class, resource, dra_driver, [], external)

        async def run() -> list[Any]:
            built = await service.plan(registry(), classes, declared, None if dry_run else view,
                                       from_cluster=from_cluster and not dry_run)
            return await service.install_plan(registry(), built, view, dry_run=dry_run)

        if dry_run and from_cluster:
            raise commands.BadParameter("--from-cluster reads the cluster; a dry run runs nothing")
        with busy:
            results = asyncio.run(run())
    rows = [r.to_dict() for r in results]
    if output.is_table:
        print_install(rows)
    else:
        emit(rows, output, lambda data: data)


def print_install(rows: list[dict[str, Any]]) -> None:
    """Plain lines, not Rich: on a terminal a long command breaks with shell continuations, so it still copies and runs."""
    import textwrap

    from llm_d_lens.terminal.output import terminal_width

    width = terminal_width() or 10**6  # piped: each command on one line, for a script to find
    if not rows:
        commands.echo("nothing to install")
    for r in [each for row in rows for each in (*row["prerequisites"], row)]:
        before = f" prerequisite {r['chart']}" if r["prerequisite"] else ""
        commands.echo(textwrap.fill(f"{r['hardware']} {r['mode']}{before}: {r['action']} - {r['message']}", width,
                                 subsequent_indent="  ", break_on_hyphens=False, break_long_words=False))
        for need in r["preconditions"]:
            commands.echo(f"  needs (Lens does not install it): {need}")
        for argv in r["commands"]:
            commands.echo(command_lines(("  would run: " if r["action"] == "dry-run" else "  ran: "), argv, width))
        if r["action"] == "dry-run":
            for argv in r["checks"]:
                commands.echo(command_lines("  would first check: ", argv, width))


def command_lines(prefix: str, argv: list[str], width: int) -> str:
    """``prefix`` and the shell-quoted command, broken before an option with `` \\`` where a line would pass ``width``.

    An option's value stays on its option's line when both fit; a word longer than a line stays whole.
    """
    from llm_d_lens.runner import format_command, redact

    words = [format_command([arg]) for arg in redact(argv)]  # redacted as a whole: a secret may follow its flag
    lines, line = [], prefix.rstrip() + " " + (words[0] if words else "")
    indent = " " * (len(prefix) - len(prefix.lstrip()) + 4)
    i = 1
    while i < len(words):
        group = [words[i]]
        if words[i].startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            group.append(words[i + 1])  # an option and its value move together
        piece = " ".join(group)
        if len(line) + 1 + len(piece) + 2 <= width or line == indent.rstrip():
            line = f"{line} {piece}"
        elif len(indent) + len(piece) + 2 > width and len(group) == 2:
            lines.append(line + " \\")
            lines.append(indent + group[0] + " \\")
            line = indent + group[1]
        else:
            lines.append(line + " \\")
            line = indent + piece
        i += len(group)
    return "\n".join([*lines, line])
