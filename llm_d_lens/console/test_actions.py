"""The console's actions through the real app: sign in, render → dry-run → apply, cordon, and every refusal.

kubectl goes through the recording FakeRunner (no API server here); kustomize is the real one over the
deploy tests' small llm-d tree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.deploy.conftest import needs_kustomize, tree  # noqa: F401 - the llm-d tree fixture
from llm_d_lens.testing.cluster import as_list, node
from llm_d_lens.testing.fake_runner import FakeRunner

TOKEN = "s3cret-token"
RENDER = {"guide": "demo", "hardware": "nvidia", "replicas": "2"}


#: a node of 8 H100s as GPU feature discovery labels it (so a plan can size a deployment for it)
GPU_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}


def fake_cluster() -> FakeRunner:
    fake = FakeRunner(context="prod")
    fake.reply(["kubectl", "get", "nodes", "-o", "json"],
               json_body=as_list(node("gpu-1", labels=GPU_LABELS, resources={"nvidia.com/gpu": "8"})))
    for argv in (["kubectl", "get", "pods", "--all-namespaces", "-o", "json"],
                 ["kubectl", "get", "resourceslices.resource.k8s.io", "-o", "json"],
                 ["kubectl", "get", "deviceclasses.resource.k8s.io", "-o", "json"],
                 ["kubectl", "get", "resourceclaims.resource.k8s.io", "--all-namespaces", "-o", "json"]):
        fake.reply(argv, json_body=as_list())
    fake.reply(["kubectl", "apply", ...], stdout="deployment.apps/decode configured (server dry run)\n")
    fake.reply(["kubectl", "cordon", ...], stdout="node/gpu-1 cordoned\n")
    fake.reply(["kubectl", "uncordon", ...], stdout="node/gpu-1 uncordoned\n")
    return fake


@pytest.fixture
def server(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: F811 - the fixture above
    from llm_d_lens.api.app import create_app
    from llm_d_lens.cluster import served
    from llm_d_lens.console import actions

    for name in ("LENS_CLUSTER_DEMO", "LENS_CLUSTER_SNAPSHOT", "LENS_TELEMETRY_DEMO", "LENS_PROMETHEUS_URL", "LENS_CLUSTERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no clusters file of the person running the tests
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("LLM_D_ROOT", str(tree))
    monkeypatch.setenv("LENS_KUBE_CONTEXT", "prod")
    monkeypatch.setenv("LENS_CONSOLE_ACTIONS", "on")
    monkeypatch.setenv("LENS_API_TOKEN", TOKEN)
    monkeypatch.setenv("LENS_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    fake = fake_cluster()
    # the console reads served.cluster_runner when it acts; the API's routes took the function as a
    # dependency when first imported, so they are given the fake as an override, never by patching
    # the module the routes import from (a route module first imported under the patch would keep
    # the fake for every later test)
    app = create_app()
    app.dependency_overrides[served.cluster_runner] = lambda: fake
    monkeypatch.setattr(served, "cluster_runner", lambda: fake)
    actions.forget()
    client = TestClient(app)
    yield client, fake, tmp_path / "audit.jsonl"
    actions.forget()


def sign_in(client: TestClient) -> None:
    answer = client.post("/session", data={"token": TOKEN, "next": "/deploy"}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/deploy"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")


def form_of(html: str, form_id: str) -> dict[str, str]:
    block = re.search(rf'<form[^>]*id="{form_id}".*?</form>', html, re.S)
    assert block, f"no form {form_id}"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', block.group(0)))


def applies(fake: FakeRunner) -> list:
    return [c for c in fake.calls if list(c.requested[:2]) == ["kubectl", "apply"]]


def audit_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@needs_kustomize
def test_render_dry_run_apply_applies_exactly_the_shown_objects(server):
    client, fake, audit = server
    sign_in(client)
    page = client.get("/deploy", params=RENDER)
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    digest = re.search(r'data-digest="([0-9a-f]{64})"', page.text).group(1)
    shown = re.findall(r"<tr><td>([^<]+)</td><td><code>([^<]+)</code>", page.text)
    assert shown and applies(fake) == []  # a render runs nothing on the cluster

    dry = client.post("/deploy/dry-run", data=form_of(page.text, "dry-run-form"))
    assert dry.status_code == 200, dry.text
    assert [list(c.requested) for c in applies(fake)] == [["kubectl", "apply", "-f", "-", "--dry-run=server"]]
    assert 'id="apply-form"' in dry.text and "I apply these" in dry.text

    confirm = {**form_of(dry.text, "apply-form"), "confirm": "yes"}
    done = client.post("/deploy/apply", data=confirm)
    assert done.status_code == 200, done.text
    calls = applies(fake)
    assert [list(c.requested) for c in calls] == [["kubectl", "apply", "-f", "-", "--dry-run=server"], ["kubectl", "apply", "-f", "-"]]
    import hashlib

    assert hashlib.sha256(calls[1].input.encode()).hexdigest() == digest  # exactly the render the person saw
    applied = re.findall(r"^kind: (\S+)$", calls[1].input, re.M)
    assert sorted(applied) == sorted(kind for kind, _ in shown)
    results = [(line["action"], line["result"]) for line in audit_lines(audit)]
    assert results == [("session.sign-in", "signed in"), ("deploy.dry-run", "dry-run passed"), ("deploy.apply", "applied")]
    assert audit_lines(audit)[-1]["target"]["digest"] == digest and audit_lines(audit)[-1]["who"]["session"]


@needs_kustomize
def test_every_bad_input_is_refused_in_place_and_changes_nothing(server):
    client, fake, audit = server
    # not signed in
    page = client.get("/deploy", params=RENDER)
    assert 'id="dry-run-form"' not in page.text and "SIGN_IN_NEEDED" in page.text
    refused = client.post("/deploy/dry-run", data={**RENDER, "digest": "0" * 64, "csrf": "x"})
    assert refused.status_code == 401 and 'data-code="SIGN_IN_NEEDED"' in refused.text
    # a wrong token
    wrong = client.post("/session", data={"token": "guess"})
    assert wrong.status_code == 401 and 'data-code="UNAUTHORIZED"' in wrong.text
    sign_in(client)
    page = client.get("/deploy", params=RENDER)
    fields = form_of(page.text, "dry-run-form")
    # a forged or missing CSRF token
    for forged in ({**fields, "csrf": "forged"}, {k: v for k, v in fields.items() if k != "csrf"}):
        answer = client.post("/deploy/dry-run", data=forged)
        assert answer.status_code == 403 and 'data-code="CSRF_INVALID"' in answer.text
    # a render that changed since it was shown (another replica count renders other objects)
    changed = client.post("/deploy/dry-run", data={**fields, "replicas": "3"})
    assert changed.status_code == 409 and 'data-code="RENDER_CHANGED"' in changed.text
    # a replayed form: its token was spent by the post above
    replay = client.post("/deploy/dry-run", data=fields)
    assert replay.status_code == 403 and 'data-code="CSRF_INVALID"' in replay.text
    # an apply without its confirm box
    fresh = form_of(client.get("/deploy", params=RENDER).text, "dry-run-form")
    unconfirmed = client.post("/deploy/apply", data=fresh)
    assert unconfirmed.status_code == 422 and 'data-code="CONFIRM_NEEDED"' in unconfirmed.text
    # a cluster the server does not serve
    other = form_of(client.get("/deploy", params=RENDER).text, "dry-run-form")
    elsewhere = client.post("/deploy/apply", data={**other, "cluster": "staging", "confirm": "yes"})
    assert elsewhere.status_code == 404 and 'data-code="CLUSTER_NOT_SERVED"' in elsewhere.text
    # a render kustomize refuses (an overlay that does not exist)
    bad = form_of(client.get("/deploy", params=RENDER).text, "dry-run-form")
    broken = client.post("/deploy/dry-run", data={**bad, "guide": "no-such-guide"})
    assert broken.status_code >= 400 and 'class="problem"' in broken.text
    assert applies(fake) == []  # nothing reached kubectl apply
    results = [line["result"] for line in audit_lines(audit) if line["action"].startswith("deploy.")]
    assert len(results) == 8 and all(r.startswith("refused: ") for r in results)
    assert {r.split(": ")[1] for r in results} >= {"SIGN_IN_NEEDED", "CSRF_INVALID", "RENDER_CHANGED", "CONFIRM_NEEDED",
                                                   "CLUSTER_NOT_SERVED"}


def test_actions_are_off_by_default_and_the_page_says_how_to_enable_them(server, monkeypatch):
    client, fake, audit = server
    monkeypatch.delenv("LENS_CONSOLE_ACTIONS")
    page = client.get("/deploy")
    assert 'data-code="ACTIONS_DISABLED"' in page.text and "LENS_CONSOLE_ACTIONS=on" in page.text
    assert client.post("/session", data={"token": TOKEN}).status_code == 403
    refused = client.post("/nodes/maintenance", data={"node": "gpu-1", "action": "cordon", "confirm": "yes", "csrf": "x"})
    assert refused.status_code == 403 and 'data-code="ACTIONS_DISABLED"' in refused.text
    monkeypatch.setenv("LENS_CONSOLE_ACTIONS", "on")
    monkeypatch.delenv("LENS_API_TOKEN")
    assert "no LENS_API_TOKEN is set" in client.get("/deploy").text
    assert [c for c in fake.calls if c.requested[1] in ("cordon", "uncordon", "apply")] == []


def test_cordon_and_uncordon_a_node_of_the_inventory(server):
    client, fake, audit = server
    sign_in(client)
    for action in ("cordon", "uncordon"):
        page = client.get("/nodes/maintenance", params={"node": "gpu-1", "back": "/accelerators/nvidia"})
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        done = client.post("/nodes/maintenance", data={"node": "gpu-1", "action": action, "confirm": "yes", "csrf": csrf,
                                                       "back": "/accelerators/nvidia"})
        assert done.status_code == 200 and re.search(rf"<code>kubectl [^<]*\b{action} gpu-1</code> done", done.text)
    page = client.get("/nodes/maintenance")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    unknown = client.post("/nodes/maintenance", data={"node": "gpu-9", "action": "cordon", "confirm": "yes", "csrf": csrf})
    assert unknown.status_code == 404 and 'data-code="NODE_UNKNOWN"' in unknown.text
    assert [list(c.requested) for c in fake.calls if c.requested[1] in ("cordon", "uncordon")] == [
        ["kubectl", "cordon", "gpu-1"], ["kubectl", "uncordon", "gpu-1"]]
    assert [(line["action"], line["result"]) for line in audit_lines(audit)][1:] == [
        ("node.cordon", "done"), ("node.uncordon", "done"), ("node.cordon", "refused: NODE_UNKNOWN")]


@pytest.mark.parametrize("name,value", [("LENS_CONSOLE_REFRESH", "abc"), ("LENS_CONSOLE_REFRESH", "0"),
                                        ("LENS_CONSOLE_ACTIONS", "maybe")])
def test_a_bad_console_setting_stops_the_server_at_start_naming_it(name, value, monkeypatch):
    from llm_d_lens.api.app import create_app
    from llm_d_lens.settings import SettingInvalid

    monkeypatch.setenv(name, value)
    with pytest.raises(SettingInvalid) as caught:
        create_app()
    assert caught.value.details["variable"] == name and value in caught.value.message
