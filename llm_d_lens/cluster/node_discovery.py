"""Running a profile's discovery command on a node, and filling the inventory's gaps with it.

Some nodes publish no product or memory (no labels, no DRA attributes, no memory model for the
product): the plan cannot judge them. Their profile's ``planning.discovery`` names a tool that
can; Lens runs it inside a pod already on that node (the profile's device-plugin or DRA driver
DaemonSet, found by its ``driver.modes.*.daemonset_matchers``, or a pod the user names) with
``kubectl exec`` through the CommandRunner, parses its output, and marks every figure it adds as
``discovery:<tool>@<pod>``. Nothing is installed and nothing runs on a node that has figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from llm_d_lens.cluster.errors import DiscoveryUnavailable
from llm_d_lens.cluster.model import NodeHardware, Overview
from llm_d_lens.cluster.node_tools import DiscoveredDevice, parse
from llm_d_lens.errors import LensError
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.runner import CommandError, Runner


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    container: str | None = None

    @classmethod
    def parse(cls, text: str) -> PodRef:
        """``namespace/name`` or ``namespace/name:container``."""
        namespace, slash, rest = text.partition("/")
        name, _, container = rest.partition(":")
        if not slash or not namespace or not name:
            raise DiscoveryUnavailable(f"pod {text!r} is not namespace/name or namespace/name:container",
                                       details={"pod": text})
        return cls(namespace, name, container or None)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" + (f":{self.container}" if self.container else "")


def _owner_daemonset(pod: dict[str, Any]) -> str | None:
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(owner, dict) and owner.get("kind") == "DaemonSet":
            return str(owner.get("name") or "")
    return None


def find_pod(profile: HardwareProfile, pods: Iterable[dict[str, Any]]) -> PodRef | None:
    """A running pod of one of the profile's driver DaemonSets, by the matchers `lens driver status` uses."""
    if profile.driver is None:
        return None
    for mode in profile.driver.modes.values():
        for matcher in mode.daemonset_matchers:
            namespace = matcher.namespace or mode.namespace
            for pod in pods:
                metadata = pod.get("metadata") or {}
                owner = _owner_daemonset(pod)
                if owner is None or (pod.get("status") or {}).get("phase") != "Running":
                    continue
                if namespace and metadata.get("namespace") != namespace:
                    continue
                if matcher.name is not None and owner != matcher.name:
                    continue
                if matcher.name_contains is not None and matcher.name_contains not in owner:
                    continue
                return PodRef(str(metadata.get("namespace")), str(metadata.get("name")))
    return None


def pods_on_node(runner: Runner, node: str) -> list[dict[str, Any]]:
    result = runner.run(["kubectl", "get", "pods", "--all-namespaces", "--field-selector", f"spec.nodeName={node}", "-o", "json"])
    items = result.json().get("items") if isinstance(result.json(), dict) else None
    return [item for item in items or [] if isinstance(item, dict)]


def run_on_node(profile: HardwareProfile, node: str, runner: Runner, pod: PodRef | None = None) -> tuple[list[DiscoveredDevice], str]:
    """The devices the profile's discovery command lists on ``node``, and where they were read."""
    discovery = profile.planning.discovery
    if discovery is None:
        raise DiscoveryUnavailable(f"{profile.id}: the profile declares no planning.discovery command",
                                   details={"profile": profile.id})
    pod = pod or find_pod(profile, pods_on_node(runner, node))
    if pod is None:
        raise DiscoveryUnavailable(f"{node}: no running pod of {profile.id}'s driver DaemonSets to run "
                                   f"{discovery.command[0]} in; name one with --pod namespace/name[:container]",
                                   details={"node": node, "profile": profile.id})
    argv = ["kubectl", "exec", "-n", pod.namespace, pod.name]
    argv += ["-c", pod.container] if pod.container else []
    result = runner.run([*argv, "--", *discovery.command])
    where = f"discovery:{discovery.command[0]}@{pod}"
    return parse(result.stdout, discovery.parser, discovery.fields, where), where


def fill_unknown_memory(overview: Overview, profiles: dict[str, HardwareProfile], runner: Runner) -> list[str]:
    """Run discovery on each node whose hardware has devices but no known memory; notes say what happened.

    The node's and its bucket's VRAM both gain the figures, with the ``discovery:`` source.
    """
    notes: list[str] = []
    buckets = {b.profile_id: b for b in overview.buckets}
    for node in overview.nodes:
        for hardware in node.hardware:
            profile = profiles.get(hardware.profile_id)
            if (profile is None or profile.planning.discovery is None or hardware.counts.devices <= 0
                    or hardware.vram.devices_known > 0 or not node.schedulable):
                continue
            try:
                devices, where = run_on_node(profile, node.name, runner)
            except (LensError, CommandError) as exc:  # one node's failure never stops the plan
                notes.append(f"{node.name}: {hardware.profile_id}: node discovery failed: {exc.message}")
                continue
            notes.append(_apply(hardware, devices, where, node.name, buckets.get(hardware.profile_id)))
    return notes


def _apply(hardware: NodeHardware, devices: list[DiscoveredDevice], where: str, node: str, bucket: Any) -> str:
    known = [d for d in devices if d.memory_bytes]
    if not known:
        return f"{node}: {hardware.profile_id}: {where} listed {len(devices)} device(s), none with memory"
    count = min(len(known), hardware.counts.devices)
    smallest = min(d.memory_bytes or 0 for d in known)  # a mixed node plans on its smallest device
    products = {d.product for d in known if d.product}
    for vram in (hardware.vram, bucket.vram if bucket is not None else None):
        if vram is not None:
            vram.add(smallest * count, count, where)
            vram.devices_unknown = max(0, vram.devices_unknown - count)
    if not hardware.products:
        hardware.products.update(products)
        if bucket is not None:
            bucket.products.update(products)
    return f"{node}: {hardware.profile_id}: memory of {count} device(s) read by {where}"


def discover_into(overview: Overview, source: Any, runner: Runner | None = None) -> list[str]:
    """``--discover`` of `lens cluster inspect` and `lens plan`: fill gaps on a live cluster, note why not elsewhere."""
    if not getattr(source, "live", False):
        notes = ["node discovery skipped: it runs on a live cluster's nodes, not on a snapshot or the demo"]
    else:
        from llm_d_lens.hardware.registry import get_registry

        profiles = {p.id: p for p in get_registry().profiles()}
        notes = fill_unknown_memory(overview, profiles, runner or source.runner())
    overview.notes.extend(notes)
    return notes
