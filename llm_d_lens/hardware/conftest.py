"""Fixtures for the hardware tests: throwaway plugin distributions with REAL entry points.

A plugin here is what pip would leave behind: a ``<name>-<version>.dist-info`` folder with
``METADATA`` and ``entry_points.txt`` next to the plugin's module, on ``sys.path``.
``importlib.metadata`` finds it exactly as it finds an installed package.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.hardware.discovery import discover
from llm_d_lens.hardware.provider_host import close_all
from llm_d_lens.hardware.registry import Registry, set_registry
from llm_d_lens.hardware.settings import PluginSettings
from llm_d_lens.testing.plugins import PluginFactory

@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginFactory]:
    root = tmp_path / "site"
    root.mkdir()
    factory = PluginFactory(root, monkeypatch)
    yield factory
    factory.cleanup()


@pytest.fixture
def fresh_registry() -> Iterator[Any]:
    """Build a registry from what is discoverable now and make it the process-wide one."""

    def build(env: dict[str, str] | None = None) -> Registry:
        registry = Registry.from_discovery(discover(PluginSettings.from_env(env or {})))
        set_registry(registry)
        return registry

    yield build
    set_registry(None)


@pytest.fixture(autouse=True)
def _forget_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # plugin load results are cached per installed set; a test's cache must not outlive it
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path_factory.mktemp("lens-cache")))
    yield
    set_registry(None)
    close_all()  # third-party providers' workers: a test's plugins must not outlive it
