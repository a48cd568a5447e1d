"""A mode's prerequisite charts: installed first, in order, idempotently, and never after a failure.

intel-xpu's ``plugin`` mode is the built-in case: the GPU plugin chart only creates a custom
resource, which the device plugins operator (installed first, same repo and version) turns into
the DaemonSet. Every argv below is written out by hand from that profile.
"""

from __future__ import annotations

from typing import Any

import pytest

from llm_d_lens.monitoring.gpu_driver import service
from llm_d_lens.monitoring.gpu_driver.cli import print_install
from llm_d_lens.monitoring.gpu_driver.conftest import assert_nothing_destructive, helm_release, mutating_calls
from llm_d_lens.monitoring.gpu_driver.plan import build_plan
from llm_d_lens.monitoring.gpu_driver.claims import Claim, RequestedClass
from llm_d_lens.monitoring.gpu_driver.test_install import EXPECTED_ARGV, OPERATOR_ARGV
from llm_d_lens.runner import CommandFailed

NS = "inteldeviceplugins-system"
PLUGIN_ARGV = EXPECTED_ARGV[("intel-xpu", "plugin")]
LIST_OPERATOR = ["helm", "list", "--namespace", NS, "--filter", "^intel-device-plugins-operator$", "--all", "-o", "json"]
LIST_PLUGIN = ["helm", "list", "--namespace", NS, "--filter", "^intel-device-plugins-gpu$", "--all", "-o", "json"]
VALUES_OPERATOR = ["helm", "get", "values", "intel-device-plugins-operator", "--namespace", NS, "-o", "json"]
# What helm prints when the operator's chart is applied to a cluster without cert-manager.
NO_CERT_MANAGER = (
    'Error: INSTALLATION FAILED: unable to build kubernetes objects from release manifest: resource mapping not found '
    'for name: "inteldeviceplugins-serving-cert" namespace: "inteldeviceplugins-system" from "": no matches for kind '
    '"Certificate" in version "cert-manager.io/v1"\nensure CRDs are installed first\n'
)


async def test_fresh_cluster_gets_the_operator_checked_and_installed_before_the_plugin(registry: Any, fake: Any,
                                                                                      view: Any) -> None:
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="Release does not exist. Installing it now.\n")
    result = await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=False)
    assert fake.argvs() == [LIST_OPERATOR, OPERATOR_ARGV, LIST_PLUGIN, PLUGIN_ARGV]
    [operator] = result.prerequisites
    assert (operator.action, operator.ran, operator.commands) == ("install", True, [OPERATOR_ARGV])
    assert (result.action, result.ran, result.commands) == ("install", True, [PLUGIN_ARGV])
    assert_nothing_destructive(fake)


async def test_an_operator_already_at_that_version_is_left_alone(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(LIST_OPERATOR, json_body=[helm_release("intel-device-plugins-operator", NS, "intel-device-plugins-operator-0.32.1")])
    fake.reply(VALUES_OPERATOR, json_body={})  # installed with the chart's defaults, as the profile asks
    fake.reply(LIST_PLUGIN, json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    result = await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=False)
    [operator] = result.prerequisites
    assert operator.action == "none" and not operator.ran and operator.current.version == "0.32.1"
    assert mutating_calls(fake) == [PLUGIN_ARGV]


async def test_an_operator_the_user_already_has_is_never_changed(registry: Any, fake: Any, view: Any) -> None:
    """An operator may serve other devices too: an older version, or other values, stay as they are."""
    fake.reply(LIST_OPERATOR, json_body=[helm_release("intel-device-plugins-operator", NS, "intel-device-plugins-operator-0.31.1")])
    fake.reply(VALUES_OPERATOR, json_body={"manager": {"devices": {"gpu": True, "qat": True}}})
    fake.reply(LIST_PLUGIN, json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    result = await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=False)
    [operator] = result.prerequisites
    assert operator.action == "none" and not operator.ran
    assert "0.31.1 is installed where Lens validated 0.32.1" in operator.message and "upgrade or repair it yourself" in operator.message
    assert mutating_calls(fake) == [PLUGIN_ARGV]


async def test_a_failed_operator_release_is_reported_not_repaired(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(LIST_OPERATOR, json_body=[helm_release("intel-device-plugins-operator", NS, "intel-device-plugins-operator-0.32.1",
                                                      status="failed")])
    fake.reply(VALUES_OPERATOR, json_body={})
    fake.reply(LIST_PLUGIN, json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    result = await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=False)
    assert result.prerequisites[0].action == "none" and "status 'failed'" in result.prerequisites[0].message
    assert mutating_calls(fake) == [PLUGIN_ARGV]


async def test_dry_run_shows_the_operator_first_and_runs_nothing(registry: Any, fake: Any, view: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    result = await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=True)
    assert fake.calls == []
    assert [p.commands for p in result.prerequisites] == [[OPERATOR_ARGV]] and result.commands == [PLUGIN_ARGV]
    print_install([result.to_dict()])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("intel-xpu plugin prerequisite intel-device-plugins-operator: dry-run - dry run: nothing was run; "
                        "the checks decide whether the command is needed")
    assert lines[1].startswith("  needs (Lens does not install it): cert-manager")
    ran = [line for line in lines if line.startswith("  would run: ")]
    assert [line.split()[5] for line in ran] == ["intel-device-plugins-operator", "intel-device-plugins-gpu"]


async def test_a_failing_operator_stops_before_the_plugin_and_quotes_helm(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(OPERATOR_ARGV, returncode=1, stderr=NO_CERT_MANAGER)
    with pytest.raises(CommandFailed) as caught:
        await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=False)
    assert 'no matches for kind "Certificate" in version "cert-manager.io/v1"' in caught.value.message
    assert caught.value.code == "COMMAND_FAILED"
    assert fake.argvs() == [LIST_OPERATOR, OPERATOR_ARGV]  # the plugin was neither read nor installed


async def test_the_plan_lists_the_operator_with_what_it_would_do(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(LIST_OPERATOR, json_body=[helm_release("intel-device-plugins-operator", NS, "intel-device-plugins-operator-0.32.1")])
    fake.reply(VALUES_OPERATOR, json_body={})
    fake.reply(LIST_PLUGIN, json_body=[])
    fake.reply(["helm", "list", "--all-namespaces", "--all", "-o", "json"], json_body=[])
    classes = [RequestedClass("arc", [Claim("resource", "gpu.intel.com/i915", 1)])]
    plan = (await service.plan(registry, classes, [], view)).to_dict()
    [step] = plan["steps"]
    [operator] = step["prerequisites"]
    assert (operator["chart"], operator["version"], operator["action"], operator["prerequisite"]) == (
        "intel-device-plugins-operator", "0.32.1", "none", True)
    assert operator["command"] == OPERATOR_ARGV and operator["classes"] == ["arc"]
    assert operator["preconditions"] == ["cert-manager running in the cluster (the operator's webhooks need its certificates)"]
    assert (step["chart"], step["action"], step["prerequisite"]) == ("intel-device-plugins-gpu", "install", False)


def test_modes_without_prerequisites_list_none(registry: Any) -> None:
    plan = build_plan([RequestedClass("h100", [Claim("device_class", "gpu.nvidia.com", 1)])], registry)
    assert plan.to_dict()["steps"][0]["prerequisites"] == []
