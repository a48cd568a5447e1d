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
  their depth, so before it runs :func:`llm_d_lens.jsonread.may_be_refused` scans the text for anything the strict
  reader could refuse there (a number literal with a 3-digit exponent or 100 digits, bytes that are
  not UTF-8), and the decode itself runs a few frames deeper than the strict reader's parser, so
  its recursion limit is reached first. The scan errs only towards the strict reader: a false
  alarm (``"1e400 "`` inside a string) costs the old speed, never a different answer.

``lens cluster snapshot`` writes objects back out, so it reads whole documents (``partial=False``),
with the strict reader as before.
"""

# No ``from __future__ import annotations``: the shapes' annotations are objects when their classes are made, so
# building the decoders below (at import, on every command that reads a cluster) evaluates no strings.
from collections.abc import Callable
from typing import Any, TypedDict

import msgspec

from llm_d_lens.jsonread import may_be_refused


class _Metadata(TypedDict, total=False):
    name: Any
    namespace: Any
    labels: Any
    resourceVersion: Any  # where a watch resumes (an event's object, a List's own metadata)


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
    metadata: Any
    items: list[_Item] | None


class _EventObject(_Item, total=False):
    """A watch event's object: an item, or the ``Status`` of an ERROR event (whose ``status`` is a
    string, which this shape refuses: such an event is read by the strict reader)."""

    code: Any
    message: Any
    reason: Any


class _Event(TypedDict, total=False):
    type: Any
    object: _EventObject | None


_PARTIAL = msgspec.json.Decoder(_List)
_EVENT = msgspec.json.Decoder(_Event)

#: Python frames the partial decode runs below its caller. The strict reader's parser runs about 7
#: frames deeper than its caller (parse_json, loads, json.loads, decode, raw_decode, ...) and msgspec
#: counts nesting against the same recursion limit, so from 16 frames down msgspec gives up on a
#: deep document before the strict reader would: such a document always gets the strict answer.
_PADDING = 16

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


def decode_event(line: bytes | str) -> Any:
    """One watch event line with only the inventory's fields of its object, under the same rules as
    :func:`decode_list` (anything the strict reader could refuse, or msgspec does, is read strictly)."""
    from llm_d_lens.jsonread import loads

    if may_be_refused(line):
        return loads(line)
    try:
        return _deeper(_PADDING, _EVENT.decode, line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return loads(line)


def _deeper(levels: int, call: Callable[[Any], Any], data: Any) -> Any:
    """``call(data)`` run ``levels`` Python frames below this one (see :data:`_PADDING`)."""
    if levels:
        return _deeper(levels - 1, call, data)
    return call(data)
