"""Which pools AIC can predict for, with which system, and Lens's own strict SLA check of its answer.

Nothing here imports AIC: it decides *what* to ask (:mod:`aic` asks it) and judges the answer.

- **System.** A profile's ordered ``planning.aic_systems`` table maps a pool's product name to an
  AIC system name; the first matching row wins. The system must be in AIC's database for the
  backend, and its device memory (within 5 %) and GPUs per node (at least the pool's) must agree
  with the inventory: an ``H100 NVL`` (94 GB) is not AIC's 80 GB ``h100_sxm``.
- **Model.** One of the model's names that AIC ships a config for, or the directory of the user's
  own config.json. AIC is never left to download anything.
- **SLA.** AIC picks its "best" under a TPOT constraint only and may return near-misses; Lens keeps
  only rows whose TTFT and TPOT both meet the targets, then the highest throughput per GPU.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import msgspec

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.planning.architecture import ModelSpec
from llm_d_lens.planning.errors import RequestInvalid
from llm_d_lens.planning.pools import Pool

BACKENDS = ("vllm", "sglang", "trtllm")
MEMORY_TOLERANCE = 0.05
#: AIC's own defaults, shown as such when the user sets none
DEFAULT_ISL, DEFAULT_OSL, DEFAULT_TTFT_MS, DEFAULT_TPOT_MS = 4000, 1000, 2000.0, 30.0


class Targets(msgspec.Struct, frozen=True):
    """The workload and service levels a prediction is asked for."""

    isl: int = DEFAULT_ISL
    osl: int = DEFAULT_OSL
    ttft_ms: float = DEFAULT_TTFT_MS
    tpot_ms: float = DEFAULT_TPOT_MS
    backend: str = "vllm"

    def checked(self) -> Targets:
        for name, value, high in (("isl", self.isl, 1_000_000), ("osl", self.osl, 1_000_000)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise RequestInvalid(name, value, f"must be a whole number of tokens from 1 to {high:,}")
        for name, number, high in (("ttft", self.ttft_ms, 600_000.0), ("tpot", self.tpot_ms, 60_000.0)):
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number <= high:
                raise RequestInvalid(name, number, f"must be milliseconds above 0 and at most {high:,.0f}")
        if self.backend not in BACKENDS:
            raise RequestInvalid("backend", self.backend, f"is not one of {', '.join(BACKENDS)}")
        return Targets(self.isl, self.osl, float(self.ttft_ms), float(self.tpot_ms), self.backend)

    def to_dict(self) -> dict[str, Any]:
        return {"isl": self.isl, "osl": self.osl, "ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "backend": self.backend}


class SystemFacts(msgspec.Struct, frozen=True):
    """What AIC's database says of one system."""

    name: str
    backends: dict[str, list[str]]
    memory_bytes: int | None
    gpus_per_node: int | None


class Query(msgspec.Struct, frozen=True):
    """One AIC search; equal queries share one cached answer."""

    model: str
    system: str
    total_gpus: int
    targets: Targets


class PoolQuery(msgspec.Struct):
    pool: Pool
    query: Query | None
    reason: str
    checks: list[str] = msgspec.field(default_factory=list)


def match_system(pool: Pool, profile: HardwareProfile, systems: dict[str, SystemFacts], backend: str) -> tuple[str | None, list[str]]:
    """The AIC system for a pool, or None, with each check made (shown to the user either way)."""
    for row in profile.planning.aic_systems:
        if not re.search(row.product_pattern, pool.product, re.IGNORECASE):
            continue
        checks = [f"product {pool.product!r} matches planning.aic_systems {row.product_pattern!r} -> {row.system}"]
        facts = systems.get(row.system)
        if facts is None:
            return None, [*checks, f"AIC's database lists no {row.system}"]
        if backend not in facts.backends:
            return None, [*checks, f"AIC has no {backend} data for {row.system} (it has {', '.join(sorted(facts.backends))})"]
        if facts.memory_bytes and pool.device_memory_bytes:
            ratio = pool.device_memory_bytes / facts.memory_bytes
            if abs(ratio - 1) > MEMORY_TOLERANCE:
                return None, [*checks, f"the inventory's {pool.device_memory_bytes / 2**30:.1f} GiB a device is not "
                                       f"{row.system}'s {facts.memory_bytes / 2**30:.1f} GiB: a prediction would be for other hardware"]
            checks.append(f"device memory {pool.device_memory_bytes / 2**30:.1f} GiB agrees with {row.system}'s "
                          f"{facts.memory_bytes / 2**30:.1f} GiB")
        elif not pool.device_memory_bytes:
            return None, [*checks, "the inventory knows no device memory to check against the system's"]
        if facts.gpus_per_node and pool.devices_per_node > facts.gpus_per_node:
            return None, [*checks, f"{pool.devices_per_node} devices a node is more than {row.system}'s {facts.gpus_per_node}"]
        return row.system, [*checks, f"{pool.devices_per_node} devices a node (at most {facts.gpus_per_node or '?'} in AIC's system)"]
    return None, [f"no planning.aic_systems row of {profile.id} matches product {pool.product!r}"]


def aic_model_name(model: ModelSpec, known: set[str]) -> str | None:
    """A name AIC ships a config for, or the directory of the user's config.json; else None."""
    for name in (model.name, *model.aliases):
        if name in known:
            return name
    source = Path(model.source)
    if not model.source.startswith("catalogue:") and source.name == "config.json" and source.is_file():
        return str(source.parent.resolve())
    return None


def plan_queries(model: ModelSpec, pools: list[Pool], profiles: dict[str, HardwareProfile],
                 systems: dict[str, SystemFacts], known_models: set[str], targets: Targets) -> list[PoolQuery]:
    """Per pool: the query to run, or why none is run."""
    aic_model = aic_model_name(model, known_models)
    planned = []
    for pool in pools:
        profile = profiles.get(pool.profile_id)
        if profile is None or not profile.planning.aic_systems:
            planned.append(PoolQuery(pool, None, f"{pool.profile_id} declares no planning.aic_systems: AIC has no data for it"))
            continue
        system, checks = match_system(pool, profile, systems, targets.backend)
        if system is None:
            planned.append(PoolQuery(pool, None, checks[-1], checks))
        elif aic_model is None:
            planned.append(PoolQuery(pool, None, f"AIC ships no config for {model.name}; pass its config.json "
                                     "(--model path/to/config.json) to have it predicted", checks))
        else:
            planned.append(PoolQuery(pool, Query(aic_model, system, pool.devices_per_node, targets), "queried", checks))
    return planned


def meets(row: dict[str, Any], targets: Targets) -> bool:
    ttft, tpot = row.get("ttft"), row.get("tpot")
    return (isinstance(ttft, (int, float)) and isinstance(tpot, (int, float)) and math.isfinite(ttft)
            and math.isfinite(tpot) and ttft <= targets.ttft_ms and tpot <= targets.tpot_ms)


def best_row(rows: list[dict[str, Any]], targets: Targets) -> tuple[dict[str, Any] | None, int]:
    """The highest throughput per GPU among rows meeting both targets, and how many rows missed them."""
    passing = [row for row in rows if meets(row, targets)]
    best = max(passing, key=lambda row: float(row.get("tokens/s/gpu") or 0), default=None)
    return best, len(rows) - len(passing)


def _int(row: dict[str, Any], key: str) -> int | None:
    value = row.get(key)
    return int(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def copies(free: list[int], widths: list[int]) -> int:
    """How many full sets of workers (each ``width`` devices on one node) the free devices hold.

    First fit, widest worker first, each set placed whole before the next: a node's devices are
    never counted twice, and a worker never spans two nodes.
    """
    if not widths or any(w <= 0 for w in widths):
        return 0
    left, count = sorted(free, reverse=True), 0
    while True:
        trial = list(left)
        for width in sorted(widths, reverse=True):
            spot = next((i for i, n in enumerate(trial) if n >= width), None)
            if spot is None:
                return count
            trial[spot] -= width
        left, count = trial, count + 1


def summarize(row: dict[str, Any], mode: str, pool: Pool) -> dict[str, Any]:
    """One configuration in Lens's words; replicas are the full copies the pool's free devices hold."""
    free = [n.free_devices for n in pool.nodes if n.schedulable]
    summary: dict[str, Any] = {
        "mode": mode, "gpus": _int(row, "num_total_gpus"), "ttft_ms": row.get("ttft"), "tpot_ms": row.get("tpot"),
        "throughput_per_gpu": row.get("tokens/s/gpu"), "throughput_per_user": row.get("tokens/s/user"),
        "concurrency": row.get("concurrency"), "backend": row.get("backend") or row.get("(p)backend"),
        "backend_version": row.get("version") or row.get("(p)version"),
    }
    if mode == "aggregated":
        tp, pp, dp = (_int(row, k) or 1 for k in ("tp", "pp", "dp"))
        summary.update(tensor_parallel=tp, pipeline_parallel=pp, data_parallel=dp,
                       replicas_on_free_devices=copies(free, [tp * pp] * dp))
    else:
        roles = {role: {"tensor_parallel": _int(row, f"({key})tp") or 1, "pipeline_parallel": _int(row, f"({key})pp") or 1,
                        "workers": _int(row, f"({key})workers") or 0} for role, key in (("prefill", "p"), ("decode", "d"))}
        widths = [r["tensor_parallel"] * r["pipeline_parallel"] for r in roles.values() for _ in range(r["workers"])]
        summary.update(roles, replicas_on_free_devices=copies(free, widths))
    return summary


def judge(answer: dict[str, Any], targets: Targets, pool: Pool) -> dict[str, Any]:
    """AIC's rows for one query, kept only where both SLA targets are met."""
    result: dict[str, Any] = {"seconds": answer.get("seconds"), "cached": answer.get("cached", False)}
    if answer.get("error"):
        result["error"] = answer["error"]
    for key, mode in (("agg", "aggregated"), ("disagg", "disaggregated")):
        best, missed = best_row(answer.get(key) or [], targets)
        result[mode] = summarize(best, mode, pool) if best else None
        result[f"{mode}_rejected"] = missed
    if result["aggregated"] is None and result["disaggregated"] is None:
        result["verdict"] = (f"no configuration AIC found meets TTFT <= {targets.ttft_ms:g} ms and "
                             f"TPOT <= {targets.tpot_ms:g} ms")
    return result


def query_arguments(query: Query) -> dict[str, Any]:
    t = query.targets
    return {"model": query.model, "system": query.system, "total_gpus": query.total_gpus, "backend": t.backend,
            "isl": t.isl, "osl": t.osl, "ttft": t.ttft_ms, "tpot": t.tpot_ms}


class PredictionRun:
    """The AIC queries of one plan, started at once in the engine's worker; read when done or polled."""

    def __init__(self, model: ModelSpec, pools: list[Pool], profiles: dict[str, HardwareProfile], targets: Targets,
                 aic_engine: Any, engine_version: str | None = None):
        catalogue = aic_engine.catalogue()
        systems = {name: SystemFacts(name, facts.get("backends") or {}, facts.get("memory_bytes"), facts.get("gpus_per_node"))
                   for name, facts in (catalogue.get("systems") or {}).items()}
        self.targets, self.engine, self.version = targets, aic_engine, engine_version
        self.planned = plan_queries(model, pools, profiles, systems, set(catalogue.get("models") or []), targets)
        self.futures = {pq.pool.name: aic_engine.submit(pq.query, **query_arguments(pq.query))
                        for pq in self.planned if pq.query is not None}

    @property
    def done(self) -> bool:
        return all(future.done() for future, _ in self.futures.values())

    def to_dict(self, *, wait: bool) -> dict[str, Any]:
        pools: dict[str, Any] = {}
        for pq in self.planned:
            entry: dict[str, Any] = {"system": pq.query.system if pq.query else None, "checks": pq.checks}
            if pq.query is None:
                entry.update(state="skipped", reason=pq.reason)
            else:
                future, cached = self.futures[pq.pool.name]
                if not wait and not future.done():
                    entry.update(state="running")
                else:
                    answer = self.engine.answer(future, cached)
                    entry.update(state="failed" if answer.get("error") and not (answer.get("agg") or answer.get("disagg"))
                                 else "predicted", **judge(answer, self.targets, pq.pool))
            pools[pq.pool.name] = entry
        running = any(p["state"] == "running" for p in pools.values())
        return {"engine": "aiconfigurator", "version": self.version, "state": "running" if running else "done",
                "targets": self.targets.to_dict(), "pools": pools,
                "message": "AIC predictions; rows missing the TTFT or TPOT target are rejected by Lens"}
