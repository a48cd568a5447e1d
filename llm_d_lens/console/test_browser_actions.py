"""A person in Chromium: plan → render → dry-run → apply, and cordon, against a cluster behind the recording FakeRunner.

The server is the real app under uvicorn in this process (so its cluster runner is the fake: no API
server here), with the shared llm-d checkout rendered by the real kustomize. Also: every action page
passes axe-core at 1400 and 390 px.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_d_lens.console import test_browser
from llm_d_lens.console.conftest import needs_chromium
from llm_d_lens.console.test_actions import TOKEN, fake_cluster
from llm_d_lens.deploy.conftest import needs_kustomize
from llm_d_lens.testing.cluster import shared_root
from llm_d_lens.testing.console import serve_in_process

pytestmark = [needs_chromium, needs_kustomize]
visit = test_browser.visit


def llm_d_root() -> Path | None:
    root = shared_root()
    found = root / "upstream" / "llm-d" if root else None
    return found if found and (found / "guides" / "optimized-baseline").is_dir() else None


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Iterator[tuple[str, object, Path]]:
    root = llm_d_root()
    if root is None:
        pytest.skip("needs the shared llm-d checkout (../shared/upstream/llm-d with guides/optimized-baseline)")
    from llm_d_lens.cluster import served
    from llm_d_lens.console import actions

    home = tmp_path_factory.mktemp("home")
    audit = home / "audit.jsonl"
    fake = fake_cluster()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("LENS_CLUSTER_DEMO", "LENS_CLUSTER_SNAPSHOT", "LENS_TELEMETRY_DEMO", "LENS_PROMETHEUS_URL",
                     "LENS_CLUSTERS", "LENS_LLM_D_ROOT", "XDG_CONFIG_HOME"):
            patch.delenv(name, raising=False)
        patch.setenv("HOME", str(home))
        patch.setenv("LLM_D_ROOT", str(root))
        patch.setenv("LENS_KUBE_CONTEXT", "prod")
        patch.setenv("LENS_CONSOLE_ACTIONS", "on")
        patch.setenv("LENS_API_TOKEN", TOKEN)
        patch.setenv("LENS_AUDIT_LOG", str(audit))
        patch.setattr(served, "cluster_runner", lambda: fake)
        actions.forget()
        with serve_in_process() as url:
            yield url, fake, audit
        actions.forget()


def applies(fake) -> list:
    return [c for c in fake.calls if list(c.requested[:2]) == ["kubectl", "apply"]]


def test_a_person_goes_from_a_plan_to_an_applied_deployment(live, visit):
    url, fake, audit = live
    v = visit(url)
    v.go("/plan?model=llama-3.1-8b")
    handoff = v.page.locator("a.deploy-link").first
    handoff.click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.url.startswith(url + "/deploy?guide=optimized-baseline&hardware=nvidia")
    assert v.page.locator('input[name="model"]').input_value() == "meta-llama/Llama-3.1-8B"
    # not signed in: the render is shown, no action is offered, the page says how
    assert v.page.locator("#dry-run-form").count() == 0 and v.page.locator("#actions-sign-in").count() == 1
    v.page.locator("#actions-sign-in a").click()
    v.page.fill('input[name="token"]', TOKEN)
    v.page.locator("#sign-in-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert "/deploy?guide=optimized-baseline" in v.page.url  # back on the render it came from
    digest = v.page.locator("#digest").get_attribute("data-digest")
    rows = v.page.locator("#objects tbody tr")
    shown = [tuple(rows.nth(i).locator("td").nth(j).inner_text() for j in (0, 1)) for i in range(rows.count())]
    assert shown and applies(fake) == []

    v.page.locator("#dry-run-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert "passed" in v.page.locator("#outcome").inner_text()
    assert [c.requested[-1] for c in applies(fake)] == ["--dry-run=server"]
    # the apply button does nothing until the confirm box is ticked (the browser keeps the form back)
    v.page.locator("#apply-form button").click()
    assert len(applies(fake)) == 1 and v.page.locator("#apply-form").count() == 1
    v.page.check('#apply-form input[name="confirm"]')
    posted = v.page.evaluate("() => Object.fromEntries(new FormData(document.getElementById('apply-form')))")
    v.page.locator("#apply-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.locator("#outcome h2").inner_text() == "Applied"
    applied = applies(fake)[-1]
    assert "--dry-run=server" not in applied.requested
    assert hashlib.sha256(applied.input.encode()).hexdigest() == digest
    objects = [(d["kind"], d["metadata"]["name"]) for d in _documents(applied.input)]
    assert sorted(objects) == sorted(shown)  # exactly the objects the person was shown
    # the same form posted again, with the session's cookie: a replay, refused in place, nothing more applied
    replay = v.page.request.post(url + "/deploy/apply", form=posted)
    assert replay.status == 403 and 'data-code="CSRF_INVALID"' in replay.text() and len(applies(fake)) == 2
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(line["action"], line["result"]) for line in lines][-4:] == [
        ("session.sign-in", "signed in"), ("deploy.dry-run", "dry-run passed"), ("deploy.apply", "applied"),
        ("deploy.apply", "refused: CSRF_INVALID")]
    assert v.errors == [] and v.foreign() == []


def test_cordon_a_node_from_its_hardware_tab(live, visit):
    url, fake, _ = live
    v = visit(url)
    v.go("/session")
    if v.page.locator("#sign-in-form").count():
        v.page.fill('input[name="token"]', TOKEN)
        v.page.locator("#sign-in-form button").click()
        v.page.wait_for_load_state("networkidle")
    v.go("/accelerators/nvidia")
    v.page.locator("#maintenance-link").click()
    v.page.wait_for_load_state("networkidle")
    v.page.fill('#maintenance-form input[name="node"]', "gpu-1")
    v.page.check('#maintenance-form input[name="confirm"]')
    v.page.locator("#maintenance-form button").click()
    v.page.wait_for_load_state("networkidle")
    assert "cordon gpu-1" in v.page.locator("#outcome").inner_text()
    assert [list(c.requested) for c in fake.calls if c.requested[1] == "cordon"] == [["kubectl", "cordon", "gpu-1"]]
    assert v.errors == []


def _documents(text: str) -> list[dict]:
    import yaml

    return [d for d in yaml.safe_load_all(text) if d]


@pytest.mark.parametrize("width,height", ((1400, 900), (390, 844)), ids=["1400px", "390px"])
def test_axe_finds_no_violation_on_the_action_pages_signed_in(live, browser, width, height):
    pytest.importorskip("axe_playwright_python", reason="needs the test extra's axe-playwright-python (axe-core)")
    from llm_d_lens.console.test_axe import axe_violations

    url, fake, _ = live
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

        page.goto(url + "/session")
        check("sign-in form")
        page.fill('input[name="token"]', TOKEN)
        page.locator("#sign-in-form button").click()
        check("signed in")
        page.goto(url + "/deploy?guide=optimized-baseline&hardware=nvidia&replicas=1")
        check("render with the dry-run form")
        page.locator("#dry-run-form button").click()
        check("dry-run with the apply form")
        page.goto(url + "/nodes/maintenance?node=gpu-1&back=/accelerators/nvidia")
        check("maintenance form")
        page.goto(url + "/deploy?guide=no-such-guide&hardware=nvidia")
        check("a refused render")
        assert found == {}
    finally:
        context.close()
