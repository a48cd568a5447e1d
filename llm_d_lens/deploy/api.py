"""``/api/v1/deploy``: the overlays of the server's llm-d source, and one rendered and fitted.

The llm-d source is the server's own (``$LLM_D_ROOT``): a client names a guide, hardware and
optionally a git revision, never a path on the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import ConfigDict, Field

from llm_d_lens.deploy.service import (
    RenderRequest,
    describe_guides,
    render,
    server_source_errors,
)
from llm_d_lens.limits import MAX_ACCELERATORS_PER_POD
from llm_d_lens.runner import CommandRunner, Runner
from llm_d_lens.web.request_fields import flags_as_fields, reword_text

router = APIRouter(tags=["deploy"])

#: the CLI flags the deploy domain's messages name -> the request fields an API caller sends instead
REQUEST_FIELDS = {"--pci-allow": "pci_allow", "--count": "count", "--model-server": "model_server",
                  "--overlay": "overlay", "--revision": "revision", "--resource": "resource_name", "--mode": "mode",
                  "--image-policy": "image_policy", "--tensor-parallel": "tensor_parallel",
                  "--pipeline-parallel": "pipeline_parallel", "--replicas": "replicas"}


class RenderBody(RenderRequest):
    """A render request as JSON: types are exact (``true`` or ``"2"`` is no count) and counts bounded."""

    model_config = ConfigDict(extra="forbid", strict=True)

    count: int | None = Field(default=None, ge=1, le=MAX_ACCELERATORS_PER_POD,
                              description="Accelerators per pod; default: what the overlay asks for.")


def get_runner() -> Runner:
    """The runner kustomize and git go through; tests override this dependency."""
    return CommandRunner()


@contextmanager
def _api_errors() -> Iterator[None]:
    """A missing llm-d source is the server's to fix (503); other errors name request fields."""
    with server_source_errors(), flags_as_fields(REQUEST_FIELDS):
        yield


@router.get("/deploy/guides")
def guides(guide: str | None = None, hardware: str | None = None, revision: str | None = None,
           runner: Runner = Depends(get_runner)) -> dict[str, Any]:
    """Every overlay in the server's llm-d source, with labels and status; a blank parameter is no filter."""
    with _api_errors():
        return describe_guides(revision=revision or None, guide=guide or None, hardware=hardware or None, runner=runner)


@router.post("/deploy/render")
def render_overlay(request: RenderBody, runner: Runner = Depends(get_runner)) -> dict[str, Any]:
    """The hardware's overlay of a guide, rendered with kustomize and fitted to an access mode."""
    with _api_errors():
        document = render(request, runner=runner).to_dict()
    # the explanation is the CLI's too: "pass --overlay" means the `overlay` field here
    document["explanation"] = [reword_text(line, REQUEST_FIELDS) for line in document["explanation"]]
    document["count_sources"] = {pod: reword_text(source, REQUEST_FIELDS) for pod, source in document["count_sources"].items()}
    return document
