"""``/api/v1/planning``: the catalogue, AIC's state, and plans on the cluster this server reads.

The cluster is the server's (the same environment as ``/api/v1/clusters/overview``); a caller
names a catalogue model or sends a config.json object inline, never a path: a path would let
anyone make the server read its own disk.
"""

from __future__ import annotations

import functools
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from llm_d_lens.cluster.served import cluster_runner, cluster_source
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.planning.aic import status
from llm_d_lens.planning.catalogue import models_document
from llm_d_lens.planning.errors import ModelUnknown
from llm_d_lens.planning.fit import (
    DEFAULT_CONTEXT,
    DEFAULT_MEMORY_UTILIZATION,
    DEFAULT_OVERHEAD_GIB,
    MAX_CONCURRENCY,
    MAX_CONTEXT,
    MAX_OVERHEAD_GIB,
)
from llm_d_lens.planning.service import model_spec, server_plan
from llm_d_lens.runner import Runner

router = APIRouter(tags=["planning"])

#: the CLI's flags in the domain's messages, as this API's body fields
FIELDS = {"--model": "model", "--context": "context", "--concurrency": "concurrency", "--dtype": "dtype",
          "--kv-dtype": "kv_dtype"}


class PlanRequest(BaseModel):
    """Exact JSON types and bounds: ``"8192"`` or ``true`` is no context length."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: str | None = Field(default=None, min_length=1, max_length=200, description="A catalogue name (GET /planning/models).")
    config: dict[str, Any] | None = Field(default=None, description="A Hugging Face config.json object, instead of model.")
    context: int = Field(default=DEFAULT_CONTEXT, ge=1, le=MAX_CONTEXT, description="Context length in tokens.")
    concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY, description="Sequences one replica serves at once.")
    dtype: str | None = Field(default=None, max_length=32, description="Weights dtype (default: the model's).")
    kv_dtype: str | None = Field(default=None, max_length=32, description="KV cache dtype.")
    memory_utilization: float = Field(default=DEFAULT_MEMORY_UTILIZATION, ge=0.05, le=1.0)
    overhead_gib: float = Field(default=DEFAULT_OVERHEAD_GIB, ge=0, le=MAX_OVERHEAD_GIB)
    discover: bool = Field(default=False, description="Run the profiles' discovery tools on nodes of unknown memory "
                                                       "(live clusters only; elsewhere the plan notes it was skipped).")
    predict: bool = Field(default=False, description="Start AIC predictions as a job (GET /planning/jobs/{id}).")
    isl: int = Field(default=4000, ge=1, le=1_000_000, description="AIC: input tokens a request has.")
    osl: int = Field(default=1000, ge=1, le=1_000_000, description="AIC: output tokens a request has.")
    ttft: float = Field(default=2000.0, gt=0, le=600_000, description="AIC: time to first token target, ms.")
    tpot: float = Field(default=30.0, gt=0, le=60_000, description="AIC: time per output token target, ms.")
    backend: str = Field(default="vllm", max_length=16, description="AIC: vllm, sglang or trtllm.")
    shapes: bool = Field(default=False, description="Search aggregated, P/D and wide-EP shapes per pool, ranked by the "
                                                    "ttft/tpot targets at the concurrency, then by cost (answer's shapes).")
    prices: dict[str, Any] | None = Field(default=None, max_length=256,
                                          description="Dollars per device-hour by profile, product or pool name.")


def _spec(request: PlanRequest) -> Any:
    return model_spec(request.model, request.config, ModelUnknown.API_HINT)


@router.get("/planning/models")
def models() -> list[dict[str, Any]]:
    """The catalogue: shapes and published parameter counts of common open models."""
    return models_document()


@router.get("/planning/aic")
def aic_status() -> dict[str, Any]:
    """Whether AIC predictions can be had on this server, and why not."""
    return status().to_dict()


@router.post("/planning/plan")
async def plan(
    request: PlanRequest,
    source: ClusterSource = Depends(cluster_source),
    runner: Runner | None = Depends(cluster_runner),
) -> dict[str, Any]:
    """Per accelerator pool: the TP/PP options that fit, headroom, max sequences, replicas, sources."""
    from llm_d_lens.planning.fit import FitRequest
    from llm_d_lens.web.request_fields import flags_as_fields

    with flags_as_fields(FIELDS):
        spec = _spec(request)
        fit = FitRequest(request.context, request.concurrency, request.dtype, request.kv_dtype,
                         request.memory_utilization, request.overhead_gib)
        fit.checked(spec)
    prices = None
    if request.shapes or request.prices is not None:
        from llm_d_lens.planning.cost import Prices, parse_mapping
        from llm_d_lens.planning.predictions import Targets

        with flags_as_fields(FIELDS):
            shape_targets = Targets(request.isl, request.osl, request.ttft, request.tpot, request.backend).checked()
        prices = Prices(parse_mapping(request.prices or {}, "prices"), "request prices")
    result = await run_in_threadpool(functools.partial(server_plan, discover=request.discover), spec, fit, source, runner)
    if request.predict:
        from llm_d_lens.planning.predictions import Targets

        with flags_as_fields(FIELDS):
            targets = Targets(request.isl, request.osl, request.ttft, request.tpot, request.backend).checked()
        if status().available:
            from llm_d_lens.planning.errors import PredictionsUnavailable

            try:
                result.predictions = await run_in_threadpool(_start_job, result, targets)
            except PredictionsUnavailable as exc:  # the memory fit stands without AIC
                result.predictions = {**status().to_dict(), "state": "failed", "code": exc.code, "message": exc.message}
    if request.shapes:
        from llm_d_lens.planning.service import search_shapes

        # AIC's answers arrive with its job (GET /planning/jobs/{id}); these shapes are the roofline's
        search_shapes(result, shape_targets, prices)
    return result.to_dict()


#: prediction jobs by id, oldest dropped first: a poll after that many newer jobs finds none
JOBS: dict[str, Any] = {}
MAX_JOBS = 64


def _start_job(result: Any, targets: Any) -> dict[str, Any]:
    import uuid

    from llm_d_lens.planning.service import start_predictions

    run = start_predictions(result, targets)  # submits to the worker; the search runs there
    job_id = uuid.uuid4().hex
    JOBS[job_id] = run
    while len(JOBS) > MAX_JOBS:
        JOBS.pop(next(iter(JOBS)))
    return {**run.to_dict(wait=False), "job": job_id, "poll": f"/api/v1/planning/jobs/{job_id}"}


@router.get("/planning/jobs/{job_id}")
def job(job_id: str) -> dict[str, Any]:
    """An AIC prediction job: "running" until every pool's search is done, then each pool's answer."""
    from llm_d_lens.planning.errors import JobNotFound

    run = JOBS.get(job_id)
    if run is None:
        raise JobNotFound(f"no prediction job {job_id!r} (jobs are kept for the last {MAX_JOBS} plans)",
                          details={"job": job_id})
    return {**run.to_dict(wait=False), "job": job_id}
