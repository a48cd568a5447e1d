"""A :class:`~.plan.DevicePlan` evaluated over one exporter page, without Prometheus.

It answers with the same rows :mod:`.queries` gets from Prometheus (``lens_*`` labels, common units),
step for step: relabel, normalise, combine, convert, fold. The conformance tests hold the two
readers to the same numbers on the same samples.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from llm_d_lens.monitoring.accelerator.plan import (
    COMMON_LABELS,
    KEY_LABELS,
    DevicePlan,
    QuantityPlan,
    apply_factor,
    lens_label,
)
from llm_d_lens.monitoring.accelerator.queries import NODE_REGEX, PRIMARY_TILE
from llm_d_lens.monitoring.prometheus.client import Sample
from llm_d_lens.monitoring.prometheus.exposition import ExpositionSample
from llm_d_lens.monitoring.prometheus.promql import matches, parse_matcher

Key = tuple[str, str, str]  # (node, device, sub)
_NODE = re.compile(NODE_REGEX)

AGGREGATIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "sum": sum,
    "avg": lambda values: sum(values) / len(values),
    "max": max,
    "min": min,
}


def relabelled(labels: dict[str, str], plan: DevicePlan, commons: Iterable[str]) -> dict[str, str]:
    """The common labels of one series: the first exporter spelling present wins."""
    out: dict[str, str] = {}
    for common in commons:
        for source in plan.labels.get(common, ()):
            value = labels.get(source, "")
            if value:
                if common == "node":
                    value = _NODE.fullmatch(value).group(1)  # type: ignore[union-attr]
                out[common] = value
                break
    return out


def _selected(samples: Sequence[ExpositionSample], metric: str, matchers: Sequence[str]) -> list[ExpositionSample]:
    parsed = [parse_matcher(m) for m in matchers]
    return [s for s in samples if metric in s.names and all(matches(s.labels, *m) for m in parsed)]


def _normalised(plan: DevicePlan, quantity: QuantityPlan, samples: Sequence[ExpositionSample], metric: str) -> dict[Key, float]:
    groups: dict[Key, list[float]] = defaultdict(list)
    for sample in _selected(samples, metric, quantity.matchers):
        common = relabelled(sample.labels, plan, KEY_LABELS)
        if common.get("device"):
            groups[(common.get("node", ""), common["device"], common.get("sub", ""))].append(sample.value)
    reduce = AGGREGATIONS[quantity.aggregation]
    return {key: reduce(values) for key, values in groups.items()}


def _combined(plan: DevicePlan, quantity: QuantityPlan, samples: Sequence[ExpositionSample]) -> dict[Key, float]:
    parts = [_normalised(plan, quantity, samples, metric) for metric in quantity.metrics]
    if quantity.combine == "sum":
        keys = set.intersection(*(set(p) for p in parts))
        return {k: sum(p[k] for p in parts) for k in keys}
    if quantity.combine == "divide":
        numerator, denominator = parts
        return {k: numerator[k] / denominator[k] for k in numerator if denominator.get(k, 0) != 0}
    out: dict[Key, float] = {}
    for part in parts:
        for key, value in part.items():
            out.setdefault(key, value)
    return out


def _folded(values: dict[Key, float], fold: str) -> dict[Key, float]:
    if fold == "none":
        return values
    devices: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for (node, device, sub), value in values.items():
        devices[(node, device)][sub] = value
    out: dict[Key, float] = {}
    for (node, device), tiles in devices.items():
        if "" in tiles:  # a device-level series wins over its tiles
            out[(node, device, "")] = tiles[""]
        elif fold == "first":
            out[(node, device, "")] = tiles[PRIMARY_TILE] if PRIMARY_TILE in tiles else max(tiles.values())
        else:
            out[(node, device, "")] = AGGREGATIONS[fold](list(tiles.values()))
    return out


def _rows(values: dict[Key, float], node: str | None) -> list[Sample]:
    rows = []
    for (n, device, sub), value in values.items():
        if node is not None and n != node:
            continue
        labels = {lens_label("node"): n, lens_label("device"): device, lens_label("sub"): sub}
        rows.append(Sample({k: v for k, v in labels.items() if v}, value))
    return rows


def evaluate(plan: DevicePlan, samples: Sequence[ExpositionSample], node: str | None = None) -> dict[str, list[Sample]]:
    """The rows each query of :func:`.queries.queries` would return, computed from ``samples``."""
    out: dict[str, list[Sample]] = {"inventory": _inventory(plan, samples, node)}
    for quantity in plan.quantities:
        converted = {k: apply_factor(v, quantity.factor) for k, v in _combined(plan, quantity, samples).items()}
        out[quantity.quantity.key] = _rows(_folded(converted, quantity.fold), node)
    return out


def _inventory(plan: DevicePlan, samples: Sequence[ExpositionSample], node: str | None) -> list[Sample]:
    commons = [c for c in COMMON_LABELS if c in plan.labels]
    seen: dict[tuple[tuple[str, str], ...], None] = {}
    for metric, matchers in plan.metric_selectors():
        for sample in _selected(samples, metric, matchers):
            common = relabelled(sample.labels, plan, commons)
            if node is not None and common.get("node", "") != node:
                continue
            seen[tuple(sorted((lens_label(k), v) for k, v in common.items()))] = None
    return [Sample(dict(identity), 1.0) for identity in seen]
