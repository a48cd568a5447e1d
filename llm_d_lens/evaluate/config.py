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
