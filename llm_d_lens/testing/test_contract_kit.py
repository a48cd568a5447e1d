"""The contract kit fails each broken plugin with the plugin, the check, the field path and the value."""

from __future__ import annotations

import pytest

from llm_d_lens.hardware.conftest import _forget_registry, plugins  # noqa: F401
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.testing.contract import ContractFailed, LensContract, check_distribution


def issues_of(plugins, dist: str, **make) -> list:  # noqa: F811
    plugins.make(dist, **make)
    return check_distribution(dist)


def test_a_good_plugin_passes_and_assert_ok_is_silent(plugins):  # noqa: F811
    assert issues_of(plugins, "good-lens", profiles={"good": [minimal_profile("good")]}) == []
    LensContract().assert_ok("good-lens")


def test_a_plugin_that_is_not_installed():
    [issue] = check_distribution("never-installed-lens")
    assert (issue.check, issue.message) == ("installed", "is not installed in this environment")


def test_identity_overlap_with_a_built_in_names_the_field_path_and_value(plugins):  # noqa: F811
    found = issues_of(plugins, "rogue-lens", profiles={"rogue": [minimal_profile("rogue", device_classes=["gpu.nvidia.com"])]})
    [issue] = [i for i in found if i.check == "identity"]
    assert issue.plugin == "rogue-lens 1.0.0" and issue.path == "$.device_classes" and issue.value == "gpu.nvidia.com"
    assert "built-in profile 'nvidia'" in issue.message
    with pytest.raises(ContractFailed, match=r"rogue-lens 1.0.0: \[identity\] \$.device_classes"):
        LensContract().assert_ok("rogue-lens")


def test_schema_errors_entry_point_name_and_payload_shape(plugins):  # noqa: F811
    bad = minimal_profile("broken")
    bad["deployment"]["arch"] = ""
    found = issues_of(plugins, "broken-lens", profiles={"broken": [bad]})
    assert [(i.check, i.path, i.value) for i in found] == [("schema", "$.deployment.arch", "")]
    misnamed = issues_of(plugins, "misnamed-lens", profiles={"other-name": [minimal_profile("misnamed")]})
    assert [(i.check, i.path, i.value) for i in misnamed] == [
        ("entry-point name", "[llm_d_lens.hardware.profiles] other-name", ["misnamed"])]
    cyclic = issues_of(plugins, "cyclic-lens", module_source="def load():\n    p = {}\n    p['p'] = p\n    return [p]\n",
                       profile_entry_points={"cyclic": "cyclic_lens_lens:load"})
    assert [i.check for i in cyclic] == ["load_profiles"] and "Circular reference" in cyclic[0].message


def test_request_model_shape_is_checked(plugins):  # noqa: F811
    payload = minimal_profile("shape")
    payload["deployment"]["resource_name"] = "elsewhere.example.com/npu"  # not under the profile's prefixes
    found = issues_of(plugins, "shape-lens", profiles={"shape": [payload]})
    # the contract's own rules refuse it now (issue 26: a mode requests only its profile's resources), at the field
    assert [(i.check, i.path, i.value) for i in found] == [
        ("schema", "$.deployment.resource_name", "elsewhere.example.com/npu")]
    assert "outside this profile's resource_prefixes" in found[0].message


def test_a_provider_off_the_interface_is_named(plugins):  # noqa: F811
    source = ("from llm_d_lens.hardware.registry import get_profile\n"
              "class Provider:\n"
              "    def profile(self):\n        return get_profile('prov')\n"
              "    def driver_status(self, access_mode):\n        return []\n")
    found = issues_of(plugins, "prov-lens", profiles={"prov": [minimal_profile("prov")]}, module_source=source,
                      provider_entry_points={"prov": "prov_lens_lens:Provider"})
    assert [(i.check, i.path, i.message) for i in found] == [
        ("provider", "[llm_d_lens.hardware.providers] prov driver_status", "must be an async method (guide section 5)")]


def test_presence_that_never_fails_is_caught(plugins):  # noqa: F811
    source = ("from llm_d_lens.hardware.registry import get_profile\n"
              "from llm_d_lens.monitoring.gpu_driver.presence import PresenceReport\n"
              "class Provider:\n"
              "    def profile(self):\n        return get_profile('optimist')\n"
              "    async def ensure_presence(self, *, cluster_id):\n"
              "        return PresenceReport('optimist', {}, ['anywhere'], 1)\n")
    found = issues_of(plugins, "optimist-lens", profiles={"optimist": [minimal_profile("optimist")]}, module_source=source,
                      provider_entry_points={"optimist": "optimist_lens_lens:Provider"})
    assert [(i.check, i.message) for i in found] == [("presence", "passed on a cluster without the label")]


def test_a_telemetry_provider_id_nobody_registered_is_named(plugins):  # noqa: F811
    telemetry = {"provider_id": "missing-telemetry", "allocation_join": "none"}
    found = issues_of(plugins, "tele-lens", profiles={"tele": [minimal_profile("tele", telemetry=telemetry)]})
    assert [(i.check, i.path, i.value) for i in found] == [("telemetry provider", "$.telemetry.provider_id",
                                                            "missing-telemetry")]


async def test_the_kit_also_runs_inside_an_async_test(plugins):  # noqa: F811
    """The presence check drives a coroutine; with this test's loop running it must not fail."""
    plugins.make("loop-lens", profiles={"loopy": [minimal_profile("loopy")]})
    assert check_distribution("loop-lens") == []
