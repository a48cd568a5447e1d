"""One call from a model and a cluster source to a plan, shared by the CLI, the API and the benchmark.

The plan lists, for each accelerator pool the inventory finds (live, snapshot or demo), the
tensor/pipeline parallelisms that fit the model in memory, with headroom, the most concurrent
sequences at the asked context length, and how many replicas the free devices allow. Each figure
carries its source: the parameter count (published or computed), the dtype (asked or from the
config), the device memory (DRA capacity, node label, memory model, or node discovery).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from llm_d_lens.cluster.model import Overview
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.planning.architecture import ModelSpec
from llm_d_lens.planning.engine_memory import DeviceFacts, facts_from_profile
from llm_d_lens.planning.fit import ASSUMPTIONS, FORMULAS, FitRequest, Option, fit_pool
from llm_d_lens.planning.handoff import render_command
from llm_d_lens.planning.pools import Pool, pools_from_overview

#: the llm-d guide a hand-over to `lens deploy render` names unless the user picks another
DEFAULT_GUIDE = "optimized-baseline"


class PoolPlan(msgspec.Struct):
    pool: Pool
    options: list[Option]

    @property
    def best(self) -> Option | None:
        """The narrowest fitting option: the most replicas for the devices."""
        return next((o for o in self.options if o.fits), None)

    def verdict(self) -> str:
        best = self.best
        if best is not None:
            return (f"fits on {best.width} device(s) (TP={best.tensor_parallel}, PP={best.pipeline_parallel}); "
                    f"{best.replicas_free} replica(s) on free devices, {best.replicas_total} if the pool were empty")
        if self.pool.device_memory_bytes is None:
            return "cannot judge: device memory unknown"
        feasible = [o for o in self.options if o.feasible]
        if not feasible:
            return "nothing fits: no parallelism within one node shards this model"
        widest = max(feasible, key=lambda o: (o.width, o.max_concurrency))
        return f"nothing fits, because at the widest ({widest.width} devices): {widest.reason}"

    def hand_off(self, option: Option, model: ModelSpec | None = None, context: int | None = None) -> dict[str, Any]:
        """The commands that carry the plan on: a render serving the planned model at the planned sizes.

        ``lens deploy render`` sets the engine's model, tensor/pipeline sizes and context length where
        the guide's overlay states them (or refuses, naming what the overlay fixes), and the pod's
        device count follows the sizes; so the printed command deploys what was planned, not the
        overlay's own model. Each command is one line, shell-quoted, to copy whole.
        """
        import shlex

        hardware = self.pool.profile_id
        replicas = max(1, option.replicas_free)
        served = served_model(model)
        engine = []
        if served is not None:
            engine += ["--model", served]
        engine += ["--tensor-parallel-size", str(option.tensor_parallel)]
        if option.pipeline_parallel > 1:
            engine += ["--pipeline-parallel-size", str(option.pipeline_parallel)]
        if context is not None:
            engine += ["--max-model-len", str(context)]
        deploy = render_command(self.pool, DEFAULT_GUIDE, served, option.tensor_parallel, option.pipeline_parallel,
                                context, replicas)
        unit = f"one {self.pool.partition} partition" if self.pool.partition else f"{option.width} device(s)"
        note = f"renders the {DEFAULT_GUIDE} overlay serving the planned model on {unit} a pod, {replicas} replica(s)"
        if served is None:
            note += "; the config names no model id (_name_or_path), so add --model with the checkpoint to serve"
        whole_only = bool(self.pool.partition) and self.pool.partition_via != "extended-resource"
        if whole_only:  # a DRA partition: the render claims the mode's device class, whole devices
            note += (f"; but {self.pool.partition} partitions are DRA devices, and lens deploy render claims whole "
                     "devices of the access mode's class: claim the partition in the overlay")
        return {
            "deploy": None if whole_only else deploy,
            "evaluate": f"lens evaluate config --hardware {hardware} --tensor-parallel {option.width} --replicas {replicas}",
            "engine_args": shlex.join(engine), "guide": DEFAULT_GUIDE,
            "model": served, "replicas": replicas,
            "tensor_parallel": option.tensor_parallel, "pipeline_parallel": option.pipeline_parallel,
            "note": note,
        }

    def to_dict(self, model: ModelSpec | None = None, context: int | None = None) -> dict[str, Any]:
        best = self.best
        return {
            **self.pool.to_dict(),
            "verdict": self.verdict(),
            "best": best.to_dict() if best else None,
            "hand_off": self.hand_off(best, model, context) if best else None,
            "options": [o.to_dict() for o in self.options],
        }


class Plan(msgspec.Struct):
    model: ModelSpec
    request: FitRequest
    source: dict[str, Any]
    pools: list[PoolPlan]
    notes: list[str] = msgspec.field(default_factory=list)
    predictions: dict[str, Any] | None = None
    shapes: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.to_dict(),
            "request": self.request.to_dict(),
            "source": self.source,
            "pools": [p.to_dict(self.model, self.request.context) for p in self.pools],
            "formulas": dict(FORMULAS),
            "assumptions": list(ASSUMPTIONS),
            "notes": list(self.notes),
            "predictions": self.predictions,
            **({"shapes": self.shapes} if self.shapes is not None else {}),
        }


def served_model(model: ModelSpec | None) -> str | None:
    """The id an engine loads the model by (``org/name`` or a path), or None for a config that names none.

    A config.json without ``_name_or_path`` is named by its architecture class (``LlamaForCausalLM``),
    which no engine can load: the hand-off then says to add the model rather than print a broken one.
    """
    if model is None:
        return None
    name = model.name.strip()
    return name if ("/" in name and not name.endswith(".json")) else None


def plan_for_overview(model: ModelSpec, request: FitRequest, overview: Overview) -> Plan:
    """The memory fit of ``model`` on every accelerator pool of an inventory already read."""
    checked = request.checked(model)
    pools, notes = pools_from_overview(overview)
    if not pools:
        notes.append("nothing fits, because the cluster has no accelerator devices "
                     "(`lens cluster inspect` shows what it found)")
    profiles = {p.id: p for p in get_registry().profiles()} if pools else {}
    plans = [PoolPlan(pool, fit_pool(model, checked, pool, device_facts(pool, profiles))) for pool in pools]
    plans.sort(key=lambda p: (p.best is None, p.pool.profile_id, p.pool.product))
    return Plan(model, checked, overview.source, plans, notes)


def device_facts(pool: Pool, profiles: dict[str, Any]) -> DeviceFacts:
    """The pool's hardware profile figures for the engine's memory (none for a profile Lens does not have)."""
    profile = profiles.get(pool.profile_id)
    if profile is None:
        return DeviceFacts()
    # a pool's product may join several names ("A, B"); the first one with figures wins
    for product in pool.product.split(", "):
        facts = facts_from_profile(profile, product)
        if facts.visible_bytes is not None:
            return facts
    return facts_from_profile(profile, pool.product)


def plan(model: ModelSpec, request: FitRequest, source: Any, runner: Any = None, *, discover: bool = False,
         keep: Callable[[Any], None] | None = None) -> Plan:
    """Read the cluster ``source`` (a :class:`ClusterSource`) and plan ``model`` on it.

    With ``discover``, nodes whose memory the inventory does not know run their profile's
    discovery command (live clusters only: a snapshot's nodes cannot be asked). ``keep`` is handed
    the parsed objects instead of freeing them, as by :func:`llm_d_lens.cluster.service.inspect`.
    """
    from llm_d_lens.cluster.service import inspect

    request.checked(model)  # refuse a nonsense request before reading any cluster
    overview = inspect(source, runner, keep=keep)
    notes: list[str] = []
    if discover:
        from llm_d_lens.cluster.node_discovery import discover_into

        notes = discover_into(overview, source, runner)
    result = plan_for_overview(model, request, overview)
    result.notes[:0] = notes
    return result


def start_predictions(result: Plan, targets: Any, aic_engine: Any = None) -> Any:
    """Start AIC's search for each pool of a plan it has data for (see :mod:`predictions`)."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.planning import aic
    from llm_d_lens.planning.predictions import PredictionRun

    profiles = {p.id: p for p in get_registry().profiles()}
    return PredictionRun(result.model, [p.pool for p in result.pools], profiles, targets.checked(),
                         aic_engine or aic.engine(), aic.status().version)


def model_spec(model: str | None, config: dict[str, Any] | None, hint: str) -> ModelSpec:
    """Exactly one of a catalogue ``model`` name or a config.json object, as a model's shape.

    ``hint`` is how this surface's caller names another model (a flag, a request field).
    """
    from llm_d_lens.planning.architecture import from_config
    from llm_d_lens.planning.catalogue import lookup, nearest
    from llm_d_lens.planning.errors import ModelUnknown, RequestInvalid

    if (model is None) == (config is None):
        raise RequestInvalid("model", model, "give exactly one of model (a catalogue name) or config (a config.json object)")
    if config is not None:
        return from_config(config, "config")
    spec = lookup(model or "")
    if spec is None:
        raise ModelUnknown(model or "", nearest(model or ""), hint)
    return spec


#: the largest config.json a form may upload: published configs are a few KiB, a multimodal one under 100 KiB
MAX_UPLOAD_BYTES = 256 * 1024


def uploaded_config(raw: bytes, filename: str) -> ModelSpec:
    """A config.json a user uploaded (the console's plan form), as a model's shape; bounded, strict, coded.

    ``filename`` is the browser's name for it, shown in messages and as the model's source.
    """
    from llm_d_lens.planning.architecture import from_config
    from llm_d_lens.planning.catalogue import parse_json
    from llm_d_lens.planning.errors import ConfigTooLarge, ModelConfigInvalid

    source = f"upload:{filename or 'config.json'}"
    if len(raw) > MAX_UPLOAD_BYTES:
        raise ConfigTooLarge(source, len(raw), MAX_UPLOAD_BYTES)
    if not raw.strip():
        raise ModelConfigInvalid(source, "$", "", "is empty: choose a model's config.json")
    return from_config(parse_json(raw, source), source)


def server_plan(model: ModelSpec, request: FitRequest, source: Any, runner: Any = None, *, discover: bool = False) -> Plan:
    """:func:`plan` on the server's cluster: a broken configured snapshot is the server's 503, and AIC's state is told.

    ``discover`` runs the profiles' discovery tools on nodes of unknown memory, as ``lens plan
    --discover`` does (a live cluster only; on a snapshot or the demo the plan notes it was skipped).
    """
    from llm_d_lens.errors import LensError, ServerNotConfigured
    from llm_d_lens.planning.aic import status

    try:
        result = plan(model, request, source, runner, discover=discover)
    except LensError as exc:
        if source.snapshot is None:
            raise
        raise ServerNotConfigured(f"the server's LENS_CLUSTER_SNAPSHOT cannot be used: {exc.message}",
                                  details={"cause": exc.code, **exc.details}) from None
    result.predictions = status().to_dict()
    return result


def search_shapes(result: Plan, targets: Any, prices: Any = None) -> dict[str, Any]:
    """Aggregated, P/D and wide-EP shapes of every pool of a plan, ranked (see :mod:`shapes`).

    Run after the AIC predictions, if any: a pool AIC predicted gets AIC's configurations as
    shapes of their own beside the roofline's, each labelled.
    """
    from llm_d_lens.planning import cost, shapes
    from llm_d_lens.planning.roofline import speed_from_profile

    profiles = {p.id: p for p in get_registry().profiles()}
    speeds = {}
    for plan_ in result.pools:
        profile = profiles.get(plan_.pool.profile_id)
        speeds[plan_.pool.name] = speed_from_profile(profile, plan_.pool.product, targets.backend) if profile else None
    narrower = {}
    for plan_ in result.pools:
        speed = speeds[plan_.pool.name]
        if speed is None or any(o.fits and o.pipeline_parallel == 1 for o in plan_.options):
            continue
        found = narrower_weights(result.model, result.request, plan_.pool, speed, device_facts(plan_.pool, profiles))
        if found is not None:
            narrower[plan_.pool.name] = found
    found = shapes.search(result.model, result.request, targets, [(p.pool, p.options) for p in result.pools], speeds,
                          prices or cost.Prices(), result.predictions, served_model(result.model), narrower)
    result.shapes = found
    return found


def narrower_weights(model: ModelSpec, request: FitRequest, pool: Pool, speed: Any,
                     facts: DeviceFacts) -> tuple[FitRequest, list[Option], str] | None:
    """For a pool no option fits at 16-bit weights: the fit at the first 8-bit dtype the device publishes a peak for.

    What an engine's online quantization serves (vLLM ``--quantization fp8``, or an int8 checkpoint);
    the shapes searched with it say so. None when the weights are already narrower or nothing fits either.
    """
    
    from llm_d_lens.planning import dtypes

    if dtypes.bytes_per_value(request.dtype or model.dtype) < 2:
        return None
    for narrow in ("fp8", "int8"):
        if narrow not in speed.peak_flops:
            continue
        narrowed = msgspec.structs.replace(request, dtype=narrow)
        options = fit_pool(model, narrowed, pool, facts)
        if any(o.fits and o.pipeline_parallel == 1 for o in options):
            return narrowed, options, (f"{request.dtype} weights fit no option on {pool.name}: searched at {narrow} weights "
                                       f"(an {narrow} checkpoint or the engine's online {narrow} quantization), "
                                       f"KV {narrowed.kv_dtype}")
        break
    return None
