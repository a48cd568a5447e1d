"""A small async client for Prometheus' instant- and range-query APIs.

Queries go out as form-encoded POSTs (Lens' generated queries are long), each with a timeout.
Whatever goes wrong comes back as one of the errors in :mod:`llm_d_lens.prometheus.errors`, its
message naming the server and the query (cut to a few hundred characters; the whole query is in
``details``) and, when Prometheus refused or failed the query, Prometheus' own error text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import SplitResult, urlsplit

import msgspec

from llm_d_lens.errors import LensError, clip
from llm_d_lens.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusQueryFailed,
    PrometheusResponseInvalid,
    PrometheusTimeout,
    PrometheusUnreachable,
    PrometheusUrlInvalid,
)

if TYPE_CHECKING:
    import httpx

    from llm_d_lens.prometheus.answers import Row

DEFAULT_TIMEOUT = 10.0
MAX_IN_FLIGHT = 4
#: Characters of a query quoted in an error; the rest is in ``details``.
_QUERY_SHOWN = 300
T = TypeVar("T")
L = TypeVar("L")


class Sample(msgspec.Struct, frozen=True):
    """One element of an instant vector (a msgspec Struct: a refresh builds tens of thousands per answer, and a
    Struct is built several times faster than a frozen dataclass)."""

    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    """One element of a range vector: a labelled series of ``(unix seconds, value)`` points."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


def split_http_url(url: str) -> SplitResult | None:
    """The parts of an http(s) URL with a host and a valid port, or None (never urllib's ValueError)."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - reading it validates it (a non-number or out of range raises)
    except ValueError:
        return None
    return parts if parts.scheme in ("http", "https") and parts.hostname else None


def normalise_url(url: str) -> str:
    """``url`` without a trailing slash, or :class:`PrometheusUrlInvalid` saying what is wrong."""
    parts = split_http_url(url)
    if parts is None:
        raise PrometheusUrlInvalid(
            f"Prometheus URL {url!r} must be http(s)://host[:port][/path], e.g. http://prometheus.monitoring:9090",
            details={"url": url},
        )
    if parts.query or parts.fragment:
        raise PrometheusUrlInvalid(f"Prometheus URL {url!r} must not carry a query or fragment", details={"url": url})
    return url.strip().rstrip("/")


class PrometheusClient:
    """Instant queries against one Prometheus; counts what it sends so callers can report it."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
    ):
        import httpx

        self.url = normalise_url(url)
        self.timeout = timeout
        self.queries_sent = 0
        # Prometheus evaluates on a few cores; more queries in flight than that only queue up in
        # the connection pool, where httpx spends time scanning connections
        self._slots = asyncio.Semaphore(max_in_flight)
        self._http = httpx.AsyncClient(
            base_url=self.url, timeout=httpx.Timeout(timeout), transport=transport, headers=dict(headers or {}),
            limits=httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight),
        )

    async def __aenter__(self) -> PrometheusClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def query(self, promql: str, at: float | None = None) -> list[Sample]:
        """The instant vector ``promql`` evaluates to (a scalar becomes one unlabelled sample)."""
        return self._result(await self._post("/api/v1/query", _instant_form(promql, at), promql), promql)

    async def query_rows(self, promql: str, labels: type[L], at: float | None = None) -> list[Row[L]]:
        """The instant vector ``promql`` evaluates to, each series' labels decoded into ``labels``
        (:func:`.answers.label_struct` of every label the query can give): for the largest answers Lens reads,
        where a dict per series and a pass to pick each series' key out of it were most of Lens' own time.

        Whatever the typed decode refuses is read the strict way, as :meth:`query` reads it, and converted to the
        same rows; a series with a label a closed ``labels`` lacks is :class:`PrometheusResponseInvalid` (an open
        one skips it).
        """
        from llm_d_lens.prometheus.answers import converted_rows, instant_rows

        response = await self._post("/api/v1/query", _instant_form(promql, at), promql)
        rows = instant_rows(response.content, labels)
        if rows is not None:
            return rows
        data = self._data(response, promql)
        try:
            return converted_rows(data, labels)
        except ValueError as exc:
            raise self.answered_invalid(exc, promql) from None

    async def query_range(self, promql: str, start: float, end: float, step: float) -> list[Series]:
        """The range vector ``promql`` evaluates to from ``start`` to ``end`` every ``step`` seconds."""
        form = {"query": promql, "start": repr(float(start)), "end": repr(float(end)), "step": repr(float(step))}
        response = await self._post("/api/v1/query_range", form, promql)
        data = self._data(response, promql)
        try:
            return _series(data)
        except ValueError as exc:
            raise self.answered_invalid(exc, promql) from None

    async def _post(self, path: str, form: dict[str, str], promql: str) -> httpx.Response:
        import httpx

        self.queries_sent += 1
        try:
            async with self._slots:
                return await self._http.post(path, data=form)
        except httpx.TimeoutException:
            raise self._error(PrometheusTimeout, f"Prometheus at {self.url} did not answer within {self.timeout:g} s",
                              promql) from None
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise self._error(PrometheusUnreachable, f"cannot reach Prometheus at {self.url}: {reason}", promql) from None

    async def targets(self) -> list[dict[str, Any]]:
        """Prometheus' active scrape targets (``/api/v1/targets``): labels, discovered labels, scrape URL, health."""
        import httpx

        what = "/api/v1/targets"
        try:
            async with self._slots:
                response = await self._http.get(what, params={"state": "active"})
        except httpx.TimeoutException:
            raise self._error(PrometheusTimeout, f"Prometheus at {self.url} did not answer within {self.timeout:g} s", what) from None
        except httpx.HTTPError as exc:
            raise self._error(PrometheusUnreachable, f"cannot reach Prometheus at {self.url}: {str(exc) or type(exc).__name__}",
                              what) from None
        try:
            body = response.json()
            active = body["data"]["activeTargets"]
        except (ValueError, KeyError, TypeError):
            raise self._error(PrometheusResponseInvalid, f"{self.url} answered HTTP {response.status_code} without "
                              "data.activeTargets (is the URL the Prometheus server's root?)", what) from None
        if not isinstance(active, list):
            raise self._error(PrometheusResponseInvalid, f"{self.url}: data.activeTargets is not a list", what)
        return [t for t in active if isinstance(t, dict)]

    def answered_invalid(self, what: object, promql: str) -> LensError:
        """:class:`PrometheusResponseInvalid` for an answer to ``promql`` that is not what the query gives: ``what``
        came instead (a caller reading the rows further says it too, with the query shown as every error shows it)."""
        return self._error(PrometheusResponseInvalid, f"Prometheus at {self.url} answered {what}", promql)

    def _error(self, kind: type[LensError], text: str, promql: str, **details: Any) -> LensError:
        """``kind`` whose message ends with the query, so a user sees which one failed where."""
        shown = promql if len(promql) <= _QUERY_SHOWN else promql[:_QUERY_SHOWN] + "..."
        return kind(f"{text} (query: {shown})", details={"url": self.url, "query": promql, **details})

    def _result(self, response: httpx.Response, promql: str) -> list[Sample]:
        from llm_d_lens.prometheus.answers import instant_vector

        samples = instant_vector(response.content)  # the common answer, fast; None: read it the strict way
        if samples is not None:
            return samples
        data = self._data(response, promql)
        try:
            return _samples(data)
        except ValueError as exc:
            raise self.answered_invalid(exc, promql) from None

    def _data(self, response: httpx.Response, promql: str) -> Any:
        """The ``data`` of a successful answer; every other answer is the coded error that says why."""
        from llm_d_lens.jsonread import MAX_DEPTH, JsonRefused, loads

        try:
            body = loads(response.content, max_depth=MAX_DEPTH)
        except JsonRefused as exc:
            raise self._error(PrometheusResponseInvalid, f"Prometheus at {self.url} answered JSON Lens does not read: "
                              f"{clip(str(exc))}", promql, status_code=response.status_code) from None
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("status") not in ("success", "error"):
            snippet = response.text[:200].strip().replace("\n", " ")
            raise self._error(
                PrometheusResponseInvalid,
                f"{self.url} answered HTTP {response.status_code} with something that is not the Prometheus API"
                f" (is the URL the Prometheus server's root?): {snippet!r}",
                promql, status_code=response.status_code,
            )
        if body["status"] == "error":
            error_type, error = body.get("errorType", "unknown"), body.get("error", "")
            if error_type == "bad_data":
                raise self._error(PrometheusBadQuery, f"Prometheus at {self.url} rejected the query: {error}", promql,
                                  error_type=error_type, error=error)
            raise self._error(PrometheusQueryFailed, f"Prometheus at {self.url} failed the query ({error_type}): {error}",
                              promql, error_type=error_type, error=error)
        return body.get("data")


def _instant_form(promql: str, at: float | None) -> dict[str, str]:
    """The form of an instant query: ``promql``, at ``at`` (unix seconds) or, without it, the server's now."""
    return {"query": promql} if at is None else {"query": promql, "time": repr(float(at))}


def _samples(data: Any) -> list[Sample]:
    """The samples of an instant vector or scalar; ValueError says what came instead."""
    if not isinstance(data, dict) or "result" not in data:
        raise ValueError("without data.result")
    kind, result = data.get("resultType"), data["result"]
    try:
        if kind == "vector":
            # Prometheus spells NaN and infinities "NaN", "+Inf", "-Inf"; float() reads all three
            return [Sample(_labels(item["metric"]), float(item["value"][1])) for item in result]
        if kind == "scalar":
            return [Sample({}, float(result[1]))]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"a malformed {kind} ({exc})") from None
    raise ValueError(f"a {kind!r} result; Lens asks for instant vectors")


def _labels(metric: Any) -> Mapping[str, str]:
    """A series' labels: an object of names to strings, as Prometheus writes them; TypeError otherwise."""
    if type(metric) is not dict or not all(type(k) is str and type(v) is str for k, v in metric.items()):
        raise TypeError(f"a metric that is not an object of label names to strings: {clip(repr(metric), 80)}")
    return metric


def result_of(data: Any, kind: str, gives: str) -> Any:
    """``data.result`` of a successful answer (``data`` as the strict reader read it) whose ``resultType`` is ``kind``;
    ValueError says what came instead (``gives``: what the query gives, for the message)."""
    if not isinstance(data, dict) or "result" not in data:
        raise ValueError("without data.result")
    if data.get("resultType") != kind:
        raise ValueError(f"a {data.get('resultType')!r} result where {gives}")
    return data["result"]


def _series(data: Any) -> list[Series]:
    """The series of a range vector; ValueError says what came instead."""
    result = result_of(data, "matrix", "a range query gives a matrix")
    try:
        return [
            Series(_labels(item["metric"]), tuple((float(t), float(v)) for t, v in item["values"]))
            for item in result
        ]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"a malformed matrix ({exc})") from None


async def gather_all(*awaitables: Awaitable[T]) -> list[T]:
    """Every result, in order; the first failure cancels the rest and waits for them before it is raised.

    Plain ``asyncio.gather`` leaves the siblings running: they outlive the client, and the
    interpreter warns about never-awaited coroutines on the user's terminal.
    """
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
