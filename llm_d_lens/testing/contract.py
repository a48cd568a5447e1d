"""The contract-test kit for hardware plugin authors: a pytest plugin shipped with Lens.

Lens registers it as a ``pytest11`` plugin, so wherever Lens is installed plain ``pytest`` has the
``lens_contract`` fixture (with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, load it with
``-p llm_d_lens.testing.contract``). Check your *installed* distribution the way the guide's
section 7 asks::

    def test_my_plugin_honours_the_lens_contract(lens_contract):
        lens_contract.assert_ok("acme-lens")

Each check loads the plugin exactly as Lens does (entry points, the isolated loader, the
registry), so what passes here registers in ``lens``. A failing check names the plugin, the JSON
path (or entry point) and the value. :func:`check_distribution` is the same without pytest.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution
from typing import Any

import pytest

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.errors import render_value


@dataclass(frozen=True)
class ContractIssue:
    plugin: str
    check: str
    path: str
    message: str
    value: Any = None

    def __str__(self) -> str:
        return f"{self.plugin}: [{self.check}] {self.path}: {self.message} (value: {render_value(self.value)})"


class ContractFailed(AssertionError):
    def __init__(self, issues: list[ContractIssue]):
        self.issues = issues
        super().__init__(f"{len(issues)} contract problem{'s' if len(issues) != 1 else ''}:\n"
                         + "\n".join(f"  {issue}" for issue in issues))


def _entry_points(name: str) -> tuple[str, list[EntryPoint], list[EntryPoint]]:
    from llm_d_lens.hardware.discovery import PROFILES_GROUP, PROVIDERS_GROUP

    dist = distribution(name)
    eps = list(dist.entry_points)
    label = f"{dist.metadata['Name']} {dist.version}"
    return label, [e for e in eps if e.group == PROFILES_GROUP], [e for e in eps if e.group == PROVIDERS_GROUP]


def check_distribution(name: str) -> list[ContractIssue]:
    """Every contract problem of the installed distribution ``name``; an empty list means it passes."""
    issues: list[ContractIssue] = []
    try:
        label, profile_eps, provider_eps = _entry_points(name)
    except PackageNotFoundError:
        return [ContractIssue(name, "installed", "distribution", "is not installed in this environment", name)]

    def fail(check: str, path: str, message: str, value: Any = None) -> None:
        issues.append(ContractIssue(label, check, path, message, value))

    if not profile_eps:
        fail("entry points", "[llm_d_lens.hardware.profiles]", "declares no profile entry point", [])
        return issues
    payloads = _load_payloads(profile_eps, fail)
    profiles = _validate(payloads, fail)
    if not profiles:
        return issues
    registry = _registry(fail, label, [p for p, _ in profiles])
    for profile, ep in profiles:
        _check_aliases(registry, profile, fail)
        _check_request_model(profile, fail)
        _check_charts(profile, fail)
        _check_telemetry(profile, fail)
    provider_names = {ep.name for ep in provider_eps}
    for ep in provider_eps:
        if ep.name not in {p.id for p, _ in profiles}:
            fail("provider", f"[llm_d_lens.hardware.providers] {ep.name}", "names no profile this distribution "
                 "declares (entry-point name = profile id)", ep.value)
    if registry is not None:
        for profile, _ in profiles:
            if profile.id in registry.ids():
                _check_provider(registry, profile, profile.id in provider_names, fail)
                _check_presence(registry, profile, fail)
    return issues


def _load_payloads(eps: list[EntryPoint], fail: Any) -> list[tuple[EntryPoint, Any]]:
    from llm_d_lens.hardware.isolation import run_isolated, timeout_from_env

    outcomes = run_isolated([{"name": e.name, "value": e.value, "group": e.group} for e in eps], timeout=timeout_from_env())
    out = []
    for ep, outcome in zip(eps, outcomes):
        path = f"[llm_d_lens.hardware.profiles] {ep.name}"
        if outcome.error is not None:
            fail("load_profiles", path, outcome.error, ep.value)
            continue
        payloads = [outcome.payloads] if isinstance(outcome.payloads, dict) else outcome.payloads
        if not isinstance(payloads, list) or not payloads or not all(isinstance(p, dict) for p in payloads):
            fail("load_profiles", path, "must return a non-empty list of JSON objects", outcome.payloads)
            continue
        out += [(ep, payload) for payload in payloads]
    return out


def _validate(payloads: list[tuple[EntryPoint, Any]], fail: Any) -> list[tuple[Any, EntryPoint]]:
    from llm_d_lens.hardware.errors import ProfileInvalid
    from llm_d_lens.hardware.loader import validate_payload

    profiles, seen, names = [], set(), {}
    for ep, payload in payloads:
        names.setdefault(ep.name, []).append(payload.get("id"))
        try:
            profile = validate_payload(payload, f"entry point {ep.name!r}")
        except ProfileInvalid as exc:
            for issue in exc.issues:
                fail("schema", issue.path, issue.message, issue.value if issue.has_value else None)
            continue
        if profile.id in seen:
            fail("unique id", "$.id", "is returned twice by this distribution", profile.id)
            continue
        seen.add(profile.id)
        profiles.append((profile, ep))
    for name, ids in names.items():
        if name not in ids:
            fail("entry-point name", f"[llm_d_lens.hardware.profiles] {name}", "must equal the id of a profile it "
                 "returns", ids)
    return profiles


def _registry(fail: Any, label: str, profiles: list[Any]) -> Any:
    """Everything installed, loaded afresh; this plugin's profiles must all be registered."""
    from llm_d_lens.hardware.discovery import discover
    from llm_d_lens.hardware.registry import Registry, set_registry
    from llm_d_lens.hardware.settings import PluginSettings

    registry = Registry.from_discovery(discover(PluginSettings.from_env(), use_cache=False))
    set_registry(registry)
    mine = {p.id for p in profiles}
    for failure in registry.failures:  # loading and schema problems were reported by the checks before
        if failure.kind not in ("conflict", "provider"):
            continue
        if failure.profile_id in mine or failure.distribution == label:
            path = failure.details["path"] if failure.kind == "conflict" and failure.details else failure.name
            value = failure.details.get("value") if failure.details else failure.profile_id
            fail("identity" if failure.kind == "conflict" else "registration", path, failure.reason, value)
    for skipped in registry.skipped:
        if skipped.profile_id in mine:
            fail("registration", "$.id", f"skipped: {skipped.reason}", skipped.profile_id)
    return registry


def _check_aliases(registry: Any, profile: Any, fail: Any) -> None:
    from llm_d_lens.hardware.conflicts import alias_names

    if registry is None or profile.id not in registry.ids():
        return
    for alias in alias_names(profile):
        try:
            found = registry.get(alias).id
        except LensError as exc:
            fail("aliases", "$.accelerator_keys", f"does not resolve: {exc}", alias)
            continue
        if found != profile.id:
            fail("aliases", "$.accelerator_keys", f"resolves to {found!r}, not {profile.id!r}", alias)


def _check_request_model(profile: Any, fail: Any) -> None:
    modes = profile.effective_modes()
    if not modes:
        fail("request model", "$.deployment.modes", "declares no deployment mode for the access modes",
             profile.access_modes)
    for name, mode in modes.items():
        path = f"$.deployment.modes.{name}"
        if mode.request_model == "dra":
            if not mode.device_class or not mode.claim_request_name:
                fail("request model", path, "a dra mode needs device_class and claim_request_name",
                     {"device_class": mode.device_class, "claim_request_name": mode.claim_request_name})
            elif mode.device_class not in profile.device_classes:
                fail("request model", f"{path}.device_class", "is not one of the profile's device_classes",
                     mode.device_class)
            if mode.resource_names:
                fail("request model", f"{path}.resource_names", "a dra mode asks for no extended resource",
                     mode.resource_names)
        elif mode.request_model == "extended-resource":
            if not mode.resource_names:
                fail("request model", f"{path}.resource_names", "an extended-resource mode needs resource names", [])
            for resource in mode.resource_names:
                if not any(resource.startswith(prefix) for prefix in profile.resource_prefixes):
                    fail("request model", f"{path}.resource_names", "is under none of the profile's resource_prefixes",
                         resource)
            if mode.device_class:
                fail("request model", f"{path}.device_class", "an extended-resource mode has no device class",
                     mode.device_class)


def _check_charts(profile: Any, fail: Any) -> None:
    if profile.driver is None:
        return
    for name, mode in profile.driver.modes.items():
        releases = [(f"$.driver.modes.{name}", mode)]
        releases += [(f"$.driver.modes.{name}.prerequisites[{i}]", p) for i, p in enumerate(mode.prerequisites)]
        for path, release in releases:
            if profile.driver.installer == "helm" and not release.chart_version:
                fail("charts pinned", f"{path}.chart_version", "a Helm chart must be pinned to a released version",
                     release.chart_version)


def _check_provider(registry: Any, profile: Any, declared: bool, fail: Any) -> None:
    path = f"[llm_d_lens.hardware.providers] {profile.id}"
    try:
        provider = registry.provider(profile.id)
    except LensError as exc:
        fail("provider", path, str(exc), profile.id)
        return
    if not declared:
        return
    try:
        own = provider.profile()
    except Exception as exc:  # noqa: BLE001 - report whatever the plugin's code raises
        fail("provider", f"{path} profile()", f"raised {type(exc).__name__}: {exc}", None)
        return
    if getattr(own, "id", None) != profile.id:
        fail("provider", f"{path} profile()", "must return the profile with the provider's id", getattr(own, "id", own))
    for name in ("ensure_presence", "driver_status", "install_driver"):
        method = getattr(provider, name, None)
        if method is None:
            continue
        if not inspect.iscoroutinefunction(method):
            fail("provider", f"{path} {name}", "must be an async method (guide section 5)", type(method).__name__)
            continue
        parameters = inspect.signature(method).parameters
        takes = "cluster_id" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        if not takes:
            fail("provider", f"{path} {name}", "must take the keyword argument cluster_id", list(parameters))


def _check_presence(registry: Any, profile: Any, fail: Any) -> None:
    """With a FakeRunner: no labelled node fails at once; a labelled one passes."""
    from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
    from llm_d_lens.monitoring.gpu_driver.errors import PresenceNotDeclared
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
    from llm_d_lens.monitoring.gpu_driver.presence import presence_settings
    from llm_d_lens.monitoring.gpu_driver.service import provider_for
    from llm_d_lens.testing.fake_runner import FakeReply, FakeRunner

    try:
        selector, refs, _ = presence_settings(profile)
    except PresenceNotDeclared as exc:
        fail("presence", "$.presence.node_label_selector", exc.message, None)
        return
    ops = provider_for(registry, profile.id)
    labels = {k: ("true" if v == "*" else v) for k, v in selector.items()}

    def run(nodes_labels: dict[str, str]) -> tuple[Any, Exception | None, FakeClock]:
        fake = FakeRunner(default=FakeReply(stdout=""))
        node = {"metadata": {"name": "node-1", "labels": nodes_labels}}
        fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body={"kind": "List", "items": [node]})
        clock = FakeClock()
        try:
            return _run(ops.ensure_presence(view=ClusterView(fake), clock=clock, timeout_seconds=0)), None, clock
        except Exception as exc:  # noqa: BLE001 - the check says what was raised
            return None, exc, clock

    report, error, clock = run({})
    if error is None:
        fail("presence", "$.presence.node_label_selector", "passed on a cluster without the label", selector)
    elif not isinstance(error, LensError) or clock.sleeps:
        fail("presence", "$.presence", f"did not fail fast with a coded error: {type(error).__name__}: {error}", selector)
    report, error, _ = run(labels)
    if error is not None or report is None or not getattr(report, "present", False):
        fail("presence", "$.presence.node_label_selector", f"failed on a node carrying the labels: {error}", labels)


def _run(coroutine: Any) -> Any:
    """Run a coroutine to its end, also from inside an async test (whose loop is already running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _check_telemetry(profile: Any, fail: Any) -> None:
    """``telemetry.provider_id`` must name a registered telemetry provider that loads."""
    from llm_d_lens.monitoring.accelerator.registry import TelemetryRegistry

    if profile.telemetry is None:
        return
    try:
        TelemetryRegistry().for_profile(profile)
    except LensError as exc:
        fail("telemetry provider", "$.telemetry.provider_id", exc.message, profile.telemetry.provider_id)


class LensContract:
    """The fixture's value: check an installed plugin distribution by name."""

    def check(self, distribution_name: str) -> list[ContractIssue]:
        return check_distribution(distribution_name)

    def assert_ok(self, distribution_name: str) -> None:
        issues = check_distribution(distribution_name)
        if issues:
            raise ContractFailed(issues)


@pytest.fixture
def lens_contract() -> Iterator[LensContract]:
    """Checks an installed Lens hardware plugin against the contract (guide section 7)."""
    from llm_d_lens.hardware.registry import set_registry

    yield LensContract()
    set_registry(None)
