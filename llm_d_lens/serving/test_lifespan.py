"""The server with watched live clusters: started and stopped with the app, answers from memory,
each answer's freshness, and a broken watch in ``/readyz`` and the console's banner.

kubectl is the recording FakeRunner (``source.make_runner`` is how a live source gets its runner);
``prod`` answers lists and streams events on cue, ``down``'s API server refuses every connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cluster import source
from llm_d_lens.testing.cluster import node, pod
from llm_d_lens.serving.test_watch import GPU, LABELS, PLURALS, Cluster
from llm_d_lens.serving import inventories as cache
from llm_d_lens.serving import watch as watch_module
from llm_d_lens.serving import watched
from llm_d_lens.testing.fake_runner import FakeRunner

REFUSED = "The connection to the server down.example:6443 was refused - did you specify the right host or port?\n"


class Scripted:
    """prod's API server: lists, quiet watches, and one pod scheduled when the test says so."""

    def __init__(self) -> None:
        self.cluster = Cluster(node("gpu-1", labels=LABELS, resources=GPU), node("gpu-2", labels=LABELS, resources=GPU),
                               pod("decode-0", "gpu-1", limits={"nvidia.com/gpu": 4}))
        self.schedule = threading.Event()
        self.runners: dict[str | None, FakeRunner] = {}

    def runner_for(self, found: source.ClusterSource) -> FakeRunner:
        runner = FakeRunner(context=found.context, kubeconfig=found.kubeconfig)
        self.runners[found.context] = runner
        if found.context != "prod-ctx":
            runner.reply(["kubectl", ...], returncode=1, stderr=REFUSED)
            runner.stream_reply(["kubectl", ...], [], returncode=1, stderr=REFUSED)
            return runner
        self.cluster.script_lists(runner, dra=False)
        rv = str(self.cluster.rv)
        runner.stream_reply(PLURALS["Node"].watch_argv("v1", rv), self.quiet())
        runner.stream_reply(PLURALS["Pod"].watch_argv("v1", rv), self.pods())
        return runner

    def quiet(self, until: threading.Event | None = None) -> Iterator[Any]:
        while until is None or not until.is_set():
            time.sleep(0.005)
            yield ""  # nothing happens; a closed stream ends here

    def pods(self) -> Iterator[Any]:
        yield from self.quiet(self.schedule)
        yield self.cluster.event("ADDED", self.cluster.put(pod("decode-1", "gpu-2", limits={"nvidia.com/gpu": 8})))
        yield from self.quiet()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, Scripted]]:
    for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "clusters.yaml").write_text("""
clusters:
  - {name: prod, context: prod-ctx}
  - {name: down, context: down-ctx}
  - {name: demo, demo: true}
""")
    monkeypatch.setenv("LENS_CLUSTERS", str(tmp_path / "clusters.yaml"))
    monkeypatch.setenv("LENS_CLUSTER_WATCH", "1")
    monkeypatch.setattr(watch_module, "BACKOFF_FIRST", 0.05)
    scripted = Scripted()
    monkeypatch.setattr(source, "make_runner", scripted.runner_for)
    cache.forget()
    with TestClient(create_app()) as client:
        yield client, scripted
    assert not [t for t in threading.enumerate() if t.name.startswith("lens-watch-")], "a watch outlived the server"


def wait_for(check: Any, seconds: float = 10.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_a_watched_cluster_answers_from_memory_while_pods_come(server) -> None:
    client, scripted = server
    first = client.get("/api/v1/clusters/prod/overview")
    assert first.status_code == 200, first.text
    assert first.json()["freshness"]["mode"] == "watch" and first.json()["freshness"]["state"] == "watching"
    assert first.json()["summary"]["allocated"] == 4
    prod = scripted.runners["prod-ctx"]
    calls = len(prod.calls)
    for _ in range(3):
        assert client.get("/api/v1/clusters/prod/overview").status_code == 200
    assert len(prod.calls) == calls, "an overview of a watched cluster ran kubectl"
    assert not prod.called_with(["kubectl", "get", "nodes"]), "the one-shot list ran beside the watch"

    scripted.schedule.set()  # the scheduler binds decode-1: the pods watch says so
    after = wait_for(lambda: (r := client.get("/api/v1/clusters/prod/overview").json())["summary"]["allocated"] == 12 and r)
    assert after, "the new pod never reached the answer"
    fresh = scripted.cluster.fresh(dra=False, source=source.ClusterSource(context="prod-ctx"))
    assert {k: v for k, v in after.items() if k not in ("cluster", "read_at", "freshness")} == fresh
    # the default cluster's route and the fleet read the same memory
    assert client.get("/api/v1/clusters/overview").json()["freshness"]["mode"] == "watch"
    fleet = client.get("/api/v1/fleet/overview").json()
    rows = {c["name"]: c for c in fleet["clusters"]}
    assert rows["prod"]["freshness"]["state"] == "watching" and rows["demo"]["freshness"]["static"] is True
    assert rows["down"]["ok"] is False and "refused" in rows["down"]["error"]["message"]


def test_a_broken_watch_is_a_readyz_problem_and_a_console_banner(server) -> None:
    client, _ = server
    ready = wait_for(lambda: (r := client.get("/readyz")).status_code == 503 and r)
    assert ready, "a broken watch left /readyz ready"
    problems = [p for p in ready.json()["problems"] if p["kind"] == "cluster-watch"]
    assert {p["name"] for p in problems} == {"down"} and {p["resource"] for p in problems} >= {"Node", "Pod"}
    assert "broken cluster watch" in ready.json()["detail"] and "refused" in ready.json()["detail"]
    page = client.get("/")
    assert page.status_code == 200
    assert 'id="watch-banner"' in page.text and "cluster <code>down</code>" in page.text
    assert 'id="plugin-banner"' not in page.text  # a broken watch is not a plugin problem
    assert 'id="freshness" data-state="watching"' in page.text  # prod, the first cluster, is current


def test_the_server_watches_nothing_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LENS_CLUSTER_WATCH", raising=False)
    monkeypatch.setenv("LENS_CLUSTER_DEMO", "1")
    with TestClient(create_app()) as client:
        body = client.get("/api/v1/clusters/overview").json()
    assert body["freshness"] == {"mode": "demo", "state": "static", "static": True,
                                 "observed_at": body["freshness"]["observed_at"], "age_seconds": None}
    assert watched.problems() == []


def test_a_watched_cluster_in_sync_is_reachable_without_a_probe(server) -> None:
    client, scripted = server
    assert client.get("/api/v1/clusters/prod/overview").status_code == 200  # the watch has listed every kind
    prod = scripted.runners["prod-ctx"]
    listed = client.get("/api/v1/clusters").json()["clusters"]
    rows = {c["name"]: c for c in listed}
    assert rows["prod"]["reachable"] is True and rows["prod"]["detail"].startswith("watched: ")
    # a probe would have made a runner of its own (source.make_runner) and run kubectl version with it
    assert scripted.runners["prod-ctx"] is prod and not prod.called_with(["kubectl", "version"]), \
        "a cluster watched in sync was probed with kubectl"
    # a broken watch does not tell whether the server answers: that cluster is probed, and is down
    assert wait_for(lambda: watched.watch_of(source.ClusterSource(context="down-ctx")).status()["state"] == "broken")
    rows = {c["name"]: c for c in client.get("/api/v1/clusters").json()["clusters"]}
    assert rows["down"]["reachable"] is False and "refused" in rows["down"]["detail"]
    assert scripted.runners["down-ctx"].called_with(["kubectl", "version"])
    assert rows["demo"]["reachable"] is True
