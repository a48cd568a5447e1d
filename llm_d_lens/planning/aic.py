"""The one module that may import ``aiconfigurator`` (AIC), the optional performance predictor.

AIC comes with the ``planning`` extra (``pip install 'llm-d-lens[planning]'``): about 825 MB with
its dependencies, deprecated upstream in favour of a successor, so every call to it lives here and
nothing else in Lens imports it. Without it, plans still answer with the memory fit, and this
module says, with a stable code, that predictions need the extra. It never invents a prediction.

Whether AIC is installed is read from its distribution metadata (``importlib.metadata``), which
costs nothing; the package itself, heavy to import, is imported only when a prediction is asked.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from llm_d_lens.planning.errors import PredictionsUnavailable

DISTRIBUTION = "aiconfigurator"
INSTALL_HINT = "pip install 'llm-d-lens[planning]'"
NOT_INSTALLED = "PLANNING_AIC_NOT_INSTALLED"
BROKEN = "PLANNING_AIC_BROKEN"


@dataclass(frozen=True)
class AicStatus:
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
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
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
