"""``/api/v1/deploy``: the overlays of the server's llm-d source, and one rendered and fitted.

The llm-d source is the server's own (``$LLM_D_ROOT``): a client names a guide, hardware and
optionally a git revision, never a path on the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from llm_d_lens.deploy.service import (
    MAX_MODEL_LEN,
    MAX_MODEL_NAME,
    MAX_REPLICAS,
    MODEL_NAME,
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
                  "--pipeline-parallel": "pipeline_parallel", "--replicas": "replicas", "--model": "model",
                  "--max-model-len": "max_model_len", "--guide": "guide", "--hardware": "hardware"}


class RuntimeClassModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    handler: str = ""


# The HTTP edge's schema of the service's RenderRequest (whose own checks still run on what this lets
# through): the bounds come from the same constants, so the OpenAPI document states them. Its docstring
# is the schema's description.
class RenderBody(BaseModel):
    """A render request as JSON: types are exact (``true`` or ``"2"`` is no count) and counts bounded."""

    model_config = ConfigDict(extra="forbid", strict=True)

    guide: str = Field(min_length=1, description="llm-d guide, e.g. optimized-baseline.")
    hardware: str = Field(min_length=1, description="Profile id or any alias.")
    model_server: str | None = Field(default=None, description="vllm, sglang, ...; default: the only one, else vllm.")
    overlay: str | None = Field(default=None, description="Sub-overlay, as the guides listing names it; default: the flat one or base.")
    mode: str | None = Field(default=None, description="Access mode; default: the profile's first.")
    count: int | None = Field(default=None, ge=1, le=MAX_ACCELERATORS_PER_POD,
                              description="Accelerators per pod; default: what the overlay asks for.")
    pci_allow: list[str] = Field(default_factory=list, description="PCI addresses the DRA claim may use.")
    resource_name: str | None = Field(default=None, description="Extended resource, when the mode offers several.")
    runtime_classes: list[RuntimeClassModel] | None = Field(default=None, description="The cluster's RuntimeClasses, when known.")
    revision: str | None = Field(default=None, description="Git revision of the llm-d source to read.")
    image_policy: Literal["keep", "profile"] = Field(
        default="keep", description="keep: upstream's pinned images stay (placeholders get the profile's image); "
                                    "profile: the profile's runtime_image replaces images from repositories it manages.")
    model: str | None = Field(default=None, min_length=1, max_length=MAX_MODEL_NAME, pattern=MODEL_NAME.pattern,
                              description="Model the engine serves instead of the overlay's (a Hugging Face id or path).")
    tensor_parallel: int | None = Field(default=None, ge=1, le=MAX_ACCELERATORS_PER_POD,
                                        description="The engine's tensor-parallel size; the pod's count follows it.")
    pipeline_parallel: int | None = Field(default=None, ge=1, le=MAX_ACCELERATORS_PER_POD,
                                          description="The engine's pipeline-parallel size within the pod.")
    max_model_len: int | None = Field(default=None, ge=1, le=MAX_MODEL_LEN, description="The engine's context length in tokens.")
    replicas: int | None = Field(default=None, ge=0, le=MAX_REPLICAS, description="Replicas of each model-server workload.")

    def request(self) -> RenderRequest:
        """The service's request: the same fields, checked again by the service itself."""
        return RenderRequest(**self.model_dump())


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
        document = render(request.request(), runner=runner).to_dict()
    # the explanation is the CLI's too: "pass --overlay" means the `overlay` field here
    document["explanation"] = [reword_text(line, REQUEST_FIELDS) for line in document["explanation"]]
    document["count_sources"] = {pod: reword_text(source, REQUEST_FIELDS) for pod, source in document["count_sources"].items()}
    return document
