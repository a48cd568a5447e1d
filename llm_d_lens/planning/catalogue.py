"""The models Lens knows by name, and reading a user's own ``config.json`` or model directory.

The catalogue ships with Lens (``catalogue.json``): shapes and published parameter counts of
common open models, never weights, and nothing is fetched from a model hub at run time. Any other
model is planned from its config file, which a user has wherever the weights are.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec

from llm_d_lens.planning.architecture import ModelSpec, from_config
from llm_d_lens.planning.errors import (
    ModelConfigInvalid,
    ModelConfigNotFound,
    ModelUnknown,
)

#: a config.json is a few kilobytes; anything far larger is not one
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: a safetensors index lists every tensor: a few MiB for the largest models
MAX_INDEX_BYTES = 32 * 1024 * 1024
INDEX_NAME = "model.safetensors.index.json"
#: a checkpoint larger than this (1 PB) is not one
MAX_CHECKPOINT_BYTES = 10**15


@lru_cache(maxsize=1)
def entries() -> dict[str, dict[str, Any]]:
    """Catalogue id -> entry (``hf_id``, ``aliases``, ``published_parameters``, ``config``)."""
    # opened by path, as the contract opens its bundled profiles: importlib.resources costs a plan's start ~10 ms
    with open(os.path.join(os.path.dirname(__file__), "catalogue.json"), encoding="utf-8") as handle:
        text = handle.read()
    return dict(json.loads(text)["models"])


def _index() -> dict[str, str]:
    names: dict[str, str] = {}
    for model_id, entry in entries().items():
        for name in (model_id, entry["hf_id"], *entry.get("aliases", [])):
            names[name.lower()] = model_id
    return names


def catalogue_spec(model_id: str) -> ModelSpec:
    entry = entries()[model_id]
    spec = from_config(entry["config"], f"catalogue:{model_id}", name=entry["hf_id"],
                       published=entry.get("published_parameters"), published_source=entry.get("published_source"))
    return msgspec.structs.replace(spec, aliases=tuple(entry.get("aliases", [])))


def all_specs() -> list[ModelSpec]:
    return [catalogue_spec(model_id) for model_id in entries()]


def nearest(name: str, limit: int = 3) -> list[str]:
    """Catalogue ids closest to a mistyped name, for the error message."""
    import difflib  # only a name that matches nothing asks for suggestions

    index = _index()
    matches = difflib.get_close_matches(name.lower(), list(index), n=limit * 3, cutoff=0.4)
    seen: list[str] = []
    for match in matches:
        if index[match] not in seen:
            seen.append(index[match])
    if not seen:  # a family word ("llama", "qwen") still points somewhere useful
        seen = [model_id for model_id in entries() if name.lower().split("/")[-1].split("-")[0] in model_id]
    return seen[:limit]


def lookup(name: str) -> ModelSpec | None:
    model_id = _index().get(name.strip().lower())
    return catalogue_spec(model_id) if model_id else None


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or name.startswith((".", "/", "~")) or os.sep + os.sep in name


def resolve(name: str) -> ModelSpec:
    """A catalogue name, or a config.json file or model directory that exists on disk.

    A path that exists wins over a catalogue name: a local ``meta-llama/Llama-3.1-8B`` download
    is what the user has, and its config may differ from the catalogue's (a fine-tune, a quant).
    """
    if not name.strip():
        raise ModelUnknown(name, [])
    path = Path(name).expanduser()
    if path.exists():
        return read_config_file(path)
    spec = lookup(name)
    if spec is not None:
        return spec
    if _looks_like_path(name):
        raise ModelConfigNotFound(f"{name}: no such file or directory", details={"path": name})
    raise ModelUnknown(name, nearest(name))


def read_config_file(path: Path) -> ModelSpec:
    """Read ``config.json`` (or ``<dir>/config.json``): bounded, strict JSON, every field checked."""
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise ModelConfigNotFound(f"{path}: a model directory holds a config.json; this one has none",
                                      details={"path": str(path)})
    source = str(path)
    spec = from_config(parse_json(_read_bounded(path, MAX_CONFIG_BYTES, "a config.json"), source), source)
    total = checkpoint_total(path.parent / INDEX_NAME)
    return msgspec.structs.replace(spec, checkpoint_bytes=total) if total else spec


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The file's bytes, refused (naming the file) when unreadable or larger than ``what`` can be."""
    source = str(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise ModelConfigNotFound(f"{source}: cannot be read: {exc.strerror or exc}", details={"path": source}) from None
    if len(raw) > limit:
        raise ModelConfigInvalid(source, "$", f"{len(raw)}+ bytes", f"is larger than {what} can be ({limit} bytes)")
    return raw


def checkpoint_total(path: Path) -> int | None:
    """``metadata.total_size`` of a safetensors index beside the config: the weights' bytes as stored."""
    if not path.is_file():
        return None
    source = str(path)
    index = parse_json(_read_bounded(path, MAX_INDEX_BYTES, "a safetensors index"), source)
    metadata = index.get("metadata") if isinstance(index, dict) else None
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total is None:
        return None
    if isinstance(total, bool) or not isinstance(total, int) or not 0 < total <= MAX_CHECKPOINT_BYTES:
        raise ModelConfigInvalid(source, "metadata.total_size", total, f"is not a checkpoint size in bytes (1 to {MAX_CHECKPOINT_BYTES:.0e})")
    return total


def parse_json(raw: bytes | str, source: str) -> Any:
    """JSON as the standard says it: no NaN or Infinity, no repeated keys, no absurd nesting or digits."""
    def no_constant(value: str) -> Any:
        raise ValueError(f"{value} is not a JSON number")

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise ValueError(f"key {key!r} appears twice")
            result[key] = value
        return result

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        return json.loads(text, parse_constant=no_constant, object_pairs_hook=no_repeats)
    except UnicodeDecodeError as exc:
        raise ModelConfigInvalid(source, "$", f"byte {exc.start}", "is not UTF-8 text") from None
    except RecursionError:
        raise ModelConfigInvalid(source, "$", "nesting", "is nested too deeply to be a config.json") from None
    except ValueError as exc:  # JSONDecodeError, NaN, repeated keys, numbers beyond int's digit limit
        raise ModelConfigInvalid(source, "$", "text", f"is not valid JSON: {exc}") from None


def models_document() -> list[dict[str, Any]]:
    """The catalogue as ``GET /api/v1/planning/models`` answers it: each model's id, shape and published counts."""
    return [{"id": model_id, **catalogue_spec(model_id).to_dict()} for model_id in entries()]
