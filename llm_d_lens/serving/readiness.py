"""Whether the server is whole: every installed plugin registered, no conflict, every profile's
telemetry provider known, every watched live cluster's watch working.

A skipped plugin never takes the server down (liveness, ``/healthz``, stays 200), but an operator
and a load balancer should see it: ``/readyz`` answers 503 listing these problems, and
``lens serve --strict`` refuses to start while there are any. Each domain reports its own part;
this module only gathers them.
"""

from __future__ import annotations

from typing import Any


def problems() -> list[dict[str, Any]]:
    """Hardware plugin failures and conflicts, then telemetry providers the profiles name but nobody registered."""
    return [*registry_problems(), *watch_problems()]


#: (what the registry problems were worked out from, the list): see :func:`registry_problems`
_registry_problems: tuple[tuple[Any, ...], list[dict[str, Any]]] | None = None


def registry_problems() -> list[dict[str, Any]]:
    """The plugin and telemetry-provider part of :func:`problems`, kept while the registries are unchanged.

    Both registries are fixed once built, except for the failures they record: the list is worked
    out again when either registry is replaced or records another failure. A telemetry provider that
    failed to load just now (its import timed out, say) is not recorded by its registry and may load
    next time, so a list holding one is never kept. The list returned is shared: do not change it.
    """
    global _registry_problems
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.registry import get_telemetry_registry

    registry, telemetry = get_registry(), get_telemetry_registry()
    known = _registry_problems
    if known is not None and known[0] == _registries_key(registry, telemetry):
        return known[1]
    registry.load_all_providers()
    found = [failure.to_dict() for failure in registry.failures]
    recorded = telemetry.problems([])  # the failures the telemetry registry recorded itself
    found += telemetry.problems(registry.profiles())
    transient = len(found) - len(registry.failures) > len(recorded)
    _registry_problems = None if transient else (_registries_key(registry, telemetry), found)
    return found


def _registries_key(registry: Any, telemetry: Any) -> tuple[Any, ...]:
    # the objects themselves, not their ids: a replaced registry's id may be reused by the next one
    return (registry, len(registry.failures), telemetry, len(telemetry.failures))


def watch_problems() -> list[dict[str, Any]]:
    """Live clusters whose watch is broken (``kind: cluster-watch``): their answers are the last known state."""
    from llm_d_lens.serving.watched import problems as broken_watches

    return broken_watches()


def describe(found: list[dict[str, Any]]) -> str:
    plugins = [p for p in found if p.get("kind") != "cluster-watch"]
    watches = [p for p in found if p.get("kind") == "cluster-watch"]
    parts = []
    if plugins:
        parts.append(f"{len(plugins)} hardware plugin problem{'s' if len(plugins) != 1 else ''}: "
                     + "; ".join(f"{p['name']} from {p['distribution']} ({p['kind']}): {p['reason']}" for p in plugins))
    if watches:
        parts.append(f"{len(watches)} broken cluster watch{'es' if len(watches) != 1 else ''}: "
                     + "; ".join(f"cluster {p['name']} ({p['resource']}): {p['reason']}" for p in watches))
    return "; ".join(parts)


def refuse_if_strict(strict: bool) -> None:
    """Build the registry now; with ``strict``, any problem is a coded error and no server starts."""
    found = problems()
    if strict and found:
        from llm_d_lens.hardware.errors import PluginLoadFailed

        raise PluginLoadFailed(f"lens serve --strict: not starting, {describe(found)}", details={"problems": found})
