"""Saved snapshots: the ``List`` JSON ``kubectl get ... -o json`` writes, read back and written out.

A snapshot is one file holding every kind, or a directory of per-kind files (``nodes.json``,
``pods.json.gz``, ...), each optionally gzipped (recognised by content, not by name). Writing never
replaces a file the user has unless asked, and never leaves a half-written one behind.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from llm_d_lens.cluster.errors import SnapshotExists, SnapshotInvalid, SnapshotNotFound
from llm_d_lens.cluster.objects import ClusterObjects, Document
from llm_d_lens.errors import limited
from llm_d_lens.files import write_file
from llm_d_lens.jsonread import JsonRefused, loads

_GZIP_MAGIC = b"\x1f\x8b"
SNAPSHOT_SUFFIXES = (".json", ".json.gz")


def load_snapshot(path: str | os.PathLike[str], *, partial: bool = False) -> ClusterObjects:
    """Every object in a snapshot file or directory; with ``partial``, only the fields the inventory reads (see :mod:`.decode`)."""
    location = Path(path)
    if location.is_dir():
        files = sorted(p for p in location.iterdir() if p.is_file() and p.name.endswith(SNAPSHOT_SUFFIXES))
        if not files:
            raise SnapshotInvalid(str(location), "the directory holds no *.json or *.json.gz files")
    elif location.is_file():
        files = [location]
    else:
        raise SnapshotNotFound(f"{location}: no such snapshot file or directory", details={"path": str(location)})
    return ClusterObjects.from_documents([Document(str(file), read_json(file, partial=partial)) for file in files])


def read_json(file: Path, *, partial: bool = False) -> Any:
    """A JSON file, gunzipped first when it is gzip data; the raw bytes are dropped before it is returned."""
    from llm_d_lens.cluster.decode import decode_list

    source = str(file)
    try:
        if file.stat().st_size > MAX_SNAPSHOT_BYTES:
            raise SnapshotInvalid(source, f"is over {MAX_SNAPSHOT_BYTES} bytes, more than Lens reads of one snapshot file")
        data = file.read_bytes()
    except OSError as exc:
        raise SnapshotInvalid(source, f"cannot be read ({exc.strerror or exc})") from None
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, source)
    if data[257:263] in (b"ustar\x00", b"ustar ") and b"\x00" in data[:512]:  # `tar czf` of a directory; JSON has no NUL
        raise SnapshotInvalid(source, "is a tar archive; extract it and pass the directory")
    try:
        return decode_list(data, partial=partial)
    except UnicodeDecodeError:
        raise SnapshotInvalid(source, "is not JSON (it is not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise SnapshotInvalid(source, f"is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except JsonRefused as exc:
        raise SnapshotInvalid(source, refused_values(exc)) from None


#: bytes of JSON one snapshot file may hold (after gunzip): a 5,000-node cluster with its pods is a few
#: hundred MiB; parsing takes several times the text's size in memory, so more would exhaust it
MAX_SNAPSHOT_BYTES = 1024 * 1024 * 1024
#: how much larger than its gzip file a snapshot may inflate, once past MIN_RATIO_CHECK: kubectl's JSON
#: compresses 10-30 times; a file a hundred times smaller than its content is built to exhaust memory
MAX_GZIP_RATIO = 100
MIN_RATIO_CHECK = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


def _gunzip(data: bytes, source: str) -> bytes:
    """gzip data inflated chunk by chunk, refused as soon as it passes the size or ratio limit."""
    import gzip  # only a gzipped snapshot needs it

    limit = min(MAX_SNAPSHOT_BYTES, max(MIN_RATIO_CHECK, MAX_GZIP_RATIO * len(data)))
    parts: list[bytes] = []
    size = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise SnapshotInvalid(
                        source, f"inflates past {limit} bytes ({len(data)} compressed): over the limit of "
                        f"{MAX_SNAPSHOT_BYTES} bytes or {MAX_GZIP_RATIO} times its gzip size")
                parts.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise SnapshotInvalid(source, f"is not a valid gzip file ({exc})") from None
    return b"".join(parts)


def refused_values(exc: JsonRefused) -> str:
    """What :func:`llm_d_lens.jsonread.loads` refused, as one line naming each path and value."""
    if [f.path for f in exc.findings] == ["$"]:
        return "is not JSON (nested too deeply)"
    return "holds values Lens does not read: " + limited([str(finding) for finding in exc.findings])


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector; a caller who had paused it keeps it paused.

    Parsing a large cluster creates millions of containers, and the collector would walk all of
    them again and again while they are built; JSON cannot hold a reference cycle, so those walks
    find nothing. Keep the parsed objects' whole life inside the pause (see ``service.inspect``):
    objects still alive when it ends are walked once by the next collection instead.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_json(data: str | bytes) -> Any:
    """:func:`llm_d_lens.jsonread.loads` (finite numbers only) with the cyclic garbage collector paused."""
    with gc_paused():
        return loads(data)


def snapshot_document(items: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The one ``List`` a snapshot file holds, as ``kubectl get a,b,c -o json`` would print it."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def write_snapshot(document: dict[str, Any], path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write a snapshot atomically; gzipped when the name ends in ``.gz``.

    Without ``force`` an existing file is left untouched and :class:`SnapshotExists` is raised,
    also when the file appears while this one is being written.
    """
    target = Path(path)
    if target.is_dir():
        raise SnapshotExists(f"{target} is a directory; give a file name such as {target / 'cluster.json'}")
    if target.exists() and not force:
        raise SnapshotExists(f"{target} already exists; pass --force to replace it", details={"path": str(target)})
    if not target.parent.is_dir():
        raise SnapshotNotFound(f"{target.parent}: no such directory", details={"path": str(target.parent)})
    payload = json.dumps(document, indent=2, sort_keys=True).encode() + b"\n"
    if target.name.endswith(".gz"):
        import gzip

        payload = gzip.compress(payload, mtime=0)
    exists = SnapshotExists(f"{target} already exists; pass --force to replace it", details={"path": str(target)})
    write_file(target, payload, replace=force, exists=exists, mode=0o600)  # pod specs may hold secrets' values
    return target
