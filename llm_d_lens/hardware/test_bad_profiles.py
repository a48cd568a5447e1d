"""A catalogue of bad profiles, each with the precise message a vendor sees."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_d_lens.hardware import rules
from llm_d_lens.hardware.benchmark_profiles import known_profiles
from llm_d_lens.testing.plugins import bundled, deep
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import load_profile_file, validate_payload
from llm_d_lens.hardware.test_contract import GUIDE_FULL, GUIDE_MINIMAL


def issues_of(payload) -> list[str]:
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "test.json")
    return [str(issue) for issue in caught.value.issues]


def edited(base: dict, *path_and_value) -> dict:
    payload = deep(base)
    *path, value = path_and_value
    target = payload
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return payload


DELETE = object()

CATALOGUE = [
    ("unknown top-level key", edited(GUIDE_MINIMAL, "vendorr", "x"), '$.vendorr: unknown key (value: "x")'),
    ("unknown nested key", edited(GUIDE_FULL, "driver", "modes", "dra", "chart", "1"), '$.driver.modes.dra.chart: unknown key (value: "1")'),
    ("missing required field", edited(GUIDE_MINIMAL, "upstream_vendor", DELETE), "$.upstream_vendor: required field is missing"),
    ("wrong type", edited(GUIDE_MINIMAL, "accelerator_keys", "myvendor"), '$.accelerator_keys: expected a list (value: "myvendor")'),
    ("bad id", edited(GUIDE_MINIMAL, "id", "My Vendor"),
     '$.id: does not match the pattern ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ (value: "My Vendor")'),
    ("unknown request model", edited(GUIDE_MINIMAL, "request_model", "pci"),
     '$.request_model: must be one of "dra", "extended-resource", "none" (value: "pci")'),
    ("unsupported schema version", edited(GUIDE_MINIMAL, "schema_version", 2),
     "$.schema_version: unsupported schema_version; this Lens reads version 1 (value: 2)"),
    ("dra mode without device class", edited(GUIDE_FULL, "deployment", "modes", "dra", "device_class", DELETE),
     "$.deployment.modes.dra.device_class: a dra mode must name its device_class (value: null)"),
    ("dra mode without claim request name", edited(GUIDE_FULL, "deployment", "modes", "dra", "claim_request_name", ""),
     '$.deployment.modes.dra.claim_request_name: a dra mode must name its claim_request_name (value: "")'),
    ("extended-resource mode without resources", edited(GUIDE_FULL, "deployment", "modes", "plugin", "resource_names", []),
     "$.deployment.modes.plugin.resource_names: an extended-resource mode must name its resource names (value: [])"),
    ("top-level single mode without a resource", edited(GUIDE_MINIMAL, "deployment", "resource_name", ""),
     "$.deployment.resource_name: an extended-resource mode must name its resource names (value: [])"),
    ("access mode without deployment mode", edited(GUIDE_FULL, "access_modes", ["plugin", "dra", "cdi"]),
     "$.deployment.modes.cdi: access mode 'cdi' has no deployment mode"),
    ("two access modes and no deployment.modes", edited(GUIDE_MINIMAL, "access_modes", ["plugin", "dra"]),
     "$.deployment.modes: required when access_modes names more than one mode"),
    ("access mode without driver mode", edited(GUIDE_FULL, "driver", "modes", "dra", DELETE),
     "$.driver.modes.dra: access mode 'dra' has no driver mode (nor an unmanaged_modes entry)"),
    ("pci allowlist without domain", edited(GUIDE_MINIMAL, "deployment", "supports_pci_allowlist", True),
     '$.deployment.pci_attribute_domain: a PCI allowlist must name its attribute domain (value: "")'),
    ("floating chart version", edited(GUIDE_FULL, "driver", "modes", "plugin", "chart_version", "latest"),
     '$.driver.modes.plugin.chart_version: must be a pinned release version such as 1.2.3 (no latest, no ranges) (value: "latest")'),
    ("chart version range", edited(GUIDE_FULL, "driver", "modes", "plugin", "chart_version", "^0.17"),
     '$.driver.modes.plugin.chart_version: must be a pinned release version such as 1.2.3 (no latest, no ranges) (value: "^0.17")'),
    ("helm chart without version", edited(GUIDE_FULL, "driver", "modes", "plugin", "chart_version", DELETE),
     "$.driver.modes.plugin.chart_version: a helm driver must pin its chart version (value: null)"),
    ("unparseable kubernetes version", edited(GUIDE_FULL, "driver", "modes", "dra", "min_kubernetes_version", "one.32"),
     '$.driver.modes.dra.min_kubernetes_version: is not a Kubernetes version such as 1.32.0 (value: "one.32")'),
    ("regex that does not compile", edited(GUIDE_MINIMAL, "planning", {"aic_system_patterns": ["(h100"]}),
     '$.planning.aic_system_patterns[0]: is not a valid regular expression (missing ), unterminated subpattern at position 0) (value: "(h100")'),
    ("resource id pattern without a pci group", edited(bundled("amd"), "telemetry", "allocation", "resource_id_pattern", "^[0-9a-f:.]+$"),
     "$.telemetry.allocation.resource_id_pattern: must contain a named group 'pci', e.g. (?P<pci>[0-9a-f:.]+) (value: \"^[0-9a-f:.]+$\")"),
    ("unit that cannot convert", edited(bundled("nvidia"), "telemetry", "device_metric_sources", "power", "output_unit", "J"),
     '$.telemetry.device_metric_sources.power.output_unit: cannot convert W to J (value: "J")'),
    ("device_metrics using an undeclared metric", edited(bundled("intel-gaudi"), "telemetry", "device_metrics", {"fan_speed": "hl_fan_rpm"}),
     '$.telemetry.device_metrics.fan_speed: uses hl_fan_rpm, which device_metric_sources does not declare ('
     "habanalabs_utilization, habanalabs_memory_used_bytes, habanalabs_memory_total_bytes, habanalabs_power_mW, "
     "habanalabs_energy, habanalabs_temperature_onchip, habanalabs_pcie_replay_count, habanalabs_nic_port_status, "
     "habanalabs_clock_soc_mhz, habanalabs_power_default_limit_mW, habanalabs_pcie_receive_throughput, "
     "habanalabs_pcie_transmit_throughput, habanalabs_pending_rows_with_single_bit_ecc_errors, "
     "habanalabs_pending_rows_with_double_bit_ecc_errors) "
     '(value: "hl_fan_rpm")'),
    ("overlay root escaping the source", edited(GUIDE_MINIMAL, "deployment", "overlay_root", "../{variant}"),
     '$.deployment.overlay_root: must be a relative path inside the llm-d source (value: "../{variant}")'),
    ("variant that is not one directory name", edited(GUIDE_MINIMAL, "upstream_variant", "../../etc"),
     '$.upstream_variant: must be one directory name under modelserver/ (no /, . or ..) (value: "../../etc")'),
    ("variant spanning directories", edited(GUIDE_MINIMAL, "upstream_variant", "tpu/v6"),
     '$.upstream_variant: must be one directory name under modelserver/ (no /, . or ..) (value: "tpu/v6")'),
    ("unknown overlay placeholder", edited(GUIDE_MINIMAL, "deployment", "overlay_root", "guides/{guide}/{arch}"),
     '$.deployment.overlay_root: unknown placeholder {arch}; use {guide}, {variant} or {model_server} (value: "guides/{guide}/{arch}")'),
    ("bad prometheus matcher", edited(bundled("intel-xpu"), "telemetry", "device_metric_sources", "power", "matchers", ["card=="]),
     '$.telemetry.device_metric_sources.power.matchers[0]: is not a PromQL label matcher such as location="gpu" (value: "card==")'),
]


@pytest.mark.parametrize("name,payload,expected", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_bad_profile_is_refused_with_a_precise_message(name, payload, expected):
    assert expected in issues_of(payload)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    payload = edited(GUIDE_MINIMAL, "vendorr", "x")
    payload["accelerator_keys"] = "myvendor"
    del payload["upstream_vendor"]
    path = tmp_path / "three.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    error = caught.value
    assert [i.path for i in error.issues] == ["$.accelerator_keys", "$.upstream_vendor", "$.vendorr"]
    assert str(error).startswith(f"profile 'myvendor' from {path}: 3 problems")


def test_a_file_that_is_not_json_names_the_file_and_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"id": "x",\n  oops}')
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    assert str(path) in str(caught.value)
    assert "not valid JSON" in str(caught.value) and "line 2 column 3" in str(caught.value)


def test_json_nested_deeper_than_python_can_parse_is_a_profile_error_not_a_traceback(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    assert [(i.path, i.message) for i in caught.value.issues] == [("$", "not valid JSON: nested too deeply")]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_any_json_value_yields_a_validation_error_and_nothing_else(value):
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(value, "fuzz.json")
    assert caught.value.issues


KEYS = st.sampled_from(["id", "vendor", "access_modes", "deployment", "driver", "telemetry", "planning", "inventory", "upstream_labels"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(["nvidia", "amd", "intel-xpu", "cpu"]), key=KEYS, value=JSON)
def test_a_real_profile_with_one_field_fuzzed_never_raises_anything_but_profile_invalid(base, key, value):
    payload = bundled(base)
    payload[key] = value
    try:
        profile = validate_payload(payload, "fuzz.json")
    except ProfileInvalid as exc:
        assert all(issue.path.startswith("$") for issue in exc.issues)
    else:
        assert profile.id == payload["id"]


def test_schema_errors_and_rule_errors_are_reported_in_one_run():
    """A vendor must not fix the schema errors only to meet a second round from the rules."""
    payload = edited(GUIDE_FULL, "driver", "modes", "plugin", "chart_version", "latest")
    payload["colour"] = "red"  # a schema error
    payload["deployment"]["modes"]["dra"]["device_class"] = 5  # a schema error the rules would echo
    found = issues_of(payload)
    assert '$.colour: unknown key (value: "red")' in found
    assert "$.deployment.modes.dra.device_class: expected a string or null (value: 5)" in found
    assert ('$.driver.modes.plugin.chart_version: must be a pinned release version such as 1.2.3 '
            '(no latest, no ranges) (value: "latest")') in found
    # the value set aside is not reported again as "a dra mode must name its device_class"
    assert not any("must name its device_class" in issue for issue in found)
    assert len(found) == 3


def test_rules_are_left_out_when_the_rest_cannot_be_checked():
    payload = edited(GUIDE_FULL, "driver", "modes", "plugin", "chart_version", "latest")
    del payload["vendor"]  # required: nothing typed can be built without it
    assert issues_of(payload) == ["$.vendor: required field is missing"]


# -- issue 26: warnings, evaluation_profile, registered telemetry providers ---------------------------

def warnings_of(payload: dict, environ: dict | None = None) -> dict[str, str]:
    profile = validate_payload(payload, "warn.json")
    return {issue.path: issue.message for issue in rules.advise(profile, known_profiles(environ or {}))}


def test_an_unknown_benchmark_profile_is_a_warning_naming_the_nearest_known_ones():
    found = warnings_of(edited(bundled("nvidia"), "benchmark_profile", "nvidai") | {"evaluation_profile": None})
    message = found["$.benchmark_profile"]
    assert "nearest: nvidia" in message
    assert "8bc9f1dd" in message and "cluster_resource_resolver.py" in message  # the list's source and revision


def test_fake_is_not_a_benchmark_profile_silently_accepted():
    payload = edited(bundled("nvidia"), "benchmark_profile", "fake")
    payload["evaluation_profile"] = "fake"
    found = warnings_of(payload)
    assert list(found) == ["$.benchmark_profile"]  # evaluation_profile equal to it is the same name, said once
    assert "is not an llm-d-benchmark accelerator profile" in found["$.benchmark_profile"]


def test_a_per_mode_and_per_resource_benchmark_profile_are_checked_too():
    payload = bundled("intel-xpu")
    payload["deployment"]["modes"]["plugin"]["benchmark_profiles_by_resource"]["gpu.intel.com/xe"] = "intel-xee"
    payload["deployment"]["modes"]["dra"]["benchmark_profile"] = "intel-xpv"
    found = warnings_of(payload)
    assert "nearest: intel-xe" in found['$.deployment.modes.plugin.benchmark_profiles_by_resource["gpu.intel.com/xe"]']
    assert "nearest: intel-xpu" in found["$.deployment.modes.dra.benchmark_profile"]


def test_the_known_list_can_be_extended_for_a_newer_llm_d_benchmark():
    payload = edited(bundled("nvidia"), "benchmark_profile", "acme-npu")
    payload["evaluation_profile"] = None
    assert "$.benchmark_profile" in warnings_of(payload)
    assert warnings_of(payload, {"LENS_BENCHMARK_PROFILES": "spyre, acme-npu"}) == {}


def test_every_built_in_names_a_known_benchmark_profile_and_an_arch_equal_to_its_variant():
    for profile_id in ("amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"):
        assert warnings_of(bundled(profile_id)) == {}, profile_id


def test_an_arch_that_is_not_the_overlay_directory_is_a_warning():
    found = warnings_of(edited(bundled("nvidia"), "deployment", "arch", "cuda"))
    assert list(found) == ["$.deployment.arch"]
    assert "differs from upstream_variant 'gpu'" in found["$.deployment.arch"]


def test_evaluation_profile_alone_is_the_benchmark_profile():
    """The guide names the two together; a profile giving only evaluation_profile must be benchmarkable."""
    from llm_d_lens.evaluate.benchmark import BenchmarkConfig, Target

    payload = edited(GUIDE_MINIMAL, "benchmark_profile", DELETE)
    payload["evaluation_profile"] = "nvidia"
    profile = validate_payload(payload, "evaluation.json")
    assert profile.benchmark_profile == "nvidia"
    name, mode = profile.mode()
    block = BenchmarkConfig(Target(profile, name, mode, "myvendor.com/gpu"), roles={}, guide="optimized-baseline").accelerator()
    assert block["profile"] == "nvidia"  # not BENCHMARK_PROFILE_MISSING


def test_a_profile_with_neither_benchmark_name_has_none():
    payload = edited(GUIDE_MINIMAL, "benchmark_profile", DELETE)
    del payload["evaluation_profile"]
    assert validate_payload(payload, "none.json").benchmark_profile is None


def test_an_unregistered_telemetry_provider_is_refused_by_validate_with_the_registered_ones(tmp_path):
    from llm_d_lens.cli.app import main

    path = tmp_path / "telemetry.json"
    path.write_text(json.dumps(GUIDE_FULL))  # the guide's provider_id "myvendor"
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    [issue] = [i for i in caught.value.issues if i.path == "$.telemetry.provider_id"]
    assert issue.value == "myvendor" and "registered: declarative" in issue.message
    assert main(["hardware", "validate", str(path)]) == 1
    payload = deep(GUIDE_FULL)
    payload["telemetry"]["provider_id"] = "declarative"
    path.write_text(json.dumps(payload))
    assert load_profile_file(path).telemetry.provider_id == "declarative"


def test_a_telemetry_provider_registered_by_entry_point_passes():
    from importlib.metadata import EntryPoint

    from llm_d_lens.hardware.telemetry_providers import GROUP, registered_ids

    ids = registered_ids([EntryPoint("myvendor", "myvendor_lens:Telemetry", GROUP)])
    assert validate_payload(GUIDE_FULL, "t.json", telemetry_providers=ids).telemetry.provider_id == "myvendor"
    with pytest.raises(ProfileInvalid):
        validate_payload(GUIDE_FULL, "t.json", telemetry_providers=registered_ids([]))


def _acme_with_telemetry(provider_id: str, benchmark: str = "acme") -> dict:
    from llm_d_lens.testing.plugins import minimal_profile

    payload = minimal_profile("acme", benchmark_profile=benchmark, evaluation_profile=None)
    payload["telemetry"] = {"provider_id": provider_id}
    return payload


def test_doctor_fails_on_a_telemetry_provider_nobody_registered_and_lists_warnings(plugins):
    from llm_d_lens.hardware.doctor import doctor_report

    plugins.make("acme-lens", profiles={"acme": [_acme_with_telemetry("acme-telemetry", benchmark="fake")]})
    report = doctor_report({})
    assert "acme" in [p["id"] for p in report["profiles"]]  # still registered: only its telemetry is broken
    [failure] = [f for f in report["failures"] if f["kind"] == "telemetry-provider"]
    assert failure["profile_id"] == "acme" and failure["name"] == "acme-telemetry"
    assert "$.telemetry.provider_id" in failure["reason"] and "acme-lens 1.0.0" in failure["distribution"]
    assert report["ok"] is False
    [warning] = report["warnings"]
    assert (warning["profile_id"], warning["path"], warning["value"]) == ("acme", "$.benchmark_profile", "fake")


def test_doctor_accepts_a_telemetry_provider_a_plugin_registers(plugins):
    from llm_d_lens.hardware.doctor import doctor_report

    plugins.make("acme-lens", profiles={"acme": [_acme_with_telemetry("acme-telemetry")]},
                 module_source="class Telemetry:\n    def derive(self, profile, devices):\n        return []\n",
                 groups={"llm_d_lens.telemetry.providers": {"acme-telemetry": "acme_lens_lens:Telemetry"}})
    report = doctor_report({"LENS_BENCHMARK_PROFILES": "acme"})
    assert report["failures"] == [] and report["warnings"] == [] and report["ok"] is True
