"""Which telemetry provider ids are registered, as the contract layer can see it.

A profile's ``telemetry.provider_id`` must name a registered telemetry provider (the guide).
The providers themselves live in ``monitoring/accelerator/registry.py``, a floor above the
contract, so ``validate`` and ``doctor`` read the same two sources without importing it: the
built-in declarative provider and the names in the entry-point group. A test holds these
constants equal to the monitoring registry's.
"""

from __future__ import annotations

from collections.abc import Iterable

from llm_d_lens.hardware.entry_points import EntryPoint, installed

GROUP = "llm_d_lens.telemetry.providers"
DECLARATIVE = "declarative"


def registered_ids(eps: Iterable[EntryPoint] | None = None) -> frozenset[str]:
    """The built-in id and every entry-point name in the group (whether it loads is the doctor's and /readyz's)."""
    found = eps if eps is not None else installed((GROUP,))[GROUP]
    return frozenset({DECLARATIVE, *(ep.name for ep in found)})
