"""``GET /api/v1/incluster/permissions``: the server's own account, checked grant by grant.

Always 200 with ``ok`` and each answer, so a readiness probe or the console can show *which*
permission is missing and what it breaks; the installer's grants are asked only when mutations are
on (``LENS_API_TOKEN`` set), and ``mutations`` says which, so a missing token Secret is visible too.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from llm_d_lens import settings
from llm_d_lens.runner import Runner

router = APIRouter(tags=["incluster"])


def permissions_runner() -> Runner:
    """The server's cluster (LENS_KUBE_CONTEXT/LENS_KUBECONFIG, else in a pod its service account)."""
    from llm_d_lens.runner import CommandRunner

    return CommandRunner(kubeconfig=settings.text("LENS_KUBECONFIG"), context=settings.text("LENS_KUBE_CONTEXT"))


@router.get("/incluster/permissions")
async def permissions(runner: Runner = Depends(permissions_runner)) -> dict[str, Any]:
    from llm_d_lens.incluster.permissions import check
    from llm_d_lens.monitoring.gpu_driver.api import TOKEN_ENV

    mutations = settings.text(TOKEN_ENV) is not None
    return (await check(runner, mutations=mutations)).to_dict()
