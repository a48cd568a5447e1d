"""One real Prometheus for the telemetry tests, backfilled with every sample and fixture page.

The shared samples go in as the exporters wrote them, plus variants as Prometheus stores them
after a scrape: DCGM on a second node with the newer ``hostname`` spelling and with its pod labels
kept as ``exported_*`` (a target pod label added, as with honour_labels off); Gaudi with the target's
``instance``; vLLM with the target's namespace and pod; the TPU fixture scraped from the device
plugin's pod, so its workload labels are ``exported_*`` too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_d_lens.testing.telemetry_pages import as_stored, backfill, fixture_text, sample_text, shared, up_page
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, PrometheusServer, backfill_rules, run_prometheus, skip_reason, wait_for_series

VLLM_POD = "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz"
EXPORTER_TARGET = {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-7xk2p", "container": "nvidia-dcgm-exporter",
                   "instance": "10.0.0.12:9400", "job": "nvidia-dcgm-exporter"}
#: the GPU operator's DCGM exporter on the MIG node (ServiceMonitor without honorLabels)
MIG_TARGET = {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-m1g2x", "container": "nvidia-dcgm-exporter",
              "instance": "10.0.1.5:9400", "job": "nvidia-dcgm-exporter"}
#: xpumd 2.0.0's chart: a ServiceMonitor that relabels the pod's node name into "node"
XPUMD_TARGET = {"namespace": "xpumd", "pod": "xpumd-7q4zt", "container": "xpumd", "instance": "10.0.2.9:8080", "job": "xpumd",
                "node": "xpu-v2-node-01"}
GAUDI_TARGET = {"instance": "10.0.0.7:41611"}
#: the TPU device plugin's own pod, scraped by a ServiceMonitor that keeps target labels and adds the node
TPU_TARGET = {"namespace": "kube-system", "pod": "tpu-device-plugin-x8k2p", "container": "tpu-device-plugin",
              "instance": "10.128.0.21:2112", "node": "gke-tpu-pool-1-a1b2"}


def stored_pages() -> list[str]:
    dcgm = sample_text("dcgm-exporter.prom")
    node_two = as_stored(dcgm.replace("gpu-node-01", "gpu-node-02"), EXPORTER_TARGET, rename={"Hostname": "hostname"})
    return [
        dcgm,
        node_two,
        sample_text("amd-device-metrics-exporter.prom"),
        sample_text("intel-xpumanager.prom"),
        as_stored(sample_text("gaudi-metric-exporter.prom"), GAUDI_TARGET),
        as_stored(sample_text("vllm.prom"), {"namespace": "llm-serving", "pod": VLLM_POD}),
        fixture_text("xpu-max1550-tiles.prom"),
        fixture_text("amd-cpx-partitions.prom"),
        as_stored(fixture_text("tpu-v6e.prom"), TPU_TARGET),
        as_stored(fixture_text("xpumd-v2-max1550.prom"), XPUMD_TARGET),
        as_stored(fixture_text("dcgm-mig.prom"), MIG_TARGET),
        fixture_text("dcgm-old-fields.prom"),
        fixture_text("dcgm-health.prom"),
        fixture_text("dcgm-default-l40s.prom"),
        # Prometheus' own series per target: which pod each scrape target is
        *(up_page(t) for t in (EXPORTER_TARGET, MIG_TARGET, XPUMD_TARGET, TPU_TARGET)),
    ]


@pytest.fixture(scope="session")
def prometheus() -> Iterator[PrometheusServer]:
    """Every sample and fixture, backfilled at BASE_TIMESTAMP."""
    if skip_reason():
        pytest.skip(skip_reason() or "")
    shared("telemetry")
    with run_prometheus(backfill(*stored_pages())) as server:
        yield server


@pytest.fixture(scope="session")
def raw_prometheus() -> Iterator[PrometheusServer]:
    """Only the four shared device samples, as the exporters wrote them (for raw PromQL checks)."""
    if skip_reason():
        pytest.skip(skip_reason() or "")
    names = ["dcgm-exporter.prom", "amd-device-metrics-exporter.prom", "intel-xpumanager.prom", "gaudi-metric-exporter.prom"]
    with run_prometheus(backfill(*(sample_text(n) for n in names))) as server:
        yield server


#: the built-in whose recorded inventory test_recorded makes look like other rules' (its ``lens_rules`` replaced)
STALE_RULES = "google-tpu"
#: when the recorded series of ``recorded_prometheus`` are read: the end of the rule backfill's window, which starts
#: at the samples (BASE_TIMESTAMP, a block boundary) and so holds each group's one evaluation, whatever its offset
RECORDED_AT = BASE_TIMESTAMP + 60


@pytest.fixture(scope="session")
def recorded_prometheus(prometheus, tmp_path_factory) -> Iterator[PrometheusServer]:
    """The same samples, plus what every built-in's recording rules record from them at :data:`RECORDED_AT`.

    Prometheus' own rule backfill (``promtool tsdb create-blocks-from rules``) evaluates the generated
    rules over the ``prometheus`` fixture; the blocks join the samples in a second server. The
    inventory of :data:`STALE_RULES` is recorded with another ``lens_rules`` digest, as rules of
    another Lens version would record it. The server is handed over once every built-in's inventory record
    answers at :data:`RECORDED_AT` (a RuntimeError naming the ones missing otherwise).
    """
    import yaml

    from llm_d_lens.monitoring.accelerator.rules import DIGEST_LABEL, HARDWARE_LABEL, INVENTORY_RECORD, rules_file
    from llm_d_lens.monitoring.accelerator.service import select

    root = tmp_path_factory.mktemp("recorded")
    document = rules_file(select(None), alerts=False)
    for group in document["groups"]:
        for rule in group["rules"]:
            if rule.get("record") == INVENTORY_RECORD and group["name"].endswith(STALE_RULES):
                rule["labels"][DIGEST_LABEL] = "another-version"
    rules = root / "rules.yaml"
    rules.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    blocks = backfill_rules(prometheus.url, rules, root / "blocks", BASE_TIMESTAMP, RECORDED_AT)
    with run_prometheus(backfill(*stored_pages()), blocks=[blocks]) as server:
        wait_for_series(server, INVENTORY_RECORD, {s.profile.id for s in select(None)}, HARDWARE_LABEL, RECORDED_AT)
        yield server
