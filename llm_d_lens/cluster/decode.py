"""Decode only the fields the inventory reads from a ``List`` document, straight into plain dicts.

A node's images and a pod's env, probes, volumes and container statuses are most of a snapshot's
bytes, and the inventory never looks at them. msgspec decodes into the typed shape below and skips
every key it is not asked for without building it, so a 5,000-node snapshot parses in well under
the time a whole-document parser needs, and the parsed cluster is a fraction of the file's size
(so holding the raw bytes during the parse no longer doubles the peak).

The shape is only an optimisation, never a second set of rules: every leaf the inventory checks is
typed ``Any`` and keeps its JSON value, so the inventory's own checks (and their coded errors naming
the file, the JSON path and the value) run exactly as on a whole document. Where the data does not
fit the shape at all (an item that is not an object, invalid JSON, ``NaN``), :func:`decode_list`
decodes the whole document the old way instead, which either raises today's error or yields the
objects in full: the result never depends on which path was taken.

``lens cluster snapshot`` writes objects back out, so it decodes whole documents (``partial=False``).
"""

from __future__ import annotations

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
_WHOLE = msgspec.json.Decoder()


def decode_list(data: bytes | str, *, partial: bool = True) -> Any:
    """A ``List`` document, with only the inventory's fields when ``partial``.

    Raises what :func:`json.loads` raises (``JSONDecodeError``, ``UnicodeDecodeError``,
    ``RecursionError``) on input that is not JSON, so callers word errors as they always have.
    """
    from llm_d_lens.cluster.snapshot import gc_paused, parse_json

    try:
        with gc_paused():
            return (_PARTIAL if partial else _WHOLE).decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        # Not the shape (or not JSON msgspec reads, such as NaN): the whole document, the old way,
        # gives either the error the user has always seen or the objects as they are.
        return parse_json(data)
