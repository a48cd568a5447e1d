"""A fast reading of the common answer, a successful instant vector, straight into samples.

A telemetry refresh decodes answers of ten thousand series and more; through the strict reader
(:func:`llm_d_lens.jsonread.loads`: a whole-document parse, then a depth walk) and a per-series
check of the labels, decoding was the larger part of Lens' own time in a refresh. msgspec decodes
the answer into the typed shape below in one pass, checking on the way that every label is a string.

It is only a shortcut, never a second set of rules: whatever it does not accept falls to the strict
reader and the client's checks, which give today's answer or today's coded error.

- Every field is typed and no other is allowed (``forbid_unknown_fields``), so nothing is skipped
  unchecked and nothing can nest deeper than the shape: the strict reader's depth limit cannot be
  reached by an answer this reader accepts.
- The answer's only numbers are the timestamps, so what the strict reader refuses where msgspec reads
  without a word is checked on the decoded answer, not by a pre-scan of the text: msgspec itself
  refuses a literal beyond a double (out of range), bytes that are not UTF-8 and lone surrogates;
  a timestamp of 10^100 or more (where an integer literal of over 100 digits lands) fails the decode
  (a bound msgspec checks as it reads) and steps aside.
- Anything else (an error answer, a scalar, a warning that is not a string, a value that is not a
  number's spelling, a timestamp that is not a number) gets ``None``: the caller reads the answer the
  strict way.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from llm_d_lens.jsonread import MAX_INTEGER_DIGITS
from llm_d_lens.prometheus.client import Sample


#: a timestamp at least this large may have been an integer literal the strict reader refuses (over 100 digits)
_HUGE = 10.0 ** MAX_INTEGER_DIGITS
#: unix seconds, checked by msgspec as it decodes: one beyond +-_HUGE fails the decode, so the strict reader decides
_Seconds = Annotated[float, msgspec.Meta(gt=-_HUGE, lt=_HUGE)]


class _Element(msgspec.Struct, forbid_unknown_fields=True):
    metric: dict[str, str]
    value: tuple[_Seconds, str]  # [unix seconds, the value spelled as Prometheus spells it: "1.5", "NaN", "+Inf"]


class _Data(msgspec.Struct, forbid_unknown_fields=True):
    resultType: str
    result: list[_Element]


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    status: str
    data: _Data
    warnings: list[str] = []
    infos: list[str] = []


_DECODER = msgspec.json.Decoder(_Answer)


def instant_vector(content: bytes) -> list[Sample] | None:
    """The samples of a successful instant-vector answer, or None when the strict reader must decide."""
    try:
        answer = _DECODER.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return None
    if answer.status != "success" or answer.data.resultType != "vector":
        return None
    try:
        # Prometheus spells NaN and infinities "NaN", "+Inf", "-Inf"; float() reads all three
        return [Sample(e.metric, float(e.value[1])) for e in answer.data.result]
    except ValueError:
        return None  # not a number's spelling: the strict path words the error
