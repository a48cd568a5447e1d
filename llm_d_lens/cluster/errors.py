"""Errors of the cluster inventory, each naming the file or command and the object at fault."""

from __future__ import annotations

import json
from typing import Any

from llm_d_lens.errors import LensError, clip, echo


def show_value(value: Any, limit: int = 60) -> str:
    """An offending value as it appears in JSON, shortened for a one-line message."""
    try:  # bounded first (echo), serialised after: a value of a billion shared strings is never walked whole
        text = json.dumps(echo(value, limit, depth=4), sort_keys=True)
    except (TypeError, ValueError):
        text = clip(repr(echo(value, limit, depth=4)), limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_object(item: Any) -> str:
    """``Node gpu-node-3`` or ``Pod llm/vllm-0``: how a user finds the object with kubectl."""
    if not isinstance(item, dict):
        return "object"
    kind = item.get("kind") or "object"
    metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    name = metadata.get("name") or "(unnamed)"
    namespace = metadata.get("namespace")
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


class SnapshotInvalid(LensError):
    """A snapshot file is not what ``kubectl get ... -o json`` writes."""

    code = "CLUSTER_SNAPSHOT_INVALID"
    http_status = 422

    def __init__(self, source: str, problem: str):
        super().__init__(f"{source}: {problem}", details={"source": source, "problem": problem})
        self.source = source


class SnapshotNotFound(LensError):
    code = "CLUSTER_SNAPSHOT_NOT_FOUND"
    http_status = 404


class SnapshotExists(LensError):
    """Writing a snapshot would overwrite a file the user has."""

    code = "CLUSTER_SNAPSHOT_EXISTS"
    http_status = 409


class ObjectInvalid(LensError):
    """One field of one cluster object holds a value the inventory cannot read.

    Raised while building the inventory, before the source is known; :meth:`at` adds the file or
    command the object came from.
    """

    code = "CLUSTER_OBJECT_INVALID"
    http_status = 422

    def __init__(self, item: Any, path: str, value: Any, reason: str, source: str | None = None):
        self.item, self.path, self.value, self.reason, self.source = item, path, value, reason, source
        what = f"{describe_object(item)}: {path}: {show_value(value)} {reason}"
        message = f"{source}: {what}" if source else what
        super().__init__(message, details={"object": describe_object(item), "path": path, "value": value,
                                           "reason": reason, **({"source": source} if source else {})})

    def at(self, source: str) -> ObjectInvalid:
        return ObjectInvalid(self.item, self.path, self.value, self.reason, source)


class ClustersFileInvalid(LensError):
    """The clusters file cannot be used: details name the file, the field path and the value."""

    code = "CLUSTERS_FILE_INVALID"
    http_status = 422


class ClusterUnknown(LensError):
    """A cluster name that is not among the configured clusters."""

    code = "CLUSTER_NOT_FOUND"
    http_status = 404


class LiveClusterNeeded(LensError):
    """An operation that reads or changes workloads asked for a snapshot or the demo."""

    code = "LIVE_CLUSTER_NEEDED"
    http_status = 409


# -- node discovery: a node asked, through a pod on it, what devices it has --------------------
# (the codes keep the PLANNING_ prefix they were published with: `lens plan --discover` reads them)


class DiscoveryOutputInvalid(LensError):
    """A node discovery tool printed something its profile's parser cannot read."""

    code = "PLANNING_DISCOVERY_OUTPUT_INVALID"
    http_status = 422

    def __init__(self, source: str, where: str, reason: str):
        super().__init__(f"{source}: {where}: {reason}", details={"source": source, "where": where, "reason": reason})


class DiscoveryUnavailable(LensError):
    """A profile declares no discovery command, or no pod on the node can run it."""

    code = "PLANNING_DISCOVERY_UNAVAILABLE"
    http_status = 409
