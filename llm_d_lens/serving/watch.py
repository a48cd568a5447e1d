"""One kind of a live cluster's objects, kept in memory: one list, then a watch from its resourceVersion.

Both go through the CommandRunner as ``kubectl get --raw <collection path>``: the list
(``/api/v1/nodes``) answers the API's own ``NodeList`` with the ``metadata.resourceVersion`` a watch
resumes from, and the watch (``...?watch=true&resourceVersion=RV&allowWatchBookmarks=true``)
streams one JSON event per line. ``kubectl get --watch --output-watch-events`` cannot be used for
this: it has no flag to start from a resourceVersion (``--resource-version`` is an unknown flag),
and ``kubectl get -o json`` prints its own ``List`` whose resourceVersion is empty, so a dropped
watch could only be restarted with a full list, missing what changed in between.

The protocol, as the API server speaks it:

* ``ADDED`` / ``MODIFIED`` carry the whole object, ``DELETED`` its last state; each carries the
  resourceVersion to resume after. ``BOOKMARK`` only moves the resourceVersion on.
* An ``ERROR`` event with a ``Status`` of code 410 (``Expired`` / ``Gone``, "too old resource
  version") means the resourceVersion fell out of the server's window: list again. Any other
  ERROR, a non-zero exit, invalid JSON or a silence longer than :data:`IDLE_SECONDS` is a dropped
  stream: resume from the last resourceVersion, without a list, so a flapping connection costs no
  re-list.
* Every watch asks the server to end it after :data:`WATCH_SECONDS`; a clean end is a renewal.
  It also bounds how long a silently dead connection can pass for a live one.

Every restart, whatever its cause (a 410, a drop, a stream that ended clean), counts: the first
after a working stretch goes at once, each further one in a row waits 1 s doubling to 60 s, less
up to :data:`JITTER` of it so that many watches do not hammer an API server in step. A stream
open :data:`HEALTHY_SECONDS` is a working stretch and starts the count afresh. A server that
answers 410 to every watch, or ends every stream at once, thus costs a list a minute, not six a
second; and after :data:`UNSTABLE_AFTER` restarts in a row the kind is one of ``/readyz``'s
problems even while each stream opens fine.

What arrives is checked before it is kept: one line is at most :data:`MAX_EVENT_BYTES`
(``LENS_WATCH_MAX_EVENT_BYTES``; read in chunks, a longer line is refused unread), and an object
of another kind than the one watched is refused (the kind's watch is broken, the others serve on).

Pods are listed and watched with a field selector that drops finished pods: they hold nothing,
and on a busy cluster they are most of the pods.
"""

from __future__ import annotations

import gc
import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from llm_d_lens import settings
from llm_d_lens.cluster.errors import ObjectInvalid
from llm_d_lens.cluster.objects import ClusterObjects, Document
from llm_d_lens.cluster.state import InventoryState, key_of
from llm_d_lens.errors import LensError
from llm_d_lens.runner import (
    CommandFailed,
    CommandOutputInvalid,
    CommandStream,
    Runner,
    format_command,
)

DRA_GROUP = "resource.k8s.io"
#: pods that finished hold no device; the API server filters them out of the list and the watch
RUNNING_PODS = "status.phase!=Succeeded,status.phase!=Failed"
#: the server ends each watch after this long (a renewal, not a drop)
WATCH_SECONDS = 300
#: a stream silent this long (no event, no bookmark, not ended) is taken for a dead connection
IDLE_SECONDS = WATCH_SECONDS + 60
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
#: each backoff is cut by a random share of up to this much of it, so restarts spread out
JITTER = 0.25
#: a stream open this long was a working watch: the next restart is again the first in a row
HEALTHY_SECONDS = 30.0
#: restarts in a row after which the kind is a /readyz problem even while its streams open
UNSTABLE_AFTER = 3
#: the longest watch event line read (bytes); a longer one is refused before it is held whole
MAX_EVENT_BYTES = 16 * 1024 * 1024
MAX_EVENT_ENV = "LENS_WATCH_MAX_EVENT_BYTES"
#: the reasons a kind keeps for its latest dropped objects
DROPPED_NOTES = 5
#: how often a cluster without the DRA API is asked again whether it serves it now
ABSENT_RECHECK_SECONDS = 300.0
#: what kubectl prints for a group or path the server does not serve
NOT_FOUND = ("NotFound", "could not find the requested resource", "the server doesn't have a resource type")
#: what kubectl prints when the server refuses the resourceVersion itself (410) instead of in an ERROR event
GONE = ("(Gone)", "(Expired)", "too old resource version", "410 Gone")


@dataclass(frozen=True)
class WatchKind:
    """One kind the inventory reads, and where its collection lives in the API."""

    kind: str
    plural: str
    group: str = ""
    field_selector: str | None = None

    @property
    def dra(self) -> bool:
        return self.group == DRA_GROUP

    def path(self, version: str) -> str:
        return f"/api/{version}/{self.plural}" if not self.group else f"/apis/{self.group}/{version}/{self.plural}"

    def list_argv(self, version: str) -> list[str]:
        query = {"fieldSelector": self.field_selector} if self.field_selector else {}
        return ["kubectl", "get", "--raw", _url(self.path(version), query)]

    def watch_argv(self, version: str, resource_version: str) -> list[str]:
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
                 "timeoutSeconds": str(WATCH_SECONDS)}
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return ["kubectl", "get", "--raw", _url(self.path(version), query)]


def _url(path: str, query: dict[str, str]) -> str:
    return path + ("?" + urlencode(query, safe=",!=") if query else "")


KINDS: tuple[WatchKind, ...] = (
    WatchKind("Node", "nodes"),
    WatchKind("Pod", "pods", field_selector=RUNNING_PODS),
    WatchKind("ResourceSlice", "resourceslices", DRA_GROUP),
    WatchKind("DeviceClass", "deviceclasses", DRA_GROUP),
    WatchKind("ResourceClaim", "resourceclaims", DRA_GROUP),
)
#: the DRA group's discovery document: which version the server prefers (what `kubectl get` reads)
DRA_DISCOVERY = ("kubectl", "get", "--raw", f"/apis/{DRA_GROUP}")


class WatchGone(LensError):
    """The resourceVersion is too old for the server (410): only a new list can go on."""

    code = "CLUSTER_WATCH_EXPIRED"
    http_status = 502


class WatchFailed(LensError):
    """The watch stream said something other than an event (an ERROR event, a broken line)."""

    code = "CLUSTER_WATCH_FAILED"
    http_status = 502


class WatchWrongKind(WatchFailed):
    """A watch of one kind delivered an object of another: the stream is not what was asked for."""

    code = "CLUSTER_WATCH_WRONG_KIND"


def max_event_bytes(env: Mapping[str, str] | None = None) -> int:
    """:data:`MAX_EVENT_BYTES`, or ``LENS_WATCH_MAX_EVENT_BYTES`` when set to a positive integer."""
    raw = settings.text(MAX_EVENT_ENV, env) or ""
    if not raw:
        return MAX_EVENT_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        from llm_d_lens.errors import ServerNotConfigured, clip

        raise ServerNotConfigured(f"{MAX_EVENT_ENV}={clip(raw, 40)!r} is not a positive number of bytes",
                                  details={"variable": MAX_EVENT_ENV})
    return value


def _parse_list(argv: tuple[str, ...], text: str) -> Any:
    """A list's JSON with only the fields the inventory reads (``cluster/decode.py``), under the strict
    reader's rules (collector paused, finite numbers only)."""
    from llm_d_lens.cluster.decode import decode_list
    from llm_d_lens.cluster.snapshot import refused_values
    from llm_d_lens.jsonread import JsonRefused

    try:
        return decode_list(text)
    except json.JSONDecodeError as exc:
        raise CommandOutputInvalid(argv, str(exc)) from None
    except JsonRefused as exc:
        raise CommandOutputInvalid(argv, refused_values(exc)) from None


def backoff(failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row: 1, 2, 4, ... up to a minute."""
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(64, max(0, failures - 1)))


def restart_delay(restarts: int, rng: random.Random) -> float:
    """Seconds before the ``restarts``-th restart in a row: none for the first, then :func:`backoff`
    of the ones before it, less up to :data:`JITTER` of that."""
    if restarts <= 1:
        return 0.0
    delay = backoff(restarts - 1)
    return delay * (1.0 - JITTER * rng.random())


def _resource_version(item: Any) -> str | None:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    value = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


class KindWatch:
    """The objects of one kind and the loop keeping them current; state changes go through ``lock``.

    The objects are applied to the cluster's :class:`~llm_d_lens.cluster.state.InventoryState`,
    which keeps what the inventory reads of each (``objects``, by key). ``on_change`` is called
    (under the lock) whenever they change, so the cluster knows its last answer is behind. ``version_of`` answers the API version to read the kind at
    (``v1`` for the core kinds, the DRA group's preferred version), or None when it is not served.
    """

    def __init__(self, kind: WatchKind, runner: Runner, lock: threading.RLock, on_change: Callable[[], None],
                 version_of: Callable[[WatchKind], str | None], state: InventoryState, *, clock: Callable[[], float] = time.time,
                 stopped: threading.Event | None = None, wait: Callable[[float], object] | None = None,
                 rng: random.Random | None = None, max_line: int = MAX_EVENT_BYTES):
        self.kind = kind
        self.runner = runner
        self.lock = lock
        self.on_change = on_change
        self.version_of = version_of
        self.clock = clock
        self.store = state
        self.resource_version: str | None = None
        self.version: str | None = None
        #: starting, listing, listed, watching, broken, or absent (the API does not serve the kind)
        self.state = "starting"
        self.synced = False
        self.error: LensError | None = None
        self.broken_since: float | None = None
        #: when the cached objects were last known to be the cluster's (a list, an event, a bookmark, an open stream)
        self.current_at: float | None = None
        self.last_event_at: float | None = None
        self.lists = self.events = self.resumes = 0
        #: restarts since the last working stretch (see the module); /readyz reads it
        self.restarts = 0
        self.last_restart: str | None = None
        #: objects the inventory could not read, dropped from the kept ones: how many, and the latest few
        self.dropped = 0
        self.dropped_notes: list[dict[str, Any]] = []
        self.max_line = max_line
        self._stream: CommandStream | None = None
        #: set to end the loop; a cluster shares one among its kinds
        self._stopped = stopped or threading.Event()
        #: how the loop waits (the stop event's wait; tests pass a simulated clock's)
        self._wait = wait or self._stopped.wait
        self._rng = rng or random.Random()

    @property
    def objects(self) -> dict[tuple[str, str], Any]:
        """What is kept of each object of this kind, by (namespace, name)."""
        return self.store.kept(self.kind.kind)

    def dropped_object(self, exc: ObjectInvalid) -> None:
        """An object the inventory cannot read, left out: counted, with the latest reasons (under the lock)."""
        from llm_d_lens.cluster.errors import describe_object
        from llm_d_lens.errors import clip

        self.dropped += 1
        self.dropped_notes = [*self.dropped_notes, {"object": clip(describe_object(exc.item), 300), "code": exc.code,
                                                    "reason": clip(exc.message, 500)}][-DROPPED_NOTES:]

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        """List, watch, resume or re-list until stopped; never raises (failures are state).

        Every way a stream ends is a restart, and restarts in a row back off (see the module).
        """
        stop = self._stopped
        while not stop.is_set():
            began = self.clock()
            try:
                if self.resource_version is None and not self.list():
                    self._wait(ABSENT_RECHECK_SECONDS)
                    continue
                self.watch_once()
                cause = "the stream ended"
            except WatchGone:
                with self.lock:
                    self.resource_version = None  # list again: the cache is still served meanwhile
                cause = "the resourceVersion expired (410); listing again"
            except LensError as exc:
                if stop.is_set():
                    break
                self._broken(exc)
                cause = exc.message
            if stop.is_set():
                break
            self._wait(self._restart(cause, healthy=self.clock() - began >= HEALTHY_SECONDS))

    def _restart(self, cause: str, *, healthy: bool) -> float:
        """Count one restart (a working stretch before it starts the count afresh); the seconds to wait."""
        with self.lock:
            if healthy:
                self.restarts = 0
            self.restarts += 1
            self.last_restart = cause
            return restart_delay(self.restarts, self._rng)

    @property
    def unstable(self) -> bool:
        """Restarting over and over: each stream may open, but none stays open."""
        return self.restarts >= UNSTABLE_AFTER

    def stop(self) -> None:
        """End the loop and the stream it reads (from any thread)."""
        self._stopped.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def list(self) -> bool:
        """Replace the objects with a fresh list; False when the API does not serve the kind."""
        with self.lock:
            self.state = "listing"
        version = self.version_of(self.kind)
        if version is None:
            self._absent()
            return False
        argv = self.kind.list_argv(version)
        try:
            result = self.runner.run(argv)
        except CommandFailed as exc:
            if self.kind.dra and any(text in exc.stderr for text in NOT_FOUND):
                self._absent()
                return False
            raise
        from llm_d_lens.cluster.snapshot import gc_paused

        # The decoded list lives and dies inside one collector pause (as service.inspect reads a
        # snapshot), and what the state keeps of it is frozen before the pause ends: no
        # collection ever walks a big cluster's objects (see watched._settle_collector).
        with gc_paused():
            body = _parse_list(result.argv, result.stdout)
            del result  # the text: only the decoded fields are kept
            objects = ClusterObjects.from_documents([Document(f"`{format_command(argv)}`", body)])
            items = objects.all_items()
            rv = _resource_version(body)
            if rv is None:
                raise WatchFailed(f"`{format_command(argv)}` answered a list without metadata.resourceVersion; "
                                  "a watch cannot start from it", details={"command": format_command(argv)})
            fresh = [item for item in items if item.get("kind") == self.kind.kind]
            del body, objects, items
            with self.lock:
                for exc in self.store.replace(self.kind.kind, fresh):
                    self.dropped_object(exc)
                del fresh
                self.resource_version = rv
                self.version = version
                self.lists += 1
                self.synced = True
                self.state = "listed"
                self.current_at = self.clock()
                self.on_change()
            gc.freeze()
        return True

    def watch_once(self) -> bool:
        """Read one watch stream to its end; True when it delivered anything (the connection works)."""
        assert self.resource_version is not None and self.version is not None
        argv = self.kind.watch_argv(self.version, self.resource_version)
        delivered = False
        stream = self.runner.stream(argv, idle_timeout=IDLE_SECONDS, max_line=self.max_line)
        self._stream = stream
        try:
            if self._stopped.is_set():
                return False
            with self.lock:
                self.state, self.error, self.broken_since = "watching", None, None
                self.current_at = self.clock()
            try:
                for line in stream:
                    if line.strip():
                        self.apply(self._event(line, argv))
                        delivered = True
            except CommandFailed as exc:
                if any(text in exc.stderr for text in GONE):
                    raise WatchGone(f"the {self.kind.plural} watch expired; listing again") from None
                raise
        finally:
            self._stream = None
            stream.close()
        with self.lock:
            self.resumes += 1
        return delivered

    # -- one event ------------------------------------------------------------------------------

    def _event(self, line: str, argv: list[str]) -> dict[str, Any]:
        from llm_d_lens.cluster.decode import decode_event
        from llm_d_lens.jsonread import JsonRefused

        try:
            event = decode_event(line)
        except (json.JSONDecodeError, JsonRefused) as exc:
            raise CommandOutputInvalid(argv, f"a watch event is not JSON: {exc}") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str) or not isinstance(event.get("object"), dict):
            raise CommandOutputInvalid(argv, "a watch event is not an object with a type and an object")
        return event

    def apply(self, event: dict[str, Any]) -> None:
        """One watch event applied to the objects; ERROR raises (410: :class:`WatchGone`)."""
        kind, item = event["type"], event["object"]
        if kind == "ERROR":
            code = item.get("code")
            message = item.get("message") or item.get("reason") or "no message"
            if code == 410 or item.get("reason") in ("Expired", "Gone"):
                raise WatchGone(f"the {self.kind.plural} watch expired ({message}); listing again")
            raise WatchFailed(f"the {self.kind.plural} watch answered an error: {message}",
                              details={"code": code, "reason": item.get("reason")})
        rv = _resource_version(item)
        now = self.clock()
        with self.lock:
            if rv is not None:
                self.resource_version = rv
            self.current_at = now
            if kind == "BOOKMARK":
                return
            metadata = item.get("metadata")
            if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
                raise WatchFailed(f"a {self.kind.kind} {kind} event holds an object without metadata.name")
            given = item.get("kind")
            if given is not None and given != self.kind.kind:
                from llm_d_lens.errors import clip

                shown = clip(given, 60) if isinstance(given, str) else type(given).__name__
                raise WatchWrongKind(f"the {self.kind.plural} watch delivered a {shown!r} object "
                                     f"({clip(metadata['name'], 60)!r}); refused, and this kind's watch restarts",
                                     details={"resource": self.kind.kind, "kind": shown})
            item.setdefault("kind", self.kind.kind)  # watch events of typed collections may leave it off
            if kind in ("ADDED", "MODIFIED"):
                try:
                    self.store.put(self.kind.kind, item)
                except ObjectInvalid as exc:  # left out, counted; the next event about it brings it back
                    self.dropped_object(exc)
            elif kind == "DELETED":
                if not self.store.remove(self.kind.kind, key_of(item)):
                    return
            else:
                raise WatchFailed(f"a {self.kind.plural} watch event has an unknown type {kind!r}")
            self.events += 1
            self.last_event_at = now
            self.on_change()

    # -- state ----------------------------------------------------------------------------------

    def _broken(self, exc: LensError) -> None:
        with self.lock:
            self.state = "broken"
            self.error = exc
            if self.broken_since is None:
                self.broken_since = self.clock()

    def _absent(self) -> None:
        with self.lock:
            changed = bool(self.objects)
            self.store.replace(self.kind.kind, [])
            self.resource_version, self.version = None, None
            self.state, self.synced, self.error, self.broken_since = "absent", True, None, None
            self.current_at = self.clock()
            if changed:
                self.on_change()

    def status(self, now: float) -> dict[str, Any]:
        """This kind's part of the freshness answer."""
        with self.lock:
            current = now if self.state == "watching" else self.current_at
            found: dict[str, Any] = {
                "state": self.state, "objects": len(self.objects), "resource_version": self.resource_version,
                "observed_at": current, "age_seconds": None if current is None else round(max(0.0, now - current), 3),
                "last_event_at": self.last_event_at, "lists": self.lists, "events": self.events,
                "restarts": self.restarts,
            }
            if self.dropped:
                found["dropped"] = {"count": self.dropped, "latest": list(self.dropped_notes)}
            if self.error is not None:
                found["error"] = {"code": self.error.code, "message": self.error.message}
                found["broken_since"] = self.broken_since
            return found
