"""Plain data across the provider boundary: what a provider's hook may send back, and its checked rebuild.

A third-party provider runs in a worker process (``provider_host.py``); what its hooks return
crosses as JSON. :func:`to_plain` (in the worker) turns a return value into JSON-able data:
dataclasses, msgspec structs and pydantic models become objects of their fields, enums their value,
tuples lists; anything else (a socket, a generator, an object of the provider's own) is refused,
naming where it sits. :func:`from_plain` (in Lens) rebuilds the type the hook's contract promises
from that data, checking every field against its annotation: a wrong type, an unknown or missing
field, a value outside a ``Literal`` is :class:`PlainRefused` with its path (``$.daemonsets[2].ready``).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

#: how deep a returned value may nest
MAX_DEPTH = 40


class PlainRefused(ValueError):
    """A value that is not plain data, or not of the promised shape; the message names its path."""


def to_plain(value: Any, path: str = "$", depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise PlainRefused(f"{path}: nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PlainRefused(f"{path}: {value!r} is not a finite number")
        return value
    if isinstance(value, enum.Enum):
        return to_plain(value.value, path, depth + 1)
    if isinstance(value, (list, tuple)):
        return [to_plain(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise PlainRefused(f"{path}: key {key!r} is not a string")
            out[key] = to_plain(item, f"{path}.{key}", depth + 1)
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name), f"{path}.{f.name}", depth + 1) for f in dataclasses.fields(value)}
    fields = getattr(type(value), "__struct_fields__", None)  # a msgspec struct
    if isinstance(fields, tuple):
        return {name: to_plain(getattr(value, name), f"{path}.{name}", depth + 1) for name in fields}
    dump = getattr(value, "model_dump", None)  # a pydantic model
    if callable(dump):
        return to_plain(dump(mode="json"), path, depth + 1)
    raise PlainRefused(f"{path}: a {type(value).__name__} is not plain data (give str, numbers, lists, mappings, dataclasses)")


def from_plain(expected: Any, data: Any, path: str = "$") -> Any:
    """``data`` checked against ``expected`` (a type or annotation) and rebuilt as it."""
    if expected is Any or expected is object:
        return data
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin is typing.Union or origin is types.UnionType:
        problems = []
        for option in args:
            try:
                return from_plain(option, data, path)
            except PlainRefused as exc:
                problems.append(str(exc))
        raise PlainRefused(problems[0] if len(problems) == 1 else f"{path}: {_shown(data)} is none of "
                           f"{', '.join(_name(a) for a in args)}")
    if origin is typing.Literal:
        if data in args and not (isinstance(data, bool) and not any(isinstance(a, bool) for a in args)):
            return data
        raise PlainRefused(f"{path}: {_shown(data)} is not one of {', '.join(repr(a) for a in args)}")
    if expected is type(None):
        if data is None:
            return None
        raise PlainRefused(f"{path}: {_shown(data)} where nothing (null) was expected")
    if expected is bool:
        if isinstance(data, bool):
            return data
        raise PlainRefused(f"{path}: {_shown(data)} is not true or false")
    if expected is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
        raise PlainRefused(f"{path}: {_shown(data)} is not an integer")
    if expected is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool) and math.isfinite(data):
            return float(data)
        raise PlainRefused(f"{path}: {_shown(data)} is not a finite number")
    if expected is str:
        if isinstance(data, str):
            return data
        raise PlainRefused(f"{path}: {_shown(data)} is not a string")
    container = origin or expected
    if container in (list, Sequence, typing.Sequence, tuple):
        if not isinstance(data, list):
            raise PlainRefused(f"{path}: {_shown(data)} is not a list")
        if container is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(data):
                raise PlainRefused(f"{path}: {len(data)} items where {len(args)} were expected")
            return tuple(from_plain(a, item, f"{path}[{i}]") for i, (a, item) in enumerate(zip(args, data)))
        item_type = args[0] if args else Any
        rebuilt = [from_plain(item_type, item, f"{path}[{i}]") for i, item in enumerate(data)]
        return tuple(rebuilt) if container is tuple else rebuilt
    if container in (dict, Mapping, typing.Mapping):
        if not isinstance(data, dict):
            raise PlainRefused(f"{path}: {_shown(data)} is not a mapping")
        key_type, value_type = args if len(args) == 2 else (Any, Any)
        return {from_plain(key_type, k, path): from_plain(value_type, v, f"{path}.{k}") for k, v in data.items()}
    if isinstance(expected, type) and dataclasses.is_dataclass(expected):
        return _dataclass(expected, data, path)
    raise PlainRefused(f"{path}: Lens cannot check a {_name(expected)} from a provider")  # pragma: no cover - a contract gap


def _dataclass(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise PlainRefused(f"{path}: {_shown(data)} is not an object of {cls.__name__}'s fields")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise PlainRefused(f"{path}: {cls.__name__} has no field {unknown[0]!r}")
    values = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise PlainRefused(f"{path}: {cls.__name__}'s field {name!r} is missing")
            continue
        values[name] = from_plain(hints.get(name, Any), data[name], f"{path}.{name}")
    return cls(**values)


def _name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _shown(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 40 else text[:37] + "..."
