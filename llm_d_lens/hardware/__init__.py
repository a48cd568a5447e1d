"""Hardware profiles: the contract every domain reads (schema, models, discovery, registry, resolution).

What a plugin author builds against is exported here, and only this is promised to stay: the
profile model, the provider base class a vendor provider subclasses, and the protocols of the
optional hooks (the guide's provider methods, a telemetry provider's ``derive``). Each name is
imported on first use, so importing any ``llm_d_lens.hardware`` module costs nothing extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_d_lens.hardware.models import HardwareProfile
    from llm_d_lens.hardware.providers.base import GuideProvider, HardwareProvider, ProfileProvider, TelemetryProvider

__all__ = ["GuideProvider", "HardwareProfile", "HardwareProvider", "ProfileProvider", "TelemetryProvider"]

_WHERE = {"HardwareProfile": "llm_d_lens.hardware.models", "GuideProvider": "llm_d_lens.hardware.providers.base",
          "HardwareProvider": "llm_d_lens.hardware.providers.base", "ProfileProvider": "llm_d_lens.hardware.providers.base",
          "TelemetryProvider": "llm_d_lens.hardware.providers.base"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
