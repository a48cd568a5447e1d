"""One entry point for ``lens evaluate config`` and ``POST /evaluate/config``: arguments to a config.

Either the user names the hardware (and optionally a mode, a resource and a workload), or Lens
infers everything from a manifest it did not render; mixing the two is refused rather than
silently preferring one.
"""

from __future__ import annotations

from llm_d_lens.errors import LensError
from llm_d_lens.evaluate.benchmark import DEFAULT_GUIDE, BenchmarkConfig, roles_from_workload, select_target, single_pool
from llm_d_lens.evaluate.profiles import LoadedProfile


class ConfigArgumentsInvalid(LensError):
    code = "CONFIG_ARGUMENTS_INVALID"
    http_status = 422


def build_config(
    *,
    hardware: str | None = None,
    mode: str | None = None,
    resource: str | None = None,
    guide: str | None = None,
    workload: LoadedProfile | None = None,
    tensor_parallel: int | None = None,
    replicas: int | None = None,
    manifest: str | None = None,
    manifest_source: str = "manifest",
    network: str | None = None,
) -> BenchmarkConfig:
    config = _build(hardware=hardware, mode=mode, resource=resource, guide=guide, workload=workload,
                    tensor_parallel=tensor_parallel, replicas=replicas, manifest=manifest, manifest_source=manifest_source)
    if network is not None:
        config.network_resource = network_resource(network)
    elif manifest is not None:
        from llm_d_lens.evaluate.inference import parse_manifest

        found = manifest_network(parse_manifest(manifest, manifest_source))
        if found is not None:
            config.network_resource = network_resource(found)
            config.evidence.append({"query": "network", "key": found, "status": "supported",
                                    "matched_by": "network profile", "matched_value": config.network_resource})
    return config


def manifest_network(objects: list) -> str | None:
    """The first NIC a rendered manifest's pods ask for (a resource, or a claim's network class or driver)."""
    from llm_d_lens.deploy.network import NetworkMatcher
    from llm_d_lens.deploy.workloads import all_pod_templates, claim_templates, container_resources, template_requests
    from llm_d_lens.evaluate.inference import flatten
    from llm_d_lens.hardware.registry import get_registry

    matcher = NetworkMatcher(get_registry().network_profiles())
    objects = flatten(objects)
    templates = claim_templates(objects)
    for pod in all_pod_templates(objects):
        for container in pod.containers():
            for section in ("limits", "requests"):
                for name, value in (container_resources(container).get(section) or {}).items():
                    if matcher.resource(str(name)) is not None and str(value) != "0":
                        return str(name)
        for entry in pod.spec.get("resourceClaims") or []:
            template = templates.get(str(entry.get("resourceClaimTemplateName"))) if isinstance(entry, dict) else None
            for request in template_requests(template) if template else []:
                profile_id = matcher.request(request)
                if profile_id is not None:
                    return profile_id
    return None


def network_resource(name: str) -> str:
    """llm-d-benchmark's networkResource for a network device profile (by id, or a resource, class or driver it owns)."""
    from llm_d_lens.hardware.registry import get_registry

    profiles = get_registry().network_profiles()
    for profile in profiles:
        owned = [*profile.resource_names, *profile.device_classes, *profile.dra_drivers]
        if name == profile.id or name in owned:
            return profile.benchmark_network_resource or (name if name in owned else next(iter(owned), profile.id))
    raise ConfigArgumentsInvalid(f"no network device profile is or owns {name!r}; network profiles: "
                                 f"{', '.join(p.id for p in profiles) or 'none'}",
                                 details={"network": name, "profiles": [p.id for p in profiles]})


def _build(
    *,
    hardware: str | None,
    mode: str | None,
    resource: str | None,
    guide: str | None,
    workload: LoadedProfile | None,
    tensor_parallel: int | None,
    replicas: int | None,
    manifest: str | None,
    manifest_source: str,
) -> BenchmarkConfig:
    if manifest is not None:
        given = [name for name, value in (("hardware", hardware), ("mode", mode), ("resource", resource),
                                          ("workload profile", workload), ("tensor parallel", tensor_parallel),
                                          ("replicas", replicas))
                 if value is not None]
        if given:
            raise ConfigArgumentsInvalid(f"a manifest says what it runs on; do not also give {', '.join(given)}")
        from llm_d_lens.evaluate.inference import infer, parse_manifest

        config = infer(parse_manifest(manifest, manifest_source), source=manifest_source)
        if guide:
            config.guide = guide
        return config

    if workload is not None and tensor_parallel is not None:
        raise ConfigArgumentsInvalid("the workload profile sets the parallelism; do not also give tensor parallel")
    if workload is not None and replicas is not None:
        raise ConfigArgumentsInvalid("the workload profile sets the replicas; do not also give replicas")
    named = workload.profile.hardware if workload is not None else None
    key = hardware or (named.accelerator if named else None)
    if key is None:
        raise ConfigArgumentsInvalid("name the hardware (or give a workload profile whose hardware.accelerator names it, "
                                     "or a manifest to infer it from)")
    if workload is not None and named is not None and named.accelerator is not None and hardware is not None:
        from llm_d_lens.hardware.registry import get_registry

        registry = get_registry()
        if registry.get(named.accelerator).id != registry.get(hardware).id:
            raise ConfigArgumentsInvalid(f"hardware {hardware!r} is not the hardware workload profile {workload.name!r} "
                                         f"names ({named.accelerator!r})")
    # the profile's access_mode belongs to its hardware.accelerator, which is the hardware by now
    target = select_target(key, mode or (named.access_mode if named else None), resource)
    if workload is not None:
        roles, model = roles_from_workload(workload.profile), workload.profile.serving.model
    else:
        roles, model = single_pool(tensor_parallel or 1, replicas), None
    return BenchmarkConfig(target, roles, guide or DEFAULT_GUIDE, model)
