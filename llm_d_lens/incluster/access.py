"""What one kubectl or helm invocation asks of the API server, in RBAC's words.

Lens only ever reaches the cluster through argv lists (llm_d_lens/runner/), so the permissions it
needs are a function of those argv lists. :func:`accesses_of` is that function for every shape of
call Lens makes; anything else is :class:`CommandUnmapped`, so a new kind of call cannot pass the
least-privilege test before someone decides which role grants it.

Facts the mapping rests on (kubectl 1.32, helm 3):

- ``kubectl get TYPE`` without a name is a ``list``; ``-A``/``--all-namespaces`` lists across
  namespaces. ``kubectl version`` is ``GET /version``. ``kubectl kustomize`` and
  ``kubectl config get-contexts`` are local.
- ``kubectl apply`` (client-side) GETs each object, then ``create``\\ s or ``patch``\\ es it;
  ``--dry-run=server`` is authorised exactly like the real write.
- helm keeps releases in Secrets of the release's namespace (the default ``secret`` storage
  driver): ``helm list``/``helm get values`` list them; ``helm upgrade --install`` lists them,
  creates the new revision, updates the previous one and deletes revisions past ``--history-max``
  (10 by default; its storage driver GETs a record before deleting it); ``--create-namespace``
  creates the namespace.
- ``kubectl auth can-i`` creates a SelfSubjectAccessReview.
- ``kubectl exec`` GETs the pod, then opens its ``pods/exec`` subresource. kubectl 1.31+ does so with
  a WebSocket upgrade, which servers authorise as ``get``, and from Kubernetes 1.35 as ``create``
  too (the older SPDY POST was always ``create``), so it needs both.
- kubectl and helm also read discovery (``/api``, ``/apis``) to map names to resources.
- ``kubectl get --raw PATH`` is one GET of that path, authorised as the API server parses it: a
  collection (``/api/v1/pods``, ``/apis/resource.k8s.io/v1/resourceslices``) is a ``list``, with
  ``?watch=true`` a ``watch``; a path below ``/namespaces/NS/`` acts in that namespace; a discovery
  path (``/apis/resource.k8s.io``) is discovery. The server's watched clusters list and watch this way.

Kubernetes grants every authenticated account discovery (``system:discovery``), ``GET /version``
(``system:public-info-viewer``) and SelfSubjectAccessReviews (``system:basic-user``) through its
default bindings; those needs are :data:`AUTHENTICATED_DEFAULTS`, and Lens's roles do not repeat them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.incluster.errors import CommandUnmapped
from llm_d_lens.incluster.resources import DEFAULT_TABLE, Resource, ResourceTable

#: Scope words for :attr:`Access.scope`.
CLUSTER = "cluster"
ALL_NAMESPACES = "all-namespaces"
DEFAULT_NAMESPACE = "default-namespace"

#: Verbs kubectl apply needs per object.
APPLY_VERBS = ("get", "create", "patch")
#: Verbs helm needs on its release Secrets during ``upgrade --install``.
RELEASE_WRITE_VERBS = ("list", "get", "create", "update", "delete")

#: grants every authenticated account holds through Kubernetes' default ClusterRoleBindings
AUTHENTICATED_DEFAULTS = frozenset({
    ("", "/version", "get"),
    ("authorization.k8s.io", "selfsubjectaccessreviews", "create"),
})

# Flags taking a value as the next item (when not written ``--flag=value``).
_KUBECTL_VALUE_FLAGS = frozenset({
    "--kubeconfig", "--context", "--cluster", "--user", "-n", "--namespace", "-o", "--output", "-l", "--selector",
    "--field-selector", "--request-timeout", "-f", "--filename", "-k", "--kustomize", "--server", "-s",
    "-c", "--container", "--raw",
})
_HELM_VALUE_FLAGS = frozenset({
    "--kubeconfig", "--kube-context", "-n", "--namespace", "-o", "--output", "--filter", "--version", "--repo",
    "--set", "--set-json", "--set-string", "--set-file", "--set-literal", "-f", "--values", "--timeout",
    "--history-max", "--max",
})


@dataclass(frozen=True, order=True)
class Access:
    """One verb on one resource (or a non-resource URL), as an RBAC rule would grant it.

    ``scope`` says where the call acted (a namespace, all of them, or cluster-scoped); it is kept
    for reports and does not take part in comparing grants.
    """

    verb: str
    group: str = ""
    resource: str = ""
    url: str = ""
    scope: str = field(default=CLUSTER, compare=False)

    @property
    def grant(self) -> tuple[str, str, str]:
        """(group, resource, verb) for a resource, ("", url, verb) for a non-resource URL."""
        return ("", self.url, self.verb) if self.url else (self.group, self.resource, self.verb)

    def describe(self) -> str:
        if self.url:
            return f"{self.verb} {self.url}"
        return f"{self.verb} {self.resource}.{self.group or 'core'} ({self.scope})"


@dataclass(frozen=True)
class CommandAccess:
    """The accesses of one invocation; ``opaque`` names manifests Lens does not read itself.

    A helm chart or a ``kubectl apply -k <url>`` reference is applied by the tool, so which kinds
    it writes is a property of that chart or reference, not of the argv; the caller supplies them
    (see :func:`object_accesses`).
    """

    argv: tuple[str, ...]
    accesses: tuple[Access, ...]
    opaque: str | None = None


def accesses_of(argv: Sequence[str], *, input: str | None = None, table: ResourceTable = DEFAULT_TABLE) -> CommandAccess:
    """The API access one kubectl/helm invocation needs; other tools (git, kustomize) need none."""
    tool = os.path.basename(argv[0]) if argv else ""
    if tool == "kubectl":
        return _kubectl(tuple(argv), input, table)
    if tool == "helm":
        return _helm(tuple(argv))
    return CommandAccess(tuple(argv), ())


def object_accesses(objects: Iterable[Mapping[str, Any]], verbs: Sequence[str], *, namespace: str | None = None,
                    where: str = "", table: ResourceTable = DEFAULT_TABLE) -> list[Access]:
    """``verbs`` on the resource of each manifest object, scoped where it would land."""
    found: list[Access] = []
    for obj in objects:
        resource = table.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")), where=where)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        scope = _scope_of(resource, (meta or {}).get("namespace") or namespace)
        found += [Access(verb, resource.group, resource.plural, scope=scope) for verb in verbs]
    return found


# --------------------------------------------------------------------------------------------


def _positionals(args: Sequence[str], value_flags: frozenset[str]) -> list[str]:
    """Arguments that are neither flags nor flag values, in order."""
    out: list[str] = []
    skip = False
    for item in args:
        if skip:
            skip = False
        elif item.startswith("-") and item != "-":
            skip = "=" not in item and item in value_flags
        else:
            out.append(item)
    return out


def _flag(args: Sequence[str], *names: str) -> str | None:
    """The value of the first of ``names`` given as ``--flag value`` or ``--flag=value``."""
    for i, item in enumerate(args):
        flag, eq, value = item.partition("=")
        if flag in names:
            if eq:
                return value
            if i + 1 < len(args):
                return args[i + 1]
    return None


def _has(args: Sequence[str], *names: str) -> bool:
    return any(item.partition("=")[0] in names for item in args)


def _namespace_scope(args: Sequence[str]) -> str:
    if _has(args, "-A", "--all-namespaces"):
        return ALL_NAMESPACES
    return _flag(args, "-n", "--namespace") or DEFAULT_NAMESPACE


def _scope_of(resource: Resource, namespace_scope: str | None) -> str:
    if not resource.namespaced:
        return CLUSTER
    return namespace_scope or DEFAULT_NAMESPACE


def _unmapped(argv: tuple[str, ...], why: str) -> CommandUnmapped:
    from llm_d_lens.runner import format_command

    return CommandUnmapped(
        f"`{format_command(argv)}`: {why}; map it in llm_d_lens/incluster/access.py and grant it in manifests/",
        details={"argv": list(argv)},
    )


def _kubectl(argv: tuple[str, ...], input: str | None, table: ResourceTable) -> CommandAccess:
    args = argv[1:]
    words = _positionals(args, _KUBECTL_VALUE_FLAGS)
    verb = words[0] if words else ""
    if verb == "kustomize" or words[:2] == ["config", "get-contexts"]:  # local: the kubeconfig file only
        return CommandAccess(argv, ())
    if verb == "version":
        if _has(args, "--client"):
            return CommandAccess(argv, ())  # the client's own version: no request is made
        return CommandAccess(argv, (Access("get", url="/version"),))
    if verb == "exec":
        if len(words) < 2:
            raise _unmapped(argv, "kubectl exec without a pod")
        scope = _namespace_scope(args)
        return CommandAccess(argv, (Access("get", "", "pods", scope=scope), Access("get", "", "pods/exec", scope=scope),
                                    Access("create", "", "pods/exec", scope=scope)))
    if verb == "auth" and words[1:2] == ["can-i"]:
        return CommandAccess(argv, (Access("create", "authorization.k8s.io", "selfsubjectaccessreviews"),))
    if verb == "get" and _flag(args, "--raw") is not None:
        return CommandAccess(argv, _raw_get(argv, _flag(args, "--raw") or "", table))
    if verb == "get":
        if len(words) < 2:
            raise _unmapped(argv, "kubectl get without a resource type")
        rbac_verb = "get" if len(words) > 2 else "list"
        scope = _namespace_scope(args)
        accesses = []
        for name in words[1].split(","):
            resource = table.by_name(name)
            accesses.append(Access(rbac_verb, resource.group, resource.plural, scope=_scope_of(resource, scope)))
        return CommandAccess(argv, tuple(accesses))
    if verb == "apply":
        namespace = _flag(args, "-n", "--namespace")
        if _flag(args, "-f", "--filename") == "-":
            import yaml

            objects = [doc for doc in yaml.safe_load_all(input or "") if isinstance(doc, Mapping)]
            if not objects:
                raise _unmapped(argv, "kubectl apply -f - with no objects on stdin")
            return CommandAccess(argv, tuple(object_accesses(objects, APPLY_VERBS, namespace=namespace, where="stdin", table=table)))
        ref = _flag(args, "-f", "--filename", "-k", "--kustomize")
        if ref is None:
            raise _unmapped(argv, "kubectl apply without -f or -k")
        return CommandAccess(argv, (), opaque=ref)
    if verb in ("cordon", "uncordon"):  # the console's node maintenance: kubectl reads the node, then patches spec.unschedulable
        if len(words) < 2:
            raise _unmapped(argv, f"kubectl {verb} without a node")
        return CommandAccess(argv, (Access("get", "", "nodes", scope=CLUSTER), Access("patch", "", "nodes", scope=CLUSTER)))
    raise _unmapped(argv, f"kubectl {verb or '(no subcommand)'} is not a call Lens is known to make")


def _raw_get(argv: tuple[str, ...], url: str, table: ResourceTable) -> tuple[Access, ...]:
    """What ``GET url`` is to RBAC: discovery (nothing to grant), or a verb on a resource."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if not segments or segments[0] not in ("api", "apis"):
        raise _unmapped(argv, f"kubectl get --raw {url} is not an API path")
    rest = segments[1:] if segments[0] == "api" else segments[2:]
    group = "" if segments[0] == "api" else (segments[1] if len(segments) > 1 else "")
    if len(rest) <= 1:  # /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>
        return ()
    rest = rest[1:]  # past the version
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    plural, named = rest[0], len(rest) > 1
    resource = table.by_name(f"{plural}.{group}" if group else plural)
    query = parse_qs(parts.query)
    watching = query.get("watch", ["false"])[-1].lower() in ("1", "true")
    verb = "watch" if watching else "get" if named else "list"
    scope = _scope_of(resource, namespace or ALL_NAMESPACES)
    return (Access(verb, resource.group, resource.plural, scope=scope),)


def _helm(argv: tuple[str, ...]) -> CommandAccess:
    args = argv[1:]
    words = _positionals(args, _HELM_VALUE_FLAGS)
    verb = words[0] if words else ""
    scope = _namespace_scope(args)
    release_reads = (Access("list", "", "secrets", scope=scope),)
    if verb == "version":
        return CommandAccess(argv, ())  # helm's own version: no request is made
    if verb == "list" or (verb == "get" and words[1:2] == ["values"]):
        return CommandAccess(argv, release_reads)
    if verb == "upgrade" and _has(args, "--install", "-i") and len(words) >= 3:
        accesses = [Access(v, "", "secrets", scope=scope) for v in RELEASE_WRITE_VERBS]
        if _has(args, "--create-namespace"):
            accesses.append(Access("create", "", "namespaces", scope=CLUSTER))
        return CommandAccess(argv, tuple(accesses), opaque=words[2])
    raise _unmapped(argv, f"helm {' '.join(words[:2]) or '(no subcommand)'} is not a call Lens is known to make")
