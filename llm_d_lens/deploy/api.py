"""``/api/v1/deploy``: the overlays of the server's llm-d source, and one rendered and fitted.

The llm-d source is the server's own (``$LLM_D_ROOT``): a client names a guide, hardware and
optionally a git revision, never a path on the server.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from llm_d_lens.deploy.service import RenderRequest, describe_guides, render
from llm_d_lens.runner import CommandRunner, Runner

router = APIRouter(tags=["deploy"])


def get_runner() -> Runner:
    """The runner kustomize and git go through; tests override this dependency."""
    return CommandRunner()


@router.get("/deploy/guides")
def guides(guide: str | None = None, hardware: str | None = None, revision: str | None = None,
           runner: Runner = Depends(get_runner)) -> dict[str, Any]:
    """Every overlay in the server's llm-d source, with labels and status; a blank parameter is no filter."""
    return describe_guides(revision=revision or None, guide=guide or None, hardware=hardware or None, runner=runner)


@router.post("/deploy/render")
def render_overlay(request: RenderRequest, runner: Runner = Depends(get_runner)) -> dict[str, Any]:
    """The hardware's overlay of a guide, rendered with kustomize and fitted to an access mode."""
    return render(request, runner=runner).to_dict()
