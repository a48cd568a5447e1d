"""``lens cluster``: the accelerator inventory of a live cluster, a saved snapshot or the demo."""

from __future__ import annotations

from pathlib import Path

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import ClusterNameOption, ClustersFileOption, ContextOption, KubeconfigOption, OutputOption
from llm_d_lens.runner import DEFAULT_TIMEOUT
from llm_d_lens.terminal.output import (
    OUTPUT_FILE,
    ListFormat,
    OutputFormat,
    console,
    emit,
    list_output_option,
)

app = commands.Group(no_args_is_help=True)

TimeoutOption = commands.Option(DEFAULT_TIMEOUT, "--timeout", min=1, help="Seconds each kubectl call may take.")


@app.command("inspect")
def inspect(
    snapshot: Path | None = commands.Option(None, "--snapshot", help="A snapshot file or directory (kubectl List JSON, optionally gzipped)."),
    demo: bool = commands.Option(False, "--demo", help="Inspect the embedded demo cluster."),
    context: str | None = ContextOption,
    kubeconfig: str | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    every: bool = commands.Option(False, "--all", help="Every cluster of the clusters file (or kubeconfig): the fleet, totals per hardware."),
    nodes: bool = commands.Option(False, "--nodes", help="Also print one row per node (JSON/YAML always include nodes)."),
    discover: bool = commands.Option(False, "--discover", help="Read unknown VRAM with the profiles' discovery tools (live only)."),
    timeout: float = TimeoutOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Accelerators per hardware profile: devices, partitions, VRAM, allocated and available.

    Reads the cluster kubectl's current context points at unless --cluster, --snapshot, --demo or --context says otherwise.
    """
    if every:
        _inspect_fleet(clusters_file, timeout, output, cluster=cluster, snapshot=snapshot, demo=demo, context=context,
                       kubeconfig=kubeconfig, nodes=nodes, discover=discover)
        return
    from llm_d_lens.cluster.render import overview_renderable
    from llm_d_lens.cluster.service import inspect as inspect_cluster
    from llm_d_lens.cluster.source import cluster_source
    from llm_d_lens.terminal.lifetime import keep_until_exit
    from llm_d_lens.terminal.progress import progress

    source = cluster_source(cluster, clusters_file, timeout, snapshot=snapshot, demo=demo, context=context,
                            kubeconfig=kubeconfig)
    live = getattr(source, "snapshot", None) is None and not getattr(source, "demo", False)
    with progress(_reading(context or cluster), for_people=live and output.is_table):
        # the parsed cluster is left for the console script's exit to drop
        overview = inspect_cluster(source, keep=keep_until_exit)
        if discover:
            from llm_d_lens.cluster.node_discovery import discover_into

            discover_into(overview, source)
    emit(overview.to_dict(), output, lambda data: overview_renderable(data, with_nodes=nodes, wide=output is OutputFormat.wide))


#: the API's name for the same read (/api/v1/clusters/overview); hidden in help, listed in docs/cli.md
app.command("overview", hidden=True, help="Same as `lens cluster inspect`.")(inspect)


@app.command("snapshot")
def snapshot(
    out: Path = commands.Option(..., OUTPUT_FILE, metavar="FILE", help="File to write; gzipped when it ends in .gz."),
    context: str | None = ContextOption,
    kubeconfig: str | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    force: bool = commands.Option(False, "--force", help="Replace the file if it exists."),
    timeout: float = TimeoutOption,
) -> None:
    """Save a live cluster's nodes, pods and DRA objects to one file `lens cluster inspect --snapshot` reads."""
    from llm_d_lens.cluster.errors import SnapshotExists
    from llm_d_lens.cluster.snapshot import gc_paused, snapshot_document, write_snapshot
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.files import check_output_path

    exists = SnapshotExists(f"{out} already exists; pass --force to replace it", details={"path": str(out)})
    check_output_path(out, replace=force, exists=exists)  # refuse before asking the cluster anything
    from llm_d_lens.cluster.options import live_target
    from llm_d_lens.terminal.progress import progress

    target = live_target(cluster, clusters_file, context, kubeconfig, why="a snapshot")
    source = ClusterSource(context=target.context, kubeconfig=target.kubeconfig, timeout=timeout)
    with gc_paused():
        with progress(_reading(target.context)):
            objects = source.load()
        written = write_snapshot(snapshot_document(objects.all_items()), out, force=force)
        counts = ", ".join(f"{count} {kind}" for kind, count in objects.counts().items())
        dra = {True: "served", False: "not served", None: "unknown"}[objects.dra_api]
        del objects
    console(stderr=True).print(f"wrote {written}: {counts} (DRA API {dra})", highlight=False, markup=False)


def _reading(context: str | None) -> str:
    return f"reading nodes, pods and DRA objects with kubectl (context {context or 'current'})"


@app.command("list")
def list_clusters(
    clusters_file: Path | None = ClustersFileOption,
    kubeconfig: str | None = commands.Option(None, "--kubeconfig", help="Without a clusters file: the kubeconfig whose contexts are listed."),
    timeout: float = commands.Option(5.0, "--timeout", min=1, help="Seconds each cluster may take to answer."),
    output: ListFormat = list_output_option(),
) -> None:
    """The clusters --cluster can name, from the clusters file or else the kubeconfig's contexts, with reachability."""
    import asyncio

    from llm_d_lens.cluster.fleet import probe_all
    from llm_d_lens.cluster.options import user_clusters

    found = user_clusters(clusters_file, kubeconfig)
    if output is ListFormat.name:  # names need no answer from any cluster
        emit({"clusters": [{"name": c.name} for c in found.clusters]}, output, _list_table, names=_names)
        return
    rows = [r.to_dict() for r in asyncio.run(probe_all(found.clusters, timeout=timeout))]
    emit({"origin": found.origin, "clusters": rows}, output, _list_table, names=_names)


def _names(data: dict[str, object]) -> list[str]:
    return [str(c["name"]) for c in data["clusters"]]  # type: ignore[attr-defined]


def _list_table(data: dict[str, object]) -> object:
    from rich.table import Table

    from llm_d_lens.terminal.printable import cell

    table = Table(box=None, pad_edge=False, title=f"clusters from {cell(data['origin'])}", title_justify="left")
    for column in ("NAME", "KIND", "LABELS", "REACHABLE"):
        table.add_column(column, overflow="fold")
    for row in data["clusters"]:  # type: ignore[attr-defined]
        labels = cell(",".join(f"{k}={v}" for k, v in row["labels"].items())) or "-"
        name = cell(row["name"]) if row["display_name"] == row["name"] else \
            f"{cell(row['name'])}\n[dim]{cell(row['display_name'])}[/dim]"
        state = ("[green]yes[/green] " if row["reachable"] else "[red]no[/red] ") + cell(row["detail"])
        table.add_row(name, row["kind"], labels, state)
    return table


def _inspect_fleet(clusters_file: Path | None, timeout: float, output: OutputFormat, **others: object) -> None:
    from llm_d_lens.cluster.fleet import fleet_document, read_members
    from llm_d_lens.cluster.options import user_clusters
    from llm_d_lens.cluster.render import fleet_renderable
    from llm_d_lens.cluster.source import SourceConflict

    chosen = [f"--{flag}" for flag, value in others.items() if value]
    if chosen:
        raise SourceConflict(f"--all reads every configured cluster; drop {', '.join(chosen)}")
    found = user_clusters(clusters_file)
    emit(fleet_document(read_members(found.clusters, timeout)), output, fleet_renderable)
