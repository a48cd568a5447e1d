"""One quantity's rows per tile, as columns: each row's tile key, its value, and which fallback answered it.

Every quantity row of a refresh carries only the tile labels (the node, device and tile spellings a
plan groups by), so a row is its key (those labels' values in the plan's order, "" where absent,
as PromQL's vector matching signs it) and its value. Kept as columns, matching one part against
another, folding tiles into devices and keying readings work on the keys themselves: no label dict
is built per row, and nothing reads a row's labels name by name more than once (a refresh has about
27 rows per device). The labels are rebuilt only where rows are shown as Prometheus answers them
(:meth:`TileRows.samples`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from llm_d_lens.monitoring.accelerator.plan import FALLBACK_LABEL
from llm_d_lens.prometheus.client import Sample

#: a row's tile labels' values, in the plan's order (``plan.raw_labels(TILE_KEY)``), "" where absent
RawKey = tuple[str, ...]
_BLANKS = repeat("")


@dataclass(slots=True)
class TileRows:
    """Rows of one part: ``keys[i]`` and ``values[i]`` are row i's; ``fallbacks[i]`` the number of the fallback that
    answered it (1 = first; 0 or ``fallbacks`` None: the quantity's own source)."""

    names: tuple[str, ...]  # the tile labels the keys' values belong to
    keys: list[RawKey]
    values: list[float]
    fallbacks: list[int] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def where(self, keep: Sequence[bool]) -> TileRows:
        """The rows ``keep`` marks, in order; this object itself when it marks all."""
        if all(keep):
            return self
        fallbacks = None if self.fallbacks is None else [f for f, k in zip(self.fallbacks, keep) if k]
        return TileRows(self.names, [r for r, k in zip(self.keys, keep) if k], [v for v, k in zip(self.values, keep) if k],
                        fallbacks)

    def labels(self, key: RawKey) -> dict[str, str]:
        """The labels of a row keyed ``key``, as Prometheus gives them: sorted by name, absent ones left out."""
        return {name: value for name, value in sorted(zip(self.names, key)) if value}

    def samples(self) -> list[Sample]:
        """The rows as the part's own query answers them: labels sorted by name, ``lens_fallback`` among them where a
        fallback answered."""
        fallbacks = self.fallbacks or [0] * len(self.keys)
        out = []
        for key, value, number in zip(self.keys, self.values, fallbacks):
            labels = self.labels(key)
            if number:
                labels = dict(sorted({**labels, FALLBACK_LABEL: str(number)}.items()))
            out.append(Sample(labels, value))
        return out

    @classmethod
    def of(cls, names: tuple[str, ...], rows: Sequence[Sample]) -> TileRows:
        """Rows read with their labels (a part sent as its own query): each row's key and fallback number read from them."""
        keys = [tuple(map(row.labels.get, names, _BLANKS)) for row in rows]
        fallbacks = [int(row.labels.get(FALLBACK_LABEL, "0") or 0) for row in rows]
        return cls(names, keys, [row.value for row in rows], fallbacks if any(fallbacks) else None)  # type: ignore[arg-type]
