"""The last two steps of every reading, in Python: fold tiles into devices, relabel onto common labels.

Input rows are keyed by the exporter's own tile labels (:class:`.tilerows.TileRows`, from a refresh
query or a direct snapshot): one row per device or tile, already in the common unit. The rules are
the dashboard PromQL's, step for step:

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

from llm_d_lens.monitoring.accelerator.plan import DevicePlan, QuantityPlan
from llm_d_lens.monitoring.accelerator.queries import DEVICE_KEY, NODE_REGEX, PRIMARY_TILE
from llm_d_lens.monitoring.accelerator.tilerows import RawKey, TileRows

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


class Keys:
    """What each distinct tile key of one plan's rows stands for, worked out once per assembly: every quantity of a
    plan lists the same devices and tiles, so a key is looked up, not read name by name for every row of every
    quantity."""

    __slots__ = ("tiles", "devices")

    def __init__(self) -> None:
        self.tiles: dict[RawKey, Key | None] = {}  # a row's tile key -> its tile's common key (None: no device)
        self.devices: dict[RawKey, tuple[RawKey, RawKey, Key | None]] = {}  # -> its device's exporter key, tile, common key


def _picker(names: Sequence[str], wanted: Sequence[str]) -> Callable[[RawKey], RawKey]:
    """The values of ``wanted`` (each one of ``names``) out of a key over ``names``, as a tuple."""
    positions = [names.index(n) for n in wanted]
    return lambda key: tuple(key[i] for i in positions)


def per_device(plan: DevicePlan, quantity: QuantityPlan, rows: TileRows, keys: Keys | None = None) -> dict[Key, float]:
    """``quantity`` per device (or tile, when it does not fold), keyed by common (node, device, sub).

    Rows that land on the same key (two spellings of one node, say) are collapsed with max. ``keys``
    (:class:`Keys`) lets one assembly work out what each tile key stands for once for all its quantities.
    """
    keys = Keys() if keys is None else keys
    names = rows.names
    if quantity.fold == "none":
        tiles = keys.tiles
        found = [tiles[k] if k in tiles else tiles.setdefault(k, _common(plan, dict(zip(names, k)), tiles=True))
                 for k in rows.keys]
        return _collapse(found, rows.values)
    device_raw = plan.raw_labels(DEVICE_KEY)
    device_of, sub_of = _picker(names, device_raw), _picker(names, plan.raw_labels(("sub",)))

    def make(key: RawKey) -> tuple[RawKey, RawKey, Key | None]:
        device = device_of(key)
        return device, sub_of(key), _common(plan, dict(zip(device_raw, device)), tiles=False)

    memo = keys.devices
    triples = [memo[k] if k in memo else memo.setdefault(k, make(k)) for k in rows.keys]
    raws = [t[0] for t in triples]
    if len(set(raws)) == len(raws):  # one row per device (the common case): the fold of that one row
        # the aggregation of one value is that value; sum and avg add it to 0, which turns -0.0 into 0.0
        return _collapse([t[2] for t in triples], rows.values if quantity.fold in _ONE else [0 + v for v in rows.values])
    devices: dict[RawKey, dict[RawKey, float]] = defaultdict(dict)
    common: dict[RawKey, Key | None] = {}
    for (raw, sub, key), value in zip(triples, rows.values):
        devices[raw][sub] = value
        common[raw] = key
    untiled = tuple("" for _ in plan.raw_labels(("sub",)))
    found, values = [], []
    for raw, tiles_of in devices.items():
        key = common[raw]
        if key is not None:
            found.append(key)
            values.append(_fold(quantity.fold, tiles_of, untiled))
    return _collapse(found, values)


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


def fallbacks_used(plan: DevicePlan, quantity: QuantityPlan, rows: TileRows) -> dict[Key, int]:
    """Which fallback answered each device (or tile) of ``quantity``, where one did: its number (1 = first).

    A folded device whose tiles were read from different sources reports the latest fallback used.
    """
    out: dict[Key, int] = {}
    if not quantity.fallbacks or rows.fallbacks is None:  # most devices answer from the primary source
        return out
    node_names, device_names = plan.labels.get("node", ()), plan.labels.get("device", ())
    sub_names = plan.labels.get("sub", ()) if quantity.fold == "none" else ()
    for raw, number in zip(rows.keys, rows.fallbacks):
        if not number:
            continue
        labels = dict(zip(rows.names, raw))
        device = _first(labels, device_names)
        if not device:
            continue
        key = (node_name(_first(labels, node_names)), device, _first(labels, sub_names))
        out[key] = max(number, out.get(key, 0))
    return out
