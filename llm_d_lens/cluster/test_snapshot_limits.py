"""A gzip snapshot that inflates without bound is refused by size and ratio, never a MemoryError."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.cluster import snapshot
from llm_d_lens.cluster.errors import SnapshotInvalid
from llm_d_lens.cluster.snapshot import load_snapshot


def bomb(path: Path, inflated: int) -> Path:
    """A gzip file of ``inflated`` spaces, written without ever holding them in memory."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1024 * 1024)
    with path.open("wb") as out:
        for _ in range(inflated // len(chunk)):
            out.write(compressor.compress(chunk))
        out.write(compressor.flush())
    return path


def test_a_gzip_bomb_is_refused_by_its_ratio_with_the_default_limits(tmp_path, capsys):
    path = bomb(tmp_path / "cluster.json.gz", 80 * 1024 * 1024)
    assert path.stat().st_size * snapshot.MAX_GZIP_RATIO < snapshot.MIN_RATIO_CHECK  # only the ratio floor stops it
    code = main(["cluster", "inspect", "--snapshot", str(path)])
    _, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    assert err.startswith(f"error: CLUSTER_SNAPSHOT_INVALID: {path}: inflates past {snapshot.MIN_RATIO_CHECK} bytes")


def test_the_absolute_limit_holds_whatever_the_ratio(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", 4 * 1024 * 1024)
    path = bomb(tmp_path / "cluster.json.gz", 8 * 1024 * 1024)
    with pytest.raises(SnapshotInvalid, match="inflates past 4194304 bytes"):
        load_snapshot(path)


def test_a_plain_file_over_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", 1024)
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "List", "items": []}' + " " * 2048)
    with pytest.raises(SnapshotInvalid, match="is over 1024 bytes"):
        load_snapshot(path)


def test_a_snapshot_within_the_limits_still_reads(tmp_path):
    import gzip
    import json

    from llm_d_lens.testing.cluster import as_list, node

    path = tmp_path / "cluster.json.gz"
    path.write_bytes(gzip.compress(json.dumps(as_list(*[node(f"n{i}") for i in range(200)])).encode()))
    assert len(load_snapshot(path).nodes) == 200
