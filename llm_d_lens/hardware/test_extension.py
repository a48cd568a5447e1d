"""The extension story: a new hardware from a JSON file and entry points alone, no Lens change."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.hardware.resolution import Resolver

NPU = minimal_profile(
    "rebel-npu",
    display_name="Rebellions NPU",
    vendor="rebellions",
    accelerator_keys=["rbln"],
    benchmark_profile=None,
    evaluation_profile=None,
    upstream_variant="npu",
    upstream_vendor="rebellions",
    request_model="dra",
    device_classes=["npu.rebellions.ai"],
    resource_prefixes=[],
    node_label_selector={"rebellions.ai/npu.present": "true"},
    access_modes=["dra"],
)
NPU["deployment"] = {
    "overlay_root": "guides/{guide}/modelserver/{variant}/{model_server}",
    "arch": "npu",
    "device_class": "npu.rebellions.ai",
    "claim_request_name": "npu",
}


def test_a_plugin_profile_appears_in_list_resolution_and_the_api(plugins, fresh_registry):
    plugins.make("rebellions-lens", version="0.3.0", profiles={"rebel-npu": [NPU]})

    # the CLI, as a separate process that finds the plugin the way an installed package is found
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugins.root), *sys.path]))
    listed = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "hardware", "list", "-o", "json"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    entry = next(p for p in json.loads(listed.stdout) if p["id"] == "rebel-npu")
    assert entry["origins"] == ["entry point 'rebel-npu' of rebellions-lens 0.3.0"]

    registry = fresh_registry()
    resolver = Resolver(registry)
    assert resolver.require("rbln").id == "rebel-npu"
    assert resolver.match_device_class("npu.rebellions.ai").profile_id == "rebel-npu"
    assert resolver.match_upstream("npu", "rebellions").profile_id == "rebel-npu"
    assert resolver.match_labels({"rebellions.ai/npu.present": "true"}).profile_id == "rebel-npu"

    body = TestClient(create_app()).get("/api/v1/hardware/capabilities").json()
    api_entry = next(p for p in body["profiles"] if p["id"] == "rebel-npu")
    assert api_entry["access_mode_details"]["dra"]["device_class"] == "npu.rebellions.ai"
    assert api_entry["benchmark_profile"] is None
