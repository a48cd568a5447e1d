"""A roofline estimate of prefill and decode time on one product, term by term, where AIC has no data.

Every device is bounded twice: by its peak dense FLOP/s and by its memory bandwidth; a step takes
the longer of the two, plus the time its collectives spend on the interconnect. The figures come
from the hardware profile's ``planning.performance`` (published datasheets) and are divided by
the engine's measured efficiency (``planning.calibration``), 1.0 where none is measured, so an
uncalibrated estimate is the hardware's bound: a real engine is slower.

The terms, for a pod of TP devices (``P`` active parameters, ``h`` hidden size, ``L`` layers)::

    prefill compute  = 2 x P x tokens / (TP x peak FLOP/s[compute dtype] x compute efficiency)
    weights read     = weights per device / (memory bandwidth x bandwidth efficiency)
    decode memory    = (weights per device + batch x context x KV bytes a token per device x KV reads)
                       / (bandwidth x efficiency); KV reads is 1 (a GQA group's query heads share one read)
                       unless a measured engine is documented to read a KV head once per query head
    decode compute   = 2 x P x batch / (TP x peak x efficiency)
    TP all-reduce    = 2 x L x 2 (TP-1)/TP x tokens x h x 2 B / intra-node bandwidth (one direction)
                       + 2 x L x (base latency + 2 (TP-1) x hop latency)   (the profile's all_reduce_latency)
    EP all-to-all    = MoE layers x 2 x tokens x experts a token x h x 2 B x (N-1)/N / link bandwidth
    KV hand-over     = tokens x KV bytes a token / link bandwidth (P/D: prefill to decode)

A prefill is ``max(compute, memory) + communication``; a decode step is ``memory + compute +
communication``: its small-batch kernels do not hide one bound under the other, which the
published measurements in ``calibration.json`` show (the max rule misses them further at every
batch size; docs/planning.md has the table). Attention's own FLOPs (quadratic in the
prompt) are not counted, nor a collective's latency where the profile publishes none: the estimate
says so.
"""

from __future__ import annotations

from typing import Any

import msgspec

from llm_d_lens.planning.architecture import ModelSpec

#: bytes of one activation value on the wire and in the residual stream (bf16/fp16)
ACTIVATION_BYTES = 2
GB = 1e9
TERA = 1e12
UNCALIBRATED = ("no measured efficiency for this engine on this hardware (planning.calibration): 1.0, "
                "the roofline's bound; a real engine is slower")

FORMULAS: dict[str, str] = {
    "prefill_compute": "2 x active parameters x prompt tokens / (TP x peak FLOP/s[compute dtype] x compute efficiency)",
    "weights_read": "weights per device / (memory bandwidth x bandwidth efficiency)",
    "decode_memory": "(weights per device + batch x context x KV bytes a token per device) / (memory bandwidth x bandwidth efficiency)",
    "decode_compute": "2 x active parameters x batch / (TP x peak FLOP/s x compute efficiency)",
    "tp_all_reduce": "2 all-reduces a layer x layers x (2 (TP-1)/TP x tokens x hidden x 2 B / intra-node bandwidth one way "
                     "+ base latency + 2 (TP-1) x hop latency)",
    "ep_all_to_all": "MoE layers x 2 (dispatch, combine) x tokens x experts a token x hidden x 2 B x (N-1)/N / link bandwidth one way",
    "kv_transfer": "prompt tokens x KV bytes a token (all layers) / link bandwidth one way",
    "prefill_step": "max(compute, memory) + communication",
    "decode_step": "memory + compute + communication (a decode step's small-batch kernels do not overlap the two; "
                   "see docs/planning.md, calibration)",
}
ASSUMPTIONS = (
    "attention's own FLOPs (quadratic in the prompt) are not counted; a collective's latency only where the profile "
    "publishes one (planning.performance.<product>.all_reduce_latency)",
    "decode reads every weight on the device once a step, and each sequence's KV cache at its mean length (ISL + OSL/2)",
    "4-bit weights run 16-bit math (weight-only quantization); 8-bit weights use the device's 8-bit peak where published",
)


class Speed(msgspec.Struct, frozen=True):
    """One product's published peaks as the roofline divides by them (FLOP/s, bytes a second)."""

    product: str
    peak_flops: dict[str, float]
    memory_bandwidth: float
    intra_node: float | None
    scale_out: float | None
    source: str
    compute_efficiency: float = 1.0
    bandwidth_efficiency: float = 1.0
    calibration_source: str = UNCALIBRATED
    #: one intra-node all-reduce's fixed and per-ring-hop latency, seconds; None where none is published
    all_reduce_base: float | None = None
    all_reduce_hop: float | None = None
    latency_source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"product": self.product, "peak_tflops": {k: round(v / TERA, 1) for k, v in self.peak_flops.items()},
                "memory_bandwidth_gb_s": round(self.memory_bandwidth / GB, 1),
                "intra_node_gb_s_one_way": round(self.intra_node / GB, 1) if self.intra_node else None,
                "scale_out_gb_s_one_way": round(self.scale_out / GB, 3) if self.scale_out else None,
                "source": self.source, "compute_efficiency": self.compute_efficiency,
                "bandwidth_efficiency": self.bandwidth_efficiency, "calibration_source": self.calibration_source,
                "all_reduce_latency_us": None if self.all_reduce_base is None else {
                    "base": round(self.all_reduce_base * 1e6, 3), "hop": round((self.all_reduce_hop or 0.0) * 1e6, 3),
                    "source": self.latency_source}}


def _one_way(gb_s: float | None, direction: str) -> float | None:
    if gb_s is None:
        return None
    return gb_s * GB / (2 if direction == "bidirectional" else 1)


def _key(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").replace("-", " ").split())


def speed_from_profile(profile: Any, product: str, engine: str = "vllm") -> Speed | None:
    """The profile's published figures for a pool's product (the first of joined names that has any), or None."""
    planning = getattr(profile, "planning", None)
    if planning is None:
        return None
    table = {_key(name): (name, facts) for name, facts in planning.performance.items()}
    for part in product.split(", "):
        found = table.get(_key(part))
        if found is None:
            continue
        name, facts = found
        calibration = planning.calibration.get(engine)
        extra: dict[str, Any] = {}
        if calibration is not None:
            extra = {"compute_efficiency": calibration.compute_efficiency,
                     "bandwidth_efficiency": calibration.bandwidth_efficiency,
                     "calibration_source": f"planning.calibration.{engine}: {calibration.source}"}
        latency = facts.all_reduce_latency
        if latency is not None:
            extra.update(all_reduce_base=latency.base_us * 1e-6, all_reduce_hop=latency.hop_us * 1e-6,
                         latency_source=latency.source)
        return Speed(name, {dtype: tflops * TERA for dtype, tflops in facts.peak_tflops.items()},
                     facts.memory_bandwidth_gb_s * GB, _one_way(facts.intra_node_gb_s, facts.intra_node_direction),
                     _one_way(facts.scale_out_gb_s, facts.scale_out_direction), facts.source, **extra)
    return None


def compute_dtype(weights_dtype: str, speed: Speed) -> tuple[str | None, str]:
    """The dtype the matrix units run at for these weights, and why; None when the device publishes no peak for it."""
    wanted = {"fp8": "fp8", "int8": "int8", "fp4": "fp4", "fp16": "fp16"}.get(weights_dtype, "bf16")
    if wanted in speed.peak_flops:
        return wanted, f"{weights_dtype} weights run {wanted} math"
    for fallback in ("bf16", "fp16"):
        if fallback in speed.peak_flops:
            return fallback, f"no published {wanted} peak for {speed.product}: {fallback} math assumed"
    wanted_names = wanted if wanted in ("bf16", "fp16") else f"{wanted} or bf16"
    return None, f"no published {wanted_names} peak FLOP/s for {speed.product}"


class Term(msgspec.Struct, frozen=True):
    """One part of a time, in seconds, with the arithmetic that gave it."""

    name: str
    seconds: float | None
    formula: str
    counted: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.name, "ms": None if self.seconds is None else round(self.seconds * 1e3, 4),
                "formula": self.formula, "counted": self.counted}


class Estimate(msgspec.Struct, frozen=True):
    """A time made of terms: ``max`` of the bounds plus the communication, or None when a bound is unknown."""

    seconds: float | None
    terms: tuple[Term, ...] = msgspec.field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"ms": None if self.seconds is None else round(self.seconds * 1e3, 3), "terms": [t.to_dict() for t in self.terms]}


def combine(bounds: list[float], comm: float, overlapped: bool) -> float:
    """A step's seconds from its bounds: the slowest where they overlap (prefill), their sum where not (decode)."""
    return (max(bounds) if overlapped else sum(bounds)) + comm


def _step(bounds: list[Term], comms: list[Term], overlapped: bool = True) -> Estimate:
    if any(t.seconds is None for t in bounds):
        return Estimate(None, tuple(bounds + comms))
    comm = sum(t.seconds or 0.0 for t in comms if t.counted)
    return Estimate(combine([t.seconds or 0.0 for t in bounds], comm, overlapped), tuple(bounds + comms))


def compute_term(name: str, model: ModelSpec, tokens: int, devices: int, speed: Speed, weights_dtype: str) -> Term:
    """2 x active parameters x tokens FLOPs over the pod's peak at the compute dtype."""
    dtype, why = compute_dtype(weights_dtype, speed)
    flops = 2 * model.active_parameters * tokens
    if dtype is None:
        return Term(name, None, f"{flops:.3e} FLOPs; {why}")
    rate = devices * speed.peak_flops[dtype] * speed.compute_efficiency
    return Term(name, flops / rate, f"2 x {model.active_parameters:,} params x {tokens:,} tokens = {flops:.3e} FLOPs / "
                                   f"({devices} x {speed.peak_flops[dtype] / TERA:g} TFLOP/s {dtype} x {speed.compute_efficiency:g}); {why}")


def memory_term(name: str, bytes_read: float, speed: Speed, what: str) -> Term:
    rate = speed.memory_bandwidth * speed.bandwidth_efficiency
    return Term(name, bytes_read / rate, f"{what} = {bytes_read / GB:.3f} GB / ({speed.memory_bandwidth / GB:g} GB/s x "
                                         f"{speed.bandwidth_efficiency:g})")


def all_reduce_latency(tp: int, speed: Speed) -> float | None:
    """One ring all-reduce's fixed time over ``tp`` devices: base + 2 (TP-1) hops; None where none is published."""
    if speed.all_reduce_base is None:
        return None
    return speed.all_reduce_base + 2 * (tp - 1) * (speed.all_reduce_hop or 0.0)


def all_reduce_term(model: ModelSpec, tokens: int, tp: int, speed: Speed) -> Term:
    """The tensor-parallel all-reduces of one forward pass over ``tokens`` (two a layer, ring algorithm).

    Each costs its bytes over the link plus its fixed latency (the profile's ``all_reduce_latency``):
    a decode step's all-reduces carry a batch of hidden vectors, so the latency is most of their time.
    """
    if tp <= 1:
        return Term("tp_all_reduce", 0.0, "TP=1: no all-reduce")
    count = 2 * model.layers
    moved = count * 2 * (tp - 1) / tp * tokens * model.hidden_size * ACTIVATION_BYTES
    if speed.intra_node is None:
        return Term("tp_all_reduce", None, f"{moved / GB:.4f} GB a device; not counted: {speed.product} publishes no "
                                           "intra-node bandwidth", counted=False)
    latency = all_reduce_latency(tp, speed)
    bytes_part = (f"2 x {model.layers} layers x 2 x {tp - 1}/{tp} x {tokens:,} tokens x {model.hidden_size} x "
                  f"{ACTIVATION_BYTES} B = {moved / GB:.4f} GB / {speed.intra_node / GB:g} GB/s")
    if latency is None:
        return Term("tp_all_reduce", moved / speed.intra_node,
                    f"{bytes_part}; latency not counted: {speed.product} publishes no all-reduce latency")
    return Term("tp_all_reduce", moved / speed.intra_node + count * latency,
                f"{bytes_part} + {count} all-reduces x ({(speed.all_reduce_base or 0.0) * 1e6:g} us + 2 x {tp - 1} hops x "
                f"{(speed.all_reduce_hop or 0.0) * 1e6:g} us) = {count * latency * 1e3:.3f} ms latency")


def all_to_all_term(model: ModelSpec, tokens: int, ranks: int, link: float | None, link_name: str) -> Term:
    """Expert-parallel dispatch and combine of ``tokens`` over ``ranks`` devices, every MoE layer."""
    moe_layers = model.layers - model.dense_layers
    moved = moe_layers * 2 * tokens * model.experts_per_token * model.hidden_size * ACTIVATION_BYTES * (ranks - 1) / ranks
    if link is None:
        return Term("ep_all_to_all", None, f"{moved / GB:.4f} GB a device; not counted: no published {link_name} bandwidth",
                    counted=False)
    return Term("ep_all_to_all", moved / link,
                f"{moe_layers} MoE layers x 2 x {tokens:,} tokens x {model.experts_per_token} experts x {model.hidden_size} x "
                f"{ACTIVATION_BYTES} B x {ranks - 1}/{ranks} = {moved / GB:.4f} GB / {link / GB:g} GB/s {link_name}")


def kv_transfer_term(tokens: int, kv_bytes_per_token: float, speed: Speed) -> Term:
    """The prompt's KV cache handed from a prefill worker to a decode worker (scale-out link, else intra-node)."""
    link, name = (speed.scale_out, "scale-out") if speed.scale_out else (speed.intra_node, "intra-node")
    moved = tokens * kv_bytes_per_token
    if link is None:
        return Term("kv_transfer", None, f"{moved / GB:.4f} GB; not counted: no published link bandwidth", counted=False)
    return Term("kv_transfer", moved / link, f"{tokens:,} tokens x {kv_bytes_per_token:,.0f} B = {moved / GB:.4f} GB / "
                                             f"{link / GB:g} GB/s {name}")


def prefill(model: ModelSpec, tokens: int, tp: int, speed: Speed, weights_dtype: str, weights_per_device: float,
            comms: list[Term] | None = None) -> Estimate:
    """One prompt of ``tokens`` through a TP pod: compute-bound unless the weights take longer to read."""
    bounds = [compute_term("prefill_compute", model, tokens, tp, speed, weights_dtype),
              memory_term("weights_read", weights_per_device, speed, "weights per device")]
    return _step(bounds, comms if comms is not None else [all_reduce_term(model, tokens, tp, speed)])


def decode_step(model: ModelSpec, batch: int, context: int, tp: int, speed: Speed, weights_dtype: str,
                weights_per_device: float, kv_per_token_per_device: float, comms: list[Term] | None = None,
                kv_reads: int = 1) -> Estimate:
    """One decode step of ``batch`` sequences at mean length ``context``: bandwidth-bound unless the batch is large.

    ``kv_reads`` is how many times the attention kernel reads each KV head a step: 1 where the query heads of a
    group share one read (GQA-aware kernels), the group's size where each query head reads its KV head itself.
    """
    kv = batch * context * kv_per_token_per_device * kv_reads
    reads = f" x {kv_reads} reads (one a query head)" if kv_reads != 1 else ""
    bounds = [memory_term("decode_memory", weights_per_device + kv, speed,
                          f"weights {weights_per_device / GB:.3f} GB + {batch} seqs x {context:,} tokens x "
                          f"{kv_per_token_per_device:,.0f} B KV{reads}"),
              compute_term("decode_compute", model, batch, tp, speed, weights_dtype)]
    return _step(bounds, comms if comms is not None else [all_reduce_term(model, batch, tp, speed)], overlapped=False)

