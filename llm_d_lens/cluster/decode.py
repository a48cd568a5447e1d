"""Decode only the fields the inventory reads from a ``List`` document, straight into plain dicts.

A node's images and a pod's env, probes, volumes and container statuses are most of a snapshot's
bytes, and the inventory never looks at them. msgspec decodes into the typed shape below and skips
every key it is not asked for without building it, so a 5,000-node snapshot parses in well under
the time a whole-document parser needs, and the parsed cluster is a fraction of the file's size
(so holding the raw bytes during the parse no longer doubles the peak).

The shape is only an optimisation, never a second set of rules. Every leaf the inventory checks is
typed ``Any`` and keeps its JSON value, so the inventory's own checks (and their coded errors naming
the file, the JSON path and the value) run exactly as on a whole document. And the document is
accepted only where :func:`llm_d_lens.jsonread.loads` (the strict reader every other input goes
through) would accept it too; everywhere else that reader runs instead and raises today's error:

- whatever msgspec refuses (invalid JSON, ``NaN``, an item that is not an object, a number out of
  range in a field it decodes, nesting past its recursion limit) falls back to the strict reader;
- msgspec skips unread fields without checking their numbers' range, their strings' UTF-8 or
  their depth, so before it runs :func:`may_be_refused` scans the text for anything the strict
  reader could refuse there (a number literal with a 3-digit exponent or 100 digits, bytes that are
  not UTF-8), and the decode itself runs a few frames deeper than the strict reader's parser, so
  its recursion limit is reached first. The scan errs only towards the strict reader: a false
  alarm (``"1e400 "`` inside a string) costs the old speed, never a different answer.

``lens cluster snapshot`` writes objects back out, so it reads whole documents (``partial=False``),
with the strict reader as before.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from typing import Any, TypedDict

import msgspec


class _Metadata(TypedDict, total=False):
    name: Any
    namespace: Any
    labels: Any


class _Container(TypedDict, total=False):
    name: Any
    resources: Any
    restartPolicy: Any


class _Spec(TypedDict, total=False):
    """The union of the spec fields read from Nodes, Pods, ResourceSlices, DeviceClasses and ResourceClaims."""

    unschedulable: Any  # Node
    containers: list[_Container] | None  # Pod
    initContainers: list[_Container] | None  # Pod
    nodeName: Any  # Pod, ResourceSlice
    resourceClaims: Any  # Pod
    driver: Any  # ResourceSlice
    pool: Any  # ResourceSlice
    devices: Any  # ResourceSlice (a list), ResourceClaim (an object)
    extendedResourceName: Any  # DeviceClass
    selectors: Any  # DeviceClass


class _Status(TypedDict, total=False):
    conditions: Any  # Node
    capacity: Any  # Node
    allocatable: Any  # Node
    phase: Any  # Pod
    extendedResourceClaimStatus: Any  # Pod
    allocation: Any  # ResourceClaim
    reservedFor: Any  # ResourceClaim


class _Item(TypedDict, total=False):
    kind: Any
    metadata: _Metadata | None
    spec: _Spec | None
    status: _Status | None


class _List(TypedDict, total=False):
    kind: Any
    items: list[_Item] | None


_PARTIAL = msgspec.json.Decoder(_List)

#: Python frames the partial decode runs below its caller. The strict reader's parser runs about 7
#: frames deeper than its caller (parse_json, loads, json.loads, decode, raw_decode, ...) and msgspec
#: counts nesting against the same recursion limit, so from 16 frames down msgspec gives up on a
#: deep document before the strict reader would: such a document always gets the strict answer.
_PADDING = 16

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


def decode_list(data: bytes | str, *, partial: bool = True) -> Any:
    """A ``List`` document, with only the inventory's fields when ``partial``, or exactly as the strict reader reads it.

    Raises what :func:`llm_d_lens.cluster.snapshot.parse_json` raises (``JSONDecodeError``,
    ``UnicodeDecodeError``, :class:`llm_d_lens.jsonread.JsonRefused`), so callers word errors as
    they always have.
    """
    from llm_d_lens.cluster.snapshot import gc_paused, parse_json

    if not partial or may_be_refused(data):
        return parse_json(data)
    try:
        with gc_paused():
            return _deeper(_PADDING, _PARTIAL.decode, data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        # Not the shape, or not JSON msgspec reads: the strict reader gives either the error the
        # user has always seen or the objects as they are.
        return parse_json(data)


def _deeper(levels: int, call: Callable[[Any], Any], data: Any) -> Any:
    """``call(data)`` run ``levels`` Python frames below this one (see :data:`_PADDING`)."""
    if levels:
        return _deeper(levels - 1, call, data)
    return call(data)
