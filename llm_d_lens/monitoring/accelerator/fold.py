"""The last two steps of every reading, in Python: fold tiles into devices, relabel onto common labels.

Input rows carry the exporter's own labels (from a refresh query or a direct snapshot): one row per
device or tile, already in the common unit. The rules are the dashboard PromQL's, step for step:

* fold per device (every spelling of node and device): a device-level row (no tile label) wins over
  its tiles; otherwise ``first`` takes tile ``0`` (else the largest), and sum/avg/max/min fold them;
* relabel: for each common label the first spelling a row carries wins, a node taken from
  ``instance`` loses its port, rows without a device are left out, and rows that land on the same
  device are collapsed with max.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import repeat

from llm_d_lens.monitoring.accelerator.plan import FALLBACK_LABEL, DevicePlan, QuantityPlan
from llm_d_lens.monitoring.accelerator.queries import DEVICE_KEY, NODE_REGEX, PRIMARY_TILE
from llm_d_lens.prometheus.client import Sample

Key = tuple[str, str, str]  # common (node, device, sub)
_NODE = re.compile(NODE_REGEX)

AGGREGATIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "sum": sum,
    "avg": lambda values: sum(values) / len(values),
    "max": max,
    "min": min,
}


#: an endless "" for each name of :func:`raw_key` (stateless, so one serves every call)
_BLANKS = repeat("")


def raw_key(labels: Mapping[str, str], names: Sequence[str]) -> tuple[str, ...]:
    """The values of ``names`` in ``labels``, "" where absent (asked once or twice per row of a refresh)."""
    return tuple(map(labels.get, names, _BLANKS))


def relabelled(labels: dict[str, str], plan: DevicePlan, commons: Iterable[str]) -> dict[str, str]:
    """The common labels of one row: the first exporter spelling present wins."""
    out: dict[str, str] = {}
    for common in commons:
        for source in plan.labels.get(common, ()):
            value = labels.get(source, "")
            if value:
                out[common] = node_name(value) if common == "node" else value
                break
    return out


@lru_cache(maxsize=4096)
def node_name(value: str) -> str:
    """The node an exporter's node label names: ``host:port`` (a target's ``instance``) keeps the host."""
    return _NODE.fullmatch(value).group(1) if value else value  # type: ignore[union-attr]


def _first(labels: Mapping[str, str], names: Sequence[str]) -> str:
    for name in names:
        value = labels.get(name)
        if value:
            return value
    return ""


def _fold(fold: str, tiles: dict[tuple[str, ...], float], untiled: tuple[str, ...]) -> float:
    if untiled in tiles:  # a device-level row wins over its tiles
        return tiles[untiled]
    if fold == "first":
        primary = (PRIMARY_TILE, *untiled[1:])
        return tiles[primary] if primary in tiles else max(tiles.values())
    return AGGREGATIONS[fold](list(tiles.values()))


def per_device(plan: DevicePlan, quantity: QuantityPlan, rows: Sequence[Sample],
               keys: dict[tuple[str, ...], Key | None] | None = None) -> dict[Key, float]:
    """``quantity`` per device (or tile, when it does not fold), keyed by common (node, device, sub).

    Rows that land on the same key (two spellings of one node, say) are collapsed with max. ``keys``
    holds the common key of each device's exporter labels (``plan.raw_labels(DEVICE_KEY)``' values),
    None for a device without one: every folded quantity of a plan lists the same devices, so one
    assembly works each key out once, not once per quantity.
    """
    node_names, device_names = plan.labels.get("node", ()), plan.labels.get("device", ())
    out: dict[Key, float] = {}
    if quantity.fold == "none":
        sub_names = plan.labels.get("sub", ())
        for row in rows:
            labels, value = row.labels, row.value
            device = _first(labels, device_names)
            if not device:
                continue
            key = (node_name(_first(labels, node_names)), device, _first(labels, sub_names))
            previous = out.get(key)
            out[key] = value if previous is None or value > previous else previous
        return out
    keys = {} if keys is None else keys
    device_raw, sub_raw = plan.raw_labels(DEVICE_KEY), plan.raw_labels(("sub",))
    devices: dict[tuple[str, ...], dict[tuple[str, ...], float]] = defaultdict(dict)
    for row in rows:  # raw_key, inline: twice per row of the largest answers
        get = row.labels.get
        devices[tuple(map(get, device_raw, _BLANKS))][tuple(map(get, sub_raw, _BLANKS))] = row.value
    untiled = tuple("" for _ in sub_raw)
    for raw, tiles in devices.items():
        if raw in keys:
            key = keys[raw]
        else:
            labels = dict(zip(device_raw, raw))
            device = _first(labels, device_names)
            key = keys[raw] = (node_name(_first(labels, node_names)), device, "") if device else None
        if key is None:
            continue
        value = _fold(quantity.fold, tiles, untiled)
        previous = out.get(key)
        out[key] = value if previous is None or value > previous else previous
    return out


def fallbacks_used(plan: DevicePlan, quantity: QuantityPlan, rows: Sequence[Sample]) -> dict[Key, int]:
    """Which fallback answered each device (or tile) of ``quantity``, where one did: its number (1 = first).

    A folded device whose tiles were read from different sources reports the latest fallback used.
    """
    node_names, device_names = plan.labels.get("node", ()), plan.labels.get("device", ())
    sub_names = plan.labels.get("sub", ()) if quantity.fold == "none" else ()
    out: dict[Key, int] = {}
    for row in rows:
        number = int(row.labels.get(FALLBACK_LABEL, "0") or 0)
        device = _first(row.labels, device_names)
        if not number or not device:
            continue
        key = (node_name(_first(row.labels, node_names)), device, _first(row.labels, sub_names))
        out[key] = max(number, out.get(key, 0))
    return out
