"""argv -> RBAC access, for each shape of call Lens makes, and refusal of the ones it does not."""

from __future__ import annotations

import pytest

from llm_d_lens.incluster.access import ALL_NAMESPACES, CLUSTER, Access, accesses_of
from llm_d_lens.incluster.errors import CommandUnmapped, ResourceUnknown
from llm_d_lens.incluster.rbac import compare, grants_of, needed_by
from llm_d_lens.incluster.errors import RoleInvalid


def grants(argv: list[str], input: str | None = None) -> set[tuple[str, str, str]]:
    return {a.grant for a in accesses_of(argv, input=input).accesses}


def test_a_listing_across_namespaces_is_list_on_each_comma_separated_type() -> None:
    found = accesses_of(["kubectl", "--context", "prod", "get", "pods,nodes", "--all-namespaces", "-o", "json"])
    assert found.accesses == (Access("list", "", "pods"), Access("list", "", "nodes"))
    assert [a.scope for a in found.accesses] == [ALL_NAMESPACES, CLUSTER]  # nodes are cluster-scoped


def test_qualified_names_resolve_to_their_group_and_a_named_get_is_get() -> None:
    assert grants(["kubectl", "get", "resourceslices.resource.k8s.io", "-o", "json"]) == {
        ("resource.k8s.io", "resourceslices", "list")}
    assert grants(["kubectl", "get", "daemonsets.apps", "plugin", "--namespace", "kube-system"]) == {
        ("apps", "daemonsets", "get")}
    assert accesses_of(["kubectl", "get", "pods", "-n", "gpu", "-o", "json"]).accesses[0].scope == "gpu"


def test_version_is_the_non_resource_url_and_kustomize_touches_no_api() -> None:
    assert grants(["kubectl", "version", "-o", "json"]) == {("", "/version", "get")}
    assert grants(["kubectl", "kustomize", "/tmp/overlay"]) == set()
    assert grants(["git", "-C", "/src", "rev-parse", "HEAD"]) == set()


def test_apply_from_stdin_needs_get_create_patch_on_each_object_kind() -> None:
    manifests = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: decode, namespace: llm-d}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpus}\n"
    )
    found = accesses_of(["kubectl", "apply", "-f", "-", "--namespace", "serving", "--dry-run=server"], input=manifests)
    assert {a.grant for a in found.accesses} == {
        ("apps", "deployments", v) for v in ("get", "create", "patch")} | {
        ("resource.k8s.io", "resourceclaimtemplates", v) for v in ("get", "create", "patch")}
    # the object's own namespace wins over --namespace; an object without one lands in --namespace
    assert {a.resource: a.scope for a in found.accesses} == {"deployments": "llm-d", "resourceclaimtemplates": "serving"}


def test_apply_of_a_reference_is_opaque_and_names_it() -> None:
    found = accesses_of(["kubectl", "apply", "-k", "https://example.com/rules?ref=v1"])
    assert found.accesses == () and found.opaque == "https://example.com/rules?ref=v1"


def test_helm_reads_and_installs_touch_release_secrets_in_the_release_namespace() -> None:
    assert grants(["helm", "list", "--all-namespaces", "--all", "-o", "json"]) == {("", "secrets", "list")}
    values = accesses_of(["helm", "get", "values", "plugin", "--namespace", "gpu", "-o", "json"])
    assert [(a.grant, a.scope) for a in values.accesses] == [(("", "secrets", "list"), "gpu")]
    install = accesses_of(["helm", "upgrade", "--install", "plugin", "nvidia-device-plugin", "--version", "0.18.2",
                           "--namespace", "gpu", "--create-namespace", "--repo", "https://x", "--set-json", "a=1"])
    assert install.opaque == "nvidia-device-plugin"
    assert {a.grant for a in install.accesses} == {("", "secrets", v) for v in ("list", "get", "create", "update", "delete")} | {
        ("", "namespaces", "create")}
    without = accesses_of(["helm", "upgrade", "--install", "plugin", "chart", "--namespace", "gpu"])
    assert ("", "namespaces", "create") not in {a.grant for a in without.accesses}


def test_exec_reads_the_pod_and_opens_its_exec_subresource_both_ways() -> None:
    found = accesses_of(["kubectl", "exec", "-n", "gpu", "plugin-x", "-c", "plugin", "--", "tool", "-q"])
    assert {a.grant for a in found.accesses} == {("", "pods", "get"), ("", "pods/exec", "get"), ("", "pods/exec", "create")}
    assert {a.scope for a in found.accesses} == {"gpu"}


@pytest.mark.parametrize("argv", [
    ["kubectl", "delete", "pod", "x"],
    ["kubectl", "exec"],
    ["kubectl", "port-forward", "pod", "8080"],
    ["helm", "uninstall", "plugin"],
    ["helm", "upgrade", "plugin", "chart"],  # an upgrade without --install is not a call Lens makes
    ["kubectl", "get"],
])
def test_a_call_lens_does_not_make_is_refused_naming_the_command(argv: list[str]) -> None:
    with pytest.raises(CommandUnmapped) as raised:
        accesses_of(argv)
    assert argv[1] in raised.value.message and raised.value.code == "INCLUSTER_COMMAND_UNMAPPED"


def test_an_unknown_resource_or_kind_is_refused_naming_it() -> None:
    with pytest.raises(ResourceUnknown, match="widgets.example.com"):
        accesses_of(["kubectl", "get", "widgets.example.com", "-o", "json"])
    with pytest.raises(ResourceUnknown, match=r"Widget \(example.com/v1\) in stdin"):
        accesses_of(["kubectl", "apply", "-f", "-"], input="apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")


def test_role_rules_multiply_out_and_compare_names_missing_and_extra() -> None:
    role = {"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list"]},
        {"nonResourceURLs": ["/version"], "verbs": ["get"]},
    ]}
    granted = grants_of(role)
    assert granted == {("", "pods", "list"), ("", "nodes", "list"), ("", "/version", "get")}
    needed = needed_by([("kubectl get pods", accesses_of(["kubectl", "get", "pods", "-A"]).accesses),
                        ("kubectl get daemonsets", accesses_of(["kubectl", "get", "daemonsets", "-A"]).accesses)])
    result = compare(needed, granted)
    assert not result.exact
    assert list(result.missing) == [("apps", "daemonsets", "list")]
    assert result.extra == {("", "nodes", "list"), ("", "/version", "get")}
    assert "needed by: kubectl get daemonsets" in result.report("r")


@pytest.mark.parametrize("rule", [
    {"apiGroups": ["*"], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": []},
])
def test_a_wildcard_or_empty_rule_is_refused(rule: dict) -> None:
    with pytest.raises(RoleInvalid):
        grants_of({"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [rule]})


def test_a_raw_collection_get_is_list_and_with_watch_true_a_watch() -> None:
    nodes = accesses_of(["kubectl", "get", "--raw", "/api/v1/nodes"]).accesses
    assert nodes == (Access("list", "", "nodes"),) and nodes[0].scope == CLUSTER
    pods = accesses_of(["kubectl", "get", "--raw", "/api/v1/pods?watch=true&resourceVersion=7&fieldSelector="
                        "status.phase!=Succeeded"]).accesses
    assert pods == (Access("watch", "", "pods"),) and pods[0].scope == ALL_NAMESPACES
    slices = accesses_of(["kubectl", "--context", "x", "get", "--raw=/apis/resource.k8s.io/v1/resourceslices?watch=1"])
    assert slices.accesses == (Access("watch", "resource.k8s.io", "resourceslices"),)
    claims = accesses_of(["kubectl", "get", "--raw", "/apis/resource.k8s.io/v1/namespaces/llm/resourceclaims"]).accesses
    assert claims == (Access("list", "resource.k8s.io", "resourceclaims"),) and claims[0].scope == "llm"


def test_a_raw_discovery_get_needs_nothing_beyond_the_default_discovery_grant() -> None:
    for path in ("/api", "/apis", "/apis/resource.k8s.io", "/apis/resource.k8s.io/v1", "/api/v1"):
        assert accesses_of(["kubectl", "get", "--raw", path]).accesses == ()
    with pytest.raises(CommandUnmapped):
        accesses_of(["kubectl", "get", "--raw", "/metrics"])
    with pytest.raises(ResourceUnknown):
        accesses_of(["kubectl", "get", "--raw", "/apis/example.com/v1/widgets?watch=true"])
