"""The console's pages through the real app (no browser): data, honest failure states, escaping, headers."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.serving.inventories import forget
from llm_d_lens.testing.cluster import as_list, node, pod
from llm_d_lens.console.charts import capacity_bars, line_chart, nice_ceiling
from llm_d_lens.console.data import tabs
from llm_d_lens.console.router import link
from llm_d_lens.console.tables import paginate
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.testing.prometheus import free_port

SERVER_ENV = ("LENS_CLUSTERS", "LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_PROMETHEUS_URL",
              "LENS_TELEMETRY_DEMO", "LENS_CLUSTER_OBJECTS", "LLM_D_ROOT", "LENS_LLM_D_ROOT")


@pytest.fixture
def server(monkeypatch) -> TestClient:
    for name in SERVER_ENV:
        monkeypatch.delenv(name, raising=False)
    forget()
    yield TestClient(create_app())
    forget()


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_overview_shows_the_apis_numbers_for_the_demo(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    api = server.get("/api/v1/clusters/overview").json()
    page = server.get("/").text
    summary = api["summary"]
    for field in ("nodes", "total_gpu_count", "allocatable", "allocated", "available"):
        assert re.search(rf'data-field="{field}">{summary[field]:,}<', page), field
    nvidia = next(v for v in api["vendors"] if v["profile_id"] == "nvidia")
    card = page[page.index('data-hardware="nvidia"'):]
    card = card[:card.index("</article>")]
    assert f'data-field="devices">{nvidia["devices"]}<' in card and f'data-field="allocated">{nvidia["allocated"]}<' in card
    assert "embedded demo cluster" in text_of(page)
    # what no profile claims is listed by name
    assert "rdma/rdma_shared_device_a" in page and "dra.net" in page


def test_a_snapshot_overview_names_its_file_and_an_edited_file_is_read_again(server, monkeypatch, tmp_path: Path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(as_list(node("mi300x", resources={"amd.com/gpu": "8"}), pod("a", "mi300x", limits={"amd.com/gpu": "5"}))))
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(path))
    assert str(path) in server.get("/").text
    assert server.get("/api/v1/clusters/overview").json()["vendors"][0]["allocated"] == 5
    path.write_text(json.dumps(as_list(node("mi300x", resources={"amd.com/gpu": "8"}), pod("a", "mi300x", limits={"amd.com/gpu": "2"}),
                                       node("mi300x-2", resources={"amd.com/gpu": "8"}))))
    assert server.get("/api/v1/clusters/overview").json()["vendors"][0]["allocated"] == 2


def test_a_broken_snapshot_is_a_coded_panel_not_a_failed_page(server, monkeypatch, tmp_path: Path):
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "Node"}')
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(path))
    answer = server.get("/")
    assert answer.status_code == 200
    assert 'data-code="SERVER_NOT_CONFIGURED"' in answer.text and "LENS_CLUSTER_SNAPSHOT" in answer.text


def test_every_telemetry_state_is_named_with_its_code(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    page = server.get("/accelerators/nvidia").text
    # no Prometheus configured: the server's to fix, and the panel says how
    assert 'data-code="SERVER_NOT_CONFIGURED"' in page and "LENS_PROMETHEUS_URL" in page
    monkeypatch.setenv("LENS_PROMETHEUS_URL", f"http://127.0.0.1:{free_port()}")
    page = server.get("/accelerators/nvidia").text
    assert 'data-code="PROMETHEUS_UNREACHABLE"' in page
    # the rest of the tab still renders
    assert 'id="node-table"' in page and "gpu-h100-01" in page


def test_a_live_cluster_whose_kubectl_fails_says_so_on_the_panel(server, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("LENS_KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.setenv("LENS_KUBE_CONTEXT", "nowhere")
    monkeypatch.setenv("LENS_KUBECTL_TIMEOUT", "5")
    page = server.get("/").text
    codes = set(re.findall(r'data-code="([A-Z_]+)"', page))
    assert codes & {"COMMAND_FAILED", "COMMAND_NOT_FOUND", "COMMAND_TIMED_OUT"}, codes


def test_demo_telemetry_draws_a_chart_per_quantity_with_units(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    monkeypatch.setenv("LENS_TELEMETRY_DEMO", "1")
    page = server.get("/accelerators/amd", params={"quantity": "power", "minutes": 15}).text
    charts = re.findall(r'<figure class="chart" data-quantity="(\w+)" data-unit="([^"]+)"', page)
    assert charts == [("power", "W"), ("utilization", "%"), ("memory_used", "GiB"), ("temperature", "°C")]
    points = [int(n) for n in re.findall(r'data-points="(\d+)"', page)]
    assert points and all(13 <= n <= 16 for n in points)  # 15 minutes at one point a minute
    # the demo's exporter pages carry the health fields default installs collect, all clear: ok per device
    assert page.count('<span class="health ok">ok</span>') == 8 and 'class="health unknown"' not in page
    # and its devices join the demo pods: the GPUs the 405B pod holds name it, none is called idle
    assert page.count("<td>llm/vllm-llama-3-1-405b-rocm-0</td>") == 8 and '<span class="note">idle</span>' not in page


def test_an_unknown_tab_is_a_404_page_naming_it(server):
    answer = server.get("/accelerators/quantum-abacus")
    assert answer.status_code == 404 and "quantum-abacus" in answer.text and "ACCELERATOR_NOT_REGISTERED" in answer.text


def test_accelerators_opens_the_first_tab(server):
    answer = server.get("/accelerators", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/accelerators/nvidia"


def test_pages_carry_a_strict_policy_and_docs_are_served_locally(server):
    policy = server.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    docs = server.get("/docs").text
    assert "cdn" not in docs.lower() and "/console/vendor/swagger-ui-bundle.js" in docs
    assert server.get("/console/vendor/swagger-ui-bundle.js").status_code == 200
    assert server.get("/console/vendor/redoc.standalone.js").status_code == 200
    assert "<script>" not in docs  # no inline script: the policy forbids it


def test_redoc_gets_its_bundle_without_the_remote_logo_and_the_same_strict_policy(server):
    from llm_d_lens.console.router import vendor_directory
    from llm_d_lens.console.security import DOCS_POLICY

    page = server.get("/redoc")
    assert page.headers["content-security-policy"] == DOCS_POLICY and "img-src 'self' data:;" in DOCS_POLICY
    assert '<script src="/console/redoc.standalone.js"></script>' in page.text
    served = server.get("/console/redoc.standalone.js")
    assert served.status_code == 200 and served.headers["content-type"].startswith("text/javascript")
    packaged = (Path(vendor_directory()) / "redoc.standalone.js").read_text(encoding="utf-8")
    assert "https://cdn.redoc.ly/redoc/logo-mini.svg" in packaged  # the file as installed still has it ...
    assert "cdn.redoc.ly" not in served.text  # ... the one served has not
    assert 'src:"data:image/svg+xml,' in served.text


def test_plugin_text_is_escaped(server, plugins, fresh_registry, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    hostile = minimal_profile("evil-npu", display_name='<img src=x onerror="alert(1)">',
                              ui={"icon": "<svg onload=alert(2)>", "labels": {"vendor": "<script>alert(3)</script>", "metric_group": "NPU"}})
    plugins.make("lens-evil", profiles={"evil-npu": [hostile]})
    fresh_registry()
    for path in ("/", "/accelerators/evil-npu"):
        page = server.get(path).text
        assert "<script>alert(3)</script>" not in page and "<img src=x" not in page and "<svg onload" not in page
        assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page


def test_tabs_follow_ui_order_then_name():
    def doc(pid, order=None, name=None):
        ui = {"labels": {"vendor": pid.upper()}} | ({"order": order} if order is not None else {})
        return {"id": pid, "display_name": name or pid, "vendor": pid, "ui": ui}

    document = {"profiles": [doc("zeta", 5), doc("beta"), doc("alpha"), doc("gamma", 5, "Aardvark")]}
    assert [t["id"] for t in tabs(document)] == ["gamma", "zeta", "alpha", "beta"]


def test_pagination_filters_sorts_and_clamps():
    rows = [{"name": f"node-{i:04d}", "allocated": i % 7} for i in range(5000)]
    columns = {"node": lambda r: r["name"], "allocated": lambda r: r["allocated"]}
    page = paginate(rows, columns=columns, sort="allocated", descending=True, query="", page=1, searchable=lambda r: r["name"])
    assert page.total == 5000 and page.pages == 100 and len(page.rows) == 50
    assert {r["allocated"] for r in page.rows} == {6}
    narrowed = paginate(rows, columns=columns, sort="bogus", descending=False, query="node-12", page=99, searchable=lambda r: r["name"])
    # "node-12" matches node-1200..node-1299: 100 rows, 2 pages; page 99 shows the last
    assert (narrowed.total, narrowed.pages, narrowed.page, narrowed.sort) == (100, 2, 2, "node")
    assert narrowed.rows[-1]["name"] == "node-1299"


def test_the_axis_ends_on_a_round_number_at_or_above_the_data():
    assert [nice_ceiling(v) for v in (0, 0.7, 56, 101, 612.35, 4000)] == [1.0, 0.8, 60, 120, 800, 4000]


def test_a_line_chart_draws_inside_its_plot_and_keeps_every_number():
    series = [(f"n/{i}", [(0.0, 100.0 * i), (60.0, 100.0 * i + 50)]) for i in range(20)]
    chart = line_chart("Power", "power", "W", series, 0, 60, limit=12)
    assert chart.unit == "W" and len(chart.lines) == 12 and chart.hidden == 8
    assert {line.name for line in chart.lines} == {f"n/{i}" for i in range(8, 20)}  # the busiest
    x0, y0, x1, y1 = chart.plot
    for line in chart.lines:
        for pair in line.points.split():
            x, y = map(float, pair.split(","))
            assert x0 <= x <= x1 and y0 <= y <= y1
    assert chart.y_ticks[-1][1] == "2,000"  # 1,950 W rounded up
    assert chart.table()[1][1][-1] == "1,950 W"


def test_ratio_charts_are_percent_from_0_to_100():
    chart = line_chart("Utilisation", "utilization", "ratio", [("a", [(0.0, 0.5)])], 0, 60)
    assert chart.unit == "%" and chart.y_ticks[-1][1] == "100" and chart.lines[0].latest == "50%"


def test_capacity_bars_share_one_scale():
    chart = capacity_bars([("A", 16, 40), ("B", 8, 0)])
    a, b = chart.bars
    assert a.allocated_width == 2 * b.allocated_width and chart.scale_max == 60


def test_links_keep_other_parameters_and_drop_empty_ones():
    assert link("/accelerators/a b", {"q": "x", "page": 3, "desc": False}, page=4) == "/accelerators/a%20b?q=x&page=4"


def test_the_plan_page_shows_the_planning_apis_best_fit_per_pool(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    api = server.post("/api/v1/planning/plan", json={"model": "deepseek-v3", "context": 4096}).json()
    page = server.get("/plan", params={"model": "deepseek-v3", "context": 4096}).text
    for pool in api["pools"]:
        row = page[page.index(f'data-pool="{pool["pool"]}"'):]
        row = row[:row.index("</tr>")]
        best = pool["best"]
        if best:
            assert f'data-field="parallelism">{best["tensor_parallel"]} × {best["pipeline_parallel"]}<' in row
            assert f'data-field="headroom">{best["headroom_gib"]:.2f} GiB<' in row
        else:
            assert "nothing fits" in row
    # a pool that fits gets a bar per use of its memory, with the API's figures
    fitting = [p for p in api["pools"] if p["best"]]
    assert page.count('data-part="weights"') == len(fitting) > 0
    assert f'data-value="{fitting[0]["best"]["weights_gib"]}"' in page


def test_an_unknown_model_on_the_plan_page_is_its_coded_error(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    page = server.get("/plan", params={"model": "gpt-17"}).text
    assert 'data-code="PLANNING_MODEL_UNKNOWN"' in page and "gpt-17" in page


GPTQ_CONFIG = Path(__file__).parents[1] / "planning" / "testdata" / "checkpoints" / "llama-2-7b-gptq" / "config.json"
MIG_POOL = "nvidia/NVIDIA-H100-80GB-HBM3:mig-1g.10gb"


def test_the_plan_form_plans_an_uploaded_config_and_a_partition_pool_as_the_api_does(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    config = GPTQ_CONFIG.read_bytes()
    api = server.post("/api/v1/planning/plan", json={"config": json.loads(config), "context": 4096}).json()
    answer = server.post("/plan", data={"model": "llama-3.1-8b", "context": "4096", "concurrency": "1", "dtype": ""},
                         files={"config": ("config.json", config, "application/json")})
    assert answer.status_code == 200
    page = answer.text
    assert "From the uploaded" in text_of(page) and api["model"]["name"] == "LlamaForCausalLM" in text_of(page)
    (mig,) = [p for p in api["pools"] if p["pool"] == MIG_POOL]
    assert mig["best"] is not None  # 4-bit 7B fits a 10 GB slice
    row = page[page.index(f'data-pool="{MIG_POOL}"'):]
    row = row[:row.index("</tr>")]
    assert 'data-field="partition">partition nvidia.com/mig-1g.10gb<' in row
    assert f'data-field="headroom">{mig["best"]["headroom_gib"]:.2f} GiB<' in row


def test_the_plan_forms_upload_is_capped_and_its_fields_bounded(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    big = b'{"pad": "' + b"x" * (256 * 1024) + b'"}'
    answer = server.post("/plan", data={"context": "4096"}, files={"config": ("huge.json", big, "application/json")})
    assert answer.status_code == 413 and 'data-code="PLANNING_CONFIG_TOO_LARGE"' in answer.text
    assert "262,144 bytes" in text_of(answer.text)
    bad = server.post("/plan", data={"context": "0"}, files={"config": ("", b"", "application/octet-stream")})
    assert 'data-code="PLANNING_REQUEST_INVALID"' in bad.text and "context" in text_of(bad.text)
    broken = server.post("/plan", data={"context": "4096"}, files={"config": ("c.json", b"{nope", "application/json")})
    assert 'data-code="PLANNING_MODEL_CONFIG_INVALID"' in broken.text and "upload:c.json" in text_of(broken.text)
    # no file chosen: the catalogue model is planned, with discovery asked (skipped on the demo, and said so)
    plain = server.post("/plan", data={"model": "llama-3.2-1b", "context": "4096", "discover": "on"},
                        files={"config": ("", b"", "application/octet-stream")})
    assert "Llama-3.2-1B" in plain.text and "node discovery skipped" in text_of(plain.text)


def test_the_cluster_selector_shows_each_served_cluster_by_name(server, monkeypatch, tmp_path: Path):
    for name, gpus in (("east", 8), ("west", 3)):
        (tmp_path / f"{name}.json").write_text(json.dumps(as_list(node(f"{name}-1", resources={"amd.com/gpu": str(gpus)}))))
    (tmp_path / "clusters.yaml").write_text("clusters:\n  - {name: east, snapshot: east.json, display_name: East region}\n"
                                            "  - {name: west, snapshot: west.json}\n")
    monkeypatch.setenv("LENS_CLUSTERS", str(tmp_path / "clusters.yaml"))
    first = server.get("/").text
    form = first[first.index('id="cluster-form"'):first.index("</form>", first.index('id="cluster-form"'))]
    assert re.findall(r'<option value="([^"]+)"', form) == ["east", "west"]
    assert '<option value="east" selected>East region</option>' in form
    assert re.search(r'data-field="total_gpu_count">8<', first) and "east.json" in first
    west = server.get("/", params={"cluster": "west"}).text
    assert re.search(r'data-field="total_gpu_count">3<', west) and '<option value="west" selected>' in west
    unknown = server.get("/", params={"cluster": "nope"})
    assert unknown.status_code == 200 and 'id="inventory-problem"' in unknown.text
    assert "CLUSTER_NOT_FOUND" in unknown.text and "known: east, west" in text_of(unknown.text)


def test_a_single_cluster_has_no_selector(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    assert 'id="cluster-form"' not in server.get("/").text


def test_the_fleet_page_shows_each_hardware_per_cluster_and_the_unreadable_one(server, monkeypatch, tmp_path: Path):
    (tmp_path / "east.json").write_text(json.dumps(as_list(node("e1", resources={"amd.com/gpu": "8"}),
                                                           pod("a", "e1", limits={"amd.com/gpu": "2"}))))
    (tmp_path / "clusters.yaml").write_text("clusters:\n  - {name: east, snapshot: east.json, labels: {region: us-east}}\n"
                                            "  - {name: demo, demo: true}\n  - {name: gone, context: no-such-context}\n")
    monkeypatch.setenv("LENS_CLUSTERS", str(tmp_path / "clusters.yaml"))
    from llm_d_lens.cluster import served
    from llm_d_lens.testing.fake_runner import FakeRunner

    broken = FakeRunner().reply(["kubectl", ...], returncode=1, stderr="error: context was not found for specified context\n")
    server.app.dependency_overrides[served.cluster_runners] = lambda: (lambda c: broken if c.live else None)
    api = server.get("/api/v1/fleet/overview").json()
    monkeypatch.setattr(served, "cluster_runner", lambda: broken)  # the console reads through the same seam
    page = server.get("/fleet").text
    amd = next(h for h in api["hardware"] if h["profile_id"] == "amd")
    total = page[page.index('data-hardware="amd" data-cluster=""'):]
    assert f'data-field="devices">{amd["devices"]}<' in total[:total.index("</tr>")]
    east = page[page.index('data-hardware="amd" data-cluster="east"'):]
    assert 'data-field="devices">8<' in east[:east.index("</tr>")] and 'data-field="allocated">2<' in east[:east.index("</tr>")]
    gone = page[page.index('<tr data-cluster="gone"'):]
    assert "COMMAND_FAILED" in gone[:gone.index("</tr>")]
    assert "2 of 3 clusters read" in text_of(page) and "region=us-east" in page
