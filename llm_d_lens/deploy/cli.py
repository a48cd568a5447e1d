"""``lens deploy``: which llm-d overlays a source has, and one rendered and fitted for a hardware."""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import io
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import ClusterNameOption, ClustersFileOption, ContextOption, KubeconfigOption
from llm_d_lens.limits import MAX_ACCELERATORS_PER_POD
from llm_d_lens.errors import LensError
from llm_d_lens.files import check_output_path, write_file
from llm_d_lens.terminal.output import OUTPUT_FILE, DocumentFormat, ListFormat, OutputFormat, emit, list_output_option

app = commands.Group(no_args_is_help=True)

RootOption = commands.Option(None, "--llm-d-root", help="llm-d checkout (default: $LENS_LLM_D_ROOT, else $LLM_D_ROOT).")
RevisionOption = commands.Option(None, "--revision", help="Read the checkout at this git revision (no network).")
GuideOption = commands.Option(..., "--guide", help="llm-d guide, e.g. optimized-baseline.")
HardwareOption = commands.Option(..., "--hardware", help="Hardware profile id or alias.")
ServerOption = commands.Option(None, "--model-server", help="vllm, sglang, ... (default: the only one, else vllm).")
OverlayOption = commands.Option(None, "--overlay", help="Sub-overlay, as `lens deploy guides` lists it (default: the flat one or base).")
ModeOption = commands.Option(None, "--mode", help="Access mode (default: the hardware's first).")
CountOption = commands.Option(None, "--count", min=1, max=MAX_ACCELERATORS_PER_POD,
                           help="Accelerators per pod (default: --tensor-parallel x --pipeline-parallel when given, else "
                                "what the overlay asks for). Without --tensor-parallel the engine keeps its size: a count "
                                "it was not sized for warns on stderr (ENGINE_PARALLELISM_MISMATCH).")
ModelOption = commands.Option(None, "--model", help="Model the engine serves instead of the overlay's (Hugging Face id), "
                                                 "set where the overlay names it (flag, word after `serve`, $VAR).")
TensorOption = commands.Option(None, "--tensor-parallel", min=1, max=MAX_ACCELERATORS_PER_POD,
                            help="The engine's tensor-parallel size, set where the overlay states it (or added to a "
                                 "plain argv); the pod's count follows.")
PipelineOption = commands.Option(None, "--pipeline-parallel", min=1, max=MAX_ACCELERATORS_PER_POD,
                              help="The engine's pipeline-parallel size within the pod, as --tensor-parallel.")
MaxLenOption = commands.Option(None, "--max-model-len", min=1, help="The engine's context length in tokens.")
ReplicasOption = commands.Option(None, "--replicas", min=0, help="Replicas of each model-server workload (LWS: groups).")
PciOption = commands.Option([], "--pci-allow", metavar="ADDR", help="PCI address a DRA claim may use; repeat or comma-separate.")
ResourceOption = commands.Option(None, "--resource", help="Extended resource, when the mode offers several.")
RuntimeClassesOption = commands.Option(False, "--runtime-classes-from-cluster",
                                    help="Read the cluster's RuntimeClasses with kubectl to pick the hardware's runtime class.")
class ImagePolicy(str, enum.Enum):
    keep = "keep"
    profile = "profile"


ImagePolicyOption = commands.Option(ImagePolicy.keep, "--image-policy",
                                 help="keep: upstream's pinned images stay, placeholders get the profile's image; "
                                      "profile: the profile's runtime_image replaces images it manages.")


def _runner(kubeconfig: Path | None, context: str | None) -> Any:
    from llm_d_lens.runner import CommandRunner

    return CommandRunner(kubeconfig=kubeconfig, context=context)


@app.command("guides")
def guides(
    llm_d_root: Path = RootOption,
    revision: str = RevisionOption,
    guide: str = commands.Option(None, "--guide", help="Only this guide."),
    hardware: str = commands.Option(None, "--hardware", help="Only this hardware."),
    output: ListFormat = list_output_option(),
) -> None:
    """Every overlay in the llm-d source: guide × hardware × model server × overlay, with labels and status."""
    from llm_d_lens.deploy.service import describe_guides

    report = describe_guides(root=llm_d_root, revision=revision, guide=guide, hardware=hardware, runner=_runner(None, None))
    emit(report, output, functools.partial(_guides_table, only_guide=guide, only_hardware=hardware),
         names=lambda report: [g for g in report["guides"] if guide is None or g == guide])


def _guides_table(report: dict[str, Any], only_guide: str | None = None, only_hardware: str | None = None) -> Any:
    """One table per guide, in 80 columns: labels, directories and engines' directories are in -o json/yaml."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    source = report["source"]
    where = source["root"] + (f" at {source['revision']} ({(source['commit'] or '')[:12]})" if source["revision"] else "")
    style = {"ok": "green", "broken": "red", "label-mismatch": "red", "unsafe": "red"}
    parts: list[Any] = [Text(f"{len(report['overlays'])} overlays in {where}", style="bold")]
    notes: list[Any] = []
    for guide in report["guides"]:
        rows = [row for row in report["overlays"] if row["guide"] == guide]
        if not rows:
            continue
        table = Table(title=f"guide {guide}", box=box.SIMPLE, title_justify="left", pad_edge=False)
        table.add_column("HARDWARE", max_width=11, overflow="fold")
        table.add_column("SERVER", max_width=6, overflow="fold")
        table.add_column("OVERLAY", max_width=26, overflow="fold")
        table.add_column("STATUS", max_width=14, overflow="fold")
        table.add_column("MODEL", max_width=12, overflow="fold")
        for row in rows:
            table.add_row(row["hardware"], row["model_server"] or "-", row["overlay"],
                          f"[{style.get(row['status'], 'yellow')}]{row['status']}[/]", row.get("model") or "-")
            if row["detail"]:
                notes.append(Text(f"{row['status']}: {row['path']}: {row['detail']}", style=style.get(row["status"], "yellow")))
        parts.append(table)
    parts += notes
    filters = [f"{flag} {value}" for flag, value in (("--guide", only_guide), ("--hardware", only_hardware)) if value]
    if not report["overlays"] and not report["unsupported"] and filters:
        # the checkout is fine: the filter matched nothing, so say which filter to drop
        parts.append(Text(f"no overlays match {' '.join(filters)} in {source['root']}; drop {' or '.join(f.split()[0] for f in filters)} "
                          f"to list every overlay", style="yellow"))
    elif not report["overlays"] and not report["unsupported"] and not report.get("contents"):
        parts.append(Text(f"no overlays found: is {source['root']} an llm-d checkout (with guides/<guide>/modelserver/)? "
                          f"Pass --llm-d-root or set LENS_LLM_D_ROOT", style="yellow"))
    for guide in report.get("contents", []):
        held = [f"{key.replace('_', ' ')}: {', '.join(Path(p).name for p in guide[key])}"
                for key in ("router_values", "monitoring", "manifests", "helpers", "other", "shared") if guide.get(key)]
        if held:
            parts.append(Text(f"guide {guide['guide']} also holds {'; '.join(held)}"))
    for row in report["unsupported"]:
        parts.append(Text(f"unsupported: {row['path']} (labels {', '.join(row['labels'])}): {row['detail']}", style="yellow"))
    for row in report["skipped"]:
        parts.append(Text(f"skipped: {row['path']}: {row['reason']}", style="yellow"))
    return Group(*parts)


#: The options that say what to render; `render` and `apply` take exactly these.
_RENDER_OPTIONS: list[tuple[str, Any, Any]] = [
    ("guide", str, GuideOption),
    ("hardware", str, HardwareOption),
    ("model_server", str, ServerOption),
    ("overlay", str, OverlayOption),
    ("mode", str, ModeOption),
    ("count", int, CountOption),
    ("model", str, ModelOption),
    ("tensor_parallel", int, TensorOption),
    ("pipeline_parallel", int, PipelineOption),
    ("max_model_len", int, MaxLenOption),
    ("replicas", int, ReplicasOption),
    ("pci_allow", list[str], PciOption),
    ("resource", str, ResourceOption),
    ("runtime_classes_from_cluster", bool, RuntimeClassesOption),
    ("llm_d_root", Path, RootOption),
    ("revision", str, RevisionOption),
    ("image_policy", ImagePolicy, ImagePolicyOption),
    ("kubeconfig", Path, KubeconfigOption),
    ("context", str, ContextOption),
    ("cluster", str, ClusterNameOption),
    ("clusters_file", Path, ClustersFileOption),
]


def render_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` the render options too; it receives them as keyword arguments."""
    hints = typing.get_type_hints(command)
    keyword = inspect.Parameter.KEYWORD_ONLY
    own = [p.replace(kind=keyword, annotation=hints[p.name]) for p in inspect.signature(command).parameters.values()
           if p.kind is not inspect.Parameter.VAR_KEYWORD]
    shared = [inspect.Parameter(name, keyword, default=option, annotation=kind) for name, kind, option in _RENDER_OPTIONS]

    @functools.wraps(command)
    def wrapper(**options: Any) -> None:
        command(**options)

    wrapper.__signature__ = inspect.Signature([*shared, *own])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in [*shared, *own]}
    return wrapper


def _render(options: dict[str, Any], *, for_people: bool = True) -> tuple[Any, Any]:
    """The fitted render the options ask for, and the runner it went through.

    A render at a ``--revision`` archives that revision with git first, which takes seconds on a
    large checkout: a progress line on stderr names each step, at a terminal only and never when
    the result asked for is for a program (``for_people`` false: ``-o json``, ``--report``).
    """
    from llm_d_lens.deploy.service import RenderRequest, fetch_runtime_classes
    from llm_d_lens.deploy.service import render as render_job

    pci_allow = [address.strip() for item in options["pci_allow"] for address in item.split(",")]
    if "" in pci_allow:
        # an empty value is almost always an unset shell variable: don't quietly drop the allowlist
        raise commands.BadParameter(f"--pci-allow {', '.join(repr(i) for i in options['pci_allow'])}: an empty PCI address")
    from llm_d_lens.cluster.options import live_target

    if options["cluster"] is not None:
        target = live_target(options["cluster"], options["clusters_file"], options["context"], options["kubeconfig"],
                             why="deploy (runtime classes, apply)")
        runner = _runner(Path(target.kubeconfig) if target.kubeconfig else None, target.context)
    else:
        runner = _runner(options["kubeconfig"], options["context"])
    known = fetch_runtime_classes(runner) if options["runtime_classes_from_cluster"] else None
    request = RenderRequest(
        guide=options["guide"], hardware=options["hardware"], model_server=options["model_server"],
        overlay=options["overlay"], mode=options["mode"], count=options["count"],
        pci_allow=pci_allow,
        resource_name=options["resource"], runtime_classes=known, revision=options["revision"],
        image_policy=ImagePolicy(options["image_policy"]).value,
        model=options["model"], tensor_parallel=options["tensor_parallel"], pipeline_parallel=options["pipeline_parallel"],
        max_model_len=options["max_model_len"], replicas=options["replicas"],
    )
    from llm_d_lens.terminal.progress import progress

    revision = options["revision"]
    with progress(f"rendering {options['guide']} for {options['hardware']} at revision {revision}",
                  for_people=for_people and revision is not None) as shown:
        result = render_job(request, root=options["llm_d_root"], runner=runner, step=shown.update)
    _explain(result)
    return result, runner


def _explain(result: Any) -> None:
    """How the overlay was chosen and what Lens changed, as comments on stderr (never wrapped)."""
    for line in [*result.explanation(), *map(str, result.warnings)]:
        commands.echo(f"# {line}", err=True)


@app.command("render")
@render_options
def render(
    output: DocumentFormat = commands.Option(DocumentFormat.yaml, "--output", "-o",
                                          help="yaml: the manifests as kustomize prints them; json: one kubectl List."),
    output_file: Path = commands.Option(None, OUTPUT_FILE, metavar="FILE", help="Write the manifests (or report) here instead of stdout."),
    force: bool = commands.Option(False, "--force", help=f"Overwrite the {OUTPUT_FILE} if it exists."),
    report: OutputFormat = commands.Option(None, "--report", help="Print a json or yaml report (explanation, warnings, objects)."),
    **options: Any,
) -> None:
    """Render the hardware's overlay of a guide with kustomize and fit it to an access mode.

    The manifests go to stdout (or --output-file); how the overlay was chosen and what Lens
    changed go to stderr as comments. With --revision, each step is shown on stderr while it runs
    (at a terminal only; not with -o json or --report).
    """
    exists = LensError(f"{output_file} exists; pass --force to overwrite it", code="OUTPUT_EXISTS")
    if output_file is not None:
        check_output_path(output_file, replace=force, exists=exists)  # refuse before kustomize runs
    result, _ = _render(options, for_people=output is DocumentFormat.yaml and report is None)
    if report is not None and not report.is_table:
        if output_file is None:
            emit(result.to_dict(), report, lambda data: data)
            return
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            emit(result.to_dict(), report, lambda data: data)
        write_file(output_file, buffer.getvalue().encode(), replace=force, exists=exists)
        commands.echo(f"# wrote the {report.value} report to {output_file}", err=True)
        return
    if output is DocumentFormat.json:
        import json

        manifests = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(result.objects)}, indent=2) + "\n"
    else:
        manifests = result.manifests()
    if output_file is not None:
        write_file(output_file, manifests.encode(), replace=force, exists=exists)
        commands.echo(f"# wrote {len(result.objects)} objects to {output_file}", err=True)
    else:
        sys.stdout.write(manifests)


@app.command("apply")
@render_options
def apply(
    namespace: str = commands.Option(None, "--namespace", "-n", help="Namespace to apply into."),
    yes: bool = commands.Option(False, "--yes", help="Really apply; without it kubectl only does a server-side dry run."),
    **options: Any,
) -> None:
    """Render and fit as `render` does, then `kubectl apply` it (a server-side dry run unless --yes)."""
    from llm_d_lens.deploy.service import apply as apply_job

    result, runner = _render(options)
    outcome = apply_job(result, runner, yes=yes, namespace=namespace)
    sys.stdout.write(outcome["output"])
    if outcome["dry_run"]:
        commands.echo("# server-side dry run only; pass --yes to apply", err=True)
