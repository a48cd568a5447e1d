"""Installs through the FakeRunner: exact argv per vendor and mode, refusals, idempotence, failures."""

from __future__ import annotations

from typing import Any

import pytest

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.gpu_driver import service
from llm_d_lens.monitoring.gpu_driver.conftest import helm_release, kube_version, mutating_calls
from llm_d_lens.monitoring.gpu_driver.errors import (
    AccessModeUnknown,
    DriverNotManaged,
    DriverOptionInvalid,
    KubernetesTooOld,
    ReleaseConflict,
)
from llm_d_lens.monitoring.gpu_driver.install import install
from llm_d_lens.monitoring.gpu_driver.target import resolve_target
from llm_d_lens.runner import CommandFailed, CommandNotFound

# Worked out by hand from each profile's driver block: chart ref (oci:// joined, http via --repo),
# pinned --version, namespace, then one --set-json per option in profile order.
EXPECTED_ARGV = {
    ("nvidia", "plugin"): [
        "helm", "upgrade", "--install", "nvidia-device-plugin", "nvidia-device-plugin", "--version", "0.18.2",
        "--namespace", "nvidia-device-plugin", "--create-namespace", "--repo", "https://nvidia.github.io/k8s-device-plugin",
        "--set-json", "gfd.enabled=true", "--set-json", 'migStrategy="mixed"'],
    ("nvidia", "dra"): [
        "helm", "upgrade", "--install", "nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu", "--version", "25.12.0",
        "--namespace", "nvidia-dra-driver-gpu", "--create-namespace", "--repo", "https://helm.ngc.nvidia.com/nvidia",
        "--set-json", "resources.gpus.enabled=true", "--set-json", "gpuResourcesEnabledOverride=true"],
    ("amd", "plugin"): [
        "helm", "upgrade", "--install", "amd-gpu-operator", "gpu-operator-charts", "--version", "v1.5.1",
        "--namespace", "kube-amd-gpu", "--create-namespace", "--repo", "https://rocm.github.io/gpu-operator",
        "--set-json", "crds.defaultCR.upgrade=true", "--set-json", "deviceConfig.spec.driver.enable=false",
        "--set-json", "deviceConfig.spec.devicePlugin.enableDevicePlugin=true",
        "--set-json", "deviceConfig.spec.devicePlugin.enableNodeLabeller=true",
        "--set-json", "deviceConfig.spec.draDriver.enable=false"],
    ("amd", "dra"): [
        "helm", "upgrade", "--install", "amd-gpu-operator", "gpu-operator-charts", "--version", "v1.5.1",
        "--namespace", "kube-amd-gpu", "--create-namespace", "--repo", "https://rocm.github.io/gpu-operator",
        "--set-json", "crds.defaultCR.upgrade=true", "--set-json", "deviceConfig.spec.driver.enable=false",
        "--set-json", "deviceConfig.spec.devicePlugin.enableDevicePlugin=false",
        "--set-json", "deviceConfig.spec.devicePlugin.enableNodeLabeller=true",
        "--set-json", "deviceConfig.spec.draDriver.enable=true",
        "--set-json", 'deviceConfig.spec.draDriver.image="docker.io/rocm/k8s-gpu-dra-driver:v1.0.1"'],
    ("intel-xpu", "dra"): [
        "helm", "upgrade", "--install", "intel-gpu-resource-driver",
        "oci://ghcr.io/intel/intel-resource-drivers-for-kubernetes/intel-gpu-resource-driver-chart",
        "--version", "0.11.0", "--namespace", "intel-gpu-resource-driver", "--create-namespace",
        "--set-json", "nfd.enabled=false", "--set-json", "nodeFeatureRules.enabled=true"],
    ("intel-xpu", "plugin"): [
        "helm", "upgrade", "--install", "intel-device-plugins-gpu", "intel-device-plugins-gpu", "--version", "0.32.1",
        "--namespace", "inteldeviceplugins-system", "--create-namespace", "--repo", "https://intel.github.io/helm-charts/",
        "--set-json", "nodeFeatureRule=true", "--set-json", "sharedDevNum=1"],
    ("intel-gaudi", "dra"): [
        "helm", "upgrade", "--install", "intel-gaudi-resource-driver",
        "oci://ghcr.io/intel/intel-resource-drivers-for-kubernetes/intel-gaudi-resource-driver-chart",
        "--version", "0.7.0", "--namespace", "intel-gaudi-resource-driver", "--create-namespace",
        "--set-json", "nfd.enabled=false"],
    ("cpu", "dra"): [
        "helm", "upgrade", "--install", "dra-driver-cpu", "oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu",
        "--version", "0.3.0", "--namespace", "kube-system", "--create-namespace"],
}
# The prerequisites a mode's profile lists, installed before it (helm argv built by hand the same way).
OPERATOR_ARGV = [
    "helm", "upgrade", "--install", "intel-device-plugins-operator", "intel-device-plugins-operator", "--version", "0.32.1",
    "--namespace", "inteldeviceplugins-system", "--create-namespace", "--repo", "https://intel.github.io/helm-charts/"]
EXPECTED_PREREQUISITES = {("intel-xpu", "plugin"): [OPERATOR_ARGV]}
MIN_VERSION = {("nvidia", "dra"): "1.34.2", ("amd", "dra"): "1.34.0", ("intel-xpu", "dra"): "1.34.0",
               ("intel-gaudi", "dra"): "1.34.0", ("cpu", "dra"): "1.36.0"}


def managed_modes(registry: Any) -> set[tuple[str, str]]:
    return {(p.id, m) for p in registry.profiles() if p.driver for m in p.driver.modes}


def test_every_managed_builtin_mode_has_an_expected_argv(registry: Any) -> None:
    assert managed_modes(registry) == set(EXPECTED_ARGV)


@pytest.mark.parametrize("hardware,mode", sorted(EXPECTED_ARGV))
async def test_dry_run_prints_the_exact_command_and_runs_nothing(registry: Any, fake: Any, view: Any,
                                                                hardware: str, mode: str) -> None:
    result = await service.install_one(registry, hardware, mode, view, dry_run=True)
    assert result.commands == [EXPECTED_ARGV[(hardware, mode)]]
    assert result.action == "dry-run" and not result.ran
    assert fake.calls == []
    wanted_checks = 3 if (hardware, mode) in MIN_VERSION else 2  # kubectl version only with a minimum
    assert len(result.checks) == wanted_checks


def script_fresh_cluster(fake: Any, server: str = "v1.36.1") -> None:
    fake.reply(["kubectl", "version", "-o", "json"], json_body=kube_version(server))
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"], json_body={"kind": "List", "items": []})
    fake.reply(["helm", "upgrade", "--install", ...], stdout='Release "x" does not exist. Installing it now.\n')


@pytest.mark.parametrize("hardware,mode", sorted(EXPECTED_ARGV))
async def test_fresh_install_checks_then_runs_the_same_command(registry: Any, fake: Any, view: Any,
                                                               hardware: str, mode: str) -> None:
    script_fresh_cluster(fake)
    result = await service.install_one(registry, hardware, mode, view, dry_run=False)
    assert result.action == "install" and result.ran
    first = EXPECTED_PREREQUISITES.get((hardware, mode), [])
    assert mutating_calls(fake) == [*first, EXPECTED_ARGV[(hardware, mode)]]
    assert fake.argvs()[-1] == EXPECTED_ARGV[(hardware, mode)]  # the change comes after every check
    assert fake.called_with(["kubectl", "version"]) == ((hardware, mode) in MIN_VERSION)


async def test_cluster_older_than_the_minimum_is_refused_before_any_change(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(["kubectl", "version", "-o", "json"], json_body=kube_version("v1.34.1-gke.1200000"))
    with pytest.raises(KubernetesTooOld) as caught:
        await service.install_one(registry, "nvidia", "dra", view, dry_run=False)
    assert "1.34.2" in caught.value.message and "v1.34.1-gke.1200000" in caught.value.message
    assert fake.argvs() == [["kubectl", "version", "-o", "json"]]


async def test_managed_cluster_version_suffix_still_compares_by_numbers(registry: Any, fake: Any, view: Any) -> None:
    script_fresh_cluster(fake, server="v1.34.2-eks-113cf36")
    result = await service.install_one(registry, "nvidia", "dra", view, dry_run=False)
    assert result.server_version == "v1.34.2-eks-113cf36" and result.ran


def script_installed(fake: Any, chart: str, values: dict[str, Any], *, status: str = "deployed") -> None:
    fake.reply(["helm", "list", ...], json_body=[helm_release("nvidia-device-plugin", "nvidia-device-plugin", chart, status=status)])
    fake.reply(["helm", "get", "values", ...], json_body=values)
    fake.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"], json_body={"kind": "List", "items": []})
    fake.reply(["helm", "upgrade", "--install", ...], stdout="Release has been upgraded.\n")


PLUGIN_VALUES = {"gfd": {"enabled": True}, "migStrategy": "mixed"}


async def test_same_version_and_values_is_a_no_op(registry: Any, fake: Any, view: Any) -> None:
    script_installed(fake, "nvidia-device-plugin-0.18.2", PLUGIN_VALUES)
    result = await service.install_one(registry, "nvidia", "plugin", view, dry_run=False)
    assert result.action == "none" and not result.ran and result.commands == []
    assert mutating_calls(fake) == []


async def test_other_version_is_reported_as_an_upgrade(registry: Any, fake: Any, view: Any) -> None:
    script_installed(fake, "nvidia-device-plugin-0.17.1", PLUGIN_VALUES)
    result = await service.install_one(registry, "nvidia", "plugin", view, dry_run=False)
    assert result.action == "upgrade" and result.current.version == "0.17.1"
    assert "0.17.1 to 0.18.2" in result.message
    assert mutating_calls(fake) == [EXPECTED_ARGV[("nvidia", "plugin")]]


async def test_same_version_other_values_is_a_reconfiguration(registry: Any, fake: Any, view: Any) -> None:
    script_installed(fake, "nvidia-device-plugin-0.18.2", {"gfd": {"enabled": False}, "migStrategy": "mixed"})
    result = await service.install_one(registry, "nvidia", "plugin", view, dry_run=False)
    assert result.action == "reconfigure"
    assert len(mutating_calls(fake)) == 1


async def test_failed_release_is_installed_again(registry: Any, fake: Any, view: Any) -> None:
    script_installed(fake, "nvidia-device-plugin-0.18.2", PLUGIN_VALUES, status="failed")
    result = await service.install_one(registry, "nvidia", "plugin", view, dry_run=False)
    assert result.action == "repair" and result.ran


async def test_a_release_of_another_chart_is_never_replaced(registry: Any, fake: Any, view: Any) -> None:
    script_installed(fake, "my-own-plugin-2.0.0", {})
    with pytest.raises(ReleaseConflict) as caught:
        await service.install_one(registry, "nvidia", "plugin", view, dry_run=False)
    assert "my-own-plugin-2.0.0" in caught.value.message
    assert mutating_calls(fake) == []


async def test_nvidia_provider_points_the_plugin_at_the_clusters_runtime_class(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"], json_body={"kind": "List", "items": [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runc", "metadata": {"name": "gvisor-ish"}},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "nvidia", "metadata": {"name": "nvidia"}},
    ]})
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    await service.install_one(registry, "nvidia", "plugin", view, dry_run=False)
    # The class whose name matches ^nvidia$ is picked; derived values go before the profile's, which win.
    assert mutating_calls(fake) == [[
        "helm", "upgrade", "--install", "nvidia-device-plugin", "nvidia-device-plugin", "--version", "0.18.2",
        "--namespace", "nvidia-device-plugin", "--create-namespace", "--repo", "https://nvidia.github.io/k8s-device-plugin",
        "--set-json", 'runtimeClassName="nvidia"', "--set-json", "gfd.enabled=true", "--set-json", 'migStrategy="mixed"']]


async def test_nvidia_provider_leaves_a_users_runtime_class_alone(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    await service.install_one(registry, "nvidia", "plugin", view, dry_run=False, options={"runtimeClassName": "mine"})
    assert not fake.called_with(["kubectl", "get", "runtimeclasses.node.k8s.io"])
    assert mutating_calls(fake)[0][-2:] == ["--set-json", 'runtimeClassName="mine"']


async def test_helm_missing_fails_before_any_command(registry: Any, fake: Any, view: Any) -> None:
    fake.missing("helm")
    with pytest.raises(CommandNotFound) as caught:
        await service.install_one(registry, "amd", "plugin", view, dry_run=False)
    assert "`helm` was not found" in caught.value.message
    assert fake.calls == []


async def test_helm_failing_quotes_its_stderr(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], returncode=1,
               stderr='Error: INSTALLATION FAILED: chart "gpu-operator-charts" version "v1.5.1" not found in https://rocm.github.io/gpu-operator repository\n')
    with pytest.raises(CommandFailed) as caught:
        await service.install_one(registry, "amd", "plugin", view, dry_run=False)
    assert 'chart "gpu-operator-charts" version "v1.5.1" not found' in caught.value.message
    assert caught.value.code == "COMMAND_FAILED"


async def test_unknown_mode_is_refused_naming_the_known_ones(registry: Any, fake: Any, view: Any) -> None:
    with pytest.raises(AccessModeUnknown) as caught:
        await service.install_one(registry, "nvidia", "dra-v2", view, dry_run=False)
    assert "'dra-v2'" in caught.value.message and "plugin, dra" in caught.value.message
    assert fake.calls == []


@pytest.mark.parametrize("hardware,mode,reason", [
    ("intel-gaudi", "plugin", "unversioned manifest"),
    ("cpu", "default", "no device stack"),
    ("google-tpu", "plugin", "declares no driver"),
])
async def test_modes_lens_does_not_manage_are_refused_with_the_reason(registry: Any, fake: Any, view: Any,
                                                                      hardware: str, mode: str, reason: str) -> None:
    with pytest.raises(DriverNotManaged) as caught:
        await service.install_one(registry, hardware, mode, view, dry_run=False)
    assert reason in caught.value.message
    assert fake.calls == []


async def test_option_values_with_spaces_quotes_and_semicolons_stay_one_argv_item(registry: Any, fake: Any, view: Any) -> None:
    nasty = 'node pool; rm -rf / "quoted" \'single\' $(id)'
    result = await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=True,
                                       options={"nodeSelector.pool": nasty})
    [argv] = result.commands
    item = 'nodeSelector.pool="node pool; rm -rf / \\"quoted\\" \'single\' $(id)"'
    assert argv[-2:] == ["--set-json", item]
    assert argv.count(item) == 1 and len(argv) == len(EXPECTED_ARGV[("intel-xpu", "plugin")]) + 2


async def test_the_same_values_reach_the_runner_as_one_item(registry: Any, fake: Any, view: Any) -> None:
    fake.reply(["helm", "list", ...], json_body=[])
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")
    await service.install_one(registry, "intel-xpu", "plugin", view, dry_run=False, options={"extra.note": "a; b"})
    *operator, plugin = mutating_calls(fake)
    assert plugin[-1] == 'extra.note="a; b"' and operator == [OPERATOR_ARGV]  # a user's option is the mode's alone


@pytest.mark.parametrize("options,fragment", [
    ({"bad key": 1}, "dotted path"),
    ({"a..b": 1}, "dotted path"),
    ({"a.b": "nul\x00byte"}, "NUL"),
])
async def test_options_that_cannot_be_passed_are_refused(registry: Any, fake: Any, view: Any,
                                                         options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(DriverOptionInvalid) as caught:
        await service.install_one(registry, "nvidia", "plugin", view, dry_run=False, options=options)
    assert fragment in caught.value.message
    assert fake.calls == []


def kustomize_profile(registry: Any) -> HardwareProfile:
    base = registry.get("intel-xpu")
    data = base.to_data()
    data["driver"] = {"installer": "kustomize", "modes": {
        "dra": {"manifest_ref": "https://github.com/intel/intel-resource-drivers-for-kubernetes/deployments/gpu?ref=gpu-v0.11.0",
                "daemonset_matchers": [{"name_contains": "intel-gpu-resource-driver"}],
                "min_kubernetes_version": "1.34.0"},
        "plugin": {"manifest_ref": "https://github.com/intel/intel-device-plugins-for-kubernetes/deployments/gpu_plugin?ref=v0.32.1",
                   "daemonset_matchers": [{"name": "intel-gpu-plugin"}]}}}
    return HardwareProfile.decode(data)


async def test_kustomize_mode_applies_the_pinned_ref(registry: Any, fake: Any, view: Any) -> None:
    profile = kustomize_profile(registry)
    fake.reply(["kubectl", "get", "daemonsets", ...], json_body={"kind": "List", "items": []})
    fake.reply(["kubectl", "apply", "-k", ...], stdout="daemonset.apps/intel-gpu-plugin created\n")
    result = await install(resolve_target(profile, "plugin"), view)
    assert result.action == "install"
    assert mutating_calls(fake) == [["kubectl", "apply", "-k",
                                     "https://github.com/intel/intel-device-plugins-for-kubernetes/deployments/gpu_plugin?ref=v0.32.1"]]


async def test_kustomize_mode_with_that_version_running_is_a_no_op(registry: Any, fake: Any, view: Any) -> None:
    from llm_d_lens.monitoring.gpu_driver.conftest import daemonset

    profile = kustomize_profile(registry)
    running = daemonset("default", "intel-gpu-plugin", desired=2, ready=2, labels={"app.kubernetes.io/version": "0.32.1"})
    fake.reply(["kubectl", "get", "daemonsets", ...], json_body={"kind": "List", "items": [running]})
    result = await install(resolve_target(profile, "plugin"), view)
    assert result.action == "none" and mutating_calls(fake) == []


def test_kustomize_takes_no_options(registry: Any) -> None:
    with pytest.raises(DriverOptionInvalid):
        resolve_target(kustomize_profile(registry), "plugin", {"a": 1})


def test_a_dry_run_in_json_or_yaml_never_prints_a_secret_option(capsys):
    """`driver install --dry-run -o json` printed `--set-json token=...` whole; the table already redacted it."""
    from llm_d_lens.cli.app import main

    for output in ("json", "yaml", "table"):
        code = main(["driver", "install", "--hardware", "nvidia", "--mode", "plugin", "--dry-run",
                     "--option", "token=s3cr3t-value", "--option", 'apiKey="k3y-value"', "--option", "image.tag=v1", "-o", output])
        out = capsys.readouterr().out
        assert code == 0
        assert "s3cr3t-value" not in out and "k3y-value" not in out
        assert "token=***" in out and "apiKey=***" in out and 'image.tag=' in out


def test_an_option_value_json_cannot_hold_is_kept_as_the_string_typed():
    from llm_d_lens.monitoring.gpu_driver.target import parse_option

    assert parse_option("a=1e400") == ("a", "1e400")  # not float('inf'), which --set-json cannot carry
    assert parse_option("b=NaN") == ("b", "NaN")
    assert parse_option("c=" + "9" * 5000) == ("c", "9" * 5000)  # not the interpreter's digit-limit ValueError
    assert parse_option("d=" + "[" * 100_000) == ("d", "[" * 100_000)  # not a RecursionError
    assert parse_option("e=3") == ("e", 3) and parse_option('f="x"') == ("f", "x")
