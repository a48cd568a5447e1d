"""Reading JSON from anything a user hands Lens (profiles, snapshots, kubectl output, Prometheus answers).

Python's ``json`` accepts what no Kubernetes object or profile can hold and fails on some of it
with a bare ``ValueError``: ``NaN`` and ``Infinity`` are read as floats, ``1e400`` silently
becomes infinity, an integer literal over the interpreter's 4,300-digit limit raises
``ValueError`` mid-parse, a repeated key keeps its last value without a word, and deep nesting
raises ``RecursionError``. :func:`loads` refuses each of them with :class:`JsonRefused`, which
lists every offending value with its JSON path (``$.items[3].status.capacity.cpu``), so the caller
can name file, path and value in its own coded error.

The numeric policy (see ``docs/limits.md``): every number Lens reads is finite; an integer literal
is at most :data:`MAX_INTEGER_DIGITS` digits (a 64-bit value has 20, so nothing real is refused,
and the interpreter's own limit is never reached). Counts and sizes are bounded further where they
are read (:mod:`llm_d_lens.cluster.quantity`). The common path costs almost nothing: only
constants and floats go through a hook (rare in cluster objects); the slow explaining parse runs
only once something was found.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from typing import Any

import msgspec

#: digits an integer literal may have: far above the 20 of a 64-bit value, far below Python's 4,300
MAX_INTEGER_DIGITS = 100
#: how deep arrays and objects may nest (a Kubernetes object is under 30 deep); deeper is refused
MAX_DEPTH = 200


class Finding(msgspec.Struct, frozen=True):
    """One value :func:`loads` refuses: where it is, what is wrong, and (a short form of) the value."""

    path: str
    message: str
    value: str

    def __str__(self) -> str:
        return f"{self.path}: {self.value} {self.message}"


class JsonRefused(ValueError):
    """The text is JSON, but holds values Lens does not read; ``findings`` names each one."""

    def __init__(self, findings: list[Finding]):
        self.findings = findings
        super().__init__("; ".join(str(f) for f in findings))


class _Refused:
    """Stands in, during the parse, for a value that will be reported."""

    __slots__ = ("text", "message")

    def __init__(self, text: str, message: str):
        self.text, self.message = text, message


class _Repeats(dict):  # type: ignore[type-arg]
    """An object one of whose keys appears twice; ``repeated`` lists those keys."""

    repeated: list[str]


def short(text: str, limit: int = 40) -> str:
    """A literal as a message shows it: long ones cut in the middle, their length said."""
    if len(text) <= limit:
        return text
    return f"{text[:16]}...{text[-8:]} ({len(text)} characters)"


def loads(data: str | bytes, *, reject_repeats: bool = False, max_depth: int | None = None) -> Any:
    """``json.loads`` under the policy above.

    Raises :class:`json.JSONDecodeError` for text that is not JSON (and ``UnicodeDecodeError`` for
    bytes that are not UTF-8), as ``json.loads`` does, and :class:`JsonRefused` for JSON holding a
    refused value. ``reject_repeats`` also refuses an object that repeats a key (profiles:
    last-wins would silently drop what a vendor wrote first). ``max_depth`` (say :data:`MAX_DEPTH`)
    also refuses nesting deeper than that, for readers that walk the document recursively; the
    parser's own recursion limit is always reported as a finding, never a ``RecursionError``.
    """
    found: list[bool] = []

    def constant(text: str) -> _Refused:
        found.append(True)
        return _Refused(text, "is not a finite number")

    def decimal(text: str) -> Any:
        value = float(text)
        if math.isinf(value):
            found.append(True)
            return _Refused(short(text), "is not a finite number (beyond the range of a double)")
        return value

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(items)
        if len(result) != len(items):
            found.append(True)
            repeats = _Repeats(result)
            seen: set[str] = set()
            repeats.repeated = [k for k, _ in items if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
            return repeats
        return result

    hooks: dict[str, Any] = {"parse_constant": constant, "parse_float": decimal}
    if reject_repeats:
        hooks["object_pairs_hook"] = pairs
    try:
        document = json.loads(data, **hooks)
    except RecursionError:
        raise JsonRefused([Finding("$", "is nested too deeply to read", "the document")]) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
        # the interpreter's digit limit: parse again, this time reading every integer, to say where
        def integer(text: str) -> Any:
            if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
                found.append(True)
                return _Refused(short(text), f"is an integer literal over {MAX_INTEGER_DIGITS} digits")
            return int(text)

        document = json.loads(data, parse_int=integer, **hooks)
    if found:
        raise JsonRefused(_explain(document))
    depth = None if max_depth is None else _too_deep(document, max_depth)
    if depth is not None:
        raise JsonRefused([Finding(short(depth, 60), f"nests deeper than {max_depth} levels", "the value")])
    return document


def _explain(document: Any) -> list[Finding]:
    findings: list[Finding] = []
    stack: list[tuple[str, Any]] = [("$", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Refused):
            findings.append(Finding(path, value.message, value.text))
        elif isinstance(value, dict):
            for key in getattr(value, "repeated", ()):
                findings.append(Finding(f"{path}.{key}" if _plain(key) else f"{path}[{json.dumps(key)}]",
                                        "appears twice in one object; only one value can be meant", json.dumps(key)))
            stack.extend((f"{path}.{k}" if _plain(k) else f"{path}[{json.dumps(k)}]", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return findings


def _plain(key: str) -> bool:
    """A key written ``.key`` in a path (as :func:`llm_d_lens.hardware.schema.json_path` does), else ``["key"]``."""
    return key.replace("_", "a").replace("-", "a").isalnum() and key.isascii()


def _too_deep(document: Any, max_depth: int) -> str | None:
    """The path of the first value nested deeper than ``max_depth``, without recursing.

    Most documents are far shallower than the limit, so one level at a time is walked first,
    building no path (a path string for every object and list was a third of decoding a large
    Prometheus answer); only a document that does nest too deep is walked again for its path.
    """
    level = [document] if isinstance(document, (dict, list)) else []
    for _ in range(max_depth):
        if not level:
            return None
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c) if isinstance(v, (dict, list))]
    return _first_too_deep(document, max_depth) if level else None


def _first_too_deep(document: Any, max_depth: int) -> str:
    """The path :func:`_too_deep` reports: the first too-deep value in a depth-first walk, last child first."""
    stack: list[tuple[Any, int, str]] = [(document, 0, "$")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict):
            if depth >= max_depth:
                return path
            stack.extend((v, depth + 1, f"{path}.{k}") for k, v in value.items() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            if depth >= max_depth:
                return path
            stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(value) if isinstance(v, (dict, list)))
    raise AssertionError("a value nests deeper than the limit, yet the walk found none")  # pragma: no cover


# -- a pre-scan for the fast readers -------------------------------------------------------------
#
# A fast reader (msgspec, decoding only the fields it needs) skips what it does not read without
# checking it; before one is trusted, :func:`may_be_refused` tells whether the text may hold
# anything :func:`loads` refuses, so the strict answer is never changed by speed.

# What the strict reader refuses in valid JSON, found in the text mapped onto a few classes, so that
# C-speed translation, substring and regex searches find it: digit -> 0, e/E -> e, + -> +, the end
# of a number (, ] }) -> ; and the rest -> x, with whitespace and the other letters deleted (no number
# holds them, and whitespace is most of kubectl's indented output).
#: a literal that can be beyond a double (1e309, 1.5E+400) or is an integer of over 4,300 digits:
#: an exponent of 3 or more digits that ends the number, or any run of 100 digits
_TABLE = bytes(
    ord("0") if 48 <= b <= 57 else ord("e") if b in b"eE" else ord("+") if b == ord("+")
    else ord(";") if b in b",]}" else ord("x") for b in range(256))
_DELETE = bytes(b for b in range(128) if (chr(b).isalpha() and chr(b) not in "eE") or chr(b) in " \t\r\n")
_EXPONENT = re.compile(rb"0e\+?000+;")
_DIGITS = b"0" * 100
_CHUNK = 64 * 1024  # small enough that each chunk is translated and searched while it sits in the CPU cache
#: classes each chunk carries over from the one before: longer than any match above can be
_CARRY = 128


def may_be_refused(data: bytes | str) -> bool:
    """Whether the text may hold a value the strict reader refuses where msgspec would not look.

    True for a number literal that may be infinite as a double or over the interpreter's integer
    digit limit (or looks like one inside a string), and for bytes that are not UTF-8. False means
    the strict reader refuses nothing msgspec accepts, recursion depth aside (see :data:`_PADDING`).
    """
    utf8 = codecs.getincrementaldecoder("utf-8")() if isinstance(data, bytes) else None
    carried = b""
    for start in range(0, len(data), _CHUNK):
        piece = data[start:start + _CHUNK]
        if isinstance(piece, str):
            piece = piece.encode("utf-8", "surrogatepass")
        elif utf8 is not None and (utf8.getstate()[0] or not piece.isascii()):
            try:  # each byte once; a sequence cut by the chunk's end waits in the decoder for the rest
                utf8.decode(piece)
            except UnicodeDecodeError:
                return True
        classes = carried + piece.translate(_TABLE, _DELETE)
        if _DIGITS in classes or _EXPONENT.search(classes):
            return True
        carried = classes[-_CARRY:]
    if utf8 is not None:
        try:
            utf8.decode(b"", final=True)  # a sequence the text ends in the middle of
        except UnicodeDecodeError:
            return True
    return False
