"""The telemetry block's cross-field rules: device_metrics read declared metrics, units, tiles, names."""

from __future__ import annotations

import copy
import json
from importlib.resources import files
from typing import Any

import pytest

from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.rules import promql_metric_names

PROFILE_IDS = ["amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"]


def payload(profile_id: str) -> dict[str, Any]:
    text = files("llm_d_lens.hardware").joinpath("profiles", f"{profile_id}.json").read_text(encoding="utf-8")
    return json.loads(text)


def issues_of(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(data, "test.json")
    return {issue.path: issue.message for issue in caught.value.issues}


@pytest.mark.parametrize("profile_id", PROFILE_IDS)
def test_every_built_in_profile_passes_the_telemetry_rules(profile_id):
    assert validate_payload(payload(profile_id), f"{profile_id}.json").id == profile_id


@pytest.mark.parametrize(
    "expression, names",
    [
        ("DCGM_FI_DEV_GPU_UTIL / 100", ["DCGM_FI_DEV_GPU_UTIL"]),
        ('sum by (node) (rate(x_total{a="b{}", c=~"d|e"}[5m])) * 1e3', ["x_total"]),
        ("(a + b) / on(gpu) group_left(model) c offset 5m", ["a", "b", "c"]),
        ("vllm:kv_cache_usage_perc or max_over_time(foo[1m:30s])", ["vllm:kv_cache_usage_perc", "foo"]),
        ('label_replace(up, "dst", "$1", "src", "(.*)") > bool 0', ["up"]),
        ("sum without (gpu) (x) unless y", ["x", "y"]),
    ],
)
def test_metric_names_are_read_out_of_promql(expression, names):
    assert promql_metric_names(expression) == names


def test_a_device_metric_reading_an_undeclared_metric_is_an_error():
    data = payload("nvidia")
    data["telemetry"]["device_metrics"] = {"power_headroom": "DCGM_FI_DEV_ENFORCED_POWER_LIMIT - DCGM_FI_DEV_POWER_USAGE"}
    issues = issues_of(data)
    message = issues["$.telemetry.device_metrics.power_headroom"]
    assert "DCGM_FI_DEV_ENFORCED_POWER_LIMIT" in message and "does not declare" in message


def test_a_hand_written_rule_for_a_quantity_with_a_source_is_an_error():
    """One rule per quantity: the refresh and the dashboard PromQL are generated from the source, so a
    second expression (AMD's once took the max over partitions where the source takes partition 0) is refused."""
    data = payload("amd")
    data["telemetry"]["device_metrics"] = {"tensor_activity": "max by (hostname, serial_number) (gpu_prof_tensor_active_percent) / 100"}
    message = issues_of(data)["$.telemetry.device_metrics.tensor_activity"]
    assert "generated from device_metric_sources.tensor_activity" in message


def test_a_fallback_in_a_unit_that_cannot_convert_is_an_error():
    data = payload("nvidia")
    data["telemetry"]["device_metric_sources"]["utilization"]["fallbacks"] = [{"metrics": ["DCGM_FI_PROF_GR_ENGINE_ACTIVE"], "unit": "W"}]
    message = issues_of(data)["$.telemetry.device_metric_sources.utilization.fallbacks[0].unit"]
    assert message == "cannot convert W to the quantity's ratio"


def test_a_fallback_metric_goes_into_promql_so_it_must_be_a_name():
    data = payload("nvidia")
    data["telemetry"]["device_metric_sources"]["utilization"]["fallbacks"] = [{"metrics": ["gr engine"], "unit": "ratio"}]
    assert "$.telemetry.device_metric_sources.utilization.fallbacks[0].metrics[0]" in issues_of(data)


def test_a_device_metric_without_any_metric_is_an_error():
    data = payload("intel-gaudi")
    data["telemetry"]["device_metrics"] = {"busy": "vector(1)"}
    assert "uses none of the metrics" in issues_of(data)["$.telemetry.device_metrics.busy"]


def test_a_device_metric_for_a_quantity_without_a_source_may_read_any_declared_metric():
    data = payload("nvidia")
    data["telemetry"]["device_metrics"] = {}
    data["telemetry"]["device_metrics"]["memory_free_ratio"] = "DCGM_FI_DEV_FB_FREE / (DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_USED)"
    assert validate_payload(data, "x.json").telemetry.device_metrics["memory_free_ratio"].startswith("DCGM")
    data["telemetry"]["device_metrics"]["memory_free_ratio"] = "nvml_free_bytes"
    assert "nvml_free_bytes" in issues_of(data)["$.telemetry.device_metrics.memory_free_ratio"]


def test_the_guides_minimal_template_without_sources_is_valid():
    data = payload("nvidia")
    data["telemetry"] = {"provider_id": "myvendor", "device_metrics": {"utilization": "myvendor_gpu_util"},
                         "label_schema": {"node": "node", "device": "gpu"}, "allocation_join": "none"}
    assert validate_payload(data, "x.json").telemetry.device_metrics == {"utilization": "myvendor_gpu_util"}


def test_a_quantity_in_the_wrong_common_unit_is_an_error():
    data = payload("intel-gaudi")
    data["telemetry"]["device_metric_sources"]["energy"] = {"metrics": ["habanalabs_energy"], "unit": "mW", "output_unit": "W"}
    assert issues_of(data)["$.telemetry.device_metric_sources.energy.output_unit"] == "energy is reported in J"


def test_a_unit_that_cannot_convert_is_an_error():
    data = payload("nvidia")
    data["telemetry"]["device_metric_sources"]["power"]["unit"] = "MiB"
    assert "cannot convert MiB to W" in issues_of(data)["$.telemetry.device_metric_sources.power.output_unit"]


def test_folding_some_sources_but_not_others_is_an_error():
    data = payload("amd")
    del data["telemetry"]["device_metric_sources"]["power"]["tile_aggregation"]
    message = issues_of(data)["$.telemetry.device_metric_sources.power.tile_aggregation"]
    assert "set tile_aggregation on every source or on none" in message


def test_folding_needs_a_tile_or_partition_label():
    data = payload("amd")
    del data["telemetry"]["label_schema"]["partition"]
    assert "needs a tile or partition label" in issues_of(data)["$.telemetry.label_schema"]


@pytest.mark.parametrize(
    "path, mutate, shown_path",
    [
        ("label", lambda t: t["label_schema"].__setitem__("node", ["Hostname", 'x"}) or vector(1']), "$.telemetry.label_schema.node[1]"),
        ("source", lambda t: t.__setitem__("source_label", "UUID-x"), "$.telemetry.source_label"),
        ("metric", lambda t: t["device_metric_sources"]["power"]["metrics"].append("power{a}"), "$.telemetry.device_metric_sources.power.metrics[1]"),
        ("pod", lambda t: t["pod_metrics"].__setitem__("requests_running", "vllm running"), "$.telemetry.pod_metrics.requests_running"),
    ],
)
def test_names_that_go_into_promql_must_be_names(path, mutate, shown_path):
    data = copy.deepcopy(payload("nvidia"))
    mutate(data["telemetry"])
    issues = issues_of(data)
    assert shown_path in issues, issues


def test_a_bad_matcher_is_an_error():
    data = payload("intel-xpu")
    data["telemetry"]["device_metric_sources"]["power"]["matchers"] = ['card=""} or vector(1) or {a="']
    assert "PromQL label matcher" in issues_of(data)["$.telemetry.device_metric_sources.power.matchers[0]"]


def test_the_pod_status_join_needs_a_pattern_with_a_pci_group():
    data = payload("nvidia")
    data["telemetry"]["modes"]["plugin"] = "pod-status"
    assert "$.telemetry.allocation.resource_id_pattern" in issues_of(data)
    data["telemetry"]["allocation"]["resource_id_pattern"] = "^(?P<uuid>GPU-.*)$"
    assert "named group 'pci'" in issues_of(data)["$.telemetry.allocation.resource_id_pattern"]
