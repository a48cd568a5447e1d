"""The console in a real browser: Debian's Chromium, driven by Playwright, against real ``lens serve`` processes.

Servers: the demo cluster with a real Prometheus scraping the shared exporter samples and three
pip-installed plugins (a clean one, one with markup in its ``ui`` block, one that fails to import);
the same without Prometheus; the same with a Prometheus that is down; and ``lens serve --demo``,
whose pages are the README's screenshots (written to build/screenshots; `make screenshots` refreshes docs/images).
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_d_lens.console.conftest import REPO, needs_chromium
from llm_d_lens.testing.console import lens_serve
from llm_d_lens.testing.prometheus import free_port

pytestmark = needs_chromium
#: where the demo console's screenshots are written; `make screenshots` copies them to docs/images for the README
IMAGES = REPO / "build" / "screenshots"


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


@pytest.fixture(scope="module")
def lens(scraping_prometheus, plugin_site) -> Iterator[str]:
    env = {"LENS_CLUSTER_DEMO": "1", "LENS_PROMETHEUS_URL": scraping_prometheus, "PYTHONPATH": str(plugin_site)}
    with lens_serve(env) as url:
        yield url


class Visit:
    """A page with every console message and every request it made recorded."""

    def __init__(self, browser, origin: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.origin = origin
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.blocked: set[str] = set()  # stopped by the page's Content-Security-Policy before anything was sent
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.blocked.add(r.url) if (r.failure or "").lower() in ("csp", "net::err_blocked_by_csp") else None)

    def go(self, path: str):
        response = self.page.goto(self.origin + path)
        self.page.wait_for_load_state("networkidle")
        return response

    def foreign(self) -> list[str]:
        own = (self.origin + "/", f"blob:{self.origin}/", "data:")
        return [u for u in self.requests if not u.startswith(own) and u not in self.blocked]

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser) -> Iterator:
    opened: list[Visit] = []

    def open_(origin: str) -> Visit:
        opened.append(Visit(browser, origin))
        return opened[-1]

    yield open_
    for v in opened:
        v.close()


def test_one_tab_per_registered_hardware_including_the_plugins(lens, visit):
    capabilities = get_json(lens + "/api/v1/hardware/capabilities")
    v = visit(lens)
    v.go("/accelerators/nvidia")
    tabs = v.page.locator('[role="tab"]')
    ids = [tabs.nth(i).get_attribute("data-hardware") for i in range(tabs.count())]
    assert sorted(ids) == sorted(p["id"] for p in capabilities["profiles"])
    # order from each profile's ui.order: the built-ins 10..50, acme 60, evil 70, cpu 90
    assert ids == ["nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu", "acme-npu", "evil-npu", "cpu"]
    acme = v.page.locator('[role="tab"][data-hardware="acme-npu"]')
    assert acme.inner_text().split() == ["Acme", "Inference", "NPU", "Acme", "·", "NPU"]
    assert acme.locator("use").get_attribute("href").endswith("icons.svg#server")
    acme.click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.url.endswith("/accelerators/acme-npu")
    assert v.page.locator('[role="tab"][aria-selected="true"]').get_attribute("data-hardware") == "acme-npu"
    # the plugin's panel defaults: power first, the namespace it names
    assert v.page.locator('#telemetry select[name="quantity"]').input_value() == "power"
    assert v.page.locator('#telemetry input[name="namespace"]').input_value() == "acme-serving"
    assert v.errors == []


def test_a_plugin_that_fails_to_load_is_a_banner_on_every_page_and_stops_nothing(lens, visit):
    v = visit(lens)
    for path in ("/", "/accelerators/nvidia", "/doctor"):
        v.go(path)
        banner = v.page.locator("#plugin-banner")
        assert "lens-broken" in banner.inner_text() and "acme SDK" in banner.inner_text()
    assert "lens-broken" in v.page.locator("#failures").inner_text()
    assert v.page.locator("#doctor-bad").count() == 1
    # the banner lists what /readyz lists
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(lens + "/readyz", timeout=30)
    assert caught.value.code == 503
    ready = json.load(caught.value)
    v.go("/")
    banner = v.page.locator("#plugin-banner .failure")
    assert banner.count() == len(ready["problems"]) and {p["distribution"].split()[0] for p in ready["problems"]} == {"lens-broken"}


def test_the_overview_shows_the_apis_numbers(lens, visit):
    api = get_json(lens + "/api/v1/clusters/overview")
    v = visit(lens)
    v.go("/")
    summary = v.page.locator("#summary")
    for field, key in (("nodes", "nodes"), ("total_gpu_count", "total_gpu_count"), ("allocatable", "allocatable"),
                       ("allocated", "allocated"), ("available", "available")):
        assert summary.locator(f'[data-field="{field}"]').inner_text() == f"{api['summary'][key]:,}"
    for bucket in api["vendors"]:
        card = v.page.locator(f'.card[data-hardware="{bucket["profile_id"]}"]')
        for field in ("devices", "partitions", "nodes", "allocatable", "allocated", "available"):
            assert card.locator(f'[data-field="{field}"]').inner_text() == f"{bucket[field]:,}", (bucket["profile_id"], field)
        if bucket["vram"]["devices_with_vram"]:
            assert card.locator('[data-field="vram"]').inner_text() == f"{bucket['vram']['total_bytes'] / 2**30:,.1f} GiB"
    # the capacity chart's bars carry the same allocated and free counts
    bars = v.page.locator("#capacity rect.allocated")
    drawn = sorted(int(float(bars.nth(i).get_attribute("data-value"))) for i in range(bars.count()))
    assert drawn == sorted(b["allocated"] for b in api["vendors"] if b["allocatable"])
    assert "embedded demo cluster" in v.page.locator("#source").inner_text()
    assert v.errors == [] and v.foreign() == []


def test_charts_carry_the_scraped_points_in_their_units(lens, visit):
    v = visit(lens)
    v.go("/accelerators/nvidia?minutes=15")
    charts = v.page.locator("#telemetry figure.chart")
    assert [(charts.nth(i).get_attribute("data-quantity"), charts.nth(i).get_attribute("data-unit")) for i in range(charts.count())] == [
        ("utilization", "%"), ("memory_used", "GiB"), ("power", "W"), ("temperature", "°C")]
    util = v.page.locator('figure[data-quantity="utilization"] polyline[data-series="gpu-node-01/0"]')
    assert int(util.get_attribute("data-points")) >= 1  # 15 s apart over 15 minutes; the scrapes began seconds ago
    # the sample's GPU 0: 87 %, FB_USED 73421 MiB, 612.35 W, 63 C; the chart's own numbers say so
    expected = {"utilization": "87%", "memory_used": f"{73421 / 1024:,.1f} GiB", "power": "612 W", "temperature": "63 °C"}
    for quantity, text in expected.items():
        legend = v.page.locator(f'figure[data-quantity="{quantity}"] .legend li', has_text="gpu-node-01/0")
        assert legend.locator(".latest").inner_text() == text
        table = v.page.locator(f'figure[data-quantity="{quantity}"] details.numbers table')
        assert text in table.text_content()
    # the axes are labelled with the unit and ticks
    assert v.page.locator('figure[data-quantity="power"] text.axis-title').text_content() == "W"
    assert v.page.locator('figure[data-quantity="utilization"] text.tick.y').last.text_content() == "100"
    devices = v.page.locator("#device-table tbody tr")
    assert devices.count() >= 2 and "gpu-node-01/0" in devices.first.inner_text()
    assert v.errors == [] and v.foreign() == []


def test_without_prometheus_the_panel_says_so_with_its_code(plugin_site, visit):
    with lens_serve({"LENS_CLUSTER_DEMO": "1"}) as url:
        v = visit(url)
        v.go("/accelerators/amd")
        problem = v.page.locator("#telemetry [data-code]").first  # an expected state: a note, not a failure box
        assert problem.get_attribute("data-code") == "SERVER_NOT_CONFIGURED"
        assert "LENS_PROMETHEUS_URL" in problem.inner_text()
        assert v.page.locator("#node-table tbody tr").count() == 2  # the rest of the tab is there
        assert v.errors == []


def test_with_prometheus_down_the_panel_says_so_with_its_code(visit):
    with lens_serve({"LENS_CLUSTER_DEMO": "1", "LENS_PROMETHEUS_URL": f"http://127.0.0.1:{free_port()}"}) as url:
        v = visit(url)
        v.go("/accelerators/nvidia")
        codes = {v.page.locator("#telemetry .problem").nth(i).get_attribute("data-code")
                 for i in range(v.page.locator("#telemetry .problem").count())}
        assert codes == {"PROMETHEUS_UNREACHABLE"}
        assert "cannot reach Prometheus" in v.page.locator("#telemetry").inner_text()
        assert v.errors == []


def test_keyboard_reaches_and_switches_tabs(lens, visit):
    v = visit(lens)
    v.go("/accelerators/nvidia")
    for _ in range(15):  # Tab from the top of the page until a tab has the focus
        v.page.keyboard.press("Tab")
        if v.page.evaluate("document.activeElement.getAttribute('role')") == "tab":
            break
    assert v.page.evaluate("document.activeElement.dataset.hardware") == "nvidia"
    with v.page.expect_navigation():
        v.page.keyboard.press("ArrowRight")
    assert v.page.url.endswith("/accelerators/amd")
    assert v.page.locator('[role="tab"][aria-selected="true"]').get_attribute("data-hardware") == "amd"
    v.page.locator('[role="tab"][aria-selected="true"]').focus()
    with v.page.expect_navigation():
        v.page.keyboard.press("End")
    assert v.page.url.endswith("/accelerators/cpu")
    assert v.errors == []


def test_markup_in_a_plugins_profile_is_shown_as_text(lens, visit):
    v = visit(lens)
    for path in ("/", "/accelerators/evil-npu"):
        v.go(path)
        assert v.page.evaluate("window.__pwned") is None
        assert v.page.locator('img[src="x"]').count() == 0 and v.page.locator("b[onmouseover]").count() == 0
    tab = v.page.locator('[role="tab"][data-hardware="evil-npu"]')
    assert "<script>window.__pwned=2</script>" in tab.inner_text()
    assert 'Evil <img src=x onerror="window.__pwned=1">' in v.page.locator("h2.panel-title").inner_text()


def test_api_docs_work_offline(lens, visit):
    v = visit(lens)
    v.go("/docs")
    v.page.wait_for_selector(".opblock", timeout=20000)
    assert v.page.locator(".opblock").count() >= 10
    assert "/api/v1/clusters/overview" in v.page.locator("#swagger-ui").inner_text()
    assert v.errors == []
    v.go("/redoc")
    v.page.wait_for_selector("h1", timeout=20000)
    assert "Lens" in v.page.locator("h1").first.inner_text()
    assert v.foreign() == []
    # ReDoc's bundle draws its maker's logo from a CDN; the console serves the bundle with an empty
    # local image there, so the strict policy refuses nothing and the console stays clean
    assert v.errors == []
    assert "API docs by Redocly" in v.page.content()  # the credit is kept


def test_lens_serve_demo_is_a_populated_console_and_its_screenshots_are_the_readmes(visit):
    with lens_serve({}, "--demo") as url:
        v = visit(url)
        v.go("/")
        assert v.page.locator(".card").count() >= 6
        IMAGES.mkdir(parents=True, exist_ok=True)
        v.page.screenshot(path=str(IMAGES / "console-overview.png"), full_page=True)
        v.go("/accelerators/nvidia")
        assert "demo telemetry" in v.page.locator("#telemetry-source").inner_text()
        lines = v.page.locator('figure[data-quantity="utilization"] polyline')
        assert lines.count() >= 8 and all(int(lines.nth(i).get_attribute("data-points")) >= 55 for i in range(lines.count()))
        v.page.screenshot(path=str(IMAGES / "console-accelerators.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 1800},
                          full_page=True)
        assert v.errors == [] and v.foreign() == []
        assert re.search(r"\bv\d", v.page.locator(".version").inner_text())


def test_a_5000_row_node_table_is_paged(tmp_path: Path, visit):
    from llm_d_lens.testing.cluster import as_list, node

    snapshot = tmp_path / "big.json"
    snapshot.write_text(json.dumps(as_list(*(node(f"h100-{i:04d}", resources={"nvidia.com/gpu": "8"}) for i in range(5000)))))
    with lens_serve({"LENS_CLUSTER_SNAPSHOT": str(snapshot)}) as url:
        v = visit(url)
        v.go("/accelerators/nvidia?sort=node&desc=1")
        rows = v.page.locator("#node-table tbody tr")
        assert rows.count() == 50 and rows.first.locator(".node-name").inner_text() == "h100-4999"
        assert "1–50 of 5,000" in v.page.locator(".pager").first.inner_text()
        v.page.locator('#nodes input[name="q"]').fill("h100-012")
        with v.page.expect_navigation():
            v.page.locator('#nodes input[name="q"]').press("Enter")
        assert v.page.locator("#node-table tbody tr").count() == 10
        assert "1–10 of 10" in v.page.locator(".pager").first.inner_text()


def test_the_plan_form_plans_the_chosen_model_on_the_cluster(lens, visit):
    v = visit(lens)
    v.go("/plan")
    v.page.locator('#plan-form select[name="model"]').select_option("qwen3-32b")
    v.page.locator('#plan-form input[name="context"]').fill("32768")
    with v.page.expect_navigation():
        v.page.locator("#plan-form button").click()
    api = json.loads(urllib.request.urlopen(urllib.request.Request(
        lens + "/api/v1/planning/plan", data=json.dumps({"model": "qwen3-32b", "context": 32768}).encode(),
        headers={"Content-Type": "application/json"}), timeout=60).read())
    rows = v.page.locator("#plan-table tbody tr[data-pool]")
    assert rows.count() == len(api["pools"])
    for pool in api["pools"]:
        cell = v.page.locator(f'#plan-table tr[data-pool="{pool["pool"]}"] [data-field="parallelism"]')
        expected = f'{pool["best"]["tensor_parallel"]} × {pool["best"]["pipeline_parallel"]}' if pool["best"] else "–"
        assert cell.inner_text() == expected
    assert "32,768 tokens" in v.page.locator(".source").inner_text()
    assert v.errors == [] and v.foreign() == []


def test_lens_serve_demo_calls_no_busy_device_idle_in_devices_now(visit):
    """Issue 27: 44 demo devices were "idle", 34 of them above 50 %, while the node table listed their pods."""
    with lens_serve({}, "--demo") as url:
        api = get_json(url + "/api/v1/telemetry/devices")["devices"]
        ratio = {"/".join(p for p in (d["node"] or "-", d["device"], d.get("sub_device") or "") if p): d["utilization_ratio"]
                 for d in api}
        v = visit(url)
        seen: dict[str, tuple[str, str]] = {}  # device -> (utilisation cell, held-by cell), every page of every tab
        for hardware in sorted({d["hardware"] for d in api}):
            page = 1
            while True:
                v.go(f"/accelerators/{hardware}?dpage={page}")
                rows = v.page.locator("#device-table tbody tr")
                for i in range(rows.count()):
                    cells = rows.nth(i).locator("td")
                    seen[cells.nth(0).inner_text()] = (cells.nth(1).inner_text(), cells.nth(7).inner_text())
                if v.page.locator("#device-table").count() == 0 or rows.count() < 50:
                    break
                page += 1
        assert set(seen) == set(ratio)  # every device the API reports was read off the page
        busy_idle = [(name, util) for name, (util, held) in seen.items() if held == "idle" and (ratio[name] or 0) > 0]
        assert busy_idle == []
        # the check has something to bite on: busy devices name their pod, and idle ones exist, all at 0 %
        busy = [name for name in seen if (ratio[name] or 0) > 0]
        assert busy and all("/" in seen[name][1] for name in busy)
        idle = [name for name, (util, held) in seen.items() if held == "idle"]
        assert idle and {seen[name][0] for name in idle} <= {"0%", "–"}
        assert v.errors == []


GPTQ_CONFIG = REPO / "llm_d_lens" / "planning" / "testdata" / "checkpoints" / "llama-2-7b-gptq" / "config.json"
MIG_POOL = "nvidia/NVIDIA-H100-80GB-HBM3:mig-1g.10gb"


def test_the_plan_form_plans_an_uploaded_config_json_on_a_partition_pool(lens, visit, tmp_path):
    # the demo's MIG node offers 28 nvidia.com/mig-1g.10gb slices; a 4-bit 7B (GPTQ) fits one
    v = visit(lens)
    v.go("/plan")
    v.page.locator('#plan-form input[name="config"]').set_input_files(str(GPTQ_CONFIG))
    v.page.locator('#plan-form input[name="context"]').fill("4096")
    with v.page.expect_navigation():
        v.page.locator("#plan-form button").click()
    api = json.loads(urllib.request.urlopen(urllib.request.Request(
        lens + "/api/v1/planning/plan", data=json.dumps({"config": json.loads(GPTQ_CONFIG.read_text()), "context": 4096}).encode(),
        headers={"Content-Type": "application/json"}), timeout=60).read())
    assert "From the uploaded config.json: LlamaForCausalLM" in v.page.locator(".source").inner_text()
    (mig,) = [p for p in api["pools"] if p["pool"] == MIG_POOL]
    assert mig["best"] is not None
    row = v.page.locator(f'#plan-table tr[data-pool="{MIG_POOL}"]')
    assert row.locator('[data-field="partition"]').inner_text() == "partition nvidia.com/mig-1g.10gb"
    assert row.locator('[data-field="parallelism"]').inner_text() == "1 × 1"
    assert row.locator('[data-field="headroom"]').inner_text() == f'{mig["best"]["headroom_gib"]:.2f} GiB'
    assert v.page.locator("#plan-table tbody tr[data-pool]").count() == len(api["pools"])
    # a file over the cap is refused with its code, and the form is still there to choose another
    big = tmp_path / "huge.json"
    big.write_text('{"pad": "' + "x" * (256 * 1024) + '"}')
    v.page.locator('#plan-form input[name="config"]').set_input_files(str(big))
    with v.page.expect_navigation():
        v.page.locator("#plan-form button").click()
    assert v.page.locator('[data-code="PLANNING_CONFIG_TOO_LARGE"]').count() == 1
    assert v.page.locator("#plan-form").count() == 1
    # Chromium logs the 413 answer as a failed resource load; nothing else may be logged
    assert [e for e in v.errors if "413" not in e] == [] and v.foreign() == []
