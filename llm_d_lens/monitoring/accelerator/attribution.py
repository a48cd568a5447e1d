"""Which pod each device works for: the allocation joins of ``telemetry.modes``.

Each node is joined with the strategy of the access mode its pods use:

* ``extended-resource``: the exporter's own pod labels (any spelling the profile lists). With
  cluster objects, a label naming a pod that holds none of this hardware is ignored. On a node
  whose series carry no pod labels at all, the ``pod-status`` join answers instead (when the
  profile has a ``resource_id_pattern`` and the cluster's pods are known).
* ``pod-status``: the kubelet's ``allocatedResourcesStatus`` resource ids, read with the profile's
  ``resource_id_pattern``; its ``pci`` group is matched against the device's PCI bus id.
* ``dra``: ResourceClaim allocation results, looked up in the ResourceSlices, whose PCI, uuid or
  serial attributes are matched against the device's.
* ``none``: nothing is attributed.

A device listed beside its partitions (a MIG parent) is *partitioned* when any partition is held;
its own figures go to no pod, since the pods hold the partitions.

Two refusals keep a pod's figures honest. A device Lens cannot identify, or one two pods claim, is
*unavailable*: no pod gets its numbers, and a pod holding such devices is unavailable too, never
given a node-wide sum. A node whose pods use more than one request model (DRA and extended
resources side by side) stays *unattributed*, because neither join sees all of its devices.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.pci import normalise_pci
from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects, PodInfo, SliceDevice, qualified
from llm_d_lens.monitoring.accelerator.readings import Attribution, DeviceReading, Owner
from llm_d_lens.monitoring.errors import AccessModeUnknown

ATTRIBUTED, IDLE, UNAVAILABLE, UNATTRIBUTED = "attributed", "idle", "unavailable", "unattributed"
#: A device listed with its partitions (MIG instances), some of which are held: they carry the attribution.
PARTITIONED = "partitioned"
Identity = tuple[str, ...]


@dataclass
class PodAllocation:
    """What one pod holds of one hardware, or why that cannot be said."""

    namespace: str
    pod: str
    hardware: str
    node: str | None = None
    devices: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unattributed: str | None = None

    @property
    def status(self) -> str:
        if self.unattributed:
            return UNATTRIBUTED
        return UNAVAILABLE if self.problems else ATTRIBUTED

    def to_dict(self) -> dict[str, Any]:
        reason = self.unattributed or ("; ".join(self.problems) if self.problems else None)
        return {"hardware": self.hardware, "node": self.node, "status": self.status, "devices": self.devices, "reason": reason}


@dataclass
class _Usage:
    """How the cluster's pods use this hardware: request models per pod and per node."""

    profile: HardwareProfile
    cluster: ClusterObjects

    def __post_init__(self) -> None:
        self.drivers = self._drivers()
        self.by_pod: dict[tuple[str, str], set[str]] = {}
        self.by_node: dict[str, set[str]] = defaultdict(set)
        self.pods_on: dict[str, list[PodInfo]] = defaultdict(list)  # every active pod, by node
        for pod in self.cluster.pods:
            if not pod.active:
                continue
            self.pods_on[pod.node].append(pod)
            models = self.models(pod)
            if models:
                self.by_pod[pod.ref] = models
                self.by_node[pod.node] |= models

    def _drivers(self) -> set[str]:
        allocation = self.profile.telemetry.allocation if self.profile.telemetry else None
        return set(allocation.drivers if allocation and allocation.drivers else self.profile.inventory.dra_drivers)

    def holds_resource(self, name: str) -> bool:
        names = {n for m in self.profile.effective_modes().values() for n in m.resource_names}
        return name in names or any(name.startswith(p) for p in self.profile.resource_prefixes)

    def claim_is_ours(self, namespace: str, claim_name: str) -> bool:
        claim = self.cluster.claim(namespace, claim_name)
        if claim is None:
            return False
        return any(r.driver in self.drivers for r in claim.results) or bool(
            set(claim.device_classes) & set(self.profile.device_classes)
        )

    def models(self, pod: PodInfo) -> set[str]:
        models = set()
        if pod.extended_claim is None and any(self.holds_resource(r) for r in pod.resource_names()):
            models.add("extended-resource")
        claims = [*pod.claim_names.values(), *([pod.extended_claim] if pod.extended_claim else [])]
        if any(self.claim_is_ours(pod.namespace, c) for c in claims):
            models.add("dra")
        return models


#: what gives the joins a cluster's objects, on each edge: the CLI's option, the API's parameter, the server's variable
CLUSTER_OBJECTS_HINT = "--cluster FILE or --cluster kubectl; the API's ?cluster=NAME; the server's LENS_CLUSTER_OBJECTS"

def _mode_for(profile: HardwareProfile, request_model: str) -> str | None:
    return next((name for name, m in profile.effective_modes().items() if m.request_model == request_model), None)


def attribute(
    devices: list[DeviceReading],
    profile: HardwareProfile,
    cluster: ClusterObjects | None = None,
    mode: str | None = None,
) -> dict[tuple[str, str], PodAllocation]:
    """Set every device's attribution; return what each pod holds of this hardware."""
    telemetry = profile.telemetry
    assert telemetry is not None
    if mode is not None and mode not in profile.access_modes:
        raise AccessModeUnknown(
            f"hardware {profile.id!r} has no access mode {mode!r}; its modes are {', '.join(profile.access_modes)}",
            details={"hardware": profile.id, "mode": mode, "modes": profile.access_modes},
        )
    usage = _Usage(profile, cluster) if cluster is not None else None
    if cluster is not None:
        for d in devices:
            d.node = cluster.node_name(d.node)
    pods: dict[tuple[str, str], PodAllocation] = {}
    by_node: dict[str, list[DeviceReading]] = defaultdict(list)
    for d in devices:
        by_node[d.node].append(d)
    nodes = set(by_node) | (set(usage.by_node) if usage else set())
    for node in sorted(nodes):
        group = by_node.get(node, [])
        chosen_mode, join, refusal = _choose(profile, usage, node, mode)
        if refusal:
            refused = Attribution(UNATTRIBUTED, join, chosen_mode, reason=refusal)  # frozen: one for the node's devices
            for d in group:
                d.attribution = refused
            for pod in usage.pods_on.get(node, []) if usage else []:
                if pod.ref in usage.by_pod:  # type: ignore[union-attr]
                    _pod(pods, pod.ref, profile, node).unattributed = refusal
            continue
        _JOINS[join](_Join(profile, cluster, usage, node, join, chosen_mode, group, pods))
    _mark_partitioned(devices)
    _one_node_each(pods, devices)
    for ref in usage.by_pod if usage else []:
        held = pods.get(ref)
        if held is None or not (held.devices or held.problems or held.unattributed):
            node = cluster.pod(*ref).node if cluster and cluster.pod(*ref) else ""
            _pod(pods, ref, profile, node).problems.append("none of its devices appear in the exporter's series")
    return pods


def _one_node_each(pods: dict[tuple[str, str], PodAllocation], devices: list[DeviceReading]) -> None:
    """A pod runs on one node: exporter labels naming it on several are stale or copied, so its figures are refused."""
    node_of = {d.name: d.node for d in devices}
    for allocation in pods.values():
        nodes = sorted({node_of.get(name, "") for name in allocation.devices})
        if len(nodes) > 1:
            allocation.problems.append(
                f"the exporters name it on {len(nodes)} nodes ({', '.join(n or '(none)' for n in nodes)}); "
                "a pod runs on one node, so Lens will not add their devices up")


def _mark_partitioned(devices: list[DeviceReading]) -> None:
    """A device whose listed partitions are held is not idle (nor unattributed for want of evidence): it is
    partitioned, and its own figures go to no pod."""
    parts: dict[tuple[str, str], list[DeviceReading]] = defaultdict(list)
    for d in devices:
        if d.sub:
            parts[(d.node, d.device)].append(d)
    if not parts:  # no partition listed: nothing to mark
        return
    for d in devices:
        held = [p for p in parts.get((d.node, d.device), []) if p.attribution and p.attribution.status in (ATTRIBUTED, UNAVAILABLE)]
        if d.sub or not held or d.attribution is None or d.attribution.status not in (IDLE, UNATTRIBUTED):
            continue
        holders = [f"{p.sub} by {p.attribution.namespace}/{p.attribution.pod}" if p.attribution.status == ATTRIBUTED  # type: ignore[union-attr]
                   else f"{p.sub} (unavailable)" for p in held]
        d.attribution = Attribution(PARTITIONED, d.attribution.join, d.attribution.mode,
                                    reason=f"{len(held)} of its {len(parts[(d.node, d.device)])} partitions are held: {', '.join(holders)}")


def _choose(profile: HardwareProfile, usage: _Usage | None, node: str, mode: str | None) -> tuple[str | None, str, str | None]:
    """(access mode, join, why nothing is attributed) for one node."""
    telemetry = profile.telemetry
    assert telemetry is not None
    if mode is not None:
        join = telemetry.modes.get(mode, telemetry.allocation_join)
    elif usage is None or not usage.by_node.get(node):
        join = telemetry.allocation_join
        mode = next((m for m, j in telemetry.modes.items() if j == join), None)
    else:
        models = usage.by_node[node]
        if len(models) > 1:
            return None, telemetry.allocation_join, (
                f"node {node} mixes request models ({', '.join(sorted(models))}): no join sees all of its devices"
            )
        mode = _mode_for(profile, next(iter(models)))
        join = telemetry.modes.get(mode or "", telemetry.allocation_join)
    if join == "none":
        return mode, join, f"the telemetry join of mode {mode or '(default)'} is none"
    if join in ("dra", "pod-status") and usage is None:
        return mode, join, f"the {join} join needs the cluster's pods, claims and slices ({CLUSTER_OBJECTS_HINT})"
    return mode, join, None


def _pod(pods: dict[tuple[str, str], PodAllocation], ref: tuple[str, str], profile: HardwareProfile, node: str) -> PodAllocation:
    if ref not in pods:
        pods[ref] = PodAllocation(ref[0], ref[1], profile.id, node or None)
    return pods[ref]


@dataclass
class _Join:
    profile: HardwareProfile
    cluster: ClusterObjects | None
    usage: _Usage | None
    node: str
    join: str
    mode: str | None
    devices: list[DeviceReading]
    pods: dict[tuple[str, str], PodAllocation]

    def node_pods(self) -> list[PodInfo]:
        return self.usage.pods_on.get(self.node, []) if self.usage else []

    def settle(self, device: DeviceReading, owners: Iterable[Owner], unknown: dict[tuple[str, str], str]) -> None:
        """Attribute ``device`` to its owners; ``unknown`` are pods on the node whose devices cannot be placed."""
        by_pod: dict[tuple[str, str], list[str]] = {}
        for owner in owners:
            containers = by_pod.setdefault(owner.ref, [])
            if owner.container and owner.container not in containers:
                containers.append(owner.container)
        if not by_pod and not unknown:
            device.attribution = self.unheld
            return
        base = {"join": self.join, "mode": self.mode}
        if len(by_pod) > 1:
            names = ", ".join(f"{ns}/{pod}" for ns, pod in sorted(by_pod))
            device.attribution = Attribution(UNAVAILABLE, reason=f"claimed by {len(by_pod)} pods: {names}", **base)
            for ref in by_pod:
                _pod(self.pods, ref, self.profile, self.node).problems.append(f"shares {device.name} with another pod")
        elif by_pod:
            (ref, containers), = by_pod.items()
            device.attribution = Attribution(ATTRIBUTED, namespace=ref[0] or None, pod=ref[1],
                                             container=",".join(containers) or None, **base)
            _pod(self.pods, ref, self.profile, self.node).devices.append(device.name)
        else:  # pods on the node whose devices cannot be placed
            names = ", ".join(f"{ns}/{pod}" for ns, pod in sorted(unknown))
            device.attribution = Attribution(UNAVAILABLE, reason=f"pods on this node hold devices Lens cannot identify ({names})", **base)

    @cached_property
    def unheld(self) -> Attribution:
        """What a device of this node that no pod holds is: idle, or unattributed for want of evidence; one frozen
        attribution for them all."""
        evidence = self.no_evidence
        base = {"join": self.join, "mode": self.mode}
        return Attribution(UNATTRIBUTED, reason=evidence, **base) if evidence else Attribution(IDLE, **base)

    @cached_property
    def no_evidence(self) -> str | None:
        """Why the cluster objects cannot show that no pod holds a device of this node, or None when they can;
        worked out once per node (the same for every device on it, and it scans the cluster's nodes).

        ``idle`` is a finding: the objects list the node and its pods, and none holds the device. An exporter's
        missing pod label is no such finding (its pod attribution may be off, or its kubelet socket unread).
        """
        if self.cluster is None:
            return f"no cluster objects to show that no pod holds it ({CLUSTER_OBJECTS_HINT})"
        if not any(n.name == self.node for n in self.cluster.nodes) and not self.node_pods():
            return f"node {self.node or '(none)'} is not in the cluster objects, so Lens cannot tell whether a pod holds it"
        return None

    def unseen(self, held: dict[tuple[str, str], set[frozenset[Any]]], shown: set[Any]) -> None:
        """A pod some of whose devices the exporter does not show would get a partial figure: refuse it."""
        for ref, devices in held.items():
            missing = [d for d in devices if not d & shown]
            if missing:
                _pod(self.pods, ref, self.profile, self.node).problems.append(
                    f"holds {len(devices)} devices on {self.node}; the exporter shows no series for {len(missing)} of them")

    def missing(self, ref: tuple[str, str], why: str, unknown: dict[tuple[str, str], str]) -> None:
        unknown[ref] = why
        _pod(self.pods, ref, self.profile, self.node).problems.append(why)


def _join_labels(j: _Join) -> None:
    """extended-resource: the exporter's pod labels, checked against the cluster's pods when known.

    On a node where no series carries pod labels (an exporter without pod attribution) the labels
    can say nothing, so the kubelet's resource ids answer instead (the
    pod-status join) when the profile declares how to read them and the cluster's pods are known.
    """
    allocation = j.profile.telemetry.allocation if j.profile.telemetry else None
    if (j.usage is not None and allocation is not None and allocation.resource_id_pattern
            and not any(d.owners or d.exporter for d in j.devices)):
        j.join = "pod-status"
        _join_pod_status(j)
        return
    owners = {id(d): [o for o in d.owners if _plausible(j, o)] for d in j.devices}
    seen = {o.ref for found in owners.values() for o in found}
    unknown: dict[tuple[str, str], str] = {}
    for pod in j.node_pods():
        if j.usage and pod.ref in j.usage.by_pod and pod.ref not in seen:
            j.missing(pod.ref, "no device series on its node carries this pod's labels", unknown)
    for device in j.devices:
        j.settle(device, owners[id(device)], unknown)


def _plausible(j: _Join, owner: Owner) -> bool:
    """A labelled pod the cluster knows must hold this hardware; else it is the exporter's own pod."""
    if j.cluster is None or j.usage is None:
        return True
    pod = j.cluster.pod(owner.namespace, owner.pod)
    return pod is None or pod.ref in j.usage.by_pod


def _join_pod_status(j: _Join) -> None:
    """pod-status: resource ids from the kubelet, read with resource_id_pattern's pci group."""
    telemetry = j.profile.telemetry
    assert telemetry is not None and telemetry.allocation is not None and telemetry.allocation.resource_id_pattern
    assert j.usage is not None
    pattern = re.compile(telemetry.allocation.resource_id_pattern)
    by_pci: dict[str, list[Owner]] = defaultdict(list)
    held: dict[tuple[str, str], set[frozenset[Any]]] = defaultdict(set)
    unknown: dict[tuple[str, str], str] = {}
    for pod in j.node_pods():
        relevant = [s for s in pod.allocated if _ours(j, pod, s.name) or any(pattern.search(i) for i in s.resource_ids)]
        for status in relevant:
            for resource_id in status.resource_ids:
                found = pattern.search(resource_id)
                pci = normalise_pci(found.group("pci")) if found else None
                if pci:
                    by_pci[pci].append(Owner(pod.namespace, pod.name, status.container))
                    held[pod.ref].add(frozenset({pci}))
                else:
                    j.missing(pod.ref, f"resource id {resource_id!r} carries no PCI address Lens can read", unknown)
        if not relevant and pod.ref in j.usage.by_pod:
            j.missing(pod.ref, "the kubelet reports no allocatedResourcesStatus for its devices", unknown)
    shown: set[Any] = set()
    for device in j.devices:
        pcis = {p for p in (normalise_pci(x) for x in device.pci_bus_ids) if p}
        shown |= pcis
        if not pcis:
            device.attribution = Attribution(UNAVAILABLE, j.join, j.mode,
                                             reason="the exporter shows no PCI bus id to match resource ids against")
            continue
        j.settle(device, [o for p in sorted(pcis) for o in by_pci.get(p, [])], unknown)
    j.unseen(held, shown)


def _ours(j: _Join, pod: PodInfo, status_name: str) -> bool:
    assert j.usage is not None
    if status_name.startswith("claim:"):
        pod_claim = status_name[len("claim:"):].split("/", 1)[0]
        claim = pod.claim_names.get(pod_claim)
        return claim is not None and j.usage.claim_is_ours(pod.namespace, claim)
    return j.usage.holds_resource(status_name)


def _identity_attributes(j: _Join) -> dict[str, list[str]]:
    telemetry = j.profile.telemetry
    assert telemetry is not None
    allocation = telemetry.allocation
    if allocation is None:
        return {}
    kinds = {"pci": allocation.pci_attributes, "uuid": allocation.uuid_attributes, "serial": allocation.serial_attributes}
    return {kind: names for kind, names in kinds.items() if names}


def _slice_identities(device: SliceDevice, attributes: dict[str, list[str]]) -> list[Identity]:
    out: list[Identity] = []
    for kind, names in attributes.items():
        for name in names:
            value = device.attributes.get(qualified(name, device.driver))
            if not value:
                continue
            if kind == "pci":
                pci = normalise_pci(value)
                if pci:
                    out.append(("pci", device.node, pci))
            else:
                out.append((kind, value))
    return out


def _device_identities(j: _Join, device: DeviceReading, kinds: Iterable[str]) -> list[Identity]:
    out: list[Identity] = []
    if "pci" in kinds:
        out += [("pci", j.node, p) for p in (normalise_pci(x) for x in device.pci_bus_ids) if p]
    if "uuid" in kinds:
        out += [("uuid", u) for u in device.uuids]
    if "serial" in kinds:
        out += [("serial", s) for s in device.serials]
    return out


def _join_dra(j: _Join) -> None:
    """dra: claim results -> slice device attributes (PCI, uuid, serial) -> the exporter's device."""
    assert j.cluster is not None and j.usage is not None
    attributes = _identity_attributes(j)
    by_identity: dict[Identity, list[Owner]] = defaultdict(list)
    unknown: dict[tuple[str, str], str] = {}
    unplaced: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)
    orphans: dict[Identity, str] = {}  # allocated to a claim no pod reserves
    held: dict[tuple[str, str], set[frozenset[Any]]] = defaultdict(set)
    for claim in j.cluster.claims:
        results = [r for r in claim.results if r.driver in j.usage.drivers]
        if not results:
            continue
        owners = _claim_owners(j.cluster, claim.namespace, claim.name, claim.consumers or tuple(filter(None, [claim.owner_pod])))
        for result in results:
            slice_device = j.cluster.devices.get((result.driver, result.pool, result.device))
            identities = _slice_identities(slice_device, attributes) if slice_device else []
            if identities:
                for identity in identities:
                    by_identity[identity].extend(owners)
                    if not owners:
                        orphans[identity] = f"{claim.namespace}/{claim.name}"
                if slice_device is not None and slice_device.node == j.node:
                    for owner in owners:
                        held[owner.ref].add(frozenset(identities))
                continue
            node = slice_device.node if slice_device else result.pool
            why = (f"its device {result.device} is not in any ResourceSlice" if slice_device is None
                   else f"its device {result.device} publishes none of {', '.join(n for v in attributes.values() for n in v) or 'the identity attributes'}")
            for owner in owners:
                unplaced[node][owner.ref] = why
    for ref, why in unplaced.get(j.node, {}).items():
        j.missing(ref, why, unknown)
    shown: set[Any] = set()
    for device in j.devices:
        identities = _device_identities(j, device, attributes)
        shown.update(identities)
        if not identities:
            wanted = "/".join(attributes) or "pci/uuid/serial"
            device.attribution = Attribution(UNAVAILABLE, j.join, j.mode,
                                             reason=f"the exporter shows no {wanted} identity to match the DRA allocation against")
            continue
        owners = [o for i in identities for o in by_identity.get(i, [])]
        orphan = next((orphans[i] for i in identities if i in orphans), None)
        if orphan and not owners:
            device.attribution = Attribution(UNAVAILABLE, j.join, j.mode,
                                             reason=f"allocated to ResourceClaim {orphan}, which no pod reserves")
            continue
        j.settle(device, owners, unknown)
    j.unseen(held, shown)


def _claim_owners(cluster: ClusterObjects, namespace: str, claim_name: str, pods: Iterable[str]) -> list[Owner]:
    owners = []
    for name in pods:
        pod = cluster.pod(namespace, name)
        container = ""
        if pod is not None:
            pod_claim = next((k for k, v in pod.claim_names.items() if v == claim_name), None)
            container = (pod.container_for_claim(pod_claim) if pod_claim else None) or ""
        owners.append(Owner(namespace, name, container))
    return owners


_JOINS = {"extended-resource": _join_labels, "pod-status": _join_pod_status, "dra": _join_dra}
