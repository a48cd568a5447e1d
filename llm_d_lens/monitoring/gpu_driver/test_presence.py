"""The presence preflight with a fake clock: pass, fail at once, bounded wait, ensure_refs first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.gpu_driver import service
from llm_d_lens.monitoring.gpu_driver.conftest import kube_version, node, node_list, shared_root
from llm_d_lens.monitoring.gpu_driver.errors import (
    AccessModeUnknown,
    HardwareNotPresent,
    KubernetesTooOld,
    PresenceNotDeclared,
    PresenceTimedOut,
)
from llm_d_lens.monitoring.gpu_driver.presence import ensure_presence

NODES = ["kubectl", "get", "nodes", "-o", "json"]
VERSION = ["kubectl", "version", "-o", "json"]
GAUDI = {"intel.feature.node.kubernetes.io/gaudi": "true"}
RULES = "https://raw.githubusercontent.com/intel/intel-resource-drivers-for-kubernetes/gaudi-v0.7.0/deployments/gaudi/nfd-rules.yaml"


def with_presence(registry: Any, key: str, **presence: Any) -> HardwareProfile:
    data = registry.get(key).to_data()
    data["presence"] = {**(data.get("presence") or {}), **presence}
    return HardwareProfile.decode(data)


async def test_passes_when_a_node_carries_the_labels(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("cp-1"), node("gpu-1", {"nvidia.com/gpu.present": "true"})))
    [report] = await service.preflight(registry, ["nvidia"], view, clock)
    assert report.present and report.matched_nodes == ["gpu-1"] and report.nodes_checked == 2
    assert clock.sleeps == [] and report.attempts == 1


async def test_fails_at_once_without_anything_to_ensure(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(VERSION, json_body=kube_version("v1.34.1"))  # Gaudi's first mode (dra) needs 1.34.0: read first
    fake.reply(NODES, json_body=node_list(node("cp-1"), node("cpu-1"), node("cpu-2")))
    with pytest.raises(HardwareNotPresent) as caught:
        await service.preflight(registry, ["gaudi"], view, clock)
    message = caught.value.message
    assert "intel.feature.node.kubernetes.io/gaudi=true" in message and "3 node(s) checked" in message
    assert "Next step" in message
    assert clock.sleeps == [] and fake.argvs() == [VERSION, NODES]


async def test_waits_at_most_the_timeout_after_ensuring(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    profile = with_presence(registry, "intel-gaudi", ensure_refs=[RULES], timeout_seconds=12)
    fake.reply(["kubectl", "apply", "-f", RULES], stdout="nodefeaturerule.nfd.k8s-sigs.io/intel-gaudi-device-rule created\n")
    fake.reply(NODES, json_body=node_list(node("cp-1"), node("gaudi-1")))
    with pytest.raises(PresenceTimedOut) as caught:
        await ensure_presence(profile, view, clock, poll_seconds=5)
    assert sum(clock.sleeps) == 12 and clock.sleeps == [5, 5, 2]  # never past the timeout
    assert fake.argvs().count(NODES) == 4
    assert "within 12s" in caught.value.message and "2 node(s) checked" in caught.value.message


async def test_ensure_refs_are_applied_before_waiting_and_a_late_label_passes(registry: Any, fake: Any, view: Any,
                                                                              clock: Any) -> None:
    kustomization = "https://github.com/intel/intel-device-plugins-for-kubernetes/deployments/nfd/overlays/node-feature-rules?ref=v0.32.1"
    profile = with_presence(registry, "intel-gaudi", ensure_refs=[RULES, kustomization], timeout_seconds=120)
    fake.reply(["kubectl", "apply", ...], stdout="configured\n")
    fake.reply(NODES, json_body=node_list(node("gaudi-1")))
    fake.reply(NODES, json_body=node_list(node("gaudi-1")))
    fake.reply(NODES, json_body=node_list(node("gaudi-1", GAUDI)))
    report = await ensure_presence(profile, view, clock, poll_seconds=5)
    assert fake.argvs()[:2] == [["kubectl", "apply", "-f", RULES], ["kubectl", "apply", "-k", kustomization]]
    assert fake.argvs()[2:] == [NODES, NODES, NODES]
    assert report.present and report.attempts == 3 and report.waited_seconds == 10 and clock.sleeps == [5, 5]


async def test_profile_without_presence_uses_its_node_label_selector(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("spr-1", {"feature.node.kubernetes.io/cpu-cpuid.AMXBF16": "true"})))
    [report] = await service.preflight(registry, ["cpu"], view, clock)
    assert report.matched_nodes == ["spr-1"]


async def test_star_selector_only_needs_the_label(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("tpu-1", {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"})))
    [report] = await service.preflight(registry, ["tpu"], view, clock)
    assert report.matched_nodes == ["tpu-1"]


async def test_no_selector_at_all_is_an_error(registry: Any, view: Any, clock: Any) -> None:
    data = registry.get("cpu").to_data()
    data["node_label_selector"] = {}
    with pytest.raises(PresenceNotDeclared):
        await ensure_presence(HardwareProfile.decode(data), view, clock)


@pytest.mark.skipif(shared_root() is None, reason="../shared (or $LENS_SHARED_ROOT) is not present")
async def test_conformance_heterogeneous_snapshot(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    snapshot = json.loads((shared_root() / "clusters" / "heterogeneous-small.json").read_text())  # type: ignore[operator]
    nodes = [i for i in snapshot["items"] if i["kind"] == "Node"]
    fake.reply(VERSION, json_body=kube_version("v1.34.2"))
    fake.reply(NODES, json_body={"kind": "List", "items": nodes})
    reports = await service.preflight(registry, ["nvidia", "amd"], view, clock)
    assert [r.matched_nodes for r in reports] == [["gpu-h100-01", "gpu-h100-02"], ["gpu-mi300x-01"]]
    # The Gaudi node there runs the plain device plugin, without the DRA chart's NFD rule; NFD's own PCI label
    # (pci-1da3.present, Habana's vendor id) proves it is there all the same (issue 26), with no wait.
    [report] = await service.preflight(registry, ["intel-gaudi"], view, clock)
    assert report.matched_nodes == ["gpu-gaudi3-01"] and report.nodes_checked == 6 and clock.sleeps == []
    # and a node with nothing of the kind still fails at once
    fake.reply(NODES, json_body={"kind": "List", "items": [n for n in nodes if n["metadata"]["name"] != "gpu-gaudi3-01"]})
    with pytest.raises(HardwareNotPresent) as caught:
        await service.preflight(registry, ["intel-gaudi"], view, clock)
    assert "5 node(s) checked" in caught.value.message and "pci-1da3.present=true" in caught.value.message


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0])
async def test_a_timeout_that_bounds_nothing_is_refused_before_anything_runs(registry: Any, fake: Any, view: Any,
                                                                             clock: Any, timeout: float) -> None:
    """NaN compares false with everything, so the wait would never end; infinity is no bound either."""
    from llm_d_lens.monitoring.gpu_driver.errors import PresenceTimeoutInvalid

    profile = with_presence(registry, "intel-gaudi", ensure_refs=[RULES], timeout_seconds=12)
    with pytest.raises(PresenceTimeoutInvalid) as caught:
        await ensure_presence(profile, view, clock, timeout_seconds=timeout)
    assert caught.value.message == f"timeout {timeout:g}: give a finite number of seconds, 0 or more"
    assert fake.argvs() == [] and clock.sleeps == []


# -- issue 26: presence that needs no driver: Node Feature Discovery's PCI labels ---------------------

NFD_NODE = {  # gpu-h100-01 of that cluster before GPU Feature Discovery ran: only NFD's and the kubelet's labels
    "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "gpu-h100-01", "kubernetes.io/os": "linux",
    "feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true", "feature.node.kubernetes.io/kernel-version.major": "6",
    "feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/pci-15b3.present": "true",
    "feature.node.kubernetes.io/pci-1a03.present": "true", "feature.node.kubernetes.io/pci-8086.present": "true",
    "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
}


def before_gfd(labels: dict[str, str]) -> dict[str, str]:
    """A node's labels with every vendor plugin's and feature discovery's own removed: NFD's alone remain."""
    return {k: v for k, v in labels.items() if not k.split("/")[0].endswith(("nvidia.com", "amd.com"))}


def cluster_nodes() -> list[dict[str, Any]]:
    root = shared_root()
    cluster = Path(root) / "clusters" / "heterogeneous-small.json" if root else None
    if cluster is not None and cluster.exists():
        nodes = [i for i in json.loads(cluster.read_text())["items"] if i["kind"] == "Node"]
        return [node(n["metadata"]["name"], before_gfd(n["metadata"]["labels"])) for n in nodes]
    return [node("gpu-h100-01", NFD_NODE)]


async def test_nvidia_is_present_on_a_node_carrying_only_nfd_labels(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("cp-1"), node("gpu-h100-01", NFD_NODE)))
    [report] = await service.preflight(registry, ["nvidia"], view, clock)
    assert report.matched_nodes == ["gpu-h100-01"] and clock.sleeps == []


@pytest.mark.parametrize("hardware,expected", [
    ("nvidia", ["gpu-h100-01", "gpu-h100-02"]), ("amd", ["gpu-mi300x-01"]), ("intel-gaudi", ["gpu-gaudi3-01"]),
])
async def test_each_vendor_is_found_by_nfd_alone_and_no_trap_label_matches(registry: Any, fake: Any, view: Any, clock: Any,
                                                                           hardware: str, expected: list[str]) -> None:
    nodes = cluster_nodes()
    if len(nodes) == 1:
        pytest.skip("the shared heterogeneous cluster is not on this machine")
    fake.reply(VERSION, json_body=kube_version("v1.34.2"))
    fake.reply(NODES, json_body=node_list(*nodes))
    [report] = await service.preflight(registry, [hardware], view, clock)
    assert report.matched_nodes == expected  # cp-01's QEMU VGA, the ASPEED BMCs, cpu-01's pci-8086 match nothing


async def test_intel_xpu_is_not_claimed_by_a_bare_pci_8086_label(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    # 8086 is also every Intel NIC and QAT card: only a display-class Intel device (03xx) is an Intel GPU
    fake.reply(VERSION, json_body=kube_version("v1.34.2"))
    fake.reply(NODES, json_body=node_list(node("cpu-01", {"feature.node.kubernetes.io/pci-8086.present": "true"}),
                                          node("xpu-1", {"feature.node.kubernetes.io/pci-0380_8086.present": "true"})))
    [report] = await service.preflight(registry, ["intel-xpu"], view, clock)
    assert report.matched_nodes == ["xpu-1"]


def test_lens_preflight_nvidia_passes_on_a_node_with_only_nfd_labels(monkeypatch: pytest.MonkeyPatch, fake: Any,
                                                                     capsys: Any) -> None:
    from llm_d_lens.cli.app import main
    from llm_d_lens.monitoring.gpu_driver import cli as driver_cli
    from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView

    monkeypatch.setattr(driver_cli, "make_view", lambda context, kubeconfig: ClusterView(fake))
    monkeypatch.setattr("llm_d_lens.monitoring.gpu_driver.clock.SystemClock", FakeClock)
    fake.reply(NODES, json_body=node_list(node("gpu-h100-01", NFD_NODE)))
    assert main(["preflight", "--hardware", "nvidia"]) == 0
    assert "gpu-h100-01" in capsys.readouterr().out


# -- issue 26: preflight checks the mode's min_kubernetes_version ---------------------------------------

async def test_preflight_refuses_a_cluster_older_than_the_mode_needs_naming_both(registry: Any, fake: Any, view: Any,
                                                                                clock: Any) -> None:
    fake.reply(VERSION, json_body=kube_version("v1.33.5-eks-3025e55"))  # a managed cluster's decorated version
    fake.reply(NODES, json_body=node_list(node("gpu-1", {"nvidia.com/gpu.present": "true"})))
    with pytest.raises(KubernetesTooOld) as caught:
        await service.preflight(registry, ["nvidia"], view, clock, mode="dra")
    error = caught.value
    assert error.code == "KUBERNETES_TOO_OLD"
    assert "needs Kubernetes 1.34.2 or newer" in error.message and "the cluster runs v1.33.5-eks-3025e55" in error.message
    assert "--mode plugin" in error.message
    assert error.details == {"hardware": "nvidia", "mode": "dra", "minimum": "1.34.2", "server_version": "v1.33.5-eks-3025e55"}
    assert fake.argvs() == [VERSION]  # refused before listing nodes or applying anything


async def test_preflight_passes_a_new_enough_cluster_and_reports_the_check(registry: Any, fake: Any, view: Any,
                                                                          clock: Any) -> None:
    fake.reply(VERSION, json_body=kube_version("v1.34.2"))
    fake.reply(NODES, json_body=node_list(node("gpu-1", {"nvidia.com/gpu.present": "true"})))
    [report] = await service.preflight(registry, ["nvidia"], view, clock, mode="dra")
    assert report.to_dict()["kubernetes"] == {"mode": "dra", "minimum": "1.34.2", "server_version": "v1.34.2"}


async def test_preflight_of_a_mode_without_a_minimum_reads_no_version(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("gpu-1", {"nvidia.com/gpu.present": "true"})))
    [report] = await service.preflight(registry, ["nvidia"], view, clock)  # default: plugin, the first access mode
    assert report.kubernetes == {"mode": "plugin", "minimum": None, "server_version": None}
    assert fake.argvs() == [NODES]


async def test_preflight_of_an_unknown_mode_is_refused_naming_the_modes(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    with pytest.raises(AccessModeUnknown) as caught:
        await service.preflight(registry, ["nvidia"], view, clock, mode="mig")
    assert "its access modes are: plugin, dra" in caught.value.message and fake.argvs() == []


def test_lens_preflight_mode_on_an_old_cluster_exits_1_with_the_code(monkeypatch: pytest.MonkeyPatch, fake: Any,
                                                                     capsys: Any) -> None:
    from llm_d_lens.cli.app import main
    from llm_d_lens.monitoring.gpu_driver import cli as driver_cli
    from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView

    monkeypatch.setattr(driver_cli, "make_view", lambda context, kubeconfig: ClusterView(fake))
    monkeypatch.setattr("llm_d_lens.monitoring.gpu_driver.clock.SystemClock", FakeClock)
    fake.reply(VERSION, json_body=kube_version("v1.33.5"))
    fake.reply(NODES, json_body=node_list(node("amd-1", {"feature.node.kubernetes.io/amd-gpu": "true"})))
    assert main(["preflight", "--hardware", "amd", "--mode", "dra"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: KUBERNETES_TOO_OLD") and "1.34.0" in err and "v1.33.5" in err and "Traceback" not in err
    fake.reply(VERSION, json_body=kube_version("v1.35.0"))
    assert main(["preflight", "--hardware", "amd", "--mode", "dra"]) == 0
    assert "Kubernetes v1.35.0 (needs 1.34.0 or newer)" in capsys.readouterr().out
