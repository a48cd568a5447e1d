"""Did every host, GPU and communicator the profile expects really do work during a run?

Read back from Prometheus rather than predicted. Participation is counted by *increase* over the
run window, not by presence: collectors keep republishing a series long after its container is
gone, so a series merely existing says nothing about this run. A GPU is identified by its PCI bus
id on its host (or, lacking one, its uuid), never by rank: a rank is a position within one
communicator and a deployment builds several, so one GPU reports under more than one rank and
grouping by (host, rank) over-counts. Communicators matter because prefill and decode form
separate ones: a total summed over every series still rises when only one pool is alive.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any

from llm_d_lens.evaluate.profiles import LoadedProfile
from llm_d_lens.prometheus.client import DEFAULT_TIMEOUT, PrometheusClient, Sample, gather_all
from llm_d_lens.prometheus.promql import label_name, matcher, selector

Groups = set[tuple[str, ...]]


@dataclass
class CoverageReport:
    profile: str
    metric: str
    start: float
    end: float
    required: dict[str, int]
    hosts: list[str]
    gpus_by_host: dict[str, list[str]]
    communicators: list[str]
    idle_gpus: list[str] = field(default_factory=list)  # "host gpu": a series, but flat over the run
    host_rank_pairs: int = 0  # what grouping by (host, rank) would have counted; shown, never used
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return sum(len(v) for v in self.gpus_by_host.values())

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ok": self.ok, "reported": {"hosts": len(self.hosts), "gpus": self.gpus,
                                                          "communicators": len(self.communicators)}}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _rose(before: float | None, after: float | None) -> bool:
    """Did work: the total moved (a reset to a smaller non-zero value also means a new process worked)."""
    return after is not None and after > 0 and after != before


def _by(samples: list[Sample], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(s.labels.get(label, "") for label in labels): s.value for s in samples}


async def _rose_by(client: PrometheusClient, series: str, start: float, end: float,
                   labels: tuple[str, ...]) -> tuple[Groups, Groups]:
    """(groups whose total rose between ``start`` and ``end``, groups present at the end)."""
    promql = f"sum by ({', '.join(label_name(label) for label in labels)}) ({series})"
    before, after = await gather_all(client.query(promql, start), client.query(promql, end))
    totals_before, totals_after = _by(before, *labels), _by(after, *labels)
    return {k for k, v in totals_after.items() if _rose(totals_before.get(k), v)}, set(totals_after)


async def _participation(prometheus_url: str, series: str, start: float, end: float, timeout: float,
                         *groupings: tuple[str, ...]) -> list[tuple[Groups, Groups]]:
    async with PrometheusClient(prometheus_url, timeout=timeout) as client:
        return await gather_all(*(_rose_by(client, series, start, end, labels) for labels in groupings))


def check_coverage(loaded: LoadedProfile, prometheus_url: str, start: float, end: float,
                   timeout: float = DEFAULT_TIMEOUT) -> CoverageReport:
    """Compare who did work between ``start`` and ``end`` with the profile's ``coverage``."""
    coverage = loaded.profile.coverage
    names = coverage.source.labels
    series = selector(coverage.source.metric, [matcher(k, "=", v) for k, v in sorted(coverage.source.matchers.items())])
    (gpu_rows, gpu_present), (comm_rows, _), (rank_rows, _) = asyncio.run(_participation(
        prometheus_url, series, start, end, timeout,
        (names.host, names.gpu_pci_bus_id, names.gpu_uuid), (names.communicator,), (names.host, names.rank)))

    gpus_by_host: dict[str, set[str]] = {}
    unidentified = 0
    for host, pci, uuid in gpu_rows:
        if pci or uuid:
            gpus_by_host.setdefault(host, set()).add(pci or uuid)
        else:
            gpus_by_host.setdefault(host, set())
            unidentified += 1
    working = {(h, pci or uuid) for h, pci, uuid in gpu_rows}
    idle = sorted(f"{h} {pci or uuid}" for h, pci, uuid in gpu_present - gpu_rows if (pci or uuid) and (h, pci or uuid) not in working)

    report = CoverageReport(
        profile=loaded.name, metric=coverage.source.metric, start=start, end=end,
        required={"hosts": coverage.hosts, "gpus": coverage.gpus, "communicators": coverage.communicators},
        hosts=sorted(gpus_by_host), gpus_by_host={h: sorted(g) for h, g in sorted(gpus_by_host.items())},
        communicators=sorted(c for (c,) in comm_rows if c), idle_gpus=idle, host_rank_pairs=len(rank_rows),
    )
    if unidentified:
        report.notes.append(f"{unidentified} series did work without a {names.gpu_pci_bus_id} or "
                            f"{names.gpu_uuid} label; the GPUs behind them cannot be counted")
    report.problems = _problems(report, loaded, bool(gpu_present), series)
    return report


def _problems(report: CoverageReport, loaded: LoadedProfile, any_series: bool, series: str) -> list[str]:
    required = report.required
    if not any_series:
        return [f"no series of {series} at the end of the run: is the profiler loaded, sending to "
                f"{loaded.profile.otel_endpoint or 'the collector'}, and is Prometheus scraping the collector?"]
    problems = []
    hosts = len(report.hosts)
    if hosts < required["hosts"]:
        problems.append(f"{_plural(hosts, 'host')} reported, {required['hosts']} required: does every machine reach the "
                        f"collector at {loaded.profile.otel_endpoint or 'otel_endpoint'}? (reported: "
                        f"{', '.join(report.hosts) or 'none'})")
    elif hosts > required["hosts"]:
        problems.append(f"{_plural(hosts, 'host')} reported, {required['hosts']} expected: another workload shares this "
                        f"profiler, or coverage.hosts is out of date (reported: {', '.join(report.hosts)})")
    gpus = report.gpus
    if gpus < required["gpus"]:
        why = (f"{_plural(len(report.idle_gpus), 'GPU')} report a series but did no work during the run "
               f"({', '.join(report.idle_gpus)})") if report.idle_gpus else "is every worker running with the profiler loaded?"
        problems.append(f"{_plural(gpus, 'GPU')} reported, {required['gpus']} required: {why}")
    elif gpus > required["gpus"]:
        problems.append(f"{_plural(gpus, 'GPU')} reported, {required['gpus']} expected: another workload shares this "
                        f"profiler, or coverage.gpus is out of date")
    communicators = len(report.communicators)
    if communicators < required["communicators"]:
        hint = "is the decode pool alive?" if loaded.profile.serving.mode == "disaggregated" else "is every worker pool alive?"
        problems.append(f"{_plural(communicators, 'communicator')} reported, {required['communicators']} required: {hint}")
    return problems
