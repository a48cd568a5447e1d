"""The GPU operator's default scrape setup: attribution never names the exporter's own pod.

With a ServiceMonitor without honorLabels, Prometheus writes the exporter pod's own ``pod`` and
``namespace`` on every series it scrapes, keeping the workload's as ``exported_*``; a GPU nobody
holds then carries only the exporter's pod. Pages here are the shared DCGM sample as Prometheus
stores it after such a scrape, with Prometheus' own ``up`` series for the target.
"""

from __future__ import annotations

import re

from llm_d_lens.monitoring.conftest import EXPORTER_TARGET, VLLM_POD
from llm_d_lens.testing.telemetry_pages import NO_OBJECTS, as_stored, backfill, by_name, needs_prometheus, refresh, sample_text, snapshot, up_page
from llm_d_lens.testing.prometheus import run_prometheus

TARGET = {**EXPORTER_TARGET, "pod": "nvidia-dcgm-exporter-q9z8w", "instance": "10.0.0.31:9400"}


def all_idle_page() -> str:
    """The DCGM sample on gpu-node-03 with nobody holding GPU 0 either: no exported_* label anywhere."""
    text = sample_text("dcgm-exporter.prom").replace("gpu-node-01", "gpu-node-03")
    return re.sub(r',container="vllm",namespace="llm-serving",pod="[^"]+"', "", text)


@needs_prometheus
def test_a_node_of_idle_gpus_is_idle_not_held_by_its_exporter():
    with run_prometheus(backfill(as_stored(all_idle_page(), TARGET), up_page(TARGET))) as server:
        devices = by_name(refresh(server.url, ["nvidia"]))
    assert sorted(devices) == ["gpu-node-03/0", "gpu-node-03/1"]
    for device in devices.values():
        # no pod holds them as far as the exporter says; without cluster objects Lens does not call that idle
        assert device["attribution"]["status"] == "unattributed", device["attribution"]
        assert device["attribution"]["pod"] is None and device["attribution"]["reason"].startswith(NO_OBJECTS)
        assert device["exporter_pods"] == []
        assert device["exporter_pod"] == {"namespace": "gpu-operator", "pod": TARGET["pod"]}


@needs_prometheus
def test_a_workload_pod_that_is_a_scrape_target_elsewhere_still_owns_its_gpu():
    """Only the series' own target is the exporter: a vLLM pod that Prometheus also scrapes keeps its GPU."""
    vllm_target = {"namespace": "llm-serving", "pod": VLLM_POD, "instance": "10.0.0.40:8000", "job": "vllm"}
    page = as_stored(sample_text("dcgm-exporter.prom").replace("gpu-node-01", "gpu-node-03"), TARGET)
    with run_prometheus(backfill(page, up_page(TARGET), up_page(vllm_target))) as server:
        devices = by_name(refresh(server.url, ["nvidia"]))
    assert devices["gpu-node-03/0"]["attribution"]["pod"] == VLLM_POD
    assert devices["gpu-node-03/1"]["attribution"]["status"] == "unattributed"  # nobody, but no cluster objects


def test_a_stored_page_with_exported_labels_drops_the_plain_pod_label_of_its_target():
    """Without ``up`` (a page saved from Prometheus), exported_* on the target prove its plain pod label is the target's."""
    page = as_stored(sample_text("dcgm-exporter.prom"), TARGET)
    devices = by_name(snapshot(page, ["nvidia"]))
    assert devices["gpu-node-01/0"]["attribution"]["pod"] == VLLM_POD
    idle = devices["gpu-node-01/1"]
    assert idle["attribution"]["status"] == "unattributed" and idle["attribution"]["pod"] is None
    assert idle["exporter_pod"]["pod"] == TARGET["pod"]


def test_a_raw_exporter_page_keeps_its_pod_labels():
    """Straight from the exporter (no Prometheus in between), pod labels are the workload's."""
    devices = by_name(snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"]))
    assert devices["gpu-node-01/0"]["attribution"]["pod"] == VLLM_POD
    assert devices["gpu-node-01/0"]["exporter_pod"] is None


@needs_prometheus
def test_without_a_hostname_label_the_node_comes_from_the_target():
    """DCGM with --no-hostname (and AMD or XPU exporters without their node label): ``instance`` names the
    node, without its port; with cluster objects an address becomes the node's name."""
    from llm_d_lens.testing.telemetry_pages import cluster, node_object

    page = re.sub(r',Hostname="[^"]+"', "", sample_text("dcgm-exporter.prom"))
    with run_prometheus(backfill(as_stored(page, TARGET), up_page(TARGET))) as server:
        devices = by_name(refresh(server.url, ["nvidia"]))
        named = by_name(refresh(server.url, ["nvidia"], cluster=cluster(node_object("gpu-node-07", "10.0.0.31"))))
    assert sorted(devices) == ["10.0.0.31/0", "10.0.0.31/1"]
    assert sorted(named) == ["gpu-node-07/0", "gpu-node-07/1"]
