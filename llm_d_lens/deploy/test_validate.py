"""Validation of a fitted render: the guide's common errors, caught before anything is applied."""

from __future__ import annotations

from typing import Any

from llm_d_lens.deploy.conftest import GPU2, claim_template, deployment
from llm_d_lens.deploy.validate import mixed_hardware, validate
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.hardware.resolution import Resolver


def check(objects: list[dict[str, Any]], hardware: str, mode: str, count: int | None = None) -> list[tuple[str, str, str]]:
    registry = get_registry()
    profile = registry.get(hardware)
    counts = {f"Deployment/{o['metadata']['name']}": count for o in objects if o["kind"] == "Deployment"} if count else {}
    issues = validate(objects, profile, mode, profile.effective_modes()[mode], counts, Resolver(registry))
    return [(i.severity, i.code, i.message) for i in issues]


def test_a_dra_mode_without_a_claim_template_is_the_guides_common_error() -> None:
    issues = check([deployment(GPU2)], "nvidia", "dra")
    assert issues == [
        ("error", "RESOURCE_CLAIM_TEMPLATE_MISSING", "ResourceClaimTemplate is missing: no container asks for gpu.nvidia.com "
         "through a ResourceClaimTemplate, which access mode 'dra' of nvidia needs"),
        ("error", "MIXED_REQUEST_MODEL", "container modelserver still asks for nvidia.com/gpu: 2 beside its DRA claim"),
    ]


def test_a_claim_in_an_extended_resource_render_is_an_error() -> None:
    objects = [claim_template("t", {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}),
               deployment(GPU2, claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}], uses=[{"name": "gpu"}])]
    codes = [code for _, code, _ in check(objects, "nvidia", "plugin", 2)]
    assert codes == ["UNEXPECTED_RESOURCE_CLAIM", "UNEXPECTED_RESOURCE_CLAIM"]  # the pod's use, and the template itself


def test_a_correct_render_has_no_issues_and_the_count_is_checked() -> None:
    assert check([deployment(GPU2)], "nvidia", "plugin", 2) == []
    assert check([deployment(GPU2)], "nvidia", "plugin", 4) == [
        ("error", "COUNT_MISMATCH", "asks for nvidia.com/gpu: 2, not 4 device(s)")]


def test_roles_of_one_deployment_on_different_hardware_are_refused() -> None:
    amd = {"llm-d.ai/role": "prefill"}
    objects = [deployment(GPU2), deployment({"limits": {"amd.com/gpu": 1}}, labels=amd, name="ob-prefill")]
    issue = mixed_hardware(objects, Resolver(get_registry()))
    assert issue is not None
    assert issue.message == ("the roles of one deployment must run on one hardware, found amd, nvidia: "
                             "role decode asks for nvidia (nvidia.com/gpu); role prefill asks for amd (amd.com/gpu)")
    # two roles on the same hardware are fine, as is a NIC next to the GPU
    nic = {"limits": {"nvidia.com/gpu": 1, "rdma/ib": 1}, "requests": {"nvidia.com/gpu": 1, "rdma/ib": 1}}
    assert mixed_hardware([deployment(GPU2), deployment(nic, labels={"llm-d.ai/role": "prefill"}, name="p")],
                          Resolver(get_registry())) is None


def test_an_unregistered_device_is_a_warning_and_labels_must_match() -> None:
    fpga = {"limits": {"nvidia.com/gpu": 2, "example.com/fpga": 1}, "requests": {"nvidia.com/gpu": 2, "example.com/fpga": 1}}
    assert check([deployment(fpga)], "nvidia", "plugin", 2) == [
        ("warning", "DEVICE_NOT_REGISTERED", "container modelserver asks for example.com/fpga: 1, which resolves to no registered "
         "hardware; Lens cannot check it")]
    # a NIC is a network device now (issue 31): checked by its pairing, never "not registered"
    nic = {"limits": {"nvidia.com/gpu": 2, "rdma/ib": 1}, "requests": {"nvidia.com/gpu": 2, "rdma/ib": 1}}
    assert check([deployment(nic)], "nvidia", "plugin", 2) == []
    xpu_labels = {"llm-d.ai/accelerator-variant": "xpu", "llm-d.ai/accelerator-vendor": "intel"}
    assert ("error", "LABEL_MISMATCH", "labels llm-d.ai/accelerator-variant=xpu, llm-d.ai/accelerator-vendor=intel "
            "resolve to intel-xpu, not nvidia") in check([deployment(GPU2, labels=xpu_labels)], "nvidia", "plugin", 2)


def test_a_mode_without_devices_refuses_device_requests() -> None:
    cpu = {"llm-d.ai/accelerator-variant": "cpu", "llm-d.ai/accelerator-vendor": "intel"}
    assert check([deployment({"limits": {"cpu": "64"}}, labels=cpu)], "cpu", "default") == []
    assert check([deployment(GPU2, labels=cpu)], "cpu", "default") == [
        ("error", "UNEXPECTED_DEVICE_REQUEST",
         "container modelserver asks for nvidia.com/gpu: 2, but access mode 'default' asks for none")]


def test_a_claim_on_a_template_the_render_lacks_is_an_upstream_error() -> None:
    # early upstream revisions renamed the template with namePrefix but not the pod's reference to it
    from llm_d_lens.deploy.conftest import claim_template, deployment
    from llm_d_lens.deploy.shape import FitOptions, fit
    from llm_d_lens.deploy.validate import validate
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.hardware.resolution import Resolver

    registry = get_registry()
    xpu = {"llm-d.ai/accelerator-variant": "xpu", "llm-d.ai/accelerator-vendor": "intel"}
    rendered = [claim_template("ob-xpu-claim", {"name": "intel", "exactly": {"deviceClassName": "gpu.intel.com", "count": 1}}),
                deployment({}, labels=xpu, claims=[{"name": "c", "resourceClaimTemplateName": "xpu-claim"}], uses=[{"name": "c"}])]
    profile = registry.get("intel-xpu")
    fitted = fit(rendered, profile, FitOptions(mode="dra"), Resolver(registry))
    mode = profile.effective_modes()["dra"]
    issues = [i for i in validate(fitted.objects, profile, "dra", mode, fitted.counts, Resolver(registry))
              if i.code == "CLAIM_TEMPLATE_NOT_RENDERED"]
    assert [i.message for i in issues] == [
        "claim c names ResourceClaimTemplate xpu-claim, which the render does not contain (an upstream problem); "
        "the render has ob-xpu-claim: a namePrefix renamed it without a nameReference"]
