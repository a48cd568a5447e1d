"""Memory fit: which tensor/pipeline parallelism of a model fits a pool's devices, and how many times.

Per device, for a pod of TP x PP devices on one node::

    weights   = parameters x bytes(dtype) / (TP x PP)
    kv/token  = ceil(layers / PP) x 2 x max(1, kv_heads / TP) x head_dim x bytes(kv_dtype)
                (MLA: ceil(layers / PP) x (kv_lora_rank + qk_rope_head_dim) x bytes, on every TP rank)
    usable    = device memory x memory_utilization
    kv budget = usable - weights - runtime overhead
    fits      = kv budget >= context x concurrency x kv/token
    max concurrency = floor(kv budget / (context x kv/token))

Every number of a row is returned with the others it came from, and :data:`FORMULAS` is shown
with every plan, so a reader can redo the arithmetic. Sharding is taken as even (embeddings and
the LM head split across tensor-parallel ranks, layers across stages, the worst stage counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llm_d_lens.cluster.model import GIB
from llm_d_lens.planning import dtypes
from llm_d_lens.planning.architecture import ModelSpec
from llm_d_lens.planning.errors import RequestInvalid
from llm_d_lens.planning.pools import Pool

#: bounds of a request: far beyond any deployment, close enough to refuse nonsense
MAX_CONTEXT = 10_000_000
MAX_CONCURRENCY = 1_000_000
MAX_OVERHEAD_GIB = 1024.0
DEFAULT_CONTEXT = 8192
#: the share of device memory a serving engine takes by default (vLLM's --gpu-memory-utilization)
DEFAULT_MEMORY_UTILIZATION = 0.9
#: per-device allowance for activations, captured-graph buffers and the runtime
DEFAULT_OVERHEAD_GIB = 2.0

FORMULAS: dict[str, str] = {
    "weights": "parameters x bytes(dtype) / (TP x PP)",
    "kv_per_token": "ceil(layers/PP) x 2 x max(1, kv_heads/TP) x head_dim x bytes(kv_dtype); "
                  "MLA: ceil(layers/PP) x (kv_lora_rank + qk_rope_head_dim) x bytes(kv_dtype)",
    "usable": "device memory x memory_utilization",
    "kv_budget": "usable - weights - overhead",
    "kv_cache": "context x concurrency x kvPerToken",
    "headroom": "kvBudget - kvCache",
    "max_concurrency": "floor(kvBudget / (context x kvPerToken))",
    "replicas_free": "sum over schedulable nodes of floor(free whole devices / (TP x PP))",
    "replicas_total": "sum over schedulable nodes of floor(whole devices / (TP x PP))",
}
ASSUMPTIONS = (
    "weights are sharded evenly over TP x PP devices; the worst pipeline stage is counted for the KV cache",
    "quantized formats are counted at their bits per value; block scales (about 1-3 %) are not added",
    "every layer keeps a full-length KV cache (sliding-window layers would need less)",
    "a pod's devices sit on one node; partitions (MIG slices, compute partitions) are not planned",
)


@dataclass(frozen=True)
class FitRequest:
    context: int = DEFAULT_CONTEXT
    concurrency: int = 1
    dtype: str | None = None
    kv_dtype: str | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    overhead_gib: float = DEFAULT_OVERHEAD_GIB

    def checked(self, model: ModelSpec) -> FitRequest:
        """The request with dtypes resolved, or a coded error for what no deployment could serve."""
        _whole("context", self.context, 1, MAX_CONTEXT)
        _whole("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        if model.max_context is not None and self.context > model.max_context:
            raise RequestInvalid("context", self.context,
                                 f"is longer than {model.name} serves (max_position_embeddings {model.max_context})")
        if isinstance(self.memory_utilization, bool) or not isinstance(self.memory_utilization, (int, float)) \
                or not 0.05 <= self.memory_utilization <= 1.0:
            raise RequestInvalid("memory_utilization", self.memory_utilization, "must be a number from 0.05 to 1")
        if isinstance(self.overhead_gib, bool) or not isinstance(self.overhead_gib, (int, float)) \
                or not 0 <= self.overhead_gib <= MAX_OVERHEAD_GIB:
            raise RequestInvalid("overhead_gib", self.overhead_gib, f"must be a number from 0 to {MAX_OVERHEAD_GIB:g}")
        dtype = dtypes.canonical(self.dtype, "dtype") if self.dtype else model.dtype
        kv = dtypes.canonical(self.kv_dtype, "kv_dtype") if self.kv_dtype else default_kv_dtype(model.dtype)
        return FitRequest(self.context, self.concurrency, dtype, kv, float(self.memory_utilization), float(self.overhead_gib))

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "concurrency": self.concurrency, "dtype": self.dtype, "kv_dtype": self.kv_dtype,
                "memory_utilization": self.memory_utilization, "overhead_gib": self.overhead_gib}


def default_kv_dtype(weights: str) -> str:
    """The engine's "auto" KV cache: the activation dtype, which stays 16-bit for 8- and 4-bit weights."""
    return weights if weights in ("fp32", "fp16", "bf16") else "bf16"


def _whole(field: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestInvalid(field, value, "must be a whole number")
    if not low <= value <= high:
        raise RequestInvalid(field, value, f"must be from {low} to {high:,}")


@dataclass(frozen=True)
class Option:
    """One parallelism of one pool, with every figure that decided it."""

    tensor_parallel: int
    pipeline_parallel: int
    feasible: bool
    fits: bool
    reason: str
    weights_bytes: float = 0
    kv_per_token_bytes: float = 0
    kv_cache_bytes: float = 0
    usable_bytes: float = 0
    overhead_bytes: float = 0
    headroom_bytes: float = 0
    max_concurrency: int = 0
    replicas_free: int = 0
    replicas_total: int = 0

    @property
    def width(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    def to_dict(self) -> dict[str, Any]:
        def gib(value: float) -> float:
            return round(value / GIB, 2)

        return {
            "tensor_parallel": self.tensor_parallel, "pipeline_parallel": self.pipeline_parallel, "devices": self.width,
            "feasible": self.feasible, "fits": self.fits, "reason": self.reason,
            "weights_gib": gib(self.weights_bytes), "kv_per_token_bytes": round(self.kv_per_token_bytes, 1),
            "kv_cache_gib": gib(self.kv_cache_bytes), "overhead_gib": gib(self.overhead_bytes),
            "usable_gib": gib(self.usable_bytes), "headroom_gib": gib(self.headroom_bytes),
            "max_concurrency": self.max_concurrency, "replicas_free": self.replicas_free,
            "replicas_total": self.replicas_total,
        }


def parallelisms(devices_per_node: int) -> list[tuple[int, int]]:
    """(TP, PP) pairs of powers of two (and the node's own width) whose product fits on one node."""
    widths = sorted({1 << i for i in range(0, 11) if 1 << i <= devices_per_node} | ({devices_per_node} if devices_per_node else set()))
    return [(tp, pp) for tp in widths for pp in widths if tp * pp <= devices_per_node]


def infeasible(model: ModelSpec, tp: int, pp: int) -> str | None:
    """Why the engine cannot shard this model so, or None."""
    if model.attention_heads % tp:
        return f"{model.attention_heads} attention heads do not split over TP={tp}"
    if not model.mla and model.kv_heads % tp and tp % model.kv_heads:
        return f"{model.kv_heads} KV heads neither split over nor replicate evenly across TP={tp}"
    if pp > model.layers:
        return f"PP={pp} is more stages than the {model.layers} layers"
    return None


def kv_per_token_per_device(model: ModelSpec, tp: int, pp: int, kv_bytes: float) -> float:
    layers = math.ceil(model.layers / pp)
    if model.mla:
        return layers * (model.kv_lora_rank + model.qk_rope_head_dim) * kv_bytes
    return layers * 2 * max(1, model.kv_heads // tp) * model.head_dim * kv_bytes


def fit_option(model: ModelSpec, request: FitRequest, pool: Pool, tp: int, pp: int) -> Option:
    reason = infeasible(model, tp, pp)
    if reason:
        return Option(tp, pp, feasible=False, fits=False, reason=reason)
    assert request.dtype and request.kv_dtype  # checked() resolved them
    memory = pool.device_memory_bytes
    weights = model.parameters * dtypes.bytes_per_value(request.dtype) / (tp * pp)
    kv_token = kv_per_token_per_device(model, tp, pp, dtypes.bytes_per_value(request.kv_dtype))
    kv_cache = kv_token * request.context * request.concurrency
    overhead = request.overhead_gib * GIB
    replicas = {"replicas_free": pool.replicas(tp * pp, free_only=True), "replicas_total": pool.replicas(tp * pp, free_only=False)}
    figures = {"weights_bytes": weights, "kv_per_token_bytes": kv_token, "kv_cache_bytes": kv_cache, "overhead_bytes": overhead}
    if memory is None:
        return Option(tp, pp, feasible=True, fits=False, reason="device memory unknown", **figures, **replicas)
    usable = memory * request.memory_utilization
    budget = usable - weights - overhead
    headroom = budget - kv_cache
    max_concurrency = max(0, math.floor(budget / (kv_token * request.context))) if budget > 0 else 0
    if budget <= 0:
        reason = f"weights and overhead ({(weights + overhead) / GIB:.1f} GiB) exceed the usable {usable / GIB:.1f} GiB"
    elif headroom < 0:
        reason = (f"KV cache for {request.concurrency} x {request.context} tokens needs {kv_cache / GIB:.1f} GiB, "
                  f"{budget / GIB:.1f} GiB left after weights; at most {max_concurrency} sequences")
    else:
        reason = "fits"
    return Option(tp, pp, feasible=True, fits=headroom >= 0 and budget > 0, reason=reason, usable_bytes=usable,
                  headroom_bytes=headroom, max_concurrency=max_concurrency, **figures, **replicas)


def fit_pool(model: ModelSpec, request: FitRequest, pool: Pool) -> list[Option]:
    """Every parallelism of the pool, fitting ones first (fewest devices, then the most concurrency)."""
    options = [fit_option(model, request, pool, tp, pp) for tp, pp in parallelisms(pool.devices_per_node)]
    return sorted(options, key=lambda o: (not o.fits, not o.feasible, o.width, o.pipeline_parallel, -o.max_concurrency))
