"""Telemetry providers: the declarative default, and a plugin's own that derives a quantity.

The plugin is a real throwaway distribution: a hardware profile (AMD's exporter, renamed) whose
``telemetry.provider_id`` names a provider the same distribution registers in the
``llm_d_lens.telemetry.providers`` entry-point group. Read from a real exporter page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.hardware.conftest import _forget_registry, fresh_registry, plugins  # noqa: F401
from llm_d_lens.testing.plugins import bundled, minimal_profile
from llm_d_lens.monitoring.accelerator.registry import GROUP, TelemetryRegistry, set_telemetry_registry
from llm_d_lens.testing.telemetry_pages import needs_prometheus

PAGE = Path(__file__).parent / "testdata" / "amd-cpx-partitions.prom"

DERIVING = """
class FreeMemory:
    def derive(self, profile, devices):
        for device in devices:
            total, used = device.values.get("memory_total_bytes"), device.values.get("memory_used_bytes")
            if total is not None and used is not None:
                device.values["memory_free_bytes"] = total - used
        return []


class Broken:
    def derive(self, profile, devices):
        for device in devices:
            device.values["memory_used_bytes"] = -1.0
        raise ZeroDivisionError("vendor math")
"""


def acme(provider_id: str) -> dict:
    telemetry = dict(bundled("amd")["telemetry"], provider_id=provider_id)
    telemetry.pop("modes", None)  # acme has one access mode
    # joins only its own DRA driver: another vendor's (amd's) would be cross-talk, refused by the contract
    telemetry["allocation"] = dict(telemetry["allocation"], drivers=["npu.acme.example.com"])
    return minimal_profile("acme", telemetry=telemetry, inventory={"dra_drivers": ["npu.acme.example.com"]})


@pytest.fixture(autouse=True)
def _forget_telemetry_registry():
    yield
    set_telemetry_registry(None)


def install(plugins, provider_id: str) -> None:  # noqa: F811
    plugins.make("acme-lens", profiles={"acme": [acme(provider_id)]}, module_source=DERIVING,
                 groups={GROUP: {"acme-free-memory": "acme_lens_lens:FreeMemory", "acme-broken": "acme_lens_lens:Broken"}})


def devices(capsys, *extra: str) -> tuple[int, dict, str]:
    code = main(["telemetry", "devices", "--snapshot", str(PAGE), "--hardware", "acme", *extra, "-o", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else {}, captured.err


def test_every_built_in_uses_the_declarative_provider():
    from llm_d_lens.hardware.registry import get_registry

    assert {p.telemetry.provider_id for p in get_registry().profiles() if p.telemetry} == {"declarative"}
    assert TelemetryRegistry(eps=[]).ids() == ["declarative"]


def test_a_plugin_provider_derives_a_quantity(plugins, fresh_registry, capsys):  # noqa: F811
    install(plugins, "acme-free-memory")
    fresh_registry()
    code, report, err = devices(capsys)
    assert code == 0, err
    assert report["devices"], "the page has AMD devices"
    for device in report["devices"]:
        assert device["derived"] == {"memory_free_bytes": device["memory_total_bytes"] - device["memory_used_bytes"]}
    declarative = main(["telemetry", "devices", "--snapshot", str(PAGE), "--hardware", "amd", "-o", "json"])
    assert declarative == 0
    assert all(d["derived"] == {} for d in json.loads(capsys.readouterr().out)["devices"])


def test_a_provider_that_raises_costs_only_its_quantities(plugins, fresh_registry, capsys):  # noqa: F811
    install(plugins, "acme-broken")
    fresh_registry()
    code, report, err = devices(capsys)
    assert code == 0
    assert all(d["memory_used_bytes"] >= 0 for d in report["devices"])  # its partial writes are undone
    assert ("acme: telemetry provider Broken failed in derive(): ZeroDivisionError: vendor math; its quantities are "
            "left out") in report["warnings"]


def test_a_provider_id_nobody_registered_is_refused_naming_the_profile_field_and_value(plugins, fresh_registry, capsys):  # noqa: F811
    install(plugins, "acme-typo")
    fresh_registry()
    code, _, err = devices(capsys)
    assert code == 1 and "Traceback" not in err
    assert err.startswith("error: TELEMETRY_PROVIDER_UNKNOWN: profile 'acme': $.telemetry.provider_id names no "
                          "registered telemetry provider (value: 'acme-typo')")
    assert "acme-free-memory" in err and "declarative" in err


@needs_prometheus
def test_a_plugin_provider_derives_from_the_combined_refresh(plugins, fresh_registry, prometheus):  # noqa: F811
    """A provider sends no queries of its own: its hardware is read in one combined query and it derives from that."""
    from llm_d_lens.testing.telemetry_pages import refresh

    install(plugins, "acme-free-memory")
    fresh_registry()
    report = refresh(prometheus.url, ["acme"])
    assert report.queries_sent == 2 and report.devices, "acme reads the AMD samples' metrics"
    for device in report.devices:
        assert device.values["memory_free_bytes"] == device.values["memory_total_bytes"] - device.values["memory_used_bytes"]
    assert [d.values for d in report.devices] == [d.values for d in refresh(prometheus.url, ["acme"], combined=False).devices]


HOSTILE_DERIVE = """
import os


class Exits:
    def derive(self, profile, devices):
        os._exit(9)


class Poisons:
    def derive(self, profile, devices):
        for device in devices:
            device.values["memory_used_bytes"] = "a lot"
        return []
"""


@pytest.mark.parametrize("provider_id, says, ended", [
    ("acme-exits", "telemetry provider Exits ended the process with exit code 9 in derive()", True),
    ("acme-poisons", "telemetry provider Poisons: derive() left values Lens does not take ($[0].values.memory_used_bytes: "
                     "'a lot' is not a finite number)", False),
])
def test_a_telemetry_provider_that_dies_or_poisons_the_values_costs_only_its_quantities(
        provider_id, says, ended, plugins, fresh_registry, capsys):  # noqa: F811
    from llm_d_lens.monitoring.accelerator.registry import get_telemetry_registry

    plugins.make("acme-lens", profiles={"acme": [acme(provider_id)]}, module_source=HOSTILE_DERIVE,
                 groups={GROUP: {"acme-exits": "acme_lens_lens:Exits", "acme-poisons": "acme_lens_lens:Poisons"}})
    registry = fresh_registry()
    code, report, err = devices(capsys)
    assert code == 0, err
    assert report["devices"] and all(isinstance(d["memory_used_bytes"], (int, float)) for d in report["devices"])
    assert any(w.startswith(f"acme: {says}") for w in report["warnings"]), report["warnings"]
    named = [p for p in get_telemetry_registry().problems(registry.profiles()) if p["name"] == provider_id]
    assert bool(named) == ended and (not ended or "exit code 9" in named[0]["reason"])
