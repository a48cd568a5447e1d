"""Numbers in cluster objects: every one finite and bounded, or a coded error naming file, path and value.

The cases are the ones a hostile snapshot found: integer literals over the interpreter's digit
limit, ``1e400`` sizes and counts, NaN, negative DRA capacities, allocation results that name no
device. The property at the end mutates real-shaped objects and holds the inventory to "coded
error, or numbers that add up".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_d_lens.cli.app import main
from llm_d_lens.cluster.errors import ObjectInvalid, SnapshotInvalid
from llm_d_lens.cluster.quantity import (
    QuantityError,
    parse_bytes,
    parse_count,
    parse_quantity,
)
from llm_d_lens.cluster.snapshot import load_snapshot
from llm_d_lens.testing.cluster import (
    as_list,
    attributes,
    claim,
    device,
    node,
    pod,
    resource_slice,
)
from llm_d_lens.errors import LensError

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def run_inspect(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["cluster", "inspect", "--snapshot", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str, name: str = "cluster.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GPU_NODE = json.dumps(as_list(node("n1", labels=H100, resources={"nvidia.com/gpu": 8})))

# (name, snapshot text, error code, text every message must contain)
SNAPSHOTS = [
    ("integer over the digit limit", GPU_NODE.replace(": 8", ": " + "7" * 5000), "CLUSTER_SNAPSHOT_INVALID",
     '$.items[0].status.capacity["nvidia.com/gpu"]: 7777777777777777...77777777 (5000 characters) is an integer literal'),
    ("NaN count", GPU_NODE.replace(": 8", ": NaN"), "CLUSTER_SNAPSHOT_INVALID",
     '$.items[0].status.capacity["nvidia.com/gpu"]: NaN is not a finite number'),
    ("Infinity count", GPU_NODE.replace(": 8", ": -Infinity"), "CLUSTER_SNAPSHOT_INVALID",
     '$.items[0].status.allocatable["nvidia.com/gpu"]: -Infinity is not a finite number'),
    ("float beyond a double", GPU_NODE.replace(": 8", ": 1e400"), "CLUSTER_SNAPSHOT_INVALID",
     '["nvidia.com/gpu"]: 1e400 is not a finite number (beyond the range of a double)'),
    ("count 1e400", GPU_NODE.replace(": 8", ': "1e400"'), "CLUSTER_OBJECT_INVALID",
     'Node n1: status.capacity["nvidia.com/gpu"]: "1e400" is out of range (over 2^63-1'),
    ("a 5000-digit count string", GPU_NODE.replace(": 8", ': "' + "9" * 5000 + '"'), "CLUSTER_OBJECT_INVALID",
     "is out of range (over 2^63-1"),
    ("count as a 5000-digit JSON integer beyond the digit limit is refused before counting",
     GPU_NODE.replace(": 8", ": 1" + "0" * 99), "CLUSTER_OBJECT_INVALID", "is out of range"),
    ("DRA memory 1e400", json.dumps(as_list(resource_slice("s", driver="gpu.nvidia.com", node_name="n1", devices=[
        device("gpu-0", attrs=attributes(type="gpu"), capacity={"memory": "1e400"})]))),
     "CLUSTER_OBJECT_INVALID", 'spec.devices[0].capacity["memory"].value: "1e400" is out of range'),
    ("negative DRA capacity", json.dumps(as_list(resource_slice("s", driver="dra.cpu", node_name="n1", devices=[
        device("cpu-0", capacity={"dra.cpu/cpu": "-1k"}, allowMultipleAllocations=True)]))),
     "CLUSTER_OBJECT_INVALID", 'spec.devices[0].capacity["dra.cpu/cpu"].value: "-1k" is not a capacity (negative)'),
    ("negative consumed capacity", json.dumps(as_list(
        resource_slice("s", driver="dra.cpu", node_name="n1", devices=[
            device("cpu-0", capacity={"dra.cpu/cpu": "112"}, allowMultipleAllocations=True)]),
        claim("c", results=[("dra.cpu", "n1", "cpu-0")], consumed={"dra.cpu/cpu": "-32"}))),
     "CLUSTER_OBJECT_INVALID", 'consumedCapacity["dra.cpu/cpu"]: "-32" is not a capacity (negative)'),
    ("allocation result without a device", json.dumps(as_list(
        resource_slice("s", driver="gpu.nvidia.com", node_name="n1", devices=[device("gpu-0", attrs=attributes(type="gpu"))]),
        claim("c", results=[("gpu.nvidia.com", "n1", "")]))).replace('"device": "", ', ""),
     "CLUSTER_OBJECT_INVALID", "ResourceClaim llm/c: status.allocation.devices.results[0].device: null is missing"),
]


@pytest.mark.parametrize("name,text,code,expected", SNAPSHOTS, ids=[s[0] for s in SNAPSHOTS])
def test_a_bad_number_in_a_snapshot_is_a_coded_error_naming_file_path_and_value(tmp_path, capsys, name, text, code, expected):
    path = write(tmp_path, text)
    status, out, err = run_inspect(path, capsys)
    assert status == 1 and out == ""
    assert "Traceback" not in err
    assert err.startswith(f"error: {code}: {path}")
    if expected is not None:
        assert expected in err


def test_the_same_refusals_from_a_gzipped_snapshot(tmp_path, capsys):
    import gzip

    path = tmp_path / "cluster.json.gz"
    path.write_bytes(gzip.compress(GPU_NODE.replace(": 8", ": NaN").encode()))
    status, _, err = run_inspect(path, capsys)
    assert status == 1 and "$.items[0].status.capacity" in err and "NaN is not a finite number" in err


@pytest.mark.parametrize("value,reason", [
    ("1e400", "out of range"), ("9223372036854775808", "out of range"), ("1" + "0" * 5000, "out of range"),
    (10**5000, "out of range"), ("8Ei", "out of range"), ("1e19", "out of range"), (float("nan"), "not a quantity"),
], ids=["1e400", "2^63", "5001-digit string", "5001-digit int", "8Ei", "1e19", "nan"])
def test_quantities_stop_at_the_int64_kubernetes_stores(value, reason):
    for parse in (parse_quantity, parse_count, parse_bytes):
        with pytest.raises(QuantityError) as caught:
            parse(value)
        assert reason in caught.value.reason


def test_the_largest_int64_is_still_read():
    assert parse_count("9223372036854775807") == 2**63 - 1
    assert parse_bytes("7Ei") == 7 * 2**60


def test_a_snapshot_with_a_nan_is_a_problem_document_from_the_api_not_a_500(tmp_path):
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.serving.test_api import client_for

    for text in (GPU_NODE.replace(": 8", ": NaN"), GPU_NODE.replace(": 8", ": " + "7" * 5000),
                 GPU_NODE.replace(": 8", ': "1e400"')):
        path = write(tmp_path, text)
        response = client_for(ClusterSource(snapshot=path)).get("/api/v1/clusters/overview")
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["details"]["cause"] in ("CLUSTER_SNAPSHOT_INVALID", "CLUSTER_OBJECT_INVALID")


def test_an_error_carrying_a_nan_or_a_lone_surrogate_still_renders_as_a_problem():
    from fastapi import APIRouter

    from llm_d_lens.api.app import create_app

    app = create_app()
    router = APIRouter()

    @router.get("/boom")
    def boom() -> None:
        raise ObjectInvalid({"kind": "Node", "metadata": {"name": "n\udc80"}}, "status.capacity.cpu", float("nan"), "is not a quantity")

    app.include_router(router)
    response = TestClient(app).get("/boom")
    assert response.status_code == 422
    assert response.json()["details"]["value"] == "nan"
    assert "\\udc80" in response.json()["details"]["object"]


# -- the property: coded error, or numbers that add up ---------------------------------------------

QUANTITY = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["8", "0", "-1", "1k", "1e400", "-1k", "500m", "1.5", "8Gi", "1E", "9" * 40, "", "NaN", "1e-400", "0x10"]),
    st.from_regex(r"[+-]?[0-9]{1,25}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4}|[kMGTPE]|[KMGTPE]i|m)?", fullmatch=True),
)


def _cluster(gpus, allocatable, held, cpu_capacity, consumed, with_device):
    result = ("dra.cpu", "n2", "cpu-0") if with_device else ("dra.cpu", "n2", "")
    items = [
        node("n1", labels=H100, resources={"nvidia.com/gpu": gpus}, allocatable={"nvidia.com/gpu": allocatable}),
        pod("p", "n1", limits={"nvidia.com/gpu": held}),
        resource_slice("s", driver="dra.cpu", node_name="n2", devices=[
            device("cpu-0", capacity={"dra.cpu/cpu": cpu_capacity}, allowMultipleAllocations=True)]),
        claim("c", results=[result], consumed={"dra.cpu/cpu": consumed}),
    ]
    return items


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(gpus=QUANTITY, allocatable=QUANTITY, held=QUANTITY, cpu_capacity=QUANTITY, consumed=QUANTITY, with_device=st.booleans())
def test_any_numbers_give_a_coded_error_or_totals_that_add_up(tmp_path, gpus, allocatable, held, cpu_capacity, consumed, with_device):
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(as_list(*_cluster(gpus, allocatable, held, cpu_capacity, consumed, with_device))))
    try:
        overview = _overview_of(path)
    except (ObjectInvalid, SnapshotInvalid) as exc:
        assert exc.code in ("CLUSTER_OBJECT_INVALID", "CLUSTER_SNAPSHOT_INVALID")
        return
    except LensError as exc:  # any other coded refusal is acceptable too, never a bare exception
        assert exc.code
        return
    document = overview.to_dict()
    json.dumps(document, allow_nan=False)  # every number in the answer is finite
    for bucket in document["vendors"]:
        assert bucket["allocatable"] >= 0 and bucket["allocated"] >= 0 and bucket["available"] >= 0
        assert bucket["allocated"] - bucket["overcommitted"] + bucket["available"] == bucket["allocatable"], bucket
        for total, used in ((c["total"], c["consumed"]) for c in bucket.get("capacity", {}).values() if isinstance(c, dict)):
            assert float(total) >= 0 and float(used) >= 0


def _overview_of(path: Path):
    from llm_d_lens.cluster.catalog import Catalog
    from llm_d_lens.cluster.inventory import build_inventory

    return build_inventory(load_snapshot(path), Catalog())
