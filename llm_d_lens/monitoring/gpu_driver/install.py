"""Installing one driver mode: check the cluster, read what is there, then change only what differs.

The same version with the same values is a no-op; another version is an upgrade and another set
of values a reconfiguration, each reported as such. A mode's prerequisites go first, in order, each
decided the same way; the first that fails stops the install before the mode's own chart. A release of another chart under the same
name is somebody else's and is refused, never replaced. ``dry_run`` runs nothing at all and
returns the exact commands instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from llm_d_lens.k8s.objects import labels_of
from llm_d_lens.monitoring.gpu_driver import commands
from llm_d_lens.monitoring.gpu_driver.errors import KubernetesTooOld, ReleaseConflict
from llm_d_lens.monitoring.gpu_driver.kube import VERSION_ARGV, ClusterView
from llm_d_lens.k8s.version import parse_version
from llm_d_lens.monitoring.gpu_driver.status import matching_daemonsets
from llm_d_lens.monitoring.gpu_driver.target import DriverTarget, nested_values
from llm_d_lens.runner import CommandNotFound, redact

Action = Literal["install", "upgrade", "reconfigure", "repair", "none", "dry-run"]
#: Extra values a provider derives from the cluster (e.g. a RuntimeClass it finds); the profile's win.
ExtraOptions = Callable[[DriverTarget, ClusterView], Awaitable[Mapping[str, Any]]]

VERSION_LABELS = ("app.kubernetes.io/version",)


@dataclass
class ReleaseState:
    present: bool
    version: str | None = None
    status: str | None = None
    values: dict[str, Any] | None = None


@dataclass
class InstallResult:
    target: DriverTarget
    action: Action
    current: ReleaseState = field(default_factory=lambda: ReleaseState(False))
    server_version: str | None = None
    commands: list[list[str]] = field(default_factory=list)  # what changes the cluster
    checks: list[list[str]] = field(default_factory=list)  # reads that decide whether to
    ran: bool = False
    message: str = ""
    prerequisites: list[InstallResult] = field(default_factory=list)  # installed first, in this order

    def to_dict(self) -> dict[str, Any]:
        return {
            "prerequisites": [p.to_dict() for p in self.prerequisites],
            **self.target.describe(),
            "action": self.action,
            "current_version": self.current.version,
            "current_status": self.current.status,
            "server_version": self.server_version,
            # shown, never run from here: secret values (a --set-json token=...) redacted as in every message
            "commands": [redact(argv) for argv in self.commands],
            "checks": [redact(argv) for argv in self.checks],
            "ran": self.ran,
            "message": self.message,
        }


def same_version(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.lstrip("v") == b.lstrip("v")


def planned_checks(target: DriverTarget) -> list[list[str]]:
    checks = [VERSION_ARGV] if target.mode.min_kubernetes_version else []
    if target.installer == "helm":
        checks += [commands.helm_list_argv(target), commands.helm_values_argv(target)]
    else:
        checks.append(["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"])
    return checks


async def check_kubernetes_version(target: DriverTarget, view: ClusterView) -> str | None:
    """The server's version; refuses a cluster older than the mode's minimum before anything changes."""
    wanted = target.mode.min_kubernetes_version
    if not wanted:
        return None
    version, shown = await view.server_version()
    minimum = parse_version(wanted)
    if minimum is not None and version < minimum:
        raise KubernetesTooOld(
            f"{target.profile_id!r} mode {target.mode_name!r} needs Kubernetes {wanted} or newer "
            f"({target.mode.manifest_ref} {target.version}); the cluster runs {shown}. Nothing was installed.",
            details={"hardware": target.profile_id, "mode": target.mode_name, "minimum": wanted,
                     "server_version": shown},
        )
    return shown


async def read_helm_state(target: DriverTarget, view: ClusterView) -> ReleaseState:
    listed = items_of_list((await view.runner.arun(commands.helm_list_argv(target))).json())
    release = next((r for r in listed if r.get("name") == target.release), None)
    if release is None:
        return ReleaseState(False)
    chart = str(release.get("chart", ""))
    prefix = f"{target.chart_name}-"
    if not chart.startswith(prefix):
        raise ReleaseConflict(
            f"release {target.release!r} in namespace {target.namespace!r} is chart {chart!r}, not "
            f"{target.chart_name!r}: it is not Lens's to change. Remove or rename it yourself, or set "
            f"release_name for {target.profile_id!r} mode {target.mode_name!r}.",
            details={"release": target.release, "namespace": target.namespace, "chart": chart},
        )
    values = (await view.runner.arun(commands.helm_values_argv(target))).json()
    return ReleaseState(True, chart[len(prefix):], str(release.get("status", "")), values if isinstance(values, dict) else {})


def items_of_list(document: Any) -> list[dict[str, Any]]:
    return [r for r in document if isinstance(r, dict)] if isinstance(document, list) else []


async def read_kustomize_state(target: DriverTarget, view: ClusterView) -> ReleaseState:
    found = matching_daemonsets(target.mode.daemonset_matchers, await view.daemonsets())
    if not found:
        return ReleaseState(False)
    versions = {labels_of(ds).get(label) for ds in found for label in VERSION_LABELS} - {None}
    return ReleaseState(True, sorted(versions)[0] if len(versions) == 1 else None, "applied")


def decide(target: DriverTarget, state: ReleaseState) -> tuple[Action, str]:
    if not state.present:
        return "install", f"installs {target.mode.manifest_ref} {target.version}"
    if target.installer == "helm" and state.status != "deployed":
        return "repair", f"release is {state.status!r}; running the install again"
    if not same_version(state.version, target.version):
        return "upgrade", f"upgrades {state.version or 'an unknown version'} to {target.version}"
    if target.installer == "helm" and (state.values or {}) != nested_values(target.options):
        return "reconfigure", f"{target.version} is installed with other values; setting the profile's"
    return "none", f"{target.version} is already installed with these values; nothing to do"


def require_tools(target: DriverTarget, view: ClusterView) -> None:
    """A missing helm is reported before the first command, not after the version check ran."""
    argv = commands.install_argv(target)
    for tool in {argv[0], *(["kubectl"] if target.mode.min_kubernetes_version else [])}:
        if view.runner.which(tool) is None:
            raise CommandNotFound([tool, *argv[1:]] if tool == argv[0] else VERSION_ARGV)


async def install(target: DriverTarget, view: ClusterView, *, dry_run: bool = False,
                  extra_options: ExtraOptions | None = None) -> InstallResult:
    """The mode's prerequisites, then the mode; ``extra_options`` (a provider's) reach the mode's chart only."""
    before = target.prerequisites
    if dry_run:
        result = dry_run_result(target)
        result.prerequisites = [dry_run_result(p) for p in before]
        return result
    for each in (*before, target):
        require_tools(each, view)
    server = await check_kubernetes_version(target, view)  # a too-old cluster is refused before any change
    done = [await install_release(p, view, await check_kubernetes_version(p, view), decide_prerequisite) for p in before]
    if extra_options is not None:
        derived = dict(await extra_options(target, view))
        if derived:
            target = replace(target, options={**derived, **target.options})
    result = await install_release(target, view, server)
    result.prerequisites = done
    return result


def dry_run_result(target: DriverTarget) -> InstallResult:
    return InstallResult(target, "dry-run", commands=[commands.install_argv(target)], checks=planned_checks(target),
                         message="dry run: nothing was run; the checks decide whether the command is needed")


def decide_prerequisite(target: DriverTarget, state: ReleaseState) -> tuple[Action, str]:
    """A prerequisite (an operator, say) may serve more than this hardware: one already there is
    left exactly as it is, whatever its version or values. Upgrading or re-setting it would change
    something the user has without being asked."""
    if not state.present:
        return "install", f"installs {target.mode.manifest_ref} {target.version}"
    found = state.version or "an unknown version"
    if same_version(state.version, target.version) and state.status in {"deployed", "applied"}:
        return "none", f"{target.version} is already installed; nothing to do"
    note = f" (status {state.status!r})" if state.status not in {"deployed", "applied", None, ""} else ""
    return "none", (f"{found}{note} is installed where Lens validated {target.version}; a shared prerequisite is "
                    "left as it is: upgrade or repair it yourself if the driver needs it")


async def install_release(target: DriverTarget, view: ClusterView, server: str | None,
                          decision: Callable[[DriverTarget, ReleaseState], tuple[Action, str]] = decide) -> InstallResult:
    """Read what is there, then run the one command only if it changes something."""
    if target.installer == "helm":
        state = await read_helm_state(target, view)
    else:
        state = await read_kustomize_state(target, view)
    action, message = decision(target, state)
    result = InstallResult(target, action, state, server, checks=planned_checks(target), message=message)
    if action == "none":
        return result
    argv = commands.install_argv(target)
    result.commands.append(argv)
    await view.runner.arun(argv)
    result.ran = True
    return result


__all__ = ["InstallResult", "ReleaseState", "decide", "install"]
