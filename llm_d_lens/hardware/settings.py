"""Plugin-loading settings, read from the environment once per discovery.

==============================  ==============================================================
``LENS_PLUGINS_AUTOLOAD``       ``0``/``false``/``no``/``off`` turns off third-party plugins;
                                built-in hardware still loads. Default: every plugin loads.
``LENS_PLUGINS_ALLOW``          Comma-separated distribution names. When set, only these
                                third-party distributions load.
``LENS_PROFILES_BLOCK``         Comma-separated profile ids never registered, built-in or not;
                                compared case-insensitively, like every name a user types.
``LENS_PLUGINS_TIMEOUT``        Seconds one plugin may take to load (default 5); see isolation.
``LENS_CACHE_DIR``              Where plugin load results are cached (default
                                ``$XDG_CACHE_HOME/llm-d-lens``); see isolation.
==============================  ==============================================================

Which entry points are Lens's own is decided by what they name (Lens's own package), never by
the distribution's name: a third-party distribution called ``LLM_D.Lens`` is still third-party.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from llm_d_lens import settings

#: The distribution that ships the built-in hardware (PEP 503 normalised); never subject to the
#: plugin settings, but only for entry points that name Lens's own package (see ``is_own``).
OWN_DISTRIBUTION = "llm-d-lens"
OWN_PACKAGE = "llm_d_lens"


def _names(value: str | None) -> frozenset[str]:
    return frozenset(part.strip() for part in (value or "").split(",") if part.strip())


def normalize_dist(name: str) -> str:
    """PEP 503 normalisation, so ``My_Plugin``, ``my.plugin`` and ``my--plugin`` name one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_own(dist_name: str, entry_point_value: str) -> bool:
    """Whether an entry point is Lens's own: declared by Lens's distribution *and* naming Lens's code.

    A name alone proves nothing (any distribution can be called ``LLM_D.Lens``), while a module
    inside the ``llm_d_lens`` package can only come from Lens's own files.
    """
    module = entry_point_value.partition(":")[0].strip()
    inside = module == OWN_PACKAGE or module.startswith(OWN_PACKAGE + ".")
    return inside and normalize_dist(dist_name) == OWN_DISTRIBUTION


class PluginSettings(msgspec.Struct, frozen=True):
    autoload: bool = True
    allow: frozenset[str] | None = None
    block: frozenset[str] = msgspec.field(default_factory=frozenset)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PluginSettings:
        autoload = settings.flag("LENS_PLUGINS_AUTOLOAD", env, default=True)
        allow_raw = settings.text("LENS_PLUGINS_ALLOW", env)
        allow = frozenset(normalize_dist(n) for n in _names(allow_raw)) if allow_raw is not None else None
        block = frozenset(name.lower() for name in _names(settings.text("LENS_PROFILES_BLOCK", env)))
        return cls(autoload=autoload, allow=allow, block=block)

    def blocks(self, profile_id: str) -> bool:
        return profile_id.strip().lower() in self.block

    def admits_distribution(self, dist: str) -> tuple[bool, str]:
        """Whether a third-party distribution may load, and why not when it may not."""
        if not self.autoload:
            return False, "third-party autoload is off (LENS_PLUGINS_AUTOLOAD)"
        if self.allow is not None and normalize_dist(dist) not in self.allow:
            return False, "not in LENS_PLUGINS_ALLOW"
        return True, ""
