"""Fitting the request shape, on hand-written rendered objects (no kustomize needed)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from llm_d_lens.deploy.conftest import (
    ACME,
    GPU2,
    LABELS,
    claim_template,
    deployment,
    registry_of,
)
from llm_d_lens.deploy.errors import DeployRequestInvalid
from llm_d_lens.deploy.shape import (
    FitOptions,
    RuntimeClassRef,
    fit,
    image_repository,
    normalize_pci,
    parallelism,
)
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.hardware.resolution import Resolver


def run(objects: list[dict[str, Any]], hardware: str, registry=None, **options: Any):
    registry = registry or get_registry()
    return fit(objects, registry.get(hardware), FitOptions(**options), Resolver(registry))


def test_an_extended_resource_overlay_fitted_to_dra() -> None:
    rendered = [deployment(GPU2)]
    original = copy.deepcopy(rendered)
    result = run(rendered, "nvidia", mode="dra")
    assert rendered == original  # the render given is not changed
    template, workload = result.objects
    assert template == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "ob-decode-gpu", "labels": LABELS},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}]}}},
    }
    pod = workload["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "ob-decode-gpu"}]
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": "16"}, "requests": {"cpu": "8"}, "claims": [{"name": "gpu"}]}
    assert "resources" not in pod["containers"][1]  # the sidecar asks for nothing
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert result.counts == {"Deployment/ob-decode": 2}
    assert result.count_sources == {"Deployment/ob-decode": "the overlay's own request"}


def test_a_dra_overlay_fitted_to_an_extended_resource() -> None:
    xpu = {"llm-d.ai/accelerator-variant": "xpu", "llm-d.ai/accelerator-vendor": "intel"}
    rendered = [claim_template("xpu-claim", {"name": "intel", "exactly": {"deviceClassName": "gpu.intel.com", "count": 1}}),
                deployment({"limits": {"cpu": "8"}}, labels=xpu, claims=[{"name": "c", "resourceClaimTemplateName": "xpu-claim"}],
                           uses=[{"name": "c"}], image="ghcr.io/llm-d/llm-d-xpu:v0.7.0")]
    result = run(rendered, "intel-xpu", mode="plugin", count=2)
    assert [o["kind"] for o in result.objects] == ["Deployment"]
    pod = result.objects[0]["spec"]["template"]["spec"]
    assert "resourceClaims" not in pod
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": "8", "gpu.intel.com/xe": 2},
                                                 "requests": {"gpu.intel.com/xe": 2}}
    assert run(rendered, "intel-xpu", mode="plugin", resource_name="gpu.intel.com/i915").objects[0][
        "spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["gpu.intel.com/i915"] == 1


def test_the_overlays_own_claim_is_reused_and_only_accelerator_requests_change() -> None:
    gaudi = {"llm-d.ai/accelerator-variant": "hpu", "llm-d.ai/accelerator-vendor": "intel"}
    nic = {"name": "nic", "exactly": {"deviceClassName": "rdma.example.net"}}
    rendered = [claim_template("g", {"name": "old-name", "exactly": {"deviceClassName": "gaudi.intel.com", "count": 1}}, nic),
                deployment({}, labels=gaudi, claims=[{"name": "c", "resourceClaimTemplateName": "g"}],
                           uses=[{"name": "c", "request": "old-name"}], image="ghcr.io/llm-d/llm-d-hpu:v0.7.0")]
    rendered[0]["spec"]["spec"]["devices"]["constraints"] = [{"requests": ["old-name", "nic"], "matchAttribute": "x/pcieRoot"}]
    result = run(rendered, "gaudi", mode="dra", count=4)
    template, workload = result.objects
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gaudi", "exactly": {"deviceClassName": "gaudi.intel.com", "count": 4, "allocationMode": "ExactCount"}}, nic]
    assert workload["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] == [{"name": "c", "request": "gaudi"}]
    # in plugin mode only the accelerator request goes; the NIC request and its template stay
    plugin = run(rendered, "gaudi", mode="plugin")
    template, workload = plugin.objects
    assert template["spec"]["spec"]["devices"] == {"requests": [nic]}
    # the container used only the dropped accelerator request, so its claim use goes too
    assert workload["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"habana.ai/gaudi": 1}, "requests": {"habana.ai/gaudi": 1}}


def test_pci_allowlist_becomes_a_cel_selector() -> None:
    result = run([deployment(GPU2)], "nvidia", mode="dra", pci_allow=("3B:00.0", "0000:86:00.0"))
    exactly = result.objects[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["selectors"] == [{"cel": {"expression":
                                             'device.attributes["resource.kubernetes.io"].pciBusID in ["0000:3b:00.0", "0000:86:00.0"]'}}]
    amd = {"llm-d.ai/accelerator-variant": "gpu", "llm-d.ai/accelerator-vendor": "amd"}
    result = run([deployment({"limits": {"amd.com/gpu": 1}}, labels=amd)], "amd", mode="dra", pci_allow=("0000:c1:00.0",))
    assert result.objects[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] == [
        {"cel": {"expression": 'device.attributes["gpu.amd.com"].pciAddr in ["0000:c1:00.0"]'}}]


@pytest.mark.parametrize("hardware,options,message", [
    ("nvidia", {"mode": "plugin", "pci_allow": ("0000:3b:00.0",)}, "does not support a PCI allowlist (it is extended-resource, not dra)"),
    ("intel-gaudi", {"mode": "dra", "pci_allow": ("0000:3b:00.0",)}, "access mode 'dra' of 'intel-gaudi' does not support a PCI allowlist"),
    ("nvidia", {"mode": "dra", "pci_allow": ("3b:00",)}, "--pci-allow '3b:00' is not a PCI address"),
    ("nvidia", {"mode": "dra", "count": 2, "pci_allow": ("3b:00.0",)}, "--count 2 cannot be met by 1 allowed PCI address"),
    ("nvidia", {"mode": "mig"}, "hardware 'nvidia' has no access mode 'mig'; its modes: plugin, dra"),
    # a partition the inventory counts (nvidia.com/mig-1g.10gb) may be requested; another name may not
    ("nvidia", {"mode": "plugin", "resource_name": "nvidia.com/gpu-shared"}, "requests nvidia.com/gpu "
     "(or a partition matching inventory.partition_resource_patterns), not 'nvidia.com/gpu-shared'"),
    ("cpu", {"mode": "default", "count": 4}, "access mode 'default' of 'cpu' asks for no accelerator, so it takes no --count"),
])
def test_requests_the_hardware_cannot_take(hardware: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(DeployRequestInvalid) as raised:
        run([deployment(GPU2)], hardware, **options)
    assert message in raised.value.message


def test_a_derived_count_larger_than_the_allowlist_is_refused() -> None:
    with pytest.raises(DeployRequestInvalid) as raised:
        run([deployment(GPU2)], "nvidia", mode="dra", pci_allow=("0000:3b:00.0",))
    assert raised.value.message == ("Deployment/ob-decode asks for 2 devices per pod (the overlay's own request), but "
                                    "--pci-allow admits only 1; allow more addresses or pass --count")


def test_count_comes_from_the_flags_when_the_overlay_states_none() -> None:
    result = run([deployment(None, args=["m", "--tensor-parallel-size", "4", "--pipeline-parallel-size=2"])], "nvidia", mode="plugin")
    assert result.counts == {"Deployment/ob-decode": 8}
    assert result.objects[0]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}
    assert parallelism({"args": ["--tp_size=2"]}) == 2
    assert parallelism({"command": ["python", "-m", "sglang", "--tp", "4"]}) == 4
    assert parallelism({"args": ["--port=8000"]}) is None
    assert run([deployment(GPU2)], "nvidia", mode="plugin", count=1).counts == {"Deployment/ob-decode": 1}


def test_upstream_pins_are_kept_placeholders_filled_and_managed_images_replaced_only_when_asked() -> None:
    acme = registry_of(ACME)
    labels = {"llm-d.ai/accelerator-variant": "acc", "llm-d.ai/accelerator-vendor": "acme"}

    def image(result: Any) -> str:
        return result.objects[0]["spec"]["template"]["spec"]["containers"][0]["image"]

    pinned = [deployment(None, labels=labels, image="registry.acme.example/serve:1.0-nightly")]
    kept = run(pinned, "acme", acme, mode="plugin")
    assert image(kept) == "registry.acme.example/serve:1.0-nightly"  # a newer or older pin: --revision reproduces it
    assert [(i["action"], i["image"]) for i in kept.images] == [("kept", "registry.acme.example/serve:1.0-nightly")]
    replaced = run(pinned, "acme", acme, mode="plugin", image_policy="profile")
    assert image(replaced) == "registry.acme.example/serve:2.0"
    assert replaced.images[0]["action"] == "replaced" and replaced.images[0]["upstream"] == "registry.acme.example/serve:1.0-nightly"
    custom = run([deployment(None, labels=labels, image="my.registry/serve:patched")], "acme", acme, mode="plugin",
                 image_policy="profile")
    assert image(custom) == "my.registry/serve:patched"  # not a repository the profile manages
    assert "kept image my.registry/serve:patched" in custom.notes[-1]
    placeholder = run([deployment(None, labels=labels, image="REPLACE_MODEL_SERVER_IMAGE")], "acme", acme, mode="plugin")
    assert image(placeholder) == "registry.acme.example/serve:2.0"
    assert placeholder.images[0]["action"] == "filled"
    assert image_repository("docker.io/vllm/vllm-openai:v1@sha256:abc") == "vllm/vllm-openai"
    assert image_repository("localhost:5000/serve") == "localhost:5000/serve"


def test_scheduling_comes_from_the_profile_and_runtime_class_from_the_cluster() -> None:
    acme = registry_of(ACME)
    labels = {"llm-d.ai/accelerator-variant": "acc", "llm-d.ai/accelerator-vendor": "acme"}
    known = (RuntimeClassRef("runc", "runc"), RuntimeClassRef("vendor-x", "acme-runtime"))
    result = run([deployment(None, labels=labels)], "acme", acme, mode="dra", runtime_classes=known)
    pod = result.objects[1]["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "vendor-x"  # matched by its handler
    assert pod["nodeSelector"] == {"acme.example/npu.present": "true"}
    assert pod["tolerations"] == [{"key": "acme.example/npu", "operator": "Exists", "effect": "NoSchedule"}]
    unknown = run([deployment(None, labels=labels)], "acme", acme, mode="dra", runtime_classes=(RuntimeClassRef("runc"),))
    assert "runtimeClassName" not in unknown.objects[1]["spec"]["template"]["spec"]
    not_asked = run([deployment(None, labels=labels)], "acme", acme, mode="dra")
    assert "runtimeClassName" not in not_asked.objects[1]["spec"]["template"]["spec"]


def test_workloads_that_are_not_model_servers_are_left_alone() -> None:
    gateway = deployment(None, labels={"app": "gateway"}, name="gw")
    result = run([gateway, deployment(GPU2)], "nvidia", mode="dra")
    assert result.objects[0] == gateway
    assert [o["kind"] for o in result.objects] == ["Deployment", "ResourceClaimTemplate", "Deployment"]


def test_pci_addresses_are_normalised() -> None:
    assert normalize_pci(["3B:00.0", "0000:3b:00.0", "0001:af:1f.7"]) == ("0000:3b:00.0", "0001:af:1f.7")
    # the spelling an exporter or nvidia-smi prints (an 8-digit domain) is the same device
    assert normalize_pci(["00000000:3b:00.0", "0000:3B:00.0"]) == ("0000:3b:00.0",)


def test_empty_yaml_fields_written_as_null_are_filled_like_absent_ones() -> None:
    # `resources:` or `resourceClaims:` with nothing under them in a patch render as null
    workload = deployment(None)
    workload["spec"]["template"]["spec"]["containers"][0]["resources"] = None
    workload["spec"]["template"]["spec"]["resourceClaims"] = None
    template, fitted = run([workload], "nvidia", mode="dra", count=2).objects
    assert template["kind"] == "ResourceClaimTemplate"
    pod_spec = fitted["spec"]["template"]["spec"]
    assert pod_spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert pod_spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    (fitted,) = run([workload], "nvidia", mode="plugin", count=2).objects
    assert fitted["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 2}}


def test_a_null_template_metadata_is_read_as_no_labels() -> None:
    workload = deployment(GPU2)
    workload["spec"]["template"]["metadata"] = None
    (fitted,) = run([workload], "nvidia", mode="plugin").objects  # still asks for nvidia.com/gpu: a model server
    assert fitted["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
