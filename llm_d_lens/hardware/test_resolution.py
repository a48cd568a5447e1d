"""Every kind of resolution, explicit and observed, against the built-in profiles."""

from __future__ import annotations

import pytest

from llm_d_lens.hardware.discovery import discover
from llm_d_lens.hardware.errors import AcceleratorNotRegistered
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.resolution import Resolver
from llm_d_lens.hardware.settings import PluginSettings


@pytest.fixture(scope="module")
def resolver() -> Resolver:
    return Resolver(Registry.from_discovery(discover(PluginSettings(), profile_entry_points=[], provider_entry_points=[])))


@pytest.mark.parametrize("key,expected", [
    ("nvidia", "nvidia"), ("cuda", "nvidia"), ("ROCm", "amd"), ("xpu", "intel-xpu"), ("intel_gpu", "intel-xpu"),
    ("intel-i915", "intel-xpu"), ("intel-xe", "intel-xpu"), ("hpu", "intel-gaudi"), ("intel-gaudi", "intel-gaudi"),
    ("google", "google-tpu"), ("tpu", "google-tpu"), ("cpu-only", "cpu"),
])
def test_explicit_keys_resolve_through_ids_aliases_and_benchmark_profiles(resolver, key, expected):
    assert resolver.require(key).id == expected


def test_an_unknown_explicit_key_raises_with_the_nearest_names(resolver):
    with pytest.raises(AcceleratorNotRegistered) as caught:
        resolver.require("nvdia")
    assert caught.value.code == "ACCELERATOR_NOT_REGISTERED"
    assert caught.value.details["key"] == "nvdia"
    assert caught.value.nearest[0] == "nvidia"
    assert "nearest registered names: nvidia" in str(caught.value)


@pytest.mark.parametrize("resource,expected,prefix", [
    ("nvidia.com/gpu", "nvidia", "nvidia.com/gpu"),
    ("nvidia.com/mig-1g.10gb", "nvidia", "nvidia.com/mig-"),
    ("amd.com/gpu", "amd", "amd.com/gpu"),
    ("amd.com/cpx_nps4", "amd", "amd.com/cpx"),
    ("gpu.intel.com/i915", "intel-xpu", "gpu.intel.com/"),
    ("gpu.intel.com/xe", "intel-xpu", "gpu.intel.com/"),
    ("habana.ai/gaudi", "intel-gaudi", "habana.ai/"),
    ("google.com/tpu", "google-tpu", "google.com/tpu"),
])
def test_extended_resources_resolve_by_longest_prefix(resolver, resource, expected, prefix):
    found = resolver.match_resource(resource)
    assert (found.status, found.profile_id, found.matched_value) == ("supported", expected, prefix)


@pytest.mark.parametrize("resource", ["example.com/npu", "cpu", "memory", "nvidia.com", "rdma/ib", "google.com/gpu"])
def test_unknown_observed_resources_are_unsupported_and_never_raise(resolver, resource):
    found = resolver.match_resource(resource)
    assert found.status == "unsupported" and found.profile_id is None


def test_longest_prefix_wins_within_one_domain():
    from llm_d_lens.testing.plugins import minimal_profile
    from llm_d_lens.hardware.discovery import DiscoveredProfile
    from llm_d_lens.hardware.loader import validate_payload

    nested = validate_payload(minimal_profile("acme", resource_prefixes=["acme.example.com/", "acme.example.com/npu-"]), "a")
    neighbour = validate_payload(minimal_profile("zeta", resource_prefixes=["zeta.example.com/npu"]), "b")
    r = Resolver(Registry([DiscoveredProfile(p, p.id, []) for p in (nested, neighbour)]))
    assert r.match_resource("acme.example.com/npu-large").matched_value == "acme.example.com/npu-"
    assert r.match_resource("acme.example.com/other").matched_value == "acme.example.com/"
    assert r.match_resource("zeta.example.com/npu").profile_id == "zeta"


@pytest.mark.parametrize("device_class,expected", [
    ("gpu.nvidia.com", "nvidia"), ("mig.nvidia.com", "nvidia"), ("gpu.amd.com", "amd"),
    ("gpu.intel.com", "intel-xpu"), ("gaudi.intel.com", "intel-gaudi"), ("dra.cpu", "cpu"),
])
def test_dra_device_classes(resolver, device_class, expected):
    assert resolver.match_device_class(device_class).profile_id == expected


def test_unknown_device_class_is_unsupported(resolver):
    assert resolver.match_device_class("npu.rebellions.ai").status == "unsupported"


@pytest.mark.parametrize("driver,expected", [("gpu.nvidia.com", "nvidia"), ("gpu.intel.com", "intel-xpu"), ("dra.cpu", "cpu")])
def test_dra_drivers(resolver, driver, expected):
    assert resolver.match_dra_driver(driver).profile_id == expected


@pytest.mark.parametrize("variant,vendor,expected", [
    ("gpu", "nvidia", "nvidia"), ("gpu", "amd", "amd"), ("xpu", "intel", "intel-xpu"), ("hpu", "intel", "intel-gaudi"),
    ("tpu", "google", "google-tpu"), ("tpu-v6e", "google", "google-tpu"), ("cpu", "intel", "cpu"),
])
def test_upstream_label_pairs(resolver, variant, vendor, expected):
    labels = {"llm-d.ai/accelerator-variant": variant, "llm-d.ai/accelerator-vendor": vendor, "llm-d.ai/guide": "x"}
    assert resolver.match_labels(labels).profile_id == expected


def test_a_variant_label_alone_is_ambiguous_when_vendors_share_it(resolver):
    found = resolver.match_labels({"llm-d.ai/accelerator-variant": "gpu"})
    assert found.status == "ambiguous" and found.candidates == ("amd", "nvidia")
    assert resolver.match_labels({"llm-d.ai/accelerator-variant": "xpu"}).profile_id == "intel-xpu"


def test_an_unknown_label_pair_is_unsupported(resolver):
    found = resolver.match_labels({"llm-d.ai/accelerator-variant": "npu", "llm-d.ai/accelerator-vendor": "rebellions"})
    assert found.status == "unsupported"


@pytest.mark.parametrize("labels,expected", [
    ({"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux"}, "nvidia"),
    ({"feature.node.kubernetes.io/amd-gpu": "true"}, "amd"),
    ({"intel.feature.node.kubernetes.io/gpu": "true"}, "intel-xpu"),
    ({"intel.feature.node.kubernetes.io/gaudi": "true"}, "intel-gaudi"),
    ({"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x4"}, "google-tpu"),
])
def test_node_labels_resolve_through_node_label_selector(resolver, labels, expected):
    assert resolver.match_labels(labels).profile_id == expected


def test_pci_presence_labels_alone_are_not_an_accelerator(resolver):
    """BMC graphics and virtual VGA produce GPU-looking NFD labels."""
    labels = {"feature.node.kubernetes.io/pci-1a03.present": "true", "feature.node.kubernetes.io/pci-1234.present": "true"}
    assert resolver.match_labels(labels).status == "unsupported"


@pytest.mark.parametrize("system,expected", [
    ("h200_sxm", "nvidia"), ("H100_SXM", "nvidia"), ("gb200", "nvidia"), ("mi300x", "amd"), ("gaudi3", "intel-gaudi"),
    ("v6e", "google-tpu"), ("tpu_v7x", "google-tpu"), ("cpu", "cpu"),
])
def test_aic_system_names(resolver, system, expected):
    assert resolver.match_aic_system(system).profile_id == expected


def test_an_unknown_aic_system_is_unsupported(resolver):
    assert resolver.match_aic_system("dgx_spark_future").status == "unsupported"
