"""The console's driver and exporter install through the real app: status, dry-run plan, confirmed apply, every refusal.

kubectl and helm go through the recording FakeRunner (no API server here).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.console.test_actions import TOKEN, audit_lines, fake_cluster, form_of, sign_in
from llm_d_lens.testing.fake_runner import FakeRunner

EXPORTER = {"hardware": "nvidia", "component": "exporter"}
DRIVER = {"hardware": "nvidia", "component": "driver", "mode": "dra"}


def install_cluster(helm_fails: bool = False) -> FakeRunner:
    """The actions' cluster, with no driver or exporter installed yet and a helm that installs (or refuses)."""
    fake = fake_cluster()
    fake.reply(["kubectl", "version", "-o", "json"], json_body={"serverVersion": {"gitVersion": "v1.35.0"}})
    fake.reply(["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"], json_body={"kind": "List", "items": []})
    fake.reply(["kubectl", "get", "pods", "--namespace", ...], json_body={"kind": "List", "items": []})
    fake.reply(["helm", "list", ...], json_body=[])
    if helm_fails:
        fake.reply(["helm", "upgrade", "--install", ...], returncode=1,
                   stderr="Error: INSTALLATION FAILED: admission webhook denied the request\n")
    else:
        fake.reply(["helm", "upgrade", "--install", ...], stdout="Release has been installed. Happy Helming!\n")
    return fake


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from llm_d_lens.api.app import create_app
    from llm_d_lens.cluster import served
    from llm_d_lens.console import actions

    for name in ("LENS_CLUSTER_DEMO", "LENS_CLUSTER_SNAPSHOT", "LENS_TELEMETRY_DEMO", "LENS_PROMETHEUS_URL", "LENS_CLUSTERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("LENS_KUBE_CONTEXT", "prod")
    monkeypatch.setenv("LENS_CONSOLE_ACTIONS", "on")
    monkeypatch.setenv("LENS_API_TOKEN", TOKEN)
    monkeypatch.setenv("LENS_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    holder = {"fake": install_cluster()}
    monkeypatch.setattr(served, "cluster_runner", lambda: holder["fake"])
    actions.forget()
    yield TestClient(create_app()), holder, tmp_path / "audit.jsonl"
    actions.forget()


def upgrades(fake: FakeRunner) -> list[list[str]]:
    return [list(c.requested) for c in fake.calls if c.requested[:2] == ("helm", "upgrade")]


def shown_commands(html: str) -> list[str]:
    import html as markup

    block = re.search(r'<ol id="plan-commands">(.*?)</ol>', html, re.S)
    assert block, "no plan commands shown"
    return [markup.unescape(c) for c in re.findall(r"<pre[^>]*>(.*?)</pre>", block.group(1), re.S)]


@pytest.mark.parametrize("chosen", [EXPORTER, DRIVER], ids=["exporter", "driver"])
def test_plan_then_apply_runs_exactly_the_shown_command(server, chosen):
    from llm_d_lens.runner import format_command

    client, holder, audit = server
    fake = holder["fake"]
    sign_in(client)
    page = client.get("/install", params=chosen)
    assert page.status_code == 200, page.text
    assert page.headers["cache-control"] == "no-store"
    shown = shown_commands(page.text)
    assert len(shown) == 1 and shown[0].startswith("helm upgrade --install ")
    assert upgrades(fake) == []  # status and plan ran nothing that changes the cluster
    digest = re.search(r'data-digest="([0-9a-f]{64})"', page.text).group(1)

    done = client.post("/install/apply", data={**form_of(page.text, "install-form"), "confirm": "yes"})
    assert done.status_code == 200, done.text
    assert [format_command(argv) for argv in upgrades(fake)] == shown  # exactly the command the person was shown
    assert "Installed" in done.text and 'id="ran"' in done.text
    [line] = [line for line in audit_lines(audit) if line["action"].startswith("install.")]
    assert (line["action"], line["result"], line["target"]["digest"]) == (f"install.{chosen['component']}", "done", digest)
    assert line["target"]["ran"] == shown and line["who"]["session"]


def refused(answer, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert f'data-code="{code}"' in answer.text, answer.text
    assert 'id="refusal"' in answer.text


def test_every_bad_input_is_refused_in_place_logged_and_runs_nothing(server, monkeypatch):
    client, holder, audit = server
    fake = holder["fake"]
    # not signed in: the plan is shown, no apply form, and a post is refused
    page = client.get("/install", params=EXPORTER)
    assert page.status_code == 200 and 'id="install-form"' not in page.text and 'id="actions-sign-in"' in page.text
    digest = re.search(r'data-digest="([0-9a-f]{64})"', page.text).group(1)
    refused(client.post("/install/apply", data={**EXPORTER, "digest": digest, "csrf": "x", "confirm": "yes"}), 401, "SIGN_IN_NEEDED")
    # a wrong token does not sign in
    wrong = client.post("/session", data={"token": "not-the-token"})
    refused(wrong, 401, "UNAUTHORIZED")
    sign_in(client)
    form = lambda: {**form_of(client.get("/install", params=EXPORTER).text, "install-form"), "confirm": "yes"}  # noqa: E731
    refused(client.post("/install/apply", data={**form(), "csrf": "forged"}), 403, "CSRF_INVALID")
    no_csrf = form()
    no_csrf.pop("csrf")
    refused(client.post("/install/apply", data=no_csrf), 403, "CSRF_INVALID")
    unconfirmed = form()
    unconfirmed.pop("confirm")
    refused(client.post("/install/apply", data=unconfirmed), 422, "CONFIRM_NEEDED")
    refused(client.post("/install/apply", data={**form(), "cluster": "elsewhere"}), 404, "CLUSTER_NOT_SERVED")
    refused(client.post("/install/apply", data={**form(), "digest": "0" * 64}), 409, "PLAN_CHANGED")
    refused(client.post("/install/apply", data={**form(), "component": "firmware"}), 422, "REQUEST_INVALID")
    refused(client.post("/install/apply", data={**form(), "hardware": "no-such-npu"}), 404, "ACCELERATOR_NOT_REGISTERED")
    refused(client.post("/install/apply", data={**form(), "hardware": "google-tpu"}), 409, "EXPORTER_NOT_MANAGED")
    refused(client.post("/install/apply", content=b"{}", headers={"Content-Type": "application/json"}), 415, "FORM_INVALID")
    assert upgrades(fake) == []
    # the one good form, then the same form again: a replay
    good = form()
    assert client.post("/install/apply", data=good).status_code == 200 and len(upgrades(fake)) == 1
    refused(client.post("/install/apply", data=good), 403, "CSRF_INVALID")
    assert len(upgrades(fake)) == 1
    # helm refuses: shown in place with helm's words, audited; the fake cluster took nothing
    holder["fake"] = install_cluster(helm_fails=True)
    failed = client.post("/install/apply", data=form())
    refused(failed, 502, "COMMAND_FAILED")
    assert "admission webhook denied" in failed.text and "Ran before the refusal" in failed.text
    # actions off: refused, even signed in with a good form
    holder["fake"] = install_cluster()
    last = form()
    monkeypatch.setenv("LENS_CONSOLE_ACTIONS", "off")
    refused(client.post("/install/apply", data=last), 403, "ACTIONS_DISABLED")
    assert upgrades(holder["fake"]) == []
    results = [(line["action"], line["result"]) for line in audit_lines(audit) if line["action"] != "session.sign-in"]
    assert results == [
        ("install.exporter", "refused: SIGN_IN_NEEDED"), ("install.exporter", "refused: CSRF_INVALID"),
        ("install.exporter", "refused: CSRF_INVALID"), ("install.exporter", "refused: CONFIRM_NEEDED"),
        ("install.exporter", "refused: CLUSTER_NOT_SERVED"), ("install.exporter", "refused: PLAN_CHANGED"),
        ("install.apply", "refused: REQUEST_INVALID"), ("install.apply", "refused: ACCELERATOR_NOT_REGISTERED"),
        ("install.exporter", "refused: EXPORTER_NOT_MANAGED"), ("install.apply", "refused: FORM_INVALID"),
        ("install.exporter", "done"), ("install.exporter", "refused: CSRF_INVALID"),
        ("install.exporter", "refused: COMMAND_FAILED"), ("install.exporter", "refused: ACTIONS_DISABLED")]
    assert [line["result"] for line in audit_lines(audit) if line["action"] == "session.sign-in"] == [
        "refused: UNAUTHORIZED", "signed in"]


def test_a_snapshot_or_demo_server_shows_a_neutral_note_and_still_plans(server, monkeypatch):
    client, holder, _ = server
    monkeypatch.delenv("LENS_KUBE_CONTEXT")
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    page = client.get("/install", params=EXPORTER)
    assert page.status_code == 200, page.text
    assert 'data-code="LIVE_CLUSTER_NEEDED" data-expected="true"' in page.text and 'class="problem"' not in page.text
    assert shown_commands(page.text) and holder["fake"].calls == []


def test_the_install_runner_refuses_a_command_the_plan_did_not_show():
    from llm_d_lens.console.actions import ActionRefused
    from llm_d_lens.console.installs import ShownOnly

    fake = FakeRunner(default=None)
    fake.reply(["helm", ...], stdout="")
    fake.reply(["kubectl", "get", ...], json_body={"items": []})
    guarded = ShownOnly(fake, [["helm", "upgrade", "--install", "r", "c"]])
    guarded.run(["kubectl", "get", "nodes", "-o", "json"])  # a read passes
    asyncio.run(guarded.arun(["helm", "upgrade", "--install", "r", "c"]))
    with pytest.raises(ActionRefused) as caught:
        asyncio.run(guarded.arun(["helm", "upgrade", "--install", "r", "c", "--set-json", "token=\"x\""]))
    assert caught.value.code == "COMMAND_NOT_SHOWN"
    with pytest.raises(ActionRefused):
        guarded.run(["kubectl", "delete", "node", "gpu-1"])
    assert [list(c.requested) for c in fake.calls] == [["kubectl", "get", "nodes", "-o", "json"],
                                                      ["helm", "upgrade", "--install", "r", "c"]]
    assert guarded.ran == [["helm", "upgrade", "--install", "r", "c"]]


def test_the_audit_line_is_json_per_action(server):
    client, _, audit = server
    sign_in(client)
    client.post("/install/apply", data={**DRIVER, "csrf": "x"})
    assert all(isinstance(json.loads(line), dict) for line in audit.read_text().splitlines())
