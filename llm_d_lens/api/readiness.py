"""Whether the server is whole: every installed plugin registered, no conflict, every profile's
telemetry provider known.

A skipped plugin never takes the server down (liveness, ``/healthz``, stays 200), but an operator
and a load balancer should see it: ``/readyz`` answers 503 listing these problems, and
``lens serve --strict`` refuses to start while there are any. Each domain reports its own part;
this module only gathers them.
"""

from __future__ import annotations

from typing import Any


def problems() -> list[dict[str, Any]]:
    """Hardware plugin failures and conflicts, then telemetry providers the profiles name but nobody registered."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.registry import get_telemetry_registry

    registry = get_registry()
    registry.load_all_providers()
    found = [failure.to_dict() for failure in registry.failures]
    found += get_telemetry_registry().problems(registry.profiles())
    return found


def describe(found: list[dict[str, Any]]) -> str:
    return (f"{len(found)} hardware plugin problem{'s' if len(found) != 1 else ''}: "
            + "; ".join(f"{p['name']} from {p['distribution']} ({p['kind']}): {p['reason']}" for p in found))


def refuse_if_strict(strict: bool) -> None:
    """Build the registry now; with ``strict``, any problem is a coded error and no server starts."""
    found = problems()
    if strict and found:
        from llm_d_lens.hardware.errors import PluginLoadFailed

        raise PluginLoadFailed(f"lens serve --strict: not starting, {describe(found)}", details={"problems": found})
