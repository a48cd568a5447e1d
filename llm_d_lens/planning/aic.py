"""The one module that may import ``aiconfigurator`` (AIC), the optional performance predictor.

AIC comes with the ``planning`` extra (``pip install 'llm-d-lens[planning]'``): about 825 MB with
its dependencies, deprecated upstream in favour of a successor, so every call to it lives here and
nothing else in Lens imports it. Without it, plans still answer with the memory fit, and this
module says, with a stable code, that predictions need the extra. It never invents a prediction.

Whether AIC is installed is read from its distribution metadata (the contract's reader of the installed
distributions, not ``importlib.metadata``, whose import alone is a tenth of ``lens plan``'s start); the
package itself, heavy to import, is imported only when a prediction is asked.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

import msgspec

from llm_d_lens.hardware.entry_points import version as installed_version
from llm_d_lens.planning.errors import PredictionsUnavailable

DISTRIBUTION = "aiconfigurator"
INSTALL_HINT = "pip install 'llm-d-lens[planning]'"
NOT_INSTALLED = "PLANNING_AIC_NOT_INSTALLED"
BROKEN = "PLANNING_AIC_BROKEN"


class AicStatus(msgspec.Struct, frozen=True):
    """What this Lens can say about AIC predictions, before any is asked for."""

    state: str  # "installed" | "not-installed" | "broken"
    version: str | None
    message: str
    code: str | None = None

    @property
    def available(self) -> bool:
        return self.state == "installed"

    def to_dict(self) -> dict[str, Any]:
        return {"engine": "aiconfigurator", "state": self.state, "version": self.version, "code": self.code,
                "message": self.message}


def status() -> AicStatus:
    """Installed, not installed, or installed but unusable (metadata without the package)."""
    version = installed_version(DISTRIBUTION)
    if version is None:
        return AicStatus("not-installed", None, f"AIC predictions need the planning extra ({INSTALL_HINT}); "
                         "the memory fit above does not need it", NOT_INSTALLED)
    if importlib.util.find_spec("aiconfigurator") is None:
        return AicStatus("broken", version, f"aiconfigurator {version} is registered but its package cannot be "
                         f"found; reinstall it ({INSTALL_HINT})", BROKEN)
    return AicStatus("installed", version, f"aiconfigurator {version} is installed")


def load() -> ModuleType:
    """Import AIC now, or raise a coded :class:`PredictionsUnavailable` saying how to get it."""
    current = status()
    if not current.available:
        raise PredictionsUnavailable(current.message, code=current.code, details=current.to_dict())
    try:
        return importlib.import_module("aiconfigurator")
    except Exception as exc:  # noqa: BLE001 - a broken optional dependency must not break planning
        raise PredictionsUnavailable(f"aiconfigurator {current.version} failed to import ({type(exc).__name__}: {exc}); "
                                     f"reinstall it ({INSTALL_HINT})", code=BROKEN,
                                     details={**current.to_dict(), "state": "broken"}) from None


# -- the worker process: the only place aiconfigurator's code runs --------------------------------
#
# AIC's search is CPU-bound (8-25 s a system on 2 cores), logs every table it loads and keeps
# process-global caches. It runs in one worker process, started on first use, so the API's event
# loop and the CLI's output stay clean, and its caches live as long as the worker does.


def _quiet() -> None:
    """Worker initializer: AIC's logging and warnings would bury the plan; keep its errors only."""
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")


def _plain(value: Any) -> Any:
    """numpy and pandas scalars as plain JSON values; containers dropped (per-op provenance)."""
    if isinstance(value, (dict, list, tuple, set)):
        return None
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return value
    try:
        return value.item()  # numpy scalar
    except (AttributeError, ValueError):
        return str(value)


def _records(frame: Any) -> list[dict[str, Any]]:
    if frame is None or getattr(frame, "empty", True):
        return []
    return [{str(k): _plain(v) for k, v in row.items() if _plain(v) is not None} for row in frame.to_dict("records")]


def worker_catalogue() -> dict[str, Any]:
    """AIC's systems (backends, device memory, GPUs a node) and the models it ships configs for."""
    import os

    import yaml
    from aiconfigurator_core.sdk.common import DefaultHFModels
    from aiconfigurator_core.sdk.perf_database import (
        get_supported_databases,
        get_systems_paths,
    )

    supported = get_supported_databases()
    systems: dict[str, Any] = {}
    for root in get_systems_paths():
        for name, backends in supported.items():
            path = os.path.join(root, f"{name}.yaml")
            if name in systems or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as handle:
                spec = yaml.safe_load(handle) or {}
            systems[name] = {"backends": {b: list(v) for b, v in backends.items()},
                             "memory_bytes": (spec.get("gpu") or {}).get("mem_capacity"),
                             "gpus_per_node": (spec.get("node") or {}).get("num_gpus_per_node")}
    return {"systems": systems, "models": sorted(DefaultHFModels)}


def worker_search(model: str, system: str, total_gpus: int, backend: str, isl: int, osl: int,
                  ttft: float, tpot: float) -> dict[str, Any]:
    """AIC's aggregated and disaggregated candidates (Pareto fronts and its picks) for one query."""
    import time

    from aiconfigurator.cli.api import cli_default
    from aiconfigurator_core.sdk.errors import NoResultsError

    started = time.perf_counter()
    try:
        result = cli_default(model_path=model, total_gpus=total_gpus, system=system, backend=backend,
                             isl=isl, osl=osl, ttft=ttft, tpot=tpot, top_n=5)
    except NoResultsError as exc:
        return {"agg": [], "disagg": [], "error": str(exc), "seconds": time.perf_counter() - started}
    answer: dict[str, Any] = {"seconds": time.perf_counter() - started}
    for key in ("agg", "disagg"):
        rows = _records(result.pareto_fronts.get(key)) + _records(result.best_configs.get(key))
        answer[key] = rows
    return answer


def direct_search(model: str, system: str, total_gpus: int, backend: str, isl: int, osl: int,
                  ttft: float, tpot: float) -> Any:
    """AIC's search called as its own documentation shows, for the benchmark's floor."""
    from aiconfigurator.cli.api import cli_default

    return cli_default(model_path=model, total_gpus=total_gpus, system=system, backend=backend,
                       isl=isl, osl=osl, ttft=ttft, tpot=tpot, top_n=5)


class Engine:
    """One worker process for AIC, with every answer cached by its query for the worker's life."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._executor: Any = None
        self._answers: dict[Any, Any] = {}
        self._catalogue: Any = None

    def _pool(self) -> Any:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        load_status = status()
        if not load_status.available:
            raise PredictionsUnavailable(load_status.message, code=load_status.code, details=load_status.to_dict())
        if self._executor is None:
            # spawn, not fork: the API server has threads, and a forked copy of them can deadlock
            self._executor = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"), initializer=_quiet)
        return self._executor

    def _result(self, future: Any, timeout: float | None) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result(timeout=timeout)
        except BrokenProcessPool:
            self.close()
            raise PredictionsUnavailable("the AIC worker process died; the next request starts a new one",
                                         code="PLANNING_AIC_WORKER_DIED") from None
        except PredictionsUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - AIC's own error, reported with its words
            raise PredictionsUnavailable(f"aiconfigurator failed: {type(exc).__name__}: {exc}", code="PLANNING_AIC_FAILED") from None

    def catalogue(self, timeout: float | None = 120.0) -> dict[str, Any]:
        with self._lock:
            if self._catalogue is None:
                self._catalogue = self._pool().submit(worker_catalogue)
            future = self._catalogue
        try:
            return dict(self._result(future, timeout))
        except PredictionsUnavailable:
            with self._lock:
                self._catalogue = None
            raise

    def submit(self, key: Any, **query: Any) -> tuple[Any, bool]:
        """The future answering ``query`` (shared with an equal one in flight or done) and whether it was cached."""
        with self._lock:
            future = self._answers.get(key)
            if future is not None and not (future.done() and future.exception() is not None):
                return future, True
            future = self._pool().submit(worker_search, **query)
            self._answers[key] = future
            return future, False

    def answer(self, future: Any, cached: bool, timeout: float | None = None) -> dict[str, Any]:
        try:
            return {**self._result(future, timeout), "cached": cached}
        except PredictionsUnavailable as exc:
            return {"agg": [], "disagg": [], "error": exc.message, "cached": False}

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor, self._catalogue, self._answers = None, None, {}


_ENGINE: Engine | None = None


def engine() -> Engine:
    """The process's one AIC engine (and so one worker and one cache)."""
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine()
    return _ENGINE
