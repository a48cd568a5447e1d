"""What llm-d-benchmark's machine overlays replace in a scenario Lens writes, so Lens can warn.

llm-d-benchmark deep-merges a per-profile overlay (``overlays/<profile>.yaml``) over the merged
scenario, so a value the scenario sets at a path the overlay also sets is silently replaced; only a
``--set`` override is applied again after the overlay. Lens cannot ask llm-d-benchmark which
overlays it has, so it carries the values at the paths its scenarios write as data
(``benchmark_overlays.json``, with the source and revision), and reports each value an overlay would
replace, with the ``--set`` that keeps it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MISSING = object()


@dataclass(frozen=True)
class Overlay:
    """One overlay file: the benchmark profiles it is applied for and the values it sets."""

    name: str
    profiles: tuple[str, ...]
    sets: dict[str, Any]


@dataclass(frozen=True)
class OverlayTable:
    revision: str
    keep_with: str
    overlays: tuple[Overlay, ...]

    def for_profile(self, profile: str | None) -> list[Overlay]:
        """The overlays applied for a benchmark profile, in the order they are merged."""
        return [o for o in self.overlays if profile is not None and profile in o.profiles]


@lru_cache(maxsize=1)
def overlay_table() -> OverlayTable:
    """The package's overlay table (read once: it is package data, not user input)."""
    from importlib.resources import files

    data = json.loads(files("llm_d_lens.evaluate").joinpath("benchmark_overlays.json").read_text(encoding="utf-8"))
    overlays = tuple(Overlay(name, tuple(o["profiles"]), dict(o["sets"])) for name, o in data["overlays"].items())
    return OverlayTable(data["revision"], data["keep_with"], overlays)


def lookup(document: dict[str, Any], path: str) -> Any:
    """The value at a dotted path, or MISSING."""
    node: Any = document
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def replaced_values(entry: dict[str, Any], profile: str | None, table: OverlayTable | None = None) -> list[dict[str, Any]]:
    """One warning per scenario value an overlay for ``profile`` replaces with a different one."""
    table = table or overlay_table()
    warnings = []
    for overlay in table.for_profile(profile):
        for path, value in overlay.sets.items():
            ours = lookup(entry, path)
            if ours is MISSING or ours == value:
                continue
            keep = f"{table.keep_with} {path}={ours}"
            warnings.append({
                "code": "BENCHMARK_OVERLAY_REPLACES",
                "path": path, "scenario_value": ours, "overlay": overlay.name, "overlay_value": value,
                "keep_with": keep,
                "message": (f"llm-d-benchmark's {overlay.name!r} overlay (applied for benchmark profile {profile!r} after "
                            f"the scenario merge, revision {table.revision.split()[0][:8]}) sets {path} to {value!r}, "
                            f"replacing the scenario's {ours!r}; pass {keep!r} to llm-d-benchmark to keep it"),
            })
    return warnings
