"""Watched live clusters: a list plus a watch per kind, scripted through the FakeRunner.

The FakeRunner answers the lists as the API server does (a typed ``NodeList`` with a
resourceVersion, items without ``kind``) and streams real-shaped watch events, one JSON object a
line. After each event the cached inventory must equal the inventory of a fresh list of the same
objects: a watch may never drift from what listing again would say.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.objects import KINDS as OBJECT_KINDS
from llm_d_lens.cluster.objects import ClusterObjects, Document
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.testing.cluster import (
    claim,
    device,
    device_class,
    node,
    pod,
    resource_slice,
)
from llm_d_lens.serving import watch as watch_module
from llm_d_lens.serving.watch import DRA_DISCOVERY, KINDS, RUNNING_PODS, WatchGone
from llm_d_lens.serving.watched import WatchedCluster, WatchNotSynced, freshness
from llm_d_lens.testing.fake_runner import FakeRunner
from llm_d_lens.web.conditional import encode

Obj = dict[str, Any]
GPU = {"nvidia.com/gpu": "8"}
LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
SOURCE = ClusterSource(context="prod")
PLURALS = {kind.kind: kind for kind in KINDS}


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "BACKOFF_FIRST", 0.001)


class Cluster:
    """The truth a scripted API server holds: objects per kind and a resourceVersion counter."""

    def __init__(self, *items: Obj):
        self.rv = 100
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {kind: {} for kind in PLURALS}
        for item in items:
            self.put(item)

    def put(self, item: Obj) -> Obj:
        self.rv += 1
        item = copy.deepcopy(item)
        item["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[item["kind"]][(item["metadata"].get("namespace") or "", item["metadata"]["name"])] = item
        return item

    def delete(self, kind: str, name: str, namespace: str = "") -> Obj:
        self.rv += 1
        item = self.objects[kind].pop((namespace, name))
        item = copy.deepcopy(item)
        item["metadata"]["resourceVersion"] = str(self.rv)
        return item

    def list_body(self, kind: str) -> Obj:
        """What ``GET /api/v1/nodes`` answers: a typed list, its items without kind."""
        items = []
        for item in self.objects[kind].values():
            item = copy.deepcopy(item)
            item.pop("kind")
            items.append(item)
        version = "v1" if not PLURALS[kind].group else "resource.k8s.io/v1"
        return {"apiVersion": version, "kind": f"{kind}List", "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    def event(self, kind: str, item: Obj) -> Obj:
        item = copy.deepcopy(item)
        item.pop("kind", None)  # watch events of a typed collection carry no kind either, at worst
        return {"type": kind, "object": item}

    def bookmark(self, kind: str) -> Obj:
        self.rv += 1
        return {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": "v1",
                                               "metadata": {"resourceVersion": str(self.rv)}}}

    def fresh(self, *, dra: bool = True, source: ClusterSource = SOURCE) -> dict[str, Any]:
        """The inventory a fresh list of every kind gives, as a one-shot read builds it."""
        items = [copy.deepcopy(item) for kind in self.objects.values() for item in kind.values()]
        objects = ClusterObjects.from_documents([Document("fresh", {"kind": "List", "items": items})],
                                                dra_api=True if dra else False)
        return build_inventory(objects, Catalog(), source=source.describe()).to_dict()

    def script_lists(self, runner: FakeRunner, *, dra: bool = True) -> None:
        if dra:
            runner.reply(list(DRA_DISCOVERY), json_body={"kind": "APIGroup", "name": "resource.k8s.io",
                                                         "preferredVersion": {"groupVersion": "resource.k8s.io/v1",
                                                                              "version": "v1"}})
        else:
            runner.reply(list(DRA_DISCOVERY), returncode=1,
                         stderr="Error from server (NotFound): the server could not find the requested resource")
        for kind, spec in PLURALS.items():
            if dra or not spec.dra:
                runner.reply(spec.list_argv("v1"), json_body=self.list_body(kind))


def gpu_cluster() -> Cluster:
    return Cluster(
        node("gpu-1", labels=LABELS, resources=GPU), node("gpu-2", labels=LABELS, resources=GPU),
        pod("decode-0", "gpu-1", limits={"nvidia.com/gpu": 4}),
        resource_slice("dra-1-gpus", driver="gpu.nvidia.com", node_name="dra-1",
                       devices=[device(f"gpu-{i}", attrs={"type": {"string": "gpu"}}) for i in range(2)]),
        device_class("gpu.nvidia.com", driver="gpu.nvidia.com"),
        node("dra-1", labels={"nvidia.com/gpu.present": "true"}),
    )


def watched(runner: FakeRunner) -> WatchedCluster:
    return WatchedCluster("prod", SOURCE, runner, first_sync=2.0)


def list_all(watch: WatchedCluster) -> None:
    for kind in watch.kinds.values():
        assert kind.list()


def listed() -> tuple[Cluster, FakeRunner, WatchedCluster]:
    """The GPU cluster, its scripted kubectl, and a watch that has listed every kind (no stream open yet)."""
    cluster = gpu_cluster()
    runner = FakeRunner()
    cluster.script_lists(runner)
    watch = watched(runner)
    list_all(watch)
    return cluster, runner, watch


def test_the_lists_give_the_inventory_a_fresh_one_shot_read_gives() -> None:
    from llm_d_lens.cluster.live import QUERIES
    from llm_d_lens.cluster.service import inspect

    cluster, runner, watch = listed()
    cached = watch.inventory()
    assert cached.overview.to_dict() == cluster.fresh()
    # and the very same as `lens cluster inspect` reads it through `kubectl get <kind> -o json`
    once = FakeRunner()
    for query in QUERIES:
        kind = query.kind
        once.reply(list(query.argv), json_body={"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                                                "items": list(cluster.objects[kind].values())})
    assert inspect(SOURCE, once).to_dict() == cached.overview.to_dict()
    # pods are listed without the finished ones, the API server filtering them
    pods_list = next(argv for argv in runner.argvs() if "/api/v1/pods" in argv[-1])
    assert pods_list == ["kubectl", "get", "--raw", "/api/v1/pods?fieldSelector=" + RUNNING_PODS]


def test_every_event_keeps_the_cached_inventory_equal_to_a_fresh_list() -> None:
    cluster, runner, watch = listed()
    checked: list[str] = []

    def check(what: str) -> None:
        assert watch.inventory(current=True).overview.to_dict() == cluster.fresh(), f"after {what}"
        checked.append(what)

    def pod_events() -> Iterator[Obj]:
        yield cluster.event("ADDED", cluster.put(pod("decode-1", "gpu-2", limits={"nvidia.com/gpu": 8})))
        check("a pod was added")
        yield cluster.event("MODIFIED", cluster.put(pod("decode-0", "gpu-1", limits={"nvidia.com/gpu": 2})))
        check("a pod was modified")
        yield cluster.event("DELETED", cluster.delete("Pod", "decode-1", "llm"))
        check("a pod was deleted")
        yield cluster.bookmark("Pod")
        check("a bookmark")

    def node_events() -> Iterator[Obj]:
        yield cluster.event("MODIFIED", cluster.put(node("gpu-2", labels=LABELS, resources=GPU, unschedulable=True)))
        check("a node was cordoned")
        yield cluster.event("ADDED", cluster.put(node("gpu-3", labels=LABELS, resources=GPU)))
        check("a node was added")
        yield cluster.event("DELETED", cluster.delete("Node", "gpu-1"))
        check("a node was deleted under its pod")

    def claim_events() -> Iterator[Obj]:
        yield cluster.event("ADDED", cluster.put(claim("c-1", results=[("gpu.nvidia.com", "dra-1", "gpu-0")],
                                                       reserved_for=["decode-0"])))
        check("a claim was allocated")
        yield cluster.event("DELETED", cluster.delete("ResourceClaim", "c-1", "llm"))
        check("a claim was deleted")

    pods_rv = watch.kinds["Pod"].resource_version
    runner.stream_reply(PLURALS["Pod"].watch_argv("v1", pods_rv), pod_events())
    runner.stream_reply(["kubectl", "get", "--raw", ...], [])  # nothing else is watched here
    assert watch.kinds["Pod"].watch_once()
    watch.kinds["Node"].resource_version = nodes_rv = watch.kinds["Node"].resource_version
    runner.stream_reply(PLURALS["Node"].watch_argv("v1", nodes_rv), node_events())
    assert watch.kinds["Node"].watch_once()
    runner.stream_reply(PLURALS["ResourceClaim"].watch_argv("v1", watch.kinds["ResourceClaim"].resource_version),
                        claim_events())
    assert watch.kinds["ResourceClaim"].watch_once()
    assert len(checked) == 9
    # the bookmark moved the pods' resourceVersion on: a resumed watch starts after it
    assert watch.kinds["Pod"].resource_version == str(int(pods_rv) + 4)


def test_an_unchanged_cluster_is_answered_from_the_same_built_inventory() -> None:
    cluster, runner, watch = listed()
    first = watch.inventory()
    calls = len(runner.calls)
    assert watch.inventory() is first and len(runner.calls) == calls  # memory: no kubectl, no rebuild

    def events() -> Iterator[Obj]:
        yield cluster.bookmark("Pod")
        assert watch.inventory() is first  # a bookmark changes no object
        yield cluster.event("ADDED", cluster.put(pod("decode-9", "gpu-2", limits={"nvidia.com/gpu": 1})))
        assert watch.inventory() is not first

    runner.stream_reply(PLURALS["Pod"].watch_argv("v1", watch.kinds["Pod"].resource_version), events())
    watch.kinds["Pod"].watch_once()
    assert watch.inventory().overview.to_dict() == cluster.fresh()


def test_a_410_error_event_lists_again_and_forgets_what_was_deleted_meanwhile() -> None:
    cluster, runner, watch = listed()
    nodes = watch.kinds["Node"]
    first_rv = nodes.resource_version
    gone = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                        "message": f"too old resource version: {first_rv} (300)", "reason": "Expired",
                                        "code": 410}}
    runner.stream_reply(PLURALS["Node"].watch_argv("v1", first_rv), [gone])
    with pytest.raises(WatchGone):
        nodes.watch_once()
    # meanwhile gpu-2 went away, and no DELETED event will ever say so: only the new list does
    cluster.delete("Node", "gpu-2")
    runner.reply(PLURALS["Node"].list_argv("v1"), json_body=cluster.list_body("Node"))

    def after() -> Iterator[Obj]:
        assert watch.inventory().overview.to_dict() == cluster.fresh()
        assert "gpu-2" not in {n["name"] for n in watch.inventory().overview.to_dict()["nodes"]}
        nodes.stop()
        yield ""

    runner.stream_reply(PLURALS["Node"].watch_argv("v1", str(cluster.rv)), after())
    nodes.resource_version = first_rv
    runner.stream_reply(PLURALS["Node"].watch_argv("v1", first_rv), [gone])
    nodes.run()  # 410, list again, watch from the new list's resourceVersion, stopped there
    lists = [argv for argv in runner.argvs() if argv == PLURALS["Node"].list_argv("v1")]
    assert len(lists) == 2 and nodes.lists == 2


def test_a_410_from_kubectl_itself_also_lists_again() -> None:
    cluster, runner, watch = listed()
    nodes = watch.kinds["Node"]
    runner.stream_reply(PLURALS["Node"].watch_argv("v1", nodes.resource_version), [], returncode=1,
                        stderr="Error from server (Expired): too old resource version: 101 (300)")

    def stop_here() -> Iterator[str]:
        nodes.stop()
        yield ""

    runner.stream_reply(PLURALS["Node"].watch_argv("v1", str(cluster.rv)), stop_here())
    nodes.run()
    assert nodes.lists == 2


def test_a_dropped_stream_is_visible_then_resumes_from_the_last_event_without_a_list() -> None:
    cluster, runner, watch = listed()
    pods = watch.kinds["Pod"]
    added = cluster.put(pod("decode-1", "gpu-2", limits={"nvidia.com/gpu": 8}))
    runner.stream_reply(PLURALS["Pod"].watch_argv("v1", pods.resource_version), [cluster.event("ADDED", added)],
                        returncode=1, stderr="an error on the server (\"unable to decode an event from the watch stream\")")
    seen: dict[str, Any] = {}

    def resumed() -> Iterator[Obj]:
        seen["status"] = watch.status()
        seen["problems"] = watch.problems()
        yield cluster.event("DELETED", cluster.delete("Pod", "decode-0", "llm"))
        assert watch.inventory().overview.to_dict() == cluster.fresh()
        pods.stop()

    runner.stream_reply(PLURALS["Pod"].watch_argv("v1", added["metadata"]["resourceVersion"]), resumed())
    broken: dict[str, Any] = {}
    original = pods._broken

    def record(exc: Any) -> None:
        original(exc)
        broken["status"] = watch.status()
        broken["problems"] = watch.problems()

    pods._broken = record  # type: ignore[method-assign]
    pods.run()
    # while it was down, the watch said so: its state, the error, and a /readyz problem
    assert broken["status"]["state"] == "broken"
    assert broken["status"]["kinds"]["Pod"]["error"]["code"] == "COMMAND_FAILED"
    assert broken["problems"] == [{"kind": "cluster-watch", "name": "prod", "resource": "Pod", "code": "COMMAND_FAILED",
                                   "reason": broken["problems"][0]["reason"],
                                   "broken_since": broken["status"]["kinds"]["Pod"]["broken_since"]}]
    assert "unable to decode" in broken["problems"][0]["reason"]
    # once the stream was open again, it was current and no problem remained
    assert seen["status"]["state"] == "watching" and seen["problems"] == []
    assert pods.lists == 1, "a dropped stream resumes from its resourceVersion; it does not list again"


def test_a_line_that_is_not_json_drops_the_stream_and_the_watch_resumes() -> None:
    cluster, runner, watch = listed()
    nodes = watch.kinds["Node"]
    rv = nodes.resource_version
    runner.stream_reply(PLURALS["Node"].watch_argv("v1", rv), ['{"type": "ADDED", "object": {'])

    def stop_here() -> Iterator[str]:
        assert nodes.state == "watching"
        nodes.stop()
        yield ""

    runner.stream_reply(PLURALS["Node"].watch_argv("v1", rv), stop_here())
    nodes.run()
    assert nodes.lists == 1 and nodes.error is None


def test_a_cluster_without_the_dra_api_is_watched_without_its_kinds() -> None:
    cluster = Cluster(node("gpu-1", labels=LABELS, resources=GPU), pod("decode-0", "gpu-1", limits={"nvidia.com/gpu": 4}))
    runner = FakeRunner()
    cluster.script_lists(runner, dra=False)
    watch = watched(runner)
    assert watch.kinds["Node"].list() and watch.kinds["Pod"].list()
    assert not any(watch.kinds[k].list() for k in ("ResourceSlice", "DeviceClass", "ResourceClaim"))
    assert watch.synced
    found = watch.inventory().overview.to_dict()
    assert found == cluster.fresh(dra=False) and found["dra_api"] is False
    assert watch.status()["kinds"]["ResourceSlice"]["state"] == "absent" and watch.problems() == []


def test_a_cluster_that_cannot_be_listed_answers_the_error_a_one_shot_read_would() -> None:
    runner = FakeRunner(default=None)
    runner.reply(["kubectl", ...], returncode=1, stderr="Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout")
    watch = watched(runner)
    watch.start()
    try:
        with pytest.raises(Exception) as caught:
            watch.inventory()
        assert getattr(caught.value, "code", None) == "COMMAND_FAILED" and "i/o timeout" in str(caught.value)
        assert {p["resource"] for p in watch.problems()} == set(OBJECT_KINDS)
    finally:
        watch.stop()
    assert watch.alive_threads() == []


def test_an_inventory_asked_before_the_first_lists_is_a_503_not_a_guess() -> None:
    runner = FakeRunner()
    watch = WatchedCluster("prod", SOURCE, runner, first_sync=0.05)  # never started: nothing listed
    with pytest.raises(WatchNotSynced) as caught:
        watch.inventory()
    assert caught.value.http_status == 503 and caught.value.details["watch"]["state"] == "syncing"


def test_started_watches_run_in_threads_that_stop_cleanly() -> None:
    cluster = gpu_cluster()
    runner = FakeRunner()
    cluster.script_lists(runner)
    opened = threading.Semaphore(0)

    def idle() -> Iterator[str]:
        opened.release()
        while True:
            time.sleep(0.005)
            yield ""  # a quiet stream: nothing happens until it is closed

    for kind in PLURALS.values():
        runner.stream_reply(kind.watch_argv("v1", str(cluster.rv)), idle())
    watch = watched(runner)
    watch.start()
    try:
        for _ in PLURALS:
            assert opened.acquire(timeout=5)
        assert watch.inventory().overview.to_dict() == cluster.fresh()
        status = watch.status()
        assert status["state"] == "watching" and status["age_seconds"] is not None and status["age_seconds"] < 1
        assert freshness(SOURCE, watch.inventory())["mode"] == "watch"
    finally:
        watch.stop()
    assert watch.alive_threads() == []
    assert not [t for t in threading.enumerate() if t.name.startswith("lens-watch-")]


def test_freshness_of_answers_that_are_not_watched() -> None:
    from llm_d_lens.serving.inventories import Inventory

    read = Inventory(overview=None, read_at=time.time() - 5)  # type: ignore[arg-type]
    once = freshness(SOURCE, read)
    assert once["mode"] == "list" and once["state"] == "read-once" and once["age_seconds"] >= 5
    demo = freshness(ClusterSource(demo=True), read)
    assert demo["static"] is True and demo["mode"] == "demo" and demo["age_seconds"] is None


def test_with_the_builder_running_a_request_never_builds_and_says_what_it_is_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_d_lens.serving import watched as watched_module

    monkeypatch.setattr(watched_module, "SETTLE_SECONDS", 0.3)
    cluster = gpu_cluster()
    runner = FakeRunner()
    cluster.script_lists(runner)
    go, applied = threading.Event(), threading.Event()

    def quiet(until: threading.Event | None = None) -> Iterator[Any]:
        while until is None or not until.is_set():
            time.sleep(0.005)
            yield ""

    def pods() -> Iterator[Any]:
        yield from quiet(go)
        yield cluster.event("ADDED", cluster.put(pod("decode-1", "gpu-2", limits={"nvidia.com/gpu": 8})))
        applied.set()
        yield from quiet()

    for kind in PLURALS.values():
        runner.stream_reply(kind.watch_argv("v1", str(cluster.rv)), pods() if kind.kind == "Pod" else quiet())
    watch = watched(runner)
    builds: list[int] = []
    original = watch._build

    def counted(**how: Any) -> Any:
        builds.append(threading.get_ident())
        return original(**how)

    watch._build = counted  # type: ignore[method-assign]
    watch.start()
    try:
        first = watch.inventory()
        first.encoded(True)  # its nodes were asked for: the builder encodes the next answer before publishing it
        go.set()
        assert applied.wait(5)
        time.sleep(0.02)  # the event is applied just after the line is read
        behind = watch.inventory()
        assert behind is first and freshness(SOURCE, behind)["changes_pending"] == 1
        caught_up = None
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            caught_up = watch.inventory()
            if caught_up is not first:
                break
            time.sleep(0.02)
        assert caught_up is not first and caught_up.overview.to_dict() == cluster.fresh()
        ready = caught_up._encoded.get(True)  # published with its bytes, from the state's kept parts
        assert ready is not None and caught_up.overview.node_json is not None
        assert ready.body == encode(caught_up.document(True)).body
        assert freshness(SOURCE, caught_up)["changes_pending"] == 0
        requester = threading.get_ident()
        assert builds.count(requester) <= 1, "a request built after the first answer"
    finally:
        watch.stop()
    assert watch.alive_threads() == []


KUBECTL = '''#!{python}
import json, sys, time
args = sys.argv[1:]
raw = args[args.index("--raw") + 1]
def node(name, rv):
    return {{"metadata": {{"name": name, "resourceVersion": rv}}, "status": {{"capacity": {{"cpu": "4"}}}}}}
if raw.startswith("/apis/resource.k8s.io"):
    sys.stderr.write("Error from server (NotFound): the server could not find the requested resource\\n")
    sys.exit(1)
kind = "Node" if "/nodes" in raw else "Pod"
if "watch=true" in raw:
    if kind == "Node":
        print(json.dumps({{"type": "ADDED", "object": node("n2", "12")}}), flush=True)
        print(json.dumps({{"type": "BOOKMARK", "object": {{"kind": "Node", "metadata": {{"resourceVersion": "13"}}}}}}), flush=True)
    time.sleep(60)
    sys.exit(0)
items = [node("n1", "10")] if kind == "Node" else []
print(json.dumps({{"kind": kind + "List", "apiVersion": "v1", "metadata": {{"resourceVersion": "11"}}, "items": items}}))
'''


def test_a_real_kubectl_process_is_listed_watched_and_stopped(tmp_path) -> None:
    """The CommandRunner against a stand-in kubectl that lists, streams an event and a bookmark, then idles."""
    import sys

    from llm_d_lens.runner import CommandRunner

    script = tmp_path / "kubectl"
    script.write_text(KUBECTL.format(python=sys.executable))
    script.chmod(0o755)
    watch = WatchedCluster("real", SOURCE, CommandRunner(binaries={"kubectl": str(script)}), first_sync=20)
    watch.start()
    try:
        deadline = time.monotonic() + 20
        # each kind's stream starts on its own thread: under load the pods' can still be between its
        # list and its watch when the nodes' event has arrived, so wait for both
        while time.monotonic() < deadline and (watch.kinds["Node"].resource_version != "13"
                                               or watch.status()["kinds"]["Pod"]["state"] != "watching"):
            time.sleep(0.02)
        names = [n["name"] for n in watch.inventory(current=True).overview.to_dict()["nodes"]]
        status = watch.status()
    finally:
        watch.stop()  # kills the idling kubectl streams; their threads end
    assert names == ["n1", "n2"] and status["state"] == "watching"
    assert {kind: each["state"] for kind, each in status["kinds"].items()} == {
        "Node": "watching", "Pod": "watching", "ResourceSlice": "absent", "DeviceClass": "absent", "ResourceClaim": "absent"}
    assert watch.alive_threads() == []
