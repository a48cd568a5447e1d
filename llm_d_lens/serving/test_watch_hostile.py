"""The watch against a hostile or broken API server, scripted through the FakeRunner.

Each test is one misbehaviour seen in an attack run: a server that answers 410 to every watch, one
that ends every stream at once, a 200 MB event line, an object of another kind in a watch, one
object the inventory cannot read. Time is simulated (:class:`SimClock`): the loop's waits advance
it, so a test covers minutes of backoff in milliseconds and counts what the watch asked for.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from llm_d_lens.errors import LensError
from llm_d_lens.serving import watch as watch_module
from llm_d_lens.serving.test_watch import GPU, LABELS, PLURALS, SOURCE, gpu_cluster, listed
from llm_d_lens.serving.watch import BACKOFF_MAX, max_event_bytes, restart_delay
from llm_d_lens.serving.watched import WatchedCluster
from llm_d_lens.testing.cluster import node, pod
from llm_d_lens.testing.fake_runner import FakeRunner

NODES = PLURALS["Node"]
GONE = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "too old resource version: 101 (300)", "reason": "Expired", "code": 410}}


@pytest.fixture(autouse=True)
def real_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """test_watch's quick backoff is off here: the clock is simulated, so the real one costs nothing."""
    monkeypatch.setattr(watch_module, "BACKOFF_FIRST", 1.0)


class SimClock:
    """Simulated seconds: every reading moves 10 ms on (a call costs time), every wait its length;
    the watch is stopped when ``until`` is reached."""

    def __init__(self, stop: threading.Event, until: float):
        self.now = 0.0
        self.stop = stop
        self.until = until
        self.waits: list[float] = []

    def __call__(self) -> float:
        self.now += 0.01
        self._check()
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        self._check()
        return self.stop.is_set()

    def _check(self) -> None:
        if self.now >= self.until:
            self.stop.set()


def simulated(runner: FakeRunner, until: float) -> tuple[WatchedCluster, SimClock]:
    """A cluster watching nodes only, its loop on simulated time."""
    watch = WatchedCluster("prod", SOURCE, runner, kinds=(NODES,), first_sync=0.5)
    clock = SimClock(watch.stopped, until)
    nodes = watch.kinds["Node"]
    nodes.clock, nodes._wait, nodes._rng = clock, clock.wait, random.Random(7)
    return watch, clock


def lists(runner: FakeRunner) -> int:
    return sum(1 for argv in runner.argvs() if argv == NODES.list_argv("v1"))


def node_cluster_runner() -> tuple[Any, FakeRunner]:
    cluster = gpu_cluster()
    runner = FakeRunner()
    runner.reply(NODES.list_argv("v1"), json_body=cluster.list_body("Node"))
    return cluster, runner


def test_a_server_answering_410_to_every_watch_is_listed_with_backoff_not_in_a_loop() -> None:
    _, runner = node_cluster_runner()
    runner.stream_reply(["kubectl", "get", "--raw", ...], [GONE])  # every watch: expired at once
    watch, clock = simulated(runner, until=20.0)
    watch.kinds["Node"].run()
    # without backoff this is a list every few simulated milliseconds (≈1,000 in 20 s)
    assert 3 <= lists(runner) <= 7
    assert clock.waits[0] == 0.0, "the first re-list after a working stretch goes at once"
    assert all(later > earlier for earlier, later in zip(clock.waits[1:], clock.waits[2:])), clock.waits
    problems = watch.problems()
    assert [p["code"] for p in problems] == ["CLUSTER_WATCH_UNSTABLE"]
    assert problems[0]["resource"] == "Node" and problems[0]["restarts"] >= 3 and "410" in problems[0]["reason"]
    assert watch.status()["kinds"]["Node"]["restarts"] == problems[0]["restarts"]


def test_the_backoff_is_capped_at_a_minute_and_jittered() -> None:
    _, runner = node_cluster_runner()
    runner.stream_reply(["kubectl", "get", "--raw", ...], [GONE])
    watch, clock = simulated(runner, until=3600.0)
    watch.kinds["Node"].run()
    assert max(clock.waits) <= BACKOFF_MAX
    assert lists(runner) <= 3600 / (BACKOFF_MAX * (1 - watch_module.JITTER)) + 10  # ≈ one a minute once capped
    capped = [w for w in clock.waits if w > BACKOFF_MAX / 2]
    assert len(set(capped)) > 1, "every capped wait the same: restarts of many watches would stay in step"
    assert restart_delay(1, random.Random(0)) == 0.0 and 0.75 * 8 <= restart_delay(5, random.Random(0)) <= 8


def test_a_stream_that_ends_at_once_with_no_event_is_reopened_after_a_backoff() -> None:
    _, runner = node_cluster_runner()
    runner.stream_reply(["kubectl", "get", "--raw", ...], [])  # opens, ends clean, says nothing
    watch, clock = simulated(runner, until=20.0)
    seen: dict[str, Any] = {}
    nodes = watch.kinds["Node"]
    original = nodes.watch_once

    def watch_once() -> bool:
        seen["problems"] = watch.problems()  # while the stream opens, state is "watching"
        return original()

    nodes.watch_once = watch_once  # type: ignore[method-assign]
    nodes.run()
    opened = [argv for argv in runner.argvs() if "watch=true" in argv[-1]]
    assert 3 <= len(opened) <= 7, len(opened)
    assert lists(runner) == 1, "a clean end resumes from the resourceVersion; it does not list again"
    assert [p["code"] for p in seen["problems"]] == ["CLUSTER_WATCH_UNSTABLE"]


def test_a_stream_open_long_enough_starts_the_count_afresh() -> None:
    _, runner = node_cluster_runner()
    watch, clock = simulated(runner, until=10_000.0)
    nodes = watch.kinds["Node"]

    def long_quiet() -> Iterator[str]:
        clock.now += watch_module.HEALTHY_SECONDS + 1  # open half a minute, then the server renews it
        yield ""

    for _ in range(4):
        runner.stream_reply(["kubectl", "get", "--raw", ...], [])
    runner.stream_reply(["kubectl", "get", "--raw", ...], long_quiet())
    runner.stream_reply(["kubectl", "get", "--raw", ...], [GONE])

    def stop_then() -> Iterator[str]:
        nodes.stop()
        yield ""

    runner.stream_reply(["kubectl", "get", "--raw", ...], stop_then())
    nodes.run()
    # four quick ends back off (0, 1, 2, 4); the renewal after a working stretch goes at once again,
    # and the 410 after it is the second restart of a new count
    assert clock.waits[:4] == [0.0, pytest.approx(1.0, rel=0.26), pytest.approx(2.0, rel=0.26),
                               pytest.approx(4.0, rel=0.26)]
    assert clock.waits[4] == 0.0 and clock.waits[5] == pytest.approx(1.0, rel=0.26)
    assert lists(runner) == 2 and watch.problems() == []


def test_an_oversized_event_line_is_refused_unread_and_only_its_kind_is_broken() -> None:
    cluster, runner, watch = listed()
    watch = WatchedCluster("prod", SOURCE, runner, first_sync=2.0, max_line=4096)
    for kind in watch.kinds.values():
        assert kind.list()
    nodes = watch.kinds["Node"]
    huge = {"type": "ADDED", "object": node("gpu-9", labels={"big": "x" * 10_000}, resources=GPU)}

    def stop_here() -> Iterator[str]:
        nodes.stop()
        yield ""

    runner.stream_reply(NODES.watch_argv("v1", nodes.resource_version), [huge])
    runner.stream_reply(NODES.watch_argv("v1", nodes.resource_version), stop_here())
    broken: dict[str, Any] = {}
    original = nodes._broken

    def record(exc: LensError) -> None:
        original(exc)
        broken["problems"] = watch.problems()

    nodes._broken = record  # type: ignore[method-assign]
    nodes.run()
    assert [(p["resource"], p["code"]) for p in broken["problems"]] == [("Node", "COMMAND_OUTPUT_TOO_LARGE")]
    assert "gpu-9" not in {n["name"] for n in watch.inventory().overview.to_dict()["nodes"]}
    assert watch.inventory().overview.to_dict() == cluster.fresh(), "the other kinds kept serving"


def test_the_event_line_bound_is_configurable_and_a_bad_setting_is_a_coded_error() -> None:
    assert max_event_bytes({}) == 16 * 1024 * 1024
    assert max_event_bytes({"LENS_WATCH_MAX_EVENT_BYTES": "1048576"}) == 1048576
    with pytest.raises(LensError) as caught:
        max_event_bytes({"LENS_WATCH_MAX_EVENT_BYTES": "-5"})
    assert caught.value.code == "SERVER_NOT_CONFIGURED" and "LENS_WATCH_MAX_EVENT_BYTES" in caught.value.message


def test_an_object_of_another_kind_in_a_watch_is_refused_and_the_other_kinds_serve_on() -> None:
    cluster, runner, watch = listed()
    nodes = watch.kinds["Node"]
    intruder = pod("decode-9", "gpu-1", limits={"nvidia.com/gpu": 4})  # a Pod, in the nodes watch

    def stop_here() -> Iterator[str]:
        nodes.stop()
        yield ""

    runner.stream_reply(NODES.watch_argv("v1", nodes.resource_version), [{"type": "ADDED", "object": intruder}])
    runner.stream_reply(NODES.watch_argv("v1", nodes.resource_version), stop_here())
    broken: dict[str, Any] = {}
    original = nodes._broken

    def record(exc: LensError) -> None:
        original(exc)
        broken["problems"] = watch.problems()

    nodes._broken = record  # type: ignore[method-assign]
    nodes.run()
    assert [(p["resource"], p["code"]) for p in broken["problems"]] == [("Node", "CLUSTER_WATCH_WRONG_KIND")]
    assert "'Pod'" in broken["problems"][0]["reason"]
    assert ("", "decode-9") not in nodes.objects and ("llm", "decode-9") not in nodes.objects
    assert watch.inventory().overview.to_dict() == cluster.fresh()


def test_one_malformed_object_is_left_out_with_a_note_not_a_422_for_the_whole_overview() -> None:
    cluster, runner, watch = listed()
    nodes = watch.kinds["Node"]
    bad = node("gpu-2", labels=LABELS, resources={"nvidia.com/gpu": "lots"})  # not a count
    bad["metadata"]["resourceVersion"] = "900"
    nodes.apply(cluster.event("MODIFIED", bad))
    overview = watch.inventory().overview.to_dict()  # before: CLUSTER_OBJECT_INVALID, a 422
    assert {n["name"] for n in overview["nodes"]} == {"gpu-1", "dra-1"}
    dropped = watch.status()["kinds"]["Node"]["dropped"]
    assert dropped["count"] == 1 and dropped["latest"][0]["object"] == "Node gpu-2"
    assert dropped["latest"][0]["code"] == "CLUSTER_OBJECT_INVALID" and "lots" in dropped["latest"][0]["reason"]
    problems = watch.problems()
    assert [(p["resource"], p["code"], p["dropped"]) for p in problems] == [("Node", "CLUSTER_WATCH_DROPPED", 1)]
    # the object mended: the next event brings it back
    good = cluster.put(node("gpu-2", labels=LABELS, resources=GPU))
    nodes.apply(cluster.event("MODIFIED", good))
    assert watch.inventory().overview.to_dict() == cluster.fresh()
