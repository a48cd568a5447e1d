"""``lens incluster check``: ask the cluster whether this account holds what Lens uses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import ClusterNameOption, ClustersFileOption, ContextOption, KubeconfigOption, OutputOption
from llm_d_lens.terminal.output import OutputFormat, emit

app = commands.Group(no_args_is_help=True)


@app.command("check")
def check(
    installer: bool = commands.Option(False, "--installer", help="Also check the installer's grants (installs, deploy apply)."),
    node_discovery: bool = commands.Option(False, "--node-discovery", help="Also check kubectl exec into driver pods (lens plan --discover)."),
    context: str | None = ContextOption,
    kubeconfig: Path | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    output: OutputFormat = OutputOption,
) -> None:
    """One `kubectl auth can-i` per permission; exits 1 naming what is missing and what it breaks."""
    from llm_d_lens.incluster.permissions import check as ask
    from llm_d_lens.runner import CommandRunner

    from llm_d_lens.cluster.options import live_target

    target = live_target(cluster, clusters_file, context, kubeconfig, why="a permission check")
    runner = CommandRunner(kubeconfig=target.kubeconfig, context=target.context)
    report = asyncio.run(ask(runner, mutations=installer, node_discovery=node_discovery))
    emit(report.to_dict(), output, table)
    report.raise_if_missing()


def table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    shown = Table(box=None, pad_edge=False)
    for column in ("ROLE", "VERB", "RESOURCE", "ALLOWED"):
        shown.add_column(column, overflow="fold")
    for row in report["checks"]:
        allowed = {True: "yes", False: "no"}.get(row["allowed"], "unknown")
        shown.add_row(row["role"], row["verb"], row["resource"], allowed)
    return shown
