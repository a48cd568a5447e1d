"""Plugin-loading settings, read from the environment once per discovery.

==============================  ==============================================================
``LENS_PLUGINS_AUTOLOAD``       ``0``/``false``/``no``/``off`` turns off third-party plugins;
                                built-in hardware still loads. Default: every plugin loads.
``LENS_PLUGINS_ALLOW``          Comma-separated distribution names. When set, only these
                                third-party distributions load.
``LENS_PROFILES_BLOCK``         Comma-separated profile ids never registered, built-in or not.
==============================  ==============================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

#: The distribution that ships the built-in hardware; never subject to the plugin settings.
OWN_DISTRIBUTION = "llm-d-lens"


def _names(value: str | None) -> frozenset[str]:
    return frozenset(part.strip() for part in (value or "").split(",") if part.strip())


def normalize_dist(name: str) -> str:
    """PEP 503 normalisation, so ``My_Plugin`` and ``my-plugin`` name one distribution."""
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


@dataclass(frozen=True)
class PluginSettings:
    autoload: bool = True
    allow: frozenset[str] | None = None
    block: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PluginSettings:
        env = os.environ if env is None else env
        autoload = env.get("LENS_PLUGINS_AUTOLOAD", "1").strip().lower() not in {"0", "false", "no", "off"}
        allow_raw = env.get("LENS_PLUGINS_ALLOW")
        allow = frozenset(normalize_dist(n) for n in _names(allow_raw)) if allow_raw is not None and allow_raw.strip() else None
        return cls(autoload=autoload, allow=allow, block=_names(env.get("LENS_PROFILES_BLOCK")))

    def admits_distribution(self, dist: str) -> tuple[bool, str]:
        """Whether a third-party distribution may load, and why not when it may not."""
        if normalize_dist(dist) == OWN_DISTRIBUTION:
            return True, ""
        if not self.autoload:
            return False, "third-party autoload is off (LENS_PLUGINS_AUTOLOAD)"
        if self.allow is not None and normalize_dist(dist) not in self.allow:
            return False, "not in LENS_PLUGINS_ALLOW"
        return True, ""
