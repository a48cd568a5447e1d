"""Contract rules for the driver block: every access mode managed or unmanaged, option keys passable."""

from __future__ import annotations

from typing import Any

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.hardware.rules import check


def cpu_with(**driver: Any) -> HardwareProfile:
    data = get_registry().get("cpu").to_data()
    data["driver"].update(driver)
    return HardwareProfile.decode(data)


def issues(profile: HardwareProfile) -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in check(profile)]


def test_builtins_pass() -> None:
    assert all(check(p) == [] for p in get_registry().profiles())


def test_a_mode_neither_managed_nor_unmanaged_is_reported() -> None:
    assert issues(cpu_with(unmanaged_modes={})) == [
        ("$.driver.modes.default", "access mode 'default' has no driver mode (nor an unmanaged_modes entry)")]


def test_a_mode_both_managed_and_unmanaged_is_reported() -> None:
    found = issues(cpu_with(unmanaged_modes={"default": {"reason": "x"}, "dra": {"reason": "y"}}))
    assert found == [("$.driver.unmanaged_modes.dra", "access mode 'dra' is both managed and unmanaged")]


def test_unknown_unmanaged_mode_and_bad_option_key() -> None:
    data = get_registry().get("cpu").to_data()
    data["driver"]["unmanaged_modes"]["turbo"] = {"reason": "z"}
    data["driver"]["modes"]["dra"]["options"] = {"args[0]": 1}
    found = issues(HardwareProfile.decode(data))
    assert ("$.driver.unmanaged_modes.turbo", "mode 'turbo' is not listed in access_modes") in found
    assert ("$.driver.modes.dra.options", "a helm option key is a dotted path of names, e.g. gfd.enabled") in found


def xpu_plugin_prerequisite(**changes: Any) -> HardwareProfile:
    data = get_registry().get("intel-xpu").to_data()
    data["driver"]["modes"]["plugin"]["prerequisites"][0].update(changes)
    return HardwareProfile.decode(data)


def test_an_unpinned_prerequisite_is_reported_like_an_unpinned_mode() -> None:
    where = "$.driver.modes.plugin.prerequisites[0]"
    assert issues(xpu_plugin_prerequisite(chart_version=None)) == [
        (f"{where}.chart_version", "a helm driver must pin its chart version")]
    assert issues(xpu_plugin_prerequisite(chart_version="0.32.x")) == [
        (f"{where}.chart_version", "must be a pinned release version such as 1.2.3 (no latest, no ranges)")]
    assert issues(xpu_plugin_prerequisite(repo=None)) == [(f"{where}.repo", "a helm driver must name its chart repository")]


def test_a_prerequisite_that_is_the_modes_own_release_is_reported() -> None:
    found = issues(xpu_plugin_prerequisite(manifest_ref="intel-device-plugins-gpu", release_name="intel-device-plugins-gpu"))
    assert found == [("$.driver.modes.plugin.prerequisites[0].release_name",
                      "is the mode's own release: one release cannot be installed twice")]
