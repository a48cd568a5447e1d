"""A :class:`~.plan.DevicePlan` rendered as PromQL: one query per quantity, plus one inventory query.

Each query covers every device of the hardware at once, so the number of queries a refresh sends
depends on the profiles, never on the number of devices. The steps, all inside Prometheus:

1. *relabel*: copy the exporter's labels onto ``lens_*`` labels with ``label_replace``; where the
   profile lists alternative spellings (``Hostname``/``hostname``, ``exported_pod``/``pod``) the
   first one a series carries wins. A node taken from ``instance`` loses its port.
2. *normalise*: collapse each metric to one series per device (or tile) with the source's
   ``aggregation``; series without a device label are dropped.
3. *combine* the source's metrics (first present, sum, or divide, skipping zero divisors).
4. *convert* to the common unit with an exact factor.
5. *fold* tiles into their device with ``tile_aggregation``. A device-level series (no tile
   label) wins over its tiles, so an exporter's own device aggregates are never added to the
   tiles they summarise.
"""

from __future__ import annotations

from collections.abc import Iterable

from llm_d_lens.monitoring.accelerator.plan import COMMON_LABELS, KEY_LABELS, DevicePlan, QuantityPlan, lens_label
from llm_d_lens.monitoring.prometheus.promql import label_name, quote, replacement_literal, selector

#: A node read from ``instance`` (``host:port``) keeps only the host.
NODE_REGEX = "(.+?)(?::[0-9]+)?"
ANY_VALUE = "(.+)"
#: Which tile answers for a ``first`` fold when the device has no device-level series.
PRIMARY_TILE = "0"

_DEVICE = lens_label("device")
_SUB = lens_label("sub")
_NODE = lens_label("node")
_FOLDED_KEY = ", ".join(lens_label(name) for name in ("node", "device"))
_TILE_KEY = ", ".join(lens_label(name) for name in KEY_LABELS)


def relabel(expression: str, plan: DevicePlan, commons: Iterable[str]) -> str:
    """``expression`` with ``lens_<common>`` labels set from the exporter labels the plan names."""
    for common in commons:
        regex = NODE_REGEX if common == "node" else ANY_VALUE
        for source in reversed(plan.labels.get(common, ())):  # the first spelling is applied last, so it wins
            expression = (
                f"label_replace({expression}, {quote(lens_label(common))}, \"$1\", {quote(label_name(source))}, {quote(regex)})"
            )
    return expression


def _normalised(plan: DevicePlan, quantity: QuantityPlan, metric: str) -> str:
    series = relabel(selector(metric, quantity.matchers), plan, KEY_LABELS)
    return f"({quantity.aggregation} by ({_TILE_KEY}) ({series}) unless on({_DEVICE}) vector(1))"


def _combined(plan: DevicePlan, quantity: QuantityPlan) -> str:
    parts = [_normalised(plan, quantity, metric) for metric in quantity.metrics]
    if quantity.combine == "sum":
        return "(" + " + ".join(parts) + ")"
    if quantity.combine == "divide":
        return f"({parts[0]} / ({parts[1]} != 0))"
    return "(" + " or ".join(parts) + ")"


def _converted(expression: str, quantity: QuantityPlan) -> str:
    factor = quantity.factor
    if factor.numerator != 1:
        expression = f"({expression} * {factor.numerator})"
    if factor.denominator != 1:
        expression = f"({expression} / {factor.denominator})"
    return expression


def _folded(expression: str, fold: str) -> str:
    if fold == "none":
        return expression
    device_level = f"({expression} and on({_SUB}) vector(1))"
    if fold == "first":
        primary = f'label_replace(vector(1), {quote(_SUB)}, {quote(PRIMARY_TILE)}, "", "")'
        return (
            f"(max by ({_FOLDED_KEY}) {device_level}"
            f" or max by ({_FOLDED_KEY}) ({expression} and on({_SUB}) {primary})"
            f" or max by ({_FOLDED_KEY}) ({expression}))"
        )
    tiles = f"({expression} unless on({_SUB}) vector(1))"
    return f"({fold} by ({_FOLDED_KEY}) {device_level} or {fold} by ({_FOLDED_KEY}) {tiles})"


def on_node(expression: str, node: str | None) -> str:
    """Keep only series of ``node``; the name is a literal, whatever characters it holds."""
    if node is None:
        return expression
    wanted = f"label_replace(vector(1), {quote(_NODE)}, {replacement_literal(node)}, \"\", \"\")"
    return f"({expression}) and on({_NODE}) {wanted}"


def quantity_query(plan: DevicePlan, quantity: QuantityPlan, node: str | None = None) -> str:
    """One series per device (or tile) holding ``quantity`` in its common unit."""
    return on_node(_folded(_converted(_combined(plan, quantity), quantity), quantity.fold), node)


def inventory_query(plan: DevicePlan, node: str | None = None) -> str:
    """One series per distinct identity (device, tile, ids, pod labels) any of the plan's metrics shows."""
    union = " or ".join(selector(metric, matchers) for metric, matchers in plan.metric_selectors())
    commons = [c for c in COMMON_LABELS if c in plan.labels]
    by = ", ".join(lens_label(c) for c in commons)
    return on_node(f"group by ({by}) ({relabel(f'({union})', plan, commons)})", node)


def queries(plan: DevicePlan, node: str | None = None) -> dict[str, str]:
    """Every query one refresh of this hardware sends: ``inventory`` and one per quantity."""
    out = {"inventory": inventory_query(plan, node)}
    out.update({q.quantity.key: quantity_query(plan, q, node) for q in plan.quantities})
    return out
