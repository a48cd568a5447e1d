"""Providers: the profile-only one for declarative hardware; vendor ones come from entry points only."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from llm_d_lens.hardware.discovery import PROVIDERS_GROUP
from llm_d_lens.hardware.providers.base import HardwareProvider, ProfileProvider
from llm_d_lens.hardware.providers.nvidia import NvidiaProvider
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.testing.fake_runner import FakeRunner


def test_nvidia_is_the_only_declared_vendor_provider() -> None:
    declared = {ep.name: ep.value for ep in entry_points(group=PROVIDERS_GROUP) if ep.dist and ep.dist.name == "llm-d-lens"}
    assert declared == {"nvidia": "llm_d_lens.hardware.providers.nvidia:NvidiaProvider"}


def test_registry_instantiates_the_entry_point_and_defaults_the_rest() -> None:
    registry = get_registry()
    assert type(registry.provider("nvidia")) is NvidiaProvider
    assert type(registry.provider("amd")) is ProfileProvider
    assert isinstance(registry.provider("amd"), HardwareProvider)


def test_importing_a_provider_module_registers_nothing() -> None:
    from llm_d_lens.hardware.registry import Registry

    registry = Registry([])
    import llm_d_lens.hardware.providers.nvidia  # noqa: F401  (already imported: must stay side-effect free)

    assert not registry.has_provider_entry("nvidia")


async def test_default_provider_installs_a_declarative_profile() -> None:
    data: dict[str, Any] = get_registry().get("intel-gaudi").to_data()
    data.update(id="acme", accelerator_keys=[], benchmark_profile=None, evaluation_profile=None)
    from llm_d_lens.hardware.models import HardwareProfile

    from llm_d_lens.monitoring.gpu_driver.provider import DriverOps

    profile = HardwareProfile.decode(data)
    provider = ProfileProvider(profile)
    fake = FakeRunner()
    result = await DriverOps(profile, provider).install_driver("dra", view=ClusterView(fake), dry_run=True)
    assert result.commands[0][:4] == ["helm", "upgrade", "--install", "intel-gaudi-resource-driver"]
    assert fake.calls == [] and provider.describe()["declarative"] is True


def test_the_contract_imports_no_domain_module() -> None:
    """hardware/ is the contract every domain reads; it must not reach into one (issue 11)."""
    import ast
    from pathlib import Path

    domains = ("cluster", "deploy", "evaluate", "monitoring", "api", "console", "planning")
    offenders = []
    for path in sorted(Path(__file__).parents[1].rglob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[:2][-1] in domains and n.startswith("llm_d_lens.")]
    assert offenders == []
