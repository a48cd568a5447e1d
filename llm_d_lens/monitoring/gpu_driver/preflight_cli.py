"""``lens preflight --hardware H``: block until the hardware is present, or fail with the next step."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.monitoring.gpu_driver import cli as driver_cli
from llm_d_lens.monitoring.gpu_driver.cli import ContextOption, KubeconfigOption, OutputOption, registry
from llm_d_lens.errors import LensError
from llm_d_lens.terminal.options import ClusterNameOption, ClustersFileOption
from llm_d_lens.terminal.output import OutputFormat, emit

app = commands.Group(no_args_is_help=True)


@app.callback(invoke_without_command=True)
def preflight(
    hardware: list[str] = commands.Option(..., "--hardware", help="Hardware id or alias; repeat for several."),
    timeout: float | None = commands.Option(None, "--timeout", min=0, help="Seconds to wait (default: presence.timeout_seconds)."),
    mode: str | None = commands.Option(None, "--mode", help="Access mode whose min_kubernetes_version is checked "
                                    "(default: the one driver install picks, the first access mode)."),
    context: str | None = ContextOption,
    kubeconfig: Path | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Check the mode's minimum Kubernetes version, apply the hardware's NFD rules, then wait (bounded) for a node
    carrying its labels."""
    from llm_d_lens.monitoring.gpu_driver import service
    from llm_d_lens.monitoring.gpu_driver.clock import SystemClock
    from llm_d_lens.terminal.progress import progress

    hardware_registry = registry()
    view = driver_cli.named_view(cluster, clusters_file, context, kubeconfig)

    async def wait_for_each() -> list[Any]:
        reports = []
        for key in hardware:  # one at a time, as service.preflight does, so the line names what is awaited
            with progress(f"preflight {key}: reading the cluster's nodes", for_people=output.is_table) as shown:
                clock = WaitClock(SystemClock(), shown, _awaited(hardware_registry, key, timeout))
                reports += await service.preflight(hardware_registry, [key], view, clock, timeout, mode)
        return reports

    reports = asyncio.run(wait_for_each())
    emit([r.to_dict() for r in reports], output, table)


def _awaited(hardware_registry: Any, key: str, timeout: float | None) -> tuple[str, str, float]:
    """(hardware, node labels, seconds) the wait is for, as the progress line names them."""
    from llm_d_lens.monitoring.gpu_driver.presence import presence_settings, selector_text

    profile = hardware_registry.get(key)
    try:
        selector, _, default_timeout = presence_settings(profile)
    except LensError:
        return profile.id, "its labels", timeout or 0.0  # the wait itself raises the coded error
    return profile.id, selector_text(selector), default_timeout if timeout is None else timeout


class WaitClock:
    """The clock a presence wait runs on, which also says on the progress line what is awaited and the time left."""

    def __init__(self, clock: Any, shown: Any, awaited: tuple[str, str, float]):
        self.clock, self.shown, self.awaited = clock, shown, awaited
        self.started: float | None = None

    def monotonic(self) -> float:
        now = float(self.clock.monotonic())
        if self.started is None:
            self.started = now
        return now

    def message(self) -> str:
        hardware, labels, timeout = self.awaited
        left = max(0.0, timeout - (self.monotonic() - (self.started or 0.0)))
        return f"preflight {hardware}: waiting for a node labelled {labels} ({left:.0f}s of {timeout:g}s left)"

    async def sleep(self, seconds: float) -> None:
        self.shown.update(self.message())
        await self.clock.sleep(seconds)


def table(rows: list[dict[str, Any]]) -> Any:
    from rich.console import Group
    from rich.text import Text

    lines = []
    for r in rows:
        k8s = r.get("kubernetes") or {}
        if k8s.get("minimum"):
            lines.append(Text(f"✓ {r['hardware']} mode {k8s['mode']}: Kubernetes {k8s['server_version']} "
                              f"(needs {k8s['minimum']} or newer)", style="green"))
        lines.append(Text(f"✓ {r['hardware']}: {len(r['matched_nodes'])} of {r['nodes_checked']} node(s) carry "
                          f"{', '.join(f'{k}={v}' for k, v in r['selector'].items())}: {', '.join(r['matched_nodes'])}",
                          style="green"))
    return Group(*lines)
