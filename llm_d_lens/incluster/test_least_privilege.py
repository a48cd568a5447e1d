"""Least privilege, proven: the roles in manifests/ grant exactly what Lens's kubectl/helm calls need.

How: every operation Lens offers is driven through its real service code with the recording
FakeRunner (kubectl's answers are real-shaped objects), each recorded argv is mapped to RBAC
accesses (llm_d_lens/incluster/access.py), and the ClusterRoles rendered by the real
``kubectl kustomize`` are compared with them both ways:

- ``lens-read`` == what the read-only operations need (inventory, telemetry joins, driver status,
  presence, deploy render);
- ``lens-installer`` == what the mutating operations (driver install, plan against the cluster,
  preflight's NFD rules, deploy apply) need beyond ``lens-read``;
- ``lens-driver-charts`` == what the recorded contents of the charts the profiles install need
  beyond both (manifests/rbac-facts.yaml);
- ``lens-node-discovery`` == what ``kubectl exec`` into driver pods (``lens plan --discover``) needs
  beyond ``lens-read``;

so each grant sits in exactly one role, and nothing is granted that no call needs. A static
inventory of every kubectl/helm argv literal in the package makes sure no call is left out of the
scenarios: a new ``["kubectl", "get", "widgets"]`` fails here until a scenario makes it and a role
grants it.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.deploy.service import RenderRequest, apply, describe_guides, fetch_runtime_classes, render
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.incluster.access import APPLY_VERBS, AUTHENTICATED_DEFAULTS, Access, accesses_of, object_accesses
from llm_d_lens.incluster.facts import Facts, chart_name, load_facts
from llm_d_lens.incluster.manifests import manifests_root, render as render_overlay
from llm_d_lens.incluster.rbac import compare, grants_of, needed_by, role_named
from llm_d_lens.monitoring.gpu_driver import service as drivers
from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
from llm_d_lens.monitoring.gpu_driver.conftest import daemonset, ds_pod, helm_release, kube_version, node, node_list
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.runner import CommandRunner, RecordedCall
from llm_d_lens.testing.fake_runner import FakeRunner

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = manifests_root()
LLM_D = next((p.resolve() for p in (PACKAGE.parent / ".." / "shared" / "upstream" / "llm-d",) if (p / "guides").is_dir()),
             None)

pytestmark = [
    pytest.mark.skipif(ROOT is None, reason="no manifests/ folder: this is not a source checkout"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed; the roles are rendered "
                                                                "with the real `kubectl kustomize`"),
]



def node_labels() -> dict[str, str]:
    """Every profile's presence selector satisfied on one node, so presence reads but never waits."""
    labels: dict[str, str] = {}
    for profile in get_registry().profiles():
        selector = profile.presence.node_label_selector if profile.presence else profile.node_label_selector
        labels.update({k: "true" if v == "*" else v for k, v in (selector or {}).items()})
    return labels


NFD_RULES_REF = "https://example.com/nfd/node-feature-rules.yaml"
#: the ensure_refs contract (presence.ensure_refs are NFD NodeFeatureRules), as a manifest
NFD_RULE = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "accelerators"}}


#: what each profile's discovery tool prints, as the planning tests record it
TOOL_OUTPUT = {"hl-smi": "hl-smi-noheader-nounits.csv", "amd-smi": "amd-smi-static.json",
               "xpu-smi": "xpu-smi-discovery.json", "nvidia-smi": "nvidia-smi-noheader-nounits.csv"}


def empty(kind: str = "List") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "items": [], "metadata": {"resourceVersion": ""}}


class Recorder(FakeRunner):
    """The recording fake, except that ``kubectl kustomize`` (local, no API) really runs, once per overlay."""

    renders: dict[tuple[str, ...], tuple[int, str, str]] = {}

    def _execute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        if call.requested[:2] == ("kubectl", "kustomize"):
            if call.requested not in self.renders:
                result = CommandRunner().run(list(call.requested), timeout=call.timeout, check=False)
                self.renders[call.requested] = (result.returncode, result.stdout, result.stderr)
            return self.renders[call.requested]
        return super()._execute(call, executable)


def cluster() -> Recorder:
    """A cluster with each profile's plugin running, DRA served, releases of older chart versions."""
    registry = get_registry()
    runner = Recorder()
    sets, pods = [], {}
    for profile in registry.profiles():
        for mode in (profile.driver.modes.values() if profile.driver else ()):
            for matcher in mode.daemonset_matchers:
                namespace = matcher.namespace or mode.namespace
                name = matcher.name or f"{matcher.name_contains}-x"
                sets.append(daemonset(namespace, name, desired=1, ready=1, labels=dict(matcher.labels)))
                pods.setdefault(namespace, []).append(ds_pod(namespace, name, "gpu-1"))
    runner.reply(["kubectl", "version", "-o", "json"], json_body=kube_version("v1.36.1"))
    runner.reply(["kubectl", "get", "nodes", "-o", "json"], json_body=node_list(node("gpu-1", node_labels())))
    runner.reply(["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"], json_body={**empty(), "items": sets})
    for namespace, listed in pods.items():
        runner.reply(["kubectl", "get", "pods", "--namespace", namespace, "-o", "json"], json_body={**empty(), "items": listed})
    workload = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "decode-0", "namespace": "llm-d",
                "ownerReferences": [{"kind": "ReplicaSet", "name": "decode-5d9c", "controller": True}]},
                "spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
                "status": {"phase": "Running"}}
    runner.reply(["kubectl", "get", "pods", "--all-namespaces", "-o", "json"], json_body={**empty(), "items": [workload]})
    runner.reply(["kubectl", "get", "pods,nodes", "--all-namespaces", "-o", "json"],
                 json_body={**empty(), "items": [workload, node("gpu-1", node_labels())]})
    for kinds in ("resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io"):
        runner.reply(["kubectl", "get", kinds, "-o", "json"], json_body=empty())
    for kinds in ("resourceclaims.resource.k8s.io", "resourceclaimtemplates.resource.k8s.io",
                  "resourceclaims.resource.k8s.io,resourceslices.resource.k8s.io"):
        runner.reply(["kubectl", "get", kinds, "--all-namespaces", "-o", "json"], json_body=empty())
    runner.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"], json_body={**empty(), "items": [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}]})
    releases: dict[str, list[dict[str, Any]]] = {}
    for profile in registry.profiles():
        for mode in (profile.driver.modes.values() if profile.driver else ()):
            releases.setdefault(mode.namespace, []).append(helm_release(mode.release_name, mode.namespace,
                                                                        f"{mode.manifest_ref}-0.0.1"))
    # a release not listed below (a prerequisite's) is not installed yet
    runner.reply(lambda argv: argv[:2] == ["helm", "list"] and "--namespace" in argv, json_body=[])
    for namespace, listed in releases.items():
        for release in listed:
            runner.reply(["helm", "list", "--namespace", namespace, "--filter", "^" + release["name"].replace(".", "\\.") + "$",
                          "--all", "-o", "json"], json_body=[release])
            runner.reply(["helm", "get", "values", release["name"], "--namespace", namespace, "-o", "json"], json_body={})
    runner.reply(["helm", "list", "--all-namespaces", "--all", "-o", "json"],
                 json_body=[r for listed in releases.values() for r in listed])
    runner.reply(["kubectl", "get", "pods", "--all-namespaces", "--field-selector", "spec.nodeName=gpu-1", "-o", "json"],
                 json_body={**empty(), "items": [pod for listed in pods.values() for pod in listed]})
    for tool, output in TOOL_OUTPUT.items():
        runner.reply(lambda argv, tool=tool: argv[:2] == ["kubectl", "exec"] and tool in argv[argv.index("--") + 1:][:1],
                     stdout=(PACKAGE / "cluster" / "testdata" / output).read_text(encoding="utf-8"))
    runner.reply(["helm", "upgrade", "--install", ...], stdout="Release has been upgraded. Happy Helming!\n")
    runner.reply(["kubectl", "apply", ...], stdout="configured\n")
    return runner


# --------------------------------------------------------------------------------------------
# The operations, as the CLI and the API run them


def read_inventory(runner: Recorder) -> None:
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource

    inspect(ClusterSource(), runner)


def read_telemetry_joins(runner: Recorder) -> None:
    from llm_d_lens.monitoring.accelerator.k8s import read_from_kubectl

    read_from_kubectl(runner)


def read_driver_status(runner: Recorder) -> None:
    found = asyncio.run(drivers.status(get_registry(), [], None, ClusterView(runner)))
    assert any(status.to_dict()["daemonsets"] for status in found), "the status scenario saw no DaemonSet"


def read_presence(runner: Recorder) -> None:
    keys = [p.id for p in get_registry().profiles() if p.presence is not None or p.node_label_selector]
    asyncio.run(drivers.preflight(get_registry(), keys, ClusterView(runner), FakeClock(), 0))


def read_deploy_render(runner: Recorder) -> None:
    classes = fetch_runtime_classes(runner)
    if LLM_D is not None:
        render(RenderRequest(guide="optimized-baseline", hardware="nvidia", overlay="base", model_server="vllm",
                             runtime_classes=classes), root=LLM_D, runner=runner)


def install_every_driver(runner: Recorder) -> None:
    view = ClusterView(runner)
    registry = get_registry()
    for profile in registry.profiles():
        for mode in (profile.driver.modes if profile.driver else {}):
            asyncio.run(drivers.install_one(registry, profile.id, mode, view, dry_run=False))


def install_a_kustomize_driver(runner: Recorder) -> None:
    """No bundled profile installs with kustomize today; a profile that did would run ``kubectl apply -k``."""
    from llm_d_lens.monitoring.gpu_driver.provider import DriverOps

    profile = get_registry().get("cpu")
    (name, mode), = profile.driver.modes.items()
    ref = f"https://example.com/deploy/{mode.manifest_ref}?ref=v{mode.chart_version}"
    driver = profile.driver.replace(installer="kustomize", modes={
        name: mode.replace(manifest_ref=ref, repo=None, release_name=None)})
    as_kustomize = profile.replace(driver=driver)
    result = asyncio.run(DriverOps(as_kustomize, object()).install_driver(name, view=ClusterView(runner)))
    assert result.ran and result.commands == [["kubectl", "apply", "-k", ref]]


def plan_and_install_from_cluster(runner: Recorder) -> None:
    view = ClusterView(runner)
    built = asyncio.run(drivers.plan(get_registry(), [], [], view, from_cluster=True))
    assert built.steps, "the cluster's pod claims no hardware: the scenario would install nothing"
    asyncio.run(drivers.install_plan(get_registry(), built, view, dry_run=False))


def preflight_with_node_feature_rules(runner: Recorder) -> None:
    from llm_d_lens.monitoring.gpu_driver.provider import DriverOps

    profile = get_registry().get("nvidia")
    presence = profile.presence.replace(ensure_refs=[NFD_RULES_REF])
    with_rules = profile.replace(presence=presence)
    asyncio.run(DriverOps(with_rules, object()).ensure_presence(view=ClusterView(runner), clock=FakeClock()))


def deploy_apply_every_overlay(runner: Recorder) -> None:
    registry = get_registry()
    report = describe_guides(root=LLM_D)
    rendered = 0
    for overlay in (o for o in report["overlays"] if o["status"] == "ok"):
        for mode in registry.get(overlay["hardware"]).effective_modes():
            result = render(RenderRequest(guide=overlay["guide"], hardware=overlay["hardware"], mode=mode,
                                          model_server=overlay["model_server"], overlay=overlay["overlay"]),
                            root=LLM_D, runner=runner)
            apply(result, runner)  # the default: a server-side dry run, authorised like the write
            apply(result, runner, yes=True, namespace="llm-d")
            rendered += 1
    assert rendered >= 10, f"only {rendered} overlays of the llm-d tree rendered"


def list_kubeconfig_clusters(runner: Recorder) -> None:
    """``lens cluster list`` without a clusters file: the kubeconfig's contexts, a local read."""
    from llm_d_lens.cluster.clusters import CONTEXTS_ARGV, from_kubeconfig

    runner.reply(list(CONTEXTS_ARGV), stdout="east\nwest\n")
    assert from_kubeconfig(runner).names() == ["east", "west"]


def check_own_permissions(runner: Recorder) -> None:
    from llm_d_lens.incluster.permissions import check

    runner.reply(["kubectl", "auth", "can-i", ...], stdout="yes\n")
    assert asyncio.run(check(runner, mutations=True)).ok


def report_versions(runner: Recorder) -> None:
    """`lens version`: each tool's client version, which reaches no API server."""
    from llm_d_lens.cli.version import versions

    runner.reply(["kubectl", "version", "--client", "-o", "json"], json_body={"clientVersion": {"gitVersion": "v1.36.1"}})
    runner.reply(["helm", "version", "--short"], stdout="v3.19.0+g1\n")
    runner.reply(["kustomize", "version"], stdout="v5.7.1\n")
    assert versions(runner)["helm"] == "v3.19.0+g1"


def discover_node_memory(runner: Recorder) -> None:
    """`lens plan --discover`: each profile's vendor tool, run in its driver pod on the node."""
    from llm_d_lens.cluster.node_discovery import run_on_node

    profiles = [p for p in get_registry().profiles() if p.planning.discovery is not None]
    assert profiles, "no profile declares planning.discovery: nothing would exec"
    for profile in profiles:
        devices, where = run_on_node(profile, "gpu-1", runner)
        assert devices and where.startswith("discovery:"), profile.id


def watch_live_clusters(runner: Recorder) -> None:
    """`lens serve`: each live cluster's kinds listed once, then watched from the list's resourceVersion."""
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.serving.watch import DRA_DISCOVERY, KINDS
    from llm_d_lens.serving.watched import WatchedCluster

    runner.reply(list(DRA_DISCOVERY), json_body={"kind": "APIGroup", "name": "resource.k8s.io",
                                                 "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}})
    for kind in KINDS:
        runner.reply(kind.list_argv("v1"), json_body={"kind": f"{kind.kind}List", "apiVersion": "v1",
                                                     "metadata": {"resourceVersion": "7"}, "items": []})
        runner.stream_reply(kind.watch_argv("v1", "7"), [{"type": "BOOKMARK", "object": {
            "kind": kind.kind, "metadata": {"resourceVersion": "8"}}}])
    watch = WatchedCluster("scenario", ClusterSource(), runner)
    for each in watch.kinds.values():
        assert each.list() and each.watch_once(), each.kind.kind


READ: tuple[Callable[[Recorder], None], ...] = (
    read_inventory, read_telemetry_joins, read_driver_status, read_presence, read_deploy_render, check_own_permissions,
    list_kubeconfig_clusters, report_versions, watch_live_clusters)
def install_every_exporter(runner: Recorder) -> None:
    """`lens telemetry exporters install`, its API route and the console's install: each exporter chart Lens installs."""
    from llm_d_lens.monitoring.accelerator.exporters import install_exporter

    view = ClusterView(runner)
    registry = get_registry()
    installed = [profile.id for profile in registry.profiles()
                 if profile.telemetry and profile.telemetry.exporter and profile.telemetry.exporter.release]
    assert installed, "no profile declares an exporter Lens installs: the scenario would install nothing"
    for key in installed:
        assert asyncio.run(install_exporter(registry, key, view, dry_run=False)).ran, key


def cordon_and_uncordon_a_node(runner: Recorder) -> None:
    """The console's node maintenance runs exactly these (console/actions.py; its own calls are audited by test_suite_calls)."""
    for action in ("cordon", "uncordon"):
        runner.reply(["kubectl", action, "gpu-1"], stdout=f"node/gpu-1 {action}ed\n")
        runner.run(["kubectl", action, "gpu-1"])


INSTALL: tuple[Callable[[Recorder], None], ...] = (
    install_every_driver, install_a_kustomize_driver, plan_and_install_from_cluster, preflight_with_node_feature_rules, deploy_apply_every_overlay,
    install_every_exporter, cordon_and_uncordon_a_node)
#: opt-in, CLI only: kubectl exec into driver pods reaches the node, so it is its own role
DISCOVER: tuple[Callable[[Recorder], None], ...] = (discover_node_memory,)


# --------------------------------------------------------------------------------------------
# Collecting what the calls need


def facts() -> Facts:
    assert ROOT is not None
    return load_facts(ROOT / "rbac-facts.yaml")


def calls_of(scenarios: tuple[Callable[[Recorder], None], ...]) -> list[RecordedCall]:
    calls = []
    for scenario in scenarios:
        runner = cluster()
        scenario(runner)
        calls += runner.calls
    return calls


def own_and_chart_needs(calls: list[RecordedCall]) -> tuple[dict, dict]:
    """(grant -> commands) for Lens's own accesses, and for what the charts it installs contain."""
    from llm_d_lens.runner import format_command

    known = facts()
    own: list[tuple[str, list[Access]]] = []
    charts: list[tuple[str, list[Access]]] = []
    for call in calls:
        mapped = accesses_of(call.requested, input=call.input, table=known.table)
        command = format_command(call.requested)
        own.append((command, list(mapped.accesses)))
        if mapped.opaque is None:
            continue
        if mapped.opaque != NFD_RULES_REF:  # a driver: a helm chart or a kustomize reference
            contents = known.chart_accesses(mapped.opaque)
            assert contents is not None, (f"chart {chart_name(mapped.opaque)!r} (`{command}`) is not declared in "
                                          "manifests/rbac-facts.yaml driverCharts: record the kinds it creates")
            charts.append((command, contents))
        else:
            own.append((command, object_accesses([NFD_RULE], APPLY_VERBS, table=known.table)))
    return needed_by(own), needed_by(charts)


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[RecordedCall]]:
    """Every call each group of operations makes, run once for the module."""
    if LLM_D is None:
        pytest.skip("no llm-d tree at ../shared/upstream/llm-d: deploy apply's kinds come from rendering its guides")
    return {"read": calls_of(READ), "install": calls_of(INSTALL), "discover": calls_of(DISCOVER)}


@pytest.fixture(scope="module")
def needs(recorded) -> dict[str, dict]:
    read, read_charts = own_and_chart_needs(recorded["read"])
    assert read_charts == {}, "a read-only operation installed a chart"
    install, chart = own_and_chart_needs(recorded["install"])
    discover, _ = own_and_chart_needs(recorded["discover"])
    met = {g for g in [*read, *install, *discover] if g in AUTHENTICATED_DEFAULTS}
    return {"read": without_defaults(read), "install": without_defaults(install), "charts": chart,
            "discover": without_defaults(discover), "defaults": met}


def without_defaults(needed: dict) -> dict:
    """What Kubernetes grants every authenticated account by default is no Lens role's to grant."""
    return {grant: by for grant, by in needed.items() if grant not in AUTHENTICATED_DEFAULTS}


def test_the_only_needs_left_to_kubernetes_defaults_are_version_and_access_reviews(needs) -> None:
    assert needs["defaults"] == {("", "/version", "get"), ("authorization.k8s.io", "selfsubjectaccessreviews", "create")}


@pytest.fixture(scope="module")
def installer_objects() -> list[dict[str, Any]]:
    assert ROOT is not None
    return render_overlay(ROOT / "overlays" / "installer", CommandRunner())


@pytest.fixture(scope="module")
def discovery_objects() -> list[dict[str, Any]]:
    assert ROOT is not None
    return render_overlay(ROOT / "overlays" / "node-discovery", CommandRunner())


def test_the_read_only_role_grants_exactly_what_the_read_operations_call(needs, installer_objects) -> None:
    result = compare(needs["read"], grants_of(role_named(installer_objects, "lens-read")))
    assert result.exact, result.report("lens-read")


def test_the_installer_role_grants_exactly_what_mutations_need_beyond_reading(needs, installer_objects) -> None:
    read = set(needs["read"])
    beyond = {grant: by for grant, by in needs["install"].items() if grant not in read}
    result = compare(beyond, grants_of(role_named(installer_objects, "lens-installer")))
    assert result.exact, result.report("lens-installer")


def test_the_chart_role_grants_exactly_the_declared_chart_contents_beyond_both(needs, installer_objects) -> None:
    own = set(needs["read"]) | set(needs["install"])
    beyond = {grant: by for grant, by in needs["charts"].items() if grant not in own}
    result = compare(beyond, grants_of(role_named(installer_objects, "lens-driver-charts")))
    assert result.exact, result.report("lens-driver-charts")


def test_the_node_discovery_role_grants_exactly_what_exec_needs_beyond_reading(needs, discovery_objects) -> None:
    beyond = {grant: by for grant, by in needs["discover"].items() if grant not in needs["read"]}
    result = compare(beyond, grants_of(role_named(discovery_objects, "lens-node-discovery")))
    assert result.exact, result.report("lens-node-discovery")
    assert ("", "pods/exec", "create") in beyond  # what makes it dangerous, and why it is opt-in


def test_each_grant_is_in_exactly_one_role(installer_objects, discovery_objects) -> None:
    roles = {name: grants_of(role_named(installer_objects, name))
             for name in ("lens-read", "lens-installer", "lens-driver-charts")}
    roles["lens-node-discovery"] = grants_of(role_named(discovery_objects, "lens-node-discovery"))
    names = list(roles)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            assert roles[first] & roles[second] == set(), f"{first} and {second} both grant {roles[first] & roles[second]}"


def test_reads_are_list_and_watch_only_and_mutations_never_reach_the_read_only_role(needs) -> None:
    assert {verb for (_, _, verb) in needs["read"]} == {"list", "watch"}
    watched = {(group, resource) for (group, resource, verb) in needs["read"] if verb == "watch"}
    assert watched == {("", "nodes"), ("", "pods"), ("resource.k8s.io", "resourceslices"),
                       ("resource.k8s.io", "deviceclasses"), ("resource.k8s.io", "resourceclaims")}
    writes = {g for g in needs["install"] if g[2] in {"create", "patch", "update", "delete"}}
    assert writes and not writes & set(needs["read"])


def scopes_of(calls: list[RecordedCall]) -> dict[tuple[str, str, str], set[str]]:
    known = facts()
    out: dict[tuple[str, str, str], set[str]] = {}
    for call in calls:
        for access in accesses_of(call.requested, input=call.input, table=known.table).accesses:
            out.setdefault(access.grant, set()).add(access.scope)
    return out


def test_cluster_wide_bindings_are_what_the_calls_scope_needs(recorded, installer_objects) -> None:
    """A ClusterRoleBinding, not a RoleBinding per namespace: each read lists across namespaces or is cluster-scoped."""
    scopes = scopes_of(recorded["read"])
    for grant in grants_of(role_named(installer_objects, "lens-read")):
        assert scopes[grant] & {"cluster", "all-namespaces"}, f"{grant} is only read in {scopes[grant]}: a RoleBinding would do"
    # helm's release records are listed across every namespace (a plan's releases no class claims)
    assert "all-namespaces" in scopes_of(recorded["install"])[("", "secrets", "list")]
    bindings = [o for o in installer_objects if o["kind"] == "ClusterRoleBinding"]
    assert len(bindings) == 3 and not [o for o in installer_objects if o["kind"] == "RoleBinding"]


def test_every_chart_a_profile_installs_is_declared() -> None:
    from llm_d_lens.monitoring.gpu_driver.target import resolve_target

    declared = facts().charts
    missing = []
    for profile in get_registry().profiles():
        for mode in (profile.driver.modes if profile.driver else {}):
            target = resolve_target(profile, mode)
            for each in (*target.prerequisites, target):
                if each.installer == "helm" and chart_name(each.mode.manifest_ref) not in declared:
                    missing.append(f"{profile.id}/{mode}: {each.mode.manifest_ref}")
        exporter = profile.telemetry.exporter if profile.telemetry else None
        if exporter and exporter.release and chart_name(exporter.release.manifest_ref) not in declared:
            missing.append(f"{profile.id}/exporter: {exporter.release.manifest_ref}")
    assert missing == []


# --------------------------------------------------------------------------------------------
# The static inventory: every argv literal in the package is one the scenarios make


def argv_literals() -> list[tuple[str, tuple[str, ...]]]:
    """(where, leading constant items) of every list/tuple literal in the package starting with kubectl/helm.

    A module-level string constant (``DRA_KINDS``) counts as its value; the prefix stops at the
    first item that is not constant.
    """
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py":
            continue
        module_name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = _parse(path.read_text(encoding="utf-8"))
        # Literal["helm", "kustomize"] in a type is a tuple of names, not a command
        in_types = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
        module = None
        for node_ in ast.walk(tree):
            if not isinstance(node_, (ast.List, ast.Tuple)) or not node_.elts or id(node_) in in_types:
                continue
            head = node_.elts[0]
            if not (isinstance(head, ast.Constant) and head.value in ("kubectl", "helm")):
                continue
            prefix: list[str] = []
            for item in node_.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    prefix.append(item.value)
                elif isinstance(item, ast.Name):
                    module = module or importlib.import_module(module_name)
                    value = getattr(module, item.id, None)
                    if not isinstance(value, str):
                        break
                    prefix.append(value)
                else:
                    break
            found.append((f"{path.relative_to(PACKAGE.parent)}:{node_.lineno}", tuple(prefix)))
    return found


def _parse(source: str) -> ast.Module:
    """ast.parse, tried again on CPython 3.11's "AST constructor recursion depth mismatch".

    A full-suite run once failed so, on a file that parses fine alone (3.11 keeps that count in
    interpreter-wide state). Parsing at collection, before any test runs, avoids it; the retry
    covers a repeat.
    """
    for _ in range(2):
        try:
            return ast.parse(source)
        except SystemError:
            continue
    return ast.parse(source)


#: taken at collection, before any test starts a thread of its own
ARGV_LITERALS = argv_literals()


def test_the_inventory_finds_the_calls_it_must() -> None:
    prefixes = {prefix for _, prefix in ARGV_LITERALS}
    assert ("kubectl", "get", "resourceclaims.resource.k8s.io,resourceslices.resource.k8s.io", "--all-namespaces",
            "-o", "json") in prefixes  # through the module constant DRA_KINDS
    assert ("helm", "upgrade", "--install") in prefixes
    assert len(prefixes) >= 15


def test_every_kubectl_and_helm_literal_in_the_code_is_made_by_a_scenario(recorded) -> None:
    made = [tuple(call.requested) for call in recorded["read"] + recorded["install"] + recorded["discover"]]
    unmade = [f"{where}: {' '.join(prefix)}" for where, prefix in ARGV_LITERALS
              if not any(argv[:len(prefix)] == prefix for argv in made)]
    assert unmade == [], "calls no scenario makes, so no role was checked for them"


# --------------------------------------------------------------------------------------------
# The proof itself can fail


def test_a_role_missing_a_needed_grant_fails_the_comparison(needs, installer_objects) -> None:
    role = role_named(installer_objects, "lens-read")
    trimmed = {**role, "rules": [r for r in role["rules"] if "daemonsets" not in r.get("resources", [])]}
    result = compare(needs["read"], grants_of(trimmed))
    assert ("apps", "daemonsets", "list") in result.missing
    assert any("kubectl get daemonsets" in by for by in result.missing[("apps", "daemonsets", "list")])


def test_a_new_kubectl_call_in_a_read_path_fails_until_granted(needs, installer_objects) -> None:
    runner = cluster()
    runner.reply(["kubectl", "get", "services", "--all-namespaces", "-o", "json"], json_body=empty())
    read_inventory(runner)
    runner.run(["kubectl", "get", "services", "--all-namespaces", "-o", "json"])
    read, _ = own_and_chart_needs(runner.calls)
    result = compare({**needs["read"], **without_defaults(read)}, grants_of(role_named(installer_objects, "lens-read")))
    assert list(result.missing) == [("", "services", "list")]
