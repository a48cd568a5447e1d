"""``lens evaluate``: llm-d-benchmark settings from a profile, and the telemetry coverage check."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.limits import MAX_ACCELERATORS_PER_POD, MAX_REPLICAS
from llm_d_lens.evaluate.errors import OutputExists
from llm_d_lens.terminal.options import DocumentOption, OutputOption
from llm_d_lens.terminal.output import OUTPUT_FILE, DocumentFormat, OutputFormat, emit

app = commands.Group(no_args_is_help=True)

ProfileDirOption = commands.Option(
    [], "--profile-dir", metavar="DIR",
    help="A directory of workload profiles searched after the built-in one; repeatable, later ones override.",
)


@app.command("config")
def config(
    hardware: str | None = commands.Option(None, "--hardware", help="Hardware id or any alias (accelerator key, benchmark profile)."),
    mode: str | None = commands.Option(None, "--mode", help="Access mode; the hardware's first when omitted."),
    resource: str | None = commands.Option(None, "--resource", help="Extended resource, for a mode that requests several."),
    guide: str | None = commands.Option(None, "--guide", help="llm-d guide the scenario is named after (default optimized-baseline)."),
    network: str | None = commands.Option(None, "--network", help="Network device profile id, or a resource, class or driver it owns: "
                                          "llm-d-benchmark's networkResource (see lens hardware list)."),
    profile: str | None = commands.Option(None, "--profile", help="Workload profile giving the model, pools and parallelism."),
    profile_dir: list[str] = ProfileDirOption,
    tensor_parallel: int | None = commands.Option(None, "--tensor-parallel", min=1, max=MAX_ACCELERATORS_PER_POD, help="Without a profile: accelerators per pod."),
    replicas: int | None = commands.Option(None, "--replicas", min=1, max=MAX_REPLICAS, help="Without a profile: pods in the single pool."),
    from_manifest: Path | None = commands.Option(None, "--from-manifest", metavar="FILE",
                                              help="Infer everything from a rendered manifest ('-' reads stdin)."),
    output: DocumentFormat = DocumentOption,
    output_file: Path | None = commands.Option(None, OUTPUT_FILE, metavar="FILE", help="Write the scenario here instead of stdout."),
    force: bool = commands.Option(False, "--force", help=f"Replace the {OUTPUT_FILE} if it exists."),
) -> None:
    """The llm-d-benchmark scenario settings (accelerator, dra, per-role counts) for a hardware."""
    from llm_d_lens.evaluate.config import build_config
    from llm_d_lens.evaluate.profiles import SearchPath
    from llm_d_lens.files import check_output_path, write_file

    exists = OutputExists(f"{output_file} exists; pass --force to replace it", details={"path": str(output_file)})
    if output_file is not None:
        check_output_path(output_file, replace=force, exists=exists)  # refuse before any work is done
    manifest = None
    if from_manifest is not None:
        manifest = _read(from_manifest)
    workload = SearchPath.of(profile_dir).load(profile) if profile is not None else None
    result = build_config(hardware=hardware, mode=mode, resource=resource, guide=guide, workload=workload,
                          tensor_parallel=tensor_parallel, replicas=replicas, manifest=manifest,
                          manifest_source=str(from_manifest) if from_manifest else "manifest", network=network)
    text = result.to_yaml() if output is DocumentFormat.yaml else json.dumps(result.scenario(), indent=2) + "\n"
    for warning in result.warnings():  # on stderr, so piping the scenario on stdout stays clean
        commands.echo(f"warning: {warning['message']}", err=True)
    if output_file is None:
        sys.stdout.write(text)
        return
    write_file(output_file, text.encode(), replace=force, exists=exists)
    summary = result.summary()
    how = summary["resource"] or summary["dra_driver"] or "no accelerator"
    commands.echo(f"wrote {output_file}: hardware {summary['hardware']}, access mode {summary['access_mode']}, "
               f"benchmark profile {summary['benchmark_profile'] or '-'}, {how}")


def _read(path: Path) -> str:
    """The manifest's text (``-``: stdin), bounded and UTF-8."""
    from llm_d_lens import files as textread
    from llm_d_lens.evaluate.errors import ManifestInvalid

    try:
        return textread.read_text(path)
    except textread.TextUnreadable as exc:
        where = "stdin" if str(path) == "-" else str(path)
        raise ManifestInvalid(f"{where}: {exc.problem}") from None


def parse_time(value: str) -> float:
    """Unix seconds or an ISO 8601 timestamp with a zone (``Z`` allowed)."""
    from llm_d_lens.prometheus.instants import parse_instant

    try:
        return parse_instant(value)
    except ValueError as exc:
        reason = "is neither Unix seconds nor an ISO 8601 time" if "finite" in str(exc) else str(exc)
        raise commands.BadParameter(f"{value!r} {reason}") from None


@app.command("coverage")
def coverage(
    profile: str = commands.Option("default", "--profile", help="Workload profile whose coverage is checked."),
    profile_dir: list[str] = ProfileDirOption,
    prometheus: str = commands.Option(..., "--prometheus", metavar="URL", help="Prometheus server root, e.g. http://prometheus:9090."),
    start: str | None = commands.Option(None, "--start", help="Run start (Unix seconds or ISO 8601); default end minus the "
                                                          "profile's workload and metrics_available timeouts."),
    end: str | None = commands.Option(None, "--end", help="Run end (Unix seconds or ISO 8601); default now."),
    output: OutputFormat = OutputOption,
) -> None:
    """Which hosts, GPUs and communicators did work during a run, against the profile's coverage."""
    from llm_d_lens.evaluate.coverage import check_coverage
    from llm_d_lens.evaluate.profiles import SearchPath

    loaded = SearchPath.of(profile_dir).load(profile)
    end_at = parse_time(end) if end is not None else time.time()
    timeouts = loaded.profile.timeouts
    start_at = parse_time(start) if start is not None else end_at - timeouts.workload - timeouts.metrics_available
    if start_at >= end_at:
        raise commands.BadParameter("--start must be before --end")
    report = check_coverage(loaded, prometheus, start_at, end_at)

    def table(report: Any) -> Any:
        from rich.console import Group
        from rich.text import Text

        from llm_d_lens.terminal.output import Column, columns_table

        t = columns_table([Column("PARTICIPANT"), Column("REPORTED", numeric=True), Column("REQUIRED", numeric=True)], [
            ["hosts", str(len(report.hosts)), str(report.required["hosts"])],
            ["GPUs (by PCI bus id)", str(report.gpus), str(report.required["gpus"])],
            ["communicators", str(len(report.communicators)), str(report.required["communicators"])],
        ], title=f"who did work ({report.metric}, profile {report.profile})")
        parts: list[Any] = [t]
        for host, gpus in report.gpus_by_host.items():
            parts.append(Text(f"  {host}: {', '.join(gpus) or '(no GPU identity)'}"))
        parts.append(Text(f"  communicators: {', '.join(report.communicators) or 'none'}"))
        parts.append(Text(f"  (host, rank) pairs: {report.host_rank_pairs} (not a GPU count: one GPU has a rank "
                          f"in every communicator it is part of)", style="dim"))
        parts += [Text(f"note: {n}", style="yellow") for n in report.notes]
        parts += [Text(f"✗ {p}", style="red bold") for p in report.problems]
        if report.ok:
            parts.append(Text("✓ coverage matches the profile", style="green bold"))
        return Group(*parts)

    emit(report, output, table)
    if not report.ok:
        raise commands.Exit(1)
