"""Discovery parsers on outputs in each tool's documented format, with the shipped profiles' settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_d_lens.cluster.errors import DiscoveryOutputInvalid, DiscoveryUnavailable
from llm_d_lens.cluster.node_discovery import (
    PodRef,
    fill_unknown_memory,
    find_pod,
    run_on_node,
)
from llm_d_lens.cluster.node_tools import parse
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.planning.catalogue import catalogue_spec
from llm_d_lens.planning.fit import FitRequest
from llm_d_lens.planning.service import plan_for_overview
from llm_d_lens.testing.fake_runner import FakeRunner

DATA = Path(__file__).resolve().parents[1] / "cluster" / "testdata"  # the node tools live in the cluster domain
MIB, GIB = 2**20, 2**30


def read(profile_id: str, fixture: str):
    discovery = get_registry().get(profile_id).planning.discovery
    return parse((DATA / fixture).read_text(encoding="utf-8"), discovery.parser, discovery.fields, fixture)


def test_nvidia_smi_csv_without_header_or_units():
    devices = read("nvidia", "nvidia-smi-noheader-nounits.csv")
    assert [(d.product, d.memory_bytes, d.pci_bus_id) for d in devices] == [
        ("NVIDIA H100 80GB HBM3", 81559 * MIB, "0000:18:00.0"), ("NVIDIA H100 80GB HBM3", 81559 * MIB, "0000:2a:00.0")]
    assert devices[1].uuid == "GPU-0f6e5d4c-3b2a-4190-8e7d-6c5b4a392817"


def test_nvidia_smi_csv_with_header_units_crlf_and_not_available():
    devices = read("nvidia", "nvidia-smi-header-units.csv")
    assert devices[0].memory_bytes == 143771 * MIB and devices[0].pci_bus_id == "0000:19:00.0"
    assert devices[1].product == "NVIDIA GH200 480GB" and devices[1].memory_bytes is None  # [N/A] stays unknown


def test_a_tool_error_instead_of_csv_names_the_line():
    with pytest.raises(DiscoveryOutputInvalid, match=r"line 1: has 1 columns, 4 expected .*couldn't communicate"):
        read("nvidia", "nvidia-smi-no-driver.txt")


def test_amd_smi_json_with_value_unit_objects():
    devices = read("amd", "amd-smi-static.json")
    assert [(d.product, d.memory_bytes) for d in devices] == [("AMD Instinct MI300X", 196592 * MIB)] * 2


def test_amd_smi_json_wrapped_with_unit_strings_and_not_available():
    devices = read("amd", "amd-smi-static-wrapped-strings.json")
    assert (devices[0].product, devices[0].memory_bytes) == ("AMD Instinct MI325X", 262128 * MIB)
    assert (devices[1].product, devices[1].memory_bytes) == (None, None)


def test_xpu_smi_json_with_byte_strings():
    devices = read("intel-xpu", "xpu-smi-discovery.json")
    assert [(d.memory_bytes, d.pci_bus_id) for d in devices] == [(128 * GIB, "0000:29:00.0"), (128 * GIB, "0000:9a:00.0")]
    assert devices[0].product == "Intel(R) Data Center GPU Max 1550"


def test_hl_smi_csv_and_other_locales_numbers():
    assert [d.serial for d in read("intel-gaudi", "hl-smi-noheader-nounits.csv")] == ["AN00012345", "AN00012346"]
    odd = read("intel-gaudi", "hl-smi-odd-locale.csv")
    # "98 304" (space grouping), "98.304" (dot grouping), "96,0 GiB" (decimal comma and its own unit)
    assert [d.memory_bytes for d in odd] == [98304 * MIB] * 3


@pytest.mark.parametrize("output,parser,fields,match", [
    ("{not json", "json", {"a": "product"}, "is not JSON"),
    ('[1, 2]', "json", {"a": "product"}, r"\$\[0\]: is not an object"),
    ('[{"m": "lots"}]', "json", {"m": "memory_mib"}, "'lots' is not a number"),
    ('[{"m": "12 furlongs"}]', "json", {"m": "memory_mib"}, "not a memory unit"),
    ('[{"m": -5}]', "json", {"m": "memory_mib"}, "not a device's memory"),
    ('[{"m": 1e300}]', "json", {"m": "memory_mib"}, "not a device's memory"),
    ('[{"m": NaN}]', "json", {"m": "memory_mib"}, None),
    ("a, b", "csv", {"a": "gpu_name"}, "unknown facts"),
    ("x", "yaml", {"a": "product"}, "'yaml' is not one of"),
])
def test_bad_output_is_a_coded_error_naming_where(output, parser, fields, match):
    if match is None:  # NaN is not JSON: read as unknown, never as a number
        assert parse(output, parser, fields, "t")[0].memory_bytes is None
        return
    with pytest.raises(DiscoveryOutputInvalid, match=match):
        parse(output, parser, fields, "tool")


def test_text_parser_splits_devices_on_blank_lines_and_repeats():
    text = "Product Name: Card A\nMemory: 16 GiB\n\nProduct Name: Card B\nMemory: 8192 MiB\nProduct Name: Card C\n"
    devices = parse(text, "text", {"Product Name": "product", "Memory": "memory_mib"}, "t")
    assert [(d.product, d.memory_bytes) for d in devices] == [("Card A", 16 * GIB), ("Card B", 8 * GIB), ("Card C", None)]


def daemonset_pod(namespace: str, name: str, owner: str, phase: str = "Running") -> dict:
    return {"metadata": {"namespace": namespace, "name": name, "ownerReferences": [{"kind": "DaemonSet", "name": owner}]},
            "status": {"phase": phase}}


def test_the_command_runs_in_the_profiles_driver_pod_through_the_runner():
    profile = get_registry().get("intel-gaudi")
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods", ...], json_body={"items": [
        daemonset_pod("kube-system", "fluentd-x", "fluentd"),
        daemonset_pod("intel-gaudi-resource-driver", "gaudi-kubelet-plugin-abc", "intel-gaudi-resource-driver-kubelet-plugin", "Pending"),
        daemonset_pod("intel-gaudi-resource-driver", "gaudi-kubelet-plugin-xyz", "intel-gaudi-resource-driver-kubelet-plugin")]})
    runner.reply(["kubectl", "exec", ...], stdout=(DATA / "hl-smi-noheader-nounits.csv").read_text())
    devices, where = run_on_node(profile, "gaudi3-01", runner)
    assert len(devices) == 2 and where == "discovery:hl-smi@intel-gaudi-resource-driver/gaudi-kubelet-plugin-xyz"
    assert runner.argvs()[0][-2:] == ["-o", "json"] and "spec.nodeName=gaudi3-01" in runner.argvs()[0]
    assert runner.argvs()[1] == ["kubectl", "exec", "-n", "intel-gaudi-resource-driver", "gaudi-kubelet-plugin-xyz", "--",
                                 "hl-smi", "-Q", "name,memory.total,bus_id,serial", "-f", "csv,noheader,nounits"]


def test_no_driver_pod_and_no_discovery_command_are_coded():
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods", ...], json_body={"items": []})
    with pytest.raises(DiscoveryUnavailable, match="--pod namespace/name"):
        run_on_node(get_registry().get("amd"), "n1", runner)
    with pytest.raises(DiscoveryUnavailable, match="declares no planning.discovery"):
        run_on_node(get_registry().get("google-tpu"), "n1", FakeRunner())
    assert find_pod(get_registry().get("cpu"), []) is None
    assert str(PodRef.parse("gpu-operator/nvidia-driver-daemonset-x:driver")) == "gpu-operator/nvidia-driver-daemonset-x:driver"
    with pytest.raises(DiscoveryUnavailable):
        PodRef.parse("just-a-name")


def test_a_node_without_memory_gets_it_from_discovery_and_the_plan_says_so(make_node, make_overview):
    profiles = {p.id: p for p in get_registry().profiles()}
    cluster = make_overview(make_node("mi-01", "amd", 8, None, product="unknown"))
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods", ...], json_body={"items": [
        daemonset_pod("kube-amd-gpu", "amd-gpu-device-plugin-q1", "amd-gpu-device-plugin")]})
    runner.reply(["kubectl", "exec", ...], stdout=(DATA / "amd-smi-static.json").read_text())
    notes = fill_unknown_memory(cluster, profiles, runner)
    assert notes == ["mi-01: amd: memory of 2 device(s) read by discovery:amd-smi@kube-amd-gpu/amd-gpu-device-plugin-q1"]
    pool = plan_for_overview(catalogue_spec("llama-3.1-8b"), FitRequest(), cluster).pools[0]
    assert pool.pool.device_memory_bytes == 196592 * MIB
    assert pool.pool.memory_source == "discovery:amd-smi@kube-amd-gpu/amd-gpu-device-plugin-q1"


def test_a_failing_tool_is_a_note_and_the_node_stays_unknown(make_node, make_overview):
    profiles = {p.id: p for p in get_registry().profiles()}
    cluster = make_overview(make_node("h-01", "nvidia", 8, None))
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods", ...], json_body={"items": [
        daemonset_pod("nvidia-device-plugin", "nvidia-device-plugin-z", "nvidia-device-plugin-daemonset")]})
    runner.reply(["kubectl", "exec", ...], stdout=(DATA / "nvidia-smi-no-driver.txt").read_text())
    notes = fill_unknown_memory(cluster, profiles, runner)
    assert "node discovery failed" in notes[0] and "line 1" in notes[0]
    assert cluster.nodes[0].hardware[0].vram.devices_known == 0


def test_cli_parses_a_saved_output_and_refuses_a_missing_file(capsys, tmp_path):
    from llm_d_lens.cli.app import main

    assert main(["plan", "discover", "--hardware", "xpu", "--from-file", str(DATA / "xpu-smi-discovery.json"), "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["hardware"] == "intel-xpu" and [d["memory_bytes"] for d in document["devices"]] == [128 * GIB] * 2
    assert main(["plan", "discover", "--hardware", "xpu", "--from-file", str(tmp_path / "none.json")]) == 1
    assert "PLANNING_DISCOVERY_OUTPUT_INVALID" in capsys.readouterr().err


def live_cluster_with_unlabelled_gaudi_node() -> FakeRunner:
    """A live cluster (through kubectl) whose Gaudi node advertises 8 devices but no product or memory."""
    from llm_d_lens.testing.cluster import as_list, node

    fake = FakeRunner()
    gaudi = node("gaudi-07", resources={"habana.ai/gaudi": "8"})
    fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body=as_list(gaudi))
    fake.reply(["kubectl", "get", "pods", "--all-namespaces", "-o", "json"], json_body=as_list())
    for kind in ("resourceslices", "deviceclasses", "resourceclaims"):
        fake.reply(["kubectl", "get", f"{kind}.resource.k8s.io", ...], json_body=as_list())
    fake.reply(["kubectl", "get", "pods", "--all-namespaces", "--field-selector", ...], json_body={"items": [
        daemonset_pod("kube-system", "fluentd-9x", "fluentd"),
        daemonset_pod("intel-gaudi-resource-driver", "gaudi-plugin-9x", "intel-gaudi-resource-driver-kubelet-plugin")]})
    fake.reply(["kubectl", "exec", ...], stdout=(DATA / "hl-smi-noheader-nounits.csv").read_text())
    return fake


def test_a_live_plan_reads_unknown_memory_on_the_node_and_marks_it(monkeypatch):
    from llm_d_lens.planning.service import plan

    fake = live_cluster_with_unlabelled_gaudi_node()
    result = plan(catalogue_spec("llama-3.1-70b"), FitRequest(), ClusterSource(context="prod"), fake, discover=True)
    pool = result.pools[0]
    assert pool.pool.memory_source == "discovery:hl-smi@intel-gaudi-resource-driver/gaudi-plugin-9x"
    assert pool.pool.device_memory_bytes == 131072 * MIB and pool.pool.product == "HL-325L"  # the tool named it
    assert pool.best is not None and result.notes[0].startswith("gaudi-07: intel-gaudi: memory of 2 device(s)")


def test_cluster_inspect_discover_fills_the_bucket_vram(monkeypatch, capsys):
    from llm_d_lens.cli.app import main
    from llm_d_lens.cluster import source as source_module

    fake = live_cluster_with_unlabelled_gaudi_node()
    monkeypatch.setattr(source_module, "make_runner", lambda source: fake)
    assert main(["cluster", "inspect", "--discover", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    bucket = next(v for v in data["vendors"] if v["profile_id"] == "intel-gaudi")
    assert bucket["vram"]["sources"] == ["discovery:hl-smi@intel-gaudi-resource-driver/gaudi-plugin-9x"]
    assert bucket["vram"]["devices_with_vram"] == 2 and any("memory of 2 device(s)" in n for n in data["notes"])
    assert main(["cluster", "inspect", "--demo", "--discover", "-o", "json"]) == 0
    assert any("node discovery skipped" in n for n in json.loads(capsys.readouterr().out)["notes"])
