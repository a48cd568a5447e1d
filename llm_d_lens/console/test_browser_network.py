"""The console shows network devices and shared GPUs (issue 31), in Chromium against a real ``lens serve``.

The snapshot is written here: a time-sliced H100 node (8 GPUs x 4 replicas advertised as
``nvidia.com/gpu: 32``, GPU feature discovery's labels), an SR-IOV node with ``nvidia.com/sriov-rdma-vf: 8``,
a GKE-like node with ``networking.gke.io.networks/rdma-0..7`` and their ``.IP`` twins, and a
dranet ResourceSlice with two RDMA interfaces.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_d_lens.console.conftest import needs_chromium
from llm_d_lens.testing.cluster import as_list, attributes, device, node, resource_slice
from llm_d_lens.testing.console import lens_serve

pytestmark = needs_chromium


def snapshot(path: Path) -> Path:
    gke = {"nvidia.com/gpu": "8"}
    for i in range(8):
        gke[f"networking.gke.io.networks/rdma-{i}"] = "1"
        gke[f"networking.gke.io.networks/rdma-{i}.IP"] = "1"
    items = [
        node("ts-h100", labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "4",
                                "nvidia.com/gpu.sharing-strategy": "time-slicing",
                                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED"},
             resources={"nvidia.com/gpu": "32"}),
        node("sriov-h100", labels={"nvidia.com/gpu.present": "true"},
             resources={"nvidia.com/gpu": "8", "nvidia.com/sriov-rdma-vf": "8"}),
        node("a3-ultra", labels={"nvidia.com/gpu.present": "true"}, resources=gke),
        node("dranet-node", resources={"nvidia.com/gpu": "8"}),
        resource_slice("dranet-node-dra.net-a", driver="dra.net", node_name="dranet-node", devices=[
            device(f"eth{i}", attrs=attributes(**{"dra.net__rdma": True})) for i in range(2)]),
    ]
    path.write_text(json.dumps(as_list(*items)))
    return path


@pytest.fixture(scope="module")
def lens(tmp_path_factory) -> Iterator[str]:
    path = snapshot(tmp_path_factory.mktemp("snapshot") / "cluster.json")
    with lens_serve({"LENS_CLUSTER_SNAPSHOT": str(path)}) as url:
        yield url


def test_the_overview_shows_nics_counted_once_and_shares_of_the_gpus(browser, lens):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(lens + "/")
    page.wait_for_load_state("networkidle")
    # 8 + 8 + 8 + 8 physical GPUs: the 32 time-slicing replicas are shares, not 24 more GPUs
    assert page.locator("#summary [data-field=total_gpu_count]").inner_text() == "32"
    assert page.locator("#summary [data-field=shares]").inner_text() == "32"
    card = page.locator("article[data-hardware=nvidia]")
    assert card.locator("[data-field=devices]").inner_text() == "32"
    assert card.locator("[data-field=shares]").inner_text() == "32"
    # 8 VFs + 8 GKE NICs (16 resource names) + 2 dranet interfaces
    assert page.locator("#summary [data-field=nics]").inner_text() == "18"
    rows = {row.get_attribute("data-network"): row for row in page.locator("#network tbody tr").all()}
    assert set(rows) == {"dranet", "gke-rdma", "sriov-rdma-vf"}
    assert rows["gke-rdma"].locator("[data-field=nics]").inner_text() == "8"
    assert rows["sriov-rdma-vf"].locator("[data-field=pairing]").inner_text() == "per-device"
    assert rows["dranet"].locator("[data-field=nics]").inner_text() == "2"
    assert page.locator("#network").is_visible()
    # nothing of it is "not claimed by any profile"
    assert page.locator("#unsupported tbody tr").count() == 0
    assert errors == []
    context.close()
