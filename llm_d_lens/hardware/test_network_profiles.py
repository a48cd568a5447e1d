"""Network device profiles (``kind: network``): the built-ins, a plugin's own, and what refuses one."""

from __future__ import annotations

import pytest

from llm_d_lens.hardware.discovery import discover
from llm_d_lens.hardware.loader import validate_network_payload
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.settings import PluginSettings
from llm_d_lens.testing.plugins import minimal_profile

BUILT_IN = ["dranet", "gke-rdma", "infiniband", "rdma-host-device", "rdma-shared-device", "sriov-rdma-vf"]


def nic(profile_id: str, **changes):
    payload = {"kind": "network", "id": profile_id, "display_name": "Acme RDMA NIC", "vendor": "acme",
               "resource_names": ["acme.example/rdma-vf"], "network": {"pairing": "per-device", "source": "acme docs"}}
    return {**payload, **changes}


def build() -> Registry:
    return Registry.from_discovery(discover(PluginSettings.from_env({})))


def test_the_built_in_network_devices_are_a_kind_apart_from_the_accelerators():
    registry = build()
    assert [p.id for p in registry.network_profiles()] == BUILT_IN
    # accelerator surfaces (hardware list, console tabs, telemetry rules) read profiles(): no NIC among them
    assert not set(BUILT_IN) & set(registry.ids())
    assert registry.network_profile("gke-rdma").network.device_group_pattern
    assert registry.network_profile("rdma-shared-device").network.pairing == "shared"


def test_a_plugin_adds_a_network_device_through_the_same_door(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme"), nic("acme-nic")]})
    registry = build()
    assert "acme" in registry.ids() and "acme-nic" not in registry.ids()
    assert "acme-nic" in [p.id for p in registry.network_profiles()]


def test_a_plugin_network_device_claiming_a_built_in_name_is_a_conflict_the_built_in_wins(plugins):
    plugins.make("rogue-lens", profiles={"acme": [minimal_profile("acme"), nic("rogue-nic", resource_names=["rdma/ib"])]})
    registry = build()
    assert "rogue-nic" not in [p.id for p in registry.network_profiles()]
    [failure] = [f for f in registry.failures if f.kind == "conflict"]
    assert "rdma/ib" in failure.reason and "infiniband" in failure.reason


@pytest.mark.parametrize("changes, path", [
    ({"network": {"pairing": "one-to-one", "source": "x"}}, "$.network.pairing"),
    ({"resource_patterns": ["(unclosed"]}, "$.resource_patterns"),
    ({"resource_patterns": ["^(a+)+$"]}, "$.resource_patterns"),  # catastrophic backtracking, as for an accelerator
    ({"surprise": 1}, "$"),
])
def test_a_bad_network_profile_is_refused_naming_the_field(changes, path):
    with pytest.raises(ProfileInvalid) as caught:
        validate_network_payload(nic("bad", **changes), "test:bad")
    assert path in str(caught.value.to_dict() if hasattr(caught.value, "to_dict") else caught.value)


def test_lens_hardware_network_lists_them_and_hardware_list_does_not(capsys):
    import json

    from llm_d_lens.cli.app import main
    from llm_d_lens.hardware.registry import set_registry

    set_registry(None)
    assert main(["hardware", "network", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == BUILT_IN
    assert {r["id"]: r["benchmark_resource"] for r in rows}["rdma-shared-device"] == "rdma/rdma_shared_device_a"
    assert rows[0]["from"] == ["bundled profile llm_d_lens/hardware/profiles/network/dranet.json"]
    assert main(["hardware", "list", "-o", "json"]) == 0
    assert not set(BUILT_IN) & {r["id"] for r in json.loads(capsys.readouterr().out)}


def test_the_api_answers_the_network_profiles_beside_the_accelerators():
    from fastapi.testclient import TestClient

    from llm_d_lens.api.app import create_app
    from llm_d_lens.hardware.registry import set_registry

    set_registry(None)
    client = TestClient(create_app())
    body = client.get("/api/v1/hardware/network").json()
    assert [p["id"] for p in body["profiles"]] == BUILT_IN
    capabilities = client.get("/api/v1/hardware/capabilities").json()
    assert not set(BUILT_IN) & {p["id"] for p in capabilities["profiles"]}
