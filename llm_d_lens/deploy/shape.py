"""Fitting a rendered overlay's request shape to one access mode of a hardware profile.

Upstream overlays ask for the accelerator one way (an extended resource such as ``<vendor>/gpu: 2`` in
limits, or a ResourceClaimTemplate for a DRA device class); the cluster may run the other driver. Fitting
rewrites the rendered objects, never the overlay: for a DRA mode the container's extended
resource becomes a claim on the mode's device class (reusing the overlay's own claim when it has
one); for an extended-resource mode any accelerator claim becomes the mode's resource in limits
and requests. Tolerations, node selector, runtime class and image come from the profile. Every
change is noted, so the user can see what Lens did to the upstream manifests.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from llm_d_lens.deploy.errors import DeployRequestInvalid
from llm_d_lens.deploy.validate import Issue
from llm_d_lens.deploy.workloads import (
    CLAIM_TEMPLATE_KIND,
    DRA_API_VERSION,
    DeviceView,
    PodTemplate,
    all_pod_templates,
    container_resources,
    filled,
    is_placeholder_image,
    pod_templates,
    request_class,
    template_requests,
)
from llm_d_lens.hardware.models import DeploymentMode, HardwareProfile
from llm_d_lens.hardware.pci import normalise_pci
from llm_d_lens.hardware.resolution import Resolver
from llm_d_lens.k8s.engine import literal_env, resolve_size, stated_flags


class RuntimeClassRef(msgspec.Struct, frozen=True):
    """A RuntimeClass a cluster has: its name and the handler it runs."""

    name: str
    handler: str = ""


class FitOptions(msgspec.Struct, frozen=True):
    mode: str | None = None  # None: the profile's first access mode
    count: int | None = None  # None: what the overlay says, else its parallelism flags, else 1
    pci_allow: tuple[str, ...] = ()
    runtime_classes: tuple[RuntimeClassRef, ...] | None = None  # None: not known
    resource_name: str | None = None  # one of the mode's resource_names; default the first
    image_policy: str = "keep"  # "keep": upstream's pins stay; "profile": the profile's runtime_image replaces managed ones
    engine_sized: bool = False  # Lens set the engine's sizes (--tensor-parallel): the count is theirs, not a mismatch


class FitResult(msgspec.Struct):
    objects: list[dict[str, Any]]
    mode: str
    request_model: str
    counts: dict[str, int] = msgspec.field(default_factory=dict)  # workload display -> devices per pod
    count_sources: dict[str, str] = msgspec.field(default_factory=dict)
    notes: list[str] = msgspec.field(default_factory=list)
    images: list[dict[str, str]] = msgspec.field(default_factory=list)  # per model-server container: kept, filled, replaced
    warnings: list[Issue] = msgspec.field(default_factory=list)  # found while fitting (an engine sized for another count)


def select_mode(profile: HardwareProfile, name: str | None) -> tuple[str, DeploymentMode]:
    modes = profile.effective_modes()
    if name is None:
        return profile.mode()
    if name not in modes:
        raise DeployRequestInvalid(
            f"hardware {profile.id!r} has no access mode {name!r}; its modes: {', '.join(modes) or 'none'}",
            details={"hardware": profile.id, "mode": name, "modes": list(modes)},
        )
    return name, modes[name]


def normalize_pci(addresses: Sequence[str]) -> tuple[str, ...]:
    """PCI addresses as ``dddd:bb:dd.f`` (what pciBusID-style attributes hold), each once; a bad one is an error."""
    normalized = []
    for address in addresses:
        canonical = normalise_pci(address)
        if canonical is None:
            raise DeployRequestInvalid(
                f"--pci-allow {address!r} is not a PCI address such as 0000:3b:00.0", details={"value": address}
            )
        normalized.append(canonical)
    return tuple(dict.fromkeys(normalized))


def pci_selector(domain: str, attribute: str, addresses: Sequence[str]) -> str:
    """The CEL expression that admits only the listed devices."""
    listed = ", ".join(f'"{a}"' for a in addresses)
    return f'device.attributes["{domain}"].{attribute} in [{listed}]'


def image_repository(image: str) -> str:
    """``registry/name`` without tag or digest, with Docker Hub's implicit prefixes removed."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def is_partition_resource(profile: HardwareProfile, name: str) -> bool:
    """A partition the profile's inventory counts (a device slice): a plugin mode may request it by ``--resource``."""
    return any(re.fullmatch(pattern, name) for pattern in profile.inventory.partition_resource_patterns)


def parallel_flags(container: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``tp``/``pp``/``dp_local`` -> (the flag as written, its value) for the sizes the engine states.

    The value is kept as written: ``$TP_SIZE`` from a shell script is stated but not known.
    """
    return stated_flags(container)


def parallelism(container: dict[str, Any]) -> int | None:
    """Devices one model-server pod drives by its flags (tensor × pipeline × local data-parallel ranks).

    A size may be a literal, a variable the container's ``env`` sets (``$TP_SIZE``) or shell
    arithmetic over such variables. None when the engine states no size, or one that is not known.
    """
    stated = parallel_flags(container)
    env = literal_env(container)
    sizes = [resolve_size(value, env) for _, value in stated.values()]
    if not sizes or None in sizes:
        return None
    return math.prod(sizes)  # type: ignore[arg-type]


def engine_size(pod: PodTemplate, targets: list[dict[str, Any]], count: int, overlay_count: int) -> list[Issue]:
    """A warning when ``--count`` changes a pod's devices but its engine keeps the size it had.

    Upstream pairs a pod's request with its engine's flags, and the pair is taken as right even when
    the numbers differ (an accelerator whose chip holds two cores: 4 chips requested, a tensor-parallel
    size of 8); so only a change Lens makes is checked. The flags are never rewritten: they may sit
    in a shell script or come from a variable, a count has several tensor × pipeline × data-parallel
    splits, and the split decides memory fit and speed, so it is the user's choice.
    """
    if count == overlay_count:
        return []
    issues = []
    for container in targets:
        size = parallelism(container)
        if size is None:
            continue
        stated = " ".join(f"{flag}={value}" for flag, value in parallel_flags(container).values())
        issues.append(Issue("warning", "ENGINE_PARALLELISM_MISMATCH", pod.display,
                            f"--count {count} gives container {container.get('name')} {count} device(s) where the overlay "
                            f"gave {overlay_count}, but its engine still starts with {stated}, sized for the overlay's "
                            f"{overlay_count}: change the engine's flags in your overlay to match (Lens does not rewrite "
                            f"them), or leave out --count"))
    return issues


class Fitter:
    """Rewrites one render for one profile and mode; see :func:`fit`."""

    def __init__(self, profile: HardwareProfile, options: FitOptions, resolver: Resolver):
        self.profile = profile
        self.options = options
        self.resolver = resolver
        self.mode_name, self.mode = select_mode(profile, options.mode)
        self.pci = self._checked_pci()
        #: (device class, qualified attribute, partition profile) when a DRA mode is asked for a partition
        self.partition: tuple[str, str, str] | None = None
        self.resource_name = self._checked_resource_name()
        self.device_class = self.partition[0] if self.partition else self.mode.device_class

    def _checked_pci(self) -> tuple[str, ...]:
        if not self.options.pci_allow:
            return ()
        supported, domain, attribute = self.profile.pci_allowlist(self.mode_name)
        if self.mode.request_model != "dra" or not supported:
            raise DeployRequestInvalid(
                f"access mode {self.mode_name!r} of {self.profile.id!r} does not support a PCI allowlist"
                + ("" if self.mode.request_model == "dra" else f" (it is {self.mode.request_model}, not dra)"),
                details={"hardware": self.profile.id, "mode": self.mode_name},
            )
        addresses = normalize_pci(self.options.pci_allow)
        if self.options.count is not None and self.options.count > len(addresses):
            raise DeployRequestInvalid(
                f"--count {self.options.count} cannot be met by {len(addresses)} allowed PCI address(es)",
                details={"count": self.options.count, "pci_allow": list(addresses)},
            )
        return addresses

    def _checked_resource_name(self) -> str | None:
        if self.mode.request_model == "none" and self.options.count is not None:  # a count that would be dropped silently
            raise DeployRequestInvalid(
                f"access mode {self.mode_name!r} of {self.profile.id!r} asks for no accelerator, so it takes no --count",
                details={"hardware": self.profile.id, "mode": self.mode_name, "count": self.options.count},
            )
        if self.mode.request_model == "dra" and self.options.resource_name:
            self.partition = self._dra_partition(self.options.resource_name)
            return None
        if self.mode.request_model != "extended-resource":
            if self.options.resource_name:
                raise DeployRequestInvalid(f"access mode {self.mode_name!r} of {self.profile.id!r} takes no resource name")
            return None
        wanted = self.options.resource_name or self.mode.resource_names[0]
        if wanted not in self.mode.resource_names and not is_partition_resource(self.profile, wanted):
            raise DeployRequestInvalid(
                f"access mode {self.mode_name!r} of {self.profile.id!r} requests {', '.join(self.mode.resource_names)} "
                f"(or a partition matching inventory.partition_resource_patterns), not {wanted!r}"
            )
        return wanted

    def _dra_partition(self, wanted: str) -> tuple[str, str, str]:
        """A partition resource (``acme.example/slice-1g``) read as the DRA mode's partition class and
        a selector on the driver's partition attribute (``profile == "1g.10gb"``)."""
        mode = self.mode
        patterns = [m.partition_name_pattern for m in self.profile.effective_modes().values() if m.partition_name_pattern]
        found = next((m for p in patterns if (m := re.fullmatch(p, wanted)) and "profile" in m.groupdict()), None)
        if not (mode.partition_device_class and mode.partition_attribute) or found is None:
            raise DeployRequestInvalid(
                f"access mode {self.mode_name!r} of {self.profile.id!r} takes no resource name"
                + ("" if not (mode.partition_device_class and mode.partition_attribute) else
                   f" but a partition matching a mode's partition_name_pattern, not {wanted!r}"),
                details={"hardware": self.profile.id, "mode": self.mode_name, "resource": wanted})
        return mode.partition_device_class, mode.partition_attribute, found.group("profile")

    # -- the whole render -------------------------------------------------------------------

    def fit(self, rendered: list[dict[str, Any]]) -> FitResult:
        if self.options.count is not None and self.options.count < 1:
            raise DeployRequestInvalid(f"--count must be at least 1, not {self.options.count}")
        objects = copy.deepcopy(rendered)
        self.view = DeviceView(self.resolver, objects)
        self.result = FitResult([], self.mode_name, self.mode.request_model)
        self.dropped_templates: set[str] = set()
        self.template_users: dict[str, set[int]] = {}  # template -> the pod specs that claim from it
        for pod in all_pod_templates(objects):
            for entry in pod.spec.get("resourceClaims") or []:
                if isinstance(entry, dict) and entry.get("resourceClaimTemplateName"):
                    self.template_users.setdefault(str(entry["resourceClaimTemplateName"]), set()).add(id(pod.spec))
        output: list[dict[str, Any]] = []
        for obj in objects:
            self.created: list[dict[str, Any]] = []
            for pod in pod_templates(obj):
                if self.view.is_accelerated(pod):
                    self.created += self._fit_pod(pod)
            output += self.created
            output.append(obj)
        self.result.objects = [o for o in output if not (o.get("kind") == CLAIM_TEMPLATE_KIND
                                                           and o.get("metadata", {}).get("name") in self.dropped_templates)]
        return self.result

    def _fit_pod(self, pod: PodTemplate) -> list[dict[str, Any]]:
        targets = self.view.targets(pod)
        if not targets:
            return []
        created: list[dict[str, Any]] = []
        if self.mode.request_model == "none":
            self._drop_claims(pod)
            for container in targets:
                self._set_resources(container, None, 0)
            self._note(pod, "asks for no accelerator (access mode has request model none)")
        else:
            count, source = self._count(pod, targets)
            if self.options.count is not None and not self.options.engine_sized:
                self.result.warnings += engine_size(pod, targets, count, self._overlay_count(pod, targets)[0])
            self.result.counts[pod.display] = count
            self.result.count_sources[pod.display] = source
            if self.mode.request_model == "extended-resource":
                self._drop_claims(pod)
                # the pod's devices go to its first accelerated container: extended resources are
                # not shared, so giving each container the pod's count would multiply it
                for i, container in enumerate(targets):
                    self._set_resources(container, self.resource_name if i == 0 else None, count)
                self._note(pod, f"requests {self.resource_name}: {count} in limits and requests ({source})")
            else:
                if self.pci and count > len(self.pci):
                    raise DeployRequestInvalid(
                        f"{pod.display} asks for {count} devices per pod ({source}), but --pci-allow admits only "
                        f"{len(self.pci)}; allow more addresses or pass --count",
                        details={"count": count, "pci_allow": list(self.pci)},
                    )
                for container in targets:
                    self._set_resources(container, None, 0)
                created = self._claim(pod, targets, count, source)
        self._scheduling(pod)
        for container in targets:
            self._image(pod, container)
        return created

    def _note(self, pod: PodTemplate, text: str) -> None:
        self.result.notes.append(f"{pod.display}: {text}")

    # -- count ------------------------------------------------------------------------------

    def _count(self, pod: PodTemplate, targets: list[dict[str, Any]]) -> tuple[int, str]:
        if self.options.count is not None:
            return self.options.count, "the engine's sizes Lens set" if self.options.engine_sized else "--count"
        return self._overlay_count(pod, targets)

    def _overlay_count(self, pod: PodTemplate, targets: list[dict[str, Any]]) -> tuple[int, str]:
        """The count the overlay itself implies: its requests, else its engine's flags, else one."""
        stated = self.view.pod_requests(pod, self.profile.id, targets)
        if len(stated) == 1 and stated[0].count:
            return stated[0].count, "the overlay's own request"
        if stated and (total := sum(r.count or 0 for r in stated)):
            return total, f"the overlay's own requests, summed: {' + '.join(r.describe() for r in stated)}"
        flags = [p for c in targets if (p := parallelism(c)) is not None]
        if flags:
            return max(flags), "tensor × pipeline (× local data-parallel) size in the model server's flags"
        return 1, "default of one device per pod"

    # -- extended resources -----------------------------------------------------------------

    def _set_resources(self, container: dict[str, Any], name: str | None, count: int) -> None:
        """Remove this hardware's extended resources; add ``name: count`` when given."""
        resources = filled(container, "resources", {})
        for section in ("limits", "requests"):
            values = resources.get(section)
            if isinstance(values, dict):
                for key in [k for k in values if self.view.resource_owner(k) == self.profile.id]:
                    del values[key]
            if name is not None:
                resources.setdefault(section, {})
                if not isinstance(resources[section], dict):
                    resources[section] = {}
                resources[section][name] = count
            if section in resources and not resources[section]:
                del resources[section]
        if not resources:
            del container["resources"]

    # -- DRA claims -------------------------------------------------------------------------

    def _drop_claims(self, pod: PodTemplate, keep: tuple[str, str, dict[str, Any]] | None = None) -> None:
        """Take every accelerator request out of the pod's claims (and claims left empty out of the pod).

        ``keep`` is the (pod claim, template, request) that now carries the pod's whole count; every other
        accelerator claim and request goes, so the devices are not asked for twice.
        """
        entries = [e for e in pod.spec.get("resourceClaims") or [] if isinstance(e, dict)]
        kept_entries = []
        dropped_claims: set[str] = set()
        dropped_requests: dict[str, set[str]] = {}
        for entry in entries:
            template_name = entry.get("resourceClaimTemplateName")
            template = self.view.templates.get(str(template_name)) if template_name else None
            if template is None:
                kept_entries.append(entry)
                continue
            requests = template_requests(template)
            kept_request = keep[2] if keep is not None and keep[1] == template_name else None
            if kept_request is not None and entry.get("name") != keep[0]:
                dropped_claims.add(str(entry.get("name")))  # another claim on the kept template: one allocation
                self._note(pod, f"dropped claim {entry.get('name')} (its devices are counted in claim {keep[0]})")
                continue
            accelerator = [r for r in requests if self.view.class_owner(request_class(r)) and r is not kept_request]
            if not accelerator:
                kept_entries.append(entry)
                continue
            removed = {str(r.get("name")) for r in accelerator}
            classes = ", ".join(sorted({str(request_class(r)) for r in accelerator}))
            if len(accelerator) == len(requests):
                dropped_claims.add(str(entry.get("name")))
                if self._shared(str(template_name), pod):  # another pod still claims from it
                    self._note(pod, f"dropped claim {entry.get('name')} on ResourceClaimTemplate {template_name} ({classes})")
                else:
                    self.dropped_templates.add(str(template_name))
                    self._note(pod, f"dropped ResourceClaimTemplate {template_name} ({classes})")
            else:
                positions = [i for i, r in enumerate(requests) if any(r is a for a in accelerator)]
                template_name = self._private(pod, str(template_name))
                template = self.view.templates[template_name]
                requests = template_requests(template)
                accelerator = [requests[i] for i in positions]
                devices = template["spec"]["spec"]["devices"]
                devices["requests"] = [r for r in requests if r not in accelerator]
                _prune_constraints(devices, removed)
                dropped_requests[str(entry.get("name"))] = removed
                kept_entries.append(entry)
                self._note(pod, f"removed request(s) {', '.join(sorted(removed))} ({classes}) from ResourceClaimTemplate {template_name}")
        if len(kept_entries) != len(entries):
            if kept_entries:
                pod.spec["resourceClaims"] = kept_entries
            else:
                del pod.spec["resourceClaims"]
        for container in pod.containers() + [c for c in pod.spec.get("initContainers") or [] if isinstance(c, dict)]:
            resources = container_resources(container)
            uses = resources.get("claims")
            if not isinstance(uses, list):
                continue
            kept = [u for u in uses if not (isinstance(u, dict) and (
                u.get("name") in dropped_claims or u.get("request") in dropped_requests.get(str(u.get("name")), ())))]
            if kept:
                resources["claims"] = kept
            else:
                del resources["claims"]

    def _claim(self, pod: PodTemplate, targets: list[dict[str, Any]], count: int, source: str) -> list[dict[str, Any]]:
        """Reuse the pod's own claim on this hardware when it has one; otherwise add a template."""
        mode = self.mode
        assert mode.device_class and mode.claim_request_name
        if self._keep_claims(pod, targets, count):
            return []
        for container in targets:
            for claim, template_name, request in self.view.claims(pod, container):
                if request is None or template_name is None or self.view.class_owner(request_class(request)) != self.profile.id:
                    continue
                position = next(i for i, r in enumerate(template_requests(self.view.templates[template_name])) if r is request)
                template_name = self._private(pod, template_name)
                template = self.view.templates[template_name]
                request = template_requests(template)[position]
                old_name = request.get("name")
                self._shape_request(template, request, count)
                _rename_in_constraints(template, old_name, mode.claim_request_name)
                self._rename_request_uses(pod, claim, old_name, mode.claim_request_name)
                self._drop_claims(pod, keep=(claim, template_name, request))
                for other in targets:
                    _use_claim(other, claim)
                self._note(pod, f"requests {count} × {self.device_class} through the overlay's ResourceClaimTemplate "
                                f"{template_name}, request {mode.claim_request_name} ({source})")
                return []
        template_name = _unique(f"{pod.name}-{mode.claim_request_name}", set(self.view.templates))
        claim_name = _unique(mode.claim_request_name, {str(e.get("name")) for e in pod.spec.get("resourceClaims") or []
                                                        if isinstance(e, dict)})
        metadata: dict[str, Any] = {"name": template_name}
        namespace = pod.workload.get("metadata", {}).get("namespace")
        if namespace:
            metadata["namespace"] = namespace
        labels = pod.workload.get("metadata", {}).get("labels")
        if isinstance(labels, dict) and labels:
            metadata["labels"] = dict(labels)
        new_request: dict[str, Any] = {"name": mode.claim_request_name, "exactly": {}}
        template = {"apiVersion": DRA_API_VERSION, "kind": CLAIM_TEMPLATE_KIND, "metadata": metadata,
                    "spec": {"spec": {"devices": {"requests": [new_request]}}}}
        self._shape_request(template, new_request, count)
        self.view.templates[template_name] = template
        filled(pod.spec, "resourceClaims", []).append({"name": claim_name, "resourceClaimTemplateName": template_name})
        for container in targets:
            _use_claim(container, claim_name)
        self._note(pod, f"requests {count} × {self.device_class} through new ResourceClaimTemplate {template_name} ({source})")
        return [template]

    def _keep_claims(self, pod: PodTemplate, targets: list[dict[str, Any]], count: int) -> bool:
        """Keep the overlay's own claims when they already are this mode's request for ``count`` devices.

        Upstream may pair each GPU with a NIC on the same PCIe root (four claims of one GPU and one
        NIC each); folding those into one claim of four would lose the pairing, so claims that are
        already right are left as they are.
        """
        own = self.view.pod_requests(pod, self.profile.id, targets)
        resources = [r for c in targets for r in self.view.requests(pod, c) if r.kind == "resource" and r.profile_id == self.profile.id]
        if (not own or resources or self.pci or sum(r.count or 0 for r in own) != count
                or any(r.kind != "claim" or r.key != self.device_class for r in own)):
            return False
        for name in sorted({str(r.template) for r in own}):
            template = self.view.templates[name]
            if template.get("apiVersion") != DRA_API_VERSION:
                return False  # an older claim API: rewritten in the v1 shape below
        claims = sorted({str(r.claim) for r in own})
        self._note(pod, f"keeps the overlay's {len(claims)} claim(s) {', '.join(claims)}: {count} × {self.device_class}")
        return True

    def _shared(self, template_name: str, pod: PodTemplate) -> bool:
        return bool(self.template_users.get(template_name, set()) - {id(pod.spec)})

    def _private(self, pod: PodTemplate, template_name: str) -> str:
        """A template only this pod claims from: ``template_name``, or a copy of it when other pods share it."""
        if not self._shared(template_name, pod):
            return template_name
        copied = copy.deepcopy(self.view.templates[template_name])
        name = _unique(f"{template_name}-{pod.name}", set(self.view.templates))
        copied["metadata"]["name"] = name
        self.view.templates[name] = copied
        self.created.append(copied)
        for entry in pod.spec.get("resourceClaims") or []:
            if isinstance(entry, dict) and entry.get("resourceClaimTemplateName") == template_name:
                entry["resourceClaimTemplateName"] = name
        self.template_users[template_name].discard(id(pod.spec))
        self.template_users.setdefault(name, set()).add(id(pod.spec))
        self._note(pod, f"claims from its own copy {name} of ResourceClaimTemplate {template_name}, which other pods share")
        return name

    def _shape_request(self, template: dict[str, Any], request: dict[str, Any], count: int) -> None:
        """The mode's device class, request name, count and PCI selector, in the v1 shape."""
        template["apiVersion"] = DRA_API_VERSION
        exactly = request.get("exactly")
        if not isinstance(exactly, dict):  # v1beta1 kept these on the request itself
            exactly = {k: request.pop(k) for k in list(request) if k != "name"}
            request["exactly"] = exactly
        request["name"] = self.mode.claim_request_name
        exactly["deviceClassName"] = self.device_class
        exactly["allocationMode"] = "ExactCount"
        exactly["count"] = count
        supported, domain, attribute = self.profile.pci_allowlist(self.mode_name)
        selectors = [s for s in exactly.get("selectors") or []
                     if not (supported and _is_pci_selector(s, domain, attribute))]
        if self.pci:
            selectors.append({"cel": {"expression": pci_selector(domain, attribute, self.pci)}})
        if self.partition is not None:
            _, qualified, wanted = self.partition
            part_domain, _, part_attribute = qualified.rpartition("/")
            selectors = [s for s in selectors if f"].{part_attribute} ==" not in str(s)]
            selectors.append({"cel": {"expression": f'device.attributes["{part_domain}"].{part_attribute} == "{wanted}"'}})
        if selectors:
            exactly["selectors"] = selectors
        else:
            exactly.pop("selectors", None)

    def _rename_request_uses(self, pod: PodTemplate, claim: str, old: Any, new: str) -> None:
        for container in pod.containers():
            for use in container_resources(container).get("claims") or []:
                if isinstance(use, dict) and use.get("name") == claim and use.get("request") == old:
                    use["request"] = new

    # -- scheduling and image ---------------------------------------------------------------

    def _scheduling(self, pod: PodTemplate) -> None:
        deployment = self.profile.deployment
        tolerations = filled(pod.spec, "tolerations", [])
        for toleration in deployment.tolerations:
            wanted = toleration.to_data(exclude_none=True)
            if wanted not in tolerations:
                tolerations.append(wanted)
                self._note(pod, f"tolerates {wanted['key']} ({wanted.get('effect', 'any effect')})")
        if not tolerations:
            del pod.spec["tolerations"]
        selector = {**deployment.node_selector, **self.mode.node_selector}
        if selector:
            node_selector = filled(pod.spec, "nodeSelector", {})
            for key, value in selector.items():
                if key not in node_selector:
                    node_selector[key] = value
                elif node_selector[key] != value:
                    self._note(pod, f"kept the overlay's nodeSelector {key}={node_selector[key]} over the profile's {value}")
        self._runtime_class(pod)

    def _runtime_class(self, pod: PodTemplate) -> None:
        matchers = [re.compile(m) for m in self.profile.deployment.runtime_class_matchers]
        known = self.options.runtime_classes
        if not matchers or known is None:
            return
        if pod.spec.get("runtimeClassName"):
            self._note(pod, f"kept the overlay's runtimeClassName {pod.spec['runtimeClassName']}")
            return
        for matcher in matchers:
            for runtime_class in known:
                if matcher.search(runtime_class.name) or (runtime_class.handler and matcher.search(runtime_class.handler)):
                    pod.spec["runtimeClassName"] = runtime_class.name
                    self._note(pod, f"runs with RuntimeClass {runtime_class.name} (matches {matcher.pattern})")
                    return
        self._note(pod, "no RuntimeClass in the cluster matches " + ", ".join(m.pattern for m in matchers)
                   + "; the default runtime is used")

    def _image(self, pod: PodTemplate, container: dict[str, Any]) -> None:
        """Upstream's pinned image is kept; the profile's fills a placeholder, and replaces a pin only when asked.

        ``--revision X`` must reproduce what X pinned, so a pin (a nightly, an ``-ironwood`` build, an
        older tag) is never swapped silently for the profile's ``runtime_image``.
        """
        deployment = self.profile.deployment
        image = container.get("image")
        name = str(container.get("name", "?"))
        runtime = deployment.runtime_image
        if not isinstance(image, str):
            return
        if is_placeholder_image(image):
            if runtime:
                container["image"] = runtime
                self._image_row(pod, name, image, runtime, "filled", "a placeholder, filled with the profile's runtime_image")
            else:
                self._image_row(pod, name, image, image, "placeholder", "a placeholder, and the profile has no runtime_image")
            return
        managed = {image_repository(r) for r in deployment.managed_image_repositories}
        if (self.options.image_policy == "profile" and runtime and image != runtime
                and image_repository(image) in managed):
            container["image"] = runtime
            self._image_row(pod, name, image, runtime, "replaced", "--image-policy profile: a repository the profile manages")
        elif self.options.image_policy == "profile" and runtime and image != runtime:
            self._image_row(pod, name, image, image, "kept", "pinned upstream, not from a repository the profile manages")
        else:
            self._image_row(pod, name, image, image, "kept", "pinned upstream")

    def _image_row(self, pod: PodTemplate, container: str, upstream: str, image: str, action: str, why: str) -> None:
        self.result.images.append({"workload": pod.display, "container": container, "upstream": upstream,
                                   "image": image, "action": action, "reason": why})
        shown = f"image {upstream} -> {image}" if image != upstream else f"image {image}"
        self._note(pod, f"container {container}: {action} {shown} ({why})")


def fit(rendered: list[dict[str, Any]], profile: HardwareProfile, options: FitOptions, resolver: Resolver) -> FitResult:
    """A copy of ``rendered`` with the request shape of ``options.mode``; ``rendered`` is not changed."""
    return Fitter(profile, options, resolver).fit(rendered)


def _use_claim(container: dict[str, Any], claim: str) -> None:
    uses = filled(filled(container, "resources", {}), "claims", [])
    if not any(isinstance(u, dict) and u.get("name") == claim for u in uses):
        uses.append({"name": claim})


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    return candidate


def _is_pci_selector(selector: Any, domain: str, attribute: str) -> bool:
    expression = selector.get("cel", {}).get("expression", "") if isinstance(selector, dict) else ""
    return isinstance(expression, str) and expression.startswith(f'device.attributes["{domain}"].{attribute} in ')


def _rename_in_constraints(template: dict[str, Any], old: Any, new: str) -> None:
    """A renamed request keeps its place in the claim's constraints (a GPU tied to its NIC by matchAttribute)."""
    if old == new:
        return
    devices = ((template.get("spec") or {}).get("spec") or {}).get("devices") or {}
    for constraint in devices.get("constraints") or []:
        if isinstance(constraint, dict) and isinstance(constraint.get("requests"), list):
            constraint["requests"] = [new if r == old else r for r in constraint["requests"]]


def _prune_constraints(devices: dict[str, Any], removed: set[str]) -> None:
    """Constraints naming removed requests lose those names; one left with fewer than two goes."""
    constraints = devices.get("constraints")
    if not isinstance(constraints, list):
        return
    kept = []
    for constraint in constraints:
        names = constraint.get("requests") if isinstance(constraint, dict) else None
        if isinstance(names, list):
            names = [n for n in names if n not in removed]
            if len(names) < 2:
                continue
            constraint["requests"] = names
        kept.append(constraint)
    if kept:
        devices["constraints"] = kept
    else:
        devices.pop("constraints", None)
