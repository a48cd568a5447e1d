"""The partial decode counts exactly what the whole document counts, and fails exactly as it does."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens import jsonread
from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.live import fetch_sync
from llm_d_lens.cluster.snapshot import load_snapshot
from llm_d_lens.cluster.test_live import dra_cluster
from llm_d_lens.testing.cluster import (
    as_list,
    attributes,
    claim,
    container,
    device,
    device_class,
    node,
    pod,
    resource_slice,
    shared_root,
)
from llm_d_lens.errors import LensError
from llm_d_lens.testing.fake_runner import FakeRunner

REPO = Path(__file__).resolve().parents[2]
CATALOG = Catalog()


def outcome(path: Path, *, partial: bool) -> tuple[str, Any]:
    """The overview a snapshot gives, or the error it raises, as data two runs can be compared by."""
    try:
        return "overview", build_inventory(load_snapshot(path, partial=partial), CATALOG).to_dict()
    except LensError as exc:
        return exc.code, exc.message


def small_cluster() -> list[dict[str, Any]]:
    """One object of every kind the inventory reads, each field the decode shape names in use."""
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu", model="Max 1550"), capacity={"memory": "128Gi"}) for i in range(2)]
    return [
        node("h100", labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
             resources={"nvidia.com/gpu": "8"}),
        node("xpu-1", labels={"intel.feature.node.kubernetes.io/gpu": "true"}, unschedulable=True),
        pod("a", "h100", containers=[container(limits={"nvidia.com/gpu": "2", "example.com/fancy": "1"})],
            init=[container("side", limits={"nvidia.com/gpu": "1"}, restart_policy="Always"), container("warm", limits={"nvidia.com/gpu": "4"})]),
        pod("b", "xpu-1", claims=[{"name": "gpus", "resourceClaimName": "c"}], phase="Succeeded"),
        pod("c", None, limits={"nvidia.com/gpu": "1"}, phase="Pending"),
        resource_slice("xpu-1-gpu", driver="gpu.intel.com", node_name="xpu-1", devices=gpus),
        device_class("fancy", driver="gpu.intel.com", extended_resource="example.com/fancy"),
        claim("c", results=[("gpu.intel.com", "xpu-1", "gpu-0")], reserved_for=["b"]),
        claim("d", results=None, requests=[{"name": "gpus", "exactly": {"deviceClassName": "gpu.intel.com", "count": 2}}]),
    ]


#: every place the decode shape types or keeps, per item index in small_cluster()
SHAPED_PATHS: list[tuple[int, tuple[Any, ...]]] = [
    (0, ("kind",)), (0, ("metadata",)), (0, ("metadata", "name")), (0, ("metadata", "labels")), (0, ("spec",)),
    (1, ("spec", "unschedulable")), (0, ("status",)), (0, ("status", "conditions")), (0, ("status", "capacity")),
    (0, ("status", "allocatable")),
    (2, ("metadata", "namespace")), (2, ("spec", "containers")), (2, ("spec", "containers", 0)),
    (2, ("spec", "containers", 0, "resources")), (2, ("spec", "initContainers")), (2, ("spec", "initContainers", 0)),
    (2, ("spec", "initContainers", 0, "restartPolicy")), (2, ("spec", "nodeName")), (2, ("status",)), (2, ("status", "phase")),
    (2, ("status", "extendedResourceClaimStatus")), (3, ("spec", "resourceClaims")),
    (5, ("spec", "driver")), (5, ("spec", "pool")), (5, ("spec", "devices")), (5, ("spec", "nodeName")),
    (6, ("spec", "extendedResourceName")), (6, ("spec", "selectors")),
    (8, ("spec", "devices")), (7, ("status", "allocation")), (7, ("status", "reservedFor")),
]
#: read, but no value there changes this small cluster's overview (the decode must still keep it)
UNOBSERVED = {(6, ("spec", "extendedResourceName"))}
WRONG_VALUES: list[Any] = [None, "x", 7, True, [], {}, [1]]


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("index", "where"), SHAPED_PATHS, ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_a_wrong_value_anywhere_the_shape_looks_gives_the_same_overview_or_the_same_error(
        tmp_path: Path, index: int, where: tuple[Any, ...]) -> None:
    baseline = outcome(write(tmp_path / "base.json", as_list(*small_cluster())), partial=False)
    changed = False
    for number, value in enumerate(WRONG_VALUES):
        items = small_cluster()
        target = items[index]
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = value
        path = write(tmp_path / f"c{number}.json", as_list(*items))
        whole = outcome(path, partial=False)
        assert outcome(path, partial=True) == whole, (where, value)
        changed |= whole != baseline
    assert baseline[0] == "overview"
    assert changed or (index, where) in UNOBSERVED, f"no value at {where} changed the outcome: the case tests nothing"


@pytest.mark.parametrize("document", [
    [1, 2], {"kind": "List", "items": {"a": 1}}, {"kind": "List", "items": [1]}, {"kind": "NodeList", "items": None},
    {"kind": "Pod"}, {"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "a"}, "status": "up"}]},
], ids=str)
def test_documents_that_are_no_list_fail_with_the_same_error(tmp_path: Path, document: Any) -> None:
    path = write(tmp_path / "c.json", document)
    assert outcome(path, partial=True) == outcome(path, partial=False)


@pytest.mark.parametrize(("raw", "problem"), [
    (b'{"kind": "List", "items": [NaN]}', "holds values Lens does not read: $.items[0]: NaN is not a finite number"),
    (b'{"kind": "List", "items": [}', "is not JSON"), (b"\xff\xfe{}", "is not JSON"), (b"[" * 100000, "is not JSON"),
    (b'{"kind": "List", "items": []} trailing', "is not JSON")], ids=["nan", "broken", "not-utf8", "deep", "trailing"])
def test_text_msgspec_does_not_read_is_reported_as_before(tmp_path: Path, raw: bytes, problem: str) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(raw)
    partial = outcome(path, partial=True)
    assert partial == outcome(path, partial=False)
    assert partial[0] == "CLUSTER_SNAPSHOT_INVALID" and partial[1].startswith(f"{path}: {problem}")


#: where SKIPPED_AT puts a literal: a pod's env value, a field the partial decode skips unread
MARK = '"@@literal@@"'
SKIPPED_AT = "$.items[2].spec.containers[0].env[0].value"
# (literal, what the strict reader says about it; None: it reads the snapshot)
LITERALS: list[tuple[bytes, str | None]] = [
    (b"1e400", f"holds values Lens does not read: {SKIPPED_AT}: 1e400 is not a finite number (beyond the range of a double)"),
    (b"1E+309", "1E+309 is not a finite number"), (b"-1.5e400", "-1.5e400 is not a finite number"),
    (b"9" * 210 + b"e99", "is not a finite number"),  # beyond a double with a 2-digit exponent
    (b"7" * 5000, f"{SKIPPED_AT}: 7777777777777777...77777777 (5000 characters) is an integer literal over 100 digits"),
    (b"NaN", "NaN is not a finite number"), (b"-Infinity", "-Infinity is not a finite number"),
    (b'"\xff"', "is not JSON (it is not UTF-8 text)"), (b'"caf\xc3"', "is not JSON (it is not UTF-8 text)"),
    (b"[" * 5000 + b"]" * 5000, "is not JSON (nested too deeply)"),
    (b"[1,]", "is not JSON"), (b"01", "is not JSON"), (b"1.", "is not JSON"), (b"-", "is not JSON"), (b"tru", "is not JSON"),
    (b'"a\tb"', "is not JSON"), (b'"\\u12"', "is not JSON"), (b"\x0c1", "is not JSON"),
    # read by both: the scan's false alarms and values near the limits take the strict path or give its answer
    (b"1e-400", None), (b"1.5e300", None), (b"1" * 100, None), (b"12345678901234567890123", None), (b'"caf\xc3\xa9"', None),
    (b'"\xf0\x9f\x9a\x80"', None), (b'"\xed\xa0\x80"', None), (b'"\\ud800"', None), (b'{"a": 1, "a": 2}', None),
    (b'"x 1e400 y"', None), (b"-0", None), (b"2.2250738585072011e-308", None), (b"[" * 100 + b"]" * 100, None),
]


def marked_snapshot() -> bytes:
    items = small_cluster()
    items[2]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "@@literal@@"}]
    return json.dumps(as_list(*items), indent=4).encode()


def snapshot_forms(tmp_path: Path, raw: bytes) -> list[Path]:
    """The same text as a snapshot file, gzipped, and as a directory of one file per kind."""
    plain = tmp_path / "c.json"
    plain.write_bytes(raw)
    zipped = tmp_path / "c.json.gz"
    zipped.write_bytes(gzip.compress(raw))
    split = tmp_path / "dir"
    split.mkdir()
    (split / "pods.json").write_bytes(raw)
    write(split / "nodes.json", as_list(*small_cluster()[:2]))
    return [plain, zipped, split]


@pytest.mark.parametrize(("literal", "problem"), LITERALS, ids=lambda v: repr(v)[:40] if isinstance(v, bytes) else None)
def test_a_value_the_strict_reader_refuses_is_refused_where_msgspec_skips_it(tmp_path: Path, literal: bytes, problem: str | None) -> None:
    raw = marked_snapshot().replace(MARK.encode(), literal)
    for path in snapshot_forms(tmp_path, raw):
        strict = outcome(path, partial=False)
        assert outcome(path, partial=True) == strict, path
        if problem is None:
            assert strict[0] == "overview"
        else:
            assert strict[0] == "CLUSTER_SNAPSHOT_INVALID" and problem in strict[1], strict


def kubectl_outcome(stdout: str, *, partial: bool) -> tuple[str, Any]:

    runner = dra_cluster(FakeRunner(), PODS={"stdout": stdout})
    try:
        return "overview", build_inventory(fetch_sync(runner, partial=partial), CATALOG).to_dict()
    except LensError as exc:
        return exc.code, exc.message


@pytest.mark.parametrize(("literal", "problem"), [(lit, p) for lit, p in LITERALS if lit.isascii()],
                         ids=lambda v: repr(v)[:40] if isinstance(v, bytes) else None)
def test_kubectl_output_the_strict_reader_refuses_is_refused_as_before(literal: bytes, problem: str | None) -> None:
    stdout = marked_snapshot().replace(MARK.encode(), literal).decode()
    strict = kubectl_outcome(stdout, partial=False)
    assert kubectl_outcome(stdout, partial=True) == strict
    if problem is None:
        assert strict[0] == "overview"
    else:
        expected = "did not print valid JSON" if problem.startswith("is not JSON") else problem.split(": ")[-1]
        assert strict[0] == "COMMAND_OUTPUT_INVALID" and expected in strict[1], strict


def test_nesting_around_the_recursion_limit_gets_the_strict_readers_answer(tmp_path: Path) -> None:
    """msgspec counts nesting against the same limit from fewer frames; it runs deeper, so it gives up first."""
    def at(depth: int, *, partial: bool) -> tuple[str, Any]:
        path = tmp_path / f"c{depth}.json"
        path.write_bytes(marked_snapshot().replace(MARK.encode(), b"[" * depth + b"]" * depth))
        return outcome(path, partial=partial)

    low, high = 1, 5000  # the deepest nesting the strict reader reads from here
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if at(middle, partial=False)[0] == "overview" else (low, middle - 1)
    assert 100 < low < 5000
    for depth in range(low - 12, low + 24):
        assert at(depth, partial=True) == at(depth, partial=False), depth


@pytest.mark.parametrize("literal", [b"1e400", b"1E+0309", b"7" * 120], ids=str)
def test_the_scan_finds_a_literal_wherever_the_chunks_cut_it(monkeypatch: pytest.MonkeyPatch, literal: bytes) -> None:
    monkeypatch.setattr(jsonread, "_CHUNK", 1024)
    for offset in range(1024 - len(literal) - 3, 1024 + 3):
        for gap in (b"", b" \n" * 700):  # the number's end can be far away, past the next chunk's start
            text = b" " * offset + b"[" + literal + gap + b"]" + b" " * 2000
            assert jsonread.may_be_refused(text) and jsonread.may_be_refused(text.decode()), (offset, len(gap))
            assert not jsonread.may_be_refused(text.replace(literal, b"1")), (offset, len(gap))


def test_the_scan_checks_utf8_across_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonread, "_CHUNK", 1024)
    for offset in range(1024 - 5, 1024 + 2):
        for char in ("\u00e9", "\u20ac", "\U0001f680"):
            valid = b" " * offset + b'"' + char.encode() + b'"' + b" " * 1500
            assert not jsonread.may_be_refused(valid), (offset, char)
            cut = b" " * offset + b'"' + char.encode()[:-1] + b'"' + b" " * 1500  # a sequence missing its last byte
            assert jsonread.may_be_refused(cut), (offset, char)
        assert jsonread.may_be_refused(b" " * offset + b"\xe2\x82")  # the text ends inside a sequence


def test_realistic_snapshots_take_the_fast_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The scan raises no false alarm on real-shaped data (hex digests, UIDs, timestamps), so msgspec really runs."""
    def refuse(data: Any) -> Any:
        raise AssertionError("the strict reader ran")

    bench = bench_module()
    path = tmp_path / "c.json"
    bench.write_snapshot(path, 60, 5, indent=4)
    monkeypatch.setattr("llm_d_lens.cluster.snapshot.parse_json", refuse)
    for snapshot in [path, *snapshots()]:
        objects = load_snapshot(snapshot, partial=True)
        assert objects.nodes and all("apiVersion" not in n for n in objects.nodes), snapshot


def bench_module() -> Any:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import inventory as bench  # the bench generator: every built-in kind of node, pods, slices, claims
    finally:
        sys.path.pop(0)
    return bench


def test_the_partial_decode_keeps_only_what_the_inventory_reads(tmp_path: Path) -> None:
    items = small_cluster()
    items[0]["status"]["images"] = [{"names": ["a"], "sizeBytes": 1}]
    items[0]["metadata"]["annotations"] = {"a": "b"}
    items[2]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    path = write(tmp_path / "c.json", as_list(*items))
    whole, partial = load_snapshot(path), load_snapshot(path, partial=True)
    assert "images" in whole.nodes[0]["status"] and "images" not in partial.nodes[0]["status"]
    assert "annotations" not in partial.nodes[0]["metadata"] and "apiVersion" not in partial.nodes[0]
    assert "env" not in partial.pods[0]["spec"]["containers"][0] and "image" not in partial.pods[0]["spec"]["containers"][0]
    assert partial.nodes[0]["status"]["capacity"] == whole.nodes[0]["status"]["capacity"]


def snapshots() -> list[Path]:
    found = [REPO / "llm_d_lens" / "cluster" / "demo" / "demo-cluster.json"]
    shared = shared_root()
    if shared is not None:
        found += sorted((shared / "clusters").glob("*.json"))
    return found


@pytest.mark.parametrize("path", snapshots(), ids=lambda p: p.name)
def test_real_shaped_snapshots_count_the_same_partially_decoded(path: Path) -> None:
    whole = outcome(path, partial=False)
    assert whole[0] == "overview"
    assert outcome(path, partial=True) == whole


def test_the_benchmark_cluster_gzipped_and_as_a_directory_counts_the_same(tmp_path: Path) -> None:
    bench = bench_module()
    plain = tmp_path / "c.json"
    bench.write_snapshot(plain, 100, 3, indent=4)
    zipped = tmp_path / "c.json.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    split = tmp_path / "dir"
    split.mkdir()
    document = json.loads(plain.read_text())
    for kind in ("Node", "Pod", "ResourceSlice", "DeviceClass", "ResourceClaim"):
        write(split / f"{kind.lower()}s.json", as_list(*(i for i in document["items"] if i["kind"] == kind)))
    whole = outcome(plain, partial=False)
    assert whole[0] == "overview" and whole[1]["total_gpu_count"] > 0
    for path in (plain, zipped, split):
        assert outcome(path, partial=True) == whole, path


def test_kubectl_output_decodes_partially_with_the_same_overview() -> None:
    whole = build_inventory(fetch_sync(dra_cluster(FakeRunner())), CATALOG).to_dict()
    partial = build_inventory(fetch_sync(dra_cluster(FakeRunner()), partial=True), CATALOG).to_dict()
    assert partial == whole and whole["total_gpu_count"] > 0


def test_a_saved_snapshot_keeps_every_field(tmp_path: Path) -> None:
    """`lens cluster snapshot` writes what kubectl printed, not the inventory's subset."""
    objects = fetch_sync(dra_cluster(FakeRunner()))
    assert objects.nodes[0]["apiVersion"] == "v1" and "image" in objects.pods[0]["spec"]["containers"][0]
