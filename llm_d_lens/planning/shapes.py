"""Deployment shapes searched per pool, each estimated, checked against TTFT/TPOT targets, priced and ranked.

Three shapes, each the one an llm-d guide deploys:

- **aggregated** (``optimized-baseline``): one pod of TP devices prefills and decodes. Its TPOT
  carries the prefills of the batch it interleaves: ``TPOT = step + batch x prefill / OSL``.
- **disaggregated** (``pd-disaggregation``): P prefill and D decode pods of TP devices each, at the
  ratios in :data:`RATIOS`; ``TTFT = prefill + KV hand-over``, ``TPOT = step``, and the pair
  serves ``min(P / prefill, D x batch / (OSL x step))`` requests a second.
- **wide expert-parallel** (``wide-ep-lws``, MoE models only): N devices, attention data-parallel
  (one sequence batch a device), the experts split N ways, an all-to-all each MoE layer.

The batch is the plan's ``concurrency`` (sequences one replica, or one decode pod, holds), and
only parallelisms the memory fit found to fit are searched. Where AIC predicted a pool its best
configurations are added as shapes of their own, labelled ``aic``; every other figure is the
roofline's (:mod:`roofline`), labelled so. Ranking: shapes meeting both targets first, then the
cheapest per million output tokens, then the most output tokens a second per device.
"""

from __future__ import annotations

from typing import Any

import msgspec

from llm_d_lens.planning import cost, dtypes, roofline
from llm_d_lens.planning.architecture import ModelSpec
from llm_d_lens.planning.fit import FitRequest, Option, kv_per_token_per_device, weights_per_device
from llm_d_lens.planning.handoff import render_command
from llm_d_lens.planning.pools import Pool
from llm_d_lens.planning.predictions import Targets, copies
from llm_d_lens.planning.roofline import Estimate, Speed

GUIDES = {"aggregated": "optimized-baseline", "disaggregated": "pd-disaggregation", "wide-ep": "wide-ep-lws"}
#: prefill:decode pod ratios searched for P/D
RATIOS: tuple[tuple[int, int], ...] = ((2, 1), (1, 1), (1, 2), (1, 3), (1, 4))
#: devices a wide-EP deployment spreads its experts over
EP_WIDTHS = (8, 16, 32, 64)

FORMULAS: dict[str, str] = {
    "aggregated_ttft": "prefill(ISL)",
    "aggregated_tpot": "decode step(batch) + batch x prefill(ISL) / OSL (the prefills a replica interleaves)",
    "aggregated_requests_per_s": "batch / (batch x prefill + OSL x step) a replica",
    "disaggregated_ttft": "prefill(ISL) + KV hand-over",
    "disaggregated_tpot": "decode step(batch)",
    "disaggregated_requests_per_s": "min(P / prefill, D x batch / (OSL x step))",
    "wide_ep": "a device per DP rank: prefill and step with weights = all but experts + experts / N, plus the all-to-all; "
               "requests a second = N x batch / (batch x prefill + OSL x step)",
    "rank": "meets TTFT and TPOT first, then cost per million output tokens with every device of the shape counted "
            "(idle prefill pods too), then output tokens a second per device",
}
ASSUMPTIONS = (
    "no queueing: TTFT is one prompt's prefill (and its KV hand-over), at the concurrency asked",
    "P/D prefill and decode pods use the same tensor parallelism; the KV hand-over takes the scale-out link where published",
    "wide-EP reads every expert resident on a device each step (a large batch touches them all)",
)


class Shape(msgspec.Struct):
    """One deployment of one pool, with its estimate, its verdict against the targets, and its cost."""

    pool: Pool
    kind: str
    estimate: str
    tensor_parallel: int
    devices: int
    batch: int
    ttft_s: float | None
    tpot_s: float | None
    requests_per_s: float | None
    prefill_devices: float
    decode_devices: float
    prefill_workers: int = 0
    decode_workers: int = 0
    expert_parallel: int = 0
    terms: dict[str, Any] = msgspec.field(default_factory=dict)
    misses: list[str] = msgspec.field(default_factory=list)
    price: tuple[float, str] | None = None
    notes: list[str] = msgspec.field(default_factory=list)
    #: what the hand-off serves: the model id, the context length and the weights' dtype
    served: str | None = None
    max_model_len: int | None = None
    weights_dtype: str | None = None

    @property
    def guide(self) -> str:
        return GUIDES[self.kind]

    @property
    def meets(self) -> bool:
        return self.ttft_s is not None and self.tpot_s is not None and not self.misses

    def output_per_s(self, targets: Targets) -> float:
        return (self.requests_per_s or 0.0) * targets.osl

    def input_per_s(self, targets: Targets) -> float:
        return (self.requests_per_s or 0.0) * targets.isl

    def costs(self, targets: Targets) -> dict[str, float | None]:
        if self.price is None:
            return {"cost_per_hour": None, "cost_per_million_input": None, "cost_per_million_output": None,
                    "cost_per_million_output_all_devices": None}
        price = self.price[0]
        input_cost = cost.per_million(self.prefill_devices, price, self.input_per_s(targets)) if self.prefill_devices else None
        return {"cost_per_hour": round(self.devices * price, 4),
                "cost_per_million_input": None if input_cost is None else round(input_cost, 4),
                "cost_per_million_output": _rounded(cost.per_million(self.decode_devices, price, self.output_per_s(targets))),
                "cost_per_million_output_all_devices": _rounded(cost.per_million(self.devices, price, self.output_per_s(targets)))}

    def rank_key(self, targets: Targets) -> tuple[Any, ...]:
        output = self.costs(targets)["cost_per_million_output_all_devices"]
        per_device = self.output_per_s(targets) / self.devices if self.devices else 0.0
        return (not self.meets, output is None, output or 0.0, -per_device)

    def hand_off(self) -> dict[str, Any]:
        hardware = self.pool.profile_id
        command = render_command(self.pool, self.guide, self.served, self.tensor_parallel, 1, self.max_model_len, 1)
        if self.kind == "disaggregated":
            note = (f"{self.prefill_workers} prefill and {self.decode_workers} decode pod(s) of {self.tensor_parallel} device(s): "
                    f"set the guide's prefill and decode replicas to them")
        elif self.kind == "wide-ep":
            note = f"{self.expert_parallel} devices, data-parallel attention and expert parallelism {self.expert_parallel}"
        else:
            note = f"one pod of {self.tensor_parallel} device(s) a replica"
        return {"deploy": command, "guide": self.guide, "note": note + "; the render needs an llm-d source with the guide's "
                                                                     f"overlay for {hardware}"}

    def to_dict(self, targets: Targets) -> dict[str, Any]:
        output = self.output_per_s(targets)
        return {
            "pool": self.pool.name, "profile_id": self.pool.profile_id, "kind": self.kind, "guide": self.guide,
            "estimate": self.estimate, "tensor_parallel": self.tensor_parallel, "prefill_workers": self.prefill_workers,
            "decode_workers": self.decode_workers, "expert_parallel": self.expert_parallel, "devices": self.devices,
            "batch": self.batch, "ttft_ms": _ms(self.ttft_s), "tpot_ms": _ms(self.tpot_s), "meets": self.meets,
            "misses": list(self.misses), "requests_per_s": _rounded(self.requests_per_s),
            "output_tokens_per_s": _rounded(output), "input_tokens_per_s": _rounded(self.input_per_s(targets)),
            "output_tokens_per_s_per_device": _rounded(output / self.devices if self.devices else None),
            "price_usd_per_device_hour": self.price[0] if self.price else None,
            "price_key": self.price[1] if self.price else None, **self.costs(targets),
            "weights_dtype": self.weights_dtype, "hand_off": self.hand_off(), "terms": self.terms, "notes": list(self.notes),
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


def _rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def judge(shape: Shape, targets: Targets) -> Shape:
    """Fill the shape's misses: each target it does not meet, with both figures."""
    if shape.ttft_s is None or shape.tpot_s is None:
        shape.misses.append("no estimate: " + "; ".join(shape.notes or ["a bound is unknown"]))
        return shape
    if shape.ttft_s * 1e3 > targets.ttft_ms:
        shape.misses.append(f"TTFT {shape.ttft_s * 1e3:.1f} ms > {targets.ttft_ms:g} ms")
    if shape.tpot_s * 1e3 > targets.tpot_ms:
        shape.misses.append(f"TPOT {shape.tpot_s * 1e3:.2f} ms > {targets.tpot_ms:g} ms")
    return shape


class Context(msgspec.Struct, frozen=True):
    """What every shape of one pool is estimated with."""

    model: ModelSpec
    request: FitRequest
    targets: Targets
    pool: Pool
    speed: Speed

    @property
    def dtype(self) -> str:
        return self.request.dtype or self.model.dtype

    @property
    def kv_bytes(self) -> float:
        return dtypes.bytes_per_value(self.request.kv_dtype or "bf16")

    @property
    def mean_context(self) -> int:
        return self.targets.isl + self.targets.osl // 2

    def whole_devices(self) -> list[int]:
        return [n.whole_devices for n in self.pool.nodes if n.schedulable]


def aggregated(ctx: Context, option: Option) -> Shape:
    tp, batch, osl = option.tensor_parallel, ctx.request.concurrency, ctx.targets.osl
    pre = roofline.prefill(ctx.model, ctx.targets.isl, tp, ctx.speed, ctx.dtype, option.weights_bytes)
    step = roofline.decode_step(ctx.model, batch, ctx.mean_context, tp, ctx.speed, ctx.dtype, option.weights_bytes,
                                option.kv_per_token_bytes)
    terms = {"prefill": pre.to_dict(), "decode_step": step.to_dict()}
    if pre.seconds is None or step.seconds is None:
        return Shape(ctx.pool, "aggregated", "roofline", tp, tp, batch, None, None, None, 0, tp, terms=terms,
                     notes=[_unknown(pre, step)])
    cycle = batch * pre.seconds + osl * step.seconds
    prefill_share = batch * pre.seconds / cycle
    return Shape(ctx.pool, "aggregated", "roofline", tp, tp, batch, pre.seconds, step.seconds + batch * pre.seconds / osl,
                 batch / cycle, tp * prefill_share, tp * (1 - prefill_share), terms=terms)


def disaggregated(ctx: Context, option: Option, ratio: tuple[int, int]) -> Shape:
    tp, batch, osl = option.tensor_parallel, ctx.request.concurrency, ctx.targets.osl
    p, d = ratio
    pre = roofline.prefill(ctx.model, ctx.targets.isl, tp, ctx.speed, ctx.dtype, option.weights_bytes)
    hand_over = roofline.kv_transfer_term(ctx.targets.isl, ctx.model.kv_values_per_token() * ctx.kv_bytes, ctx.speed)
    step = roofline.decode_step(ctx.model, batch, ctx.mean_context, tp, ctx.speed, ctx.dtype, option.weights_bytes,
                                option.kv_per_token_bytes)
    terms = {"prefill": pre.to_dict(), "kv_transfer": hand_over.to_dict(), "decode_step": step.to_dict()}
    devices = (p + d) * tp
    shape = Shape(ctx.pool, "disaggregated", "roofline", tp, devices, batch, None, None, None, p * tp, d * tp,
                  prefill_workers=p, decode_workers=d, terms=terms)
    if pre.seconds is None or step.seconds is None:
        shape.notes.append(_unknown(pre, step))
        return shape
    shape.ttft_s = pre.seconds + (hand_over.seconds or 0.0)
    shape.tpot_s = step.seconds
    shape.requests_per_s = min(p / pre.seconds, d * batch / (osl * step.seconds))
    if not hand_over.counted:
        shape.notes.append(hand_over.formula)
    return shape


def wide_ep(ctx: Context, ranks: int, tp1: Option) -> Shape | str:
    """N devices, each a data-parallel attention rank holding 1/N of the experts; or why it cannot serve."""
    model, batch, osl = ctx.model, ctx.request.concurrency, ctx.targets.osl
    groups = model.weight_bytes_by_group(ctx.dtype)
    whole = weights_per_device(model, ctx.dtype, 1, 1)
    experts = groups["experts"] * (whole / sum(groups.values()) if sum(groups.values()) else 1.0)
    weights = whole - experts + experts / ranks
    kv_token = kv_per_token_per_device(model, 1, 1, ctx.kv_bytes)
    memory = ctx.pool.device_memory_bytes
    if memory is None:
        return "device memory unknown"
    budget = memory * ctx.request.memory_utilization - weights - tp1.activation_bytes - tp1.non_torch_bytes
    needed = batch * ctx.request.context * kv_token
    if budget < needed:
        return (f"EP={ranks}: {weights / 2**30:.1f} GiB of weights a device leave {max(budget, 0) / 2**30:.1f} GiB, "
                f"{needed / 2**30:.1f} GiB needed for {batch} x {ctx.request.context} tokens of KV")
    if ranks <= ctx.pool.devices_per_node:
        link, link_name = ctx.speed.intra_node, "intra-node"
    else:
        link, link_name = ctx.speed.scale_out, "scale-out"
    pre = roofline.prefill(model, ctx.targets.isl, 1, ctx.speed, ctx.dtype, weights,
                           [roofline.all_to_all_term(model, ctx.targets.isl, ranks, link, link_name)])
    step = roofline.decode_step(model, batch, ctx.mean_context, 1, ctx.speed, ctx.dtype, weights, kv_token,
                                [roofline.all_to_all_term(model, batch, ranks, link, link_name)])
    terms = {"prefill": pre.to_dict(), "decode_step": step.to_dict(), "weights_per_device_gib": round(weights / 2**30, 2)}
    shape = Shape(ctx.pool, "wide-ep", "roofline", 1, ranks, batch, None, None, None, 0, ranks, expert_parallel=ranks, terms=terms)
    if pre.seconds is None or step.seconds is None:
        shape.notes.append(_unknown(pre, step))
        return shape
    cycle = batch * pre.seconds + osl * step.seconds
    share = batch * pre.seconds / cycle
    shape.ttft_s, shape.tpot_s = pre.seconds, step.seconds + batch * pre.seconds / osl
    shape.requests_per_s = ranks * batch / cycle
    shape.prefill_devices, shape.decode_devices = ranks * share, ranks * (1 - share)
    for term in pre.terms + step.terms:
        if not term.counted and term.formula not in shape.notes:
            shape.notes.append(term.formula)
    return shape


def _unknown(*estimates: Estimate) -> str:
    reasons = [t.formula.split("; ", 1)[-1] for e in estimates for t in e.terms if t.seconds is None and t.counted]
    return "; ".join(dict.fromkeys(reasons)) or "a bound is unknown"


def pool_shapes(model: ModelSpec, request: FitRequest, targets: Targets, pool: Pool, options: list[Option],
                speed: Speed, prices: cost.Prices, served: str | None = None,
                narrowed: str | None = None) -> tuple[list[Shape], list[str]]:
    """Every shape the pool can hold, judged and priced, and notes on those left out.

    ``narrowed`` says why the request's weights dtype is not the plan's (the plan's fits no option here).
    """
    ctx = Context(model, request, targets, pool, speed)
    devices = ctx.whole_devices()
    fitting = [o for o in options if o.fits and o.pipeline_parallel == 1]
    shapes: list[Shape] = []
    notes: list[str] = []
    for option in fitting:
        shapes.append(aggregated(ctx, option))
        for ratio in RATIOS:
            widths = [option.tensor_parallel] * sum(ratio)
            if copies(devices, widths) >= 1:
                shapes.append(disaggregated(ctx, option, ratio))
    if model.moe:
        tp1 = next((o for o in options if o.tensor_parallel == 1 and o.pipeline_parallel == 1), None)
        for ranks in EP_WIDTHS:
            if ranks > sum(devices) or tp1 is None:
                break
            found = wide_ep(ctx, ranks, tp1)
            if isinstance(found, str):
                notes.append(f"{pool.name}: wide-EP left out: {found}")
            else:
                shapes.append(found)
    if not fitting:
        notes.append(f"{pool.name}: no TP option fits in memory at the plan's context and concurrency; no shape searched")
    if shapes and all(s.ttft_s is None for s in shapes):
        notes.append(f"{pool.name}: no roofline estimate: {shapes[0].notes[0] if shapes[0].notes else 'a bound is unknown'}")
        shapes = shapes[:1]
    price = prices.for_pool(pool.name, pool.profile_id, pool.product)
    for shape in shapes:
        shape.price = price
        shape.served, shape.max_model_len, shape.weights_dtype = served, request.context, ctx.dtype
        if narrowed:
            shape.notes.append(narrowed)
        judge(shape, targets)
    return shapes, notes


def aic_shapes(pool: Pool, entry: dict[str, Any], targets: Targets, prices: cost.Prices) -> list[Shape]:
    """AIC's best aggregated and disaggregated configurations of a predicted pool, as shapes labelled ``aic``."""
    found = []
    price = prices.for_pool(pool.name, pool.profile_id, pool.product)
    for mode, kind in (("aggregated", "aggregated"), ("disaggregated", "disaggregated")):
        row = entry.get(mode)
        if not isinstance(row, dict) or not row.get("gpus"):
            continue
        gpus = int(row["gpus"])
        per_gpu = float(row.get("throughput_per_gpu") or 0.0)
        ttft, tpot = row.get("ttft_ms"), row.get("tpot_ms")
        shape = Shape(pool, kind, "aic", int(row.get("tensor_parallel") or row.get("decode", {}).get("tensor_parallel") or 1),
                      gpus, int(row.get("concurrency") or 0), None if ttft is None else float(ttft) / 1e3,
                      None if tpot is None else float(tpot) / 1e3, per_gpu * gpus / targets.osl, 0, gpus,
                      prefill_workers=int((row.get("prefill") or {}).get("workers") or 0),
                      decode_workers=int((row.get("decode") or {}).get("workers") or 0),
                      terms={"aic": row}, price=price, notes=["AIC's prediction: its rows meet both targets (Lens checked them)"])
        found.append(judge(shape, targets))
    return found


def search(model: ModelSpec, request: FitRequest, targets: Targets, pools: list[tuple[Pool, list[Option]]],
           speeds: dict[str, Speed | None], prices: cost.Prices, predictions: dict[str, Any] | None = None,
           served: str | None = None, narrower: dict[str, tuple[FitRequest, list[Option], str]] | None = None) -> dict[str, Any]:
    """The shapes of every pool, ranked, with the formulas, the device figures used and what was left out.

    ``narrower`` maps a pool whose options at the plan's dtype all fail to a request at narrower
    weights, its options and why: that pool's shapes are searched with them, each saying so.
    """
    shapes: list[Shape] = []
    notes: list[str] = []
    devices: dict[str, Any] = {}
    predicted = (predictions or {}).get("pools") or {}
    for pool, options in pools:
        speed = speeds.get(pool.name)
        if speed is None:
            notes.append(f"{pool.name}: no roofline: hardware profile {pool.profile_id} publishes no planning.performance "
                         f"for {pool.product!r}")
        else:
            devices[pool.name] = speed.to_dict()
            alternative = (narrower or {}).get(pool.name)
            if alternative is not None:
                found, left = pool_shapes(model, alternative[0], targets, pool, alternative[1], speed, prices, served,
                                          alternative[2])
            else:
                found, left = pool_shapes(model, request, targets, pool, options, speed, prices, served)
            shapes += found
            notes += left
        entry = predicted.get(pool.name)
        if isinstance(entry, dict) and entry.get("state") == "predicted":
            shapes += aic_shapes(pool, entry, targets, prices)
        if prices.by_key and prices.for_pool(pool.name, pool.profile_id, pool.product) is None:
            notes.append(f"{pool.name}: no price given: its shapes rank after priced ones")
    calibrated = sorted(name for name, d in devices.items() if d["calibration_source"] != roofline.UNCALIBRATED)
    if calibrated and len(calibrated) < len(devices):
        notes.append(f"calibrated to measurements: {', '.join(calibrated)}; the other pools' estimates are their "
                     "hardware's bound, faster than any engine: compare across the two with care")
    for key in prices.unmatched([(p.name, p.profile_id, p.product) for p, _ in pools]):
        notes.append(f"price {key!r} is used by no pool of this plan (no pool matches, or a more specific price wins)")
    shapes.sort(key=lambda s: s.rank_key(targets))
    return {
        "targets": {**targets.to_dict(), "concurrency": request.concurrency},
        "ranked": [s.to_dict(targets) for s in shapes],
        "best": shapes[0].to_dict(targets) if shapes and shapes[0].meets else None,
        "best_per_pool": _best_per_pool(shapes, targets),
        "devices": devices, "prices": prices.to_dict(),
        "formulas": {**roofline.FORMULAS, **FORMULAS, **cost.FORMULAS},
        "assumptions": [*roofline.ASSUMPTIONS, *ASSUMPTIONS], "notes": notes,
    }


def _best_per_pool(ranked: list[Shape], targets: Targets) -> list[dict[str, Any]]:
    """Each pool's first shape in the ranking (meeting the targets where any of its shapes does), in rank order."""
    seen: dict[str, dict[str, Any]] = {}
    for shape in ranked:
        if shape.pool.name not in seen:
            seen[shape.pool.name] = shape.to_dict(targets)
    return list(seen.values())
