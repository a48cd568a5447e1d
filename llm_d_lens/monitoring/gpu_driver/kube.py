"""Reading the cluster: the server version and the few object lists drivers need, fetched once each.

Reads go through the runner's ``arun`` with ``-o json``; nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.k8s.objects import items
from llm_d_lens.k8s.version import server_version_of
from llm_d_lens.runner import Runner

VERSION_ARGV = ["kubectl", "version", "-o", "json"]
NODES_ARGV = ["kubectl", "get", "nodes", "-o", "json"]
DAEMONSETS_ARGV = ["kubectl", "get", "daemonsets", "--all-namespaces", "-o", "json"]


def pods_argv(namespace: str) -> list[str]:
    return ["kubectl", "get", "pods", "--namespace", namespace, "-o", "json"]


@dataclass
class ClusterView:
    """Lazily fetched, cached reads of one cluster, shared by status and presence in one request."""

    runner: Runner
    #: the cluster's name (``--cluster`` / ``cluster``), which providers receive as ``cluster_id``
    cluster_id: str | None = None
    _version: tuple[tuple[int, int, int], str] | None = None
    _daemonsets: list[dict[str, Any]] | None = None
    _nodes: list[dict[str, Any]] | None = None
    _pods: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    async def server_version(self) -> tuple[tuple[int, int, int], str]:
        if self._version is None:
            result = await self.runner.arun(VERSION_ARGV)
            self._version = server_version_of(result.json(), VERSION_ARGV)
        return self._version

    async def nodes(self, *, fresh: bool = False) -> list[dict[str, Any]]:
        """Cached for status; presence asks for ``fresh`` lists while it waits for a labelled node."""
        if fresh or self._nodes is None:
            result = await self.runner.arun(NODES_ARGV)
            self._nodes = items(result.json())
        return self._nodes

    async def daemonsets(self) -> list[dict[str, Any]]:
        if self._daemonsets is None:
            result = await self.runner.arun(DAEMONSETS_ARGV)
            self._daemonsets = items(result.json())
        return self._daemonsets

    async def pods(self, namespace: str) -> list[dict[str, Any]]:
        if namespace not in self._pods:
            result = await self.runner.arun(pods_argv(namespace))
            self._pods[namespace] = items(result.json())
        return self._pods[namespace]
