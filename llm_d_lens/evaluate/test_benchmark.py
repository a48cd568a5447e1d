"""llm-d-benchmark scenario settings for every built-in hardware and access mode.

Expected values are written out from llm-d-benchmark's own tables (parser/cluster_resource_resolver.py
at 8bc9f1dd): profiles nvidia, amd, intel-gaudi, google, intel-i915, intel-xe and the DRA-only
intel-xpu (driver gpu.intel.com); a DRA profile gets ``draDriver`` and ``resource: ""`` (see test_handoff.py); Intel on a
device plugin follows the resource (gpu.intel.com/i915 -> intel-i915, gpu.intel.com/xe -> intel-xe);
a CPU run has accelerator count 0.
"""

from __future__ import annotations

import json

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cli.app import main as lens_main
from llm_d_lens.errors import LensError
from llm_d_lens.evaluate.benchmark import BenchmarkConfig, select_target, single_pool
from llm_d_lens.evaluate.config import build_config
from llm_d_lens.evaluate.errors import AccessModeUnknown, BenchmarkUnsupported
from llm_d_lens.evaluate.profiles import load_file
from llm_d_lens.evaluate.test_workload_profiles import changed, write_profile
from llm_d_lens.hardware.registry import get_registry


def dra(profile: str, device_class: str, count: int) -> dict:
    return {"enabled": True, "type": profile,
            "claimTemplates": {profile: {"class": device_class, "match": "exactly", "count": count, "selectors": []}}}


# (hardware, mode) -> (accelerator block, dra block or None), for two accelerators per pod
EXPECTED = {
    ("nvidia", "plugin"): ({"type": "nvidia", "profile": "nvidia", "resource": "nvidia.com/gpu"}, None),
    ("nvidia", "dra"): ({"type": "nvidia", "profile": "nvidia", "draDriver": "gpu.nvidia.com", "resource": ""},
                        dra("nvidia", "gpu.nvidia.com", 2)),
    ("amd", "plugin"): ({"type": "amd", "profile": "amd", "resource": "amd.com/gpu"}, None),
    ("amd", "dra"): ({"type": "amd", "profile": "amd", "draDriver": "gpu.amd.com", "resource": ""}, dra("amd", "gpu.amd.com", 2)),
    ("intel-xpu", "dra"): ({"type": "intel-xpu", "profile": "intel-xpu", "draDriver": "gpu.intel.com", "resource": ""},
                           dra("intel-xpu", "gpu.intel.com", 2)),
    ("intel-xpu", "plugin"): ({"type": "intel-xe", "profile": "intel-xe", "resource": "gpu.intel.com/xe"}, None),
    ("intel-gaudi", "dra"): ({"type": "intel-gaudi", "profile": "intel-gaudi", "draDriver": "gaudi.intel.com", "resource": ""},
                             dra("intel-gaudi", "gaudi.intel.com", 2)),
    ("intel-gaudi", "plugin"): ({"type": "intel-gaudi", "profile": "intel-gaudi", "resource": "habana.ai/gaudi"}, None),
    ("google-tpu", "plugin"): ({"type": "google", "profile": "google", "resource": "google.com/tpu"}, None),
    ("cpu", "default"): ({"count": 0}, None),
}
REFUSED = {("cpu", "dra")}


def test_every_builtin_hardware_and_mode_has_an_expectation():
    declared = {(p.id, mode) for p in get_registry().profiles() for mode in p.effective_modes()}
    assert declared == set(EXPECTED) | REFUSED


@pytest.mark.parametrize(("hardware", "mode"), sorted(EXPECTED))
def test_benchmark_block_for_each_builtin_hardware_and_mode(hardware, mode):
    accelerator, dra_block = EXPECTED[(hardware, mode)]
    entry = BenchmarkConfig(select_target(hardware, mode), single_pool(2), "optimized-baseline").scenario()["scenario"][0]
    assert entry["name"] == f"optimized-baseline-{hardware}"
    assert entry["accelerator"] == accelerator
    assert entry.get("dra") == dra_block
    assert entry["decode"]["accelerator"] == {"count": 0 if accelerator == {"count": 0} else 2}
    assert entry["prefill"] == {"enabled": False, "replicas": 0}
    # a DRA scenario names no extended resource: the empty name clears llm-d-benchmark's default one
    assert "draDriver" not in entry["accelerator"] or entry["accelerator"]["resource"] == ""


# hardware -> decode.acceleratorType, as each built-in profile's data gives it: its first
# inventory.product_labels entry with "auto" (llm-d-benchmark reads the SKU from the nodes), else the
# first literal entry of its node_label_selector. llm-d-benchmark's own default is NVIDIA's label.
ACCELERATOR_TYPES = {
    "nvidia": {"labelKey": "nvidia.com/gpu.product", "labelValue": "auto"},
    "amd": {"labelKey": "amd.com/gpu.product-name", "labelValue": "auto"},
    "intel-xpu": {"labelKey": "gpu.intel.com/product", "labelValue": "auto"},
    "intel-gaudi": {"labelKey": "intel.feature.node.kubernetes.io/gaudi", "labelValue": "true"},
    "google-tpu": {"labelKey": "cloud.google.com/gke-tpu-accelerator", "labelValue": "auto"},
    "cpu": {"labelKey": "feature.node.kubernetes.io/cpu-cpuid.AMXBF16", "labelValue": "true"},
}


@pytest.mark.parametrize(("hardware", "mode"), sorted(EXPECTED))
def test_each_role_names_the_node_label_of_its_hardware_not_llm_d_benchmarks_default(hardware, mode):
    config = BenchmarkConfig(select_target(hardware, mode), single_pool(2), "g")
    assert config.scenario()["scenario"][0]["decode"]["acceleratorType"] == ACCELERATOR_TYPES[hardware]
    assert config.summary()["accelerator_type"] == {"decode": ACCELERATOR_TYPES[hardware]}


def test_the_node_label_follows_the_profile_data_not_a_vendor_name():
    from llm_d_lens.evaluate.benchmark import accelerator_type

    hardware = get_registry().get("nvidia")
    relabelled = hardware.replace(inventory=hardware.inventory.replace(product_labels=["example.com/chip.model"]))
    assert accelerator_type(relabelled) == {"labelKey": "example.com/chip.model", "labelValue": "auto"}
    assert accelerator_type(relabelled, {"example.com/chip.model": "X1"}) == {"labelKey": "example.com/chip.model",
                                                                                "labelValue": "X1"}
    bare = relabelled.replace(inventory=hardware.inventory.replace(product_labels=[]),
                              node_label_selector={"example.com/any": "*", "example.com/chip": "yes"}, presence=None)
    assert accelerator_type(bare) == {"labelKey": "example.com/chip", "labelValue": "yes"}
    assert accelerator_type(bare.replace(node_label_selector={})) is None


@pytest.mark.parametrize("mode", ["dra", "plugin"])
def test_a_dra_class_is_never_rendered_as_a_container_resource(mode):
    text = BenchmarkConfig(select_target("intel-xpu", mode), single_pool(1), "g").to_yaml()
    assert "gpu.intel.com:" not in text  # as a mapping key it would be a container resource
    assert ("draDriver" in text) == (mode == "dra")


def test_intel_on_the_device_plugin_follows_the_resource():
    i915 = BenchmarkConfig(select_target("intel-xpu", "plugin", "gpu.intel.com/i915"), single_pool(1), "g").accelerator()
    assert i915 == {"type": "intel-i915", "profile": "intel-i915", "resource": "gpu.intel.com/i915"}


@pytest.mark.parametrize(("alias", "hardware", "mode", "resource"), [
    ("xpu", "intel-xpu", "dra", None),
    ("intel-xe", "intel-xpu", "plugin", "gpu.intel.com/xe"),
    ("intel-i915", "intel-xpu", "plugin", "gpu.intel.com/i915"),
    ("rocm", "amd", "plugin", "amd.com/gpu"),
    ("tpu", "google-tpu", "plugin", "google.com/tpu"),
    ("gaudi", "intel-gaudi", "dra", None),
    ("CUDA", "nvidia", "plugin", "nvidia.com/gpu"),
])
def test_any_alias_selects_the_hardware_and_a_benchmark_profile_alias_its_mode(alias, hardware, mode, resource):
    target = select_target(alias)
    assert (target.hardware.id, target.mode_name, target.resource) == (hardware, mode, resource)


def test_an_explicit_mode_beats_the_alias_hint():
    target = select_target("intel-i915", "dra")
    assert (target.mode_name, target.resource) == ("dra", None)


def test_hardware_without_a_benchmark_profile_is_refused_with_the_reason():
    with pytest.raises(BenchmarkUnsupported) as caught:
        BenchmarkConfig(select_target("cpu", "dra"), single_pool(1), "g").scenario()
    assert caught.value.code == "BENCHMARK_PROFILE_MISSING"
    assert caught.value.message == (
        "hardware 'cpu' has no llm-d-benchmark profile (benchmark_profile is null), so its access mode 'dra' cannot be "
        "benchmarked: llm-d-benchmark must support the hardware first, then the profile's benchmark_profile names it; "
        "access mode 'default' runs without accelerators and needs no benchmark profile")


@pytest.mark.parametrize(("args", "message"), [
    (("nvidia", "mig"), "hardware 'nvidia' has no access mode 'mig'; modes: plugin, dra"),
    (("intel-xpu", "plugin", "gpu.intel.com"),
     "access mode 'plugin' of 'intel-xpu' requests gpu.intel.com/xe, gpu.intel.com/i915, intel.com/gpu, not 'gpu.intel.com'"),
    (("intel-xpu", "dra", "gpu.intel.com/xe"),
     "access mode 'dra' of 'intel-xpu' requests through the DRA class 'gpu.intel.com', not the extended resource "
     "'gpu.intel.com/xe'"),
    (("cpu", "default", "example.com/x"),
     "access mode 'default' of 'cpu' requests no accelerator, not the extended resource 'example.com/x'"),
])
def test_a_mode_or_resource_the_hardware_does_not_have_is_refused(args, message):
    with pytest.raises(AccessModeUnknown) as caught:
        select_target(*args)
    assert caught.value.message == message


def test_unknown_hardware_is_not_registered():
    with pytest.raises(LensError) as caught:
        select_target("nvdia")
    assert caught.value.code == "ACCELERATOR_NOT_REGISTERED"


# -- counts from the workload -------------------------------------------------------------------


def disaggregated(tmp_path: Path, **hardware: str):
    data = changed(serving={"mode": "disaggregated", "model": "org/model",
                            "prefill": {"replicas": 2, "parallelism": {"tensor": 1}},
                            "decode": {"replicas": 1, "parallelism": {"tensor": 2, "data": 2, "data_local": 2}}},
                   coverage__communicators=2)
    data["hardware"].update(hardware)
    return load_file(write_profile(tmp_path, "pd", data))


def test_counts_per_role_come_from_each_pool_and_a_dra_template_leaves_count_to_them(tmp_path):
    entry = build_config(hardware="intel-xpu", workload=disaggregated(tmp_path)).scenario()["scenario"][0]
    assert entry["model"] == {"name": "org/model"}
    on_intel = {"labelKey": "gpu.intel.com/product", "labelValue": "auto"}
    assert entry["prefill"] == {"enabled": True, "replicas": 2, "acceleratorType": on_intel,
                                "parallelism": {"tensor": 1, "data": 1, "dataLocal": 1}, "accelerator": {"count": 1}}
    assert entry["decode"] == {"replicas": 1, "acceleratorType": on_intel,
                               "parallelism": {"tensor": 2, "data": 2, "dataLocal": 2}, "accelerator": {"count": 4}}
    # prefill wants 1 device per pod and decode 4: one template count would be wrong for one of them
    assert entry["dra"]["claimTemplates"]["intel-xpu"] == {"class": "gpu.intel.com", "match": "exactly", "selectors": []}


def test_the_workload_profile_can_name_the_hardware_and_mode(tmp_path):
    config = build_config(workload=disaggregated(tmp_path, accelerator="rocm", access_mode="dra"))
    assert config.summary()["hardware"] == "amd"
    assert config.accelerator() == {"type": "amd", "profile": "amd", "draDriver": "gpu.amd.com", "resource": ""}


def test_naming_the_same_hardware_by_another_alias_keeps_the_profiles_access_mode(tmp_path):
    config = build_config(hardware="instinct", workload=disaggregated(tmp_path, accelerator="rocm", access_mode="dra"))
    assert (config.target.hardware.id, config.target.mode_name) == ("amd", "dra")


def test_a_hardware_that_contradicts_the_workload_profile_is_refused(tmp_path):
    with pytest.raises(LensError) as caught:
        build_config(hardware="nvidia", workload=disaggregated(tmp_path, accelerator="rocm"))
    assert caught.value.message == "hardware 'nvidia' is not the hardware workload profile 'pd' names ('rocm')"


def test_no_hardware_at_all_is_refused():
    with pytest.raises(LensError) as caught:
        build_config()
    assert caught.value.code == "CONFIG_ARGUMENTS_INVALID"


# -- the command and the endpoint ---------------------------------------------------------------


def test_config_writes_the_scenario_and_never_overwrites_without_force(tmp_path, capsys):
    out = tmp_path / "scenario.yaml"
    assert lens_main(["evaluate", "config", "--hardware", "intel-xpu", "--tensor-parallel", "4", "--output-file", str(out)]) == 0
    assert capsys.readouterr().out == (f"wrote {out}: hardware intel-xpu, access mode dra, benchmark profile intel-xpu, "
                                       f"gpu.intel.com\n")
    written = yaml.safe_load(out.read_text())
    assert written["scenario"][0]["dra"]["claimTemplates"]["intel-xpu"]["count"] == 4

    out.write_text("mine\n")
    assert lens_main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(out)]) == 1
    assert capsys.readouterr().err == f"error: OUTPUT_EXISTS: {out} exists; pass --force to replace it\n"
    assert out.read_text() == "mine\n"

    assert lens_main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(out), "--force"]) == 0
    assert yaml.safe_load(out.read_text())["scenario"][0]["accelerator"]["resource"] == "nvidia.com/gpu"


def test_config_warns_on_stderr_when_the_benchmarks_overlay_replaces_the_tensor_size(capsys):
    # llm-d-benchmark's intel-xpu overlay (also applied for intel-xe and intel-i915) sets
    # decode.parallelism.tensor to 1 after the scenario merge; only a --set survives it
    assert lens_main(["evaluate", "config", "--hardware", "intel-xpu", "--mode", "plugin", "--tensor-parallel", "4"]) == 0
    captured = capsys.readouterr()
    scenario = yaml.safe_load(captured.out)
    assert scenario["scenario"][0]["decode"]["parallelism"]["tensor"] == 4
    assert captured.err.startswith("warning: llm-d-benchmark's 'intel-xpu' overlay (applied for benchmark profile "
                                   "'intel-xe' after the scenario merge")
    assert "pass '--set decode.parallelism.tensor=4' to llm-d-benchmark to keep it" in captured.err
    assert captured.out.count("# warning: ") == 1 and "--set decode.parallelism.tensor=4" in captured.out

    for args in (["--hardware", "intel-xpu"], ["--hardware", "amd", "--tensor-parallel", "4"]):
        assert lens_main(["evaluate", "config", *args]) == 0  # tensor 1 is what the overlay sets; amd has no overlay
        assert capsys.readouterr().err == ""


def test_api_config_lists_the_overlay_warning_in_the_summary():
    client = TestClient(create_app(), raise_server_exceptions=False)
    body = client.post("/api/v1/evaluate/config", json={"hardware": "intel-xpu", "tensor_parallel": 2}).json()
    (warning,) = body["summary"]["warnings"]
    assert {k: warning[k] for k in ("code", "path", "scenario_value", "overlay_value", "keep_with")} == {
        "code": "BENCHMARK_OVERLAY_REPLACES", "path": "decode.parallelism.tensor", "scenario_value": 2,
        "overlay_value": 1, "keep_with": "--set decode.parallelism.tensor=2"}
    assert body["summary"]["resource"] is None and body["scenario"]["scenario"][0]["accelerator"]["resource"] == ""


def test_config_dash_o_is_the_format_and_never_names_a_file(tmp_path, capsys, monkeypatch):
    """`-o json` wrote a file called `json`; now it prints the same scenario as JSON."""
    monkeypatch.chdir(tmp_path)
    assert lens_main(["evaluate", "config", "--hardware", "intel-xpu", "--tensor-parallel", "2"]) == 0
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert lens_main(["evaluate", "config", "--hardware", "intel-xpu", "--tensor-parallel", "2", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == as_yaml
    assert list(tmp_path.iterdir()) == []
    assert lens_main(["evaluate", "config", "--hardware", "intel-xpu", "-o", "scenario.yaml"]) == 2
    assert list(tmp_path.iterdir()) == []


def test_config_prints_yaml_on_stdout_and_refuses_cpu_dra(capsys):
    assert lens_main(["evaluate", "config", "--hardware", "cpu"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["scenario"][0]["accelerator"] == {"count": 0}
    assert lens_main(["evaluate", "config", "--hardware", "cpu", "--mode", "dra"]) == 1
    assert capsys.readouterr().err.startswith("error: BENCHMARK_PROFILE_MISSING: hardware 'cpu' has no llm-d-benchmark profile")


def test_config_refuses_a_manifest_together_with_a_hardware(tmp_path, capsys):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("kind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n")
    assert lens_main(["evaluate", "config", "--hardware", "nvidia", "--from-manifest", str(manifest)]) == 1
    assert capsys.readouterr().err == ("error: CONFIG_ARGUMENTS_INVALID: a manifest says what it runs on; "
                                       "do not also give hardware\n")


def test_api_config_returns_the_scenario_and_problems_as_problem_json():
    client = TestClient(create_app())
    ok = client.post("/api/v1/evaluate/config", json={"hardware": "intel-xe", "tensor_parallel": 2})
    assert ok.status_code == 200
    body = ok.json()
    assert body["scenario"]["scenario"][0]["accelerator"] == {"type": "intel-xe", "profile": "intel-xe",
                                                              "resource": "gpu.intel.com/xe"}
    assert body["summary"]["accelerators_per_pod"] == {"decode": 2}
    assert yaml.safe_load(body["yaml"]) == body["scenario"]

    refused = client.post("/api/v1/evaluate/config", json={"hardware": "cpu", "mode": "dra"})
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "BENCHMARK_PROFILE_MISSING"

    unknown = client.post("/api/v1/evaluate/config", json={"hardware": "nope"})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "ACCELERATOR_NOT_REGISTERED")

    typo = client.post("/api/v1/evaluate/config", json={"hardwre": "nvidia"})
    assert (typo.status_code, typo.json()["code"]) == (422, "REQUEST_INVALID")


def test_config_output_that_cannot_be_written_is_a_coded_error_and_leaves_nothing(tmp_path, capsys):
    """A missing parent directory, or a directory in the file's place (even with --force), was a traceback."""
    missing = tmp_path / "nodir" / "scenario.yaml"
    assert lens_main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(missing)]) == 1
    assert capsys.readouterr().err == f"error: OUTPUT_INVALID: {missing}: the directory {missing.parent} does not exist\n"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("mine")
    assert lens_main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(tmp_path / "out"), "--force"]) == 1
    assert capsys.readouterr().err == f"error: OUTPUT_INVALID: {tmp_path / 'out'}: is a directory; give a file name\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (tmp_path / "out" / "keep").read_text() == "mine"


@pytest.mark.parametrize("option,value", [("--tensor-parallel", "100000"), ("--replicas", "1000000")])
def test_absurd_parallelism_is_a_usage_error(option, value, capsys):
    code = lens_main(["evaluate", "config", "--hardware", "nvidia", option, value])
    assert code == 2 and option in capsys.readouterr().err


# -- issue 31: partitions and networkResource ---------------------------------------------------


def test_a_partition_is_a_resource_in_plugin_mode_and_a_class_with_its_profile_in_dra_mode():
    from llm_d_lens.evaluate.config import build_config

    plugin = build_config(hardware="nvidia", mode="plugin", resource="nvidia.com/mig-1g.10gb").scenario()["scenario"][0]
    assert plugin["accelerator"]["resource"] == "nvidia.com/mig-1g.10gb"
    dra = build_config(hardware="nvidia", mode="dra", resource="nvidia.com/mig-3g.40gb")
    template = dra.scenario()["scenario"][0]["dra"]["claimTemplates"]["nvidia"]
    assert template["class"] == "mig.nvidia.com"
    assert template["selectors"] == ['device.attributes["gpu.nvidia.com"].profile == "3g.40gb"']
    assert dra.summary()["partition"] == "nvidia.com/mig-3g.40gb"


def test_network_resource_is_the_network_profiles_and_an_unknown_one_is_refused():
    from llm_d_lens.evaluate.config import ConfigArgumentsInvalid, build_config

    entry = build_config(hardware="nvidia", network="rdma-shared-device").scenario()["scenario"][0]
    assert entry["networkResource"] == "rdma/rdma_shared_device_a"
    assert build_config(hardware="nvidia", network="rdma/ib").scenario()["scenario"][0]["networkResource"] == "rdma/ib"
    assert build_config(hardware="nvidia", network="gke-rdma").summary()["network_resource"] == "mrdma.google.com"
    assert "networkResource" not in build_config(hardware="nvidia").scenario()["scenario"][0]
    with pytest.raises(ConfigArgumentsInvalid) as caught:
        build_config(hardware="nvidia", network="example.com/nic")
    assert "example.com/nic" in str(caught.value) and "sriov-rdma-vf" in str(caught.value)


def test_a_rendered_manifest_gives_its_nic_as_the_network_resource():
    from llm_d_lens.evaluate.config import build_config

    manifest = yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "decode", "labels": {"llm-d.ai/accelerator-variant": "gpu", "llm-d.ai/accelerator-vendor": "nvidia"}},
        "spec": {"template": {"metadata": {"labels": {"llm-d.ai/role": "decode"}}, "spec": {"containers": [{
            "name": "vllm", "image": "vllm/vllm-openai:v0.23.0", "args": ["--tensor-parallel-size", "8"],
            "resources": {"limits": {"nvidia.com/gpu": 8, "rdma/ib": 1}}}]}}}})
    config = build_config(manifest=manifest)
    assert config.scenario()["scenario"][0]["networkResource"] == "rdma/ib"
    assert config.summary()["network_resource"] == "rdma/ib"
