"""The operations behind ``lens driver``/``lens preflight`` and the API, on top of the providers.

Each hardware's work goes through its provider (a vendor's, or the default one), so a provider
that changes install, status or presence changes it everywhere at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llm_d_lens.hardware.registry import Registry
from llm_d_lens.monitoring.gpu_driver.claims import ClaimKind, RequestedClass, classes_from_cluster, parse_claims, single_claim_classes
from llm_d_lens.monitoring.gpu_driver.clock import Clock
from llm_d_lens.monitoring.gpu_driver.errors import ClaimsInvalid
from llm_d_lens.monitoring.gpu_driver.install import InstallResult
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.monitoring.gpu_driver.plan import DriverPlan, annotate, apply, build_plan
from llm_d_lens.monitoring.gpu_driver.presence import PresenceReport
from llm_d_lens.monitoring.gpu_driver.provider import DriverOps
from llm_d_lens.monitoring.gpu_driver.status import ModeStatus



def provider_for(registry: Registry, key: str) -> DriverOps:
    """The hardware's driver operations: its provider's guide methods where it has them, else the defaults."""
    return DriverOps(registry.get(key), registry.provider(key))


def read_claims_file(path: Path) -> tuple[list[RequestedClass], list[str]]:
    """The claims file's classes and external names; bounded, UTF-8, one YAML or JSON document, or :class:`ClaimsInvalid`."""
    import yaml

    from llm_d_lens import files as textread, yamlread
    from llm_d_lens.errors import clip

    def refused(problem: str) -> ClaimsInvalid:
        return ClaimsInvalid(f"claims file {path}: {problem}", details={"source": str(path), "problem": problem})

    try:
        data = yamlread.load(textread.read_text(path, limit=yamlread.MAX_BYTES))
    except textread.TextUnreadable as exc:
        raise refused(exc.problem) from None
    except yamlread.DuplicateKey as exc:
        raise refused(f"{exc.path}: appears twice in one mapping; the second would silently replace the first") from None
    except yamlread.YamlRefused as exc:
        raise refused(f"refused before reading: {exc}") from None
    except yaml.YAMLError as exc:
        raise refused(f"is not YAML or JSON: {clip(str(exc), 1000)}") from None
    return parse_claims(data, str(path))


def gather_classes(*, claims_data: tuple[list[RequestedClass], list[str]] | None = None,
                   flags: Mapping[ClaimKind, Sequence[str]] | None = None) -> tuple[list[RequestedClass], list[str]]:
    classes: list[RequestedClass] = []
    external: list[str] = []
    if claims_data is not None:
        classes += claims_data[0]
        external += claims_data[1]
    for kind, keys in (flags or {}).items():
        classes += single_claim_classes(kind, keys)
    return classes, external


async def plan(registry: Registry, classes: list[RequestedClass], external: Sequence[str], view: ClusterView | None, *,
               from_cluster: bool = False) -> DriverPlan:
    """Refusals come from build_plan before any cluster read; ``view`` None means do not read the cluster."""
    if from_cluster and view is not None:
        classes = [*classes, *await classes_from_cluster(view)]
    if not classes:
        raise ClaimsInvalid("nothing is claimed: give a claims file, --device-class/--resource/--dra-driver/--hardware, "
                            "or --from-cluster")
    built = build_plan(classes, registry, external=external)
    if view is not None:
        await annotate(built, registry, view)
    return built


async def install_plan(registry: Registry, built: DriverPlan, view: ClusterView, *, dry_run: bool) -> list[InstallResult]:
    installers = {step.target.profile_id: provider_for(registry, step.target.profile_id) for step in built.steps}
    return await apply(built, view, installers, dry_run=dry_run)


async def install_one(registry: Registry, key: str, mode: str | None, view: ClusterView, *, dry_run: bool,
                      options: Mapping[str, Any] | None = None) -> InstallResult:
    return await provider_for(registry, key).install_driver(mode, view=view, dry_run=dry_run, options=options)


async def status(registry: Registry, keys: Sequence[str], mode: str | None, view: ClusterView) -> list[ModeStatus]:
    """Status of the named hardware, or of every registered one with a driver block."""
    profiles = [registry.get(k) for k in keys] if keys else [p for p in registry.profiles() if p.driver is not None]
    out: list[ModeStatus] = []
    for profile in profiles:
        out += await provider_for(registry, profile.id).driver_status(mode, view=view)
    return out


async def preflight(registry: Registry, keys: Sequence[str], view: ClusterView, clock: Clock,
                    timeout_seconds: float | None = None, mode: str | None = None) -> list[PresenceReport]:
    """Per hardware: the mode's Kubernetes minimum first (``mode`` None: the one install picks), then presence."""
    from llm_d_lens.monitoring.gpu_driver.presence import check_kubernetes

    reports = []
    for key in keys:
        kubernetes = await check_kubernetes(registry.get(key), mode, view)
        provider = provider_for(registry, key)
        report = await provider.ensure_presence(view=view, clock=clock, timeout_seconds=timeout_seconds)
        report.kubernetes = kubernetes
        reports.append(report)
    return reports
