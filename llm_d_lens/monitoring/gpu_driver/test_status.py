"""Status from real-shaped DaemonSet, Node and Pod lists."""

from __future__ import annotations

from typing import Any

from llm_d_lens.monitoring.gpu_driver import service
from llm_d_lens.monitoring.gpu_driver.conftest import daemonset, ds_pod, node, node_list
from llm_d_lens.monitoring.gpu_driver.status import daemonset_version

GPU = {"nvidia.com/gpu.present": "true"}


def script(fake: Any, daemonsets: list[dict[str, Any]], nodes: list[dict[str, Any]], pods: dict[str, list[dict[str, Any]]]) -> None:
    fake.reply(["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"], json_body={"kind": "List", "items": daemonsets})
    fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body=node_list(*nodes))
    for namespace, items in pods.items():
        fake.reply(["kubectl", "get", "pods", "--namespace", namespace, "-o", "json"], json_body={"kind": "List", "items": items})


async def test_ready_plugin_and_missing_dra_driver(registry: Any, fake: Any, view: Any) -> None:
    plugin = daemonset("nvidia-device-plugin", "nvidia-device-plugin", desired=2, ready=2,
                       labels={"app.kubernetes.io/version": "0.18.2", "helm.sh/chart": "nvidia-device-plugin-0.18.2"})
    gfd = daemonset("nvidia-device-plugin", "nvidia-device-plugin-gpu-feature-discovery", desired=2, ready=2,
                    image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2")
    unrelated = daemonset("kube-system", "kube-proxy", desired=3, ready=3)
    script(fake, [plugin, gfd, unrelated], [node("gpu-a", GPU), node("gpu-b", GPU), node("cpu-a")],
           {"nvidia-device-plugin": [ds_pod("nvidia-device-plugin", "nvidia-device-plugin", "gpu-a"),
                                     ds_pod("nvidia-device-plugin", "nvidia-device-plugin", "gpu-b"),
                                     ds_pod("nvidia-device-plugin", "nvidia-device-plugin-gpu-feature-discovery", "gpu-a"),
                                     ds_pod("nvidia-device-plugin", "nvidia-device-plugin-gpu-feature-discovery", "gpu-b")]})
    by_mode = {s.mode: s for s in await service.status(registry, ["nvidia"], None, view)}
    assert by_mode["plugin"].state == "ready"
    assert [d.name for d in by_mode["plugin"].daemonsets] == ["nvidia-device-plugin", "nvidia-device-plugin-gpu-feature-discovery"]
    assert (by_mode["plugin"].desired, by_mode["plugin"].ready) == (4, 4)
    assert by_mode["plugin"].versions == ["0.18.2", "v0.18.2"]
    assert by_mode["plugin"].hardware_nodes == ["gpu-a", "gpu-b"] and by_mode["plugin"].missing_nodes == []
    assert by_mode["dra"].state == "not-installed" and by_mode["dra"].missing_nodes == ["gpu-a", "gpu-b"]
    # one listing of each kind serves both modes
    assert fake.argvs().count(["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"]) == 1


async def test_degraded_names_the_hardware_node_without_a_ready_pod(registry: Any, fake: Any, view: Any) -> None:
    plugin = daemonset("kube-amd-gpu", "default-device-plugin", desired=2, ready=1)
    script(fake, [plugin], [node("mi300x-1", {"feature.node.kubernetes.io/amd-gpu": "true"}),
                            node("mi300x-2", {"feature.node.kubernetes.io/amd-gpu": "true"})],
           {"kube-amd-gpu": [ds_pod("kube-amd-gpu", "default-device-plugin", "mi300x-1"),
                             ds_pod("kube-amd-gpu", "default-device-plugin", "mi300x-2", ready=False)]})
    [status] = await service.status(registry, ["amd"], "plugin", view)
    assert status.state == "degraded" and (status.desired, status.ready) == (2, 1)
    assert status.missing_nodes == ["mi300x-2"]


async def test_matcher_namespace_keeps_other_namespaces_out(registry: Any, fake: Any, view: Any) -> None:
    elsewhere = daemonset("monitoring", "default-device-plugin", desired=1, ready=1)
    script(fake, [elsewhere], [], {})
    [status] = await service.status(registry, ["amd"], "plugin", view)
    assert status.state == "not-installed" and status.daemonsets == []


async def test_unmanaged_mode_is_found_by_its_matchers(registry: Any, fake: Any, view: Any) -> None:
    habana = daemonset("habana-system", "habanalabs-device-plugin-daemonset", desired=1, ready=1,
                       image="vault.habana.ai/docker-k8s-device-plugin/docker-k8s-device-plugin:1.21.1")
    script(fake, [habana], [node("gaudi-1")], {"habana-system": [ds_pod("habana-system", "habanalabs-device-plugin-daemonset", "gaudi-1")]})
    [status] = await service.status(registry, ["gaudi"], "plugin", view)
    assert status.managed is False and status.state == "ready"
    assert status.versions == ["1.21.1"] and "unversioned manifest" in status.note


async def test_every_hardware_with_a_driver_by_default(registry: Any, fake: Any, view: Any) -> None:
    script(fake, [], [], {})
    found = await service.status(registry, [], None, view)
    expected = {("amd", "plugin"), ("amd", "dra"), ("cpu", "default"), ("cpu", "dra"), ("intel-gaudi", "dra"),
                ("intel-gaudi", "plugin"), ("intel-xpu", "dra"), ("intel-xpu", "plugin"), ("nvidia", "plugin"), ("nvidia", "dra")}
    assert {(s.hardware, s.mode) for s in found} == expected
    assert {s.state for s in found if (s.hardware, s.mode) == ("cpu", "default")} == {"no-matchers"}


def test_version_sources_in_order() -> None:
    assert daemonset_version(daemonset("n", "a", desired=1, ready=1, labels={"app.kubernetes.io/version": "1.2.3",
                                                                                "helm.sh/chart": "a-9.9.9"})) == "1.2.3"
    assert daemonset_version(daemonset("n", "a", desired=1, ready=1, labels={"helm.sh/chart": "dra-driver-cpu-0.3.0"})) == "0.3.0"
    assert daemonset_version(daemonset("n", "a", desired=1, ready=1, image="registry:5000/team/img:v2@sha256:ab")) == "v2"
    assert daemonset_version(daemonset("n", "a", desired=1, ready=1, image="registry:5000/team/img")) is None
