"""The entry points of the installed distributions, read from their metadata folders.

Every Lens command starts by asking which plugins are installed. ``importlib.metadata`` answers
that, but importing it costs a whole email parser, ``zipfile`` and ``csv`` (about a tenth of
``lens hardware list``), for two small fixed formats: the packaging specification's
``entry_points.txt`` (INI sections of ``name = module:attr``) and the ``Name:``/``Version:``
headers at the top of ``METADATA``. This module reads those directly, with
``importlib.metadata``'s rules (a test holds it to the standard library on the installed venv and on
hand-made distributions):

* the folders on ``sys.path`` are searched in order; a ``*.dist-info`` or ``*.egg-info`` child is
  a distribution; the first distribution of a (PEP 503, dashes as underscores) name wins;
* lines are stripped, blank lines and ``#`` comments are skipped, ``[group]`` opens a section and
  lines before the first section are ignored; ``name = value`` splits at the first ``=``.

Zip files on ``sys.path`` (zipped eggs) are not searched: pip and every installer Lens supports
write folders.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection, Iterable, Sequence
from typing import Any

__all__ = ["Distribution", "EntryPoint", "installed", "version"]

_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]*)\s*)?((?P<extras>\[.*\])\s*)?$")


class Distribution:
    """An installed distribution: its metadata folder, and its name and version read on first use."""

    __slots__ = ("path", "_header")

    def __init__(self, path: str):
        self.path = path
        self._header: tuple[str, str] | None = None

    def _read_header(self) -> tuple[str, str]:
        if self._header is None:
            name = version = ""
            for file in ("METADATA", "PKG-INFO"):
                try:
                    with open(os.path.join(self.path, file), encoding="utf-8", errors="replace") as handle:
                        for line in handle:
                            if not line.strip():
                                break  # the headers end at the first blank line; the description follows
                            key, sep, value = line.partition(":")
                            if sep and key == "Name" and not name:
                                name = value.strip()
                            elif sep and key == "Version" and not version:
                                version = value.strip()
                    break
                except OSError:
                    continue
            self._header = (name, version)
        return self._header

    @property
    def name(self) -> str:
        return self._read_header()[0]

    @property
    def version(self) -> str:
        return self._read_header()[1]

    def __repr__(self) -> str:
        return f"Distribution({self.path!r})"


class EntryPoint:
    """One ``name = module:attr`` line of a group; ``load()`` imports the module and returns the attribute."""

    __slots__ = ("name", "value", "group", "dist")

    def __init__(self, name: str, value: str, group: str, dist: Distribution | None = None):
        self.name = name
        self.value = value
        self.group = group
        self.dist = dist

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        return self.value.partition(":")[2].partition("[")[0].strip()

    def load(self) -> Any:
        """The object the value names: its module imported, its attribute path followed."""
        import importlib

        match = _VALUE.match(self.value.strip())
        if match is None:
            raise ValueError(f"entry point {self.name!r} has an unreadable value {self.value!r}")
        target: Any = importlib.import_module(match.group("module"))
        for part in filter(None, (match.group("attr") or "").split(".")):
            target = getattr(target, part)
        return target

    def _key(self) -> tuple[str, str, str]:
        return (self.name, self.value, self.group)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntryPoint) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _distribution_folders(path: Iterable[str]) -> list[str]:
    """Every metadata folder on ``path``, the first of each distribution name only, in ``sys.path`` order."""
    seen: set[str] = set()
    found: list[str] = []
    for root in path:
        try:
            children = os.listdir(root or ".")
        except OSError:  # a missing folder, a file, a zip: nothing installed there that we read
            continue
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            name = _normalize(low.rpartition(".")[0].partition("-")[0])
            if name in seen:
                continue
            seen.add(name)
            found.append(os.path.join(root or ".", child))
    return found


def _sections(text: str, groups: Collection[str]) -> Iterable[tuple[str, str, str]]:
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None or section not in groups:
            continue
        name, sep, value = line.partition("=")
        if sep:
            yield section, name.strip(), value.strip()


def installed(groups: Collection[str], path: Sequence[str] | None = None) -> dict[str, list[EntryPoint]]:
    """Each of ``groups`` -> its entry points across the installed distributions (``path``: ``sys.path``)."""
    found: dict[str, list[EntryPoint]] = {group: [] for group in groups}
    for folder in _distribution_folders(sys.path if path is None else path):
        try:
            with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        if not any(group in text for group in groups):
            continue  # most distributions declare none of Lens's groups: not parsed at all
        dist = Distribution(folder)
        for group, name, value in _sections(text, found):
            found[group].append(EntryPoint(name, value, group, dist))
    return found


def version(name: str, path: Sequence[str] | None = None) -> str | None:
    """The installed version of the distribution ``name`` (any spelling), as ``importlib.metadata.version``
    gives it, or ``None`` when none is installed: the first of that name on ``path`` (``sys.path``) wins."""
    wanted = _normalize(name)
    for folder in _distribution_folders(sys.path if path is None else path):
        if _normalize(os.path.basename(folder).lower().rpartition(".")[0].partition("-")[0]) == wanted:
            return Distribution(folder).version
    return None
