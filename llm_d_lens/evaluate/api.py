"""``/api/v1/evaluate``: llm-d-benchmark scenario settings, as the CLI computes them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from llm_d_lens.evaluate.service import scenario_document
from llm_d_lens.limits import MAX_ACCELERATORS_PER_POD, MAX_NAME_LENGTH, MAX_REPLICAS

router = APIRouter(tags=["evaluate"])


class ConfigRequest(BaseModel):
    """Either ``hardware`` (with optional mode, resource, workload) or a rendered ``manifest``.

    Types are exact (``true`` or ``"2"`` is no count) and counts bounded, so a scenario is never
    written for a parallelism no cluster has.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    hardware: str | None = Field(default=None, max_length=MAX_NAME_LENGTH, description="Hardware id or any alias.")
    mode: str | None = Field(default=None, max_length=MAX_NAME_LENGTH, description="Access mode; the hardware's first when absent.")
    resource: str | None = Field(default=None, max_length=MAX_NAME_LENGTH, description="Extended resource, for a mode that requests several.")
    guide: str | None = Field(default=None, max_length=MAX_NAME_LENGTH, description="llm-d guide the scenario is named after.")
    profile: str | None = Field(default=None, max_length=MAX_NAME_LENGTH, description="A built-in workload profile giving model, pools, parallelism.")
    tensor_parallel: int | None = Field(default=None, ge=1, le=MAX_ACCELERATORS_PER_POD, description="Without a profile: accelerators per pod.")
    replicas: int | None = Field(default=None, ge=1, le=MAX_REPLICAS, description="Without a profile: pods in the single pool.")
    manifest: str | None = Field(default=None, description="A rendered multi-document YAML manifest to infer from.")
    network: str | None = Field(default=None, max_length=MAX_NAME_LENGTH,
                                description="Network device profile id (or a resource, class or driver it owns): llm-d-benchmark's networkResource.")


@router.post("/evaluate/config")
def evaluate_config(request: ConfigRequest) -> dict[str, Any]:
    """The scenario entry, the same YAML the CLI writes, and how the hardware was chosen."""
    return scenario_document(**request.model_dump())
