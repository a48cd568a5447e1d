"""One call from what a caller names to an llm-d-benchmark scenario: the CLI's, the API's and the console's."""

from __future__ import annotations

from typing import Any


def scenario_document(*, hardware: str | None = None, mode: str | None = None, resource: str | None = None,
                      guide: str | None = None, profile: str | None = None, tensor_parallel: int | None = None,
                      replicas: int | None = None, manifest: str | None = None, network: str | None = None) -> dict[str, Any]:
    """The scenario entry, the same YAML the CLI writes, and how the hardware was chosen.

    ``profile`` names a built-in workload profile; ``manifest`` is a rendered multi-document YAML to
    infer the hardware and parallelism from instead of ``hardware``.
    """
    from llm_d_lens.evaluate.config import build_config
    from llm_d_lens.evaluate.profiles import SearchPath

    workload = SearchPath.of().load(profile) if profile is not None else None
    config = build_config(hardware=hardware, mode=mode, resource=resource, guide=guide, workload=workload,
                          tensor_parallel=tensor_parallel, replicas=replicas, manifest=manifest, network=network)
    return {"summary": config.summary(), "scenario": config.scenario(), "yaml": config.to_yaml()}
