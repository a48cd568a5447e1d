"""Served from cache: the overview's bytes are FastAPI's own, tagged, revalidated with 304, read once."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from llm_d_lens.cluster import service
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.serving.test_api import client_for
from llm_d_lens.testing.cluster import as_list, node, pod
from llm_d_lens.serving import inventories as cache


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache.forget()
    yield
    cache.forget()


def snapshot(tmp_path: Path, gpus: str = "8") -> Path:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(as_list(node("mi300x", resources={"amd.com/gpu": gpus}), node("b200", resources={"nvidia.com/gpu": "8"}),
                                       pod("a", "mi300x", limits={"amd.com/gpu": "5"}))))
    return path


def uncached_bytes(source: ClusterSource, nodes: bool, freshness: dict[str, Any]) -> bytes:
    """What the endpoint answered before it was cached: a route returning the overview's dict (and its freshness)."""
    bare = FastAPI()

    @bare.get("/o")
    def plain() -> dict[str, Any]:
        document = service.inspect(source).to_dict()
        if not nodes:
            document.pop("nodes")
        return {**document, "freshness": freshness}

    return TestClient(bare).get("/o").content


@pytest.mark.parametrize("nodes", [True, False])
def test_the_cached_overview_is_byte_identical_to_fastapis_own_rendering(tmp_path: Path, nodes: bool) -> None:
    source = ClusterSource(snapshot=snapshot(tmp_path))
    client = client_for(source)
    for _ in range(2):  # the first answer builds the cache, the second is served from it
        response = client.get("/api/v1/clusters/overview", params={"nodes": str(nodes).lower()})
        assert response.status_code == 200 and response.headers["content-type"] == "application/json"
        freshness = response.json()["freshness"]
        assert (freshness["mode"], freshness["state"], freshness["static"]) == ("snapshot", "static", True)
        assert response.content == uncached_bytes(source, nodes, freshness)
    assert ("nodes" in response.json()) is nodes


def test_if_none_match_with_the_etag_is_a_304_without_a_body(tmp_path: Path) -> None:
    client = client_for(ClusterSource(snapshot=snapshot(tmp_path)))
    first = client.get("/api/v1/clusters/overview")
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and first.headers["cache-control"] == "no-cache"
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = client.get("/api/v1/clusters/overview", headers={"If-None-Match": header})
        assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag), header
    assert client.get("/api/v1/clusters/overview", headers={"If-None-Match": '"other"'}).status_code == 200
    # with and without nodes are different documents, so different tags
    without = client.get("/api/v1/clusters/overview", params={"nodes": "false"}, headers={"If-None-Match": etag})
    assert without.status_code == 200 and without.headers["etag"] != etag


def test_an_edited_snapshot_is_read_again_with_a_new_etag(tmp_path: Path) -> None:
    path = snapshot(tmp_path)
    client = client_for(ClusterSource(snapshot=path))
    first = client.get("/api/v1/clusters/overview")
    snapshot(tmp_path, gpus="4")
    os.utime(path, ns=(1, 1))  # a different mtime, even on a coarse clock
    second = client.get("/api/v1/clusters/overview", headers={"If-None-Match": first.headers["etag"]})
    assert second.status_code == 200 and second.headers["etag"] != first.headers["etag"]
    assert (first.json()["total_gpu_count"], second.json()["total_gpu_count"]) == (16, 12)


def test_ten_concurrent_first_reads_of_a_snapshot_parse_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[ClusterSource] = []
    real = service.inspect
    arrived = threading.Barrier(10)

    def counted(source: ClusterSource, runner: Any = None, catalog: Any = None) -> Any:
        calls.append(source)
        threading.Event().wait(0.3)  # long enough for the other nine, started together, to be waiting
        return real(source, runner, catalog)

    monkeypatch.setattr(service, "inspect", counted)
    source = ClusterSource(snapshot=snapshot(tmp_path))
    found: list[cache.Inventory] = []

    def read() -> None:
        arrived.wait()
        found.append(cache.inventory(source))

    threads = [threading.Thread(target=read) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(found) == 10
    assert all(inventory is found[0] for inventory in found)
    assert found[0].overview.to_dict()["total_gpu_count"] == 16


def test_a_live_cluster_is_read_on_every_request_yet_revalidates(tmp_path: Path) -> None:
    from llm_d_lens.testing.fake_runner import FakeRunner

    fake = FakeRunner(context="prod")
    fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body=as_list(node("h100", resources={"nvidia.com/gpu": "8"})))
    for kind in ("pods", "resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io", "resourceclaims.resource.k8s.io"):
        fake.reply(["kubectl", "get", kind, ...], json_body=as_list())
    client = client_for(ClusterSource(context="prod"), fake)
    first = client.get("/api/v1/clusters/overview")
    calls = len(fake.argvs())
    second = client.get("/api/v1/clusters/overview", headers={"If-None-Match": first.headers["etag"]})
    assert second.status_code == 304 and len(fake.argvs()) == 2 * calls == 10


def test_the_servers_source_follows_its_settings_and_its_clusters_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cluster_source() is worked out once per setting, not once per request, and never outlives a change."""
    from llm_d_lens.serving.api import cluster_source

    for name in ("LENS_CLUSTERS", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_KUBECTL_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = snapshot(tmp_path / "a"), snapshot(tmp_path / "b")
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(first))
    assert cluster_source().snapshot == first and cluster_source() is cluster_source()
    monkeypatch.setenv("LENS_CLUSTER_SNAPSHOT", str(second))
    assert cluster_source().snapshot == second
    monkeypatch.setenv("LENS_KUBECTL_TIMEOUT", "7")
    assert cluster_source().timeout == 7
    monkeypatch.delenv("LENS_CLUSTER_SNAPSHOT")
    listing = tmp_path / "clusters.yaml"
    listing.write_text(f"clusters:\n  - name: one\n    snapshot: {first}\n")
    monkeypatch.setenv("LENS_CLUSTERS", str(listing))
    assert cluster_source().snapshot == first
    listing.write_text(f"clusters:\n  - name: one\n    snapshot: {second}\n")  # the file is read again each time
    assert cluster_source().snapshot == second


def test_a_live_answer_says_how_fresh_it_is_and_its_weak_tag_follows_the_cluster_alone(tmp_path: Path) -> None:
    """The body is exactly {**overview, "freshness": ...}; the tag changes with the cluster, not with the age."""
    from llm_d_lens.testing.fake_runner import FakeRunner

    def client_with(gpus: str) -> TestClient:
        fake = FakeRunner(context="prod")
        fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body=as_list(node("h100", resources={"nvidia.com/gpu": gpus})))
        for kind in ("pods", "resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io", "resourceclaims.resource.k8s.io"):
            fake.reply(["kubectl", "get", kind, ...], json_body=as_list())
        return client_for(ClusterSource(context="prod"), fake)

    client = client_with("8")
    first, second = client.get("/api/v1/clusters/overview"), client.get("/api/v1/clusters/overview")
    body = first.json()
    assert list(body)[-1] == "freshness" and body["freshness"]["mode"] == "list" and body["freshness"]["static"] is False
    assert first.headers["etag"].startswith('W/"') and first.headers["etag"] == second.headers["etag"]
    changed = client_with("4").get("/api/v1/clusters/overview")
    assert changed.headers["etag"] != first.headers["etag"] and changed.json()["total_gpu_count"] == 4


def test_the_body_from_each_nodes_encoded_part_is_byte_for_byte_the_encoded_document() -> None:
    from llm_d_lens.cluster.catalog import Catalog
    from llm_d_lens.cluster.state import InventoryState
    from llm_d_lens.testing.cluster import node, pod
    from llm_d_lens.web.conditional import encode

    state = InventoryState(Catalog(), {"kind": "test", "name": "ünïcode"}, dra_api=False)
    for name in ("b-node", "a-node", "c-nöde"):
        state.put("Node", node(name, labels={"nvidia.com/gpu.present": "true"}, resources={"nvidia.com/gpu": "8"}))
    state.put("Pod", pod("p", "a-node", limits={"nvidia.com/gpu": 3}))
    head = {"cluster": {"name": "prod"}, "read_at": 12.5}
    for kept in (False, True):  # each record asked for its bytes, then the state's kept list of them
        if kept:
            state.keep_encoded()
            state.put("Pod", pod("q", "c-nöde", limits={"nvidia.com/gpu": 1}))
        found = cache.Inventory(state.overview(), 12.5)
        assert (found.overview.node_json is not None) == kept
        for nodes in (True, False):
            assert found.body(nodes) == encode(found.document(nodes)).body
            assert found.body(nodes, head, {"mode": "watch"}) == encode({**head, **found.document(nodes, {"mode": "watch"})}).body
    for kept in (False, True):
        bare = InventoryState(Catalog())
        if kept:
            bare.keep_encoded()
        empty = cache.Inventory(bare.overview(), 1.0)
        assert empty.body(True) == encode(empty.document(True)).body


def test_a_watch_freezes_what_it_keeps_once_enough_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from llm_d_lens.cluster.catalog import Catalog
    from llm_d_lens.cluster.state import InventoryState
    from llm_d_lens.serving import watched
    from llm_d_lens.testing.cluster import node

    frozen: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    state = InventoryState(Catalog())
    for index in range(watched.FREEZE_AFTER - 1):
        state.put("Node", node(f"n{index}"))
    watched._settle_collector(state)
    assert frozen == [] and state.changes == watched.FREEZE_AFTER - 1
    state.put("Node", node("one-more"))
    watched._settle_collector(state)
    assert frozen == [1] and state.changes == 0
