"""How long the cluster inventory takes on big snapshots, against the fastest whole-file parse of it.

For each size it writes a synthetic snapshot shaped like ``kubectl get ... -o json`` output: nodes of
every built-in kind (device-plugin and DRA GPUs with 8 devices each, TPU hosts, CPU pools), about
20 pods per node with realistic specs and statuses, ResourceSlices for the DRA nodes and allocated
ResourceClaims for the pods that use them (deterministic: the same sizes give the same bytes).

The floor is ``orjson.loads`` of the file with the cyclic garbage collector paused (the inventory
pauses it too, see ``snapshot.gc_paused``); ``json.load`` and msgspec's whole-document decode are
printed beside it. The inventory is ``service.inspect`` as ``lens cluster inspect --snapshot`` runs
it: read, decode only the fields it reads (``cluster/decode.py``), count. The last lines time the
whole command, ``lens cluster inspect --snapshot FILE -o json`` in a process of its own (start-up,
read, decode, count, encode, exit), as CPU seconds of that process, against a process that only
``orjson.loads`` the file with the collector paused. Goals: at most 1.2x the
floor at 5,000 nodes, time per node flat as the cluster grows, and a peak memory (each measured
in a fresh process, imports included) at most 1.1x that of a process that only ``json.load``s the file.

    python bench/inventory.py                       # 500 / 2,000 / 5,000 nodes
    python bench/inventory.py --sizes 50,100 --repeat 1
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec  # noqa: E402
import orjson  # noqa: E402

from startup import plugin_profile  # noqa: E402

from llm_d_lens.cluster.catalog import Catalog  # noqa: E402
from llm_d_lens.cluster.inventory import build_inventory  # noqa: E402
from llm_d_lens.cluster.service import inspect  # noqa: E402
from llm_d_lens.cluster.source import ClusterSource  # noqa: E402

# node kind -> (share of nodes, extended resource or DRA driver, labels)
KINDS: list[tuple[str, int]] = [("nv-plugin", 45), ("amd", 14), ("nv-dra", 14), ("tpu", 7), ("gaudi", 6),
                                ("cpu", 5), ("cpu-dra", 5), ("xpu-dra", 4)]
PLUGIN = {"nv-plugin": ("nvidia.com/gpu", 8), "amd": ("amd.com/gpu", 8), "tpu": ("google.com/tpu", 4), "gaudi": ("habana.ai/gaudi", 8)}
DRA = {"nv-dra": "gpu.nvidia.com", "xpu-dra": "gpu.intel.com", "cpu-dra": "dra.cpu"}
LABELS = {
    "nv-plugin": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                  "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "single"},
    "amd": {"feature.node.kubernetes.io/amd-gpu": "true", "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "amd.com/gpu.vram": "192G"},
    "nv-dra": {"nvidia.com/gpu.present": "true"},
    "tpu": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x2"},
    "gaudi": {"intel.feature.node.kubernetes.io/gaudi": "true"},
    "cpu": {"feature.node.kubernetes.io/cpu-cpuid.AMXBF16": "true"},
    "cpu-dra": {"feature.node.kubernetes.io/cpu-cpuid.AMXBF16": "true"},
    "xpu-dra": {"intel.feature.node.kubernetes.io/gpu": "true"},
}
COMMON_LABELS = {f"feature.node.kubernetes.io/cpu-cpuid.{flag}": "true" for flag in
                 ("ADX", "AESNI", "AVX", "AVX2", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512F", "AVX512VL", "FMA3", "SHA", "VMX")}
COMMON_LABELS.update({"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                      "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "bare-metal",
                      "topology.kubernetes.io/region": "us-east", "topology.kubernetes.io/zone": "us-east-1a",
                      "feature.node.kubernetes.io/kernel-version.full": "6.8.0-60-generic",
                      "feature.node.kubernetes.io/pci-1a03.present": "true", "feature.node.kubernetes.io/pci-15b3.present": "true"})


def digest(text: str) -> str:
    """A sha256 hex digest as image and container IDs carry them (random-looking, deterministic)."""
    return hashlib.sha256(text.encode()).hexdigest()


def node_kind(index: int) -> str:
    slot = index % 100
    for kind, share in KINDS:
        if slot < share:
            return kind
        slot -= share
    return KINDS[0][0]


def make_node(index: int, kind: str) -> dict[str, Any]:
    name = f"node-{index:05d}"
    capacity = {"cpu": "224", "ephemeral-storage": "3748936784Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                "memory": "2113389024Ki", "pods": "110"}
    if kind in PLUGIN:
        resource, count = PLUGIN[kind]
        capacity[resource] = str(count)
    conditions = [{"type": t, "status": "False", "reason": f"KubeletHasNo{t}", "message": f"kubelet has no {t}",
                   "lastHeartbeatTime": "2026-03-09T11:58:40Z", "lastTransitionTime": "2026-01-02T09:00:00Z"}
                  for t in ("MemoryPressure", "DiskPressure", "PIDPressure")]
    conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                       "lastHeartbeatTime": "2026-03-09T11:58:40Z", "lastTransitionTime": "2026-01-02T09:00:00Z"})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"00000000-0000-4000-8000-{index:012d}", "resourceVersion": str(1000000 + index),
                     "creationTimestamp": "2026-01-02T09:00:00Z",
                     "labels": {**COMMON_LABELS, "kubernetes.io/hostname": name, **LABELS[kind]},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": f"10.{index // 256}.{index % 256}.0/24", "podCIDRs": [f"10.{index // 256}.{index % 256}.0/24"]},
        "status": {
            "capacity": capacity, "allocatable": {**capacity, "cpu": "222"}, "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": f"10.200.{index // 256}.{index % 256}"}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": f"boot-{index}", "containerRuntimeVersion": "containerd://1.7.27",
                         "kernelVersion": "6.8.0-60-generic", "kubeProxyVersion": "v1.34.2", "kubeletVersion": "v1.34.2",
                         "machineID": f"machine-{index}", "operatingSystem": "linux", "osImage": "Ubuntu 24.04.2 LTS", "systemUUID": f"sys-{index}"},
            "images": [{"names": [f"registry.example.com/image-{i}@sha256:{digest(f'image-{i}')}", f"registry.example.com/image-{i}:v1"],
                        "sizeBytes": 100000000 + i} for i in range(12)],
        },
    }


def make_pod(node_name: str, index: int, kind: str, position: int, claim_name: str | None) -> dict[str, Any]:
    name = f"{'vllm' if position == 0 else 'app'}-{node_name}-{position:02d}"
    resources: dict[str, Any] = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    spec_extra: dict[str, Any] = {}
    if position == 0 and kind in PLUGIN:
        resource, count = PLUGIN[kind]
        resources = {"requests": {"cpu": "16", "memory": "256Gi", resource: str(count // 2)},
                     "limits": {"cpu": "16", "memory": "256Gi", resource: str(count // 2)}}
    elif position == 0 and claim_name is not None:
        resources = {"requests": {"cpu": "16", "memory": "256Gi"}, "limits": {"cpu": "16", "memory": "256Gi"}, "claims": [{"name": "gpus"}]}
        spec_extra["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "gpus-x4"}]
    container = {
        "name": "main", "image": "ghcr.io/llm-d/llm-d-cuda:v0.4.0", "imagePullPolicy": "IfNotPresent",
        "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--port", "8000", "--max-model-len", "8192"],
        "env": [{"name": f"ENV_{i}", "value": f"value-{i}"} for i in range(8)]
               + [{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
        "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000, "scheme": "HTTP"}, "periodSeconds": 10,
                           "failureThreshold": 3, "successThreshold": 1, "timeoutSeconds": 1},
        "resources": resources, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": True},
                         {"mountPath": "/models", "name": "models"}],
    }
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "llm" if position == 0 else f"team-{position % 7}",
                     "uid": f"10000000-0000-4000-8000-{index * 100 + position:012d}", "resourceVersion": str(2000000 + index * 100 + position),
                     "creationTimestamp": "2026-03-01T10:00:00Z", "generateName": name[:-2],
                     "labels": {"app": name[:-3], "pod-template-hash": "7d9c6b5f4", "app.kubernetes.io/part-of": "llm-d"},
                     "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-03-01T10:00:00Z", "prometheus.io/scrape": "true"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name[:-3], "uid": f"rs-{index}-{position}",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"containers": [container], "nodeName": node_name, "restartPolicy": "Always", "schedulerName": "default-scheduler",
                 "serviceAccountName": "default", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                 "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                 "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                                 {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
                 "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                     {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                     {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}}]}},
                     {"name": "models", "persistentVolumeClaim": {"claimName": "models"}}],
                 **spec_extra},
        "status": {"phase": "Running", "qosClass": "Burstable", "hostIP": "10.200.0.1", "podIP": f"10.{index // 256}.{index % 256}.{position}",
                   "startTime": "2026-03-01T10:00:05Z",
                   "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-03-01T10:01:00Z"}
                                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
                   "containerStatuses": [{"name": "main", "image": container["image"], "imageID": f"sha256:{digest(f'image-{index}')}",
                                          "containerID": f"containerd://{digest(name)}", "ready": True, "restartCount": 0,
                                          "started": True, "state": {"running": {"startedAt": "2026-03-01T10:00:30Z"}}}],
                   **({"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": claim_name}]} if position == 0 and claim_name else {})},
    }


def make_slice(node_name: str, driver: str) -> dict[str, Any]:
    if driver == "dra.cpu":
        devices = [{"name": f"cpudevnuma00{n}", "allowMultipleAllocations": True,
                    "attributes": {"dra.cpu/numCPUs": {"int": 112}, "resource.kubernetes.io/numaNode": {"int": n}},
                    "capacity": {"dra.cpu/cpu": {"value": "112"}}} for n in range(2)]
    else:
        product = {"gpu.nvidia.com": ("productName", "NVIDIA H200", "143771Mi"), "gpu.intel.com": ("model", "Max 1550", "128Gi")}[driver]
        devices = [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, product[0]: {"string": product[1]},
                                                      "resource.kubernetes.io/pciBusID": {"string": f"0000:{16 + i:02x}:00.0"}},
                    "capacity": {"memory": {"value": product[2]}}} for i in range(8)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{driver}-x1", "generateName": f"{node_name}-{driver}-"},
            "spec": {"driver": driver, "nodeName": node_name, "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def make_claim(node_name: str, driver: str, pod_name: str) -> dict[str, Any]:
    if driver == "dra.cpu":
        results = [{"driver": driver, "pool": node_name, "device": "cpudevnuma000", "request": "gpus", "consumedCapacity": {"dra.cpu/cpu": "32"}}]
    else:
        results = [{"driver": driver, "pool": node_name, "device": f"gpu-{i}", "request": "gpus"} for i in range(4)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{pod_name}-gpus-abc12", "namespace": "llm"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": driver, "count": 4}}]}},
            "status": {"allocation": {"devices": {"results": results}},
                       "reservedFor": [{"resource": "pods", "name": pod_name, "uid": "x"}]}}


def items(nodes: int, pods_per_node: int) -> Iterator[dict[str, Any]]:
    kinds = [node_kind(i) for i in range(nodes)]
    for index, kind in enumerate(kinds):
        yield make_node(index, kind)
    for index, kind in enumerate(kinds):
        node_name = f"node-{index:05d}"
        claim = f"vllm-{node_name}-00-gpus-abc12" if kind in DRA else None
        for position in range(pods_per_node):
            yield make_pod(node_name, index, kind, position, claim)
    for index, kind in enumerate(kinds):
        if kind in DRA:
            yield make_slice(f"node-{index:05d}", DRA[kind])
    for driver in sorted(set(DRA.values())):
        yield {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}
    for index, kind in enumerate(kinds):
        if kind in DRA:
            yield make_claim(f"node-{index:05d}", DRA[kind], f"vllm-node-{index:05d}-00")


def write_snapshot(path: Path, nodes: int, pods_per_node: int, indent: int) -> None:
    """Streams the List to disk item by item, so generating a large cluster needs little memory."""
    encoder = json.JSONEncoder(indent=indent or None, separators=None if indent else (",", ":"))
    with path.open("w") as stream:
        stream.write('{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [\n')
        for number, item in enumerate(items(nodes, pods_per_node)):
            if number:
                stream.write(",\n")
            stream.write(encoder.encode(item))
        stream.write("\n]}\n")


def median_seconds(actions: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Median CPU time of each action; runs alternate so a noisy moment hurts both alike."""
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(repeat):
        for action, samples in zip(actions, times, strict=True):
            gc.collect()
            started = time.process_time()  # CPU seconds: the machine's other load costs wall time, not these
            result = action()
            samples.append(time.process_time() - started)
            del result
    return [statistics.median(samples) for samples in times]


#: what a fresh process does to measure its peak memory: only parse the file, or run the inventory
PEAK_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[3])
if sys.argv[1] == "json.load":
    with open(sys.argv[2], "rb") as stream:
        document = json.load(stream)
else:
    from pathlib import Path
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource
    overview = inspect(ClusterSource(snapshot=Path(sys.argv[2])))
# VmHWM, not ru_maxrss: the latter is inherited across fork and exec from the (large) bench process
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def peak_mib(what: str, path: Path) -> float:
    """Peak resident memory of a fresh process doing ``what`` on the file (VmHWM, in KiB)."""
    done = subprocess.run([sys.executable, "-c", PEAK_CHILD, what, str(path), str(Path(__file__).resolve().parents[1])],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024


#: the floor of the end-to-end measure: a process that only parses the file, GC paused
FLOOR_CHILD = "import gc, sys, orjson; gc.disable(); orjson.loads(open(sys.argv[1], 'rb').read())"
#: the lens console script (llm_d_lens.cli.lifetime.console), whichever interpreter runs the bench
LENS_CHILD = "import sys; sys.argv[0] = 'lens'; from llm_d_lens.cli.lifetime import console; console()"


def child_cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one child process, from its rusage (the machine's other load aside)."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise RuntimeError(f"{argv[:3]} exited {process.returncode}: {process.stderr.read().decode()[-500:] if process.stderr else ''}")
    return usage.ru_utime + usage.ru_stime


def cli_ratio(path: Path, repeat: int) -> tuple[float, float]:
    """Median CPU seconds of ``lens cluster inspect --snapshot PATH -o json`` and of the floor process, alternating."""
    lens = [sys.executable, "-c", LENS_CHILD, "cluster", "inspect", "--snapshot", str(path), "-o", "json"]
    floor = [sys.executable, "-c", FLOOR_CHILD, str(path)]
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        samples[0].append(child_cpu_seconds(lens))
        samples[1].append(child_cpu_seconds(floor))
    return statistics.median(samples[0]), statistics.median(samples[1])


def gc_paused(action: Callable[[], Any]) -> Callable[[], Any]:
    def paused() -> Any:
        gc.disable()
        try:
            return action()
        finally:
            gc.enable()
    return paused


def plugin_build_ratio(path: Path, count: int, repeat: int) -> tuple[float, float, int]:
    """The build alone (objects already read) with the built-in registry, and with ``count`` plugin profiles more.

    Returns (built-ins seconds, with plugins seconds, number of built-in profiles).
    """
    from llm_d_lens.cluster.snapshot import load_snapshot
    from llm_d_lens.hardware.discovery import DiscoveredProfile
    from llm_d_lens.hardware.loader import validate_payload
    from llm_d_lens.hardware.registry import Registry, get_registry

    builtins = get_registry()
    extra = [validate_payload(plugin_profile(i), f"bench plugin {i}") for i in range(count)]
    discovered = [DiscoveredProfile(p, json.dumps(p.to_data(), sort_keys=True), []) for p in builtins.profiles()]
    discovered += [DiscoveredProfile(p, p.id, []) for p in extra]
    crowded = Registry(discovered)
    objects = load_snapshot(path, partial=True)
    # a fresh catalogue per build, as `lens cluster inspect` makes one: its per-name caches start empty
    times = median_seconds([gc_paused(lambda: build_inventory(objects, Catalog(builtins))),
                            gc_paused(lambda: build_inventory(objects, Catalog(crowded)))], repeat)
    return times[0], times[1], len(builtins)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,2000,5000", help="comma-separated node counts")
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is printed")
    parser.add_argument("--indent", type=int, default=4, help="JSON indent of the snapshot (kubectl writes 4; 0 = compact)")
    parser.add_argument("--keep", type=Path, help="write the snapshots into this directory and keep them")
    parser.add_argument("--plugin-profiles", type=int, default=200,
                        help="plugin profiles installed beside the built-ins for the last measurement")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    catalog = Catalog()  # discovery of the profiles happens once per process, outside the timings
    directory = args.keep or Path(tempfile.mkdtemp(prefix="lens-bench-"))
    print(f"{'nodes':>6} {'pods':>7} {'MiB':>6} {'json.load s':>11} {'msgspec s':>10} {'orjson s':>9} {'inventory s':>11} "
          f"{'ratio':>6} {'ms/1k nodes':>11} {'peak json MiB':>13} {'peak inv MiB':>12} {'ratio':>6}")
    per_node: list[tuple[float, float]] = []  # seconds per node: inventory, orjson
    clis: list[tuple[int, float, float]] = []  # nodes, CPU seconds of lens cluster inspect -o json, of the floor process
    for size in sizes:
        path = directory / f"cluster-{size}.json"
        if not path.exists():
            write_snapshot(path, size, args.pods_per_node, args.indent)

        def json_load() -> Any:
            with path.open("rb") as stream:
                return json.load(stream)

        actions = [json_load, gc_paused(lambda: msgspec.json.decode(path.read_bytes())),
                   gc_paused(lambda: orjson.loads(path.read_bytes())),
                   lambda: inspect(ClusterSource(snapshot=path), catalog=catalog)]
        json_s, msgspec_s, floor_s, inventory_s = median_seconds(actions, args.repeat)
        json_peak, inventory_peak = peak_mib("json.load", path), peak_mib("inventory", path)
        per_node.append((inventory_s / size, floor_s / size))
        print(f"{size:>6} {size * args.pods_per_node:>7} {path.stat().st_size / 2**20:>6.1f} {json_s:>11.4f} {msgspec_s:>10.4f} "
              f"{floor_s:>9.4f} {inventory_s:>11.4f} {inventory_s / floor_s:>6.2f} {inventory_s / size * 1e6:>11.1f} "
              f"{json_peak:>13.1f} {inventory_peak:>12.1f} {inventory_peak / json_peak:>6.2f}", flush=True)
        clis.append((size, *cli_ratio(path, args.repeat)))
        if size == sizes[0]:
            plugins = plugin_build_ratio(path, args.plugin_profiles, args.repeat)
        if not args.keep:
            os.unlink(path)
    if not args.keep:
        os.rmdir(directory)
    growth = [last / first for last, first in zip(per_node[-1], per_node[0], strict=True)]
    print(f"time per node, largest vs smallest size: inventory {growth[0]:.2f}x, GC-paused orjson.loads {growth[1]:.2f}x "
          f"(1.00x is linear)")
    print(f"inventory build at {sizes[0]} nodes with {args.plugin_profiles} plugin profiles: {plugins[1]:.4f} s, with the "
          f"{plugins[2]} built-ins: {plugins[0]:.4f} s, ratio {plugins[1] / plugins[0]:.2f} (goal <= 1.2)")
    for size, lens_s, floor_s in clis:
        print(f"lens cluster inspect -o json at {size} nodes, CPU of the process: {lens_s:.3f} s, of a process that "
              f"only orjson.loads the file (GC paused): {floor_s:.3f} s, ratio {lens_s / floor_s:.2f} (goal <= 1.2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
