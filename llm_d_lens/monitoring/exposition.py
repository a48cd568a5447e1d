"""Direct snapshots: an exporter's exposition page, parsed with prometheus_client's parser.

Used when there is no Prometheus to ask (or to check an exporter by itself). The parser names every
counter sample ``<family>_total``, even when the exporter wrote the counter without that suffix;
Prometheus keeps the name as written. So a counter sample also answers to its family name, and a
profile's metric names mean the same thing here as in PromQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from llm_d_lens.monitoring.errors import SnapshotInvalid, SnapshotUnreachable
from llm_d_lens.prometheus.client import split_http_url

TARGET_LABEL = "instance"


@dataclass(frozen=True)
class ExpositionSample:
    names: frozenset[str]  # the name as parsed, and the name Prometheus would store
    labels: dict[str, str]
    value: float


def parse_exposition(text: str, source: str) -> list[ExpositionSample]:
    """Every sample on an exposition page; :class:`SnapshotInvalid` names ``source`` when it does not parse."""
    return [sample for _, sample in timed_samples(text, source)]


def timed_samples(text: str, source: str) -> list[tuple[float | None, ExpositionSample]]:
    """Every sample with its timestamp in seconds (None when the line carries none), in page order."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: list[tuple[float | None, ExpositionSample]] = []
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                names = {sample.name}
                if family.type == "counter" and sample.name == f"{family.name}_total":
                    names.add(family.name)
                at = float(sample.timestamp) if sample.timestamp is not None else None
                samples.append((at, ExpositionSample(frozenset(names), dict(sample.labels), float(sample.value))))
    except (ValueError, TypeError, IndexError) as exc:
        raise SnapshotInvalid(f"{source}: not Prometheus exposition text ({exc})", details={"source": source}) from None
    return samples


def with_target_label(samples: list[ExpositionSample], target: str) -> list[ExpositionSample]:
    """Add ``instance`` where the exporter did not set it, as a scrape with honour_labels would."""
    return [
        s if TARGET_LABEL in s.labels else ExpositionSample(s.names, {**s.labels, TARGET_LABEL: target}, s.value)
        for s in samples
    ]


def snapshot_url(url: str, scrape_path: str | None) -> str:
    """The page to fetch: ``url`` as given when it has a path, else the profile's ``scrape_path``."""
    parts = split_http_url(url)
    if parts is None:
        raise SnapshotUnreachable(f"exporter URL {url!r} must be http(s)://host:port[/path]", details={"url": url})
    path = parts.path if parts.path not in ("", "/") else (scrape_path or "/metrics")
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


async def fetch_exposition(url: str, *, timeout: float, transport: Any = None) -> tuple[str, str]:
    """(page text, ``host:port`` of the target) of one exporter page."""
    import httpx

    target = urlsplit(url).netloc
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), transport=transport) as http:
            response = await http.get(url, headers={"Accept": "text/plain;version=0.0.4"})
    except httpx.TimeoutException:
        raise SnapshotUnreachable(f"exporter at {url} did not answer within {timeout:g} s", details={"url": url}) from None
    except httpx.HTTPError as exc:
        raise SnapshotUnreachable(f"cannot reach the exporter at {url}: {exc or type(exc).__name__}", details={"url": url}) from None
    if response.status_code != 200:
        raise SnapshotUnreachable(
            f"exporter at {url} answered HTTP {response.status_code}: {response.text[:200]!r}",
            details={"url": url, "status_code": response.status_code},
        )
    return response.text, target
