"""The workload profile contract: one YAML file per hardware configuration of an evaluation run.

A profile says what the run needs to know that test code must not: the machines, the serving
topology, where the stack comes from, where to send load, which telemetry must come back and how
long to wait. Every object forbids unknown keys (a misspelled key would otherwise leave the
setting it meant to change at its default) and takes values strictly as typed, so ``port: "8000"``
is an error rather than a silent conversion.

Field-level problems come from pydantic; cross-field rules (a coverage the hardware cannot
satisfy, two deployment sources, a missing compose file) live in :func:`check` and need the
profile's directory and the hardware registry.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from llm_d_lens.evaluate.errors import Issue
from llm_d_lens.prometheus.promql import label_name, metric_name

FLAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise ValueError(f"{value} is not a valid port (1-65535)")
    return value


PositiveInt = Annotated[int, Field(gt=0)]
Seconds = Annotated[float, Field(gt=0)]
MetricName = Annotated[str, AfterValidator(metric_name)]
LabelName = Annotated[str, AfterValidator(label_name)]
Port = Annotated[int, AfterValidator(_port)]
Text = Annotated[str, Field(min_length=1)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Hardware(Strict):
    """What the run executes on: documentation, and the bound ``coverage`` is checked against."""

    machines: PositiveInt
    gpus_per_machine: PositiveInt
    sku: Text
    accelerator: Text | None = Field(default=None, description="Lens hardware id or any alias; resolved through the registry.")
    access_mode: Text | None = Field(default=None, description="One of the hardware's access modes; its first when absent.")

    @property
    def total_gpus(self) -> int:
        return self.machines * self.gpus_per_machine


class Parallelism(Strict):
    """Per worker pool; the names follow llm-d-benchmark's (``tensor``, ``data``, ``dataLocal``).

    ``data`` is the pool's whole data-parallel size and ``data_local`` the ranks one pod runs, so a
    replica is ``data / data_local`` pods. ``pipeline`` stages sit in the same pod as their tensor
    group (llm-d-benchmark has no pipeline field; it only changes the count per pod). Expert
    parallelism needs no field: an engine shards experts over the ``tensor × data`` devices it has.
    """

    tensor: PositiveInt = 1
    pipeline: PositiveInt = 1
    data: PositiveInt = 1
    data_local: PositiveInt = 1

    @property
    def accelerators_per_pod(self) -> int:
        """One pod drives its tensor × pipeline group once per local data-parallel rank."""
        return self.tensor * self.pipeline * self.data_local

    @property
    def pods_per_replica(self) -> int:
        """Pods one replica spans: its data-parallel ranks, ``data_local`` to a pod (at least one)."""
        return max(1, self.data // self.data_local)


class Pool(Strict):
    replicas: PositiveInt = 1
    parallelism: Parallelism = Field(default_factory=Parallelism)


class Serving(Strict):
    mode: Literal["aggregated", "disaggregated"]
    model: Text
    replicas: PositiveInt | None = Field(default=None, description="Aggregated only: pods in the single pool.")
    parallelism: Parallelism | None = Field(default=None, description="Aggregated only: the single pool's parallelism.")
    prefill: Pool | None = None
    decode: Pool | None = None

    def pools(self) -> dict[str, Pool]:
        """The worker pools by llm-d role: one ``decode`` pool when aggregated."""
        if self.mode == "aggregated":
            return {"decode": Pool(replicas=self.replicas or 1, parallelism=self.parallelism or Parallelism())}
        return {role: pool for role, pool in (("prefill", self.prefill), ("decode", self.decode)) if pool is not None}


class Deployment(Strict):
    compose_file: Text | None = None
    external: bool | None = None


class Endpoint(Strict):
    host: Text | None = None
    port: Port | None = None
    base_url: Text | None = None


class CoverageLabels(Strict):
    """Label names the profiler puts on every series; the defaults are the NCCL profiler's."""

    host: LabelName = "hostname"
    gpu_pci_bus_id: LabelName = "gpu_pci_bus_id"
    gpu_uuid: LabelName = "gpu_uuid"
    rank: LabelName = "rank"
    local_rank: LabelName = "local_rank"
    communicator: LabelName = "communicator"


class CoverageSource(Strict):
    """Which counter shows who did work, and how its series are labelled."""

    metric: MetricName = "nccl_profiler_collective_bytes_total"
    matchers: dict[LabelName, str] = Field(default_factory=dict, description="Equality matchers, e.g. job: profiler.")
    labels: CoverageLabels = Field(default_factory=CoverageLabels)


class Coverage(Strict):
    """How many hosts, GPUs and communicators must really report: declared, not calculated."""

    hosts: PositiveInt
    gpus: PositiveInt
    communicators: PositiveInt
    source: CoverageSource = Field(default_factory=CoverageSource)


class Timeouts(Strict):
    workload: Seconds
    metrics_available: Seconds
    quiesce: Seconds


class WorkloadProfile(Strict):
    description: Text
    hardware: Hardware
    serving: Serving
    deployment: Deployment
    endpoint: Endpoint
    otel_endpoint: Text | None = None
    coverage: Coverage
    timeouts: Timeouts
    expected_metrics: Text | None = None
    benchmark_options: dict[str, Any] = Field(default_factory=dict)


# -- messages -----------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return repr(value)


def pydantic_issues(errors: list[dict[str, Any]]) -> list[Issue]:
    """pydantic's errors as issues with a dotted path and a message a profile author can act on."""
    issues = []
    for error in errors:
        loc = tuple(error["loc"])
        path = _dotted(loc)
        kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
        if kind == "extra_forbidden":
            known = _known_keys(loc[:-1])
            message = "unknown key" + (f" (known keys: {', '.join(known)})" if known else "")
        elif kind == "missing":
            message = "is required"
        elif kind == "greater_than":
            message = f"must be positive (value: {_shown(value)})" if ctx.get("gt") == 0 else \
                f"must be greater than {ctx.get('gt')} (value: {_shown(value)})"
        elif kind == "int_type":
            message = f"must be an integer (value: {_shown(value)})"
        elif kind == "float_type":
            message = f"must be a number (value: {_shown(value)})"
        elif kind == "string_type":
            message = f"must be a string (value: {_shown(value)})"
        elif kind == "bool_type":
            message = f"must be true or false (value: {_shown(value)})"
        elif kind == "string_too_short":
            message = "must not be empty"
        elif kind == "literal_error":
            message = f"must be one of {ctx.get('expected')} (value: {_shown(value)})"
        elif kind in ("model_type", "dict_type", "model_attributes_type"):
            message = f"must be a mapping (value: {_shown(value)})"
        elif kind == "value_error":
            message = str(ctx.get("error", error["msg"]))
        else:
            message = error["msg"]
        issues.append(Issue(path, message))
    return issues


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the object at ``loc`` accepts, walking the model through optional fields."""
    model: Any = WorkloadProfile
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        candidates = [field.annotation, *get_args(field.annotation)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return []
    return list(model.model_fields)


# -- cross-field rules --------------------------------------------------------------------------


@cache
def metric_lists() -> dict[str, tuple[str, ...]]:
    """The named metric lists ``expected_metrics`` may name (package data ``metric_lists.yaml``)."""
    import yaml

    text = files("llm_d_lens.evaluate").joinpath("metric_lists.yaml").read_text(encoding="utf-8")
    return {name: tuple(metrics) for name, metrics in yaml.safe_load(text).items()}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def check(profile: WorkloadProfile, directory: Path, registry: Any | None = None) -> list[Issue]:
    """Every rule the field types cannot express; ``registry`` resolves ``hardware.accelerator``."""
    rules = (_coverage_fits, _one_deployment, _one_endpoint, _pools_match_mode, _parallelism_fits, _metric_list, _flags)
    issues = [issue for rule in rules for issue in rule(profile)]
    issues += _compose_file_exists(profile, directory)
    if registry is not None:
        issues += _hardware_registered(profile, registry)
    return issues


def _coverage_fits(p: WorkloadProfile) -> list[Issue]:
    issues = []
    if p.coverage.hosts > p.hardware.machines:
        issues.append(Issue("coverage.hosts", f"{p.coverage.hosts} exceeds the "
                                              f"{_plural(p.hardware.machines, 'machine')} the hardware provides"))
    if p.coverage.gpus > p.hardware.total_gpus:
        issues.append(Issue("coverage.gpus", f"{p.coverage.gpus} exceeds the "
                                             f"{_plural(p.hardware.total_gpus, 'GPU')} the hardware provides"))
    return issues


def _one_deployment(p: WorkloadProfile) -> list[Issue]:
    has_compose, external = p.deployment.compose_file is not None, p.deployment.external is True
    if has_compose and external:
        return [Issue("deployment", "name exactly one source, compose_file or external: true, not both")]
    if not has_compose and not external:
        return [Issue("deployment", "name exactly one source, compose_file or external: true")]
    return []


def _one_endpoint(p: WorkloadProfile) -> list[Issue]:
    e = p.endpoint
    host_port = e.host is not None or e.port is not None
    if host_port and e.base_url is not None:
        return [Issue("endpoint", "give either host and port, or base_url, not both")]
    if not host_port and e.base_url is None:
        return [Issue("endpoint", "give either host and port, or base_url")]
    if e.host is not None and e.port is None:
        return [Issue("endpoint.port", "is required with endpoint.host")]
    if e.port is not None and e.host is None:
        return [Issue("endpoint.host", "is required with endpoint.port")]
    if e.base_url is not None and not re.match(r"^https?://[^/\s]+", e.base_url):
        return [Issue("endpoint.base_url", f"{e.base_url!r} is not an http:// or https:// URL")]
    return []


def _pools_match_mode(p: WorkloadProfile) -> list[Issue]:
    s = p.serving
    if s.mode == "disaggregated":
        missing = [role for role in ("prefill", "decode") if getattr(s, role) is None]
        issues = [Issue("serving", f"a disaggregated profile declares both prefill and decode; missing: {', '.join(missing)}")] \
            if missing else []
        issues += [Issue(f"serving.{key}", f"a disaggregated profile sets {key} in prefill and decode")
                   for key in ("replicas", "parallelism") if getattr(s, key) is not None]
        return issues
    found = [role for role in ("prefill", "decode") if getattr(s, role) is not None]
    return [Issue("serving", f"an aggregated profile declares neither prefill nor decode; found: {', '.join(found)}")] \
        if found else []


def _pool_paths(s: Serving) -> dict[str, str]:
    """Role -> the dotted path of its parallelism block, as the author wrote it."""
    if s.mode == "aggregated":
        return {"decode": "serving.parallelism"}
    return {role: f"serving.{role}.parallelism" for role in ("prefill", "decode") if getattr(s, role) is not None}


def _parallelism_fits(p: WorkloadProfile) -> list[Issue]:
    """Whether every engine and pod of every pool can be placed on the machines the hardware block has.

    One engine (a data-parallel rank) drives ``tensor × pipeline`` devices. When that fits one
    machine, a pod runs ``data_local`` engines on one machine, so ``tensor × pipeline × data_local``
    must not exceed ``gpus_per_machine``. A larger engine spans machines (a tensor-parallel group
    straddling nodes, as multi-node serving does): it must fill whole machines and runs one rank per
    pod (``data_local`` 1). ``data`` must be a multiple of ``data_local``. Then spanning engines take
    their whole machines and the remaining pods (``replicas × data / data_local`` per pool) are placed
    largest first on what is left; parallel sizes are powers of two in practice, and for sizes that
    divide each other first-fit-decreasing finds a placement whenever one exists. Each issue names
    the field whose value tips the shape over.
    """
    hw, issues = p.hardware, []
    gpm = hw.gpus_per_machine
    pods: list[int] = []
    whole_machines = 0
    wanted: list[str] = []
    pools = p.serving.pools()
    for role, path in _pool_paths(p.serving).items():
        if role not in pools:
            continue
        pool, par = pools[role], pools[role].parallelism
        engine = par.tensor * par.pipeline
        if par.data % par.data_local:
            issues.append(Issue(f"{path}.data_local", f"{par.data_local} does not divide data {par.data}: every pod "
                                                      f"of the pool runs the same number of data-parallel ranks"))
            continue
        if engine > hw.total_gpus:
            key = "tensor" if par.tensor > hw.total_gpus else "pipeline"
            issues.append(Issue(f"{path}.{key}", f"{getattr(par, key)} needs {engine} accelerators for one engine "
                                                 f"({_factors(par, ('tensor', 'pipeline'))}), more than the "
                                                 f"{_plural(hw.total_gpus, 'GPU')} the hardware has "
                                                 f"({_plural(hw.machines, 'machine')} × {gpm}, hardware.machines × "
                                                 f"hardware.gpus_per_machine)"))
        elif engine > gpm and engine % gpm:
            key = "tensor" if par.tensor > gpm else "pipeline"
            issues.append(Issue(f"{path}.{key}", f"{getattr(par, key)} makes an engine of {engine} accelerators "
                                                 f"({_factors(par, ('tensor', 'pipeline'))}), which spans machines "
                                                 f"but is not a whole number of {gpm}-GPU machines "
                                                 f"(hardware.gpus_per_machine)"))
        elif engine > gpm and par.data_local > 1:
            issues.append(Issue(f"{path}.data_local", f"{par.data_local}: an engine of {engine} accelerators spans "
                                                      f"machines, so a pod runs one data-parallel rank (data_local 1)"))
        elif engine <= gpm and par.accelerators_per_pod > gpm:
            issues.append(Issue(f"{path}.data_local", f"{par.data_local} puts {par.accelerators_per_pod} accelerators "
                                                      f"in one pod ({_factors(par, ('tensor', 'pipeline', 'data_local'))})"
                                                      f", more than the {_plural(gpm, 'GPU')} of one machine "
                                                      f"(hardware.gpus_per_machine); a pod runs on one machine"))
        elif engine > gpm:
            engines = pool.replicas * par.data
            whole_machines += engines * (engine // gpm)
            wanted.append(f"{role}: {engines} × {engine} across {engine // gpm} machines")
        else:
            count = pool.replicas * par.pods_per_replica
            pods += [par.accelerators_per_pod] * count
            wanted.append(f"{role}: {count} × {par.accelerators_per_pod}")
    if issues:
        return issues
    free = [gpm] * (hw.machines - whole_machines)
    placed = whole_machines <= hw.machines
    for size in sorted(pods, reverse=True) if placed else ():
        slot = next((i for i, left in enumerate(free) if left >= size), None)
        if slot is None:
            placed = False
            break
        free[slot] -= size
    if placed:
        return []
    need = whole_machines * gpm + sum(pods)
    return [Issue("serving", f"the pools need {need} accelerators in whole pods ({'; '.join(wanted)}), which do not "
                             f"fit on {_plural(hw.machines, 'machine')} of {_plural(gpm, 'GPU')} "
                             f"(hardware.machines, hardware.gpus_per_machine)")]


def _factors(par: Parallelism, keys: tuple[str, ...]) -> str:
    """``tensor 4 × pipeline 2``: the factors that are set (tensor always shown)."""
    return " × ".join(f"{k} {getattr(par, k)}" for k in keys if getattr(par, k) > 1 or k == "tensor")


def _metric_list(p: WorkloadProfile) -> list[Issue]:
    if p.expected_metrics is None or p.expected_metrics in metric_lists():
        return []
    return [Issue("expected_metrics", f"{p.expected_metrics!r} names no metric list; lists: {', '.join(sorted(metric_lists()))}")]


def _flags(p: WorkloadProfile) -> list[Issue]:
    issues = []
    for key, value in p.benchmark_options.items():
        if not FLAG_NAME.fullmatch(key):
            issues.append(Issue(f"benchmark_options.{key}", "is not a flag name (letters, digits, '_' and '-')"))
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            issues.append(Issue(f"benchmark_options.{key}", f"must be a string, number, true, false or null (value: {_shown(value)})"))
    return issues


def _compose_file_exists(p: WorkloadProfile, directory: Path) -> list[Issue]:
    if p.deployment.compose_file is None:
        return []
    path = (directory / p.deployment.compose_file).resolve()
    if path.is_file():
        return []
    if path.is_dir():
        return [Issue("deployment.compose_file",
                      f"{p.deployment.compose_file} is a directory, not a compose file (at {path})")]
    return [Issue("deployment.compose_file", f"{p.deployment.compose_file} does not exist relative to the profile "
                                              f"(looked for {path})")]


def _hardware_registered(p: WorkloadProfile, registry: Any) -> list[Issue]:
    from llm_d_lens.errors import LensError

    if p.hardware.accelerator is None:
        if p.hardware.access_mode is not None:
            return [Issue("hardware.access_mode", "needs hardware.accelerator to say whose access mode it is")]
        return []
    try:
        hardware = registry.get(p.hardware.accelerator)
    except LensError:
        nearest = ", ".join(registry.nearest(p.hardware.accelerator))
        return [Issue("hardware.accelerator", f"no registered hardware matches {p.hardware.accelerator!r}; "
                                              f"nearest registered names: {nearest}")]
    modes = hardware.effective_modes()
    if p.hardware.access_mode is not None and p.hardware.access_mode not in modes:
        return [Issue("hardware.access_mode", f"{p.hardware.access_mode!r} is not an access mode of hardware "
                                              f"{hardware.id!r} (modes: {', '.join(modes)})")]
    return []
