"""``lens cluster``: the accelerator inventory of a live cluster, a saved snapshot or the demo."""

from __future__ import annotations

from pathlib import Path
import typer

from llm_d_lens.output import OutputFormat, console, emit
from llm_d_lens.runner import DEFAULT_TIMEOUT

app = typer.Typer(no_args_is_help=True)

OutputOption = typer.Option(OutputFormat.table, "--output", "-o", help="table, json or yaml.")
ContextOption = typer.Option(None, "--context", help="kubeconfig context of the live cluster (default: the current one).")
KubeconfigOption = typer.Option(None, "--kubeconfig", help="kubeconfig file of the live cluster.")
TimeoutOption = typer.Option(DEFAULT_TIMEOUT, "--timeout", min=1, help="Seconds each kubectl call may take.")


@app.command("inspect")
def inspect(
    snapshot: Path | None = typer.Option(None, "--snapshot", help="A snapshot file or directory (kubectl List JSON, optionally gzipped)."),
    demo: bool = typer.Option(False, "--demo", help="Inspect the embedded demo cluster."),
    context: str | None = ContextOption,
    kubeconfig: str | None = KubeconfigOption,
    nodes: bool = typer.Option(False, "--nodes", help="Also print one row per node (JSON/YAML always include nodes)."),
    discover: bool = typer.Option(False, "--discover", help="Read unknown VRAM with the profiles' discovery tools (live only)."),
    timeout: float = TimeoutOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Accelerators per hardware profile: devices, partitions, VRAM, allocated and available.

    Reads the cluster kubectl's current context points at unless --snapshot, --demo or --context says otherwise.
    """
    from llm_d_lens.cluster.render import overview_renderable
    from llm_d_lens.cluster.service import inspect as inspect_cluster
    from llm_d_lens.cluster.source import ClusterSource

    source = ClusterSource(snapshot=snapshot, demo=demo, context=context, kubeconfig=kubeconfig, timeout=timeout)
    overview = inspect_cluster(source)
    if discover:
        from llm_d_lens.planning.node_discovery import discover_into

        discover_into(overview, source)
    emit(overview.to_dict(), output, lambda data: overview_renderable(data, with_nodes=nodes))


@app.command("snapshot")
def snapshot(
    out: Path = typer.Option(..., "--out", "-o", help="File to write; gzipped when it ends in .gz."),
    context: str | None = ContextOption,
    kubeconfig: str | None = KubeconfigOption,
    force: bool = typer.Option(False, "--force", help="Replace the file if it exists."),
    timeout: float = TimeoutOption,
) -> None:
    """Save a live cluster's nodes, pods and DRA objects to one file `lens cluster inspect --snapshot` reads."""
    from llm_d_lens.cluster.snapshot import gc_paused, snapshot_document, write_snapshot
    from llm_d_lens.cluster.source import ClusterSource

    from llm_d_lens.cluster.errors import SnapshotExists
    from llm_d_lens.files import check_output_path

    exists = SnapshotExists(f"{out} already exists; pass --force to replace it", details={"path": str(out)})
    check_output_path(out, replace=force, exists=exists)  # refuse before asking the cluster anything
    source = ClusterSource(context=context, kubeconfig=kubeconfig, timeout=timeout)
    with gc_paused():
        objects = source.load()
        written = write_snapshot(snapshot_document(objects.all_items()), out, force=force)
        counts = ", ".join(f"{count} {kind}" for kind, count in objects.counts().items())
        dra = {True: "served", False: "not served", None: "unknown"}[objects.dra_api]
        del objects
    console(stderr=True).print(f"wrote {written}: {counts} (DRA API {dra})", highlight=False, markup=False)
