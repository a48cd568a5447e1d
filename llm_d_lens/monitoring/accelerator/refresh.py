"""One refresh query per hardware that reads each metric once; the quantity rows are finished in Python.

The refresh's parts (:func:`.queries.queries`: an inventory and one query per quantity) read some
metrics several times (a memory total is used + free + reserved, its fallback used + free, and the
inventory reads used again), and Prometheus 2.x spends more on the operators around a selection
(``label_replace``, ``or``, arithmetic: each hashes and copies every series it passes on) than on
the selection itself. So the refresh asks for the selections alone, one aggregation per distinct
(matchers, aggregation) of the plan's sources over all their metrics at once::

    max by (__name__, <tile labels>) ({__name__=~"m1|m2|...", <matchers>})

which is, metric by metric, exactly ``max by (<tile labels>) (m1{<matchers>})``: the same groups,
values and order (a metric's series are a sorted subsequence of the selection's, and groups come
out in the order they first appear). Each selection's metric name is copied into the plain label
``lens_metric`` and tells its rows apart, so these need no tag; the inventory, the scrape targets
and any selection sharing a metric with another are tagged ``lens_quantity`` as in
:mod:`llm_d_lens.prometheus.combine`, and the parts are joined by
``or on(lens_metric, lens_quantity)``, under which no part's series matches another's. Joining on
``__name__`` instead would do the same on Prometheus, but VictoriaMetrics ignores the name there
and drops quantities; the rows are read by ``lens_metric``, so an engine that keeps or drops
``__name__`` in answers gives the same parts.

:func:`quantity_rows` then applies each quantity's combination (first present, sum, divide
skipping zero divisors), unit factor and fallbacks to those rows with PromQL's own rules: vector
matching on the tile labels, the left side's order, ``or`` keeping the left and then the right-hand
rows the left lacks, which fallback answered each row, and the same IEEE operations in the same
order (:meth:`.tilerows.TileRows.samples` shows the rows as Prometheus answers them: labels sorted,
the fallback's number in ``lens_fallback``). Each part is therefore what its own query answers
(``test_combined`` holds every built-in profile to that, row by row, against a real Prometheus),
and the per-quantity PromQL stays what dashboards and ``lens telemetry queries`` show.

The answer is decoded with each series' labels in a Struct of the labels the query can give
(:func:`row_labels`) and its quantity rows kept as numbered tile keys and values
(:mod:`.tilerows`): matching, the sentinel filter and folding index rows by their key's number and
never read a label per row; :meth:`.tilerows.TileRows.samples` shows them as Prometheus answers them.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from llm_d_lens.monitoring.accelerator.plan import SENTINEL_LABEL, DevicePlan, QuantityPlan, SourcePlan
from llm_d_lens.monitoring.accelerator.queries import TARGETS_LABELS, TILE_KEY, inventory_labels, inventory_query, targets_query
from llm_d_lens.monitoring.accelerator.tilerows import KeyTable, TileRows
from llm_d_lens.prometheus.answers import Row, attributes_reader, label_struct, numbers, present_labels
from llm_d_lens.prometheus.client import PrometheusClient, Sample
from llm_d_lens.prometheus.combine import NAME_LABEL, PART_LABEL, named, tagged
from llm_d_lens.prometheus.promql import label_name, matcher, regex_literal

NAME = "__name__"
#: what the joined parts match on: the metric name (copied) of an untagged selection's rows, the tag of the others'
_ON = f"{NAME_LABEL}, {PART_LABEL}"


@dataclass(frozen=True)
class Selection:
    """One aggregation of the refresh: every metric the plan reads with these matchers and this aggregation."""

    matchers: tuple[str, ...]
    aggregation: str
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class RefreshQuery:
    """What a refresh sends for one hardware, and how its answer is taken apart."""

    promql: str
    selections: tuple[Selection, ...]
    owners: Mapping[str, int]  # metric -> the untagged selection whose rows carry that name
    tags: Mapping[str, int | str]  # tag -> a tagged selection's index, or "inventory" / "targets"
    targets: bool = False
    labels: tuple[str, ...] = field(default=())  # the tile labels every quantity row is grouped by
    extra: tuple[str, ...] = field(default=())  # the other labels the inventory's and the targets' rows carry


def selections(plan: DevicePlan) -> tuple[Selection, ...]:
    """The distinct (matchers, aggregation) of every source and fallback, each with its metrics, in declaration order."""
    groups: dict[tuple[tuple[str, ...], str], dict[str, None]] = {}
    for quantity in plan.quantities:
        for source in quantity.sources:
            groups.setdefault((source.matchers, source.aggregation), {}).update(dict.fromkeys(source.metrics))
    return tuple(Selection(matchers, aggregation, tuple(metrics)) for (matchers, aggregation), metrics in groups.items())


def selection_query(plan: DevicePlan, selection: Selection) -> str:
    """``<aggregation> by (__name__, <tile labels>)`` of every metric of ``selection`` at once."""
    by = ", ".join(label_name(n) for n in (NAME, *plan.raw_labels(TILE_KEY)))
    names = matcher(NAME, "=~", "|".join(regex_literal(m) for m in selection.metrics))
    return f"{selection.aggregation} by ({by}) ({{{', '.join((names, *selection.matchers))}}})"


def refresh_query(plan: DevicePlan, *, targets: bool = False) -> RefreshQuery:
    """The one query a refresh of ``plan`` sends (``targets``: with the scrape targets' query riding along)."""
    chosen = selections(plan)
    parts: list[tuple[str, float]] = []
    owners: dict[str, int] = {}
    tags: dict[str, int | str] = {}
    for index, selection in enumerate(chosen):
        expression = named(selection_query(plan, selection))
        if any(m in owners for m in selection.metrics):  # a metric another untagged selection reads: tag these rows
            tags[f"metrics-{index}"] = index
            expression = tagged(f"metrics-{index}", expression)
        else:
            owners.update(dict.fromkeys(selection.metrics, index))
        parts.append((expression, len(selection.metrics)))
    # the inventory has about one row per device and tile, as one metric has; the targets one per exporter
    extra = {"inventory": (inventory_query(plan), len(plan.identity_selectors())),
             **({"targets": (targets_query(), 0.1)} if targets else {})}
    for name, (promql, weight) in extra.items():
        tags[name] = name
        parts.append((tagged(name, promql), weight))
    extra = (*inventory_labels(plan), *(TARGETS_LABELS if targets else ()))
    return RefreshQuery(_joined(parts), chosen, owners, tags, targets, plan.raw_labels(TILE_KEY), extra)


def _joined(expressions: Sequence[tuple[str, float]]) -> str:
    """``(expression, weight)`` joined by ``or`` with the heaviest parts nearest the top.

    Each set operation hashes and copies every series passing it, so the parts are merged as in a
    Huffman code: the two lightest first, again and again, and a part's rows pass fewer operations
    the more rows it has (weights estimate them: the metrics a selection reads).
    """
    heap = [(weight, order, expression) for order, (expression, weight) in enumerate(expressions)]
    heapq.heapify(heap)
    order = len(heap)
    while len(heap) > 1:
        (light, _, left), (heavy, _, right) = heapq.heappop(heap), heapq.heappop(heap)
        heapq.heappush(heap, (light + heavy, order, f"({left} or on({_ON}) {right})"))
        order += 1
    return heap[0][2]


@dataclass
class Answer:
    """A refresh answer taken apart: each selection's rows per metric (as tile rows), inventory, targets."""

    metrics: list[dict[str, TileRows]]
    inventory: list[Sample]
    targets: list[Sample]
    table: KeyTable  # the tile keys the metrics' rows are numbered in


class _NoPart(ValueError):
    """A row that no part of the refresh query answers."""


def _attribute(label: str, index: int, tiles: Sequence[str]) -> str:
    return {NAME: "name", NAME_LABEL: "metric", PART_LABEL: "part"}.get(label) or (
        f"t{tiles.index(label)}" if label in tiles else f"o{index}")


def answer_fields(query: RefreshQuery) -> tuple[tuple[str, str], ...]:
    """(attribute, label) of every label the refresh answer can carry, sorted by label as Prometheus sorts them:
    the name and its copy, the tag, the tile labels (``t<i>``, in the plan's order), the inventory's and the
    targets' other labels."""
    labels = sorted({NAME, NAME_LABEL, PART_LABEL, *query.labels, *query.extra})
    return tuple((_attribute(label, i, query.labels), label) for i, label in enumerate(labels))


def row_labels(query: RefreshQuery) -> type[msgspec.Struct]:
    """The Struct a row's labels are decoded into (:func:`.answers.label_struct`): the name, its copy and the tag
    take only the values the query gives them (literals: no string per row)."""
    metrics = tuple(dict.fromkeys(m for s in query.selections for m in s.metrics))
    return label_struct(answer_fields(query), choices=(("name", metrics), ("metric", metrics), ("part", tuple(query.tags))))


def _key_reader(count: int) -> Callable[[Any], tuple[str, ...]]:
    """A row's tile key: its ``t0`` ... ``t<count-1>`` attributes, as one tuple."""
    return attributes_reader([f"t{i}" for i in range(count)])


def split(query: RefreshQuery, rows: Sequence[Row[Any]]) -> Answer:
    """Each row to its part; ``ValueError`` names a row no part of ``query`` answers, or a value that is no number.

    A selection's rows are told apart by ``lens_metric`` (the name copied), never by ``__name__``, which is
    dropped whether the engine kept it or not; each becomes its tile key and value in that metric's
    :class:`.tilerows.TileRows`, read from the decoded labels' attributes (no dict per row). Every untagged
    metric's rows are made once, so such a row (nearly all of them) costs one lookup by its copied name.
    The inventory's and the targets' rows keep their labels (without the tag) as samples.
    """
    table = KeyTable(query.labels)
    answer = Answer([{} for _ in query.selections], [], [], table)
    tags, metrics = query.tags, answer.metrics
    key = _key_reader(len(query.labels))

    def columns(part: int, metric: str) -> TileRows:
        found = metrics[part].get(metric)
        if found is None:
            found = metrics[part][metric] = TileRows(table, [], [])
        return found

    untagged = {metric: (rows.ids.append, rows.values.append)
                for metric, part in query.owners.items() for rows in (columns(part, metric),)}

    names = [label for _, label in answer_fields(query)]  # in the Struct's field order

    def labels(row: Row[Any]) -> dict[str, str]:
        return present_labels(names, msgspec.structs.astuple(row.metric))

    try:
        for row in rows:
            metric = row.metric
            if not metric.part:
                adds = untagged.get(metric.metric)
                if adds is None:
                    raise _NoPart(f"a series that no part of the refresh query answers: {labels(row)!r}")
                adds[0](table[key(metric)])
                adds[1](row.value[1])  # the value as spelled: each metric's are read as numbers at once, below
                continue
            part = tags.get(metric.part)
            if part is None or (type(part) is int and not metric.metric):
                raise _NoPart(f"a series that no part of the refresh query answers: {labels(row)!r}")
            if type(part) is int:
                found = columns(part, metric.metric)
                found.ids.append(table[key(metric)])
                found.values.append(row.value[1])
            else:
                kept = labels(row)
                del kept[PART_LABEL]  # the tag, which this row has
                (answer.inventory if part == "inventory" else answer.targets).append(Sample(kept, float(row.value[1])))
        for columns_of in metrics:
            for rows_of in columns_of.values():
                rows_of.values = numbers(rows_of.values)  # type: ignore[arg-type]
    except _NoPart:
        raise
    except ValueError as exc:
        raise ValueError(f"a malformed vector ({exc})") from None
    return answer


def _binary(left: TileRows, right: TileRows, op: Callable[[float, float], float]) -> TileRows:
    """``left <op> right`` one-to-one on every label: the left's rows that have a match, in the left's order."""
    if not left.ids or not right.ids:
        return TileRows(left.table, [], [])
    values = dict(zip(right.ids, right.values))
    if all(map(values.__contains__, left.ids)):  # every left row matches (the common case)
        return TileRows(left.table, left.ids, [op(v, values[i]) for i, v in zip(left.ids, left.values)])
    ids = [i for i in left.ids if i in values]
    return TileRows(left.table, ids, [op(v, values[i]) for i, v in zip(left.ids, left.values) if i in values])


def _or(left: TileRows, right: TileRows, fallback: int = 0) -> TileRows:
    """``left or right``: every left row, then the right's rows whose key no left row has; ``fallback`` (a fallback's
    number) marks those as answered by it, as ``label_replace`` adds ``lens_fallback``."""
    if not right.ids:
        return left
    present = set(left.ids)
    extra = [n for n, i in enumerate(right.ids) if i not in present]
    if not extra:
        return left
    ids = left.ids + [right.ids[n] for n in extra]
    values = left.values + [right.values[n] for n in extra]
    if fallback:
        added = [fallback] * len(extra)
    elif right.fallbacks is not None:
        added = [right.fallbacks[n] for n in extra]
    else:
        added = None
    if added is None and left.fallbacks is None:
        return TileRows(left.table, ids, values)
    return TileRows(left.table, ids, values, (left.fallbacks or [0] * len(left.ids)) + (added or [0] * len(extra)))


def _source_rows(source: SourcePlan, rows: Callable[[SourcePlan, str], TileRows]) -> TileRows:
    """What ``queries._converted(queries._combined(plan, source))`` answers, from each metric's aggregated rows."""
    parts = [rows(source, m) for m in source.metrics]
    if source.combine == "sum":
        combined = parts[0]
        for part in parts[1:]:  # PromQL's + is left-associative: ((a + b) + c)
            combined = _binary(combined, part, operator.add)
    elif source.combine == "divide":
        combined = _binary(parts[0], parts[1].where([v != 0 for v in parts[1].values]), operator.truediv)
    else:
        combined = parts[0]
        for part in parts[1:]:
            combined = _or(combined, part)
    numerator, denominator = source.factor.numerator, source.factor.denominator
    # apply_factor's steps, inline and in one pass: multiply, then divide, each only when it is not by one
    if numerator != 1 and denominator != 1:
        values = [v * numerator / denominator for v in combined.values]
    elif numerator != 1:
        values = [v * numerator for v in combined.values]
    elif denominator != 1:
        values = [v / denominator for v in combined.values]
    else:
        return combined
    return TileRows(combined.table, combined.ids, values, combined.fallbacks)


def quantity_rows(quantity: QuantityPlan, rows: Callable[[SourcePlan, str], TileRows]) -> TileRows:
    """The rows :func:`.queries.quantity_query` answers, from ``rows(source, metric)``: that metric's aggregated rows,
    matched on the tile labels (every row's key)."""
    out = _source_rows(quantity.primary, rows)
    for number, fallback in enumerate(quantity.fallbacks, 1):
        out = _or(out, _source_rows(fallback, rows), number)
    return out


def sentinel_rows(plan: DevicePlan, raw: Callable[[tuple[str, ...], str, str], TileRows],
                  rows: Callable[[tuple[str, ...], str, str], TileRows]) -> list[Sample]:
    """What :func:`.queries.sentinel_query` answers, from ``raw(matchers, aggregation, metric)``, each metric's aggregated
    rows, and ``rows(...)``, those of them that are readings (:func:`readings`): only the others can be sentinels."""
    out: list[Sample] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for metric, matchers, aggregation in plan.sentinel_selections():
        found, readings = raw(matchers, aggregation, metric), rows(matchers, aggregation, metric)
        if len(readings) == len(found):
            continue
        keys = found.table.keys_in_order()
        for key, value in zip(map(keys.__getitem__, found.ids), found.values):
            if plan.sentinel_reason(metric, value) is None:  # a reading (or a NaN, which no sentinel is)
                continue
            labels = dict(sorted({**found.labels(key), SENTINEL_LABEL: metric}.items()))
            items = tuple(labels.items())
            if items not in seen:  # ``or`` keeps the first of equal label sets
                seen.add(items)
                out.append(Sample(labels, value))
    return out


def readings(plan: DevicePlan, metric: str, rows: TileRows) -> TileRows:
    """The rows of ``metric`` whose values are readings (:meth:`.plan.DevicePlan.is_reading`'s test, one comprehension
    per metric); ``rows`` itself when no sentinel applies."""
    tests = plan.reading_test(metric)
    if tests is None:
        return rows
    below, exact = tests
    return rows.where([(below is None or v < below) and v not in exact for v in rows.values])


def parts(plan: DevicePlan, query: RefreshQuery, answer: Answer) -> dict[str, Any]:
    """Every part of the refresh (:func:`.queries.refresh_parts`' names and order) from the taken-apart answer: the
    inventory, sentinels and targets as samples, each quantity as :class:`.tilerows.TileRows`."""
    index = {(s.matchers, s.aggregation): i for i, s in enumerate(query.selections)}
    found: dict[tuple[tuple[str, ...], str, str], TileRows] = {}
    empty = TileRows(answer.table, [], [])

    def raw(matchers: tuple[str, ...], aggregation: str, metric: str) -> TileRows:
        return answer.metrics[index[(matchers, aggregation)]].get(metric, empty)

    def kept(matchers: tuple[str, ...], aggregation: str, metric: str) -> TileRows:
        """``metric``'s rows without sentinels (as queries.without_sentinels), worked out once per selection:
        quantities and fallbacks read the same metrics (a memory total is used + free + reserved)."""
        key = (matchers, aggregation, metric)
        rows = found.get(key)
        if rows is None:
            rows = found[key] = readings(plan, metric, raw(*key))
        return rows

    def rows(source: SourcePlan, metric: str) -> TileRows:
        return kept(source.matchers, source.aggregation, metric)

    out: dict[str, Any] = {"inventory": answer.inventory}
    out.update({q.quantity.key: quantity_rows(q, rows) for q in plan.quantities})
    if plan.sentinel_selections():
        out["sentinels"] = sentinel_rows(plan, raw, kept)
    if query.targets:
        out["targets"] = answer.targets
    return out


def each_parts(plan: DevicePlan, answers: dict[str, list[Sample]]) -> dict[str, Any]:
    """The parts sent one query each (:func:`.prometheus.combine.query_each`), in the shape :func:`parts` gives:
    each quantity's rows as :class:`.tilerows.TileRows`, keyed from their labels."""
    table = KeyTable(plan.raw_labels(TILE_KEY))
    keys = {q.quantity.key for q in plan.quantities}
    return {name: TileRows.of(table, rows) if name in keys else rows for name, rows in answers.items()}


async def read_refresh(client: PrometheusClient, plan: DevicePlan, at: float | None = None, *,
                       targets: bool = False) -> dict[str, Any]:
    """Every part of one hardware's refresh at ``at``, in one round trip (as :func:`parts` gives them)."""
    query = refresh_query(plan, targets=targets)
    rows = await client.query_rows(query.promql, row_labels(query), at)
    try:
        answer = split(query, rows)
    except ValueError as exc:
        raise client.answered_invalid(exc, query.promql) from None
    return parts(plan, query, answer)
