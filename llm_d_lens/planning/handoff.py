"""The ``lens deploy render`` command a plan hands on: one builder for the memory fit's pools and for every shape.

The command names the guide, the hardware, the overlay where the profile says which one a product
uses (``deployment.product_overlays``: several device generations share a guide), the pool's
partition resource, the served model, the engine's sizes, the context length and the replicas; the
render sets each where the guide's overlay states it.
"""

from __future__ import annotations

import shlex

from llm_d_lens.planning.pools import Pool


def overlay_for(pool: Pool) -> str | None:
    """The overlay the pool's product uses, from its hardware profile; None when the profile names none."""
    from llm_d_lens.hardware.registry import get_registry

    profile = {p.id: p for p in get_registry().profiles()}.get(pool.profile_id)
    if profile is None:
        return None
    overlays = profile.deployment.product_overlays
    return next((overlays[part] for part in pool.product.split(", ") if part in overlays), None)


def render_command(pool: Pool, guide: str, served: str | None, tensor_parallel: int, pipeline_parallel: int,
                   context: int | None, replicas: int) -> str:
    """``lens deploy render ...`` as one shell-quoted line."""
    deploy = ["lens", "deploy", "render", "--guide", guide, "--hardware", pool.profile_id]
    overlay = overlay_for(pool)
    if overlay is not None:
        deploy += ["--overlay", overlay]
    deploy += pool.deploy_options()
    if served is not None:
        deploy += ["--model", served]
    deploy += ["--tensor-parallel", str(tensor_parallel)]
    if pipeline_parallel > 1:
        deploy += ["--pipeline-parallel", str(pipeline_parallel)]
    if context is not None:
        deploy += ["--max-model-len", str(context)]
    deploy += ["--replicas", str(replicas)]
    return shlex.join(deploy)
