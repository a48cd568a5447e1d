"""The data half of the least-privilege proof: vendors' custom resources and driver charts' kinds.

Both are vendor facts, so they live as data in ``manifests/rbac-facts.yaml`` beside the roles,
never in core code. ``helm upgrade --install`` writes whatever a chart renders; helm needs, per
object, ``get`` (exists? and the live object for its three-way merge), ``create``, ``patch`` (an
upgrade) and ``delete`` (an object a newer chart version dropped). Hook Jobs are also listed and
watched until they finish. A chart's roles and bindings may grant what the installer itself lacks,
which Kubernetes allows only with ``escalate`` on roles and ``bind`` on the roles a binding names:
that is why the installer is opt-in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from llm_d_lens.incluster.access import Access
from llm_d_lens.incluster.errors import RoleInvalid
from llm_d_lens.incluster.resources import DEFAULT_TABLE, Resource, ResourceTable

OBJECT_VERBS = ("get", "create", "patch", "delete")
#: kinds helm waits on when a chart runs them as hooks
HOOK_VERBS = {"Job": ("list", "watch")}
#: verbs Kubernetes asks for before a role or binding may grant more than the creator holds
RBAC_VERBS = {"ClusterRole": ("bind", "escalate"), "Role": ("bind", "escalate")}


@dataclass(frozen=True)
class Facts:
    table: ResourceTable
    charts: dict[str, tuple[str, ...]]

    def chart_accesses(self, chart: str) -> list[Access] | None:
        """What installing ``chart`` asks beyond helm's own release records; None if it is not declared."""
        kinds = self.charts.get(chart_name(chart))
        if kinds is None:
            return None
        found = []
        for kind in kinds:
            resource = self.table.named_kind(kind)
            scope = "release-namespace" if resource.namespaced else "cluster"
            verbs = OBJECT_VERBS + HOOK_VERBS.get(kind, ()) + RBAC_VERBS.get(kind, ())
            found += [Access(verb, resource.group, resource.plural, scope=scope) for verb in verbs]
        return found


def chart_name(reference: str) -> str:
    """``oci://registry/charts/name``, ``name`` and a kustomize URL ``https://host/name?ref=v1`` all name ``name``."""
    return reference.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def load_facts(path: Path) -> Facts:
    """Read ``rbac-facts.yaml``; a malformed entry is a coded error naming the file and the field."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    extra = []
    for index, entry in enumerate(data.get("customResources") or []):
        try:
            extra.append(Resource(str(entry["kind"]), str(entry["group"]), str(entry["plural"]), bool(entry["namespaced"])))
        except (KeyError, TypeError):
            raise RoleInvalid(f"{path}: customResources[{index}] needs kind, group, plural and namespaced, not {entry!r}",
                              details={"file": str(path), "field": f"customResources[{index}]"}) from None
    charts = data.get("driverCharts") or {}
    kinds: dict[str, tuple[str, ...]] = {}
    for chart, entry in (charts.items() if isinstance(charts, Mapping) else ()):
        listed = entry.get("kinds") if isinstance(entry, Mapping) else None
        if not isinstance(listed, list) or not isinstance(entry.get("rendered"), str):
            raise RoleInvalid(f"{path}: driverCharts.{chart} needs kinds (a list) and rendered (where they were read)",
                              details={"file": str(path), "field": f"driverCharts.{chart}"})
        kinds[str(chart)] = tuple(str(kind) for kind in listed)
    if not isinstance(charts, Mapping):
        raise RoleInvalid(f"{path}: driverCharts must map chart names to their kinds",
                          details={"file": str(path), "field": "driverCharts"})
    return Facts(DEFAULT_TABLE.with_extra(extra), kinds)

