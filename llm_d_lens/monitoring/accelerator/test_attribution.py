"""Allocation joins: which pod each device works for, and when Lens refuses to say.

Exporter pages are read as direct snapshots here (the same plan Prometheus evaluates; the
conformance tests hold the two to the same numbers), so these run without the binary; the last
test goes through a real Prometheus end to end.
"""

from __future__ import annotations

import copy
import json
from importlib.resources import files

import pytest

from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects
from llm_d_lens.monitoring.accelerator.plan import plan_for
from llm_d_lens.monitoring.accelerator.service import Selected, snapshot_devices
from llm_d_lens.monitoring.errors import AccessModeUnknown
from llm_d_lens.testing.telemetry_pages import (
    by_name,
    claim_object,
    cluster,
    fixture_text,
    needs_prometheus,
    pod_object,
    refresh,
    sample_text,
    shared,
    slice_object,
    snapshot,
)

XPU_NODE = "xpu-max1550-01"
SEVENTY_B, QWEN = ("inference", "vllm-xpu-llama-3-1-70b-0"), ("inference", "vllm-xpu-qwen2-5-32b-59d7f8c6b4-k7wqz")
FOUR_70B = ["29", "3a", "4d", "5c"]
TWO_QWEN = ["9a", "ab"]


def profile(profile_id: str, **telemetry: object):
    """A built-in profile with telemetry fields changed, checked like any profile."""
    payload = json.loads(files("llm_d_lens.hardware").joinpath("profiles", f"{profile_id}.json").read_text())
    payload = copy.deepcopy(payload)
    payload["telemetry"].update(telemetry)
    return validate_payload(payload, f"{profile_id} (test variant)")


def read(text: str, hw_profile, **options):
    return snapshot_devices(text, "page", [Selected(hw_profile, plan_for(hw_profile))], **options)


def dra_cluster() -> ClusterObjects:
    return ClusterObjects.from_files([shared("clusters", "dra-intel-cpu.json")])


def status_of(devices: dict, pci: str) -> dict:
    return devices[f"{XPU_NODE}/0000:{pci}:00.0"]["attribution"]


# -- dra and pod-status on the shared DRA cluster ---------------------------------------------------


@pytest.mark.parametrize("join", ["dra", "pod-status"])
def test_dra_cluster_devices_are_attributed_by_either_join(join):
    xpu = profile("intel-xpu", modes={"dra": join, "plugin": "extended-resource"})
    report = read(fixture_text("xpu-max1550-tiles.prom"), xpu, cluster=dra_cluster())
    devices = by_name(report)
    for pci in FOUR_70B:
        assert (status_of(devices, pci)["status"], status_of(devices, pci)["pod"]) == ("attributed", SEVENTY_B[1])
        assert status_of(devices, pci)["container"] == "vllm" and status_of(devices, pci)["join"] == join
    for pci in TWO_QWEN:
        assert status_of(devices, pci)["pod"] == QWEN[1]
    for pci in ["ba", "ca"]:
        assert status_of(devices, pci)["status"] == "idle"
    seventy_b = report.pods[SEVENTY_B][0]
    assert seventy_b.status == "attributed"
    assert sorted(seventy_b.devices) == [f"{XPU_NODE}/0000:{p}:00.0" for p in FOUR_70B]


def test_a_pod_whose_devices_the_exporter_partly_misses_gets_no_partial_figure():
    page = "\n".join(line for line in fixture_text("xpu-max1550-tiles.prom").splitlines()
                     if not any(f"0000:{p}:00.0" in line for p in ("4d", "5c")))
    report = read(page, profile("intel-xpu"), cluster=dra_cluster())
    seventy_b = report.pods[SEVENTY_B][0]
    assert seventy_b.status == "unavailable"
    assert seventy_b.problems == [f"holds 4 devices on {XPU_NODE}; the exporter shows no series for 2 of them"]
    assert report.pods[QWEN][0].status == "attributed"


def test_pod_status_ids_without_a_pci_address_make_the_nodes_unclaimed_devices_unavailable():
    xpu = profile("intel-xpu", modes={"dra": "pod-status", "plugin": "pod-status"})
    objects = cluster(
        pod_object("opaque-0", XPU_NODE, limits={"gpu.intel.com/i915": "1"}, allocated=[("gpu.intel.com/i915", ["card0-0"])]),
        pod_object("named-0", XPU_NODE, limits={"gpu.intel.com/i915": "1"},
                   allocated=[("gpu.intel.com/i915", ["intel.com/gpu=0000-29-00-0-0x0bd5"])]),
    )
    report = read(fixture_text("xpu-max1550-tiles.prom"), xpu, cluster=objects)
    devices = by_name(report)
    assert status_of(devices, "29")["pod"] == "named-0"
    other = status_of(devices, "3a")
    assert other["status"] == "unavailable" and "llm-serving/opaque-0" in other["reason"]
    opaque = report.pods[("llm-serving", "opaque-0")][0]
    assert opaque.status == "unavailable" and "'card0-0' carries no PCI address" in opaque.problems[0]


def test_pod_status_two_pods_on_one_device_is_unavailable_for_both():
    xpu = profile("intel-xpu", modes={"dra": "pod-status", "plugin": "pod-status"})
    same = ["intel.com/gpu=0000-29-00-0-0x0bd5"]
    objects = cluster(
        pod_object("a-0", XPU_NODE, limits={"gpu.intel.com/xe": "1"}, allocated=[("gpu.intel.com/xe", same)]),
        pod_object("b-0", XPU_NODE, limits={"gpu.intel.com/xe": "1"}, allocated=[("gpu.intel.com/xe", same)]),
    )
    report = read(fixture_text("xpu-max1550-tiles.prom"), xpu, cluster=objects)
    shared_device = status_of(by_name(report), "29")
    assert shared_device["status"] == "unavailable"
    assert shared_device["reason"] == "claimed by 2 pods: llm-serving/a-0, llm-serving/b-0"
    assert report.pods[("llm-serving", "a-0")][0].status == "unavailable"
    assert report.pods[("llm-serving", "b-0")][0].status == "unavailable"


def test_pod_status_needs_a_pci_label_on_the_exporter_side():
    # AMD's exporter has no PCI label; the device plugin's resource ids are PCI addresses (which is why
    # the built-in profile declares no resource_id_pattern: this join could never place an AMD device)
    pattern = {"drivers": ["gpu.amd.com"], "resource_id_pattern": "^(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7])$"}
    amd = profile("amd", modes={"plugin": "pod-status", "dra": "dra"}, allocation=pattern)
    objects = cluster(pod_object(
        "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz", "amd-node-01", limits={"amd.com/gpu": "1"},
        allocated=[("amd.com/gpu", ["0000:c1:00.0"])],
    ))
    report = read(sample_text("amd-device-metrics-exporter.prom"), amd, cluster=objects)
    for device in report.devices:
        assert device.attribution.status == "unavailable"
        assert device.attribution.reason == "the exporter shows no PCI bus id to match resource ids against"


def test_dra_joins_on_the_serial_when_the_driver_publishes_no_pci():
    gaudi = profile("intel-gaudi")
    node = "gaudi-node-01"
    objects = cluster(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
         "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]}},
        slice_object(node, "gaudi.intel.com", {"gaudi-0": {"serial": "AN51012874", "model": "Gaudi3"},
                                              "gaudi-1": {"serial": "AN51012903", "model": "Gaudi3"}}),
        claim_object("serve-0-gaudi-x7k2q", [("gaudi.intel.com", node, "gaudi-0")], ["serve-0"], device_class="gaudi.intel.com"),
        pod_object("serve-0", node, claims={"gaudi": "serve-0-gaudi-x7k2q"}),
    )
    report = read(sample_text("gaudi-metric-exporter.prom"), gaudi, cluster=objects, target="10.0.0.7:41611")
    devices = by_name(report)
    # the claim says serve-0; the exporter's own pod labels (another pod) are not what the dra join reads
    assert devices[f"{node}/0"]["attribution"]["pod"] == "serve-0"
    assert devices[f"{node}/0"]["attribution"]["container"] == "vllm"
    assert devices[f"{node}/1"]["attribution"]["status"] == "idle"


def test_dra_joins_on_the_uuid():
    node = "gpu-node-01"
    objects = cluster(
        slice_object(node, "gpu.nvidia.com", {"gpu-0": {"uuid": "GPU-5e1c8a1d-7b3f-4a52-9c0e-2f6d81b4a937", "productName": "NVIDIA H100 80GB HBM3"}}),
        claim_object("dra-0-gpu-abcde", [("gpu.nvidia.com", node, "gpu-0")], ["dra-0"], device_class="gpu.nvidia.com"),
        pod_object("dra-0", node, claims={"gpu": "dra-0-gpu-abcde"}),
    )
    devices = by_name(snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"], cluster=objects))
    assert devices[f"{node}/0"]["attribution"]["pod"] == "dra-0"
    assert devices[f"{node}/0"]["attribution"]["join"] == "dra"


def test_dra_devices_without_any_shared_identity_are_unavailable():
    node = "amd-node-01"
    objects = cluster(
        slice_object(node, "gpu.amd.com", {"gpu-0-128": {"pciAddr": "0000:c1:00.0", "productName": "MI300X"}}),
        claim_object("dra-0-gpu-abcde", [("gpu.amd.com", node, "gpu-0-128")], ["dra-0"], device_class="gpu.amd.com"),
        pod_object("dra-0", node, claims={"gpu": "dra-0-gpu-abcde"}),
    )
    report = snapshot(sample_text("amd-device-metrics-exporter.prom"), ["amd"], cluster=objects)
    for device in report.devices:
        assert device.attribution.status == "unavailable"
        assert device.attribution.reason == "the exporter shows no pci identity to match the DRA allocation against"
    assert report.pods[("llm-serving", "dra-0")][0].status == "unavailable"


def test_a_device_allocated_to_a_claim_no_pod_reserves_is_unavailable():
    node = "gpu-node-01"
    objects = cluster(
        slice_object(node, "gpu.nvidia.com", {"gpu-1": {"resource.kubernetes.io/pciBusID": "0000:2a:00.0"}}),
        claim_object("standalone", [("gpu.nvidia.com", node, "gpu-1")], [], device_class="gpu.nvidia.com"),
    )
    devices = by_name(snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"], cluster=objects, mode="dra"))
    assert devices[f"{node}/1"]["attribution"]["reason"] == "allocated to ResourceClaim llm-serving/standalone, which no pod reserves"


def test_a_dra_device_missing_from_the_slices_leaves_its_node_unavailable():
    node = "gpu-node-01"
    objects = cluster(
        claim_object("ghost-0-gpu", [("gpu.nvidia.com", node, "gpu-7")], ["ghost-0"], device_class="gpu.nvidia.com"),
        pod_object("ghost-0", node, claims={"gpu": "ghost-0-gpu"}),
    )
    report = snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"], cluster=objects)
    devices = by_name(report)
    # the DCGM sample labels GPU 0 with another pod, but the node is a DRA node now: the exporter labels are not read
    for name in (f"{node}/0", f"{node}/1"):
        assert devices[name]["attribution"]["status"] == "unavailable"
        assert "llm-serving/ghost-0" in devices[name]["attribution"]["reason"]
    assert report.pods[("llm-serving", "ghost-0")][0].problems == ["its device gpu-7 is not in any ResourceSlice"]


# -- extended-resource, mixed nodes, none ------------------------------------------------------------


def test_two_pods_labelled_on_one_device_is_unavailable():
    text = sample_text("dcgm-exporter.prom")
    twin = "\n".join(line.replace("vllm-llama-3-1-8b-5f7d9c6b8-q2xkz", "vllm-twin-0") for line in text.splitlines()
                     if 'gpu="0"' in line)
    report = snapshot(text + twin + "\n", ["nvidia"])
    device = by_name(report)["gpu-node-01/0"]["attribution"]
    assert device["status"] == "unavailable" and device["reason"].startswith("claimed by 2 pods")
    assert report.pods[("llm-serving", "vllm-twin-0")][0].status == "unavailable"


def test_a_pod_holding_devices_no_series_labels_is_unavailable_and_so_are_the_idle_looking_devices():
    objects = cluster(
        pod_object("vllm-llama-3-1-8b-5f7d9c6b8-q2xkz", "gpu-node-01", limits={"nvidia.com/gpu": "1"}),
        pod_object("unseen-0", "gpu-node-01", limits={"nvidia.com/gpu": "1"}),
    )
    report = snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"], cluster=objects)
    devices = by_name(report)
    assert devices["gpu-node-01/0"]["attribution"]["status"] == "attributed"
    assert devices["gpu-node-01/1"]["attribution"]["status"] == "unavailable"
    assert report.pods[("llm-serving", "unseen-0")][0].problems == ["no device series on its node carries this pod's labels"]


def test_a_node_mixing_request_models_stays_unattributed():
    node = "gpu-node-01"
    objects = cluster(
        pod_object("vllm-llama-3-1-8b-5f7d9c6b8-q2xkz", node, limits={"nvidia.com/gpu": "1"}),
        slice_object(node, "gpu.nvidia.com", {"gpu-1": {"resource.kubernetes.io/pciBusID": "0000:2a:00.0"}}),
        claim_object("dra-0-gpu", [("gpu.nvidia.com", node, "gpu-1")], ["dra-0"], device_class="gpu.nvidia.com"),
        pod_object("dra-0", node, claims={"gpu": "dra-0-gpu"}),
    )
    report = snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"], cluster=objects)
    for device in report.devices:
        assert device.attribution.status == "unattributed"
        assert device.attribution.reason == f"node {node} mixes request models (dra, extended-resource): no join sees all of its devices"
    for ref in [("llm-serving", "dra-0"), ("llm-serving", "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz")]:
        assert report.pods[ref][0].status == "unattributed"


def test_a_mode_whose_join_is_none_attributes_nothing():
    nvidia = profile("nvidia", modes={"plugin": "none", "dra": "dra"})
    report = read(sample_text("dcgm-exporter.prom"), nvidia, mode="plugin")
    assert {d.attribution.status for d in report.devices} == {"unattributed"}
    assert report.devices[0].attribution.reason == "the telemetry join of mode plugin is none"


def test_a_join_that_needs_cluster_objects_says_so_without_them():
    report = snapshot(fixture_text("xpu-max1550-tiles.prom"), ["intel-xpu"])  # default join: dra
    assert {d.attribution.reason for d in report.devices} == {
        "the dra join needs the cluster's pods, claims and slices (--cluster FILE or --cluster kubectl; the API's "
        "?cluster=NAME; the server's LENS_CLUSTER_OBJECTS)"
    }


def test_an_unknown_mode_is_an_error_naming_the_known_ones():
    with pytest.raises(AccessModeUnknown, match="known modes: dra, plugin"):
        snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"], mode="time-slicing")


@needs_prometheus
def test_dra_join_end_to_end_through_prometheus(prometheus):
    devices = by_name(refresh(prometheus.url, ["intel-xpu"], node=XPU_NODE, cluster=dra_cluster()))
    assert [status_of(devices, p)["pod"] for p in FOUR_70B + TWO_QWEN] == [SEVENTY_B[1]] * 4 + [QWEN[1]] * 2
    assert status_of(devices, "ca")["status"] == "idle"
