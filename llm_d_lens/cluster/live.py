"""Reading a live cluster: five ``kubectl get -o json`` calls through the CommandRunner.

The calls run concurrently. A cluster that does not serve the DRA API (``resource.k8s.io``,
before 1.32 or with the API group off) answers "the server doesn't have a resource type": that is
a cluster without DRA, not an error. Anything else kubectl says (expired credentials, an
unreachable server) is raised as it is, with kubectl's stderr.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from llm_d_lens.cluster.decode import decode_list
from llm_d_lens.cluster.objects import ClusterObjects, Document
from llm_d_lens.cluster.snapshot import refused_values
from llm_d_lens.jsonread import JsonRefused
from llm_d_lens.runner import (
    CommandFailed,
    CommandOutputInvalid,
    Runner,
    format_command,
)

#: What kubectl prints when the API server does not know a resource type.
NO_RESOURCE_TYPE = "the server doesn't have a resource type"


@dataclass(frozen=True)
class Query:
    kind: str
    argv: tuple[str, ...]
    dra: bool = False


QUERIES: tuple[Query, ...] = (
    Query("Node", ("kubectl", "get", "nodes", "-o", "json")),
    Query("Pod", ("kubectl", "get", "pods", "--all-namespaces", "-o", "json")),
    Query("ResourceSlice", ("kubectl", "get", "resourceslices.resource.k8s.io", "-o", "json"), dra=True),
    Query("DeviceClass", ("kubectl", "get", "deviceclasses.resource.k8s.io", "-o", "json"), dra=True),
    Query("ResourceClaim", ("kubectl", "get", "resourceclaims.resource.k8s.io", "--all-namespaces", "-o", "json"), dra=True),
)


async def fetch(runner: Runner, *, timeout: float | None = None, queries: Sequence[Query] = QUERIES,
                partial: bool = False) -> ClusterObjects:
    """Every object the inventory reads, from the cluster the runner's kubeconfig/context points at.

    With ``partial`` only the fields the inventory reads are kept (see :mod:`.decode`); a snapshot
    being saved needs the objects whole.
    """
    # Every call runs to its end: cancelling the others on the first failure would kill kubectl
    # processes mid-flight, and the error shown would depend on which call failed first in time.
    outcomes = await asyncio.gather(*(_get(runner, query, timeout, partial) for query in queries), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    answers = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
    documents = [document for document in answers if document is not None]
    dra_queries = [answer for query, answer in zip(queries, answers, strict=True) if query.dra]
    dra_api = any(answer is not None for answer in dra_queries) if dra_queries else None
    return ClusterObjects.from_documents(documents, dra_api=dra_api)


def fetch_sync(runner: Runner, *, timeout: float | None = None, partial: bool = False) -> ClusterObjects:
    return asyncio.run(fetch(runner, timeout=timeout, partial=partial))


async def _get(runner: Runner, query: Query, timeout: float | None, partial: bool) -> Document | None:
    try:
        result = await runner.arun(list(query.argv), timeout=timeout)
    except CommandFailed as exc:
        if query.dra and NO_RESOURCE_TYPE in exc.stderr:
            return None
        raise
    try:
        body = decode_list(result.stdout, partial=partial)
    except json.JSONDecodeError as exc:
        raise CommandOutputInvalid(result.argv, str(exc)) from None
    except JsonRefused as exc:
        raise CommandOutputInvalid(result.argv, refused_values(exc)) from None
    return Document(f"`{format_command(result.argv)}`", body)
