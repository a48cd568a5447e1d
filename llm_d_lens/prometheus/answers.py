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

:func:`instant_rows` reads the same answer with each series' labels decoded into a Struct of the
labels its query can give (:func:`label_struct`), for a caller that reads every series' key by
attribute and keeps no labels per series (the telemetry refresh); what it refuses is read the strict
way and converted to the same rows (:func:`converted_rows`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec

from llm_d_lens.errors import clip
from llm_d_lens.jsonread import MAX_INTEGER_DIGITS
from llm_d_lens.prometheus.client import Sample, result_of


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
L = TypeVar("L")


#: msgspec's lax reader of a number spelled in a string, over a list: :func:`numbers`' one pass
_NUMBERS = msgspec.json.Decoder(list[float], strict=False)
#: the second item of a pair: a row's value text (``Row.value``), or a (label, value) pair's value
_TEXT, _VALUE = operator.itemgetter(1), operator.attrgetter("value")


def numbers(texts: Sequence[str]) -> list[float]:
    """``float()`` of each of ``texts`` (values as Prometheus spells them: "1.5", "NaN", "+Inf"), read in one pass.

    One ``float()`` call per value was a tenth of Lens' own time in a recorded refresh (twenty thousand values).
    The texts are joined into one JSON array of strings and read by msgspec's number reader, which reads a string
    holding a number (``strict=False``) as ``float()`` does for every spelling it takes, but one: ``"-0"``, an
    integer to it, becomes 0.0 where ``float()`` keeps the sign. Whatever might not come out the same is read one
    ``float()`` at a time instead: a text with a quote or a backslash (it would not stay one string of the array),
    a ``"-0"``, and any spelling msgspec refuses ("+Inf", "1.", "1_0", " 1"). So the numbers are ``float()``'s, and
    a text that is no number is ``float()``'s ``ValueError``.
    """
    if not texts:
        return []
    joined = '","'.join(texts)
    array = f'["{joined}"]'
    if "\\" not in joined and joined.count('"') == 2 * (len(texts) - 1) and '"-0"' not in array:
        try:
            return _NUMBERS.decode(array)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    return list(map(float, texts))


def instant_vector(content: bytes) -> list[Sample] | None:
    """The samples of a successful instant-vector answer, or None when the strict reader must decide."""
    try:
        answer = _DECODER.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return None
    if answer.status != "success" or answer.data.resultType != "vector":
        return None
    result = answer.data.result
    try:
        values = numbers([e.value[1] for e in result])
    except ValueError:
        return None  # not a number's spelling: the strict path words the error
    return [Sample(e.metric, value) for e, value in zip(result, values)]


# -- rows whose labels are decoded into the caller's Struct ---------------------------------------------------------


class Row(msgspec.Struct, Generic[L], forbid_unknown_fields=True, gc=False):
    """One element of an instant vector whose labels are a Struct of the label names its query can give
    (:func:`label_struct`): read by attribute, with no dict built per series."""

    metric: L
    value: tuple[_Seconds, str]  # [unix seconds, the value as Prometheus spells it]


class _ReadRow(Row[L], Generic[L]):
    """A row the strict reader read: its timestamp already checked there, so not bounded again."""

    value: tuple[float, str]


class _RowsData(msgspec.Struct, Generic[L], forbid_unknown_fields=True):
    resultType: str
    result: list[Row[L]]


class _RowsAnswer(msgspec.Struct, Generic[L], forbid_unknown_fields=True):
    status: str
    data: _RowsData[L]
    warnings: list[str] = []
    infos: list[str] = []


@lru_cache(maxsize=64)
def label_struct(fields: tuple[tuple[str, str], ...], closed: bool = True,
                 choices: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> type[msgspec.Struct]:
    """A Struct with one string attribute per ``(attribute, label name)``, "" where the series lacks the label.

    A query that groups by known labels can only answer those (plus what it copies in): decoding them
    into fixed attributes skips a dict per series and lets a caller read a series' key with one
    ``operator.attrgetter``. ``closed``: a label outside ``fields`` fails the decode; otherwise it is
    skipped (a selector of stored series, which a store may give labels of its own). ``choices``
    (attribute -> every value it can take) makes those attributes literals: each value is decoded as
    the one string object of ``choices`` (no new string per series, its hash already known), and any
    other value fails the decode. Kept per argument (the whole of what it is made from), so a query
    asked again reuses its type and decoder.
    """
    return _labels_struct(fields, closed, choices)


@lru_cache(maxsize=64)
def tagged_label_structs(tag: str, kinds: tuple[tuple[str, tuple[tuple[str, str], ...]], ...], closed: bool = True,
                         choices: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> dict[str, type[msgspec.Struct]]:
    """One :func:`label_struct`-like Struct per value of the label ``tag`` (``(value, fields)`` in ``kinds``); decoding
    their union reads ``tag`` first and each series into its value's Struct, with only that value's fields.

    For an answer whose series of different names carry different labels (one selector of many recorded
    series): a series is as large as its own labels, not as all the answer's, and its kind is its Struct's
    type. A value of ``tag`` outside ``kinds`` fails the decode. Kept per argument, like :func:`label_struct`.
    """
    return {value: _labels_struct(fields, closed, choices, tag_field=tag, tag=value) for value, fields in kinds}


def _labels_struct(fields: tuple[tuple[str, str], ...], closed: bool, choices: tuple[tuple[str, tuple[str, ...]], ...],
                   **tagged: str) -> type[msgspec.Struct]:
    allowed = dict(choices)
    return msgspec.defstruct(
        "Labels", [(attribute, Literal[(*allowed[attribute], "")] if attribute in allowed else str, "")  # type: ignore[misc]
                   for attribute, _ in fields],
        rename=dict(fields), forbid_unknown_fields=closed, gc=False, **tagged)


def attributes_reader(attributes: Sequence[str]) -> Callable[[Any], tuple[str, ...]]:
    """What reads ``attributes`` off a decoded labels Struct as one tuple (``operator.attrgetter`` alone gives a bare
    value for one attribute)."""
    getter = operator.attrgetter(*attributes)
    return getter if len(attributes) > 1 else (lambda labels: (getter(labels),))  # type: ignore[return-value]


@lru_cache(maxsize=64)
def _rows_decoder(labels: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(_RowsAnswer[labels])  # type: ignore[valid-type]


def instant_rows(content: bytes, labels: type[L]) -> list[Row[L]] | None:
    """The rows of a successful instant-vector answer, labels decoded into ``labels``; None when the strict reader
    must decide (as :func:`instant_vector`: an error, another result type, anything the typed shape refuses)."""
    try:
        answer = _rows_decoder(labels).decode(content)  # type: ignore[arg-type]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return None
    if answer.status != "success" or answer.data.resultType != "vector":
        return None
    return answer.data.result


def present_labels(names: Sequence[str], values: Sequence[str]) -> dict[str, str]:
    """The labels a decoded row has, as Prometheus gives them: each of ``names`` with its value from ``values`` (read
    off a labels Struct in the same order), those the row lacks ("") left out."""
    return dict(filter(_TEXT, zip(names, values)))


def row_numbers(rows: Sequence[Row[Any]]) -> list[float]:
    """Each row's value (:class:`Row`), as :func:`numbers` reads it."""
    return numbers(list(map(_TEXT, map(_VALUE, rows))))


def converted_rows(data: Any, labels: type[L]) -> list[Row[L]]:
    """The rows of ``data`` (a successful answer's ``data`` as the strict reader read it) in the shape of
    :func:`instant_rows`; ValueError says what came instead (a series with a label ``labels`` lacks, say)."""
    result = result_of(data, "vector", "the query gives an instant vector")
    try:
        return msgspec.convert(result, list[_ReadRow[labels]])  # type: ignore[valid-type,return-value]
    except msgspec.ValidationError as exc:
        for item in result if isinstance(result, list) else ():
            metric = item.get("metric") if isinstance(item, dict) else None
            if isinstance(metric, dict) and all(type(k) is str and type(v) is str for k, v in metric.items()):
                try:
                    msgspec.convert(metric, labels)
                except msgspec.ValidationError:  # a label, or a label's value, that ``labels`` does not take
                    raise ValueError(f"a series with labels the query does not ask for: {clip(repr(metric), 200)}") from None
        raise ValueError(f"a malformed vector ({exc})") from None
