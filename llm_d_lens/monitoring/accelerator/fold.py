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

from llm_d_lens.monitoring.accelerator.plan import DevicePlan, QuantityPlan
from llm_d_lens.monitoring.accelerator.queries import DEVICE_KEY, NODE_REGEX, PRIMARY_TILE
from llm_d_lens.monitoring.accelerator.tilerows import KeyTable, RawKey, TileRows

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

def relabeller(plan: DevicePlan, commons: Iterable[str]) -> Callable[[Mapping[str, str]], dict[str, str]]:
    """What gives a row's common labels (the first exporter spelling present wins), each common label's spellings
    looked up once per plan, not per row (an assembly relabels every device's inventory and sentinel row)."""
    spellings = [(common, plan.labels.get(common, ())) for common in commons]

    def relabel(labels: Mapping[str, str]) -> dict[str, str]:
        get = labels.get
        out: dict[str, str] = {}
        for common, sources in spellings:
            for source in sources:
                value = get(source)
                if value:
                    out[common] = node_name(value) if common == "node" else value
                    break
        return out
    return relabel


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
    """What each numbered tile key of one plan's rows stands for (:class:`.tilerows.KeyTable`), worked out once per
    key and kept by its number for one assembly: every quantity of a plan lists the same devices and tiles, so a
    row costs a list index, never a read of its labels."""

    __slots__ = ("table", "tiles", "devices", "device_keys", "subs", "_numbers")

    def __init__(self) -> None:
        self.table: KeyTable | None = None
        self.tiles: list[Key | None] = []  # by key number: its tile's common key (None: no device)
        self.devices: list[int] = []  # by key number: its device's number (one per distinct device spelling)
        self.device_keys: list[Key | None] = []  # by device number: its common key
        self.subs: list[RawKey] = []  # by key number: its tile labels' values
        self._numbers: dict[RawKey, int] = {}  # a device's exporter labels' values -> its number

    def _on(self, table: KeyTable) -> None:
        if table is not self.table:
            self.__init__()  # type: ignore[misc]
            self.table = table

    def fill_tiles(self, plan: DevicePlan, table: KeyTable) -> list[Key | None]:
        """:attr:`tiles`, made for every key of ``table``."""
        self._on(table)
        if len(self.tiles) < len(table):
            names = table.names
            self.tiles.extend(_common(plan, dict(zip(names, key)), tiles=True)
                              for key in table.keys_in_order()[len(self.tiles):])
        return self.tiles

    def fill_devices(self, plan: DevicePlan, table: KeyTable) -> Keys:
        """:attr:`devices`, :attr:`device_keys` and :attr:`subs`, made for every key of ``table``."""
        self._on(table)
        if len(self.devices) < len(table):
            names, device_raw = table.names, plan.raw_labels(DEVICE_KEY)
            device_of, sub_of = _picker(names, device_raw), _picker(names, plan.raw_labels(("sub",)))
            numbers = self._numbers
            for key in table.keys_in_order()[len(self.devices):]:
                device = device_of(key)
                number = numbers.get(device)
                if number is None:
                    number = numbers[device] = len(numbers)
                    self.device_keys.append(_common(plan, dict(zip(device_raw, device)), tiles=False))
                self.devices.append(number)
                self.subs.append(sub_of(key))
        return self


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
    if quantity.fold == "none":
        tiles = keys.fill_tiles(plan, rows.table)
        return _collapse([tiles[i] for i in rows.ids], rows.values)
    devices, device_keys = keys.fill_devices(plan, rows.table).devices, keys.device_keys
    raws = [devices[i] for i in rows.ids]
    if len(set(raws)) == len(raws):  # one row per device (the common case): the fold of that one row
        # the aggregation of one value is that value; sum and avg add it to 0, which turns -0.0 into 0.0
        return _collapse([device_keys[d] for d in raws], rows.values if quantity.fold in _ONE else [0 + v for v in rows.values])
    grouped: dict[int, dict[RawKey, float]] = defaultdict(dict)
    common: dict[int, Key | None] = {}
    for i, raw, value in zip(rows.ids, raws, rows.values):
        grouped[raw][keys.subs[i]] = value
        common[raw] = device_keys[raw]
    untiled = tuple("" for _ in plan.raw_labels(("sub",)))
    found, values = [], []
    for raw, tiles_of in grouped.items():
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
    tiles = quantity.fold == "none"
    keys = rows.table.keys_in_order()
    for number, fallback in zip(rows.ids, rows.fallbacks):
        if not fallback:
            continue
        key = _common(plan, dict(zip(rows.names, keys[number])), tiles=tiles)
        if key is not None:
            out[key] = max(fallback, out.get(key, 0))
    return out
