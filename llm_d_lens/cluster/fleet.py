"""The fleet: several named clusters at once, whether each can be read, and totals per hardware.

A cluster that cannot be read (an unreachable API server, expired credentials, a broken snapshot)
is listed with its error; the others still answer, so one dead region never hides the rest.
"""

from __future__ import annotations

import asyncio
import time
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


#: what a server knows of a cluster without asking it (its watch): a reachability, or None to probe
Known = Callable[[Cluster, ClusterSource], "Reachability | None"]


async def probe(cluster: Cluster, runner: Runner | None = None, timeout: float = PROBE_TIMEOUT,
                known: Known | None = None) -> Reachability:
    """Whether the cluster answers: ``kubectl version`` for a live one, the file's presence for a snapshot.

    ``known`` is what a server already knows (``llm_d_lens/serving/fleet.py``: a watch with every
    kind in sync answers for its cluster, so a poll costs no kubectl call); when it says nothing,
    the cluster is probed as any other.
    """
    from llm_d_lens.k8s.version import server_version_of

    if cluster.demo:
        return Reachability(cluster, True, "embedded demo snapshot")
    if cluster.snapshot is not None:
        readable = cluster.snapshot.is_file() or cluster.snapshot.is_dir()
        return Reachability(cluster, readable, str(cluster.snapshot) if readable else f"{cluster.snapshot}: no such file")
    source = cluster.source(timeout)
    answered = known(cluster, source) if known is not None else None
    if answered is not None:
        return answered
    runner = runner or source.runner()
    try:
        result = await runner.arun(list(VERSION_ARGV), timeout=timeout)
        _, version = server_version_of(result.json(), list(VERSION_ARGV))
    except LensError as exc:
        return Reachability(cluster, False, _first_line(exc.message))
    return Reachability(cluster, True, f"Kubernetes {version}")


async def probe_all(clusters: Sequence[Cluster], runners: Callable[[Cluster], Runner | None] = lambda _: None,
                    timeout: float = PROBE_TIMEOUT, known: Known | None = None) -> list[Reachability]:
    """Every cluster probed at once: the slowest one sets the time, not their sum."""
    return list(await asyncio.gather(*(probe(c, runners(c), timeout, known) for c in clusters)))


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


#: how a member's overview is had: (its document, when it was read, how fresh it is), or a LensError
Read = Callable[[ClusterSource, "Runner | None"], "tuple[dict[str, Any], float, dict[str, Any]]"]


def read_now(source: ClusterSource, runner: Runner | None) -> tuple[dict[str, Any], float, dict[str, Any]]:
    """The cluster read now (the CLI); a server reads what it holds instead (``serving/fleet.py``)."""
    from llm_d_lens.cluster.service import inspect

    overview = inspect(source, runner)
    read_at = time.time()
    return overview.to_dict(), read_at, read_freshness(source, read_at)


def read_member(cluster: Cluster, timeout: float, runner: Runner | None = None, read: Read = read_now) -> Member:
    """One cluster's overview; a failure is kept, never raised, so one dead cluster never hides the rest."""
    source = cluster.source(timeout)
    try:
        document, read_at, fresh = read(source, runner)
    except LensError as exc:
        return Member(cluster, None, exc)
    return Member(cluster, document, read_at=read_at, freshness=fresh)


def read_freshness(source: ClusterSource, read_at: float) -> dict[str, Any]:
    """How fresh an answer read once at ``read_at`` is: a file's never changes, a live read ages."""
    if not source.live:
        return {"mode": "demo" if source.demo else "snapshot", "state": "static", "static": True,
                "observed_at": read_at, "age_seconds": None}
    return {"mode": "list", "state": "read-once", "static": False, "observed_at": read_at,
            "age_seconds": round(max(0.0, time.time() - read_at), 3)}


def read_members(clusters: Sequence[Cluster], timeout: float, runners: Callable[[Cluster], Runner | None] = lambda _: None) -> list[Member]:
    """Each cluster's overview, read one after the other (the CLI)."""
    return [read_member(cluster, timeout, runners(cluster)) for cluster in clusters]
