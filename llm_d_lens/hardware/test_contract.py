"""The built-in profiles and the guide's templates against the contract (guide section 7)."""

from __future__ import annotations


import pytest

from llm_d_lens.testing.plugins import PROFILES_DIR, bundled
from llm_d_lens.hardware.discovery import discover
from llm_d_lens.hardware.loader import load_profile_file, validate_payload
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.resolution import Resolver
from llm_d_lens.hardware.settings import PluginSettings

BUILT_INS = ["amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"]

# The hardware-provider guide's minimal template (section 3) with its comments removed: vendors
# copy it, so it must validate exactly as printed.
GUIDE_MINIMAL = {
    "id": "myvendor",
    "display_name": "MyVendor GPU",
    "vendor": "myvendor",
    "accelerator_keys": ["myvendor"],
    "benchmark_profile": "myvendor",
    "upstream_variant": "myvendor",
    "upstream_vendor": "myvendor",
    "request_model": "extended-resource",
    "device_classes": [],
    "resource_prefixes": ["myvendor.com/gpu"],
    "node_label_selector": {"myvendor.com/gpu.present": "true"},
    "access_modes": ["plugin"],
    "deployment": {
        "overlay_root": "guides/{guide}/modelserver/{variant}/vllm",
        "arch": "myvendor",
        "device_class": "",
        "claim_request_name": "",
        "node_selector": {"myvendor.com/gpu.present": "true"},
        "resource_name": "myvendor.com/gpu",
        "supports_pci_allowlist": False,
    },
    "evaluation_profile": "myvendor",
    "planning": {"aic_system_patterns": ["myvendor"]},
    "ui": {"icon": "Cpu", "labels": {"vendor": "MyVendor", "metric_group": "GPU"}},
}

# The full template: the fields above plus driver, presence and telemetry, two access modes.
GUIDE_FULL = {
    **GUIDE_MINIMAL,
    # the guide's identity table: a DRA hardware lists its device classes; a mode may request only its own
    "device_classes": ["gpu.myvendor.com"],
    "access_modes": ["plugin", "dra"],
    "deployment": {
        **GUIDE_MINIMAL["deployment"],
        "modes": {
            "plugin": {"request_model": "extended-resource", "resource_names": ["myvendor.com/gpu"]},
            "dra": {"request_model": "dra", "device_class": "gpu.myvendor.com", "claim_request_name": "gpu"},
        },
    },
    "driver": {
        "installer": "helm",
        "modes": {
            "plugin": {
                "manifest_ref": "my-device-plugin",
                "chart_version": "0.17.4",
                "repo": "https://myvendor.github.io/charts",
                "daemonset_matchers": [{"name_contains": "my-device-plugin"}],
                "options": {"myvendor_flag": True},
            },
            "dra": {
                "manifest_ref": "my-dra-driver",
                "chart_version": "25.8.0",
                "repo": "https://helm.myvendor.com",
                "min_kubernetes_version": "1.32.0",
            },
        },
    },
    "presence": {"node_label_selector": {"myvendor.com/gpu.present": "true"}, "ensure_refs": [], "timeout_seconds": 90},
    "telemetry": {
        "provider_id": "myvendor",
        "device_metrics": {"utilization": "myvendor_gpu_util"},
        "label_schema": {"node": "node", "device": "gpu"},
        "allocation_join": "none",
        "pod_metrics": {"gpu_cache_usage": "vllm:gpu_cache_usage_perc"},
    },
}


def test_the_guides_minimal_template_validates_as_printed():
    profile = validate_payload(GUIDE_MINIMAL, "guide minimal template")
    # deployment.modes is absent: the top-level request model and deployment fields form the one mode
    name, mode = profile.mode()
    assert name == "plugin"
    assert mode.request_model == "extended-resource"
    assert mode.resource_names == ["myvendor.com/gpu"]
    assert mode.device_class is None


def test_the_guides_full_template_validates():
    profile = validate_payload(GUIDE_FULL, "guide full template")
    assert set(profile.effective_modes()) == {"plugin", "dra"}
    assert profile.effective_modes()["dra"].device_class == "gpu.myvendor.com"
    assert profile.driver is not None and profile.driver.modes["dra"].min_kubernetes_version == "1.32.0"


@pytest.mark.parametrize("profile_id", BUILT_INS)
def test_every_bundled_profile_validates_and_is_named_after_its_file(profile_id):
    profile = load_profile_file(PROFILES_DIR / f"{profile_id}.json")
    assert profile.id == profile_id
    assert profile.schema_version == 1


def test_the_bundled_folder_holds_exactly_the_six_built_ins():
    assert sorted(p.stem for p in PROFILES_DIR.glob("*.json")) == BUILT_INS


def test_bundled_profiles_register_together_without_conflict():
    registry = Registry.from_discovery(discover(PluginSettings(), profile_entry_points=[], provider_entry_points=[]))
    assert registry.ids() == BUILT_INS
    assert registry.failures == []


def test_every_alias_of_every_built_in_resolves_to_its_own_profile():
    registry = Registry.from_discovery(discover(PluginSettings(), profile_entry_points=[], provider_entry_points=[]))
    resolver = Resolver(registry)
    for profile in registry.profiles():
        for alias in profile.aliases:
            assert resolver.require(alias).id == profile.id, alias
            assert resolver.require(alias.upper()).id == profile.id, alias
        for device_class in profile.device_classes:
            assert resolver.match_device_class(device_class).profile_id == profile.id
        for prefix in profile.resource_prefixes:
            assert resolver.match_resource(prefix + ("x" if prefix.endswith("/") else "")).profile_id == profile.id
        for variant, vendor in profile.label_pairs:
            assert resolver.match_upstream(variant, vendor).profile_id == profile.id


def test_device_classes_and_prefixes_are_unique_across_built_ins():
    classes, prefixes = [], []
    for profile_id in BUILT_INS:
        payload = bundled(profile_id)
        classes += payload["device_classes"]
        prefixes += payload["resource_prefixes"]
    assert len(classes) == len(set(classes))
    for a in prefixes:
        for b in prefixes:
            assert a == b or not a.startswith(b), f"{a} is shadowed by {b}"


def test_upstream_identity_matches_the_real_llm_d_labels():
    """Facts from the llm-d tree (shared/reference/llm-d-overlays.md), written out by hand."""
    expected = {
        "nvidia": ("gpu", [("gpu", "nvidia")]),
        "amd": ("amd", [("gpu", "amd")]),
        "intel-xpu": ("xpu", [("xpu", "intel")]),
        "intel-gaudi": ("hpu", [("hpu", "intel")]),
        "google-tpu": ("tpu", [("tpu", "google"), ("tpu-v6e", "google")]),
        "cpu": ("cpu", [("cpu", "intel")]),
    }
    for profile_id, (directory, pairs) in expected.items():
        profile = validate_payload(bundled(profile_id), profile_id)
        assert profile.overlay_dirs == [directory]
        assert profile.label_pairs == pairs


def test_benchmark_profiles_are_llm_d_benchmarks_own_names():
    expected = {"nvidia": "nvidia", "amd": "amd", "intel-xpu": "intel-xpu", "intel-gaudi": "intel-gaudi",
                "google-tpu": "google", "cpu": None}
    assert {pid: bundled(pid)["benchmark_profile"] for pid in BUILT_INS} == expected
    plugin_mode = bundled("intel-xpu")["deployment"]["modes"]["plugin"]
    # llm-d-benchmark's ACCELERATOR_PROFILES: intel.com/gpu, the older resource name, is intel-i915 too
    assert plugin_mode["benchmark_profiles_by_resource"] == {"gpu.intel.com/i915": "intel-i915", "gpu.intel.com/xe": "intel-xe",
                                                             "intel.com/gpu": "intel-i915"}


def test_every_driver_chart_is_pinned():
    for profile_id in BUILT_INS:
        driver = bundled(profile_id).get("driver")
        for mode in (driver or {}).get("modes", {}).values():
            version = mode["chart_version"]
            assert version[0].isdigit() or (version[0] == "v" and version[1].isdigit()), (profile_id, version)
            assert version.count(".") == 2
