"""Memory fit: which tensor/pipeline parallelism of a model fits a pool's devices, and how many times.

Per device, for a pod of TP x PP devices on one node, vLLM's own accounting (see
:mod:`engine_memory`)::

    weights    = the checkpoint's tensor groups at their stored width, sharded over TP (norms and the
                 router replicated, K/V projections replicated past the KV heads), the worst PP stage
    activation = torch peak of vLLM's profiling run (max-num-batched-tokens, max-num-seqs, the shapes)
    non-torch  = runtime context, collective-communication buffers (the hardware profile's measured figures)
    requested  = device memory the engine sees x memory_utilization
    kv budget  = requested - weights - activation - non-torch - extra allowance
    kv/token   = ceil(layers / PP) x 2 x max(1, kv_heads / TP) x head_dim x bytes(kv_dtype)
                 (MLA: ceil(layers / PP) x (kv_lora_rank + qk_rope_head_dim) x bytes, on every TP rank)
    fits       = kv budget >= context x concurrency x kv/token
    max concurrency = floor(kv budget / (context x kv/token))

Every number of a row is returned with the others it came from, and :data:`FORMULAS` is shown
with every plan, so a reader can redo the arithmetic.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from llm_d_lens.cluster.model import GIB
from llm_d_lens.planning import dtypes, engine_memory
from llm_d_lens.planning.architecture import ModelSpec
from llm_d_lens.planning.engine_memory import DeviceFacts, Term
from llm_d_lens.planning.errors import RequestInvalid
from llm_d_lens.planning.pools import Pool

#: bounds of a request: far beyond any deployment, close enough to refuse nonsense
MAX_CONTEXT = 10_000_000
MAX_CONCURRENCY = 1_000_000
MAX_OVERHEAD_GIB = 1024.0
DEFAULT_CONTEXT = 8192
#: the share of device memory a serving engine takes by default (vLLM's --gpu-memory-utilization)
DEFAULT_MEMORY_UTILIZATION = 0.9
#: per-device allowance beyond the engine's own terms (activation peak, non-torch memory): none by default
DEFAULT_OVERHEAD_GIB = 0.0
MAX_BATCHED_TOKENS = 1 << 22
MAX_SEQS = 1 << 20

FORMULAS: dict[str, str] = {
    "weights": "sum over tensor groups of parameters x stored bits / 8, sharded: embeddings, LM head, attention and "
               "MLP/experts / TP (K/V projections / min(TP, kv_heads)); norms and router replicated; worst PP stage",
    "activation_peak": "max(max_num_seqs x vocab x 38.2 B, max_num_batched_tokens x 3 x MLP width / TP x 2 B) "
                       "+ max_num_batched_tokens x hidden x 2.7 B (vLLM's profiling run)",
    "non_torch": "hardware profile planning.engine_memory (TP=1 or TP/PP > 1 figure)",
    "requested": "device memory the engine sees x memory_utilization",
    "kv_budget": "requested - weights - activation_peak - non_torch - extra allowance",
    "kv_per_token": "ceil(layers/PP) x 2 x max(1, kv_heads/TP) x head_dim x bytes(kv_dtype); "
                  "MLA: ceil(layers/PP) x (kv_lora_rank + qk_rope_head_dim) x bytes(kv_dtype)",
    "kv_cache": "context x concurrency x kvPerToken",
    "headroom": "kvBudget - kvCache",
    "max_concurrency": "floor(kvBudget / (context x kvPerToken))",
    "replicas_free": "sum over schedulable nodes of floor(free whole devices / (TP x PP))",
    "replicas_total": "sum over schedulable nodes of floor(whole devices / (TP x PP))",
}
ASSUMPTIONS = (
    "the engine is vLLM: its KV cache is what the utilisation leaves after weights, the profiling run's peak and "
    "non-torch memory; captured graphs come out of the remaining share",
    "quantized checkpoints keep embeddings, LM head, norms, router and ignored modules 16-bit; scales and zeros are counted",
    "every layer keeps a full-length KV cache (sliding-window layers would need less)",
    "a pod's devices sit on one node; a partition (MIG slice, compute partition) is a pool of its own, one partition a pod",
)


class FitRequest(msgspec.Struct, frozen=True):
    context: int = DEFAULT_CONTEXT
    concurrency: int = 1
    dtype: str | None = None
    kv_dtype: str | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    overhead_gib: float = DEFAULT_OVERHEAD_GIB
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None

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
        if self.max_num_batched_tokens is not None:
            _whole("max_num_batched_tokens", self.max_num_batched_tokens, 1, MAX_BATCHED_TOKENS)
        if self.max_num_seqs is not None:
            _whole("max_num_seqs", self.max_num_seqs, 1, MAX_SEQS)
        dtype = dtypes.canonical(self.dtype, "dtype") if self.dtype else engine_dtype(model.dtype)
        kv = dtypes.canonical(self.kv_dtype, "kv_dtype") if self.kv_dtype else default_kv_dtype(model.base_dtype)
        return FitRequest(self.context, self.concurrency, dtype, kv, float(self.memory_utilization), float(self.overhead_gib),
                          self.max_num_batched_tokens, self.max_num_seqs)

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "concurrency": self.concurrency, "dtype": self.dtype, "kv_dtype": self.kv_dtype,
                "memory_utilization": self.memory_utilization, "overhead_gib": self.overhead_gib,
                "max_num_batched_tokens": self.max_num_batched_tokens, "max_num_seqs": self.max_num_seqs}


def engine_dtype(checkpoint: str) -> str:
    """The width the engine holds a checkpoint's weights at: vLLM's dtype "auto" loads a float32 checkpoint at 16 bits."""
    return "bf16" if checkpoint == "fp32" else checkpoint


def default_kv_dtype(base: str) -> str:
    """The engine's "auto" KV cache: the checkpoint's 16-bit dtype (16-bit for float32, 8- and 4-bit checkpoints too)."""
    return base if base in ("fp16", "bf16") else "bf16"


def _whole(field: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestInvalid(field, value, "must be a whole number")
    if not low <= value <= high:
        raise RequestInvalid(field, value, f"must be from {low} to {high:,}")


class Option(msgspec.Struct, frozen=True):
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
    activation_bytes: float = 0
    non_torch_bytes: float = 0
    engine_visible_bytes: float = 0
    kv_budget_bytes: float = 0
    terms: tuple[Term, ...] = ()

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
            "kv_cache_gib": gib(self.kv_cache_bytes),
            "overhead_gib": gib(self.overhead_bytes + self.activation_bytes + self.non_torch_bytes),
            "usable_gib": gib(self.usable_bytes), "headroom_gib": gib(self.headroom_bytes),
            "max_concurrency": self.max_concurrency, "replicas_free": self.replicas_free,
            "replicas_total": self.replicas_total, "activation_gib": gib(self.activation_bytes),
            "non_torch_gib": gib(self.non_torch_bytes), "engine_visible_gib": gib(self.engine_visible_bytes),
            "kv_budget_gib": gib(self.kv_budget_bytes), "terms": [t.to_dict() for t in self.terms],
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


def weights_per_device(model: ModelSpec, dtype: str | None, tp: int, pp: int) -> float:
    """Bytes of weights the busiest device of a TP x PP pod holds.

    Embeddings, LM head, attention and MLP/expert weights are split over the TP ranks (vLLM's
    vocab- and tensor-parallel layers); K/V projections are replicated once TP passes the KV
    heads; norms and the MoE router sit whole on every rank. A PP stage holds its share of the
    layers, the first the embeddings and the last the LM head (a tied head is a copy there).
    """
    groups = model.weight_bytes_by_group(dtype)
    if model.checkpoint_bytes and (dtype is None or dtype == model.dtype):
        computed = sum(groups.values())
        scale = model.checkpoint_bytes / computed if computed else 1.0
        groups = {g: b * scale for g, b in groups.items()}
    share = math.ceil(model.layers / pp) / model.layers
    kv_share = model.kv_projection_share()
    attention = groups["attention"] * ((1 - kv_share) / tp + kv_share / min(tp, model.kv_heads))
    layers = share * (attention + (groups["mlp"] + groups["experts"]) / tp + groups["router"] + groups["norms"])
    head = groups["lm_head"] or groups["embeddings"]
    ends = (groups["embeddings"] + groups["lm_head"]) / tp if pp == 1 else max(groups["embeddings"], head) / tp
    return layers + ends


def fit_option(model: ModelSpec, request: FitRequest, pool: Pool, tp: int, pp: int,
               facts: DeviceFacts | None = None) -> Option:
    reason = infeasible(model, tp, pp)
    if reason:
        return Option(tp, pp, feasible=False, fits=False, reason=reason)
    assert request.dtype and request.kv_dtype  # checked() resolved them
    facts = facts or DeviceFacts()
    memory = pool.device_memory_bytes
    if memory is not None and facts.visible_bytes is not None:
        memory = min(memory, facts.visible_bytes)
    weights = weights_per_device(model, request.dtype, tp, pp)
    kv_token = kv_per_token_per_device(model, tp, pp, dtypes.bytes_per_value(request.kv_dtype))
    kv_cache = kv_token * request.context * request.concurrency
    overhead = request.overhead_gib * GIB
    settings = engine_memory.default_settings(memory, request.max_num_batched_tokens, request.max_num_seqs)
    activation = engine_memory.activation_peak(model, settings, tp)
    non_torch = engine_memory.non_torch(facts, tp, pp)
    graphs = engine_memory.captured_graphs(facts)
    weight_term = Term("weights", weights, FORMULAS["weights"], model.format_for(request.dtype).source
                       + ("; total from the checkpoint's index" if model.checkpoint_bytes else ""))
    terms = [weight_term, activation, non_torch, graphs]
    if overhead:
        terms.append(Term("extra_allowance", overhead, "asked: overhead_gib", "request"))
    replicas = {"replicas_free": pool.replicas(tp * pp, free_only=True), "replicas_total": pool.replicas(tp * pp, free_only=False)}
    engine = activation.bytes + non_torch.bytes
    figures = {"weights_bytes": weights, "kv_per_token_bytes": kv_token, "kv_cache_bytes": kv_cache, "overhead_bytes": overhead,
               "activation_bytes": activation.bytes, "non_torch_bytes": non_torch.bytes, "engine_visible_bytes": memory or 0}
    if memory is None:
        return Option(tp, pp, feasible=True, fits=False, reason="device memory unknown", terms=tuple(terms), **figures, **replicas)
    usable = memory * request.memory_utilization
    terms.insert(0, Term("requested", usable, f"{memory / GIB:.2f} GiB x {request.memory_utilization:g}",
                         facts.visible_source or pool.memory_source))
    budget = usable - weights - engine - overhead
    headroom = budget - kv_cache
    max_concurrency = max(0, math.floor(budget / (kv_token * request.context))) if budget > 0 else 0
    if budget <= 0:
        reason = (f"weights, activation peak and runtime ({(weights + engine + overhead) / GIB:.1f} GiB) "
                  f"exceed the engine's {usable / GIB:.1f} GiB")
    elif headroom < 0:
        reason = (f"KV cache for {request.concurrency} x {request.context} tokens needs {kv_cache / GIB:.1f} GiB, "
                  f"{budget / GIB:.1f} GiB left after weights and the engine; at most {max_concurrency} sequences")
    else:
        reason = "fits"
    return Option(tp, pp, feasible=True, fits=headroom >= 0 and budget > 0, reason=reason, usable_bytes=usable,
                  headroom_bytes=headroom, max_concurrency=max_concurrency, kv_budget_bytes=budget, terms=tuple(terms),
                  **figures, **replicas)


def fit_pool(model: ModelSpec, request: FitRequest, pool: Pool, facts: DeviceFacts | None = None) -> list[Option]:
    """Every parallelism of the pool, fitting ones first (fewest devices, then the most concurrency)."""
    options = [fit_option(model, request, pool, tp, pp, facts) for tp, pp in parallelisms(pool.devices_per_node)]
    return sorted(options, key=lambda o: (not o.fits, not o.feasible, o.width, o.pipeline_parallel, -o.max_concurrency))
