"""The deploy jobs the CLI and the API share: list overlays, render one fitted, apply it.

Each job takes its runner and registry as arguments, so tests hand in a FakeRunner or their own
profiles; the edges only parse options and print.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec

from llm_d_lens.deploy.discovery import discover, kustomizations_below, with_engines
from llm_d_lens.deploy.engine_args import Applied, EngineArgumentFixed, EngineChoice, apply_choice
from llm_d_lens.deploy.engines import MODEL_LABEL, engine_of_pods, model_of_pods
from llm_d_lens.deploy.errors import RenderRequestInvalid, ValidationFailed
from llm_d_lens.deploy.guides import (
    GATEWAYS,
    ROUTER_BASE,
    companions_for,
    contents,
    guide_names,
    is_helper,
    router_values_for,
)
from llm_d_lens.deploy.kustomization import KustomizationReader
from llm_d_lens.deploy.network import PodPairing, pairing_issues, pairings
from llm_d_lens.deploy.render import (
    Build,
    dump_manifests,
    kustomize_command,
    parse_manifests,
)
from llm_d_lens.deploy.resolve import (
    OverlayChoice,
    building_block,
    choose_overlay,
    confirm_identity,
    guide_not_found,
    overlay_statuses,
    refuse_helm_values_layout,
)
from llm_d_lens.deploy.shape import FitOptions, FitResult, Fitter, RuntimeClassRef
from llm_d_lens.deploy.source import open_source
from llm_d_lens.deploy.targets import placeholder_images
from llm_d_lens.deploy.validate import Issue, mixed_hardware, validate
from llm_d_lens.deploy.wellformed import check_rendered
from llm_d_lens.deploy.workloads import DeviceView, all_pod_templates
from llm_d_lens.hardware.registry import Registry, get_registry
from llm_d_lens.hardware.resolution import Resolver
from llm_d_lens.k8s.objects import items, name_of
from llm_d_lens.limits import MAX_ACCELERATORS_PER_POD
from llm_d_lens.runner import Runner, format_command

#: Seconds `kubectl apply` may take against a slow API server.
APPLY_TIMEOUT = 120.0


#: what ``--model`` may hold: it is written into an engine's argv, so no blanks, quotes or shell characters
MODEL_NAME = re.compile(r"^[^\s'\"$`;&|<>]+$")
MAX_MODEL_NAME = 256
MAX_MODEL_LEN = 10_000_000
MAX_REPLICAS = 10_000
IMAGE_POLICIES = ("keep", "profile")


class RenderRequest(msgspec.Struct):
    """What to render: the same fields as ``lens deploy render``'s options, checked when made.

    A plain value, so the CLI and the console build one without a validation library; each bad
    field is a :class:`RenderRequestInvalid` naming the flag and the value (the API names the field).
    """

    guide: str
    hardware: str
    model_server: str | None = None
    overlay: str | None = None
    mode: str | None = None
    count: int | None = None
    pci_allow: list[str] = msgspec.field(default_factory=list)
    resource_name: str | None = None
    runtime_classes: list[RuntimeClassRef] | None = None  # the cluster's, when known
    revision: str | None = None
    image_policy: str = "keep"
    model: str | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    max_model_len: int | None = None
    replicas: int | None = None

    def __post_init__(self) -> None:
        for flag, value in (("--guide", self.guide), ("--hardware", self.hardware)):
            if not isinstance(value, str) or not value:
                raise RenderRequestInvalid(flag, value, "must not be empty")
        for flag, value, low, high in (("--count", self.count, 1, MAX_ACCELERATORS_PER_POD),
                                       ("--tensor-parallel", self.tensor_parallel, 1, MAX_ACCELERATORS_PER_POD),
                                       ("--pipeline-parallel", self.pipeline_parallel, 1, MAX_ACCELERATORS_PER_POD),
                                       ("--max-model-len", self.max_model_len, 1, MAX_MODEL_LEN),
                                       ("--replicas", self.replicas, 0, MAX_REPLICAS)):
            if value is not None and (type(value) is not int or not low <= value <= high):
                raise RenderRequestInvalid(flag, value, f"is not a whole number from {low} to {high:,}")
        if self.image_policy not in IMAGE_POLICIES:
            raise RenderRequestInvalid("--image-policy", self.image_policy, f"is not one of {', '.join(IMAGE_POLICIES)}")
        if self.model is not None and (not isinstance(self.model, str) or len(self.model) > MAX_MODEL_NAME
                                       or not MODEL_NAME.fullmatch(self.model)):
            raise RenderRequestInvalid("--model", self.model, f"is not a model name (at most {MAX_MODEL_NAME} characters, "
                                                             "no blanks, quotes or shell characters)")
        self.pci_allow = list(self.pci_allow)
        if self.runtime_classes is not None:
            self.runtime_classes = [RuntimeClassRef(**r) if isinstance(r, dict) else r for r in self.runtime_classes]

    def fit_options(self) -> FitOptions:
        known = None if self.runtime_classes is None else tuple(self.runtime_classes)
        return FitOptions(self.mode, self.count, tuple(self.pci_allow), known, self.resource_name, self.image_policy)

    def engine_choice(self) -> EngineChoice:
        return EngineChoice(self.model, self.tensor_parallel, self.pipeline_parallel, self.max_model_len, self.replicas)


class RenderResult(msgspec.Struct):
    choice: OverlayChoice
    fitted: FitResult
    warnings: list[Issue]
    command: list[str]
    engine: str | None = None
    model: str | None = None
    router_values: list[str] = msgspec.field(default_factory=list)  # `helm install -f` files of the guide's router, in order
    companions: list[str] = msgspec.field(default_factory=list)  # manifests, monitoring and helpers to deploy beside it
    engine_changes: Applied = msgspec.field(default_factory=Applied)  # what --model, --tensor-parallel, ... changed
    pairing: list[PodPairing] = msgspec.field(default_factory=list)  # GPU:NIC per model-server pod

    @property
    def objects(self) -> list[dict[str, Any]]:
        return self.fitted.objects

    def manifests(self) -> str:
        return dump_manifests(self.fitted.objects)

    def explanation(self) -> list[str]:
        lines = list(self.choice.explanation)
        lines.append(f"rendered with `{format_command([*self.command, self.choice.overlay.path])}`")
        if self.engine or self.model:
            lines.append(f"serves {self.model or 'an unnamed model'} with {self.engine or 'an unknown engine'}")
        if self.router_values:
            lines.append(f"router: helm values {', '.join(self.router_values)}")
        if self.companions:
            lines.append(f"deploy beside it: {', '.join(self.companions)}")
        lines += [f"engine: {note}" for note in self.engine_changes.notes]
        lines.append(f"access mode {self.fitted.mode} ({self.fitted.request_model})")
        lines += self.fitted.notes
        lines += [f"{p.pod}: GPU:NIC {p.describe()}" for p in self.pairing if p.status != "none"]
        return lines

    def to_dict(self, *, objects: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "overlay": self.choice.to_dict(),
            "hardware": self.choice.profile.id,
            "mode": self.fitted.mode,
            "request_model": self.fitted.request_model,
            "counts": self.fitted.counts,
            "count_sources": self.fitted.count_sources,
            "images": self.fitted.images,
            "engine": self.engine,
            "model": self.model,
            "router_values": self.router_values,
            "companions": self.companions,
            "pairing": [p.to_dict() for p in self.pairing],
            "engine_changes": list(self.engine_changes.notes),
            "explanation": self.explanation(),
            "warnings": [w.to_dict() for w in self.warnings],
        }
        if objects:
            out["objects"] = self.fitted.objects
            out["manifests"] = self.manifests()
        return out


def render(
    request: RenderRequest,
    *,
    root: str | os.PathLike[str] | None = None,
    runner: Runner | None = None,
    registry: Registry | None = None,
    env: Mapping[str, str] | None = None,
    step: Callable[[str], None] | None = None,
) -> RenderResult:
    """Find the overlay, render it with kustomize, fit the mode's request shape, validate the result.

    ``step`` hears what is being done next (a progress line); it never changes the result.
    """
    say = step or (lambda _: None)
    if runner is None:
        from llm_d_lens.runner import CommandRunner

        runner = CommandRunner()
    registry = registry or get_registry()
    resolver = Resolver(registry)
    profile = registry.get(request.hardware)
    fitter = Fitter(profile, request.fit_options(), resolver)  # bad modes and addresses fail before any work
    command = kustomize_command(runner)
    if request.revision is not None:
        say(f"reading revision {request.revision} of the llm-d source with git")
    with open_source(root, request.revision, runner=runner, env=env) as source:
        say(f"finding the {request.guide} overlay for {profile.id}")
        choice = choose_overlay(source, registry, profile, request.guide, model_server=request.model_server,
                                overlay=request.overlay, requested_as=request.hardware, identity_from_render=True)
        say(f"rendering {choice.overlay.path} with {format_command(command)}")
        with Build(runner, source, choice.overlay.directory) as kustomize:
            router, companions = _whole_guide(source, registry, choice)  # read while kustomize runs
            rendered = parse_manifests(kustomize.output(), choice.overlay.path)
    say(f"fitting the render to access mode {fitter.mode_name}")
    check_rendered(rendered, choice.overlay.path)
    placeholders = placeholder_images(rendered)
    if placeholders and choice.role.used_by:
        raise building_block(choice.overlay, f"a base for {', '.join(choice.role.used_by)}: it renders the placeholder "
                                             f"image {', '.join(placeholders)}, which they fill")
    choice = confirm_identity(choice, rendered, resolver, request.hardware)
    where = f"{choice.overlay.path} for {profile.id}"
    mixed = mixed_hardware(rendered, resolver)
    if mixed is not None:
        raise ValidationFailed(where, [mixed])
    view = DeviceView(resolver, rendered)
    servers = [(pod, view.targets(pod)) for pod in all_pod_templates(rendered) if view.is_accelerated(pod)]
    applied = apply_choice(servers, rendered, request.engine_choice())
    if applied.sizes:
        fitter = Fitter(profile, _sized_options(request, applied, where), resolver)
    fitted = fitter.fit(rendered)
    issues = validate(fitted.objects, profile, fitted.mode, fitter.mode, fitted.counts, resolver) + fitted.warnings
    paired = pairings(fitted.objects, profile, registry, view)
    issues += pairing_issues(pairings(rendered, profile, registry, view), paired)
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        raise ValidationFailed(f"{where}, access mode {fitted.mode}", errors)
    accelerated = [p for p in all_pod_templates(rendered) if DeviceView(resolver, rendered).is_accelerated(p)]
    return RenderResult(choice, fitted, issues, command, engine_of_pods(accelerated), model_of_pods(accelerated),
                        router, companions, applied, paired)


def _sized_options(request: RenderRequest, applied: Applied, where: str) -> FitOptions:
    """The fit options once Lens set the engine's sizes: the pod's count follows them unless ``--count`` says.

    Lens sized the engine, so the check that ``--count`` outgrew the engine's own size no longer
    applies; an explicit ``--count`` that differs (a chip of two cores: 4 chips at TP 8) is kept as asked.
    """
    options = request.fit_options()
    sizes = set(applied.sizes.values())
    count = request.count
    if count is None:
        if None in sizes or len(sizes) != 1:
            shown = ", ".join(f"{k}: {v or 'unknown'}" for k, v in applied.sizes.items())
            raise EngineArgumentFixed(
                f"{where}: the engines' devices a pod cannot be told from their flags after the change "
                f"({shown}); pass --count",
                details={"sizes": {k: v for k, v in applied.sizes.items()}})
        count = sizes.pop()
    elif sizes != {count}:
        applied.notes.append(f"--count {count} kept as asked beside the engine's size "
                             f"{', '.join(str(s) for s in sorted(s or 0 for s in sizes))}")
    return msgspec.structs.replace(options, count=count, engine_sized=True)


def _whole_guide(source: Any, registry: Registry, choice: OverlayChoice) -> tuple[list[str], list[str]]:
    """The router values files and the companions the chosen overlay pairs with in its guide."""
    reader = KustomizationReader(source)
    helpers = [o for o in discover(source, registry, guide=choice.overlay.guide).overlays if is_helper(reader, o)]
    guide = contents(source, choice.overlay.guide, helpers)
    return router_values_for(choice.overlay, guide, source), companions_for(choice.overlay, guide)


def describe_guides(
    *,
    root: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    guide: str | None = None,
    hardware: str | None = None,
    runner: Runner | None = None,
    registry: Registry | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Every overlay in the source, per guide and hardware, with its labels and whether it is usable."""
    registry = registry or get_registry()
    resolver = Resolver(registry)
    profiles = [registry.get(hardware)] if hardware else None
    if guide is not None:
        from llm_d_lens.deploy.source import check_name

        check_name("guide", guide, nested=True)
    with open_source(root, revision, runner=runner, env=env) as source:
        catalog = discover(source, registry, guide=guide, profiles=profiles)
        all_guides = guide_names(source)
        if not catalog.overlays and not discover(source, registry).overlays:  # no overlay anywhere: before the overlays?
            refuse_helm_values_layout(source, guide)
        if guide is not None and guide not in all_guides and not catalog.overlays:
            whole_guide = catalog if profiles is None else discover(source, registry, guide=guide)
            if not whole_guide.overlays:
                raise guide_not_found(source, registry, guide)  # a typo, recipes or a folder of a guide, not a guide
        reader = KustomizationReader(source)
        found = with_engines(catalog.overlays, reader.engine)
        statuses, _ = overlay_statuses(source, found, reader, resolver)
        overlays = []
        for overlay in found:
            inspection = reader.inspect(overlay.directory)
            status = statuses[overlay.path]
            overlays.append({**overlay.to_dict(), "labels": _accelerator_labels(inspection.labels),
                             "model": inspection.labels.get(MODEL_LABEL), "status": status.state, "detail": status.detail})
        listed = sorted(({o.guide for o in catalog.overlays} | set(all_guides)) if guide is None else {guide})
        helpers = {g: [o for o in found if o.guide == g and statuses[o.path].state == "helper"] for g in listed}
        guide_contents = {g: contents(source, g, helpers[g]) for g in listed}
        unsupported = []
        for directory in catalog.unsupported:
            if directory.guide not in all_guides:
                continue  # a folder of a guide (wide-ep-lws/manifests), not a guide of its own
            found = [(path, reader.inspect(d)) for d, path in kustomizations_below(source, directory.directory)]
            labelled = [(path, i) for path, i in found if i.kind == "Kustomization" and i.accelerator_labels]
            if directory.guide in guide_contents:  # bases and components the guide's overlays share
                guide_contents[directory.guide].shared += [path for path, i in found if (path, i) not in labelled]
            if not labelled:
                continue
            pairs = sorted({i.accelerator_labels for _, i in labelled if i.accelerator_labels})
            unsupported.append({**directory.to_dict(), "overlays": [path for path, _ in labelled],
                                "labels": [f"{v}/{n}" for v, n in pairs],
                                "detail": f"no registered profile has upstream_variant {directory.name!r}"})
        return {
            "source": source.to_dict(),
            "guides": sorted(set(listed) | {u["guide"] for u in unsupported}),
            "contents": [c.to_dict() for c in guide_contents.values()],
            "shared": {"router_base": ROUTER_BASE if (source.root / ROUTER_BASE).is_file() else None,
                       "gateways": [p for d, p in kustomizations_below(source, str(source.root / GATEWAYS))]
                       if (source.root / GATEWAYS).is_dir() else []},
            "overlays": overlays,
            "unsupported": unsupported,
            "skipped": [s.to_dict() for s in catalog.skipped],
        }


def _accelerator_labels(labels: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k.startswith("llm-d.ai/accelerator-")}


def fetch_runtime_classes(runner: Runner) -> list[RuntimeClassRef]:
    """The cluster's RuntimeClasses, so a profile's runtime_class_matchers can pick one."""
    document = runner.run(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"]).json()
    return [RuntimeClassRef(name=name_of(i), handler=str(i.get("handler", ""))) for i in items(document) if name_of(i)]


def apply(result: RenderResult, runner: Runner, *, yes: bool = False, namespace: str | None = None) -> dict[str, Any]:
    """``kubectl apply`` of the fitted render; a server-side dry run unless ``yes``."""
    argv = ["kubectl", "apply", "-f", "-"]
    if namespace:
        argv += ["--namespace", namespace]
    if not yes:
        argv.append("--dry-run=server")
    output = runner.run(argv, input=result.manifests(), timeout=APPLY_TIMEOUT)
    return {"dry_run": not yes, "command": format_command(output.argv), "output": output.stdout}


@contextmanager
def server_source_errors() -> Iterator[None]:
    """A server's missing llm-d source is the server's to fix (503), not the caller's (the API and the console)."""
    from llm_d_lens.deploy.errors import SourceNotFound
    from llm_d_lens.deploy.source import ROOT_ENV
    from llm_d_lens.errors import ServerNotConfigured

    try:
        yield
    except SourceNotFound as exc:
        message = exc.message.replace("pass --llm-d-root or set", "start the server with")
        raise ServerNotConfigured(f"the deploy API is misconfigured on the server ({ROOT_ENV}): {message}",
                                  details={"cause": exc.code, **exc.details}) from None
