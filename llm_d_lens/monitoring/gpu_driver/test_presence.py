"""The presence preflight with a fake clock: pass, fail at once, bounded wait, ensure_refs first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.gpu_driver import service
from llm_d_lens.monitoring.gpu_driver.conftest import node, node_list, shared_root
from llm_d_lens.monitoring.gpu_driver.errors import HardwareNotPresent, PresenceNotDeclared, PresenceTimedOut
from llm_d_lens.monitoring.gpu_driver.presence import ensure_presence

NODES = ["kubectl", "get", "nodes", "-o", "json"]
GAUDI = {"intel.feature.node.kubernetes.io/gaudi": "true"}
RULES = "https://raw.githubusercontent.com/intel/intel-resource-drivers-for-kubernetes/gaudi-v0.7.0/deployments/gaudi/nfd-rules.yaml"


def with_presence(registry: Any, key: str, **presence: Any) -> HardwareProfile:
    data = registry.get(key).model_dump(mode="json")
    data["presence"] = {**(data.get("presence") or {}), **presence}
    return HardwareProfile.model_validate(data)


async def test_passes_when_a_node_carries_the_labels(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("cp-1"), node("gpu-1", {"nvidia.com/gpu.present": "true"})))
    [report] = await service.preflight(registry, ["nvidia"], view, clock)
    assert report.present and report.matched_nodes == ["gpu-1"] and report.nodes_checked == 2
    assert clock.sleeps == [] and report.attempts == 1


async def test_fails_at_once_without_anything_to_ensure(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    fake.reply(NODES, json_body=node_list(node("cp-1"), node("cpu-1"), node("cpu-2")))
    with pytest.raises(HardwareNotPresent) as caught:
        await service.preflight(registry, ["gaudi"], view, clock)
    message = caught.value.message
    assert "intel.feature.node.kubernetes.io/gaudi=true" in message and "3 node(s) checked" in message
    assert "Next step" in message
    assert clock.sleeps == [] and fake.argvs() == [NODES]


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
    data = registry.get("cpu").model_dump(mode="json")
    data["node_label_selector"] = {}
    with pytest.raises(PresenceNotDeclared):
        await ensure_presence(HardwareProfile.model_validate(data), view, clock)


@pytest.mark.skipif(shared_root() is None, reason="../shared (or $LENS_SHARED_ROOT) is not present")
async def test_conformance_heterogeneous_snapshot(registry: Any, fake: Any, view: Any, clock: Any) -> None:
    snapshot = json.loads((shared_root() / "clusters" / "heterogeneous-small.json").read_text())  # type: ignore[operator]
    nodes = [i for i in snapshot["items"] if i["kind"] == "Node"]
    fake.reply(NODES, json_body={"kind": "List", "items": nodes})
    reports = await service.preflight(registry, ["nvidia", "amd"], view, clock)
    assert [r.matched_nodes for r in reports] == [["gpu-h100-01", "gpu-h100-02"], ["gpu-mi300x-01"]]
    # The Gaudi node there runs the plain device plugin, without the DRA chart's NFD rule: no label, no wait.
    with pytest.raises(HardwareNotPresent) as caught:
        await service.preflight(registry, ["intel-gaudi"], view, clock)
    assert "6 node(s) checked" in caught.value.message and clock.sleeps == []


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
