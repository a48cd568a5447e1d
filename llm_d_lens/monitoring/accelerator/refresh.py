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
rows the left lacks, the fallback number in ``lens_fallback``, labels in Prometheus' sorted order
and the same IEEE operations in the same order. Each part is therefore what its own query answers
(``test_combined`` holds every built-in profile to that, row by row, against a real Prometheus),
and the per-quantity PromQL stays what dashboards and ``lens telemetry queries`` show.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from llm_d_lens.monitoring.accelerator.fold import BLANKS, by_label_set
from llm_d_lens.monitoring.accelerator.plan import FALLBACK_LABEL, SENTINEL_LABEL, DevicePlan, QuantityPlan, SourcePlan
from llm_d_lens.monitoring.accelerator.queries import TILE_KEY, inventory_query, targets_query
from llm_d_lens.prometheus.client import PrometheusClient, Sample
from llm_d_lens.prometheus.combine import NAME_LABEL, PART_LABEL, named, tagged
from llm_d_lens.prometheus.errors import PrometheusResponseInvalid
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
    return RefreshQuery(_joined(parts), chosen, owners, tags, targets, plan.raw_labels(TILE_KEY))


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
    """A refresh answer taken apart: each selection's rows per metric (labels without the name), inventory, targets."""

    metrics: list[dict[str, list[Sample]]]
    inventory: list[Sample]
    targets: list[Sample]


def split(query: RefreshQuery, samples: Sequence[Sample]) -> Answer:
    """Each row to its part, name, copied name and tag removed; ``ValueError`` names a row no part of ``query`` answers.

    A selection's rows are told apart by ``lens_metric`` (the name copied), never by ``__name__``,
    which is dropped whether the engine kept it or not. The samples are the client's own, fresh from
    the answer and read by nothing else, so these labels are taken out in place rather than copied
    (once per row of the largest answers Lens reads). Every untagged metric's list is made once, so
    such a row (nearly all of them) costs one lookup by its copied name.
    """
    answer = Answer([{} for _ in query.selections], [], [])
    tags, metrics = query.tags, answer.metrics
    untagged = {metric: metrics[part].setdefault(metric, []) for metric, part in query.owners.items()}
    for sample in samples:
        labels: dict[str, str] = sample.labels  # type: ignore[assignment]
        if PART_LABEL not in labels:
            found = untagged.get(labels.get(NAME_LABEL))  # type: ignore[arg-type]
            if found is None:
                raise ValueError(f"a series that no part of the refresh query answers: {dict(labels)!r}")
            del labels[NAME_LABEL]
            labels.pop(NAME, None)
            found.append(sample)
            continue
        metric = labels.get(NAME_LABEL)
        part = tags.get(labels[PART_LABEL])
        if part is None or (type(part) is int and metric is None):
            raise ValueError(f"a series that no part of the refresh query answers: {dict(labels)!r}")
        del labels[PART_LABEL]
        if type(part) is int:
            del labels[NAME_LABEL]
            labels.pop(NAME, None)
            metrics[part].setdefault(metric, []).append(sample)  # type: ignore[arg-type]
        else:
            (answer.inventory if part == "inventory" else answer.targets).append(sample)
    return answer


class Signatures:
    """The signature vector matching uses here, per row: every row carries only the tile labels (absent = empty, as
    in Prometheus). Each label set is read name by name once per refresh answer, then found by its items: the
    quantities of a hardware match the same tiles again and again."""

    __slots__ = ("names", "_seen")

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self._seen: dict[tuple[tuple[str, str], ...], tuple[str, ...]] = {}

    def __call__(self, rows: Sequence[Sample]) -> list[tuple[str, ...]]:
        names = self.names
        return by_label_set(rows, self._seen, lambda labels: tuple(map(labels.get, names, BLANKS)))


def _binary(left: list[Sample], right: list[Sample], op: Callable[[float, float], float], keys: Signatures) -> list[Sample]:
    """``left <op> right`` one-to-one on every label: the left's rows that have a match, in the left's order."""
    if not left or not right:
        return []
    values = dict(zip(keys(right), [r.value for r in right]))
    return [Sample(row.labels, op(row.value, values[k])) for row, k in zip(left, keys(left)) if k in values]


def _or(left: list[Sample], right: list[Sample], keys: Signatures, label: str | None = None) -> list[Sample]:
    """``left or right``: every left row, then the right's rows whose signature no left row has; ``label`` (a
    fallback's number) is added to each of those as ``label_replace`` adds it, where Prometheus keeps every label set:
    sorted by name."""
    if not right:
        return left
    present = set(keys(left))
    extra = [row for row, k in zip(right, keys(right)) if k not in present]
    if label is not None:
        extra = [Sample(dict(sorted({**row.labels, FALLBACK_LABEL: label}.items())), row.value) for row in extra]
    return left + extra if extra else left


def _source_rows(source: SourcePlan, rows: Callable[[SourcePlan, str], list[Sample]], keys: Signatures) -> list[Sample]:
    """What ``queries._converted(queries._combined(plan, source))`` answers, from each metric's aggregated rows."""
    parts = [rows(source, m) for m in source.metrics]
    if source.combine == "sum":
        combined = parts[0]
        for part in parts[1:]:  # PromQL's + is left-associative: ((a + b) + c)
            combined = _binary(combined, part, operator.add, keys)
    elif source.combine == "divide":
        combined = _binary(parts[0], [r for r in parts[1] if r.value != 0], operator.truediv, keys)
    else:
        combined = parts[0]
        for part in parts[1:]:
            combined = _or(combined, part, keys)
    numerator, denominator = source.factor.numerator, source.factor.denominator
    # apply_factor's steps, inline and in one pass: multiply, then divide, each only when it is not by one
    if numerator != 1 and denominator != 1:
        return [Sample(r.labels, r.value * numerator / denominator) for r in combined]
    if numerator != 1:
        return [Sample(r.labels, r.value * numerator) for r in combined]
    if denominator != 1:
        return [Sample(r.labels, r.value / denominator) for r in combined]
    return combined


def quantity_rows(quantity: QuantityPlan, rows: Callable[[SourcePlan, str], list[Sample]], keys: Signatures) -> list[Sample]:
    """The rows :func:`.queries.quantity_query` answers, from ``rows(source, metric)``: that metric's aggregated rows,
    matched on the tile labels (``keys``, shared by every quantity of a refresh)."""
    out = _source_rows(quantity.primary, rows, keys)
    for number, fallback in enumerate(quantity.fallbacks, 1):
        out = _or(out, _source_rows(fallback, rows, keys), keys, str(number))
    return out


def sentinel_rows(plan: DevicePlan, raw: Callable[[tuple[str, ...], str, str], list[Sample]],
                  rows: Callable[[tuple[str, ...], str, str], list[Sample]]) -> list[Sample]:
    """What :func:`.queries.sentinel_query` answers, from ``raw(matchers, aggregation, metric)``, each metric's aggregated
    rows, and ``rows(...)``, those of them that are readings (:meth:`.plan.DevicePlan.readings`): only the others can be
    sentinels."""
    out: list[Sample] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for metric, matchers, aggregation in plan.sentinel_selections():
        found, readings = raw(matchers, aggregation, metric), rows(matchers, aggregation, metric)
        if len(readings) == len(found):
            continue
        kept = set(map(id, readings))
        for row in found:
            if id(row) in kept or plan.sentinel_reason(metric, row.value) is None:
                continue
            labels = dict(sorted({**row.labels, SENTINEL_LABEL: metric}.items()))
            key = tuple(labels.items())
            if key not in seen:  # ``or`` keeps the first of equal label sets
                seen.add(key)
                out.append(Sample(labels, row.value))
    return out


def parts(plan: DevicePlan, query: RefreshQuery, answer: Answer) -> dict[str, list[Sample]]:
    """Every part of the refresh (:func:`.queries.refresh_parts`' names and order) from the taken-apart answer."""
    index = {(s.matchers, s.aggregation): i for i, s in enumerate(query.selections)}
    found: dict[tuple[tuple[str, ...], str, str], list[Sample]] = {}

    def raw(matchers: tuple[str, ...], aggregation: str, metric: str) -> list[Sample]:
        return answer.metrics[index[(matchers, aggregation)]].get(metric, [])

    def readings(matchers: tuple[str, ...], aggregation: str, metric: str) -> list[Sample]:
        """``metric``'s rows without sentinels (as queries.without_sentinels), worked out once per selection:
        quantities and fallbacks read the same metrics (a memory total is used + free + reserved)."""
        key = (matchers, aggregation, metric)
        rows = found.get(key)
        if rows is None:
            rows = found[key] = plan.readings(metric, raw(*key))
        return rows

    def rows(source: SourcePlan, metric: str) -> list[Sample]:
        return readings(source.matchers, source.aggregation, metric)

    out = {"inventory": answer.inventory}
    keys = Signatures(query.labels)
    out.update({q.quantity.key: quantity_rows(q, rows, keys) for q in plan.quantities})
    if plan.sentinel_selections():
        out["sentinels"] = sentinel_rows(plan, raw, readings)
    if query.targets:
        out["targets"] = answer.targets
    return out


async def read_refresh(client: PrometheusClient, plan: DevicePlan, at: float | None = None, *,
                       targets: bool = False) -> dict[str, list[Sample]]:
    """Every part of one hardware's refresh at ``at``, in one round trip."""
    query = refresh_query(plan, targets=targets)
    samples = await client.query(query.promql, at)
    try:
        answer = split(query, samples)
    except ValueError as exc:
        shown = query.promql if len(query.promql) <= 300 else query.promql[:300] + "..."
        raise PrometheusResponseInvalid(f"Prometheus at {client.url} answered {exc} (query: {shown})",
                                        details={"url": client.url, "query": query.promql}) from None
    return parts(plan, query, answer)
