"""The fast reading of instant vectors answers exactly what the strict reader answers, or steps aside.

Each answer below goes through the client twice, through a fake Prometheus: once as it is, once
with the fast reading switched off (the strict reader and the client's checks alone, as before).
The samples, or the coded error and its message, must be the same; and the fast reading must
have stepped aside (``None``) for every answer the strict way refuses.
"""

from __future__ import annotations

import asyncio
import json
import math

import httpx
import pytest

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


def outcome(content: bytes, monkeypatch: pytest.MonkeyPatch | None = None) -> object:
    """The samples (labels in order, values spelled out) or the coded error the client gives for ``content``."""
    if monkeypatch is not None:
        monkeypatch.setattr(answers, "instant_vector", lambda content: None)
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=content))

    async def run():
        async with PrometheusClient("http://prometheus.test:9090", transport=transport) as client:
            return await client.query("up")
    try:
        return [(tuple(s.labels.items()), repr(s.value)) for s in asyncio.run(run())]
    except LensError as exc:
        return (exc.code, exc.message)
    finally:
        if monkeypatch is not None:
            monkeypatch.undo()


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
