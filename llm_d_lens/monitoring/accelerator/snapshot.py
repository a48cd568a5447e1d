"""The refresh queries of :mod:`.queries`, evaluated over one exporter page without Prometheus.

It answers with the rows Prometheus would return for the same queries (the exporter's own labels,
values in the common unit), so the rest of a reading (:mod:`.fold`, :mod:`.readings`) is one code
path for both. The conformance tests hold the two to the same numbers on the same samples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from llm_d_lens.monitoring.accelerator.fold import AGGREGATIONS
from llm_d_lens.monitoring.accelerator.plan import SENTINEL_LABEL, DevicePlan, QuantityPlan, SourcePlan, apply_factor
from llm_d_lens.monitoring.accelerator.queries import TILE_KEY, inventory_labels
from llm_d_lens.monitoring.accelerator.tilerows import KeyTable, TileRows, raw_key
from llm_d_lens.monitoring.exposition import ExpositionSample
from llm_d_lens.prometheus.client import Sample
from llm_d_lens.prometheus.promql import matches, parse_matcher

RawKey = tuple[str, ...]


def _selected(samples: Sequence[ExpositionSample], metric: str, matchers: Sequence[str]) -> list[ExpositionSample]:
    parsed = [parse_matcher(m) for m in matchers]
    return [s for s in samples if metric in s.names and all(matches(s.labels, *m) for m in parsed)]


def _grouped(samples: Sequence[ExpositionSample], names: Sequence[str], aggregation: str) -> dict[RawKey, float]:
    """``<aggregation> by (names)``: absent labels group as empty, as in PromQL."""
    groups: dict[RawKey, list[float]] = defaultdict(list)
    for sample in samples:
        groups[raw_key(sample.labels, names)].append(sample.value)
    reduce = AGGREGATIONS[aggregation]
    return {key: reduce(values) for key, values in groups.items()}


def _readings(plan: DevicePlan, metric: str, grouped: dict[RawKey, float]) -> dict[RawKey, float]:
    """``grouped`` without the tiles whose value is one of the exporter's sentinels (see :func:`.queries.without_sentinels`)."""
    if not plan.sentinel_rules(metric):
        return grouped
    return {k: v for k, v in grouped.items() if plan.is_reading(metric, v)}


def _combined(plan: DevicePlan, quantity: QuantityPlan | SourcePlan, samples: Sequence[ExpositionSample]) -> dict[RawKey, float]:
    names = plan.raw_labels(TILE_KEY)
    parts = [_readings(plan, m, _grouped(_selected(samples, m, quantity.matchers), names, quantity.aggregation))
             for m in quantity.metrics]
    if quantity.combine == "sum":
        keys = set.intersection(*(set(p) for p in parts))
        return {k: sum(p[k] for p in parts) for k in keys}
    if quantity.combine == "divide":
        numerator, denominator = parts
        return {k: numerator[k] / denominator[k] for k in numerator if denominator.get(k, 0) != 0}
    out: dict[RawKey, float] = {}
    for part in parts:  # "or": the first metric present for a key wins
        for key, value in part.items():
            out.setdefault(key, value)
    return out


def _rows(names: Sequence[str], values: dict[RawKey, float]) -> list[Sample]:
    return [Sample({n: v for n, v in zip(names, key) if v}, value) for key, value in values.items()]


def _sourced(plan: DevicePlan, quantity: QuantityPlan, samples: Sequence[ExpositionSample]) -> tuple[dict[RawKey, float], dict[RawKey, int]]:
    """Per tile, the first source (own, then fallbacks) with a value, converted; and which one answered."""
    values: dict[RawKey, float] = {}
    tags: dict[RawKey, int] = {}
    for number, source in enumerate(quantity.sources):
        for key, value in _combined(plan, source, samples).items():
            if key not in values:
                values[key] = apply_factor(value, source.factor)
                tags[key] = number
    return values, tags


def evaluate(plan: DevicePlan, samples: Sequence[ExpositionSample]) -> dict[str, list[Sample] | TileRows]:
    """The rows each refresh query (:func:`.queries.queries`) would return, computed from ``samples``: the inventory
    and sentinels as samples, each quantity as :class:`.tilerows.TileRows` (the shape a refresh gives them)."""
    identity_names = inventory_labels(plan)
    identities: dict[RawKey, float] = {}
    for metric, matchers in plan.identity_selectors():
        identities.update(_grouped(_selected(samples, metric, matchers), identity_names, "max"))
    out: dict[str, list[Sample] | TileRows] = {"inventory": _rows(identity_names, {key: 1.0 for key in identities})}
    tile_names = plan.raw_labels(TILE_KEY)
    table = KeyTable(tile_names)
    for quantity in plan.quantities:
        out[quantity.quantity.key] = TileRows.keyed(table, *_sourced(plan, quantity, samples))
    if plan.sentinel_selections():
        out["sentinels"] = _sentinels(plan, samples, tile_names)
    return out


def _sentinels(plan: DevicePlan, samples: Sequence[ExpositionSample], names: Sequence[str]) -> list[Sample]:
    """The rows :func:`.queries.sentinel_query` would return: per tile, a sentinel value and the metric that carried it."""
    out: list[Sample] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for metric, matchers, aggregation in plan.sentinel_selections():
        for key, value in _grouped(_selected(samples, metric, matchers), names, aggregation).items():
            if plan.sentinel_reason(metric, value) is None:
                continue
            labels = dict(sorted({**{n: v for n, v in zip(names, key) if v}, SENTINEL_LABEL: metric}.items()))
            if tuple(labels.items()) not in seen:
                seen.add(tuple(labels.items()))
                out.append(Sample(labels, value))
    return out
