"""Which hardware a rendered manifest Lens did not render asks for, and how.

The llm-d labels decide first (``llm-d.ai/accelerator-variant``/``-vendor``: the overlay says what
it is for), then the DRA device classes the pods' claims request, then extended resource names.
The request shape then picks the access mode and the count per pod. Nothing is ever assumed: a
manifest whose clues resolve to no registered hardware, or to two, is refused with the evidence,
and every step taken is reported so a user can see why Lens chose what it chose.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.evaluate.benchmark import DEFAULT_GUIDE, BenchmarkConfig, Role, Target
from llm_d_lens.evaluate.errors import HardwareNotInferred, ManifestInvalid
from llm_d_lens.evaluate.workload import Parallelism
from llm_d_lens.hardware.errors import render_value
from llm_d_lens.hardware.resolution import VARIANT_LABEL, VENDOR_LABEL, Resolution, Resolver
from llm_d_lens.k8s.engine import DATA_FLAGS, POD_SIZE_FLAGS, literal_env, resolve_size, stated_flags

#: values a manifest may hold once its YAML aliases are expanded (a whole guide's is a few tens of thousands)
MAX_MANIFEST_NODES = 1_000_000
from llm_d_lens.k8s.objects import get_path, is_extended_resource, labels_of, name_of, whole_quantity

ROLE_LABEL = "llm-d.ai/role"
GUIDE_LABEL = "llm-d.ai/guide"
#: kind -> path to the pod template(s) inside ``spec``
POD_TEMPLATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "Deployment": (("template",),),
    "StatefulSet": (("template",),),
    "DaemonSet": (("template",),),
    "ReplicaSet": (("template",),),
    "Job": (("template",),),
    "LeaderWorkerSet": (("leaderWorkerTemplate", "leaderTemplate"), ("leaderWorkerTemplate", "workerTemplate")),
}


@dataclass
class PodShape:
    """What one pod template asks for."""

    source: str  # "Deployment/name"
    labels: dict[str, str]
    replicas: int | None
    device_classes: dict[str, int] = field(default_factory=dict)  # class -> devices per pod
    node_labels: dict[str, str] = field(default_factory=dict)  # labels the pod pins its node to
    resources: dict[str, int] = field(default_factory=dict)  # extended resource -> per pod
    parallelism: Parallelism | None = None  # what its engine's flags state, when every size is known
    parallel_evidence: dict[str, Any] | None = None  # what was read, known or not

    @property
    def role(self) -> str:
        return self.labels.get(ROLE_LABEL, "decode")


def parse_manifest(text: str, source: str = "manifest") -> list[dict[str, Any]]:
    """The objects of a multi-document YAML manifest, ``List`` kinds flattened."""
    import yaml

    from llm_d_lens import files as textread, yamlread
    from llm_d_lens.errors import clip

    try:
        documents = [d for d in yamlread.load_all(text, max_bytes=textread.DEFAULT_LIMIT, max_nodes=MAX_MANIFEST_NODES)
                     if d is not None]
    except yamlread.DuplicateKey as exc:
        raise ManifestInvalid(f"{source}: {exc.path}: appears twice in one mapping; the second would silently "
                              "replace the first") from None
    except yamlread.YamlRefused as exc:
        raise ManifestInvalid(f"{source}: refused before reading: {exc}") from None
    except yaml.YAMLError as exc:
        raise ManifestInvalid(f"{source}: not valid YAML: {clip(str(exc), 1000)}") from None
    for i, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise ManifestInvalid(f"{source}: document {i + 1} is not a Kubernetes object (a mapping)")
    return flatten(documents)


def flatten(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Objects with every ``List`` kind (``kubectl get -o yaml`` output) replaced by its items."""
    out: list[dict[str, Any]] = []
    for obj in objects:
        if str(obj.get("kind", "")).endswith("List"):
            out += flatten(item for item in obj.get("items") or [] if isinstance(item, dict))
        else:
            out.append(obj)
    return out


def _name(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind', '?')}/{name_of(obj) or '?'}"


_SHAPE_NAMES = {list: "a list", dict: "a mapping"}


def _as(value: Any, kind: type, where: str) -> Any:
    """``value`` when it has the ``kind`` Kubernetes gives that field (null reads as empty), else a named error."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise ManifestInvalid(f"{where}: expected {_SHAPE_NAMES[kind]}, got {render_value(value)}")
    return value


def _count(value: Any, where: str) -> int:
    count = whole_quantity(value)
    if count is None:
        raise ManifestInvalid(f"{where}: {value!r} is not a whole number of devices")
    return count


def claim_template_classes(objects: Iterable[dict[str, Any]], source: str = "manifest") -> dict[str, dict[str, int]]:
    """ResourceClaimTemplate name -> device class -> devices requested (v1 ``exactly`` or v1beta1)."""
    templates: dict[str, dict[str, int]] = {}
    for obj in objects:
        if obj.get("kind") not in ("ResourceClaimTemplate", "ResourceClaim"):
            continue
        spec = get_path(obj, "spec", "spec") if obj["kind"] == "ResourceClaimTemplate" else obj.get("spec")
        classes: dict[str, int] = {}
        requests = _as(get_path(spec, "devices", "requests"), list, f"{source}: {_name(obj)} spec.devices.requests")
        for i, request in enumerate(requests):
            request = _as(request, dict, f"{source}: {_name(obj)} spec.devices.requests[{i}]")
            exact = request.get("exactly") if isinstance(request.get("exactly"), dict) else request
            device_class = exact.get("deviceClassName")
            if not device_class:
                continue
            where = f"{source}: {_name(obj)} spec.devices.requests[{i}].count"
            count = _count(exact.get("count", 1), where) if exact.get("allocationMode", "ExactCount") == "ExactCount" else 0
            classes[device_class] = classes.get(device_class, 0) + count
        templates[name_of(obj)] = classes
    return templates


def pod_shapes(objects: list[dict[str, Any]], source: str = "manifest") -> list[PodShape]:
    templates = claim_template_classes(objects, source)
    shapes = []
    for obj, template, replicas, spec_path in _pod_templates(objects):
        labels = {**labels_of(obj), **labels_of(template)}
        shape = PodShape(_name(obj), labels, replicas)
        at = f"{source}: {shape.source}"
        spec = _as(template.get("spec"), dict, f"{at} {spec_path}")
        shape.node_labels = pinned_node_labels(spec)
        for i, claim in enumerate(_as(spec.get("resourceClaims"), list, f"{at} resourceClaims")):
            claim = _as(claim, dict, f"{at} resourceClaims[{i}]")
            named = str(claim.get("resourceClaimTemplateName") or claim.get("resourceClaimName") or "")
            for device_class, count in templates.get(named, {}).items():
                shape.device_classes[device_class] = shape.device_classes.get(device_class, 0) + count
        containers = _as(spec.get("containers"), list, f"{at} containers")
        requesting = []
        for c, container in enumerate(containers):
            container = _as(container, dict, f"{at} containers[{c}]")
            resources = _as(container.get("resources"), dict, f"{at} containers[{c}].resources")
            asks = False
            # an extended resource's request must equal its limit, so either one gives the count
            asked = {**_as(resources.get("requests"), dict, f"{at} containers[{c}].resources.requests"),
                     **_as(resources.get("limits"), dict, f"{at} containers[{c}].resources.limits")}
            for resource, value in asked.items():
                if not is_extended_resource(str(resource)):
                    continue
                count = _count(value, f"{at} containers[{c}].resources.{resource}")
                shape.resources[resource] = shape.resources.get(resource, 0) + count
                asks = asks or count > 0
            if asks or resources.get("claims"):  # the model server: it asks for the devices
                requesting.append(container)
        lws_size = get_path(obj, "spec", "leaderWorkerTemplate", "size") if obj.get("kind") == "LeaderWorkerSet" else None
        servers = requesting or containers
        shape.parallelism, shape.parallel_evidence = stated_parallelism(shape.source, servers, lws_size)
        shapes.append(shape)
    return shapes


#: what LeaderWorkerSet puts in every container's environment: the pods in one group
LWS_GROUP_SIZE = "LWS_GROUP_SIZE"


def stated_parallelism(source: str, containers: list[dict[str, Any]], lws_size: Any = None,
                       ) -> tuple[Parallelism | None, dict[str, Any] | None]:
    """The parallelism the model server's flags state (tensor, pipeline, data, local data ranks), and the evidence.

    Read from the containers that request the devices (all, when none does); literals, ``$VAR``
    from the container's ``env`` and ``$((...))`` over them (LeaderWorkerSet's ``LWS_GROUP_SIZE``
    too) are resolved. Nothing is guessed: a size that is not known, or containers that state
    different sizes, give no parallelism, only the evidence saying so.
    """
    groups = (*POD_SIZE_FLAGS, (DATA_FLAGS, "dp"))
    group = {LWS_GROUP_SIZE: str(lws_size)} if type(lws_size) is int and lws_size > 0 else {}
    readings = []
    for container in containers:
        stated = stated_flags(container, groups)
        if not stated:
            continue
        env = group | literal_env(container)
        sizes = {key: resolve_size(value, env) for key, (_, value) in stated.items()}
        readings.append((container, stated, sizes))
    if not readings:
        return None, None
    container, stated, sizes = readings[0]
    evidence: dict[str, Any] = {"query": "parallelism", "object": source, "container": str(container.get("name") or ""),
                                "stated": {flag: value for flag, value in stated.values()}}
    if any(size is None for size in sizes.values()):
        unknown = [stated[key][0] for key, size in sizes.items() if size is None]
        return None, evidence | {"status": "unknown", "reason": f"not a known number: {', '.join(unknown)}"}
    if any(other_sizes != sizes for _, _, other_sizes in readings[1:]):
        return None, evidence | {"status": "unknown", "reason": "the pod's containers state different sizes"}
    local = sizes.get("dp_local", 1)
    found = Parallelism(tensor=sizes.get("tp", 1), pipeline=sizes.get("pp", 1), data_local=local,
                        data=max(sizes.get("dp", local), local))
    return found, evidence | {"status": "known", "parallelism": found.model_dump()}


def pinned_node_labels(spec: dict[str, Any]) -> dict[str, str]:
    """Labels a pod's node must carry with one value: ``nodeSelector``, and ``In`` with a single value
    in a required node affinity that has one term (several terms are alternatives, so none is pinned)."""
    pinned = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()} \
        if isinstance(spec.get("nodeSelector"), dict) else {}
    terms = get_path(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    if isinstance(terms, list) and len(terms) == 1 and isinstance(terms[0], dict):
        for expression in terms[0].get("matchExpressions") or []:
            if isinstance(expression, dict) and expression.get("operator") == "In" and \
                    isinstance(expression.get("values"), list) and len(expression["values"]) == 1:
                pinned.setdefault(str(expression.get("key")), str(expression["values"][0]))
    return pinned


def _pod_templates(objects: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any], int | None, str]]:
    """(object, pod template, replicas, where the template's spec sits) of every object that has pods."""
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Pod":
            yield obj, obj, None, "spec"
        for path in POD_TEMPLATES.get(str(kind or ""), ()):
            template = get_path(obj.get("spec"), *path)
            if isinstance(template, dict):
                replicas = obj["spec"].get("replicas")
                yield obj, template, replicas if isinstance(replicas, int) else None, f"spec.{'.'.join(path)}.spec"


def infer(objects: list[dict[str, Any]], resolver: Resolver | None = None, source: str = "manifest") -> BenchmarkConfig:
    """The benchmark configuration a rendered manifest implies; refuses rather than guesses."""
    resolver = resolver or Resolver()
    objects = flatten(objects)
    shapes = pod_shapes(objects, source)
    if not shapes:
        raise ManifestInvalid(f"{source}: no pod template found (looked in Pod, {', '.join(POD_TEMPLATES)})")
    evidence: list[dict[str, Any]] = []
    by_labels = _resolve_labels(shapes, resolver, evidence)
    by_class = [resolver.match_device_class(c) for c in sorted({c for s in shapes for c in s.device_classes})]
    by_resource = [resolver.match_resource(r) for r in sorted({r for s in shapes for r in s.resources})]
    evidence += [r.to_dict() for r in (*by_class, *by_resource)]

    hardware_id = by_labels or _one(by_class, "device class", evidence) or _one(by_resource, "extended resource", evidence)
    if hardware_id is None:
        raise HardwareNotInferred(
            f"{source}: no registered hardware matches this manifest: no llm-d accelerator labels that resolve, "
            f"no DRA device class and no extended resource a profile claims ({_clues(shapes)})", evidence)
    for found in (*by_class, *by_resource):
        if found.supported and found.profile_id != hardware_id:
            raise HardwareNotInferred(
                f"{source}: the manifest points at two hardware profiles: {hardware_id!r} and {found.query} "
                f"{found.key!r} of {found.profile_id!r}", evidence)
    hardware = resolver.registry.get(hardware_id)
    target, counts = _mode(hardware, shapes, source, evidence, resolver)
    roles: dict[str, Role] = {}
    for shape in shapes:
        roles.setdefault(shape.role, Role(counts(shape), shape.replicas, shape.parallelism, node_labels=shape.node_labels))
    evidence += [s.parallel_evidence for s in shapes if s.parallel_evidence is not None]
    guide = next((s.labels[GUIDE_LABEL] for s in shapes if GUIDE_LABEL in s.labels), None)
    return BenchmarkConfig(target, roles, guide or DEFAULT_GUIDE, evidence=evidence)


def _resolve_labels(shapes: list[PodShape], resolver: Resolver, evidence: list[dict[str, Any]]) -> str | None:
    found: dict[str, str] = {}
    for shape in shapes:
        pair = {k: shape.labels[k] for k in (VARIANT_LABEL, VENDOR_LABEL) if k in shape.labels}
        if not pair:
            continue
        result = resolver.match_labels(pair)
        evidence.append(result.to_dict() | {"object": shape.source})
        if result.supported and result.profile_id:
            found[result.profile_id] = shape.source
    if len(found) > 1:
        raise HardwareNotInferred("the manifest's llm-d labels name more than one hardware: "
                                  + ", ".join(f"{pid} ({where})" for pid, where in sorted(found.items())), evidence)
    return next(iter(found), None)


def _one(results: list[Resolution], what: str, evidence: list[dict[str, Any]]) -> str | None:
    owners = sorted({r.profile_id for r in results if r.supported and r.profile_id})
    if len(owners) > 1:
        keys = ", ".join(f"{r.key} ({r.profile_id})" for r in results if r.supported)
        raise HardwareNotInferred(f"the manifest's {what}s belong to more than one hardware: {keys}", evidence)
    return owners[0] if owners else None


def _clues(shapes: list[PodShape]) -> str:
    labels = sorted({f"{k}={s.labels[k]}" for s in shapes for k in (VARIANT_LABEL, VENDOR_LABEL) if k in s.labels})
    classes = sorted({c for s in shapes for c in s.device_classes})
    resources = sorted({r for s in shapes for r in s.resources})
    return "; ".join([f"labels: {', '.join(labels) or 'none'}", f"device classes: {', '.join(classes) or 'none'}",
                      f"resources: {', '.join(resources) or 'none'}"])


def _mode(hardware: Any, shapes: list[PodShape], source: str, evidence: list[dict[str, Any]],
          resolver: Resolver) -> tuple[Target, Any]:
    """The access mode the pods' request shape matches, and how to count one pod's devices."""
    modes = hardware.effective_modes()
    classes = {c for s in shapes for c in s.device_classes if c in hardware.device_classes}
    for name, mode in modes.items():
        if mode.request_model == "dra" and mode.device_class in classes:
            evidence.append({"query": "access_mode", "key": name, "status": "supported", "id": hardware.id,
                             "matched_by": "device_class", "matched_value": mode.device_class})
            return Target(hardware, name, mode), lambda s, c=mode.device_class: s.device_classes.get(c, 0)
    owned = sorted({r for s in shapes for r in s.resources if resolver.match_resource(r).profile_id == hardware.id})
    extended = {n: m for n, m in modes.items() if m.request_model == "extended-resource"}
    if owned:
        resource = owned[0]
        named = [n for n, m in extended.items() if resource in m.resource_names]
        chosen = named[0] if named else (next(iter(extended)) if len(extended) == 1 else None)
        if chosen is None:
            raise HardwareNotInferred(f"{source}: resource {resource!r} belongs to {hardware.id!r}, but none of its "
                                      f"access modes requests it", evidence)
        evidence.append({"query": "access_mode", "key": chosen, "status": "supported", "id": hardware.id,
                         "matched_by": "resource_names", "matched_value": resource})
        return Target(hardware, chosen, modes[chosen], resource), lambda s, r=resource: s.resources.get(r, 0)
    plain = [n for n, m in modes.items() if m.request_model == "none"]
    if plain:
        evidence.append({"query": "access_mode", "key": plain[0], "status": "supported", "id": hardware.id,
                         "matched_by": "request_model", "matched_value": "none"})
        return Target(hardware, plain[0], modes[plain[0]]), lambda s: 0
    raise HardwareNotInferred(
        f"{source}: the manifest is for {hardware.id!r}, but no pod requests its devices: no claim for one of its "
        f"device classes ({', '.join(hardware.device_classes) or 'none'}) and no resource under its prefixes "
        f"({', '.join(hardware.resource_prefixes) or 'none'})", evidence)
