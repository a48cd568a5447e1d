"""The server's live clusters, watched: their objects in memory, the inventory built from memory.

``lens serve`` (``LENS_CLUSTER_WATCH=1``, which it sets unless the operator set ``0``) starts one
:class:`WatchedCluster` per configured live cluster when the app starts and stops them when it
stops. Each keeps nodes, pods, ResourceSlices, DeviceClasses and ResourceClaims current through
:mod:`.watch` (a thread per kind: a watch blocks on its stream). An overview then reads memory:
:func:`watched_inventory` answers the inventory built from the kept objects. The CLI never starts
a watch: it reads a cluster once, as before.

Every list and event is applied to the cluster's one
:class:`~llm_d_lens.cluster.state.InventoryState` as it arrives: a pod or a node is kept as its part
(the objects themselves are not), and an event touches only its node's contribution (see
``cluster/state.py``), so counting again after an event costs milliseconds, not a second. A
builder thread counts after changes: at once after a quiet spell, else once it has rested as long
as its last build took (what arrives meanwhile is counted together), and (for a cluster whose
answer is being asked for) encodes the next answer's bytes from each node's kept part before it
publishes the count; a request answers the latest published count at once. Its
freshness says how many changes it is behind (``changes_pending``) and when it was counted.
Without the builder (a watch driven by hand, in tests and the benchmark)
:meth:`WatchedCluster.inventory` counts on demand instead, once per change. After a count with
:data:`FREEZE_AFTER` changes behind it (the first lists, then every so many events), or one that
made :data:`FREEZE_YOUNG` containers, what is kept is moved out of the cyclic collector's way
(:func:`gc.freeze`) before the count's collector pause ends, so no collection walks a big
cluster's objects (:func:`_settle_collector`).

Every answer says how fresh it is (:func:`freshness`): a watched cluster is ``watching`` (current
now), ``syncing`` (its first lists are under way) or ``broken`` (the last known state, and since
when); a one-shot read says when it was read; a snapshot or the demo is ``static``. A broken watch
is also one of ``/readyz``'s problems (:func:`problems`), which the console shows as a banner; so
is one that keeps restarting (see :mod:`.watch`), and one whose objects were dropped.

One object the inventory cannot read (a node whose capacity is not a quantity) must not turn every
overview of the cluster into that error: a node or pod is left out when it arrives, a DRA object
when it is counted (the count then drops it and counts again); either way it is counted in its
kind's status (``dropped``, with the latest reasons) and named in ``/readyz``. Past
:data:`MAX_DROPPED` DRA objects in one count the error stands: then the cluster is not what Lens
can read, and a one-shot read says the same.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from llm_d_lens import settings
from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.clusters import Cluster
from llm_d_lens.cluster.errors import ObjectInvalid
from llm_d_lens.cluster.fleet import read_freshness
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.cluster.state import InventoryState
from llm_d_lens.errors import LensError
from llm_d_lens.runner import CommandFailed, Runner
from llm_d_lens.serving.inventories import Inventory
from llm_d_lens.serving.watch import (
    DRA_DISCOVERY,
    DRA_GROUP,
    KINDS,
    NOT_FOUND,
    KindWatch,
    WatchKind,
    max_event_bytes,
)

WATCH_ENV = "LENS_CLUSTER_WATCH"
#: how long a request waits for a just-started watch's first lists before answering 503
FIRST_SYNC_SECONDS = 30.0
#: how long stopping waits for each kind's thread
JOIN_SECONDS = 5.0
#: the least rest between two counts (the builder rests as long as its last build took, and at least this);
#: changes arriving within it are counted together
SETTLE_SECONDS = 0.002
#: unreadable DRA objects one count drops before their error is the answer
MAX_DROPPED = 100
#: objects applied since the collector last froze what is kept, before it freezes again
FREEZE_AFTER = 1000
#: containers made since the last collection (during a count's collector pause) that are frozen at once
FREEZE_YOUNG = 100_000


class WatchNotSynced(LensError):
    """The cluster's watch has not listed every kind yet (the server has just started)."""

    code = "CLUSTER_WATCH_SYNCING"
    http_status = 503


@dataclass(frozen=True)
class WatchedInventory(Inventory):
    """An inventory built from a watch's objects, and the watch it came from (for its freshness)."""

    watch: WatchedCluster | None = None
    generation: int = 0

    def _encode(self, nodes: bool, freshness: dict[str, Any] | None) -> Any:
        """The bytes as any inventory's, tagged by their head and each node's kept digest.

        A live answer's tag is weak (``serving/api._encoded_live``): the same content gets the same
        tag, but hashing a 5,000-node answer's megabytes after every event cost more than the rest
        of the answer together.
        """
        import hashlib

        from llm_d_lens.web.conditional import Encoded

        body = self.body(nodes, None, freshness)
        tag = hashlib.blake2b(self.body(False, None, freshness), digest_size=8)
        if nodes:
            tag.update(b"".join(self.overview.nodes_digest()))
        return Encoded(body, f'"{tag.hexdigest()}"')


class WatchedCluster:
    """One live cluster's objects kept current, and the inventory built from them."""

    def __init__(self, name: str, source: ClusterSource, runner: Runner, *, kinds: Iterable[WatchKind] = KINDS,
                 clock: Callable[[], float] = time.time, first_sync: float = FIRST_SYNC_SECONDS,
                 max_line: int | None = None):
        self.name = name
        self.source = source
        self.runner = runner
        self.clock = clock
        self.first_sync = first_sync
        self.lock = threading.RLock()
        self.stopped = threading.Event()
        self.generation = 0
        self.started_at: float | None = None
        self._built: WatchedInventory | None = None
        self._failed: tuple[int, LensError] | None = None  # the generation whose build failed, and why
        self._build_lock = threading.Lock()
        self._next_count = 0.0  # time.monotonic() before which the builder does not count again (its pace)
        self._dirty = threading.Event()
        self._builder: threading.Thread | None = None
        self._dra_version: str | None = None
        self._dra_known = False
        #: every kind's objects, applied as they arrive; the overview is counted from it (only what changed)
        self.state = InventoryState(Catalog(), source.describe())
        max_line = max_event_bytes() if max_line is None else max_line
        self.kinds = {kind.kind: KindWatch(kind, runner, self.lock, self._changed, self._version_of, self.state,
                                           clock=clock, stopped=self.stopped, max_line=max_line) for kind in kinds}
        self._threads: list[threading.Thread] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self.started_at = self.clock()
        for kind, watch in self.kinds.items():
            thread = threading.Thread(target=watch.run, name=f"lens-watch-{self.name}-{kind}", daemon=True)
            self._threads.append(thread)
            thread.start()
        self.start_builder()

    def start_builder(self) -> None:
        """Only the builder (the benchmark drives the kinds by hand)."""
        self._builder = threading.Thread(target=self._build_loop, name=f"lens-watch-{self.name}-builder", daemon=True)
        self._threads.append(self._builder)
        self._builder.start()

    def stop(self) -> None:
        """Stop every kind's loop and stream, and wait for their threads."""
        self.stopped.set()
        self._dirty.set()  # wakes the builder, which then sees the stop
        for watch in self.kinds.values():
            watch.stop()
        for thread in self._threads:
            thread.join(JOIN_SECONDS)
        self._threads = [t for t in self._threads if t.is_alive()]

    def alive_threads(self) -> list[threading.Thread]:
        return [t for t in self._threads if t.is_alive()]

    # -- what the kinds ask ---------------------------------------------------------------------

    def _changed(self) -> None:
        """Called under the lock by a kind whose objects changed: the built inventory is behind."""
        self.generation += 1
        self._dirty.set()

    def _version_of(self, kind: WatchKind) -> str | None:
        """``v1`` for the core kinds; the DRA group's preferred version, asked at each DRA list."""
        if not kind.dra:
            return "v1"
        try:
            document = self.runner.run(list(DRA_DISCOVERY)).json()
        except CommandFailed as exc:
            if any(text in exc.stderr for text in NOT_FOUND):
                return None
            raise
        preferred = document.get("preferredVersion") if isinstance(document, dict) else None
        version = preferred.get("version") if isinstance(preferred, dict) else None
        if not isinstance(version, str) or not version:
            from llm_d_lens.serving.watch import WatchFailed

            raise WatchFailed(f"the {DRA_GROUP} discovery document names no preferredVersion")
        return version

    # -- reading --------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        with self.lock:
            return all(watch.synced for watch in self.kinds.values())

    def inventory(self, *, current: bool = False) -> WatchedInventory:
        """The inventory of the kept objects, from memory.

        With the builder running, the latest build, even when changes are pending (see the module);
        ``current`` (or no builder) builds first when the kept objects changed since.
        """
        with self.lock:
            built, generation, failed = self._built, self.generation, self._failed
        if failed is not None and failed[0] == generation:
            raise failed[1]
        if built is not None and (built.generation == generation or (not current and self._building())):
            return built
        self._wait_first_sync()
        return self._build()

    def _building(self) -> bool:
        return self._builder is not None and self._builder.is_alive()

    def _build(self, ahead: bool = False) -> WatchedInventory:
        """Count what changed and make that the answer; with ``ahead``, its nodes' bytes are encoded
        first (outside the lock: events keep arriving meanwhile), so no request waits for them."""
        with self._build_lock:  # one build at a time: concurrent requests after a change share it
            with self.lock:
                built, generation = self._built, self.generation
                if built is not None and built.generation == generation:
                    return built
                if ahead:  # the nodes are asked for: the state keeps their bytes in order from now on
                    self.state.keep_encoded()
                drops = 0
                while True:
                    try:
                        found = WatchedInventory(_count(self), self.clock(), watch=self, generation=self.generation)
                        break
                    except ObjectInvalid as exc:  # one unreadable DRA object: dropped, counted, counted again without it
                        if drops < MAX_DROPPED and self._drop(exc):
                            drops += 1
                            continue
                        self._failed = (self.generation, exc)
                        raise
                    except LensError as exc:  # the answer is that error
                        self._failed = (self.generation, exc)
                        raise
            if ahead:
                found.encoded(True)
            with self.lock:
                if self._built is None or self._built.generation < found.generation:
                    self._built, self._failed = found, None
                self._next_count = time.monotonic() + SETTLE_SECONDS
            return found

    def _drop(self, exc: ObjectInvalid) -> bool:
        """Forget the kept object ``exc`` is about, with a note; False when it is not a kept one (under the lock)."""
        for kind, watch in self.kinds.items():
            key = next((key for key, item in watch.objects.items() if item is exc.item), None)
            if key is None:
                continue
            self.state.remove(kind, key)  # the next event or list about it brings it back, checked again
            watch.dropped_object(exc)
            return True
        return False

    def _build_loop(self) -> None:
        """The builder: a build after each change, so requests never wait for one.

        An event after a quiet spell is counted at once (no settling delay: the next answer has it
        within milliseconds). After a build the builder rests as long as that build took, and at
        least :data:`SETTLE_SECONDS`; what arrives meanwhile is counted together, so a burst or a
        re-list keeps the builder busy half the time at most and requests get the interpreter.
        """
        while not self.stopped.is_set():
            self._dirty.wait()
            if self.stopped.wait(max(0.0, self._next_count - time.monotonic())):
                return
            self._dirty.clear()
            if not self.synced:
                continue
            try:
                started = time.monotonic()
                before = self._built
                # an answer that was asked for gets the next one's bytes ready before it is published
                self._build(ahead=before is not None and True in before._encoded)
                ended = time.monotonic()
                self._next_count = ended + max(SETTLE_SECONDS, ended - started)
            except LensError:
                pass  # kept in _failed: the next request answers it
            except Exception:  # a bug must not end the builder: log it, answer on demand instead
                import logging

                logging.getLogger("llm_d_lens.serving.watched").exception("building cluster %r's inventory failed", self.name)

    def _wait_first_sync(self) -> None:
        deadline = time.monotonic() + self.first_sync
        while not self.synced:
            broken = [w for w in self.kinds.values() if w.error is not None and not w.synced]
            if broken:
                raise broken[0].error  # never listed: the cluster cannot be read, as a one-shot read would say
            if time.monotonic() >= deadline or self.stopped.is_set():
                raise WatchNotSynced(f"cluster {self.name!r}: the watch has not listed every kind yet; try again shortly",
                                     details={"cluster": self.name, "watch": self.status()})
            time.sleep(0.02)

    # -- freshness ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The watch's state: per kind, and the cluster's as its least fresh kind's."""
        now = self.clock()
        kinds = {kind: watch.status(now) for kind, watch in self.kinds.items()}
        states = {k["state"] for k in kinds.values()}
        state = "broken" if "broken" in states else "watching" if self.synced else "syncing"
        observed = [k["observed_at"] for k in kinds.values()]
        observed_at = None if any(o is None for o in observed) else min(observed)
        return {"mode": "watch", "state": state, "static": False, "observed_at": observed_at,
                "age_seconds": None if observed_at is None else round(max(0.0, now - observed_at), 3),
                "since": self.started_at, "kinds": kinds}

    def problems(self) -> list[dict[str, Any]]:
        """A broken kind, one that keeps restarting, and one with dropped objects, as /readyz problems."""
        found = []
        for kind, watch in self.kinds.items():
            with self.lock:
                error, since, state = watch.error, watch.broken_since, watch.state
                restarts, cause, unstable = watch.restarts, watch.last_restart, watch.unstable
                dropped, notes = watch.dropped, list(watch.dropped_notes)
            if state == "broken" and error is not None:
                found.append({"kind": "cluster-watch", "name": self.name, "resource": kind, "code": error.code,
                              "reason": error.message, "broken_since": since})
            elif unstable:
                found.append({"kind": "cluster-watch", "name": self.name, "resource": kind,
                              "code": "CLUSTER_WATCH_UNSTABLE", "restarts": restarts,
                              "reason": f"restarted {restarts} times in a row, backing off (last: {cause})"})
            if dropped:
                found.append({"kind": "cluster-watch", "name": self.name, "resource": kind,
                              "code": "CLUSTER_WATCH_DROPPED", "dropped": dropped, "latest": notes,
                              "reason": f"{dropped} object{'s' if dropped != 1 else ''} the inventory cannot read "
                                        f"left out of the answers (latest: {notes[-1]['reason'] if notes else '?'})"})
        return found


def _count(watch: WatchedCluster) -> Any:
    """The overview of the watch's state (under its lock): only what changed since the last one is counted, with the
    collector paused, and what the state keeps frozen out of its way (:func:`_settle_collector`) before it runs again."""
    from llm_d_lens.cluster.snapshot import gc_paused

    dra = [w for w in watch.kinds.values() if w.kind.dra]
    watch.state.dra_api = any(w.state != "absent" for w in dra) if dra else None
    with gc_paused():  # as service.inspect does: counting makes many short-lived containers
        found = watch.state.overview()
        # before the pause ends: the first allocation after it would walk every container the count made
        _settle_collector(watch.state)
        return found


def _settle_collector(state: InventoryState) -> None:
    """Move what the state now keeps out of the cyclic collector's way once enough of it changed.

    The kept objects are built once and hold no reference cycles (they are freed by reference
    counting, frozen or not), so :func:`gc.freeze` moves them to the permanent generation: a full
    collection then walks only what was made since, never the millions of objects of a big cluster
    (a 2,000-node cluster paused the server for seconds). The first count after the lists freezes
    them; after that, every :data:`FREEZE_AFTER` changes, or a count that made more than
    :data:`FREEZE_YOUNG` containers (a DRA change counting every node again). It runs before the
    count's collector pause ends: the collector does not run while paused but still counts what is
    made, so the first allocation after the pause would walk all of it (a 5,000-node first count's
    records took 113 ms).
    """
    import gc

    if state.changes >= FREEZE_AFTER or gc.get_count()[0] >= FREEZE_YOUNG:
        state.settled()
        gc.freeze()


# -- the server's watches ----------------------------------------------------------------------

_lock = threading.Lock()
_watches: dict[tuple[str | None, str | None], WatchedCluster] = {}


def _key(source: ClusterSource) -> tuple[str | None, str | None]:
    return (source.context, source.kubeconfig)


def enabled(env: Mapping[str, str] | None = None) -> bool:
    return settings.flag(WATCH_ENV, env)


def check_settings(env: Mapping[str, str]) -> None:
    """Read the watch's settings now, so ``lens serve`` refuses a bad one with its coded error before it starts
    (read first in the app's start-up, it was uvicorn's traceback and "Application startup failed")."""
    if enabled(env):
        max_event_bytes(env)


def start(clusters: Iterable[Cluster], timeout: float, runner_for: Callable[[Cluster], Runner] | None = None) -> list[WatchedCluster]:
    """A watch for each live cluster (the same context and kubeconfig once), started now."""
    started = []
    for cluster in clusters:
        if not cluster.live:
            continue
        source = cluster.source(timeout)
        with _lock:
            if _key(source) in _watches:
                continue
            runner = runner_for(cluster) if runner_for is not None else source.runner()
            watch = _watches[_key(source)] = WatchedCluster(cluster.name, source, runner)
        watch.start()
        started.append(watch)
    return started


def stop(watches: Iterable[WatchedCluster]) -> None:
    """Stop these watches and forget them (the server's shutdown stops those it started)."""
    watches = list(watches)
    with _lock:
        for key, watch in list(_watches.items()):
            if watch in watches:
                del _watches[key]
    for watch in watches:
        watch.stop()


def stop_all() -> None:
    """Stop every watch (tests)."""
    with _lock:
        found = list(_watches.values())
    stop(found)


def watch_of(source: ClusterSource) -> WatchedCluster | None:
    if not source.live:
        return None
    with _lock:
        return _watches.get(_key(source))


def watched_inventory(source: ClusterSource) -> WatchedInventory | None:
    """The inventory from memory when the server watches this source; None: read it once instead."""
    watch = watch_of(source)
    return watch.inventory() if watch is not None else None


def freshness(source: ClusterSource, found: Inventory) -> dict[str, Any]:
    """How fresh an answer built from ``found`` is, for the API's and the console's answers."""
    if isinstance(found, WatchedInventory) and found.watch is not None:
        status = found.watch.status()
        pending = max(0, found.watch.generation - found.generation)
        status.update(built_at=found.read_at, changes_pending=pending)
        if pending and status["observed_at"] is not None and found.read_at < status["observed_at"]:
            # the kept objects are current, this answer is their state at its build
            status.update(observed_at=found.read_at, age_seconds=round(max(0.0, time.time() - found.read_at), 3))
        return status
    return read_freshness(source, found.read_at)


def problems() -> list[dict[str, Any]]:
    """Every watched cluster's broken kinds (part of /readyz)."""
    with _lock:
        found = list(_watches.values())
    return [problem for watch in found for problem in watch.problems()]
