"""The device-stack plan: from what classes claim to the drivers a cluster needs, and nothing more.

Each claim resolves to a registered hardware and one of its access modes; the modes Lens manages
become install steps, each installed once however many classes need it. Refusals come before
anything runs, and name every offending class:

* a claim no registered hardware covers (and not declared external): ``UNSUPPORTED_DEVICES``,
  with the supported set;
* a class claiming a ``dedicated_nodes`` device alongside another hardware's, or asking more
  devices in one request than ``max_devices_per_request``: ``DEVICE_CLAIMS_REJECTED``;
* two needed modes that are one release with different settings: also ``DEVICE_CLAIMS_REJECTED``.

A plan never removes anything: a driver Lens knows that no class needs is reported as
``not_needed`` and left running.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.resolution import Resolver
from llm_d_lens.monitoring.gpu_driver import commands
from llm_d_lens.monitoring.gpu_driver.claims import Claim, RequestedClass
from llm_d_lens.monitoring.gpu_driver.errors import AccessModeUnknown, DeviceClaimsRejected, UnsupportedDevices
from llm_d_lens.monitoring.gpu_driver.install import (
    InstallResult,
    check_kubernetes_version,
    decide,
    decide_prerequisite,
    read_helm_state,
)
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.monitoring.gpu_driver.target import DriverTarget, resolve_mode_name, resolve_target, unmanaged_reason

ClaimStatus = Literal["supported", "external", "unsupported"]


@dataclass(frozen=True)
class ResolvedClaim:
    claim: Claim
    status: ClaimStatus
    hardware: str | None = None
    mode: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**self.claim.to_dict(), "status": self.status, "hardware": self.hardware, "mode": self.mode,
                "detail": self.detail}


@dataclass
class PlanStep:
    target: DriverTarget
    classes: list[str]
    action: str = "install"  # refined by annotate(): install|upgrade|reconfigure|repair|none
    current_version: str | None = None
    message: str = ""
    prerequisites: list[PlanStep] = field(default_factory=list)  # installed before this step, in order

    def to_dict(self) -> dict[str, Any]:
        return {"prerequisites": [p.to_dict() for p in self.prerequisites], **self.target.describe(),
                "classes": self.classes, "action": self.action,
                "current_version": self.current_version, "message": self.message,
                "command": commands.install_argv(self.target)}


@dataclass
class ProvidedStack:
    """A needed mode Lens installs nothing for: the platform or the vendor provides it."""

    hardware: str
    mode: str
    reason: str
    classes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass
class DriverPlan:
    classes: dict[str, list[ResolvedClaim]]
    steps: list[PlanStep] = field(default_factory=list)
    provided: list[ProvidedStack] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    not_needed: list[dict[str, Any]] = field(default_factory=list)
    server_version: str | None = None
    cluster_checked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": [{"name": name, "claims": [r.to_dict() for r in resolved]} for name, resolved in self.classes.items()],
            "steps": [s.to_dict() for s in self.steps],
            "provided": [p.to_dict() for p in self.provided],
            "external": self.external,
            "not_needed": self.not_needed,
            "server_version": self.server_version,
            "cluster_checked": self.cluster_checked,
        }


# -- resolving one claim --------------------------------------------------------------------------


def _mode_for(profile: HardwareProfile, request_model: str, wanted: str,
              field_name: Literal["device_class", "resource_names"]) -> str | None:
    """The access mode a claim uses: one naming it exactly, else the first of the right request model."""
    modes = [(name, mode) for name, mode in profile.effective_modes().items() if mode.request_model == request_model]
    for name, mode in modes:
        named = getattr(mode, field_name)
        if named == wanted or (isinstance(named, list) and wanted in named):
            return name
    return modes[0][0] if modes else None


def resolve_claim(claim: Claim, resolver: Resolver, external: Iterable[str]) -> ResolvedClaim:
    if claim.key in set(external):
        return ResolvedClaim(claim, "external", detail="declared external: provided outside Lens")
    key, mode_name = claim.key, None
    if claim.kind == "hardware":
        key, _, mode_name = claim.key.partition(":")
        found = resolver.match_key(key)
    elif claim.kind == "device_class":
        found = resolver.match_device_class(key)
    elif claim.kind == "resource":
        found = resolver.match_resource(key)
    else:
        found = resolver.match_dra_driver(key)
    if not found.supported or found.profile_id is None:
        return ResolvedClaim(claim, "unsupported", detail=found.detail)
    profile = resolver.registry.get(found.profile_id)
    if claim.kind == "hardware":
        try:
            mode = resolve_mode_name(profile, mode_name or None)
        except AccessModeUnknown as exc:
            return ResolvedClaim(claim, "unsupported", profile.id, detail=exc.message)
    elif claim.kind == "resource":
        mode = _mode_for(profile, "extended-resource", key, "resource_names")
    else:
        mode = _mode_for(profile, "dra", key, "device_class")
    if mode is None:
        wanted = "an extended-resource" if claim.kind == "resource" else "a dra"
        return ResolvedClaim(claim, "unsupported", profile.id, detail=f"{profile.id!r} has no {wanted} access mode")
    return ResolvedClaim(claim, "supported", profile.id, mode)


# -- the plan -------------------------------------------------------------------------------------


def supported_set(registry: Registry, external: Sequence[str]) -> dict[str, list[str]]:
    index = registry.index
    return {
        "device classes": sorted(index.device_classes),
        "extended resources": sorted(p for bucket in index.prefixes_by_domain.values() for p, _ in bucket),
        "DRA drivers": sorted(index.dra_drivers),
        "hardware": registry.ids(),
        **({"external": sorted(external)} if external else {}),
    }


def _refuse_unsupported(resolved: dict[str, list[ResolvedClaim]], registry: Registry, external: Sequence[str],
                        rejections: list[str]) -> None:
    offending = {name: [r for r in claims if r.status == "unsupported"] for name, claims in resolved.items()}
    offending = {name: bad for name, bad in offending.items() if bad}
    if not offending:
        return
    supported = supported_set(registry, external)
    lines = [f"class {name} claims {', '.join(r.claim.describe() + (f' [{r.detail}]' if r.hardware else '') for r in bad)}"
             for name, bad in offending.items()]
    shown = "; ".join(f"{kind}: {', '.join(keys)}" for kind, keys in supported.items())
    raise UnsupportedDevices(
        "; ".join(lines) + f". Supported: {shown}. Nothing was installed.",
        details={"classes": {name: [r.to_dict() for r in bad] for name, bad in offending.items()},
                 "supported": supported, "also_rejected": rejections},
    )


def _rejections(resolved: dict[str, list[ResolvedClaim]], registry: Registry) -> list[str]:
    problems: list[str] = []
    for name, claims in resolved.items():
        supported = [r for r in claims if r.status == "supported" and r.hardware and r.mode]
        for r in supported:
            profile = registry.get(r.hardware or "")
            mode = profile.driver.modes.get(r.mode or "") if profile.driver else None
            if mode is None:
                continue
            if mode.dedicated_nodes:
                others = sorted({o.claim.key for o in supported if o.hardware != r.hardware})
                if others:
                    problems.append(
                        f"class {name} claims {r.claim.key} alongside {', '.join(others)}: {r.claim.key} devices sit on "
                        "dedicated nodes without other hardware, so the class could never be scheduled"
                    )
            limit = mode.max_devices_per_request
            if limit is not None and (r.claim.count is None or r.claim.count > limit):
                asked = "all devices" if r.claim.count is None else f"{r.claim.count} devices"
                problems.append(
                    f"class {name} asks {asked} of {r.claim.key} in one request ({r.claim.source or 'claim'}); at most "
                    f"{limit} is allowed, since every allocated device receives the full capacity request"
                )
    return problems


def unique_names(classes: Sequence[RequestedClass]) -> list[str]:
    """Class names, a repeated one numbered (``web (2)``): two workloads may share a name, and both count."""
    taken: set[str] = set()
    names = []
    for c in classes:
        name, n = c.name, 1
        while name in taken:
            n += 1
            name = f"{c.name} ({n})"
        taken.add(name)
        names.append(name)
    return names


def build_plan(classes: Sequence[RequestedClass], registry: Registry, *, external: Sequence[str] = ()) -> DriverPlan:
    """Resolve, check and group, without touching a cluster; raises the refusals described above."""
    resolver = Resolver(registry)
    resolved = {name: [resolve_claim(claim, resolver, external) for claim in c.claims]
                for name, c in zip(unique_names(classes), classes)}
    rejections = _rejections(resolved, registry)
    _refuse_unsupported(resolved, registry, external, rejections)
    needed: dict[tuple[str, str], list[str]] = {}
    for name, claims in resolved.items():
        for r in claims:
            if r.status == "supported" and r.hardware and r.mode:
                users = needed.setdefault((r.hardware, r.mode), [])
                if name not in users:
                    users.append(name)
    plan = DriverPlan(resolved, external=sorted(set(external)))
    by_release: dict[tuple[str, str], PlanStep] = {}
    for (hardware, mode), users in needed.items():
        profile = registry.get(hardware)
        reason = unmanaged_reason(profile, mode)
        if reason is not None:
            plan.provided.append(ProvidedStack(hardware, mode, reason, users))
            continue
        target = resolve_target(profile, mode)
        step = PlanStep(target, users, prerequisites=[PlanStep(before, users) for before in target.prerequisites])
        other = by_release.get(step.target.key)
        if other is not None and other.target.mode_name != mode:
            rejections.append(
                f"classes {', '.join(other.classes)} need {hardware} mode {other.target.mode_name} and classes "
                f"{', '.join(users)} need mode {mode}: both are release {step.target.release} in namespace "
                f"{step.target.namespace} with different settings, and one cluster runs only one of them"
            )
            continue
        by_release[step.target.key] = step
        plan.steps.append(step)
    if rejections:
        raise DeviceClaimsRejected("; ".join(rejections) + ". Nothing was installed.", details={"problems": rejections})
    return plan


async def annotate(plan: DriverPlan, registry: Registry, view: ClusterView) -> DriverPlan:
    """Read the cluster (version, releases) to say what each step would do; refuses too-old clusters."""
    prerequisites = {id(p) for main in plan.steps for p in main.prerequisites}
    for step in [each for main in plan.steps for each in (*main.prerequisites, main)]:
        server = await check_kubernetes_version(step.target, view)
        plan.server_version = server or plan.server_version
        if step.target.installer == "helm":
            state = await read_helm_state(step.target, view)
            decision = decide_prerequisite if id(step) in prerequisites else decide
            step.action, step.message = decision(step.target, state)
            step.current_version = state.version
    planned = {s.target.key for s in plan.steps}
    listed = (await view.runner.arun(commands.helm_list_all_argv())).json()
    known = {}
    for profile in registry.profiles():
        for mode_name in (profile.driver.modes if profile.driver else {}):
            target = resolve_target(profile, mode_name)
            known.setdefault(target.key, target)
    for release in listed if isinstance(listed, list) else []:
        key = (str(release.get("namespace", "")), str(release.get("name", "")))
        if key in known and key not in planned:
            target = known[key]
            plan.not_needed.append({"hardware": target.profile_id, "mode": target.mode_name, "release": key[1],
                                    "namespace": key[0], "chart": release.get("chart"),
                                    "note": "no class claims it; left installed (a plan never removes anything)"})
    plan.cluster_checked = True
    return plan


async def apply(plan: DriverPlan, view: ClusterView, installers: dict[str, Any], *, dry_run: bool = False) -> list[InstallResult]:
    """Install the plan's steps in order, through each hardware's provider (``installers[hardware]``)."""
    results = []
    for step in plan.steps:
        provider = installers[step.target.profile_id]
        results.append(await provider.install_target(step.target, view=view, dry_run=dry_run))
    return results
