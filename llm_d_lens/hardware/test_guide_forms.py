"""The guide's section 3 template works as written: its short telemetry forms are read, dead fields refused."""

from __future__ import annotations

import json

import pytest

from llm_d_lens.hardware import rules
from llm_d_lens.hardware.benchmark_profiles import known_profiles
from llm_d_lens.testing.plugins import bundled, deep
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.guide_forms import POD_METRIC_KEYS
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.telemetry_providers import GROUP
from llm_d_lens.hardware.test_contract import GUIDE_FULL


def test_the_templates_device_metrics_name_becomes_its_utilization_source():
    telemetry = validate_payload(GUIDE_FULL, "guide").telemetry
    assert telemetry is not None
    source = telemetry.device_metric_sources["utilization"]
    assert (source.metrics, source.unit, source.output_unit) == (["myvendor_gpu_util"], "percent", "ratio")
    assert telemetry.device_metrics == {"utilization": "myvendor_gpu_util"}  # what the author wrote stays


def test_the_templates_gpu_cache_usage_is_read_as_kv_cache_usage():
    from llm_d_lens.monitoring.profiling.pods import metric_names

    profile = validate_payload(GUIDE_FULL, "guide")
    assert metric_names([profile])["kv_cache_usage"] == ["vllm:gpu_cache_usage_perc"]
    both = deep(GUIDE_FULL)
    both["telemetry"]["pod_metrics"] = {"kv_cache_usage": "vllm:kv_cache_usage_perc", "gpu_cache_usage": "vllm:gpu_cache_usage_perc"}
    assert validate_payload(both, "guide").telemetry.pod_metrics["kv_cache_usage"] == [  # type: ignore[union-attr]
        "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]


def test_what_was_converted_is_a_warning_naming_the_assumed_unit():
    found = {i.path: i.message for i in rules.advise(validate_payload(GUIDE_FULL, "guide"), known_profiles({}))}
    assert "metric myvendor_gpu_util in percent, converted to ratio" in found["$.telemetry.device_metrics.utilization"]
    assert found["$.telemetry.pod_metrics.gpu_cache_usage"].startswith("read as pod_metrics.kv_cache_usage")


def test_an_expression_or_an_unknown_key_is_a_warning_not_a_silent_nothing():
    payload = deep(GUIDE_FULL)
    payload["telemetry"]["device_metrics"] = {"utilization": "avg by (gpu) (myvendor_gpu_util)", "gpu_util": "x"}
    payload["telemetry"]["pod_metrics"] = {"kv_cache": "vllm:kv_cache_usage_perc"}
    profile = validate_payload(payload, "guide")
    assert profile.telemetry is not None and profile.telemetry.device_metric_sources == {}
    found = {i.path: i.message for i in rules.advise(profile, known_profiles({}))}
    assert "declare device_metric_sources.utilization" in found["$.telemetry.device_metrics.utilization"]
    assert found["$.telemetry.device_metrics.gpu_util"].startswith("is not a quantity Lens reads")
    assert found["$.telemetry.pod_metrics.kv_cache"].startswith("is not a pod metric Lens reads")


def test_the_pod_metric_keys_the_contract_knows_are_the_ones_the_pods_view_reads():
    from llm_d_lens.monitoring.profiling.pods import POD_METRICS

    assert POD_METRIC_KEYS == {m.key for m in POD_METRICS} | {m.over for m in POD_METRICS if m.over}


def test_the_template_as_a_plugin_has_device_telemetry_at_run_time(plugins, fresh_registry):
    from llm_d_lens.monitoring.accelerator.registry import set_telemetry_registry
    from llm_d_lens.monitoring.accelerator.service import select

    plugins.make("myvendor-lens", profiles={"myvendor": [GUIDE_FULL]}, groups={GROUP: {"myvendor": "myvendor_lens_lens:Telemetry"}},
                 module_source="class Telemetry:\n    def derive(self, profile, devices):\n        return []\n")
    set_telemetry_registry(None)
    try:
        [chosen] = select(["myvendor"], fresh_registry())  # was TELEMETRY_NOT_DECLARED
        assert chosen.profile.id == "myvendor" and [getattr(q.quantity, 'key', q.quantity) for q in chosen.plan.quantities] == ["utilization"]
    finally:
        set_telemetry_registry(None)


@pytest.mark.parametrize("where,key,value", [
    (("telemetry", "allocation"), "node_labels", ["nvidia.com/gpu.product"]),
    (("telemetry", "allocation"), "device_name_pattern", "^gpu-\\d+$"),
    (("telemetry", "exporter"), "port_name", "metrics"),
])
def test_the_fields_nothing_read_are_refused_saying_why(where, key, value):
    payload = bundled("nvidia")
    part = payload
    for name in where:
        part = part[name]
    part[key] = value
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "nvidia.json")
    [issue] = caught.value.issues
    assert issue.path == f"$.{'.'.join(where)}.{key}" and issue.message.startswith("unknown key: Lens no longer reads it")
    assert issue.value == value


def test_no_bundled_profile_or_schema_carries_the_removed_fields():
    from llm_d_lens.testing.plugins import PROFILES_DIR

    text = "".join(p.read_text() for p in PROFILES_DIR.glob("*.json"))
    schema = json.dumps(json.loads((PROFILES_DIR.parent / "schema.json").read_text()))
    for name in ("node_labels", "device_name_pattern", "port_name"):
        assert f'"{name}"' not in text and f'"{name}"' not in schema
