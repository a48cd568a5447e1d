"""From (guide, hardware, model server, sub-overlay) to one overlay directory, with the reasons.

The choice is made among the overlays discovery found for the hardware's profile; nothing is
guessed from names. When several fit, the flat overlay (``.``) or the provider-neutral ``base``
wins and the explanation lists the others. The chosen overlay's own llm-d accelerator labels
must resolve to the requested profile: an overlay that says it is for other hardware is refused.
"""

from __future__ import annotations

from typing import Any

import msgspec

from llm_d_lens.deploy.discovery import Catalog, Overlay, discover, templates_of, with_engines
from llm_d_lens.deploy.errors import (
    DeployRequestInvalid,
    GuideNotFound,
    HelmValuesLayout,
    OverlayAmbiguous,
    OverlayBuildingBlock,
    OverlayLabelMismatch,
    OverlayNotFound,
    OverlayUnsafe,
)
from llm_d_lens.deploy.guides import guide_names, helm_values_files, is_helper
from llm_d_lens.deploy.kustomization import Inspection, KustomizationReader
from llm_d_lens.deploy.source import LlmdSource, check_name
from llm_d_lens.deploy.targets import Role, roles
from llm_d_lens.deploy.workloads import DeviceView, all_pod_templates
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.resolution import VARIANT_LABEL, VENDOR_LABEL, Resolver

#: The model server chosen when a guide offers several and none is named (llm-d's default engine).
DEFAULT_MODEL_SERVER = "vllm"
#: States of overlays that are not deploy targets at all, so never offered as a choice.
_NOT_TARGETS = ("building-block", "component", "helper")
#: Overlay names preferred, in order, when several fit and none is named.
PREFERRED_OVERLAYS = (".", "base")


class OverlayStatus(msgspec.Struct, frozen=True):
    state: str  # "ok" | "broken" | "unlabelled" | "label-mismatch" | "component" | "unsafe" | "building-block"
    detail: str
    resolves_to: str | None = None


#: States a building block's role overrides: it may be well-formed and labelled, yet not a target.
_BLOCK_OVERRIDES = ("ok", "unlabelled")


def overlay_statuses(source: LlmdSource, overlays: list[Overlay], reader: KustomizationReader,
                     resolver: Resolver) -> tuple[dict[str, OverlayStatus], dict[str, Role]]:
    """Path -> status of each overlay (helpers and building blocks marked), and path -> role."""
    overlay_roles = roles(source, overlays, reader)
    statuses = {}
    for overlay in overlays:
        helper = is_helper(reader, overlay)
        if helper is not None:
            statuses[overlay.path] = OverlayStatus(
                "helper", f"deploys {helper}, a companion of the guide's overlays, not a model server")
        else:
            statuses[overlay.path] = with_role(overlay_status(reader.inspect(overlay.directory), overlay.hardware, resolver),
                                               overlay_roles[overlay.path])
    return statuses, overlay_roles


def with_role(status: OverlayStatus, role: Role) -> OverlayStatus:
    """The status, or ``building-block`` when upstream only builds other overlays on it."""
    if role.building_block and status.state in _BLOCK_OVERRIDES:
        return OverlayStatus("building-block", role.reason, status.resolves_to)
    return status


def overlay_status(inspection: Inspection, profile_id: str | None, resolver: Resolver) -> OverlayStatus:
    """What an overlay's Kustomization says about its fitness for ``profile_id``."""
    labels = inspection.accelerator_labels
    resolved = None
    if labels is not None:
        pair = {k: v for k, v in ((VARIANT_LABEL, labels[0]), (VENDOR_LABEL, labels[1])) if v}
        resolved = resolver.match_labels(pair).profile_id
    if inspection.kind != "Kustomization":
        return OverlayStatus("component", f"a kustomize {inspection.kind}, not a deployable overlay", resolved)
    escapes = [p for p in inspection.problems if p.kind == "escapes"]
    if escapes:
        return OverlayStatus("unsafe", "; ".join(str(p) for p in escapes), resolved)
    if labels is not None and resolved != profile_id:
        shown = f"{VARIANT_LABEL}={labels[0] or '-'}, {VENDOR_LABEL}={labels[1] or '-'}"
        return OverlayStatus("label-mismatch", f"labels {shown} resolve to {resolved or 'no registered hardware'}", resolved)
    if inspection.problems:
        return OverlayStatus("broken", "; ".join(str(p) for p in inspection.problems), resolved)
    if labels is None:
        return OverlayStatus("unlabelled", f"sets no {VARIANT_LABEL}/{VENDOR_LABEL} labels (a shared base?)")
    return OverlayStatus("ok", "", resolved)


class OverlayChoice(msgspec.Struct, frozen=True):
    overlay: Overlay
    profile: HardwareProfile
    inspection: Inspection
    status: OverlayStatus
    explanation: tuple[str, ...]
    role: Role = Role(False)

    def to_dict(self) -> dict[str, Any]:
        return {**self.overlay.to_dict(), "labels": self.inspection.labels, "status": self.status.state,
                "problems": [p.to_dict() for p in self.inspection.problems], "explanation": list(self.explanation)}


def choose_overlay(
    source: LlmdSource,
    registry: Registry,
    profile: HardwareProfile,
    guide: str,
    *,
    model_server: str | None = None,
    overlay: str | None = None,
    requested_as: str | None = None,
    reader: KustomizationReader | None = None,
    identity_from_render: bool = False,
) -> OverlayChoice:
    """The one overlay to render, or an error that says what exists instead.

    With ``identity_from_render`` an overlay whose files set no accelerator labels is not refused
    here: the caller renders it and confirms the identity from the rendered pods
    (:func:`confirm_identity`), since labels can also come from patches and components.
    """
    check_name("guide", guide, nested=True)
    if model_server is not None:
        check_name("model server", model_server)
    if overlay is not None and overlay != ".":
        check_name("overlay", overlay, nested=True)
    resolver = Resolver(registry)
    reader = reader or KustomizationReader(source)
    named = f"{requested_as!r} (profile {profile.id})" if requested_as and requested_as != profile.id else profile.id
    why = [f"llm-d source: {source.describe()}",
           f"hardware {named}: overlays under {' or '.join(templates_of(profile))} with {{variant}}={', '.join(profile.overlay_dirs)}"]
    catalog = discover(source, registry, guide=guide, profiles=[profile])
    mine = with_engines(catalog.for_hardware(profile.id, guide), reader.engine)
    if not mine:
        _raise_none(source, registry, profile, guide)
    servers = sorted({o.model_server or "" for o in mine})
    by_dir = [o for o in mine if model_server is not None and o.server_dir == model_server]
    if by_dir and model_server not in servers:  # the directory's name (vllm-deepseek-v4), not the engine's
        server = by_dir[0].model_server or ""
        why.append(f"model server directory {model_server} as asked: engine {server}")
        candidates = by_dir
    else:
        server = _pick_server(servers, model_server, profile, guide, why)
        candidates = [o for o in mine if (o.model_server or "") == server]
    names = [o.name for o in candidates]
    by_path, overlay_roles = overlay_statuses(source, mine, reader, resolver)
    statuses = {o.name: by_path[o.path] for o in candidates}
    if overlay is not None:
        chosen = next((o for o in candidates if o.name == overlay), None)
        if chosen is None and by_dir:
            chosen = next((o for o in candidates if o.sub_name == overlay), None)
        if chosen is None:
            raise OverlayNotFound(
                f"no overlay {overlay!r} for {profile.id} ({server or 'any model server'}) in guide {guide}; "
                f"overlays there: {', '.join(names)}",
                details={"guide": guide, "hardware": profile.id, "model_server": server, "overlays": names},
            )
        why.append(f"overlay {overlay!r} as asked (of {', '.join(names)})")
    else:
        chosen = _pick_overlay(candidates, statuses, profile, guide, server, why)
    status = statuses[chosen.name]
    if not (identity_from_render and status.state == "unlabelled"):
        _refuse(chosen, status, profile, named, source)
    inspection = reader.inspect(chosen.directory)
    if status.state == "broken":
        why.append(f"warning: {status.detail}")
    labels = inspection.accelerator_labels
    if labels is not None:
        why.append(f"labels {VARIANT_LABEL}={labels[0]}, {VENDOR_LABEL}={labels[1]} resolve to {status.resolves_to}")
    why.append(f"overlay directory: {chosen.path}")
    return OverlayChoice(chosen, profile, inspection, status, tuple(why), overlay_roles[chosen.path])


def refuse_helm_values_layout(source: LlmdSource, guide: str | None) -> None:
    """Raise the error for a revision from before the overlays, when its guides hold Helm values files."""
    values = helm_values_files(source, guide) if guide is None or (source.root / "guides" / guide).is_dir() else []
    if not values:
        return
    shown = ", ".join(values[:12]) + (f" and {len(values) - 12} more" if len(values) > 12 else "")
    raise HelmValuesLayout(
        f"llm-d source {source.describe()} keeps its per-hardware settings in Helm values files, not in kustomize "
        f"overlays, so Lens has no overlay to render{f' for guide {guide}' if guide else ''}: {shown}. Install those "
        f"with helm as that revision's guide says, or read a newer --revision",
        details={"source": source.to_dict(), "guide": guide, "values_files": values})


def _raise_none(source: LlmdSource, registry: Registry, profile: HardwareProfile, guide: str) -> None:
    in_guide: Catalog = discover(source, registry, guide=guide)
    if not in_guide.overlays and not discover(source, registry).overlays:  # no overlay anywhere: before the overlays?
        refuse_helm_values_layout(source, guide)
    if not in_guide.overlays and guide in guide_names(source):
        raise OverlayNotFound(
            f"guide {guide} has no model-server overlays in llm-d source {source.describe()}; "
            f"`lens deploy guides --guide {guide}` lists what it holds",
            details={"guide": guide, "hardware": profile.id, "source": source.to_dict()})
    if in_guide.overlays or in_guide.unsupported:
        others = sorted({o.hardware for o in in_guide.overlays})
        raise OverlayNotFound(
            f"no overlay for {profile.id} in this llm-d source (guide {guide}); "
            f"this guide has overlays for {', '.join(others) or 'no registered hardware'}. "
            f"Upstream may have removed it: an older llm-d revision (--revision) may still have it",
            details={"guide": guide, "hardware": profile.id, "available": others, "source": source.to_dict()},
        )
    raise guide_not_found(source, registry, guide)


def guide_not_found(source: LlmdSource, registry: Registry, guide: str) -> GuideNotFound:
    """The error for a guide the source has no overlays in, naming the guides it has."""
    guides = sorted(set(discover(source, registry).guides()) | set(guide_names(source)))
    return GuideNotFound(
        f"guide {guide!r} has no overlays in llm-d source {source.describe()}; guides there: {', '.join(guides) or 'none'}",
        details={"guide": guide, "guides": guides, "source": source.to_dict()},
    )


def _pick_server(servers: list[str], wanted: str | None, profile: HardwareProfile, guide: str, why: list[str]) -> str:
    shown = ", ".join(s or "(none)" for s in servers)
    if wanted is not None:
        if wanted not in servers:
            raise OverlayNotFound(
                f"no {wanted} overlay for {profile.id} in guide {guide}; model servers there: {shown}",
                details={"guide": guide, "hardware": profile.id, "model_servers": servers},
            )
        why.append(f"model server {wanted} as asked (of {shown})")
        return wanted
    if len(servers) == 1:
        why.append(f"model server {servers[0] or '(none in the layout)'}: the only one")
        return servers[0]
    if DEFAULT_MODEL_SERVER in servers:
        others = ", ".join(s or "(none)" for s in servers if s != DEFAULT_MODEL_SERVER)
        why.append(f"model server {DEFAULT_MODEL_SERVER}: the default (others: {others}; pass --model-server)")
        return DEFAULT_MODEL_SERVER
    raise OverlayAmbiguous(
        f"guide {guide} has several model servers for {profile.id}: {shown}; pass --model-server",
        details={"guide": guide, "hardware": profile.id, "model_servers": servers},
    )


def _pick_overlay(candidates: list[Overlay], statuses: dict[str, OverlayStatus], profile: HardwareProfile,
                  guide: str, server: str, why: list[str]) -> Overlay:
    names = [o.name for o in candidates if statuses[o.name].state not in _NOT_TARGETS]  # never offered as choices
    usable = [o for o in candidates if statuses[o.name].state == "ok"]
    for skipped in (o for o in candidates if statuses[o.name].state != "ok"):
        why.append(f"not a default candidate: {skipped.name} ({statuses[skipped.name].state}: {statuses[skipped.name].detail})")
    if len(candidates) == 1:
        why.append(f"overlay {candidates[0].name}: the only one")
        return candidates[0]
    for preferred in PREFERRED_OVERLAYS:
        for overlay in usable:
            if overlay.name == preferred:
                why.append(f"overlay {preferred}: the plain one (others: {', '.join(n for n in names if n != preferred)}; pass --overlay)")
                return overlay
    if len(usable) == 1:
        why.append(f"overlay {usable[0].name}: the only usable one (of {', '.join(names)})")
        return usable[0]
    raise OverlayAmbiguous(
        f"several overlays fit {profile.id} ({server or 'any model server'}) in guide {guide}: {', '.join(names)}; pass --overlay",
        details={"guide": guide, "hardware": profile.id, "model_server": server, "overlays": names},
    )


def _refuse(overlay: Overlay, status: OverlayStatus, profile: HardwareProfile, named: str, source: LlmdSource) -> None:
    details = {"overlay": overlay.path, "hardware": profile.id, "status": status.state, "detail": status.detail}
    if status.state == "component":
        raise DeployRequestInvalid(f"overlay {overlay.path} is {status.detail}", details=details)
    if status.state == "building-block":
        raise building_block(overlay, status.detail)
    if status.state == "helper":
        raise DeployRequestInvalid(f"overlay {overlay.path} {status.detail}; deploy it beside the overlay it serves",
                                   details=details)
    if status.state == "unsafe":
        raise OverlayUnsafe(f"overlay {overlay.path} reaches outside the llm-d source: {status.detail}", details=details)
    if status.state == "unlabelled":
        raise OverlayLabelMismatch(
            f"overlay {overlay.path} {status.detail}, so it cannot be confirmed to be for {named}", details=details)
    if status.state == "label-mismatch":
        raise OverlayLabelMismatch(
            f"overlay {overlay.path} is labelled for other hardware: its {status.detail}, but {named} was requested",
            details={**details, "resolves_to": status.resolves_to},
        )


def confirm_identity(choice: OverlayChoice, rendered: list[dict[str, Any]], resolver: Resolver,
                     requested_as: str | None = None) -> OverlayChoice:
    """An overlay whose files name no hardware is for the profile when its rendered pods say so.

    Only the model-server pods count (those asking for registered hardware or carrying a variant
    label); their ``llm-d.ai/accelerator-*`` labels must all resolve to the chosen profile.
    """
    if choice.status.state != "unlabelled":
        return choice
    profile = choice.profile
    named = f"{requested_as!r} (profile {profile.id})" if requested_as and requested_as != profile.id else profile.id
    view = DeviceView(resolver, rendered)
    pairs = sorted({(pod.labels.get(VARIANT_LABEL, ""), pod.labels.get(VENDOR_LABEL, ""))
                    for pod in all_pod_templates(rendered) if view.is_accelerated(pod)
                    and (VARIANT_LABEL in pod.labels or VENDOR_LABEL in pod.labels)})
    details = {"overlay": choice.overlay.path, "hardware": profile.id, "status": choice.status.state}
    if not pairs:
        raise OverlayLabelMismatch(
            f"overlay {choice.overlay.path} {choice.status.detail}, and its rendered pods carry none either, "
            f"so it cannot be confirmed to be for {named}", details=details)
    shown = "; ".join(f"{VARIANT_LABEL}={v or '-'}, {VENDOR_LABEL}={n or '-'}" for v, n in pairs)
    resolved = {resolver.match_labels({k: x for k, x in ((VARIANT_LABEL, v), (VENDOR_LABEL, n)) if x}).profile_id
                for v, n in pairs}
    if resolved != {profile.id}:
        others = ", ".join(sorted(str(r or "no registered hardware") for r in resolved))
        raise OverlayLabelMismatch(
            f"overlay {choice.overlay.path}: its rendered pods are labelled {shown}, which resolve to {others}, "
            f"but {named} was requested", details={**details, "resolves_to": sorted(str(r) for r in resolved)})
    why = [*choice.explanation[:-1], f"labels of the rendered pods {shown} resolve to {profile.id}",
           choice.explanation[-1]]
    status = OverlayStatus("ok", "", profile.id)
    return OverlayChoice(choice.overlay, profile, choice.inspection, status, tuple(why), choice.role)


def building_block(overlay: Overlay, reason: str) -> OverlayBuildingBlock:
    """The refusal of a building block, naming what to deploy instead."""
    return OverlayBuildingBlock(
        f"overlay {overlay.path} is a building block, not a deploy target: {reason}; pass one of them as --overlay",
        details={"overlay": overlay.path, "reason": reason})
