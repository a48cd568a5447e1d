"""The fast reading of instant vectors answers exactly what the strict reader answers, or steps aside.

Each answer below goes through the client twice, through a fake Prometheus: once as it is, once
with the fast reading switched off (the strict reader and the client's checks alone, as before).
The samples, or the coded error and its message, must be the same; and the fast reading must
have stepped aside (``None``) for every answer the strict way refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any, Union

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_d_lens.errors import LensError
from llm_d_lens.prometheus import answers
from llm_d_lens.prometheus.answers import instant_vector
from llm_d_lens.prometheus.client import PrometheusClient, Sample


def vector(*items: str, extra: str = "") -> bytes:
    return ('{"status":"success","data":{"resultType":"vector","result":[' + ",".join(items) + "]}" + extra + "}").encode()


ROW = '{"metric":{"gpu":"0","Hostname":"n1"},"value":[1700000000.123,"0.5"]}'
ACCEPTED = {
    "rows": vector(ROW, '{"metric":{},"value":[1700000000,"NaN"]}', '{"metric":{"a":"b"},"value":[1,"+Inf"]}',
                   '{"metric":{"a":"b"},"value":[1,"-Inf"]}'),
    "empty": vector(),
    "a repeated label keeps the last, as json does": vector('{"metric":{"a":"1","a":"2"},"value":[1,"3"]}'),
    "warnings": vector(ROW, extra=',"warnings":["w"]'),
    "unicode": vector('{"metric":{"pod":"caf\\u00e9 \u00fc"},"value":[1,"1e-3"]}'),
}
REFUSED = {
    "a timestamp beyond a double": vector('{"metric":{},"value":[1e400,"1"]}'),
    "an integer of 120 digits": vector('{"metric":{},"value":[' + "1" * 120 + ',"1"]}'),
    "an integer of 101 digits": vector('{"metric":{},"value":[1' + "0" * 100 + ',"1"]}'),
    "a negative integer of 120 digits": vector('{"metric":{},"value":[-' + "9" * 120 + ',"1"]}'),
    "a NaN literal": vector('{"metric":{},"value":[NaN,"1"]}'),
    "a label that is a number": vector('{"metric":{"gpu":0},"value":[1,"1"]}'),
    "a value that is no number": vector('{"metric":{},"value":[1,"high"]}'),
    "a value that is a number, not a string": vector('{"metric":{},"value":[1,1]}'),
    "a third element": vector('{"metric":{},"value":[1,"1","x"]}'),
    "nesting past the limit in a field Lens does not read": vector(extra=',"stats":' + "[" * 300 + "]" * 300),
    "bytes that are not UTF-8": vector('{"metric":{"pod":"\xff"},"value":[1,"1"]}').replace(b"\xc3\xbf", b"\xff"),
    "a lone surrogate": vector('{"metric":{"pod":"\\ud800"},"value":[1,"1"]}'),
    "an error": b'{"status":"error","errorType":"bad_data","error":"parse error"}',
    "a scalar": b'{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}',
    "a matrix": b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
    "not JSON": b"<html>proxy</html>",
    "a list": b"[]",
}


def client_outcome(content: bytes, ask: Any, shape: Any) -> object:
    """What ``ask(client)`` gives for a Prometheus answering ``content``, each result ``shape``d, or the coded error."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=content))

    async def run():
        async with PrometheusClient("http://prometheus.test:9090", transport=transport) as client:
            return await ask(client)
    try:
        return [shape(result) for result in asyncio.run(run())]
    except LensError as exc:
        return (exc.code, exc.message)


@contextlib.contextmanager
def switched_off(monkeypatch: pytest.MonkeyPatch | None, typed_decode: str, stub: Any) -> Iterator[None]:
    """With ``monkeypatch``, ``answers.<typed_decode>`` answers ``stub`` (None: the strict reader reads instead)."""
    if monkeypatch is None:
        yield
        return
    monkeypatch.setattr(answers, typed_decode, stub)
    try:
        yield
    finally:
        monkeypatch.undo()


def outcome(content: bytes, monkeypatch: pytest.MonkeyPatch | None = None) -> object:
    """The samples (labels in order, values spelled out) or the coded error the client gives for ``content``."""
    with switched_off(monkeypatch, "instant_vector", lambda content: None):
        return client_outcome(content, lambda client: client.query("up"), lambda s: (tuple(s.labels.items()), repr(s.value)))


@pytest.mark.parametrize("name", ACCEPTED)
def test_an_accepted_answer_reads_as_the_strict_reader_reads_it(name, monkeypatch):
    content = ACCEPTED[name]
    assert instant_vector(content) is not None
    assert outcome(content) == outcome(content, monkeypatch)
    assert outcome(content) == [(tuple(e["metric"].items()), repr(float(e["value"][1])))
                                for e in json.loads(content)["data"]["result"]]


@pytest.mark.parametrize("name", REFUSED)
def test_whatever_the_fast_reading_does_not_accept_gets_todays_answer(name, monkeypatch):
    content = REFUSED[name]
    assert instant_vector(content) is None
    assert outcome(content) == outcome(content, monkeypatch)


def test_the_refusals_are_the_coded_errors_users_saw():
    assert outcome(REFUSED["a timestamp beyond a double"])[0] == "PROMETHEUS_RESPONSE_INVALID"
    assert "nests deeper than 200 levels" in outcome(REFUSED["nesting past the limit in a field Lens does not read"])[1]
    assert outcome(REFUSED["an error"])[0] == "PROMETHEUS_BAD_QUERY"
    assert outcome(REFUSED["a scalar"]) == [((), "2.0")]  # not refused: read the strict way


def test_values_keep_their_meaning():
    samples = instant_vector(ACCEPTED["rows"])
    assert samples is not None and samples[0] == Sample({"gpu": "0", "Hostname": "n1"}, 0.5)
    assert math.isnan(samples[1].value) and [s.value for s in samples[2:]] == [math.inf, -math.inf]


def _same(read: float, expected: float) -> bool:
    """The same float, the sign of a zero or of a NaN included."""
    return (math.isnan(read) and math.isnan(expected) or read == expected) and math.copysign(1, read) == math.copysign(1, expected)


def _floats_or_error(texts: list[str]) -> list[float] | type[ValueError]:
    try:
        return [float(text) for text in texts]
    except ValueError:
        return ValueError


def _numbers_or_error(texts: list[str]) -> list[float] | type[ValueError]:
    try:
        return answers.numbers(texts)
    except ValueError:
        return ValueError


#: how servers and exporters spell numbers (Go's 'f' and 'g' formats, Python's repr, C's %.17g), and what none does
_SPELLINGS = st.one_of(
    st.floats().flatmap(lambda f: st.sampled_from([repr(f), f"{f:.17g}", f"{f:g}", f"{f:f}", f"{f:e}", f"{f:E}"])),
    st.sampled_from(["NaN", "+Inf", "-Inf", "-0", "-0.0", "0", "-nan", "inf", "1.", ".5", "01", "1_0", " 1", "1e400",
                     "\\u0031", '1", "2', "", "x"]),
    st.text(alphabet="0123456789+-.eEinfatyINFATY_ \\\"", max_size=8),
    st.integers().map(str),
)


@given(st.lists(_SPELLINGS, max_size=12))
@settings(max_examples=400, deadline=None)
def test_numbers_reads_every_value_as_float_does(texts):
    """The one pass over an answer's values gives float()'s numbers (a negative zero's sign and a NaN's too), and
    float()'s ValueError for a text that is no number."""
    expected, read = _floats_or_error(texts), _numbers_or_error(texts)
    if expected is ValueError:
        assert read is ValueError
    else:
        assert read is not ValueError and len(read) == len(expected)
        assert all(_same(r, e) for r, e in zip(read, expected)), (texts, read, expected)


def test_numbers_keeps_what_one_array_cannot_hold_apart():
    # a text that would end its string early, or escape a character, must not become other numbers
    assert _numbers_or_error(['1","2']) is ValueError and _numbers_or_error(["\\u0031"]) is ValueError
    assert math.copysign(1, answers.numbers(["1", "-0", "2"])[1]) == -1.0  # msgspec reads "-0" as an integer: 0.0
    assert answers.numbers(["+Inf", "1.5"]) == [math.inf, 1.5] and answers.numbers([]) == []


# -- rows whose labels are decoded into a Struct (PrometheusClient.query_rows) ---------------------------------------

LABELS = answers.label_struct((("gpu", "gpu"), ("host", "Hostname"), ("a", "a"), ("pod", "pod")))


def rows_outcome(content: bytes, monkeypatch: pytest.MonkeyPatch | None = None) -> object:
    """The rows (labels present, value as spelled) or the coded error ``query_rows`` gives for ``content``;
    with ``monkeypatch``, the typed decode is switched off (the strict reader, then the conversion)."""
    fields = (("gpu", "gpu"), ("host", "Hostname"), ("a", "a"), ("pod", "pod"))
    with switched_off(monkeypatch, "instant_rows", lambda content, labels: None):
        return client_outcome(content, lambda client: client.query_rows("up", LABELS),
                              lambda r: ({name: getattr(r.metric, a) for a, name in fields if getattr(r.metric, a)}, r.value[1]))


@pytest.mark.parametrize("name", ACCEPTED)
def test_typed_rows_read_what_the_strict_reader_reads(name, monkeypatch):
    content = ACCEPTED[name]
    assert answers.instant_rows(content, LABELS) is not None
    assert rows_outcome(content) == rows_outcome(content, monkeypatch)
    assert rows_outcome(content) == [(e["metric"], e["value"][1]) for e in json.loads(content)["data"]["result"]]


@pytest.mark.parametrize("name", [name for name in REFUSED if name != "a value that is no number"])
def test_whatever_the_typed_rows_refuse_goes_the_strict_way(name):
    assert answers.instant_rows(REFUSED[name], LABELS) is None


def test_typed_rows_leave_the_value_as_spelled_for_the_caller_to_read():
    assert rows_outcome(REFUSED["a value that is no number"]) == [({}, "high")]
    assert rows_outcome(REFUSED["an integer of 120 digits"]) == [({}, "1")]  # the strict reader's, as query() reads it


@pytest.mark.parametrize("name", ["an error", "nesting past the limit in a field Lens does not read", "not JSON", "a list",
                                  "a NaN literal"])
def test_the_strict_readers_refusals_are_the_errors_query_gives(name):
    assert rows_outcome(REFUSED[name]) == outcome(REFUSED[name])
    assert isinstance(rows_outcome(REFUSED[name]), tuple)


def test_a_label_the_struct_lacks_or_another_result_type_is_a_coded_error():
    unasked = rows_outcome(vector('{"metric":{"gpu":"0","zone":"z"},"value":[1,"1"]}'))
    assert unasked == ("PROMETHEUS_RESPONSE_INVALID", "Prometheus at http://prometheus.test:9090 answered a series with labels "
                       "the query does not ask for: {'gpu': '0', 'zone': 'z'} (query: up)")
    scalar = rows_outcome(REFUSED["a scalar"])
    assert scalar[0] == "PROMETHEUS_RESPONSE_INVALID" and "a 'scalar' result where the query gives an instant vector" in scalar[1]
    label_number = rows_outcome(REFUSED["a label that is a number"])
    assert label_number[0] == "PROMETHEUS_RESPONSE_INVALID" and "a malformed vector" in label_number[1]


def test_tagged_label_structs_decode_each_series_into_its_names_struct():
    structs = answers.tagged_label_structs("__name__", (("up", (("job", "job"),)), ("temp", (("gpu", "gpu"), ("host", "Hostname")))),
                                           closed=False)
    union = Union[tuple(structs.values())]  # noqa: UP007
    content = vector('{"metric":{"__name__":"temp","gpu":"1","zone":"z"},"value":[1,"40"]}',
                     '{"metric":{"__name__":"up","job":"dcgm"},"value":[1,"1"]}')
    rows = answers.instant_rows(content, union)
    assert rows is not None and [type(r.metric) for r in rows] == [structs["temp"], structs["up"]]
    assert (rows[0].metric.gpu, rows[0].metric.host, rows[1].metric.job) == ("1", "", "dcgm")  # zone: not asked, skipped
    assert answers.instant_rows(vector('{"metric":{"__name__":"other"},"value":[1,"1"]}'), union) is None
