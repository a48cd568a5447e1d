"""``lens preflight --hardware H``: block until the hardware is present, or fail with the next step."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from llm_d_lens.monitoring.gpu_driver import cli as driver_cli
from llm_d_lens.monitoring.gpu_driver.cli import ContextOption, KubeconfigOption, OutputOption, registry
from llm_d_lens.cluster.options import ClusterNameOption, ClustersFileOption
from llm_d_lens.output import OutputFormat, emit

app = typer.Typer(no_args_is_help=True)


@app.callback(invoke_without_command=True)
def preflight(
    hardware: list[str] = typer.Option(..., "--hardware", help="Hardware id or alias; repeat for several."),
    timeout: float | None = typer.Option(None, "--timeout", min=0, help="Seconds to wait (default: presence.timeout_seconds)."),
    context: str | None = ContextOption,
    kubeconfig: Path | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Apply the hardware's NFD rules, then wait (bounded) for a node carrying its labels."""
    from llm_d_lens.monitoring.gpu_driver import service
    from llm_d_lens.monitoring.gpu_driver.clock import SystemClock

    reports = asyncio.run(service.preflight(registry(), hardware, driver_cli.named_view(cluster, clusters_file, context, kubeconfig), SystemClock(), timeout))
    emit([r.to_dict() for r in reports], output, table)


def table(rows: list[dict[str, Any]]) -> Any:
    from rich.console import Group
    from rich.text import Text

    return Group(*[
        Text(f"✓ {r['hardware']}: {len(r['matched_nodes'])} of {r['nodes_checked']} node(s) carry "
             f"{', '.join(f'{k}={v}' for k, v in r['selector'].items())}: {', '.join(r['matched_nodes'])}", style="green")
        for r in rows
    ])
