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
from typing import Any

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


#: the folds whose value over one row is that row's value (``sum`` and ``avg`` add it to 0, which turns -0.0 into 0.0)
_ONE = frozenset({"first", "max", "min"})

#: an endless "" for each name of :func:`raw_key` (stateless, so one serves every call)
BLANKS = repeat("")


def raw_key(labels: Mapping[str, str], names: Sequence[str]) -> tuple[str, ...]:
    """The values of ``names`` in ``labels``, "" where absent (asked once or twice per row of a refresh)."""
    return tuple(map(labels.get, names, BLANKS))


def relabelled(labels: Mapping[str, str], plan: DevicePlan, commons: Iterable[str]) -> dict[str, str]:
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


_UNSEEN = object()


def by_label_set(rows: Sequence[Sample], memo: dict[Any, Any], make: Callable[[Mapping[str, str]], Any]) -> list[Any]:
    """``make(row.labels)`` for each row, worked out once per distinct label set and kept in ``memo`` (keyed by the
    set's items): the quantities of one answer list the same devices and tiles again and again."""
    found = [memo.get(tuple(row.labels.items()), _UNSEEN) for row in rows]
    if _UNSEEN in found:  # a label set not seen yet
        found = [memo[items] if items in memo else memo.setdefault(items, make(row.labels))
                 for row in rows for items in (tuple(row.labels.items()),)]
    return found


class Keys:
    """What each distinct label set of one plan's rows stands for, worked out once per assembly: every quantity
    of a plan lists the same devices and tiles, so a label set is looked up by its items, not read name by name
    for every row of every quantity."""

    __slots__ = ("common", "tiles", "parts")

    def __init__(self) -> None:
        self.common: dict[tuple[str, ...], Key | None] = {}  # a device's exporter key -> its common key (None: none)
        self.tiles: dict[tuple[tuple[str, str], ...], Key | None] = {}  # a row's label items -> its tile's common key
        self.parts: dict[tuple[tuple[str, str], ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}  # -> device, tile


def per_device(plan: DevicePlan, quantity: QuantityPlan, rows: Sequence[Sample], keys: Keys | None = None) -> dict[Key, float]:
    """``quantity`` per device (or tile, when it does not fold), keyed by common (node, device, sub).

    Rows that land on the same key (two spellings of one node, say) are collapsed with max. ``keys``
    (:class:`Keys`) lets one assembly work out what each label set stands for once for all its quantities.
    """
    keys = Keys() if keys is None else keys
    if quantity.fold == "none":
        found = by_label_set(rows, keys.tiles, lambda labels: _common(plan, labels, tiles=True))
        return _collapse(found, [row.value for row in rows])
    device_raw, sub_raw = plan.raw_labels(DEVICE_KEY), plan.raw_labels(("sub",))
    common = keys.common
    pairs = by_label_set(rows, keys.parts, lambda labels: _raw_pair(labels, device_raw, sub_raw))
    raws = [pair[0] for pair in pairs]
    if len(set(raws)) == len(raws):  # one row per device (the common case): the fold of that one row
        found = [common[raw] if raw in common else common.setdefault(raw, _common(plan, dict(zip(device_raw, raw)), tiles=False))
                 for raw in raws]
        # the aggregation of one value is that value; sum and avg add it to 0, which turns -0.0 into 0.0
        return _collapse(found, [row.value for row in rows] if quantity.fold in _ONE else [0 + row.value for row in rows])
    devices: dict[tuple[str, ...], dict[tuple[str, ...], float]] = defaultdict(dict)
    for (raw, sub), row in zip(pairs, rows):
        devices[raw][sub] = row.value
    untiled = tuple("" for _ in sub_raw)
    found, values = [], []
    for raw, tiles_of in devices.items():
        key = common[raw] if raw in common else common.setdefault(raw, _common(plan, dict(zip(device_raw, raw)), tiles=False))
        if key is not None:
            found.append(key)
            values.append(_fold(quantity.fold, tiles_of, untiled))
    return _collapse(found, values)


def _raw_pair(labels: Mapping[str, str], device_raw: Sequence[str], sub_raw: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A row's device and tile by their exporter labels (absent: "")."""
    return tuple(map(labels.get, device_raw, BLANKS)), tuple(map(labels.get, sub_raw, BLANKS))


def _collapse(found: list[Key | None], values: list[float]) -> dict[Key, float]:
    """Each key's value, in the order the keys first come; values landing on one key collapsed with max (the first
    kept on a tie or a NaN, as ``max``' rule here always was); a None key (no device) left out."""
    if None not in found:
        out = dict(zip(found, values))  # type: ignore[arg-type]
        if len(out) == len(found):  # every key once (the common case): nothing to collapse
            return out
    out = {}
    for key, value in zip(found, values):
        if key is not None:
            previous = out.setdefault(key, value)
            if previous is not value and value > previous:
                out[key] = value
    return out


def _common(plan: DevicePlan, labels: Mapping[str, str], *, tiles: bool) -> Key | None:
    """The common (node, device, sub) of exporter ``labels`` (sub "" unless ``tiles``); None without a device."""
    device = _first(labels, plan.labels.get("device", ()))
    if not device:
        return None
    sub = _first(labels, plan.labels.get("sub", ())) if tiles else ""
    return (node_name(_first(labels, plan.labels.get("node", ()))), device, sub)


def fallbacks_used(plan: DevicePlan, quantity: QuantityPlan, rows: Sequence[Sample]) -> dict[Key, int]:
    """Which fallback answered each device (or tile) of ``quantity``, where one did: its number (1 = first).

    A folded device whose tiles were read from different sources reports the latest fallback used.
    """
    out: dict[Key, int] = {}
    if not quantity.fallbacks:  # only a fallback's rows carry its number
        return out
    node_names, device_names = plan.labels.get("node", ()), plan.labels.get("device", ())
    sub_names = plan.labels.get("sub", ()) if quantity.fold == "none" else ()
    for row in [r for r in rows if FALLBACK_LABEL in r.labels]:  # most devices answer from the primary source
        number = int(row.labels.get(FALLBACK_LABEL, "0") or 0)
        device = _first(row.labels, device_names)
        if not number or not device:
            continue
        key = (node_name(_first(row.labels, node_names)), device, _first(row.labels, sub_names))
        out[key] = max(number, out.get(key, 0))
    return out
