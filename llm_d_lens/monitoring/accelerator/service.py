"""One refresh of device telemetry: every selected hardware, read, assembled and attributed.

From Prometheus, one query per hardware goes out, all at once: each metric its quantities read,
aggregated per tile, plus the hardware's inventory query, in one expression (:mod:`.refresh`), the
scrape targets' query riding along with the pod-reading hardware that reads the fewest metrics
(:func:`refresh_plan`). The answer is taken apart and each quantity finished with PromQL's own
rules, so everything after it is what one query per quantity gives. A telemetry provider
(``registry.py``) only derives from those readings and sends nothing itself, so every hardware is
combined, whatever its ``provider_id``. From a direct snapshot, the same plan is evaluated over
one exporter page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.accelerator.attribution import PodAllocation, attribute
from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects
from llm_d_lens.monitoring.accelerator.plan import DevicePlan, plan_for
from llm_d_lens.monitoring.accelerator.queries import combinable, refresh_parts
from llm_d_lens.monitoring.accelerator.readings import DeviceReading, assemble, fallback_warnings
from llm_d_lens.monitoring.accelerator.recorded import Recorded, read_recorded
from llm_d_lens.monitoring.accelerator.refresh import each_parts, read_refresh
from llm_d_lens.monitoring.accelerator.registry import derive
from llm_d_lens.monitoring.accelerator.snapshot import evaluate
from llm_d_lens.monitoring.errors import AccessModeUnknown, TelemetryNotDeclared
from llm_d_lens.monitoring.exposition import ExpositionSample, parse_exposition, with_target_label
from llm_d_lens.prometheus.client import PrometheusClient, Sample, gather_all
from llm_d_lens.prometheus.combine import query_each


@dataclass(frozen=True)
class Selected:
    profile: HardwareProfile
    plan: DevicePlan
    provider: Any = None  # the telemetry provider its profile names (registry.py); None: declarative


@dataclass
class DeviceReport:
    devices: list[DeviceReading] = field(default_factory=list)
    pods: dict[tuple[str, str], list[PodAllocation]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    hardware: list[str] = field(default_factory=list)
    queries_sent: int = 0
    source: str = ""
    recorded: list[str] = field(default_factory=list)  # the hardware read from Lens' recorded series


    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "hardware": self.hardware,
            "queries": self.queries_sent,
            "recorded": self.recorded,
            "devices": [d.to_dict() for d in self.devices],
            "pods": [
                {"namespace": ns or None, "pod": pod, "allocations": [a.to_dict() for a in allocations]}
                for (ns, pod), allocations in sorted(self.pods.items())
            ],
            "warnings": self.warnings,
        }


def select(hardware: Sequence[str] | None, registry: Any = None, *, require_sources: bool = True) -> list[Selected]:
    """The hardware to read: the ones named (each must declare device sources), or every one that does.

    With ``require_sources`` off (the pods view, which reads serving metrics of any hardware), a named
    hardware without device sources is skipped instead of refused: its pods simply have no device figures.
    """
    from llm_d_lens.hardware.registry import get_registry

    from llm_d_lens.monitoring.accelerator.registry import get_telemetry_registry

    registry = registry or get_registry()
    providers = get_telemetry_registry()
    if hardware:
        chosen = []
        for key in hardware:
            profile = registry.get(key)
            plan = plan_for(profile)
            if plan is None and not require_sources:
                continue
            if plan is None:
                raise TelemetryNotDeclared(
                    f"hardware {profile.id!r} declares no telemetry.device_metric_sources, so Lens has no device metrics to read",
                    details={"hardware": profile.id},
                )
            if profile.id not in [s.profile.id for s in chosen]:
                chosen.append(Selected(profile, plan, providers.for_profile(profile)))
        return chosen
    # every hardware: one whose telemetry provider is unknown or broken is left out, not fatal
    out = []
    for p in registry.profiles():
        plan = plan_for(p)
        if plan is None:
            continue
        try:
            out.append(Selected(p, plan, providers.for_profile(p)))
        except LensError:
            continue
    return out


def _check_mode(selection: Sequence[Selected], mode: str | None) -> None:
    if mode is not None and not any(mode in s.profile.access_modes for s in selection):
        known = sorted({m for s in selection for m in s.profile.access_modes})
        raise AccessModeUnknown(f"no selected hardware has an access mode {mode!r}; known modes: {', '.join(known)}",
                                details={"mode": mode, "modes": known})


@dataclass
class _Read:
    """One hardware's share of a report, in the order the report lists it."""

    pods: list[tuple[tuple[str, str], PodAllocation]]
    warnings: list[str]
    devices: list[DeviceReading]


def _wanted(cluster: ClusterObjects | None, node: str | None) -> str | None:
    return cluster.node_name(node) if cluster is not None and node is not None else node


def _hardware(chosen: Selected, rows: dict[str, Any], cluster: ClusterObjects | None, mode: str | None,
              wanted: str | None, targets: Sequence[Sample], recorded: Recorded | None = None) -> _Read:
    """Assemble and attribute one hardware's rows (or recorded rows); only devices (and pods) on ``wanted`` when it is set."""
    if recorded is not None:
        assembled = assemble(chosen.plan, recorded.rows, recorded.targets, (recorded.values, recorded.fallbacks))
    else:
        assembled = assemble(chosen.plan, rows, targets)
    own_mode = mode if mode in chosen.profile.access_modes else None
    pods = [(ref, allocation) for ref, allocation in attribute(assembled.devices, chosen.profile, cluster, own_mode).items()
            if wanted is None or allocation.node == wanted]
    warnings = list(assembled.warnings)
    if chosen.provider is not None:
        warnings.extend(derive(chosen.provider, chosen.profile, assembled.devices))
    shown = [d for d in assembled.devices if wanted is None or d.node == wanted]
    warnings.extend(fallback_warnings(chosen.plan, shown))
    for d in shown:  # each device's health flags read once
        problems = d.problems()
        if problems:
            warnings.append(f"{d.hardware} {d.name}: health: {'; '.join(problems)}")
    return _Read(pods, warnings, shown)


def _report(selection: Sequence[Selected], reads: Sequence[_Read]) -> DeviceReport:
    report = DeviceReport(hardware=[s.profile.id for s in selection])
    for read in reads:
        for ref, allocation in read.pods:
            report.pods.setdefault(ref, []).append(allocation)
        report.warnings.extend(read.warnings)
        report.devices.extend(read.devices)
    return report


def _finish(
    selection: Sequence[Selected],
    rows_by_hardware: dict[str, dict[str, Any]],
    cluster: ClusterObjects | None,
    mode: str | None,
    node: str | None,
    targets: Sequence[Sample] = (),
) -> DeviceReport:
    """Assemble and attribute every hardware's rows; ``node`` (a name or, with nodes known, an address) narrows the answer."""
    wanted = _wanted(cluster, node)
    return _report(selection, [_hardware(s, rows_by_hardware[s.profile.id], cluster, mode, wanted, targets) for s in selection])


def refresh_plan(selection: Sequence[Selected]) -> dict[str, dict[str, str]]:
    """Per hardware, the parts its refresh query combines: the inventory, one per quantity, and, with
    one hardware that reads pod labels, the scrape targets' query (one per refresh is enough).

    That hardware is the one reading the fewest metrics (the first of those): its answer tends to
    come first, and every other hardware's assembly waits for the targets."""
    carrier = targets_carrier(selection)
    return {s.profile.id: refresh_parts(s.plan, targets=s.profile.id == carrier) for s in selection}


def targets_carrier(selection: Sequence[Selected]) -> str | None:
    """The hardware whose refresh carries the scrape targets' query (:func:`refresh_plan`), or None."""
    readers = [s for s in selection if "pod" in s.plan.labels]
    return min(readers, key=lambda s: len(s.plan.metric_selectors())).profile.id if readers else None


async def read_devices(
    client: PrometheusClient,
    selection: Sequence[Selected],
    *,
    at: float | None = None,
    node: str | None = None,
    cluster: ClusterObjects | None = None,
    mode: str | None = None,
    combined: bool = True,
    recorded: bool = True,
) -> DeviceReport:
    """Devices of every selected hardware from Prometheus: one query per hardware, all in flight together.

    With ``recorded`` (the default), one selector of Lens' recorded series goes first (:mod:`.recorded`):
    each hardware whose recording rules run is read from it, the others from the exporters' series.
    ``combined`` off sends each part of a hardware's raw refresh as its own query (the same answers, one
    round trip per quantity), as does a hardware whose exporter labels include the part tag.
    """
    from llm_d_lens.cluster.snapshot import gc_paused

    _check_mode(selection, mode)
    # Tens of thousands of rows become labels, samples and readings, none in a reference cycle:
    # the cyclic collector would walk them a few times over (a fifth of Lens' time in a refresh at
    # 1,000 devices) and find nothing, so it waits until the refresh is done.
    with gc_paused():
        return await _read_devices(client, selection, at, node, cluster, mode, combined, recorded)


async def _read_devices(client: PrometheusClient, selection: Sequence[Selected], at: float | None, node: str | None,
                        cluster: ClusterObjects | None, mode: str | None, combined: bool, recorded: bool) -> DeviceReport:
    """Each hardware is assembled as soon as its answer (and the scrape targets') is in, while
    Prometheus still evaluates the others' queries, so little of Lens' work waits for the last answer."""
    before = client.queries_sent
    found, stale = await read_recorded(client, [s.plan for s in selection], at) if recorded else ({}, [])
    carrier = targets_carrier([s for s in selection if s.profile.id not in found])
    wanted = _wanted(cluster, node)
    targets: asyncio.Future[list[Sample]] = asyncio.get_running_loop().create_future()
    if carrier is None:
        targets.set_result([])

    async def read(chosen: Selected) -> _Read:
        with_targets = chosen.profile.id == carrier
        if combined and combinable(chosen.plan):
            rows = await read_refresh(client, chosen.plan, at, targets=with_targets)
        else:
            rows = each_parts(chosen.plan, await query_each(client, refresh_parts(chosen.plan, targets=with_targets), at))
        if "targets" in rows:
            targets.set_result(rows.pop("targets"))
        return _hardware(chosen, rows, cluster, mode, wanted, await targets)

    async def read_or_recorded(chosen: Selected) -> _Read:
        rows = found.get(chosen.profile.id)
        if rows is None:
            return await read(chosen)
        await asyncio.sleep(0)  # the raw refreshes' queries go out first
        return _hardware(chosen, {}, cluster, mode, wanted, (), rows)

    report = _report(selection, await gather_all(*(read_or_recorded(s) for s in selection)))
    report.warnings[:0] = stale
    report.recorded = [s.profile.id for s in selection if s.profile.id in found]
    report.queries_sent = client.queries_sent - before
    report.source = client.url
    return report


def snapshot_devices(
    text: str,
    source: str,
    selection: Sequence[Selected],
    *,
    target: str | None = None,
    node: str | None = None,
    cluster: ClusterObjects | None = None,
    mode: str | None = None,
) -> DeviceReport:
    """Devices read from one exporter page; ``target`` (``host:port``) stands in for Prometheus' ``instance``."""
    samples = parse_exposition(text, source)
    if target:
        samples = with_target_label(samples, target)
    return samples_devices(samples, source, selection, node=node, cluster=cluster, mode=mode)


def samples_devices(
    samples: Sequence[ExpositionSample],
    source: str,
    selection: Sequence[Selected],
    *,
    node: str | None = None,
    cluster: ClusterObjects | None = None,
    mode: str | None = None,
) -> DeviceReport:
    """Devices evaluated from parsed exposition samples (one page, or one instant of a recorded history)."""
    _check_mode(selection, mode)
    rows = {s.profile.id: evaluate(s.plan, samples) for s in selection}
    report = _finish(selection, rows, cluster, mode, node)
    report.source = source
    return report
