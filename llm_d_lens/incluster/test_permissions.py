"""``lens incluster check`` and ``/api/v1/incluster/permissions``: the account's grants, asked one by one."""

from __future__ import annotations

import json
import shutil

import pytest

from llm_d_lens.incluster.errors import PermissionsMissing, PermissionsUnknown
from llm_d_lens.incluster.facts import load_facts
from llm_d_lens.incluster.manifests import manifests_root, render
from llm_d_lens.incluster.permissions import CHART_NEEDS, DISCOVERY_NEEDS, INSTALL_NEEDS, READ_NEEDS, check
from llm_d_lens.incluster.rbac import grants_of, role_named
from llm_d_lens.incluster.resources import DEFAULT_TABLE
from llm_d_lens.runner import CommandRunner
from llm_d_lens.testing.fake_runner import FakeRunner

ROOT = manifests_root()
needs_manifests = pytest.mark.skipif(ROOT is None or shutil.which("kubectl") is None,
                                     reason="needs manifests/ (a source checkout) and kubectl to render them")


def grant(need) -> tuple[str, str, str]:
    name, slash, subresource = need.resource.partition("/")
    resource = DEFAULT_TABLE.by_name(name)
    return resource.group, resource.plural + slash + subresource, need.verb


def answering(no: set[str] = frozenset(), *, stderr: str = "") -> FakeRunner:
    """A cluster that says yes to every can-i except for listing the resources in ``no``."""
    runner = FakeRunner()
    runner.reply(["kubectl", "auth", "can-i", ...], stdout="yes\n")
    for need in (*READ_NEEDS, *INSTALL_NEEDS, *CHART_NEEDS):
        if need.resource in no and need.verb == "list":
            runner.reply(need.argv(), stdout="no\n" if not stderr else "", stderr=stderr, returncode=1)
    return runner


@needs_manifests
def test_the_read_needs_are_exactly_the_read_only_role() -> None:
    assert ROOT is not None
    objects = render(ROOT / "overlays" / "installer", CommandRunner())
    assert {grant(n) for n in READ_NEEDS} == grants_of(role_named(objects, "lens-read"))
    # the installer's needs are its role's vendor-neutral grants (vendors' custom resources are data)
    vendor_groups = {r.group for r in load_facts(ROOT / "rbac-facts.yaml").table.resources} - {
        r.group for r in DEFAULT_TABLE.resources}
    installer = {g for g in grants_of(role_named(objects, "lens-installer")) if g[0] not in vendor_groups}
    assert {grant(n) for n in INSTALL_NEEDS} == installer
    charts = {g for g in grants_of(role_named(objects, "lens-driver-charts")) if g[0] not in vendor_groups}
    assert {grant(n) for n in CHART_NEEDS} == charts  # `check --installer` said ok without any of these
    discovery = render(ROOT / "overlays" / "node-discovery", CommandRunner())
    assert {grant(n) for n in DISCOVERY_NEEDS} == grants_of(role_named(discovery, "lens-node-discovery"))


async def test_a_subresource_is_asked_with_subresource_not_as_a_pod_name() -> None:
    runner = answering()
    report = await check(runner, node_discovery=True)
    assert report.ok and {n.role for n in (a.need for a in report.answers)} == {"lens-read", "lens-node-discovery"}
    asked = [c.requested for c in runner.calls if "--subresource=exec" in c.requested]
    assert sorted(a[3] for a in asked) == ["create", "get"] and all(a[4] == "pods" for a in asked)


async def test_a_missing_dra_grant_is_named_with_what_it_breaks() -> None:
    report = await check(answering({"resourceslices.resource.k8s.io"}))
    assert not report.ok
    (missing,) = report.missing
    assert (missing.need.resource, missing.allowed) == ("resourceslices.resource.k8s.io", False)
    with pytest.raises(PermissionsMissing) as raised:
        report.raise_if_missing()
    assert raised.value.code == "INCLUSTER_PERMISSIONS_MISSING" and raised.value.http_status == 503
    assert "list resourceslices.resource.k8s.io (inventory, telemetry joins: DRA devices and claims)" in raised.value.message


async def test_an_unreachable_server_is_an_unknown_answer_with_kubectl_s_reason() -> None:
    # what kubectl 1.32 prints (and exits 1 with, stdout empty) when the API server is unreachable
    reason = "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?"
    stderr = ('E1201 09:47:43.584156    7889 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API '
              'group list: Get \\"https://127.0.0.1:6443/api?timeout=32s\\": dial tcp 127.0.0.1:6443: connect: '
              f'connection refused"\n\n{reason}\n')
    report = await check(answering({"nodes"}, stderr=stderr))
    (missing,) = report.missing
    assert missing.allowed is None and missing.error == reason
    assert report.to_dict()["checks"][0]["error"] == reason
    # not knowing is not "lacks": a different code, naming kubectl's reason once
    with pytest.raises(PermissionsUnknown) as raised:
        report.raise_if_missing()
    assert raised.value.code == "INCLUSTER_PERMISSIONS_UNKNOWN"
    assert raised.value.message == f"could not ask the API server about 1 permission(s): {reason}"


async def test_the_installer_is_asked_about_only_when_mutations_are_on() -> None:
    runner = answering()
    assert (await check(runner)).ok
    assert {tuple(c.requested[4:5]) for c in runner.calls} == {(n.resource,) for n in READ_NEEDS}
    runner = answering()
    report = await check(runner, mutations=True)
    assert len(runner.calls) == len(READ_NEEDS) + len(INSTALL_NEEDS) + len(CHART_NEEDS) and report.to_dict()["mutations"] == "enabled"
    assert all(c.requested[-1] == "--all-namespaces" for c in runner.calls)


def test_check_installer_fails_without_the_driver_charts_grants(monkeypatch, capsys) -> None:
    """It said ok with only lens-installer bound: every bundled chart's install then failed half-way."""
    from llm_d_lens import runner as runner_module
    from llm_d_lens.cli.app import main

    fake = FakeRunner()
    fake.reply(["kubectl", "auth", "can-i", ...], stdout="yes\n")
    for need in CHART_NEEDS:  # the account holds lens-read and lens-installer, not lens-driver-charts
        fake.reply(need.argv(), stdout="no\n", returncode=1)
    monkeypatch.setattr(runner_module, "CommandRunner", lambda **_: fake)
    assert main(["incluster", "check", "--installer", "-o", "json"]) == 1
    out, err = capsys.readouterr()
    denied = {(r["role"], r["verb"], r["resource"]) for r in json.loads(out)["checks"] if r["allowed"] is False}
    assert ("lens-driver-charts", "escalate", "clusterroles.rbac.authorization.k8s.io") in denied
    assert ("lens-driver-charts", "create", "daemonsets.apps") in denied and len(denied) == len(CHART_NEEDS)
    assert err.startswith(f"error: INCLUSTER_PERMISSIONS_MISSING: this account lacks {len(CHART_NEEDS)} permission(s)")
    assert main(["incluster", "check", "-o", "json"]) == 0  # without --installer the charts' grants are not asked
    capsys.readouterr()


def test_the_cli_prints_the_answers_and_exits_1_naming_the_gap(monkeypatch, capsys) -> None:
    from llm_d_lens import runner as runner_module
    from llm_d_lens.cli.app import main

    fake = answering({"daemonsets.apps"})
    monkeypatch.setattr(runner_module, "CommandRunner", lambda **_: fake)
    assert main(["incluster", "check", "-o", "json"]) == 1
    out, err = capsys.readouterr()
    rows = {r["resource"]: r["allowed"] for r in json.loads(out)["checks"]}
    assert rows["daemonsets.apps"] is False and rows["nodes"] is True
    assert err.startswith("error: INCLUSTER_PERMISSIONS_MISSING: this account lacks 1 permission(s)")
    assert "Traceback" not in err
    assert main(["incluster", "check"]) == 1
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ROLE", "VERB", "RESOURCE", "ALLOWED"]
    assert any(line.split() == ["lens-read", "list", "daemonsets.apps", "no"] for line in table)
    assert max(len(line) for line in table) <= 80


def test_the_api_reports_every_answer_and_whether_mutations_are_on(monkeypatch) -> None:
    from fastapi.testclient import TestClient

    from llm_d_lens.api.app import create_app
    from llm_d_lens.incluster.api import permissions_runner

    app = create_app()
    app.dependency_overrides[permissions_runner] = lambda: answering({"nodes"})
    client = TestClient(app)
    monkeypatch.delenv("LENS_API_TOKEN", raising=False)
    body = client.get("/api/v1/incluster/permissions").json()
    assert body["ok"] is False and body["mutations"] == "disabled"
    assert [c["resource"] for c in body["checks"] if c["allowed"] is not True] == ["nodes"]
    assert {c["role"] for c in body["checks"]} == {"lens-read"}
    monkeypatch.setenv("LENS_API_TOKEN", "s3cret\n")
    body = client.get("/api/v1/incluster/permissions").json()
    assert body["mutations"] == "enabled" and {c["role"] for c in body["checks"]} == {"lens-read", "lens-installer", "lens-driver-charts"}
