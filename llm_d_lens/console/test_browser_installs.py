"""A person in Chromium: a hardware tab → the exporter's dry-run plan → confirmed install, against the recording FakeRunner.

The server is the real app under uvicorn in this process (its cluster runner is the fake). Every bad
input the issue names is tried in the browser (or with the browser's own cookies), refused in place,
logged, and runs nothing; the install panel passes axe-core at 1400 and 390 px.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from llm_d_lens.console import test_browser
from llm_d_lens.console.conftest import needs_chromium
from llm_d_lens.console.test_actions import TOKEN
from llm_d_lens.console.test_installs import install_cluster, upgrades
from llm_d_lens.testing.console import serve_in_process

pytestmark = [needs_chromium]
visit = test_browser.visit


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Iterator[tuple[str, dict, object]]:
    from llm_d_lens.cluster import served
    from llm_d_lens.console import actions

    home = tmp_path_factory.mktemp("home")
    audit = home / "audit.jsonl"
    holder = {"fake": install_cluster()}
    with pytest.MonkeyPatch.context() as patch:
        for name in ("LENS_CLUSTER_DEMO", "LENS_CLUSTER_SNAPSHOT", "LENS_TELEMETRY_DEMO", "LENS_PROMETHEUS_URL",
                     "LENS_CLUSTERS", "LENS_LLM_D_ROOT", "LLM_D_ROOT", "XDG_CONFIG_HOME"):
            patch.delenv(name, raising=False)
        patch.setenv("HOME", str(home))
        patch.setenv("LENS_KUBE_CONTEXT", "prod")
        patch.setenv("LENS_CONSOLE_ACTIONS", "on")
        patch.setenv("LENS_API_TOKEN", TOKEN)
        patch.setenv("LENS_AUDIT_LOG", str(audit))
        patch.setattr(served, "cluster_runner", lambda: holder["fake"])
        actions.forget()
        with serve_in_process() as url:
            yield url, holder, audit
        actions.forget()


def sign_in(v, token: str = TOKEN) -> None:
    v.page.fill('input[name="token"]', token)
    v.page.locator("#sign-in-form button").click()
    v.page.wait_for_load_state("networkidle")


def plan_exporter(v) -> list[str]:
    v.go("/install?hardware=nvidia")
    v.page.locator('a.plan-link[data-component="exporter"]').click()
    v.page.wait_for_load_state("networkidle")
    items = v.page.locator("#plan-commands pre")
    return [items.nth(i).inner_text() for i in range(items.count())]


def refusal_code(v) -> str:
    return v.page.locator("#refusal [data-code]").first.get_attribute("data-code")


def audit_results(audit) -> list[tuple[str, str]]:
    return [(line["action"], line["result"]) for line in map(json.loads, audit.read_text().splitlines())]


def test_a_person_installs_the_exporter_exactly_as_planned(live, visit):
    from llm_d_lens.runner import format_command

    url, holder, audit = live
    fake = holder["fake"]
    v = visit(url)
    v.go("/accelerators/nvidia")
    v.page.locator("#install-link").click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.url == url + "/install?hardware=nvidia"
    assert v.page.locator("#exporters tbody tr").count() == 1 and v.page.locator("#driver-modes tbody tr").count() == 2
    # not signed in: the status and the plan links, no apply form, the page says how
    assert v.page.locator("#actions-sign-in").count() == 1
    v.page.locator("#actions-sign-in a").click()
    sign_in(v)
    assert v.page.url == url + "/install?hardware=nvidia"  # back where it came from
    shown = plan_exporter(v)
    assert len(shown) == 1 and shown[0].startswith("helm upgrade --install dcgm-exporter dcgm-exporter --version 4.8.2")
    assert upgrades(fake) == []
    # the install button does nothing until the confirm box is ticked (the browser keeps the form back)
    v.page.locator("#install-form button").click()
    assert upgrades(fake) == [] and v.page.locator("#install-form").count() == 1
    v.page.check('#install-form input[name="confirm"]')
    posted = v.page.evaluate("() => Object.fromEntries(new FormData(document.getElementById('install-form')))")
    v.page.locator("#install-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.locator("#outcome h2").inner_text() == "Installed"
    assert [format_command(argv) for argv in upgrades(fake)] == shown  # exactly the command shown, once
    assert [v.page.locator("#ran li").nth(0).inner_text()] == shown
    assert v.errors == [] and v.foreign() == []
    # the same form posted again with the session's cookie: a replay, refused in place, nothing more run
    replay = v.page.request.post(url + "/install/apply", form=posted)
    assert replay.status == 403 and 'data-code="CSRF_INVALID"' in replay.text() and len(upgrades(fake)) == 1
    assert audit_results(audit)[-3:] == [("session.sign-in", "signed in"), ("install.exporter", "done"),
                                         ("install.exporter", "refused: CSRF_INVALID")]


@pytest.mark.parametrize("tamper, code", [
    ("f => f.querySelector('input[name=csrf]').value = 'forged-token'", "CSRF_INVALID"),
    ("f => f.querySelector('input[name=csrf]').remove()", "CSRF_INVALID"),
    ("f => { const i = document.createElement('input'); i.type = 'hidden'; i.name = 'cluster'; i.value = 'elsewhere'; f.append(i); }",
     "CLUSTER_NOT_SERVED"),
    ("f => f.querySelector('input[name=digest]').value = '0'.repeat(64)", "PLAN_CHANGED"),
], ids=["forged-csrf", "missing-csrf", "cluster-not-served", "changed-plan"])
def test_a_tampered_form_is_refused_in_place_and_runs_nothing(live, visit, tamper, code):
    url, holder, audit = live
    holder["fake"] = fake = install_cluster()
    v = visit(url)
    v.go("/session")
    sign_in(v)
    plan_exporter(v)
    v.page.check('#install-form input[name="confirm"]')
    v.page.locator("#install-form").evaluate(tamper)
    v.page.locator("#install-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert refusal_code(v) == code
    assert "Nothing was run on the cluster." in v.page.locator("#refusal").inner_text()
    assert upgrades(fake) == []
    assert audit_results(audit)[-1] == ("install.exporter", f"refused: {code}")


def test_a_wrong_token_signs_nobody_in_and_the_api_refuses_a_wrong_bearer(live, visit):
    url, holder, audit = live
    holder["fake"] = fake = install_cluster()
    v = visit(url)
    v.go("/session")
    sign_in(v, "not-the-token")
    assert refusal_code(v) == "UNAUTHORIZED" and v.page.locator("#sign-in-form").count() == 1
    plan_exporter(v)
    assert v.page.locator("#install-form").count() == 0  # still not signed in: no form to post
    answer = v.page.request.post(url + "/api/v1/telemetry/exporters/install", data={"hardware": "nvidia"},
                                 headers={"Authorization": "Bearer not-the-token"})
    assert answer.status == 401 and answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["code"] == "UNAUTHORIZED" and upgrades(fake) == []
    assert audit_results(audit)[-1] == ("session.sign-in", "refused: UNAUTHORIZED")


def test_helm_refusing_the_install_is_shown_in_place_with_its_words(live, visit):
    url, holder, audit = live
    holder["fake"] = install_cluster(helm_fails=True)
    v = visit(url)
    v.go("/session")
    sign_in(v)
    shown = plan_exporter(v)
    v.page.check('#install-form input[name="confirm"]')
    v.page.locator("#install-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert refusal_code(v) == "COMMAND_FAILED"
    text = v.page.locator("#refusal").inner_text()
    assert "admission webhook denied" in text and shown[0] in text  # what helm said, and the one command that ran
    assert audit_results(audit)[-1] == ("install.exporter", "refused: COMMAND_FAILED")


@pytest.mark.parametrize("width,height", ((1400, 900), (390, 844)), ids=["1400px", "390px"])
def test_axe_finds_no_violation_on_the_install_panel(live, browser, width, height):
    pytest.importorskip("axe_playwright_python", reason="needs the test extra's axe-playwright-python (axe-core)")
    from llm_d_lens.console.test_axe import axe_violations

    url, holder, _ = live
    holder["fake"] = install_cluster()
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        found = {}

        def check(name: str) -> None:
            page.wait_for_load_state("networkidle")
            violations = axe_violations(page)
            if violations:
                found[name] = violations
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name

        page.goto(url + "/install")
        check("no hardware chosen")
        page.goto(url + "/install?hardware=nvidia&component=exporter")
        check("status and plan, signed out")
        page.goto(url + "/session")
        page.fill('input[name="token"]', TOKEN)
        page.locator("#sign-in-form button").click()
        page.goto(url + "/install?hardware=nvidia&component=driver&mode=dra")
        check("driver plan with the install form")
        page.check('#install-form input[name="confirm"]')
        page.locator("#install-form button").click()
        check("installed")
        page.goto(url + "/install?hardware=nvidia&component=exporter")
        page.check('#install-form input[name="confirm"]')
        page.locator("#install-form").evaluate("f => f.querySelector('input[name=csrf]').value = 'forged'")
        page.locator("#install-form button").click()
        check("a refusal")
        page.goto(url + "/install?hardware=google-tpu&component=exporter")
        check("an exporter Lens does not install")
        assert found == {}
    finally:
        context.close()
