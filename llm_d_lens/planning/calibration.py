"""The roofline held to published measurements: each point's estimate, and the efficiencies an engine reaches.

``calibration.json`` (beside this module) holds published decode throughputs, each a static batch
(``batch`` prompts of ``isl`` tokens prefilled, then ``osl`` decode steps) with its source. Lens's
estimate of a point is the roofline's own prefill and decode step (:mod:`roofline`) on the
profile's published figures, divided by the profile's ``planning.calibration.<engine>``::

    tokens/s = batch x OSL / (prefill(batch x ISL tokens) + OSL x decode step(batch, ISL + OSL/2))

A figure a source publishes per device (``per_device``) is the pod's throughput / TP and is compared as such.
A source whose engine reads each KV head once per query head (``decode_kv_reads``) has its decode step's KV
bytes multiplied by the model's query heads a KV head. :func:`fit` finds the one compute and one bandwidth efficiency per engine and hardware profile
that keep every point of that group closest (the smallest worst error, on a grid of 0.01): the
figures a profile records are that fit, never set per point.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec

from llm_d_lens.planning import dtypes, roofline
from llm_d_lens.planning.architecture import ModelSpec, from_config
from llm_d_lens.planning.catalogue import catalogue_spec
from llm_d_lens.planning.fit import kv_per_token_per_device, weights_per_device
from llm_d_lens.planning.roofline import Speed

DATA = Path(__file__).with_name("calibration.json")
#: the issue's bound on every point's error, and its goal
LIMIT, GOAL = 0.25, 0.15
GRID = tuple(round(0.01 * i, 2) for i in range(1, 101))
COMPUTE_TERMS, MEMORY_TERMS = ("prefill_compute", "decode_compute"), ("weights_read", "decode_memory")


class Point(msgspec.Struct, frozen=True):
    """One published measurement."""

    index: int
    source: str
    engine: str
    hardware: str
    product: str
    model: str
    weights: str
    kv: str
    tp: int
    batch: int
    isl: int
    osl: int
    tokens_per_s: float
    assumed: str = ""
    #: the figure is a device's share (the pod's output tokens a second / TP), as the source publishes it
    per_device: bool = False

    @property
    def group(self) -> tuple[str, str]:
        return self.hardware, self.engine

    @property
    def measured(self) -> float:
        """The pod's output tokens a second: the published figure, times TP where it is a device's share."""
        return self.tokens_per_s * (self.tp if self.per_device else 1)


def document() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def points() -> tuple[Point, ...]:
    return tuple(Point(index=i, **row) for i, row in enumerate(document()["points"]))


@lru_cache(maxsize=None)
def model(name: str) -> ModelSpec:
    """A catalogue model, or one of the data file's published configs."""
    extra = document()["models"].get(name)
    if extra is None:
        return catalogue_spec(name)
    return from_config(extra["config"], f"{DATA.name}: models.{name}", name, published=extra["parameters"],
                       published_source=extra["source"])


def speed(point: Point) -> Speed:
    """The profile's published figures for the point's product, with its calibration for the point's engine."""
    from llm_d_lens.hardware.registry import get_profile

    found = roofline.speed_from_profile(get_profile(point.hardware), point.product, point.engine)
    if found is None:
        raise ValueError(f"{DATA.name}: point {point.index}: profile {point.hardware} has no planning.performance "
                         f"for {point.product!r}")
    return found


class Timing(msgspec.Struct, frozen=True):
    """The roofline's prefill and decode step for one point, and the throughput they give."""

    prefill: roofline.Estimate
    step: roofline.Estimate
    point: Point

    @property
    def tokens_per_s(self) -> float:
        total = (self.prefill.seconds or 0.0) + self.point.osl * (self.step.seconds or 0.0)
        return self.point.batch * self.point.osl / total

    @property
    def error(self) -> float:
        return self.tokens_per_s / self.point.measured - 1


def kv_reads(point: Point, spec: ModelSpec) -> int:
    """How often the point's engine reads each KV head a decode step: its source's ``decode_kv_reads``.

    ``per-query-head`` (a decode attention kernel of one thread block a query head, as TensorRT-LLM's masked MHA
    before its XQA kernel) reads a KV head once for each query head of its group: heads / KV heads times. Otherwise
    (the default) the group shares one read.
    """
    if document()["sources"][point.source].get("decode_kv_reads") != "per-query-head" or spec.mla:
        return 1
    return max(1, spec.attention_heads // max(1, spec.kv_heads))


def timing(point: Point, device: Speed) -> Timing:
    """Lens's estimate of a point: the roofline's prefill of the whole batch, then OSL steps at the mean context."""
    spec = model(point.model)
    weights = weights_per_device(spec, point.weights, point.tp, 1)
    kv = kv_per_token_per_device(spec, point.tp, 1, dtypes.bytes_per_value(point.kv))
    pre = roofline.prefill(spec, point.batch * point.isl, point.tp, device, point.weights, weights)
    step = roofline.decode_step(spec, point.batch, point.isl + point.osl // 2, point.tp, device, point.weights, weights, kv,
                                kv_reads=kv_reads(point, spec))
    return Timing(pre, step, point)


def _parts(estimate: roofline.Estimate) -> tuple[float, float, float]:
    """(compute, memory, communication) seconds of an estimate made at efficiency 1.0."""
    named = {t.name: t for t in estimate.terms}
    compute = next(named[n].seconds or 0.0 for n in COMPUTE_TERMS if n in named)
    memory = next(named[n].seconds or 0.0 for n in MEMORY_TERMS if n in named)
    comm = sum(t.seconds or 0.0 for t in estimate.terms if t.counted and t.name not in COMPUTE_TERMS + MEMORY_TERMS)
    return compute, memory, comm


def _errors(parts: list[tuple[Point, tuple[float, float, float], tuple[float, float, float]]],
            compute: float, bandwidth: float) -> list[float]:
    """Each point's error at these efficiencies (the step rules of :func:`roofline.combine`)."""
    found = []
    for point, pre, step in parts:
        total = (roofline.combine([pre[0] / compute, pre[1] / bandwidth], pre[2], overlapped=True)
                 + point.osl * roofline.combine([step[0] / compute, step[1] / bandwidth], step[2], overlapped=False))
        found.append(point.batch * point.osl / total / point.measured - 1)
    return found


@lru_cache(maxsize=None)
def fit(group: tuple[Point, ...]) -> tuple[float, float, float]:
    """The (compute, bandwidth) efficiency with the smallest worst error over the group, and that error."""
    parts = []
    for point in group:
        bare = msgspec.structs.replace(speed(point), compute_efficiency=1.0, bandwidth_efficiency=1.0)
        t = timing(point, bare)
        parts.append((point, _parts(t.prefill), _parts(t.step)))
    best = (1.0, 1.0, float("inf"))
    for c in GRID:
        for b in GRID:
            worst = max(abs(e) for e in _errors(parts, c, b))
            if worst < best[2] - 1e-12:
                best = (c, b, worst)
    return best


def groups() -> dict[tuple[str, str], tuple[Point, ...]]:
    """The points of each (hardware profile, engine): one calibration each."""
    found: dict[tuple[str, str], list[Point]] = {}
    for point in points():
        found.setdefault(point.group, []).append(point)
    return {key: tuple(group) for key, group in found.items()}


def rows() -> list[dict[str, Any]]:
    """Every point with Lens's estimate on the profiles as shipped."""
    sources = document()["sources"]
    found = []
    for point in points():
        device = speed(point)
        t = timing(point, device)
        found.append({"point": point, "source": sources[point.source], "estimate": t.tokens_per_s, "error": t.error,
                      "calibration": (device.compute_efficiency, device.bandwidth_efficiency)})
    return found
