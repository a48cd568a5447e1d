"""Discovery through REAL entry points: throwaway distributions on sys.path (see conftest)."""

from __future__ import annotations

import sys

import pytest

from llm_d_lens.testing.plugins import bundled, minimal_profile
from llm_d_lens.hardware.discovery import discover
from llm_d_lens.hardware.errors import AcceleratorNotRegistered, AlreadyRegistered, PluginLoadFailed
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.settings import PluginSettings


def build(env: dict[str, str] | None = None) -> Registry:
    return Registry.from_discovery(discover(PluginSettings.from_env(env or {})))


def test_an_external_plugin_is_discovered_with_its_distribution(plugins):
    plugins.make("acme-lens", version="2.3.1", profiles={"acme": [minimal_profile("acme")]})
    registry = build()
    assert "acme" in registry.ids()
    assert [str(o) for o in registry.origins("acme")] == ["entry point 'acme' of acme-lens 2.3.1"]
    assert registry.get("acme-npu").id == "acme"


def test_the_same_payload_twice_is_registered_once_with_both_origins(plugins):
    plugins.make("nvidia-extras", profiles={"nvidia": [bundled("nvidia")]})
    registry = build()
    assert registry.ids().count("nvidia") == 1
    origins = [str(o) for o in registry.origins("nvidia")]
    assert "bundled profile llm_d_lens/hardware/profiles/nvidia.json" in origins
    assert "entry point 'nvidia' of nvidia-extras 1.0.0" in origins


def conflict_of(plugins, payload, ep_name=None):
    """A third-party profile clashing with a built-in: skipped and reported, the built-ins untouched."""
    plugins.make("rogue-lens", version="0.9.0", profiles={ep_name or payload["id"]: [payload]})
    registry = build()
    assert {"amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"} <= set(registry.ids())
    [failure] = [f for f in registry.failures if f.kind == "conflict"]
    return failure


def test_same_id_with_different_content_is_a_conflict_the_built_in_wins(plugins):
    payload = bundled("amd")
    payload["display_name"] = "Not quite AMD"
    failure = conflict_of(plugins, payload)
    assert failure.reason.startswith("registration conflict: id \"amd\" is claimed by built-in profile 'amd'")
    assert "bundled profile llm_d_lens/hardware/profiles/amd.json" in failure.reason
    assert "entry point 'amd' of rogue-lens 0.9.0" in failure.reason
    assert build().get("amd").display_name != "Not quite AMD"


@pytest.mark.parametrize("field,value,expected_field,owner", [
    ("device_classes", ["gpu.nvidia.com"], "device class", "nvidia"),
    # beside its own prefix, which its mode's resource falls under
    ("resource_prefixes", ["rogue.example.com/npu", "amd.com/gpu-partition"], "resource prefix", "amd"),  # shadowed by amd.com/gpu
    ("resource_prefixes", ["rogue.example.com/npu", "google.com/"], "resource prefix", "google-tpu"),  # shadows google.com/tpu
    ("accelerator_keys", ["cuda"], "accelerator key", "nvidia"),
    ("accelerator_keys", ["CUDA"], "accelerator key", "nvidia"),
    ("upstream_variant", "xpu", "upstream overlay directory", "intel-xpu"),
    ("upstream_labels", [{"variant": "gpu", "vendor": "amd"}], "upstream variant/vendor label pair", "amd"),
])
def test_each_identity_conflict_names_both_owners_the_field_the_value_and_the_fix(plugins, field, value, expected_field,
                                                                                  owner):
    payload = minimal_profile("rogue", **{field: value})
    if field == "upstream_labels":
        payload["upstream_vendor"] = "amd"
    failure = conflict_of(plugins, payload)
    assert failure.details["field"] == expected_field and failure.profile_id == "rogue"
    assert f"registration conflict: {expected_field}" in failure.reason
    assert f"built-in profile {owner!r}" in failure.reason and "profile 'rogue'" in failure.reason
    assert "rogue-lens 0.9.0" in failure.reason and "LENS_PROFILES_BLOCK=rogue" in failure.reason
    assert [o["id"] for o in failure.details["owners"]] == [owner, "rogue"]
    with pytest.raises(PluginLoadFailed, match="registration conflict"):
        build().get("rogue")  # asking for it by name says why it is not there


def test_two_third_party_profiles_in_conflict_are_both_skipped(plugins):
    plugins.make("one-lens", profiles={"one": [minimal_profile("one", device_classes=["npu.shared.example"])]})
    plugins.make("two-lens", profiles={"two": [minimal_profile("two", device_classes=["npu.shared.example"])]})
    plugins.make("fine-lens", profiles={"fine": [minimal_profile("fine")]})
    registry = build()
    assert "fine" in registry.ids() and "one" not in registry.ids() and "two" not in registry.ids()
    conflicts = {f.profile_id: f for f in registry.failures if f.kind == "conflict"}
    assert set(conflicts) == {"one", "two"}
    assert "both are skipped" in conflicts["one"].reason and "'two'" in conflicts["one"].reason
    blocked = build({"LENS_PROFILES_BLOCK": "TWO"})  # the fix it names: block one, keep the other
    assert "one" in blocked.ids() and not [f for f in blocked.failures if f.kind == "conflict"]


def test_a_shared_variant_label_alone_is_not_a_conflict(plugins):
    """`gpu` is used by NVIDIA, AMD and newer vendors: only the (variant, vendor) pair is identity."""
    payload = minimal_profile("metax", upstream_variant="metax", upstream_vendor="metax",
                              upstream_labels=[{"variant": "gpu", "vendor": "metax"}])
    plugins.make("metax-lens", profiles={"metax": [payload]})
    registry = build()
    assert registry.index.label_pairs[("gpu", "metax")] == "metax"
    assert registry.index.label_pairs[("gpu", "nvidia")] == "nvidia"


def test_broken_plugins_are_isolated_and_their_failures_kept(plugins):
    plugins.make("good-lens", profiles={"good": [minimal_profile("good")]})
    plugins.make("importfail-lens", profile_entry_points={"boom": "importfail_lens_missing_module:load"})
    plugins.make("raises-lens", module_source="def load():\n    raise RuntimeError('vendor bug')\n",
                 profile_entry_points={"raiser": "raises_lens_lens:load"})
    bad = minimal_profile("invalid")
    bad["deployment"]["arch"] = ""
    plugins.make("invalid-lens", profiles={"invalid": [bad]})
    registry = build()
    assert "good" in registry.ids()
    reasons = {f.name: f for f in registry.failures}
    assert set(reasons) == {"boom", "raiser", "invalid"}
    assert "ModuleNotFoundError" in reasons["boom"].reason and reasons["boom"].distribution == "importfail-lens 1.0.0"
    assert "RuntimeError: vendor bug" in reasons["raiser"].reason
    assert "$.deployment.arch: must not be empty" in reasons["invalid"].reason
    with pytest.raises(PluginLoadFailed) as caught:
        registry.get("invalid")
    assert "invalid-lens 1.0.0" in str(caught.value) and "$.deployment.arch" in str(caught.value)


def test_an_entry_point_must_be_named_after_a_profile_it_returns(plugins):
    plugins.make("misnamed-lens", profiles={"wrong-name": [minimal_profile("acme")]})
    registry = build()
    assert "acme" not in registry.ids()
    assert "entry point name 'wrong-name' must equal a profile id it returns (got acme)" in registry.failures[0].reason


PROVIDER_SOURCE = """
IMPORTED = True

class AcmeProvider:
    instances = 0
    def __init__(self):
        type(self).instances += 1
    def profile(self):
        from llm_d_lens.hardware.registry import get_profile
        return get_profile("acme")
"""


def test_providers_are_imported_lazily_and_instantiated_once(plugins, fresh_registry):
    module = plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]}, module_source="",
                          provider_entry_points={"acme": "acme_provider_mod:AcmeProvider"})
    (plugins.root / "acme_provider_mod.py").write_text(PROVIDER_SOURCE)
    plugins.modules.append("acme_provider_mod")
    registry = fresh_registry()
    assert module not in sys.modules  # the profile loader ran in the isolated child...
    assert "acme_provider_mod" not in sys.modules  # ...the provider was not, yet
    provider = registry.provider("acme-npu")
    assert "acme_provider_mod" not in sys.modules  # ...nor ever: it is built in its distribution's worker
    assert registry.provider_status("acme")["provider"] == "AcmeProvider" and provider.profile().id == "acme"
    assert registry.provider("acme") is provider


def test_registering_a_provider_twice_raises_already_registered(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]},
                 provider_entry_points={"acme": "acme_lens_lens:Provider"},
                 module_source="class Provider:\n    def profile(self): ...\n")
    registry = build()
    with pytest.raises(AlreadyRegistered, match="already registered"):
        registry.register_provider("acme", object())
    registry.register_provider("amd", object())  # a built-in that declares no provider
    with pytest.raises(AlreadyRegistered):
        registry.register_provider("amd", object())
    with pytest.raises(AlreadyRegistered):  # a built-in whose provider comes from an entry point
        registry.register_provider("nvidia", object())


def test_a_provider_that_registers_itself_fails_to_load_with_that_reason(plugins, fresh_registry):
    source = ("class Selfish:\n    def __init__(self):\n"
              "        from llm_d_lens.hardware.registry import register_provider\n"
              "        register_provider('acme', self)\n")
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]},
                 provider_entry_points={"acme": "acme_lens_lens:Selfish"}, module_source=source)
    registry = fresh_registry()
    with pytest.raises(PluginLoadFailed, match="already registered"):
        registry.provider("acme")
    assert any(f.profile_id == "acme" and "AlreadyRegistered" in f.reason for f in registry.failures)


def test_a_provider_without_a_profile_is_a_load_failure(plugins):
    plugins.make("orphan-lens", provider_entry_points={"ghost": "orphan_lens_lens:Provider"},
                 module_source="class Provider: ...\n")
    registry = build()
    assert [f.reason for f in registry.failures] == ["provider for 'ghost', but no profile with that id is registered"]
    assert "orphan_lens_lens" not in sys.modules


def test_hardware_without_a_provider_gets_the_default_one(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    provider = build().provider("acme")
    assert type(provider).__name__ == "ProfileProvider" and provider.profile().id == "acme"


def test_the_allowlist_admits_only_named_distributions(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    plugins.make("other-lens", profiles={"other": [minimal_profile("other")]})
    registry = build({"LENS_PLUGINS_ALLOW": "Acme_Lens"})
    assert "acme" in registry.ids() and "other" not in registry.ids()
    assert "nvidia" in registry.ids()  # built-in hardware is never subject to the allowlist
    assert [(s.name, s.reason) for s in registry.skipped] == [("other", "not in LENS_PLUGINS_ALLOW")]


def test_autoload_off_loads_built_ins_only(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    registry = build({"LENS_PLUGINS_AUTOLOAD": "0"})
    assert "acme" not in registry.ids()
    assert registry.ids() == ["amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"]


def test_the_block_list_removes_profiles_built_in_or_not(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    registry = build({"LENS_PROFILES_BLOCK": "acme, cpu"})
    assert "acme" not in registry.ids() and "cpu" not in registry.ids()
    assert "nvidia" in registry.ids()


def test_asking_for_hardware_a_setting_skipped_says_which_setting(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    for env, reason in (({"LENS_PLUGINS_ALLOW": "other-lens"}, "not in LENS_PLUGINS_ALLOW"),
                        ({"LENS_PLUGINS_AUTOLOAD": "off"}, "third-party autoload is off (LENS_PLUGINS_AUTOLOAD)"),
                        ({"LENS_PROFILES_BLOCK": "acme"}, "blocked by LENS_PROFILES_BLOCK")):
        with pytest.raises(AcceleratorNotRegistered) as caught:
            build(env).get("Acme")
        assert str(caught.value) == (f"ACCELERATOR_NOT_REGISTERED: no registered hardware matches 'Acme': "
                                     f"it was skipped ({reason}; acme-lens 1.0.0)")
    with pytest.raises(AcceleratorNotRegistered) as caught:
        build({"LENS_PROFILES_BLOCK": "cpu"}).get("cpu")
    assert str(caught.value).endswith("'cpu': it was skipped (blocked by LENS_PROFILES_BLOCK; llm-d-lens)")


def test_registry_version_changes_with_content(plugins):
    before = build().version_hash()
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    after = build().version_hash()
    assert before != after and len(after) == 16
    assert build().version_hash() == after


def test_a_distribution_named_like_lens_is_still_third_party(plugins):
    plugins.make("LLM_D.Lens", profiles={"mimic": [minimal_profile("mimic")]}, module="mimic_lens")
    assert "mimic" in build().ids()
    registry = build({"LENS_PLUGINS_AUTOLOAD": "0"})
    assert "mimic" not in registry.ids() and "nvidia" in registry.ids()
    assert [(s.name, s.distribution) for s in registry.skipped] == [("mimic", "LLM_D.Lens 1.0.0")]


def test_the_block_list_is_case_insensitive(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    registry = build({"LENS_PROFILES_BLOCK": "ACME, Cpu"})
    assert "acme" not in registry.ids() and "cpu" not in registry.ids() and "nvidia" in registry.ids()


def test_a_third_party_provider_for_a_built_in_id_is_refused_and_the_built_in_keeps_its_own(plugins):
    plugins.make("hijack-lens", provider_entry_points={"nvidia": "hijack_lens_lens:Provider", "AMD": "hijack_lens_lens:Provider"},
                 module_source="class Provider:\n    def profile(self): ...\n")
    registry = build()
    refused = sorted((f.name, f.kind) for f in registry.failures)
    assert refused == [("AMD", "provider"), ("nvidia", "provider")] or refused == [("nvidia", "provider")]
    [nvidia] = [f for f in registry.failures if f.name == "nvidia"]
    assert nvidia.reason == ("provider for 'nvidia' refused: that profile is declared by Lens itself (built-in), and only "
                             "the distribution that declares a profile may declare its provider")
    assert type(registry.provider("nvidia")).__name__ == "NvidiaProvider"
    assert "hijack_lens_lens" not in sys.modules


def test_a_provider_from_another_distribution_than_the_profile_is_refused(plugins):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    plugins.make("squatter-lens", provider_entry_points={"acme": "squatter_lens_lens:Provider"},
                 module_source="class Provider:\n    def profile(self): ...\n")
    registry = build()
    [refused] = registry.failures
    assert refused.distribution == "squatter-lens 1.0.0" and "declared by acme-lens" in refused.reason
    assert not registry.has_provider_entry("acme")


def test_discovery_reads_each_distributions_metadata_once(plugins, monkeypatch, tmp_path):
    """entry_points.txt and METADATA of every installed distribution are read once per discovery, not per group."""
    import builtins
    import collections
    import os

    from llm_d_lens.hardware import entry_points

    for number in range(3):
        plugins.make(f"vendor{number}-lens", profiles={f"vendor{number}": [minimal_profile(f"vendor{number}")]},
                     provider_entry_points={f"vendor{number}": f"vendor{number}_lens:Provider"},
                     module_source="class Provider:\n    pass\n")
    reads: collections.Counter[tuple[str, str]] = collections.Counter()

    def counted(path, *args, **kwargs):
        reads[(os.path.dirname(path), os.path.basename(path))] += 1
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(entry_points, "open", counted, raising=False)
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "cache"))
    registry = build()
    assert {"vendor0", "vendor1", "vendor2"} <= set(registry.ids())
    ours = {key: count for key, count in reads.items() if "vendor" in key[0]}
    assert {filename for _, filename in ours} == {"entry_points.txt", "METADATA"}
    assert len(ours) == 6, ours  # three distributions, two files each
    repeated = {key: count for key, count in reads.items() if count > 1}
    assert not repeated, repeated
