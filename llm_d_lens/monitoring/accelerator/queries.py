"""A :class:`~.plan.DevicePlan` rendered as PromQL, in two forms.

*Refresh queries* are what Lens asks: an inventory query and one query per quantity, per hardware,
each covering every device at once. A refresh asks for what they read in one expression per
hardware (each metric once, the quantities finished in Python with these queries' own rules, see
:mod:`.refresh`), so its round trips are as many as the hardware, never the quantities or devices;
these queries are what a refresh without combining sends, and what its answer is tested against. Each quantity query
selects the source's series (its matchers drop the exporter's own double-counting aggregates), collapses duplicates per device or tile with the
source's ``aggregation`` grouped by every spelling of the node, device and tile labels, combines the
source's metrics (first present, sum, or divide skipping zero divisors) and converts to the common
unit with an exact factor. The small per-tile result is then folded and relabelled by
:mod:`.fold`, the same code a direct snapshot goes through. (Prometheus 2.x spends far more on
``label_replace`` and set operators over every series than on the selection itself, so these two
steps stay out of the hot path.)

*Dashboard queries* do everything in PromQL, for pasting into Grafana or alerting rules: the same
steps, then the fold (a device-level series wins over its tiles; ``first`` takes tile ``0``) and the
relabelling onto ``lens_*`` labels (the first spelling a series carries wins; a node taken from
``instance`` loses its port). Tests hold both forms to the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable

from llm_d_lens.monitoring.accelerator.plan import (
    COMMON_LABELS, FALLBACK_LABEL, SENTINEL_LABEL, DevicePlan, QuantityPlan, SourcePlan, lens_label,
)
from llm_d_lens.prometheus.combine import carries_tag
from llm_d_lens.prometheus.promql import label_name, quote, replacement_literal, selector

#: A node read from ``instance`` (``host:port``) keeps only the host.
NODE_REGEX = "(.+?)(?::[0-9]+)?"
ANY_VALUE = "(.+)"
#: Which tile answers for a ``first`` fold when the device has no device-level series.
PRIMARY_TILE = "0"
#: Labels Prometheus gives every series of a scrape target: the inventory keeps them, so a pod label
#: that is the target's own (the exporter's pod) can be told from the workload's.
TARGET_LABELS = ("job", "instance")
DEVICE_KEY = ("node", "device")
TILE_KEY = ("node", "device", "sub")

_DEVICE = lens_label("device")
_NODE = lens_label("node")


def relabel(expression: str, plan: DevicePlan, commons: Iterable[str]) -> str:
    """``expression`` with ``lens_<common>`` labels set from the exporter labels the plan names."""
    for common in commons:
        regex = NODE_REGEX if common == "node" else ANY_VALUE
        for source in reversed(plan.labels.get(common, ())):  # the first spelling is applied last, so it wins
            expression = (
                f"label_replace({expression}, {quote(lens_label(common))}, \"$1\", {quote(label_name(source))}, {quote(regex)})"
            )
    return expression


def _by(names: Iterable[str]) -> str:
    return ", ".join(label_name(n) for n in names)


def _number(value: float) -> str:
    """A float as a PromQL literal that parses back to the same double."""
    return repr(float(value))


def _aggregated(plan: DevicePlan, metric: str, matchers: tuple[str, ...], aggregation: str) -> str:
    return f"{aggregation} by ({_by(plan.raw_labels(TILE_KEY))}) ({selector(metric, matchers)})"


def without_sentinels(plan: DevicePlan, metric: str, expression: str) -> str:
    """``expression`` (one metric, aggregated per tile) without the rows the exporter's sentinel table calls no reading.

    The filter comes after the per-tile aggregation, as Lens' own evaluation of a page applies it, so a
    tile whose samples include a sentinel has no reading rather than a number mixed with one.
    """
    for rule in plan.sentinel_rules(metric):
        if rule.at_least is not None:
            expression = f"({expression} < {_number(rule.at_least)})"
        for value in rule.values:
            expression = f"({expression} != {_number(value)})"
    return expression


def sentinel_query(plan: DevicePlan) -> str | None:
    """The rows whose value is a sentinel, per tile, each labelled with its metric (``lens_sentinel``); None without a table.

    Its answer is what lets a reading say why a quantity is null; the quantity queries themselves never see those rows.
    """
    parts = []
    for metric, matchers, aggregation in plan.sentinel_selections():
        aggregated = _aggregated(plan, metric, matchers, aggregation)
        conditions = []
        for rule in plan.sentinel_rules(metric):
            if rule.at_least is not None:
                conditions.append(f"({aggregated} >= {_number(rule.at_least)})")
            conditions.extend(f"({aggregated} == {_number(value)})" for value in rule.values)
        parts.append(f'label_replace(({" or ".join(conditions)}), {quote(SENTINEL_LABEL)}, {replacement_literal(metric)}, "", "")')
    return " or ".join(parts) if parts else None


def _combined(plan: DevicePlan, quantity: QuantityPlan | SourcePlan) -> str:
    parts = [without_sentinels(plan, m, _aggregated(plan, m, quantity.matchers, quantity.aggregation)) for m in quantity.metrics]
    if quantity.combine == "sum":
        return "(" + " + ".join(parts) + ")"
    if quantity.combine == "divide":
        return f"({parts[0]} / ({parts[1]} != 0))"
    return "(" + " or ".join(parts) + ")"


def _converted(expression: str, quantity: QuantityPlan | SourcePlan) -> str:
    factor = quantity.factor
    if factor.numerator != 1:
        expression = f"({expression} * {factor.numerator})"
    if factor.denominator != 1:
        expression = f"({expression} / {factor.denominator})"
    return expression


def _sourced(plan: DevicePlan, quantity: QuantityPlan) -> str:
    """The quantity per tile in its common unit: its own source, then each fallback where the ones before
    have no series for that tile (``or on`` the tile key). A fallback's rows carry ``lens_fallback``."""
    expression = _converted(_combined(plan, quantity), quantity)
    if not quantity.fallbacks:
        return expression
    on = _by(plan.raw_labels(TILE_KEY))
    for number, fallback in enumerate(quantity.fallbacks, 1):
        tagged = f'label_replace({_converted(_combined(plan, fallback), fallback)}, {quote(FALLBACK_LABEL)}, "{number}", "", "")'
        expression = f"({expression} or on({on}) {tagged})"
    return expression


def _folded(plan: DevicePlan, expression: str, fold: str) -> str:
    if fold == "none":
        return expression
    device_by, subs = _by(plan.raw_labels(DEVICE_KEY)), plan.raw_labels(("sub",))
    sub_on = _by(subs)
    device_level = f"({expression} and on({sub_on}) vector(1))"
    if fold == "first":
        primary = f'label_replace(vector(1), {quote(subs[0])}, {quote(PRIMARY_TILE)}, "", "")'
        return (
            f"(max by ({device_by}) {device_level}"
            f" or max by ({device_by}) ({expression} and on({sub_on}) {primary})"
            f" or max by ({device_by}) ({expression}))"
        )
    tiles = f"({expression} unless on({sub_on}) vector(1))"
    return f"({fold} by ({device_by}) {device_level} or {fold} by ({device_by}) {tiles})"


def on_lens_labels(plan: DevicePlan, expression: str, commons: tuple[str, ...]) -> str:
    """``expression`` (rows on the exporter's labels) as one series per ``lens_*`` key of ``commons``: the max of
    those landing on one key, rows without a device left out."""
    by = ", ".join(lens_label(c) for c in commons)
    return f"(max by ({by}) ({relabel(expression, plan, commons)}) unless on({_DEVICE}) vector(1))"


def on_node(expression: str, node: str | None) -> str:
    """Keep only series of ``node``; the name is a literal, whatever characters it holds."""
    if node is None:
        return expression
    wanted = f"label_replace(vector(1), {quote(_NODE)}, {replacement_literal(node)}, \"\", \"\")"
    return f"({expression}) and on({_NODE}) {wanted}"


def dashboard_query(plan: DevicePlan, quantity: QuantityPlan, node: str | None = None) -> str:
    """Self-contained PromQL: one series per device (or tile) in the common unit, on ``lens_*`` labels."""
    folded = _folded(plan, _sourced(plan, quantity), quantity.fold)
    return on_node(on_lens_labels(plan, folded, DEVICE_KEY if quantity.fold != "none" else TILE_KEY), node)


def dashboard_queries(plan: DevicePlan, node: str | None = None) -> dict[str, str]:
    return {q.quantity.key: dashboard_query(plan, q, node) for q in plan.quantities}


def quantity_query(plan: DevicePlan, quantity: QuantityPlan) -> str:
    """One series per tile (or device) in the common unit, on the exporter's own key labels."""
    return _sourced(plan, quantity)


def inventory_labels(plan: DevicePlan) -> tuple[str, ...]:
    """The exporter labels the inventory groups by: every common label's spellings, then the target's."""
    commons = tuple(c for c in COMMON_LABELS if c in plan.labels)
    return tuple(dict.fromkeys((*plan.raw_labels(commons), *TARGET_LABELS)))


#: the labels of the scrape targets' rows
TARGETS_LABELS = ("job", "instance", "namespace", "pod")


def targets_query() -> str:
    """Which pod each scrape target is (Prometheus' own ``up`` series): one query per refresh, whatever the hardware."""
    return f"group by ({_by(TARGETS_LABELS)}) (up)"


def inventory_query(plan: DevicePlan) -> str:
    """One series per distinct identity (device, tile, ids, pod labels, target) of the identity sources' series."""
    by = _by(inventory_labels(plan))
    return " or ".join(f"group by ({by}) ({selector(metric, matchers)})" for metric, matchers in plan.identity_selectors())


def queries(plan: DevicePlan) -> dict[str, str]:
    """Every query one refresh of this hardware sends: ``inventory``, one per quantity, and ``sentinels`` when the
    profile declares a sentinel table."""
    out = {"inventory": inventory_query(plan)}
    out.update({q.quantity.key: quantity_query(plan, q) for q in plan.quantities})
    sentinels = sentinel_query(plan)
    if sentinels is not None:
        out["sentinels"] = sentinels
    return out


def refresh_parts(plan: DevicePlan, *, targets: bool = False) -> dict[str, str]:
    """:func:`queries`, plus the refresh's ``targets`` query when this hardware carries it."""
    parts = queries(plan)
    if targets:
        parts["targets"] = targets_query()
    return parts


def combinable(plan: DevicePlan) -> bool:
    """Whether the plan's queries can share one expression: no exporter label it groups by is the part tag."""
    return not carries_tag(inventory_labels(plan))

