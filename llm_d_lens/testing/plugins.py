"""Throwaway plugin distributions with REAL entry points, and profiles to put in them (for tests).

A plugin here is what pip would leave behind: a ``<name>-<version>.dist-info`` folder with
``METADATA`` and ``entry_points.txt`` next to the plugin's module, on ``sys.path``.
``importlib.metadata`` finds it exactly as it finds an installed package. The ``plugins`` fixture
(``hardware/conftest.py``) hands a test a :class:`PluginFactory` over a fresh folder.
"""

from __future__ import annotations

import copy
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PROFILES_DIR = Path(__file__).resolve().parents[1] / "hardware" / "profiles"


def bundled(profile_id: str) -> dict[str, Any]:
    return json.loads((PROFILES_DIR / f"{profile_id}.json").read_text())


def minimal_profile(profile_id: str = "acme", **overrides: Any) -> dict[str, Any]:
    """A small valid external-plugin profile (the guide's minimal template, renamed)."""
    payload: dict[str, Any] = {
        "id": profile_id,
        "display_name": f"{profile_id.title()} Accelerator",
        "vendor": profile_id,
        "accelerator_keys": [f"{profile_id}-npu"],
        "benchmark_profile": profile_id,
        "upstream_variant": f"{profile_id}-npu",
        "upstream_vendor": profile_id,
        "request_model": "extended-resource",
        "device_classes": [],
        "resource_prefixes": [f"{profile_id}.example.com/npu"],
        "node_label_selector": {f"{profile_id}.example.com/npu.present": "true"},
        "access_modes": ["plugin"],
        "deployment": {
            "overlay_root": "guides/{guide}/modelserver/{variant}/{model_server}",
            "arch": f"{profile_id}-npu",
            "device_class": "",
            "claim_request_name": "",
            "node_selector": {f"{profile_id}.example.com/npu.present": "true"},
            "resource_name": f"{profile_id}.example.com/npu",
            "supports_pci_allowlist": False,
        },
        "evaluation_profile": profile_id,
        "planning": {"aic_system_patterns": [f"^{profile_id}"]},
        "ui": {"icon": "Cpu", "labels": {"vendor": profile_id.title(), "metric_group": "NPU"}},
    }
    payload.update(overrides)
    return payload


class PluginFactory:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch):
        self.root = root
        self.monkeypatch = monkeypatch
        self.modules: list[str] = []
        monkeypatch.syspath_prepend(str(root))

    def make(
        self,
        dist: str,
        *,
        version: str = "1.0.0",
        profiles: dict[str, list[dict[str, Any]]] | None = None,
        module_source: str = "",
        profile_entry_points: dict[str, str] | None = None,
        provider_entry_points: dict[str, str] | None = None,
        module: str | None = None,
        groups: dict[str, dict[str, str]] | None = None,
    ) -> str:
        """Create an installed-looking distribution; returns its module name.

        ``profiles`` maps entry-point name -> payloads its ``load_profiles`` returns (written as
        JSON package data, read back at load time like a real plugin does).
        """
        module = module or dist.replace("-", "_") + "_lens"
        package = self.root / module
        package.mkdir()
        source = ["import json, pathlib", "HERE = pathlib.Path(__file__).parent", ""]
        eps = dict(profile_entry_points or {})
        for name, payloads in (profiles or {}).items():
            func = "load_" + name.replace("-", "_")
            (package / f"{name}.json").write_text(json.dumps(payloads))
            source.append(f"def {func}():\n    return json.loads((HERE / {name + '.json'!r}).read_text())\n")
            eps.setdefault(name, f"{module}:{func}")
        source.append(textwrap.dedent(module_source))
        (package / "__init__.py").write_text("\n".join(source))
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = []
        if eps:
            lines.append("[llm_d_lens.hardware.profiles]")
            lines += [f"{k} = {v}" for k, v in eps.items()]
        if provider_entry_points:
            lines.append("[llm_d_lens.hardware.providers]")
            lines += [f"{k} = {v}" for k, v in provider_entry_points.items()]
        for group, declared in (groups or {}).items():  # other groups (telemetry providers...)
            lines.append(f"[{group}]")
            lines += [f"{k} = {v}" for k, v in declared.items()]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        self.modules.append(module)
        return module

    def cleanup(self) -> None:
        for module in self.modules:
            for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
                del sys.modules[name]


def deep(payload: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(payload)
