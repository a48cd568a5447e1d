"""Snapshots: one file or a directory, gzipped or not; bad files are named; writing never clobbers."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from llm_d_lens.cluster.errors import SnapshotExists, SnapshotInvalid, SnapshotNotFound
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.snapshot import load_snapshot, snapshot_document, write_snapshot
from llm_d_lens.testing.cluster import as_list, node, pod


def _write(path: Path, body: object, *, gz: bool = False) -> Path:
    data = json.dumps(body).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_one_file_holding_every_kind_is_sorted_by_kind(tmp_path: Path) -> None:
    items = [node("n1", resources={"nvidia.com/gpu": "8"}), pod("p", "n1", limits={"nvidia.com/gpu": "1"}),
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"}}]
    objects = load_snapshot(_write(tmp_path / "cluster.json", as_list(*items)))
    assert objects.counts() == {"Node": 1, "Pod": 1, "ResourceSlice": 0, "DeviceClass": 0, "ResourceClaim": 0}
    assert objects.ignored_kinds == {"Namespace": 1}
    assert objects.dra_api is None  # a snapshot without DRA kinds cannot say whether the cluster serves DRA


def test_a_directory_of_per_kind_files_gzipped_or_not_is_one_snapshot(tmp_path: Path) -> None:
    _write(tmp_path / "nodes.json", as_list(node("n1", resources={"amd.com/gpu": "8"}), node("n2")))
    _write(tmp_path / "pods.json.gz", as_list(pod("p", "n1", limits={"amd.com/gpu": "3"})), gz=True)
    _write(tmp_path / "deviceclasses.json", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClassList", "items": [
        {"metadata": {"name": "gpu.amd.com"}, "spec": {}}]})  # a typed list may leave kind off its items
    (tmp_path / "README.txt").write_text("not a snapshot file")
    objects = load_snapshot(tmp_path)
    assert objects.counts() == {"Node": 2, "Pod": 1, "ResourceSlice": 0, "DeviceClass": 1, "ResourceClaim": 0}
    assert objects.dra_api is True
    overview = build_inventory(objects)
    assert [(b["profile_id"], b["devices"], b["allocated"]) for b in overview.to_dict()["vendors"]] == [("amd", 8, 3)]


def test_an_object_saved_in_two_files_of_a_directory_is_counted_once_and_reported(tmp_path: Path) -> None:
    # `kubectl get nodes,pods -o json > all.json` next to an older `kubectl get nodes -o json > nodes.json`
    gpu_node = node("h100-1", resources={"nvidia.com/gpu": "8"})
    _write(tmp_path / "all.json", as_list(gpu_node, pod("p", "h100-1", limits={"nvidia.com/gpu": "2"})))
    _write(tmp_path / "nodes.json.gz", as_list(gpu_node), gz=True)
    objects = load_snapshot(tmp_path)
    assert objects.counts()["Node"] == 1
    overview = build_inventory(objects).to_dict()
    assert overview["total_gpu_count"] == 8
    assert [(b["profile_id"], b["devices"], b["allocated"]) for b in overview["vendors"]] == [("nvidia", 8, 2)]
    assert f"Node h100-1 appears again in {tmp_path / 'nodes.json.gz'}; counted once" in overview["notes"]


def test_json_nested_deeper_than_python_can_parse_is_a_snapshot_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"kind": "List", "items": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(SnapshotInvalid) as caught:
        load_snapshot(path)
    assert str(caught.value) == f"{path}: is not JSON (nested too deeply)"


@pytest.mark.parametrize("compressed", [True, False])
def test_a_tar_archive_of_a_snapshot_directory_says_to_extract_it(tmp_path: Path, compressed: bool) -> None:
    import tarfile

    folder = tmp_path / "snap"
    folder.mkdir()
    _write(folder / "nodes.json", as_list(node("n1")))
    archive = tmp_path / ("snap.tar.gz" if compressed else "snap.tar")
    with tarfile.open(archive, "w:gz" if compressed else "w") as tar:
        tar.add(folder, arcname="snap")
    with pytest.raises(SnapshotInvalid) as caught:
        load_snapshot(archive)
    assert str(caught.value) == f"{archive}: is a tar archive; extract it and pass the directory"


def test_gzip_is_recognised_by_content_whatever_the_name(tmp_path: Path) -> None:
    path = _write(tmp_path / "cluster.json", as_list(node("n1")), gz=True)
    assert load_snapshot(path).counts()["Node"] == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "is not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        (b"\xff\xfe\x00", "is not JSON (it is not UTF-8 text)"),
        (b"[]", "is not a Kubernetes List (the top level is a JSON array)"),
        (b'{"kind": "Node", "metadata": {"name": "n"}}', "is not a Kubernetes List (kind 'Node'); write it with `kubectl get ... -o json`"),
        (b'{"apiVersion": "v1", "items": []}', "is not a Kubernetes List (no kind); write it with `kubectl get ... -o json`"),
        (b'{"kind": "List", "items": {}}', "items: is a JSON object, not a list"),
        (b'{"kind": "List", "items": [{"metadata": {"name": "n"}}]}', 'items[0]: has no "kind"'),
        (b'{"kind": "List", "items": [{"kind": "Node"}]}', 'items[0] (Node): has no "metadata"'),
        (b'{"kind": "List", "items": [{"kind": "Pod", "metadata": {}}]}', 'items[0] (Pod): metadata has no "name"'),
        (b'{"kind": "List", "items": ["Node"]}', "items[0]: is a JSON string, not an object"),
    ],
)
def test_a_file_that_is_not_a_kubectl_list_is_refused_with_its_name(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(SnapshotInvalid) as caught:
        load_snapshot(path)
    assert str(caught.value) == f"{path}: {problem}"
    assert caught.value.code == "CLUSTER_SNAPSHOT_INVALID"


def test_a_broken_gzip_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json.gz"
    path.write_bytes(gzip.compress(b'{"kind": "List", "items": []}')[:-6])
    with pytest.raises(SnapshotInvalid, match=r"cluster.json.gz: is not a valid gzip file"):
        load_snapshot(path)


def test_a_missing_path_and_an_empty_directory_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SnapshotNotFound, match="no such snapshot file or directory"):
        load_snapshot(tmp_path / "absent.json")
    with pytest.raises(SnapshotInvalid, match=r"holds no \*.json or \*.json.gz files"):
        load_snapshot(tmp_path)


def test_the_error_for_a_bad_object_names_the_file_it_came_from(tmp_path: Path) -> None:
    _write(tmp_path / "a-nodes.json", as_list(node("gpu-node-3", resources={"nvidia.com/gpu": "x"})))
    _write(tmp_path / "b-pods.json", as_list())
    with pytest.raises(Exception) as caught:
        build_inventory(load_snapshot(tmp_path))
    assert str(caught.value) == f'{tmp_path / "a-nodes.json"}: Node gpu-node-3: status.capacity["nvidia.com/gpu"]: "x" is not a quantity'


def test_a_written_snapshot_reads_back_and_gzips_by_name(tmp_path: Path) -> None:
    document = snapshot_document([node("n1"), pod("p", "n1")])
    for name in ("snap.json", "snap.json.gz"):
        written = write_snapshot(document, tmp_path / name)
        assert load_snapshot(written).counts()["Pod"] == 1
        assert (written.read_bytes()[:2] == b"\x1f\x8b") is name.endswith(".gz")
        assert os.stat(written).st_mode & 0o077 == 0  # pod specs may carry secrets in env: owner-only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json", "snap.json.gz"]  # no temporary files left


def test_an_existing_file_is_never_replaced_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "snap.json"
    target.write_text("precious")
    with pytest.raises(SnapshotExists, match="already exists; pass --force"):
        write_snapshot(snapshot_document([]), target)
    assert target.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["snap.json"]
    write_snapshot(snapshot_document([node("n1")]), target, force=True)
    assert load_snapshot(target).counts()["Node"] == 1


def test_a_snapshot_is_not_written_into_a_missing_directory_or_over_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SnapshotNotFound):
        write_snapshot(snapshot_document([]), tmp_path / "absent" / "snap.json")
    with pytest.raises(SnapshotExists, match="is a directory"):
        write_snapshot(snapshot_document([]), tmp_path)


def test_parsing_pauses_the_garbage_collector_only_while_it_runs() -> None:
    import gc

    from llm_d_lens.cluster.snapshot import parse_json

    assert gc.isenabled()
    assert parse_json(b'{"kind": "List", "items": [1, [2]]}') == {"kind": "List", "items": [1, [2]]}
    assert gc.isenabled()
    with pytest.raises(json.JSONDecodeError):
        parse_json("{")
    assert gc.isenabled()  # restored after a failure too
    gc.disable()
    try:
        parse_json("[]")
        assert not gc.isenabled()  # a caller who paused it keeps it paused
    finally:
        gc.enable()


def test_inspect_counts_a_snapshot_and_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    import gc

    from llm_d_lens.cluster.errors import ObjectInvalid
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource

    good = _write(tmp_path / "good.json", as_list(node("n", resources={"google.com/tpu": "4"}), pod("p", "n", limits={"google.com/tpu": "4"})))
    overview = inspect(ClusterSource(snapshot=good))
    assert (overview.total_gpu_count, overview.source) == (4, {"kind": "snapshot", "path": str(good)})
    assert gc.isenabled()
    bad = _write(tmp_path / "bad.json", as_list(node("n", resources={"google.com/tpu": "four"})))
    with pytest.raises(ObjectInvalid, match=r'bad.json: Node n: status.capacity\["google.com/tpu"\]: "four" is not a quantity'):
        inspect(ClusterSource(snapshot=bad))
    assert gc.isenabled()
