"""Idle is a finding, never a default: only cluster objects that list the node and its pods can show that
no pod holds a device. Without them, or without the node in them, a device nobody labels is
``unattributed`` with the reason; with them, and no holder, it is ``idle``.

Page: testdata/dcgm-default-l40s.prom (GPU 0 carries no pod labels; GPU 1 is held by l40s-serving/vllm-qwen3-...).
"""

from __future__ import annotations

import json

from llm_d_lens.cli.app import main
from llm_d_lens.testing.telemetry_pages import NO_OBJECTS, TESTDATA, by_name, cluster, fixture_text, node_object, pod_object, snapshot

PAGE = "dcgm-default-l40s.prom"
HOLDER = "vllm-qwen3-8b-7d9f8c6b5-x2k4p"


def test_without_cluster_objects_an_unlabelled_busy_or_quiet_device_is_unattributed_with_the_reason():
    devices = by_name(snapshot(fixture_text(PAGE), ["nvidia"]))
    quiet = devices["l40s-node-01/0"]["attribution"]
    assert quiet["status"] == "unattributed" and quiet["reason"].startswith(NO_OBJECTS)
    assert "--cluster FILE" in quiet["reason"]
    assert devices["l40s-node-01/1"]["attribution"]["pod"] == HOLDER  # the exporter's label is evidence enough


def test_a_node_missing_from_the_cluster_objects_is_no_evidence_of_idle():
    other = cluster(node_object("gpu-node-99", "10.9.9.9"))
    device = by_name(snapshot(fixture_text(PAGE), ["nvidia"], cluster=other))["l40s-node-01/0"]["attribution"]
    assert device["status"] == "unattributed"
    assert device["reason"] == "node l40s-node-01 is not in the cluster objects, so Lens cannot tell whether a pod holds it"


def test_with_the_node_and_its_pods_listed_and_no_holder_the_device_is_idle():
    objects = cluster(node_object("l40s-node-01", "10.0.4.1"),
                      pod_object(HOLDER, "l40s-node-01", namespace="l40s-serving", limits={"nvidia.com/gpu": "1"}))
    devices = by_name(snapshot(fixture_text(PAGE), ["nvidia"], cluster=objects))
    assert devices["l40s-node-01/0"]["attribution"]["status"] == "idle"
    assert devices["l40s-node-01/0"]["attribution"]["reason"] is None
    assert devices["l40s-node-01/1"]["attribution"]["pod"] == HOLDER


def test_the_cli_with_an_empty_cluster_list_shows_unattributed_and_why(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}), encoding="utf-8")
    code = main(["telemetry", "devices", "--snapshot", str(TESTDATA / PAGE), "--hardware", "nvidia",
                 "--cluster", str(empty), "-o", "json"])
    out = capsys.readouterr().out
    assert code == 0
    by_device = {d["device"]: d["attribution"] for d in json.loads(out)["devices"]}
    assert by_device["1"]["status"] == "attributed"
    assert by_device["0"]["status"] == "unattributed"
    assert "not in the cluster objects" in by_device["0"]["reason"]
    assert not any(a["status"] == "idle" for a in by_device.values())
