"""The Prometheus client: answers, Prometheus' own errors, a server that is down or is not Prometheus.

Every error names the server and the query: a user of ``lens telemetry`` or ``lens evaluate
coverage`` sees which query failed where, without a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusQueryFailed,
    PrometheusResponseInvalid,
    PrometheusTimeout,
    PrometheusUnreachable,
    PrometheusUrlInvalid,
)
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, PrometheusServer, free_port, run_prometheus, skip_reason, to_openmetrics

#: two series with one label set once their names are dropped, so arithmetic on both fails to evaluate
SAMPLES = [("lens_probe_a", {"node": "n1"}, 1.0), ("lens_probe_b", {"node": "n1"}, 2.0)]
needs_prometheus = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    if skip_reason():
        pytest.skip(skip_reason() or "")
    with run_prometheus(to_openmetrics(SAMPLES)) as server:
        yield server


def query(url: str, promql: str, at: float | None = BASE_TIMESTAMP, **options):
    async def run():
        async with PrometheusClient(url, **options) as client:
            return await client.query(promql, at)
    return asyncio.run(run())


def mocked(handler) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


@needs_prometheus
def test_a_query_returns_labelled_samples(prometheus):
    rows = query(prometheus.url, "lens_probe_a")
    assert [(dict(r.labels), r.value) for r in rows] == [({"__name__": "lens_probe_a", "node": "n1"}, 1.0)]


@needs_prometheus
@pytest.mark.parametrize("promql", ["sum(lens_probe_a", "sum by ("])
def test_a_query_prometheus_cannot_parse_quotes_prometheus_and_names_server_and_query(prometheus, promql):
    with pytest.raises(PrometheusBadQuery) as caught:
        query(prometheus.url, promql)
    message = caught.value.message
    assert message.startswith(f"Prometheus at {prometheus.url} rejected the query: ")
    assert "rejected the query" in message and "parse error" in message
    assert message.endswith(f"(query: {promql})")
    assert caught.value.details["error_type"] == "bad_data"
    assert caught.value.code == "PROMETHEUS_BAD_QUERY"


@needs_prometheus
def test_a_query_prometheus_cannot_evaluate_quotes_prometheus(prometheus):
    # arithmetic drops the metric name, leaving two series with one label set
    promql = '{__name__=~"lens_probe_a|lens_probe_b", node="n1"} * 1'
    with pytest.raises(PrometheusQueryFailed) as caught:
        query(prometheus.url, promql)
    assert "(execution)" in caught.value.message and "same labelset" in caught.value.message
    assert caught.value.message.startswith(f"Prometheus at {prometheus.url} failed the query")
    assert caught.value.message.endswith(f"(query: {promql})")


@needs_prometheus
def test_a_range_result_is_not_taken_for_a_vector(prometheus):
    with pytest.raises(PrometheusResponseInvalid) as caught:
        query(prometheus.url, "lens_probe_a[5m]")
    assert caught.value.message == (f"Prometheus at {prometheus.url} answered a 'matrix' result; Lens asks for instant "
                                    f"vectors (query: lens_probe_a[5m])")


@needs_prometheus
def test_a_server_path_that_is_not_the_api_is_named(prometheus):
    with pytest.raises(PrometheusResponseInvalid) as caught:
        query(prometheus.url + "/graph", "up")
    assert caught.value.message.startswith(f"{prometheus.url}/graph answered HTTP 404 with something that is not the "
                                           f"Prometheus API (is the URL the Prometheus server's root?)")
    assert caught.value.message.endswith("(query: up)")


def test_prometheus_down_is_unreachable_naming_the_url_and_query():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(PrometheusUnreachable) as caught:
        query(url, "up", timeout=2)
    assert caught.value.message.startswith(f"cannot reach Prometheus at {url}: ")
    assert caught.value.message.endswith("(query: up)")
    assert caught.value.code == "PROMETHEUS_UNREACHABLE" and caught.value.http_status == 502


def test_a_slow_prometheus_times_out_with_the_limit_in_the_message():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(PrometheusTimeout, match=r"did not answer within 2.5 s"):
        query("http://prometheus.test:9090", "up", timeout=2.5, transport=mocked(handler))


def test_something_that_is_not_prometheus_is_said_to_be_so():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html><body>Grafana</body></html>")

    with pytest.raises(PrometheusResponseInvalid, match="not the Prometheus API") as caught:
        query("http://grafana.test", "up", transport=mocked(handler))
    assert "Grafana" in caught.value.message


@pytest.mark.parametrize(
    "answer, error",
    [
        (httpx.ConnectError("connection refused"), PrometheusUnreachable),
        (httpx.ReadTimeout("timed out"), PrometheusTimeout),
        (httpx.Response(502, text="bad gateway"), PrometheusResponseInvalid),
        (httpx.Response(400, json={"status": "error", "errorType": "bad_data", "error": "parse error"}), PrometheusBadQuery),
        (httpx.Response(422, json={"status": "error", "errorType": "execution", "error": "too many samples"}), PrometheusQueryFailed),
        (httpx.Response(200, json={"status": "success", "data": {"resultType": "string", "result": [0, "x"]}}), PrometheusResponseInvalid),
        (httpx.Response(200, json={"status": "success", "data": {}}), PrometheusResponseInvalid),
        (httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": [{"value": [0]}]}}),
         PrometheusResponseInvalid),
    ],
)
def test_every_error_names_the_server_and_the_query(answer, error):
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(answer, Exception):
            raise type(answer)(str(answer), request=request)
        return answer

    with pytest.raises(error) as caught:
        query("http://prometheus.test:9090", 'sum(up{job="x"})', transport=mocked(handler))
    assert "http://prometheus.test:9090" in caught.value.message
    assert caught.value.message.endswith('(query: sum(up{job="x"}))')
    assert caught.value.details["query"] == 'sum(up{job="x"})'


def test_a_long_query_is_cut_in_the_message_and_whole_in_the_details():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"status": "error", "errorType": "bad_data", "error": "parse error"})

    promql = "sum(" + "a" * 400 + ")"
    with pytest.raises(PrometheusBadQuery) as caught:
        query("http://prometheus.test:9090", promql, transport=mocked(handler))
    assert caught.value.message.endswith(f"(query: sum({'a' * 296}...)")
    assert caught.value.details["query"] == promql


def test_queries_go_out_as_form_posts_with_the_time():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, dict(httpx.QueryParams(request.content.decode()))))
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "scalar", "result": [0, "NaN"]}})

    rows = query("http://prometheus.test:9090/prefix/", "vector(1)", at=1767225600.5, transport=mocked(handler))
    assert seen == [("POST", "/prefix/api/v1/query", {"query": "vector(1)", "time": "1767225600.5"})]
    assert len(rows) == 1 and rows[0].value != rows[0].value  # NaN arrives as a float NaN


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://prometheus", "http://", "http://p:9090/?x=1"])
def test_a_url_that_is_not_http_is_refused(url):
    with pytest.raises(PrometheusUrlInvalid):
        PrometheusClient(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9090; rm -rf /", "http://[::1", "http://p:99999", "http://p:x"])
def test_a_url_httpx_cannot_parse_is_refused_naming_it(url):
    """A bad port or bracket is a coded error naming the URL, not httpx's or urllib's traceback."""
    with pytest.raises(PrometheusUrlInvalid) as caught:
        PrometheusClient(url)
    assert repr(url) in str(caught.value)


def test_a_failing_query_cancels_its_siblings_before_the_error_comes_back():
    """Otherwise the siblings outlive the client and the CLI prints 'coroutine ... was never awaited'."""
    from llm_d_lens.prometheus.client import gather_all

    cancelled: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        promql = dict(httpx.QueryParams(request.content.decode()))["query"]
        if promql == "bad(":
            return httpx.Response(400, json={"status": "error", "errorType": "bad_data", "error": "parse error"})
        try:
            await asyncio.Event().wait()  # a query that never answers
        except asyncio.CancelledError:
            cancelled.append(promql)
            raise
        raise AssertionError("unreachable")

    async def run() -> None:
        async with PrometheusClient("http://prometheus.test:9090", transport=mocked(handler)) as client:
            with pytest.raises(PrometheusBadQuery):
                await gather_all(client.query("slow_a"), client.query("bad("), client.query("slow_b"))
            assert sorted(cancelled) == ["slow_a", "slow_b"]

    asyncio.run(run())


def _vector(metric) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": [{"metric": metric, "value": [0, "1"]}]}}


def _matrix(metric) -> dict:
    return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": metric, "values": [[0, "1"]]}]}}


ODD_ANSWERS = [
    ("metric is a list", lambda: httpx.Response(200, json=_vector([])), "not an object of label names to strings"),
    ("metric is null", lambda: httpx.Response(200, json=_vector(None)), "not an object of label names to strings"),
    ("a label value is a number", lambda: httpx.Response(200, json=_vector({"gpu": 0})), "not an object of label names"),
    ("nested past the recursion limit", lambda: httpx.Response(200, content=b'{"status": "success", "data": '
                                                                + b"[" * 100_000 + b"]" * 100_000 + b"}"),
     "nested too deeply"),
    ("nested deeper than Lens reads", lambda: httpx.Response(200, content=b'{"status": "success", "data": '
                                                            + b"[" * 500 + b"]" * 500 + b"}"), "nests deeper than 200"),
    ("a bare NaN", lambda: httpx.Response(200, content=b'{"status": "success", "data": NaN}'), "NaN is not a finite number"),
    ("an integer over the digit limit", lambda: httpx.Response(200, content=b'{"status": "success", "data": '
                                                              + b"9" * 5000 + b"}"), "integer literal over 100 digits"),
]


@pytest.mark.parametrize("name,answer,expected", ODD_ANSWERS, ids=[a[0] for a in ODD_ANSWERS])
@pytest.mark.parametrize("kind", ["query", "query_range"])
def test_an_answer_of_an_odd_shape_is_a_coded_error_not_a_traceback(name, answer, expected, kind):
    def handler(request: httpx.Request) -> httpx.Response:
        response = answer()
        if kind == "query_range" and b'"vector"' in response.content:
            response = httpx.Response(200, json=_matrix(_vector_metric(response)))
        return response

    async def run():
        async with PrometheusClient("http://prometheus.test:9090", transport=mocked(handler)) as client:
            if kind == "query":
                return await client.query("up", 0)
            return await client.query_range("up", 0, 60, 15)

    with pytest.raises(PrometheusResponseInvalid) as caught:
        asyncio.run(run())
    assert expected in caught.value.message and "(query: up)" in caught.value.message


def _vector_metric(response: httpx.Response):
    import json

    return json.loads(response.content)["data"]["result"][0]["metric"]
