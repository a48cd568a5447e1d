"""llm-d-benchmark scenario settings for a hardware, an access mode and a workload.

Everything hardware-specific is read from the profile: the benchmark profile (per mode, or per
extended resource where the benchmark profile follows the resource), the resource name or DRA
class, and whether a mode requests accelerators at all. llm-d-benchmark's conventions fix the
shape: ``accelerator.type``/``profile``; ``resource`` for an extended-resource mode, or
``draDriver`` for a DRA one with ``resource: ""`` (a DRA class is not a container resource, and
llm-d-benchmark's defaults carry an extended resource that only an empty string clears: its merge
skips a null); a ``dra`` block keyed by the type; a per-role accelerator count; ``count: 0`` for a
run without accelerators. The merge rules relied on are in docs/evaluate.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.evaluate.errors import AccessModeUnknown, BenchmarkUnsupported
from llm_d_lens.evaluate.workload import Parallelism, WorkloadProfile
from llm_d_lens.hardware.models import DeploymentMode, HardwareProfile

DEFAULT_GUIDE = "optimized-baseline"

#: ``accelerator.resource`` of a DRA scenario: llm-d-benchmark requests no extended resource for an
#: empty name, while a missing key (or null, which its merge skips) keeps its default resource.
NO_EXTENDED_RESOURCE = ""


@dataclass(frozen=True)
class Target:
    """The hardware side of a benchmark: which profile, which access mode, which resource."""

    hardware: HardwareProfile
    mode_name: str
    mode: DeploymentMode
    resource: str | None = None
    #: a DRA mode asked for a partition: (partition device class, qualified attribute, partition profile)
    partition: tuple[str, str, str] | None = None

    @property
    def uses_accelerators(self) -> bool:
        return self.mode.request_model != "none"

    def benchmark_profile(self) -> str | None:
        by_resource = self.mode.benchmark_profiles_by_resource.get(self.resource or "")
        return by_resource or self.mode.benchmark_profile or self.hardware.benchmark_profile


@dataclass(frozen=True)
class Role:
    """One worker pool as llm-d-benchmark sees it: replicas, parallelism, accelerators per pod."""

    accelerators: int
    replicas: int | None = None
    parallelism: Parallelism | None = None
    node_labels: Mapping[str, str] = field(default_factory=dict)  # what its pods pin (nodeSelector, affinity)


@dataclass
class BenchmarkConfig:
    target: Target
    roles: dict[str, Role]
    guide: str
    model: str | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    #: llm-d-benchmark's networkResource: the RDMA NIC each pod gets beside its accelerators (a network profile's)
    network_resource: str | None = None

    def accelerator(self) -> dict[str, Any]:
        """The scenario's ``accelerator`` block; refuses hardware llm-d-benchmark has no profile for."""
        if not self.target.uses_accelerators:
            return {"count": 0}
        profile = self.target.benchmark_profile()
        if profile is None:
            raise BenchmarkUnsupported(_no_profile_message(self.target))
        block: dict[str, Any] = {"type": profile, "profile": profile}
        if self.target.mode.request_model == "dra":
            block["draDriver"] = self.target.mode.device_class
            block["resource"] = NO_EXTENDED_RESOURCE
        else:
            block["resource"] = self.target.resource
        return block

    def dra(self) -> dict[str, Any] | None:
        if self.target.mode.request_model != "dra":
            return None
        profile = self.accelerator()["type"]
        partition = self.target.partition
        template: dict[str, Any] = {"class": partition[0] if partition else self.target.mode.device_class, "match": "exactly"}
        counts = {role.accelerators for role in self.roles.values()}
        if len(counts) == 1:  # roles that differ each derive their own count from their parallelism
            template["count"] = counts.pop()
        template["selectors"] = []
        if partition is not None:
            domain, _, attribute = partition[1].rpartition("/")
            template["selectors"] = [f'device.attributes["{domain}"].{attribute} == "{partition[2]}"']
        return {"enabled": True, "type": profile, "claimTemplates": {profile: template}}

    def scenario(self) -> dict[str, Any]:
        """One llm-d-benchmark scenario entry holding what Lens knows; the rest stays at defaults."""
        entry: dict[str, Any] = {"name": f"{self.guide}-{self.target.hardware.id}"}
        if self.model:
            entry["model"] = {"name": self.model}
        entry["accelerator"] = self.accelerator()
        if self.network_resource:
            entry["networkResource"] = self.network_resource
        dra = self.dra()
        if dra is not None:
            entry["dra"] = dra
        for role in ("prefill", "decode"):
            entry[role] = self._role(role)
        return {"scenario": [entry]}

    def warnings(self) -> list[dict[str, Any]]:
        """Scenario values llm-d-benchmark's overlay for this benchmark profile replaces (see overlays.py)."""
        from llm_d_lens.evaluate.overlays import replaced_values

        entry = self.scenario()["scenario"][0]
        return replaced_values(entry, entry["accelerator"].get("profile"))

    def _role(self, name: str) -> dict[str, Any]:
        role = self.roles.get(name)
        if role is None:
            return {"enabled": False, "replicas": 0}
        out: dict[str, Any] = {"enabled": True} if name == "prefill" else {}
        if role.replicas is not None:
            out["replicas"] = role.replicas
        chosen = accelerator_type(self.target.hardware, role.node_labels)
        if chosen is not None:
            out["acceleratorType"] = chosen
        if role.parallelism is not None:
            p = role.parallelism
            out["parallelism"] = {"tensor": p.tensor, "data": p.data, "dataLocal": p.data_local}
        out["accelerator"] = {"count": role.accelerators if self.target.uses_accelerators else 0}
        return out

    def summary(self) -> dict[str, Any]:
        accelerator = self.accelerator()
        return {
            "hardware": self.target.hardware.id,
            "access_mode": self.target.mode_name,
            "request_model": self.target.mode.request_model,
            "benchmark_profile": accelerator.get("profile"),
            "resource": accelerator.get("resource") or None,
            "dra_driver": accelerator.get("draDriver"),
            "partition": self.target.resource if self.target.partition else (
                self.target.resource if self.target.resource and _is_partition(self.target.hardware, self.target.resource) else None),
            "network_resource": self.network_resource,
            "accelerators_per_pod": {name: (r.accelerators if self.target.uses_accelerators else 0)
                                     for name, r in self.roles.items()},
            "accelerator_type": {name: accelerator_type(self.target.hardware, r.node_labels)
                                 for name, r in self.roles.items()},
            "guide": self.guide,
            "warnings": self.warnings(),
            "evidence": self.evidence,
        }

    def to_yaml(self) -> str:
        import yaml

        header = (f"# llm-d-benchmark scenario settings from Lens: hardware {self.target.hardware.id!r}, "
                  f"access mode {self.target.mode_name!r}\n")
        header += "".join(f"# warning: {w['message']}\n" for w in self.warnings())
        return header + yaml.safe_dump(self.scenario(), sort_keys=False)


#: What llm-d-benchmark does with ``labelValue: auto``: it reads the SKU label from the cluster's nodes.
AUTO = "auto"


def accelerator_type(hardware: HardwareProfile, pinned: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """A role's ``acceleratorType`` (the node label that picks its nodes), from the profile's own data.

    llm-d-benchmark defaults it to one vendor's product label; on other hardware that label is on no
    node, so pods would never schedule. The profile's first ``inventory.product_labels`` entry is
    the label instead: with the value the manifest pins (``nodeSelector`` or a required node
    affinity), else ``auto`` for llm-d-benchmark to read from the nodes. A profile without a product
    label (a CPU run) uses the first literal entry of its ``node_label_selector`` (or its presence
    selector), the label every node of that hardware carries. None when the profile has neither.
    """
    pinned = pinned or {}
    products = list(hardware.inventory.product_labels)
    for key in products:
        if pinned.get(key):
            return {"labelKey": key, "labelValue": pinned[key]}
    if products:
        return {"labelKey": products[0], "labelValue": AUTO}
    selector = dict(hardware.node_label_selector) or (dict(hardware.presence.node_label_selector) if hardware.presence else {})
    for key, value in selector.items():
        if pinned.get(key):
            return {"labelKey": key, "labelValue": pinned[key]}
        if value and value != "*":
            return {"labelKey": key, "labelValue": value}
    return None


def _no_profile_message(target: Target) -> str:
    hardware = target.hardware
    message = (f"hardware {hardware.id!r} has no llm-d-benchmark profile (benchmark_profile is null), so its access mode "
               f"{target.mode_name!r} cannot be benchmarked: llm-d-benchmark must support the hardware first, then the "
               f"profile's benchmark_profile names it")
    plain = [name for name, mode in hardware.effective_modes().items() if mode.request_model == "none"]
    if plain:
        message += f"; access mode {plain[0]!r} runs without accelerators and needs no benchmark profile"
    return message


def select_target(key: str, mode_name: str | None = None, resource: str | None = None, registry: Any = None) -> Target:
    """The target a user names: hardware by id or any alias, a mode (the first when None), a resource.

    An alias that is one mode's benchmark profile (one that follows the resource, say) picks that
    mode and resource when no mode is given, so the benchmark profile name alone is enough.
    """
    if registry is None:
        from llm_d_lens.hardware.registry import get_registry

        registry = get_registry()
    hardware = registry.get(key)
    modes = hardware.effective_modes()
    hinted_mode, hinted_resource = _hint(hardware, key.strip().lower())
    name = mode_name or hinted_mode or hardware.access_modes[0]
    if name not in modes:
        raise AccessModeUnknown(f"hardware {hardware.id!r} has no access mode {name!r}; modes: {', '.join(modes)}",
                                details={"hardware": hardware.id, "mode": name, "modes": list(modes)})
    mode = modes[name]
    if mode_name is not None and name != hinted_mode:
        hinted_resource = None
    wanted = resource or hinted_resource
    if mode.request_model == "dra" and wanted is not None and mode.partition_device_class and mode.partition_attribute:
        found = _partition_profile(hardware, wanted)
        if found is not None:
            return Target(hardware, name, mode, wanted, (mode.partition_device_class, mode.partition_attribute, found))
    return Target(hardware, name, mode, _resource(hardware, name, mode, wanted))


def _partition_profile(hardware: HardwareProfile, resource: str) -> str | None:
    """The partition profile a partition resource names (``profile`` of a mode's partition_name_pattern)."""
    import re

    for mode in hardware.effective_modes().values():
        if mode.partition_name_pattern and (found := re.fullmatch(mode.partition_name_pattern, resource)):
            return found.groupdict().get("profile")
    return None


def _is_partition(hardware: HardwareProfile, resource: str) -> bool:
    import re

    return any(re.fullmatch(p, resource) for p in hardware.inventory.partition_resource_patterns)


def _hint(hardware: HardwareProfile, key: str) -> tuple[str | None, str | None]:
    for name, mode in hardware.effective_modes().items():
        for resource, profile in mode.benchmark_profiles_by_resource.items():
            if profile.lower() == key:
                return name, resource
        if mode.benchmark_profile and mode.benchmark_profile.lower() == key:
            return name, None
    return None, None


def _resource(hardware: HardwareProfile, mode_name: str, mode: DeploymentMode, resource: str | None) -> str | None:
    if mode.request_model != "extended-resource":
        if resource is not None:
            how = f"through the DRA class {mode.device_class!r}" if mode.request_model == "dra" else "no accelerator"
            raise AccessModeUnknown(f"access mode {mode_name!r} of {hardware.id!r} requests {how}, "
                                    f"not the extended resource {resource!r}")
        return None
    if resource is None:
        return mode.resource_names[0]
    if resource not in mode.resource_names and not _is_partition(hardware, resource):
        raise AccessModeUnknown(f"access mode {mode_name!r} of {hardware.id!r} requests "
                                f"{', '.join(mode.resource_names)}, not {resource!r}")
    return resource


def roles_from_workload(profile: WorkloadProfile) -> dict[str, Role]:
    return {name: Role(pool.parallelism.accelerators_per_pod, pool.replicas, pool.parallelism)
            for name, pool in profile.serving.pools().items()}


def single_pool(tensor_parallel: int = 1, replicas: int | None = None) -> dict[str, Role]:
    parallelism = Parallelism(tensor=tensor_parallel)
    return {"decode": Role(parallelism.accelerators_per_pod, replicas, parallelism)}
