"""The API resources Lens touches: kind, group, plural and scope, as the API server's discovery says.

RBAC rules name a resource by API group and plural (``apps`` / ``daemonsets``), kubectl by any of
``daemonsets``, ``daemonsets.apps``, and manifests by ``apiVersion`` + ``kind``. This table joins
the three. It lists only what Lens's own calls and the charts it installs touch, on purpose: a new
kind in a call or a render is a :class:`ResourceUnknown` error, so it cannot slip into a role
unexamined. Vendors' custom resources are not named here (no core code names a vendor): they are
data, in ``manifests/rbac-facts.yaml``, added with :meth:`ResourceTable.with_extra`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from llm_d_lens.incluster.errors import ResourceUnknown


@dataclass(frozen=True)
class Resource:
    kind: str
    group: str  # "" is the core group
    plural: str
    namespaced: bool

    @property
    def qualified(self) -> str:
        """The name kubectl accepts anywhere: ``daemonsets.apps``, plain ``pods`` for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_R = Resource
RESOURCES: tuple[Resource, ...] = (
    # core/v1
    _R("Node", "", "nodes", False),
    _R("Namespace", "", "namespaces", False),
    _R("Pod", "", "pods", True),
    _R("Secret", "", "secrets", True),
    _R("ConfigMap", "", "configmaps", True),
    _R("Service", "", "services", True),
    _R("ServiceAccount", "", "serviceaccounts", True),
    # apps/v1, batch/v1
    _R("DaemonSet", "apps", "daemonsets", True),
    _R("Deployment", "apps", "deployments", True),
    _R("StatefulSet", "apps", "statefulsets", True),
    _R("Job", "batch", "jobs", True),
    _R("PriorityClass", "scheduling.k8s.io", "priorityclasses", False),
    # resource.k8s.io (DRA), node.k8s.io
    _R("ResourceSlice", "resource.k8s.io", "resourceslices", False),
    _R("DeviceClass", "resource.k8s.io", "deviceclasses", False),
    _R("ResourceClaim", "resource.k8s.io", "resourceclaims", True),
    _R("ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates", True),
    _R("RuntimeClass", "node.k8s.io", "runtimeclasses", False),
    # RBAC, CRDs, admission
    _R("ClusterRole", "rbac.authorization.k8s.io", "clusterroles", False),
    _R("ClusterRoleBinding", "rbac.authorization.k8s.io", "clusterrolebindings", False),
    _R("Role", "rbac.authorization.k8s.io", "roles", True),
    _R("RoleBinding", "rbac.authorization.k8s.io", "rolebindings", True),
    _R("CustomResourceDefinition", "apiextensions.k8s.io", "customresourcedefinitions", False),
    _R("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "validatingwebhookconfigurations", False),
    _R("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", False),
    _R("ValidatingAdmissionPolicy", "admissionregistration.k8s.io", "validatingadmissionpolicies", False),
    _R("ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io", "validatingadmissionpolicybindings", False),
    # vendor-neutral custom resources of the software Lens installs or deploys
    _R("NodeFeatureRule", "nfd.k8s-sigs.io", "nodefeaturerules", False),
    _R("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "leaderworkersets", True),
    _R("Certificate", "cert-manager.io", "certificates", True),
    _R("Issuer", "cert-manager.io", "issuers", True),
)


class ResourceTable:
    """Kinds and names to resources; a vendor's custom resources come in as data (``with_extra``)."""

    def __init__(self, resources: Iterable[Resource]):
        self.resources = tuple(resources)
        self._by_kind = {(r.group, r.kind): r for r in self.resources}
        self._by_name: dict[str, Resource] = {}
        for resource in self.resources:
            self._by_name[resource.qualified] = resource
            self._by_name.setdefault(resource.plural, resource)

    def with_extra(self, resources: Iterable[Resource]) -> ResourceTable:
        return ResourceTable([*self.resources, *resources])

    def by_kind(self, api_version: str, kind: str, *, where: str = "") -> Resource:
        """The resource behind a manifest's ``apiVersion`` and ``kind``."""
        found = self._by_kind.get((group_of(api_version), kind))
        if found is None:
            raise ResourceUnknown(
                f"{kind} ({api_version}){' in ' + where if where else ''} is an unknown kind: add its group, plural "
                "and scope to the resource table (llm_d_lens/incluster/resources.py, or manifests/rbac-facts.yaml "
                "for a vendor's custom resource), then grant it in the role that needs it",
                details={"apiVersion": api_version, "kind": kind},
            )
        return found

    def by_name(self, name: str) -> Resource:
        """The resource kubectl means by ``pods``, ``daemonsets.apps`` or ``resourceslices.resource.k8s.io``."""
        found = self._by_name.get(name.lower())
        if found is None:
            raise ResourceUnknown(
                f"resource type {name!r} is unknown: add it to the resource table (llm_d_lens/incluster/resources.py), "
                "then grant it",
                details={"resource": name},
            )
        return found

    def named_kind(self, kind: str) -> Resource:
        """The one resource of this kind, whatever its group (kind names are unique in Lens's tables)."""
        matches = [r for r in self.resources if r.kind == kind]
        if len(matches) != 1:
            raise ResourceUnknown(f"kind {kind!r} names {len(matches)} resources in the table, not one",
                                  details={"kind": kind})
        return matches[0]


DEFAULT_TABLE = ResourceTable(RESOURCES)


def group_of(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` -> the core group ``""``."""
    return api_version.rpartition("/")[0]


