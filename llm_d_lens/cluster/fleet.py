"""The fleet: several named clusters at once, whether each can be read, and totals per hardware.

A cluster that cannot be read (an unreachable API server, expired credentials, a broken snapshot)
is listed with its error; the others still answer, so one dead region never hides the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_d_lens.cluster.clusters import Cluster
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.errors import LensError
from llm_d_lens.runner import Runner

#: a reachability probe is quick: an API server that has not answered by then is as good as down
PROBE_TIMEOUT = 5.0
VERSION_ARGV = ("kubectl", "version", "-o", "json")
#: the counts a fleet adds up, as the overview's buckets name them
COUNTS = ("nodes", "devices", "partitions", "allocatable", "allocated", "available")


@dataclass(frozen=True)
class Reachability:
    cluster: Cluster
    reachable: bool
    detail: str  # the server's version, the snapshot's path, or why it cannot be read

    def to_dict(self) -> dict[str, Any]:
        return {**self.cluster.to_dict(), "reachable": self.reachable, "detail": self.detail}


async def probe(cluster: Cluster, runner: Runner | None = None, timeout: float = PROBE_TIMEOUT) -> Reachability:
    """Whether the cluster answers: ``kubectl version`` for a live one, the file's presence for a snapshot.

    A live cluster the server watches with every kind in sync answers from the watch: its streams
    are open, so it is reachable now, and the console's poll of this route costs no kubectl call.
    A watch still listing or broken (a refused connection, or a kind the server may not read)
    does not tell, so that cluster is probed as any other.
    """
    from llm_d_lens.monitoring.gpu_driver.kube import server_version_of

    if cluster.demo:
        return Reachability(cluster, True, "embedded demo snapshot")
    if cluster.snapshot is not None:
        readable = cluster.snapshot.is_file() or cluster.snapshot.is_dir()
        return Reachability(cluster, readable, str(cluster.snapshot) if readable else f"{cluster.snapshot}: no such file")
    source = cluster.source(timeout)
    watched = _watched(cluster, source)
    if watched is not None:
        return watched
    runner = runner or source.runner()
    try:
        result = await runner.arun(list(VERSION_ARGV), timeout=timeout)
        _, version = server_version_of(result.json(), list(VERSION_ARGV))
    except LensError as exc:
        return Reachability(cluster, False, _first_line(exc.message))
    return Reachability(cluster, True, f"Kubernetes {version}")


async def probe_all(clusters: Sequence[Cluster], runners: Callable[[Cluster], Runner | None] = lambda _: None,
                    timeout: float = PROBE_TIMEOUT) -> list[Reachability]:
    """Every cluster probed at once: the slowest one sets the time, not their sum."""
    return list(await asyncio.gather(*(probe(c, runners(c), timeout) for c in clusters)))


def _watched(cluster: Cluster, source: ClusterSource) -> Reachability | None:
    from llm_d_lens.cluster.watched import watch_of

    watch = watch_of(source)
    if watch is None:
        return None
    status = watch.status()
    if status["state"] != "watching":
        return None
    return Reachability(cluster, True, f"watched: {len(status['kinds'])} kinds in sync")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else text


# -- totals across clusters -------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One cluster's part of the fleet: its overview document, or the error that kept it out."""

    cluster: Cluster
    overview: dict[str, Any] | None
    error: LensError | None = None
    read_at: float | None = None
    freshness: dict[str, Any] | None = None


def fleet_document(members: Sequence[Member]) -> dict[str, Any]:
    """Per hardware: totals across clusters and each cluster's share; per cluster: its summary or its error."""
    hardware: dict[str, dict[str, Any]] = {}
    for member in members:
        if member.overview is None:
            continue
        for bucket in member.overview["vendors"]:
            entry = hardware.setdefault(bucket["profile_id"], {
                "profile_id": bucket["profile_id"], "display_name": bucket["display_name"], "vendor": bucket["vendor"],
                "accelerator": bucket["accelerator"], **{key: 0 for key in COUNTS}, "vram_bytes": 0, "clusters": []})
            share = {key: bucket[key] for key in COUNTS}
            share["vram_bytes"] = bucket["vram"]["total_bytes"]
            for key, value in share.items():
                entry[key] += value
            entry["clusters"].append({"cluster": member.cluster.name, **share})
    rows = sorted(hardware.values(), key=lambda h: (not h["accelerator"], h["profile_id"]))
    for row in rows:
        row["vram_gib"] = round(row["vram_bytes"] / 2**30, 2)
    accelerators = [row for row in rows if row["accelerator"]]
    totals = {key: sum(row[key] for row in accelerators) for key in (*COUNTS, "vram_bytes")}
    totals["vram_gib"] = round(totals["vram_bytes"] / 2**30, 2)
    return {
        "clusters": [_member_dict(m) for m in members],
        "hardware": rows,
        "totals": {**totals, "clusters": len(members), "clusters_read": sum(1 for m in members if m.overview is not None)},
    }


def _member_dict(member: Member) -> dict[str, Any]:
    described = member.cluster.to_dict()
    if member.overview is None:
        error = member.error
        return {**described, "ok": False, "error": {"code": error.code if error else "UNKNOWN",
                                                    "message": error.message if error else "not read"}}
    return {**described, "ok": True, "read_at": member.read_at, "freshness": member.freshness,
            "summary": member.overview["summary"]}


def read_member(cluster: Cluster, timeout: float, runner: Runner | None = None) -> Member:
    """One cluster's overview (see :mod:`.cache`); a failure is kept, never raised."""
    from llm_d_lens.cluster.cache import inventory
    from llm_d_lens.cluster.watched import freshness

    source = cluster.source(timeout)
    try:
        found = inventory(source, runner)
    except LensError as exc:
        return Member(cluster, None, exc)
    return Member(cluster, found.overview.to_dict(), read_at=found.read_at, freshness=freshness(source, found))


def read_members(clusters: Sequence[Cluster], timeout: float, runners: Callable[[Cluster], Runner | None] = lambda _: None) -> list[Member]:
    """Each cluster's overview, read one after the other (the CLI)."""
    return [read_member(cluster, timeout, runners(cluster)) for cluster in clusters]


async def gather_members(clusters: Sequence[Cluster], timeout: float,
                         runners: Callable[[Cluster], Runner | None] = lambda _: None) -> list[Member]:
    """Each cluster's overview in a worker thread, all at once (the server): the event loop stays free."""
    return list(await asyncio.gather(*(asyncio.to_thread(read_member, c, timeout, runners(c)) for c in clusters)))
