"""Does this service account hold what Lens needs? Asked of the cluster with ``kubectl auth can-i``.

A deployment whose role was trimmed (no RBAC for DRA objects on an old cluster, a binding to the
wrong account) should say so in words, not fail one request at a time with ``Forbidden``. Each
need below is one grant of ``manifests/`` (the least-privilege test keeps them equal to the
rendered roles) with what it is for, so a "no" names the feature it breaks.

``kubectl auth can-i`` creates a SelfSubjectAccessReview, which Kubernetes' default
``system:basic-user`` binding lets every authenticated account do: the check needs no grant of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llm_d_lens.incluster.errors import PermissionsMissing, PermissionsUnknown
from llm_d_lens.runner import CommandError, Runner

READ_ROLE = "lens-read"
INSTALL_ROLE = "lens-installer"
DISCOVERY_ROLE = "lens-node-discovery"
CHARTS_ROLE = "lens-driver-charts"


@dataclass(frozen=True)
class Need:
    role: str
    verb: str
    resource: str  # kubectl's qualified name: "daemonsets.apps", "pods", or a subresource "pods/exec"
    purpose: str

    def argv(self) -> list[str]:
        # `can-i get pods/x` would ask about the pod named x: a subresource goes in --subresource
        resource, slash, subresource = self.resource.partition("/")
        return ["kubectl", "auth", "can-i", self.verb, resource, *([f"--subresource={subresource}"] if slash else []),
                "--all-namespaces"]


def _needs(role: str, verbs: Sequence[str], resources: Sequence[str], purpose: str) -> list[Need]:
    return [Need(role, verb, resource, purpose) for resource in resources for verb in verbs]


READ_NEEDS: tuple[Need, ...] = (
    *_needs(READ_ROLE, ["list"], ["nodes"], "inventory, driver status, presence: nodes and their labels"),
    *_needs(READ_ROLE, ["list"], ["pods"], "inventory, telemetry joins, driver status: pods and their devices"),
    *_needs(READ_ROLE, ["list"], ["daemonsets.apps"], "driver status: device-plugin and DRA-driver DaemonSets"),
    *_needs(READ_ROLE, ["list"], ["resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io",
                                  "resourceclaims.resource.k8s.io"], "inventory, telemetry joins: DRA devices and claims"),
    *_needs(READ_ROLE, ["list"], ["runtimeclasses.node.k8s.io"], "deploy render --runtime-classes-from-cluster"),
    *_needs(READ_ROLE, ["watch"], ["nodes", "pods", "resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io",
                                   "resourceclaims.resource.k8s.io"], "lens serve: live clusters kept in memory by a watch"),
)
#: the installer's vendor-neutral grants; a vendor's custom resources (deploy apply of a guide that
#: renders one) are granted in manifests/ but not asked here
INSTALL_NEEDS: tuple[Need, ...] = (
    *_needs(INSTALL_ROLE, ["list", "get", "create", "update", "delete"], ["secrets"], "driver install: helm's release records"),
    *_needs(INSTALL_ROLE, ["create"], ["namespaces"], "driver install: helm --create-namespace"),
    *_needs(INSTALL_ROLE, ["list"], ["resourceclaimtemplates.resource.k8s.io"], "driver plan --from-cluster"),
    *_needs(INSTALL_ROLE, ["get", "create", "patch"], ["deployments.apps", "configmaps", "serviceaccounts",
                                                       "leaderworkersets.leaderworkerset.x-k8s.io",
                                                       "resourceclaimtemplates.resource.k8s.io"], "deploy apply"),
    *_needs(INSTALL_ROLE, ["get", "create", "patch"], ["nodefeaturerules.nfd.k8s-sigs.io"],
            "preflight: a profile's presence.ensure_refs"),
    *_needs(INSTALL_ROLE, ["get", "patch"], ["nodes"], "console: cordon and uncordon a node"),
)

#: what helm writes for the driver charts the bundled profiles install, beyond the installer's own
#: grants (the lens-driver-charts role, its vendor-neutral grants; a vendor's custom resources are
#: data in manifests/rbac-facts.yaml, granted there but not asked here): without them an install
#: fails half-way, with some of a chart's objects created
_OBJECT = ["get", "create", "patch", "delete"]
CHART_NEEDS: tuple[Need, ...] = (
    *_needs(CHARTS_ROLE, _OBJECT, ["daemonsets.apps", "services"], "driver install: the drivers' DaemonSets and Services"),
    *_needs(CHARTS_ROLE, ["delete"], ["deployments.apps", "configmaps", "serviceaccounts"],
            "driver install: objects a newer chart version dropped"),
    *_needs(CHARTS_ROLE, _OBJECT, ["priorityclasses.scheduling.k8s.io"], "driver install: an operator's PriorityClass"),
    *_needs(CHARTS_ROLE, ["get", "list", "watch", "create", "patch", "delete"], ["jobs.batch"],
            "driver install: a chart's hook Jobs, which helm waits for"),
    *_needs(CHARTS_ROLE, [*_OBJECT, "escalate", "bind"], ["clusterroles.rbac.authorization.k8s.io",
                                                          "roles.rbac.authorization.k8s.io"],
            "driver install: the drivers' own roles (escalate and bind: they grant what this account lacks)"),
    *_needs(CHARTS_ROLE, _OBJECT, ["clusterrolebindings.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io"],
            "driver install: the drivers' role bindings"),
    *_needs(CHARTS_ROLE, _OBJECT, ["customresourcedefinitions.apiextensions.k8s.io"], "driver install: the charts' CRDs"),
    *_needs(CHARTS_ROLE, _OBJECT, ["mutatingwebhookconfigurations.admissionregistration.k8s.io",
                                   "validatingwebhookconfigurations.admissionregistration.k8s.io",
                                   "validatingadmissionpolicies.admissionregistration.k8s.io",
                                   "validatingadmissionpolicybindings.admissionregistration.k8s.io"],
            "driver install: webhooks and admission policies guarding the drivers' claims"),
    *_needs(CHARTS_ROLE, _OBJECT, ["certificates.cert-manager.io", "issuers.cert-manager.io"],
            "driver install: an operator's webhook certificates"),
    *_needs(CHARTS_ROLE, _OBJECT, ["deviceclasses.resource.k8s.io"], "driver install: the DRA drivers' DeviceClasses"),
    *_needs(CHARTS_ROLE, ["delete"], ["nodefeaturerules.nfd.k8s-sigs.io"], "driver install: NFD rules a chart dropped"),
    *_needs(CHARTS_ROLE, ["delete"], ["resourceclaimtemplates.resource.k8s.io"],
            "exporter install: the claim template a DRA-mode exporter chart dropped"),
)

#: node discovery's kubectl exec into driver pods (the node-discovery overlay)
DISCOVERY_NEEDS: tuple[Need, ...] = (
    Need(DISCOVERY_ROLE, "get", "pods", "lens plan --discover: kubectl exec reads the pod first"),
    *_needs(DISCOVERY_ROLE, ["get", "create"], ["pods/exec"], "lens plan --discover: the vendor tool in the driver pod"),
)


@dataclass(frozen=True)
class Answer:
    need: Need
    allowed: bool | None  # None: kubectl could not ask (no API server, no credentials)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.need.role, "verb": self.need.verb, "resource": self.need.resource,
                "allowed": self.allowed, "purpose": self.need.purpose, **({"error": self.error} if self.error else {})}


@dataclass(frozen=True)
class PermissionReport:
    answers: tuple[Answer, ...]
    mutations: bool

    @property
    def missing(self) -> list[Answer]:
        return [a for a in self.answers if a.allowed is not True]

    @property
    def ok(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "mutations": "enabled" if self.mutations else "disabled",
                "checks": [a.to_dict() for a in self.answers]}

    def raise_if_missing(self) -> None:
        """A coded error naming each denied grant and what it breaks, or why nothing could be asked."""
        denied = [a for a in self.missing if a.allowed is False]
        unknown = [a for a in self.missing if a.allowed is None]
        if denied:
            shown = "; ".join(f"{a.need.verb} {a.need.resource} ({a.need.purpose})" for a in denied[:6])
            more = f" and {len(denied) - 6} more" if len(denied) > 6 else ""
            also = f" ({len(unknown)} more could not be asked: {unknown[0].error})" if unknown else ""
            raise PermissionsMissing(
                f"this account lacks {len(denied)} permission(s) Lens uses: {shown}{more}{also}. Apply manifests/ "
                "(kubectl apply -k manifests/) or grant them; docs/in-cluster.md says what each is for.",
                details={"missing": [a.to_dict() for a in self.missing]},
            )
        if unknown:
            raise PermissionsUnknown(
                f"could not ask the API server about {len(unknown)} permission(s): {unknown[0].error}",
                details={"unknown": [a.to_dict() for a in unknown]},
            )


async def check(runner: Runner, *, mutations: bool = False, node_discovery: bool = False) -> PermissionReport:
    """Ask about every read need, the installer's when mutations are on, node discovery's when asked; all at once."""
    needs = READ_NEEDS + (INSTALL_NEEDS + CHART_NEEDS if mutations else ()) + (DISCOVERY_NEEDS if node_discovery else ())
    answers = await asyncio.gather(*(_ask(runner, need) for need in needs))
    return PermissionReport(tuple(answers), mutations)


async def _ask(runner: Runner, need: Need) -> Answer:
    try:
        result = await runner.arun(need.argv(), check=False)
    except CommandError as exc:  # kubectl missing or hung: no answer, and why
        return Answer(need, None, exc.message)
    word = result.stdout.strip().split(maxsplit=1)[0].lower() if result.stdout.strip() else ""
    if word in ("yes", "no"):
        return Answer(need, word == "yes")
    return Answer(need, None, result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no answer")
