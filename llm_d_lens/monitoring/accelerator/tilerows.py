"""One quantity's rows per tile, as columns: each row's tile key (numbered), its value, and which fallback answered it.

Every quantity row of a refresh carries only the tile labels (the node, device and tile spellings a
plan groups by), so a row is its key (those labels' values in the plan's order, "" where absent,
as PromQL's vector matching signs it) and its value. An answer numbers its distinct keys once
(:class:`KeyTable`: about one per tile, each met about 27 times in a refresh), and its rows carry the
numbers: matching one part against another, folding tiles into devices and keying readings then
look rows up by small integers and work out what a key stands for once per key, never per row.
The labels are rebuilt only where rows are shown as Prometheus answers them (:meth:`TileRows.samples`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

from llm_d_lens.monitoring.accelerator.plan import FALLBACK_LABEL
from llm_d_lens.prometheus.client import Sample

#: a row's tile labels' values, in the plan's order (``plan.raw_labels(TILE_KEY)``), "" where absent
RawKey = tuple[str, ...]
#: an endless "" for each name of :func:`raw_key` (stateless, so one serves every call)
_BLANKS = repeat("")


def raw_key(labels: Mapping[str, str], names: Sequence[str]) -> RawKey:
    """The values of ``names`` in ``labels``, "" where absent: a row's key as PromQL's matching signs it."""
    return tuple(map(labels.get, names, _BLANKS))


class KeyTable(dict[RawKey, int]):
    """The distinct tile keys of one answer (or one evaluation of a page), numbered in the order they come:
    ``table[key]`` numbers a key on first sight. A dict subclass so that a row is numbered by one subscript."""

    __slots__ = ("names",)

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__()
        self.names = names  # the tile labels the keys' values belong to

    def __missing__(self, key: RawKey) -> int:
        number = self[key] = len(self)
        return number

    def keys_in_order(self) -> list[RawKey]:
        """Every key, at its number."""
        return list(self)


@dataclass(slots=True)
class TileRows:
    """Rows of one part: ``ids[i]`` (row i's key's number in ``table``) and ``values[i]`` are row i's; ``fallbacks[i]``
    the number of the fallback that answered it (1 = first; 0 or ``fallbacks`` None: the quantity's own source)."""

    table: KeyTable
    ids: list[int]
    values: list[float]
    fallbacks: list[int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def names(self) -> tuple[str, ...]:
        return self.table.names

    def where(self, keep: Sequence[bool]) -> TileRows:
        """The rows ``keep`` marks, in order; this object itself when it marks all."""
        if all(keep):
            return self
        fallbacks = None if self.fallbacks is None else [f for f, k in zip(self.fallbacks, keep) if k]
        return TileRows(self.table, [i for i, k in zip(self.ids, keep) if k], [v for v, k in zip(self.values, keep) if k],
                        fallbacks)

    def labels(self, key: RawKey) -> dict[str, str]:
        """The labels of a row keyed ``key``, as Prometheus gives them: sorted by name, absent ones left out."""
        return {name: value for name, value in sorted(zip(self.names, key)) if value}

    def samples(self) -> list[Sample]:
        """The rows as the part's own query answers them: labels sorted by name, ``lens_fallback`` among them where a
        fallback answered."""
        keys = self.table.keys_in_order()
        fallbacks = self.fallbacks or [0] * len(self.ids)
        out = []
        for number, value, fallback in zip(self.ids, self.values, fallbacks):
            labels = self.labels(keys[number])
            if fallback:
                labels = dict(sorted({**labels, FALLBACK_LABEL: str(fallback)}.items()))
            out.append(Sample(labels, value))
        return out

    @classmethod
    def of(cls, table: KeyTable, rows: Sequence[Sample]) -> TileRows:
        """Rows read with their labels (a part sent as its own query): each row's key and fallback number read from them."""
        names = table.names
        ids = [table[raw_key(row.labels, names)] for row in rows]
        fallbacks = [int(row.labels.get(FALLBACK_LABEL, "0") or 0) for row in rows]
        return cls(table, ids, [row.value for row in rows], fallbacks if any(fallbacks) else None)

    @classmethod
    def keyed(cls, table: KeyTable, values: dict[RawKey, float], fallbacks: dict[RawKey, int] | None = None) -> TileRows:
        """Rows from each key's value (and the fallback that answered it), in the dict's order."""
        numbers = [fallbacks[key] for key in values] if fallbacks else []
        return cls(table, [table[key] for key in values], list(values.values()), numbers if any(numbers) else None)
