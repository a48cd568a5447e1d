"""The console at scale and honest, through the real app (no browser): pages from kept state, ETag/304, gzip, states, notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cluster.model import Overview
from llm_d_lens.console import views
from llm_d_lens.console.test_pages import SERVER_ENV, text_of
from llm_d_lens.serving.inventories import forget
from llm_d_lens.testing.cluster import as_list, node, pod


@pytest.fixture
def server(monkeypatch) -> TestClient:
    for name in SERVER_ENV:
        monkeypatch.delenv(name, raising=False)
    forget()
    views.forget()
    yield TestClient(create_app())
    forget()
    views.forget()


def snapshot(tmp_path: Path, *objects: dict) -> Path:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(as_list(*objects)))
    return path


def test_pages_walk_the_nodes_once_per_inventory_and_never_dict_the_overview(server, monkeypatch, tmp_path):
    path = snapshot(tmp_path, *(node(f"h100-{i:03d}", resources={"nvidia.com/gpu": "8"}) for i in range(120)))
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(path))
    built = []
    real = views.build
    monkeypatch.setattr(views, "build", lambda overview: built.append(1) or real(overview))

    def refuse(self):
        raise AssertionError("a page turned the whole overview into a dict")

    monkeypatch.setattr(Overview, "to_dict", refuse)
    first = server.get("/")
    assert first.status_code == 200 and 'class="problem"' not in first.text and 'data-field="nodes">120<' in first.text
    for page in ("/", "/accelerators/nvidia", "/accelerators/nvidia?page=2", "/accelerators/nvidia?sort=devices&desc=1"):
        assert server.get(page).status_code == 200
    assert len(built) == 1
    # the second page of the sorted table is the next 50 names, served from the view's kept order
    second = server.get("/accelerators/nvidia?page=2").text
    assert "h100-050" in second and "h100-099" in second and "h100-049" not in second and "h100-100" not in second


def test_an_edited_snapshot_is_a_new_page(server, monkeypatch, tmp_path):
    path = snapshot(tmp_path, node("mi300x", resources={"amd.com/gpu": "8"}), pod("a", "mi300x", limits={"amd.com/gpu": "5"}))
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(path))
    assert 'data-field="allocated">5<' in server.get("/").text
    snapshot(tmp_path, node("mi300x", resources={"amd.com/gpu": "8"}), pod("a", "mi300x", limits={"amd.com/gpu": "3"}),
             node("mi300x-2", resources={"amd.com/gpu": "8"}))
    page = server.get("/").text
    assert 'data-field="allocated">3<' in page and 'data-field="nodes">2<' in page


@pytest.mark.parametrize("path", ["/", "/accelerators/nvidia"])
def test_a_page_has_an_etag_revalidates_to_304_and_keeps_its_security_headers(server, monkeypatch, path):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    first = server.get(path)
    etag = first.headers["etag"]
    assert first.status_code == 200 and first.headers["cache-control"] == "no-cache"
    again = server.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert "default-src 'none'" in again.headers["content-security-policy"]
    assert server.get(path, headers={"If-None-Match": '"other"'}).status_code == 200


def test_pages_and_api_answers_are_gzipped_for_clients_that_take_it(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    for path in ("/", "/accelerators/nvidia", "/api/v1/clusters/overview", "/console/static/console.css"):
        plain = server.get(path, headers={"Accept-Encoding": "identity"})
        packed = server.get(path, headers={"Accept-Encoding": "gzip"})
        assert plain.headers.get("content-encoding") is None, path
        assert packed.headers["content-encoding"] == "gzip", path
        assert "Accept-Encoding" in packed.headers["vary"], path
        assert packed.content == plain.content  # httpx decodes: the same bytes, smaller on the wire
        assert int(packed.headers["content-length"]) < len(plain.content), path
        assert packed.headers["x-content-type-options"] == "nosniff", path
        assert packed.headers.get("etag") == plain.headers.get("etag"), path
    # a tiny answer is sent as it is: gzip would make it bigger
    assert server.get("/healthz", headers={"Accept-Encoding": "gzip"}).headers.get("content-encoding") is None


def test_the_demos_expected_states_are_notes_with_what_enables_them_not_failures(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    for path in ("/accelerators/nvidia", "/accelerators/cpu"):
        page = server.get(path).text
        assert 'class="problem"' not in page, path
        notes = page.count('data-expected="true"')
        assert notes >= 3, path
    nvidia = server.get("/accelerators/nvidia").text
    assert 'data-code="LIVE_CLUSTER_NEEDED"' in nvidia and "LENS_KUBE_CONTEXT" in nvidia  # drivers: what enables them
    assert "LENS_LLM_D_ROOT" in nvidia  # overlays
    assert "LENS_PROMETHEUS_URL" in nvidia  # telemetry
    cpu = server.get("/accelerators/cpu").text  # the CPU profile declares no device metrics
    assert 'data-code="TELEMETRY_NOT_DECLARED"' in cpu and "telemetry.device_metric_sources" in cpu


def test_a_failure_stays_a_failure_box(server, monkeypatch, tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "Node"}')
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(path))
    page = server.get("/").text
    assert 'class="problem"' in page and 'data-code="SERVER_NOT_CONFIGURED"' in page and 'data-expected' not in page
    # an llm-d checkout that is configured but missing is the operator's mistake, not an unconfigured feature
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    monkeypatch.delenv("LENS_CLUSTER_SNAPSHOT")
    monkeypatch.setenv("LENS_LLM_D_ROOT", str(tmp_path / "nowhere"))
    overlays = server.get("/accelerators/nvidia").text.split('id="overlays"')[1]
    assert 'class="problem"' in overlays and "nowhere" in overlays


def test_the_overview_shows_the_clis_node_notes(server, monkeypatch):
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    api = server.get("/api/v1/clusters/overview").json()
    page = text_of(server.get("/").text).replace(" : ", ": ")  # the node name is set as code
    expected = [f"{n['name']}: {note}" for n in api["nodes"] for note in n["notes"]]
    expected += [f"{n['name']}: {h['profile_id']}: {note}" for n in api["nodes"] for h in n["hardware"] for note in h["notes"]]
    assert expected, "the demo has node notes"
    for note in expected:
        assert note in page
    assert "driver missing?" in page and "No notes" not in page


def test_not_ready_nodes_and_unknown_vram_are_named(server, monkeypatch, tmp_path):
    path = snapshot(tmp_path, node("gpu-a", resources={"nvidia.com/gpu": "8"}),
                    node("gpu-b", resources={"nvidia.com/gpu": "8"}, ready=False),
                    node("gpu-c", resources={"nvidia.com/gpu": "8"}, unschedulable=True))
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(path))
    api = server.get("/api/v1/clusters/overview").json()
    page = text_of(server.get("/").text).replace(" ,", ",").replace(" .", ".")
    assert f"{api['summary']['ready_nodes']} ready, 1 NotReady, 1 cordoned" in page
    assert "NotReady gpu-b" in page and "cordoned gpu-c" in page
    unknown = api["summary"]["vram"]["devices_without_vram"]
    assert unknown == 24  # no product label, no memory label: every device's VRAM is unknown
    nvidia = next(v for v in api["vendors"] if v["profile_id"] == "nvidia")
    assert f"leaves out {unknown} devices of unknown VRAM ({nvidia['display_name']})" in page
    assert f"{unknown} devices of unknown VRAM not counted" in page  # on the card too
