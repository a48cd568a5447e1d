"""Device telemetry over a time range: the refresh of :mod:`.service`, repeated at every step.

A range is read with the same plan, the same queries and the same assembly as one refresh, so a
chart never shows a number a device table would not: from Prometheus, each quantity query goes out
once as a range query and its matrix is cut into one instant per step; from a recorded history
(exposition text with timestamps, as the demo ships), each timestamp's samples are evaluated like a
snapshot. Either way every instant goes through :func:`.readings.assemble`, which folds tiles and
names devices.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.monitoring.accelerator.plan import QUANTITIES, QUANTITY_BY_KEY
from llm_d_lens.monitoring.accelerator.queries import inventory_query, quantity_query
from llm_d_lens.monitoring.accelerator.readings import assemble
from llm_d_lens.monitoring.accelerator.refresh import each_parts
from llm_d_lens.monitoring.accelerator.service import Selected
from llm_d_lens.monitoring.accelerator.snapshot import evaluate
from llm_d_lens.monitoring.errors import SnapshotInvalid
from llm_d_lens.monitoring.exposition import ExpositionSample, timed_samples
from llm_d_lens.prometheus.client import PrometheusClient, Sample, Series, gather_all

#: Points per series a range is cut into when the caller gives no step: enough for a smooth line,
#: few enough that a 5,000-node cluster's series stay small.
DEFAULT_POINTS = 60
#: Prometheus refuses more than 11,000 points per series; Lens asks for far fewer.
MAX_POINTS = 1000

Point = tuple[float, float]
DeviceKey = tuple[str, str, str, str]  # hardware, node, device, tile


@dataclass
class DeviceSeries:
    hardware: str
    node: str
    device: str
    sub: str = ""
    model: str | None = None
    points: dict[str, list[Point]] = field(default_factory=dict)  # quantity field -> (t, value) in its common unit

    @property
    def name(self) -> str:
        return "/".join([self.node or "-", self.device] + ([self.sub] if self.sub else []))

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": self.hardware, "node": self.node or None, "device": self.device, "sub_device": self.sub or None,
            "name": self.name, "model": self.model,
            "series": {name: [[t, v] for t, v in points] for name, points in self.points.items()},
        }


@dataclass
class SeriesReport:
    start: float
    end: float
    step: float
    source: str = ""
    hardware: list[str] = field(default_factory=list)
    devices: list[DeviceSeries] = field(default_factory=list)
    queries_sent: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        used = {name for d in self.devices for name in d.points}
        return {
            "source": self.source, "hardware": self.hardware, "start": self.start, "end": self.end, "step": self.step,
            "queries": self.queries_sent,
            "quantities": [{"key": q.key, "field": q.field, "unit": q.unit, "title": q.title}
                           for q in QUANTITIES if q.field in used],
            "devices": [d.to_dict() for d in self.devices],
            "warnings": self.warnings,
        }


def grid(start: float, end: float, step: float | None) -> tuple[float, float, float]:
    """``(start, end, step)`` with a step that cuts the range into at most :data:`MAX_POINTS` points."""
    span = max(end - start, 0.0)
    if step is None or step <= 0:
        step = max(span / DEFAULT_POINTS, 1.0)
    step = max(step, span / MAX_POINTS, 1.0)
    return start, end, step


class _Collector:
    """Readings of successive instants, gathered per device and quantity."""

    def __init__(self, quantities: Iterable[str] | None):
        self.wanted = set(quantities) if quantities else None
        self.devices: dict[DeviceKey, DeviceSeries] = {}
        self.warnings: list[str] = []

    def add(self, selected: Selected, at: float, rows: Mapping[str, Any], node: str | None) -> None:
        assembled = assemble(selected.plan, rows)
        for reading in assembled.devices:
            if node is not None and reading.node != node:
                continue
            key = (reading.hardware, reading.node, reading.device, reading.sub)
            series = self.devices.get(key)
            if series is None:
                series = self.devices[key] = DeviceSeries(reading.hardware, reading.node, reading.device, reading.sub)
            series.model = series.model or reading.model
            for name, value in reading.values.items():
                if math.isfinite(value) and (self.wanted is None or name in self.wanted):
                    series.points.setdefault(name, []).append((at, value))
        for warning in assembled.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)

    def finish(self, report: SeriesReport) -> SeriesReport:
        report.devices = [self.devices[k] for k in sorted(self.devices, key=_natural_key)]
        report.warnings = self.warnings
        return report


def _fields(quantities: Sequence[str] | None) -> list[str] | None:
    """Quantity keys (``utilization``) or fields (``utilization_ratio``) as fields; None for all."""
    if not quantities:
        return None
    return [QUANTITY_BY_KEY[q].field if q in QUANTITY_BY_KEY else q for q in quantities]


async def read_series(
    client: PrometheusClient,
    selection: Sequence[Selected],
    *,
    start: float,
    end: float,
    step: float | None = None,
    quantities: Sequence[str] | None = None,
    node: str | None = None,
) -> SeriesReport:
    """Every selected device's quantities from ``start`` to ``end``: one range query per quantity, per hardware."""
    start, end, step = grid(start, end, step)
    fields = _fields(quantities)
    jobs: list[tuple[Selected, str, Any]] = []
    for chosen in selection:
        jobs.append((chosen, "inventory", client.query(inventory_query(chosen.plan), end)))
        for q in chosen.plan.quantities:
            if fields is None or q.quantity.field in fields:
                jobs.append((chosen, q.quantity.key, client.query_range(quantity_query(chosen.plan, q), start, end, step)))
    before = client.queries_sent
    answers = await gather_all(*(job for _, _, job in jobs))
    collector = _Collector(fields)
    for chosen in selection:
        inventory: list[Sample] = []
        matrices: dict[str, list[Series]] = {}
        for (owner, name, _), answer in zip(jobs, answers):
            if owner is chosen:
                if name == "inventory":
                    inventory = answer
                else:
                    matrices[name] = answer
        for at, rows in _instants(matrices):
            collector.add(chosen, at, each_parts(chosen.plan, {"inventory": inventory, **rows}), node)
    report = SeriesReport(start, end, step, source=client.url, hardware=[s.profile.id for s in selection])
    report.queries_sent = client.queries_sent - before
    return collector.finish(report)


def _instants(matrices: Mapping[str, Sequence[Series]]) -> list[tuple[float, dict[str, list[Sample]]]]:
    """The matrices cut into one instant vector per timestamp, in time order."""
    by_time: dict[float, dict[str, list[Sample]]] = defaultdict(lambda: defaultdict(list))
    for name, matrix in matrices.items():
        for series in matrix:
            for at, value in series.points:
                by_time[at][name].append(Sample(series.labels, value))
    return [(at, dict(by_time[at])) for at in sorted(by_time)]


@dataclass(frozen=True)
class History:
    """Exposition samples with their timestamps: a recorded history of exporter pages."""

    source: str
    instants: tuple[tuple[float, tuple[ExpositionSample, ...]], ...]

    @property
    def latest(self) -> float:
        return self.instants[-1][0] if self.instants else 0.0

    def shifted(self, offset: float) -> History:
        return History(self.source, tuple((t + offset, samples) for t, samples in self.instants))


def parse_history(text: str, source: str) -> History:
    """Exposition text whose samples carry timestamps, grouped by timestamp; an untimed sample is an error."""
    by_time: dict[float, list[ExpositionSample]] = defaultdict(list)
    for at, sample in timed_samples(text, source):
        if at is None:
            name = min(sample.names, key=len)
            raise SnapshotInvalid(f"{source}: sample {name} has no timestamp; a history needs one on every sample",
                                  details={"source": source, "metric": name})
        by_time[at].append(sample)
    return History(source, tuple((t, tuple(by_time[t])) for t in sorted(by_time)))


def history_series(
    history: History,
    selection: Sequence[Selected],
    *,
    start: float,
    end: float,
    step: float | None = None,
    quantities: Sequence[str] | None = None,
    node: str | None = None,
) -> SeriesReport:
    """The same report as :func:`read_series`, evaluated over a recorded history's instants in the range.

    Instants closer together than ``step`` are thinned to the first of each step, as a range query
    samples one value per step.
    """
    start, end, step = grid(start, end, step)
    fields = _fields(quantities)
    collector = _Collector(fields)
    last: float | None = None
    for at, samples in history.instants:
        if not start <= at <= end or (last is not None and at - last < step):
            continue
        last = at
        for chosen in selection:
            collector.add(chosen, at, evaluate(chosen.plan, samples), node)
    report = SeriesReport(start, end, step, source=history.source, hardware=[s.profile.id for s in selection])
    return collector.finish(report)


def _natural_key(key: DeviceKey) -> tuple[Any, ...]:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in key)
