"""The validated registry, kept on disk so the next ``lens hardware list/resolve`` needs no pydantic.

Why: validating profiles needs the pydantic models of the profile contract, and importing them
(with pydantic and Typer, which Lens's commands are built on) is most of what ``lens hardware
list`` costs. What those commands read of a registry is small and plain: the ``list`` rows, the
version hash and the lookup indexes. After a full run has built the registry from discovery, this
module stores exactly that; a later run with the same **key** (``result_cache.installed``:
Lens's version and files, every installed distribution and the files of the Lens plugins it
declares, Python and ``sys.path``, the ``LENS_*`` settings) reads it back in a few milliseconds,
and ``hardware/fastpath.py`` answers from it.

What is kept is what a real run computed, never recomputed another way, and only from a registry
without plugin failures (those are shown, and retried, by the full path every time). The file
repeats its whole key and is used only when it is equal; a corrupt file or one of another shape
is ignored. Unlike the replay (``result_cache.py``), the snapshot also serves with
``LENS_RESULT_CACHE=0``: the command still runs, only the registry is not rebuilt. Files live in
``LENS_CACHE_DIR`` as ``registry-*.json`` and are safe to delete.

Only the standard library is imported here (and ``result_cache``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from llm_d_lens import result_cache

FORMAT = 1
#: settings that change how a command is served, not what the registry holds
NOT_REGISTRY = ("LENS_RESULT_CACHE",)
#: newest snapshots kept (a new key, e.g. after an upgrade, is never read again once stale)
KEEP = 10


def key(env: Mapping[str, str]) -> str:
    return json.dumps([FORMAT, *result_cache.installed(env, ignore=NOT_REGISTRY)], separators=(",", ":"), default=str)


def _path(text: str, env: Mapping[str, str]) -> str:
    return result_cache._path(text, env, "registry")


def of_registry(registry: Any, list_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``hardware list`` and ``resolve`` read of ``registry``, as JSON-ready data."""
    index = registry.index
    profiles = registry.profiles()
    return {
        "count": len(registry),
        "version_hash": registry.version_hash(),
        "list_rows": list_rows,
        "index": {
            "aliases": index.aliases, "device_classes": index.device_classes, "dra_drivers": index.dra_drivers,
            "overlay_dirs": index.overlay_dirs,
            "label_pairs": [[variant, vendor, pid] for (variant, vendor), pid in index.label_pairs.items()],
            "prefixes_by_domain": {domain: [list(pair) for pair in bucket] for domain, bucket in index.prefixes_by_domain.items()},
            "selector_pairs": [[k, v, list(ids)] for (k, v), ids in index.selector_pairs.items()],
            "selector_keys": {k: list(ids) for k, ids in index.selector_keys.items()},
        },
        "profiles": [{"id": p.id, "node_label_selector": dict(p.node_label_selector),
                      "aic_system_patterns": list(p.planning.aic_system_patterns)} for p in profiles],
    }


def store(text: str, env: Mapping[str, str], data: dict[str, Any]) -> None:
    """Best effort, as the replay's store: a read-only or full disk only means the next run validates again."""
    result_cache.write_keyed(_path(text, env), {"key": text, "registry": data}, "registry", KEEP)


def load(text: str, env: Mapping[str, str]) -> SnapshotRegistry | None:
    """The stored registry for key ``text``; None when there is none, or it is not of the expected shape."""
    try:
        with open(_path(text, env), encoding="utf-8") as handle:
            stored = json.load(handle)
        if not isinstance(stored, dict) or stored.get("key") != text:
            return None
        return SnapshotRegistry(stored["registry"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


class NotInSnapshot(LookupError):
    """A name the snapshot does not know: the full path answers (with its coded error and nearest names)."""


class SnapshotRegistry:
    """Stands in for a :class:`~llm_d_lens.hardware.registry.Registry` where ``Resolver`` reads one."""

    def __init__(self, data: dict[str, Any]):
        raw = data["index"]
        self.count: int = data["count"]
        self.hash: str = data["version_hash"]
        self.list_rows: list[dict[str, Any]] = data["list_rows"]
        if not (isinstance(self.count, int) and isinstance(self.hash, str) and isinstance(self.list_rows, list)
                and all(isinstance(row, dict) for row in self.list_rows)):
            raise TypeError("not a registry snapshot")
        self.index = SimpleNamespace(
            aliases=dict(raw["aliases"]), device_classes=dict(raw["device_classes"]), dra_drivers=dict(raw["dra_drivers"]),
            overlay_dirs=dict(raw["overlay_dirs"]),
            label_pairs={(variant, vendor): pid for variant, vendor, pid in raw["label_pairs"]},
            prefixes_by_domain={domain: [(prefix, pid) for prefix, pid in bucket]
                                for domain, bucket in raw["prefixes_by_domain"].items()},
            selector_pairs={(k, v): list(ids) for k, v, ids in raw["selector_pairs"]},
            selector_keys={k: list(ids) for k, ids in raw["selector_keys"].items()},
        )
        self._profiles = {
            p["id"]: SimpleNamespace(id=p["id"], node_label_selector=dict(p["node_label_selector"]),
                                     planning=SimpleNamespace(aic_system_patterns=list(p["aic_system_patterns"])))
            for p in data["profiles"]
        }

    def __len__(self) -> int:
        return self.count

    def version_hash(self) -> str:
        return self.hash

    def profiles(self) -> list[Any]:
        return [self._profiles[k] for k in sorted(self._profiles)]

    def get(self, key: str) -> Any:
        """As ``Registry.get`` for a known name; an unknown one raises :class:`NotInSnapshot`."""
        profile_id = self.index.aliases.get(key.strip().lower())
        if profile_id is None or profile_id not in self._profiles:
            raise NotInSnapshot(key)
        return self._profiles[profile_id]


# -- the bundled registry: what a first run after installing Lens, with no plugin, builds ------------

#: written by ``make startup-snapshots`` (``python -m llm_d_lens.hardware.snapshot --write``); a test checks it is current
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bundled_registry.json")
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: settings that change which built-in hardware registers (the other plugin settings concern third-party plugins only)
BUILT_IN_SETTINGS = ("LENS_PROFILES_BLOCK",)


def declared_plugins(path: list[str]) -> list[list[str]] | None:
    """Every Lens entry point a distribution on ``path`` declares, as [dist-info folder, group, name, value].

    None when ``importlib.metadata`` could see distributions this scan cannot: a zip file on
    ``path`` or a finder of its own on ``sys.meta_path``.
    """
    import sys

    if any(type(finder).__name__ != "PathFinder" and getattr(finder, "find_distributions", None) is not None
           and not (isinstance(finder, type) and finder.__name__ == "PathFinder") for finder in sys.meta_path):
        return None
    found: list[list[str]] = []
    for entry_dir in path:
        if os.path.isfile(entry_dir or "."):
            return None
        try:
            names = sorted(os.listdir(entry_dir or "."))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry_dir or ".", name, "entry_points.txt"), encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                continue
            section = ""
            for line in text.splitlines():
                line = line.strip()
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section in result_cache.PLUGIN_GROUPS and "=" in line:
                    ep_name, _, value = line.partition("=")
                    found.append([name, section, ep_name.strip(), value.strip()])
    return found


def _inputs(relative_paths: list[str]) -> dict[str, int] | None:
    return result_cache.content_sums(PACKAGE, relative_paths)


def _profile_files() -> list[str]:
    folder = os.path.join(PACKAGE, "hardware", "profiles")
    try:
        return sorted(f"hardware/profiles/{name}" for name in os.listdir(folder) if name.endswith(".json"))
    except OSError:
        return []


def build_bundled() -> dict[str, Any]:
    """The bundled registry, built by discovery in this process, with what it was built from.

    Run in a fresh process, as the ``lens`` script runs (``python -P -m llm_d_lens.hardware.snapshot``:
    ``-P`` keeps the working directory, and any build folder in it, off ``sys.path``): the code it
    records is the Lens modules that building the registry imported.
    """
    import sys

    from llm_d_lens.hardware.discovery import discover
    from llm_d_lens.hardware.registry import Registry
    from llm_d_lens.hardware.settings import OWN_PACKAGE, PluginSettings
    from llm_d_lens.hardware.views import registered_rows

    declared = declared_plugins(sys.path)
    if declared is None or not declared or any(not value.startswith(OWN_PACKAGE) for *_, value in declared) or \
            len({folder for folder, *_ in declared}) != 1:
        raise SystemExit(f"the bundled registry is built where only Lens declares hardware entry points; found {declared}")
    registry = Registry.from_discovery(discover(PluginSettings(), use_cache=False))
    if registry.failures:
        raise SystemExit(f"built-in hardware failed to load: {[str(f) for f in registry.failures]}")
    data = of_registry(registry, registered_rows(registry))
    code = sorted(os.path.relpath(module.__file__, PACKAGE) for name, module in list(sys.modules.items())
                  if name.split(".")[0] == "llm_d_lens" and getattr(module, "__file__", None))
    inputs = _inputs([*code, *_profile_files()])
    return {"format": FORMAT, "declared": declared, "inputs": inputs, "registry": data}


def bundled(env: Mapping[str, str], path: list[str] | None = None) -> SnapshotRegistry | None:
    """The shipped bundled registry, when what it was built from is what is here; else None.

    Here means: the same Lens code and profile files (by content), the same Lens entry points,
    declared by the same distribution, and no other distribution on ``path`` (``sys.path``)
    declaring any, nor a setting that leaves built-in hardware out.
    """
    import sys

    path = sys.path if path is None else path

    if any(env.get(name, "").strip() for name in BUILT_IN_SETTINGS):
        return None
    try:
        with open(BUNDLED, encoding="utf-8") as handle:
            stored = json.load(handle)
        if stored["format"] != FORMAT or stored["declared"] != declared_plugins(path):
            return None
        inputs = stored["inputs"]
        profiles = [rel for rel in inputs if rel.startswith("hardware/profiles/")]
        if profiles != _profile_files() or _inputs(list(inputs)) != inputs:
            return None
        return SnapshotRegistry(stored["registry"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def main(argv: list[str] | None = None) -> int:
    """``--write``: replace :data:`BUNDLED`; without it, print what would be written."""
    import sys

    return result_cache.write_or_print(BUNDLED, build_bundled(), sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
