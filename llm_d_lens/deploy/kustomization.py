"""What an overlay's Kustomization files say, read without running kustomize.

Two questions are answered statically, because they must be answered for many overlays at once
(``lens deploy guides``) or before anything runs: which llm-d labels the overlay ends up with
(its own ``labels``/``commonLabels`` over those of the local bases and components it pulls in),
and whether it references a file that does not exist or lies outside the llm-d source. Rendering
remains kustomize's job; these answers only explain and guard it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import yaml

from llm_d_lens.deploy.engines import ENGINE_LABEL, engine_of_documents, inline_documents, is_yaml_file, yaml_documents
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.deploy.workloads import pod_templates
from llm_d_lens.hardware.resolution import VARIANT_LABEL, VENDOR_LABEL

#: The file names kustomize accepts for a Kustomization, in its own order of preference.
KUSTOMIZATION_FILES: tuple[str, ...] = ("kustomization.yaml", "kustomization.yml", "Kustomization")

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_REMOTE_PREFIXES = ("github.com/", "gitlab.com/", "bitbucket.org/", "git@", "git::", "ssh://")


class Problem(msgspec.Struct, frozen=True):
    """Something in a Kustomization that kustomize will refuse, or Lens must."""

    kind: str  # "missing" | "escapes" | "invalid" | "ambiguous"
    file: str  # the Kustomization file, relative to the source
    field: str  # e.g. "patches[0].path"
    value: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "file": self.file, "field": self.field, "value": self.value, "message": self.message}


class Kustomization(msgspec.Struct, frozen=True):
    """One directory's Kustomization file, parsed (or the reason it could not be)."""

    directory: Path
    file: Path | None
    data: dict[str, Any]
    files_found: tuple[str, ...] = ()
    error: str | None = None

    @property
    def kind(self) -> str:
        kind = self.data.get("kind")
        return kind if isinstance(kind, str) else "Kustomization"

    def own_labels(self) -> dict[str, str]:
        """Labels this file adds to every object (``commonLabels``, then each ``labels[].pairs``)."""
        labels: dict[str, str] = {}
        common = self.data.get("commonLabels")
        if isinstance(common, dict):
            labels.update({str(k): str(v) for k, v in common.items()})
        entries = self.data.get("labels")
        if isinstance(entries, list):
            for entry in entries:
                pairs = entry.get("pairs") if isinstance(entry, dict) else None
                if isinstance(pairs, dict):
                    labels.update({str(k): str(v) for k, v in pairs.items()})
        return labels


class Inspection(msgspec.Struct, frozen=True):
    """An overlay as its Kustomization files describe it."""

    kind: str
    labels: dict[str, str]
    problems: tuple[Problem, ...] = msgspec.field(default_factory=tuple)

    @property
    def accelerator_labels(self) -> tuple[str, str] | None:
        variant, vendor = self.labels.get(VARIANT_LABEL), self.labels.get(VENDOR_LABEL)
        if variant is None and vendor is None:
            return None
        return variant or "", vendor or ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "labels": self.labels, "problems": [p.to_dict() for p in self.problems]}


def kustomization_files(names: Any) -> tuple[str, ...]:
    """The Kustomization file names among a directory's entry names, in kustomize's order."""
    present = set(names)
    return tuple(name for name in KUSTOMIZATION_FILES if name in present)


def is_remote(reference: str) -> bool:
    return "://" in reference or reference.startswith(_REMOTE_PREFIXES) or "?ref=" in reference


class KustomizationReader:
    """Reads and inspects Kustomizations of one source; each file is parsed once."""

    def __init__(self, source: LlmdSource):
        self.source = source
        self._root = os.path.realpath(source.root)
        self._cache: dict[Path, Kustomization] = {}
        self._inspections: dict[Path, Inspection] = {}
        self._files: dict[Path, dict[str, str]] = {}
        self._documents: dict[Path, list[Any]] = {}
        self._engines: dict[Path, str | None] = {}

    def documents(self, path: Path) -> list[Any]:
        """The YAML documents of a resource or patch file, each file parsed once per reader."""
        path = Path(os.path.normpath(path))
        cached = self._documents.get(path)
        if cached is None:
            cached = self._documents[path] = yaml_documents(path)
        return cached

    def load(self, directory: Path) -> Kustomization:
        cached = self._cache.get(directory)
        if cached is None:
            cached = self._cache[directory] = self._read(directory)
        return cached

    def _read(self, directory: Path) -> Kustomization:
        try:
            found = kustomization_files(os.listdir(directory))
        except OSError as exc:
            return Kustomization(directory, None, {}, (), f"cannot list the directory ({exc.strerror})")
        if not found:
            return Kustomization(directory, None, {}, ())
        path = directory / found[0]
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        except (OSError, UnicodeDecodeError) as exc:
            return Kustomization(directory, path, {}, found, f"cannot read it ({exc})")
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
            return Kustomization(directory, path, {}, found, f"is not valid YAML{at}")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return Kustomization(directory, path, {}, found, "is not a YAML mapping")
        return Kustomization(directory, path, data, found)

    def inspect(self, directory: Path | str) -> Inspection:
        """Labels over the local chain of bases, and every problem found along it."""
        directory = Path(directory)
        cached = self._inspections.get(directory)
        if cached is None:
            problems: list[Problem] = []
            labels = self._labels(directory, problems, set())
            cached = Inspection(self.load(directory).kind, labels, tuple(dict.fromkeys(problems)))
            self._inspections[directory] = cached
        return cached

    def bases(self, directory: Path | str) -> tuple[Path, ...]:
        """The local directories this Kustomization builds on (``resources``/``bases`` entries that are directories)."""
        doc = self.load(Path(directory))
        found = []
        for field_name, reference, _ in _local_references(doc.data):
            if field_name.split("[")[0] in ("resources", "bases"):
                target = Path(os.path.normpath(doc.directory / reference))
                if target.is_dir():
                    found.append(target)
        return tuple(found)

    def engine(self, directory: Path | str, seen: frozenset[Path] = frozenset()) -> str | None:
        """The engine the overlay runs, from its own files first (labels, patches, resources), then its bases'."""
        directory = Path(directory)
        if directory in seen:
            return None
        if directory in self._engines:
            return self._engines[directory]
        found = self._engine(directory, seen)
        self._engines[directory] = found
        return found

    def _engine(self, directory: Path, seen: frozenset[Path]) -> str | None:
        doc = self.load(directory)
        label = doc.own_labels().get(ENGINE_LABEL)
        if label:
            return label
        documents: list[Any] = []
        for key in ("patches", "patchesStrategicMerge"):
            for entry in doc.data.get(key) or []:
                text = entry.get("patch") if isinstance(entry, dict) else entry if isinstance(entry, str) and "\n" in entry else None
                path = entry.get("path") if isinstance(entry, dict) else entry if isinstance(entry, str) and "\n" not in entry else None
                if isinstance(text, str):
                    documents += inline_documents(text)
                elif isinstance(path, str) and is_yaml_file(path):
                    documents += self.documents(doc.directory / path)
        for _, reference, _ in _strings(doc.data.get("resources"), "resources", "any"):
            target = doc.directory / reference
            if is_yaml_file(reference) and target.is_file():
                documents += self.documents(target)
        found = engine_of_documents(documents)
        if found:
            return found
        components = [Path(os.path.normpath(doc.directory / c)) for _, c, _ in _strings(doc.data.get("components"), "components", "dir")]
        for below in [*components, *self.bases(directory)]:
            if below.is_dir() and (found := self.engine(below, seen | {directory})):
                return found
        return None

    def renames(self, directory: Path | str, seen: frozenset[Path] = frozenset()) -> bool:
        """Whether the overlay or anything it builds on sets ``namePrefix``/``nameSuffix``."""
        directory = Path(directory)
        if directory in seen:
            return False
        doc = self.load(directory)
        if doc.data.get("namePrefix") or doc.data.get("nameSuffix"):
            return True
        components = [Path(os.path.normpath(doc.directory / c)) for _, c, _ in _strings(doc.data.get("components"), "components", "dir")]
        return any(self.renames(d, seen | {directory}) for d in [*self.bases(directory), *components] if d.is_dir())

    # -- the chain --------------------------------------------------------------------------

    def _labels(self, directory: Path, problems: list[Problem], seen: set[Path]) -> dict[str, str]:
        if directory in seen:
            return {}
        seen.add(directory)
        doc = self.load(directory)
        shown = self.source.display(doc.file or directory)
        if doc.file is None:
            reason = doc.error or f"holds none of {', '.join(KUSTOMIZATION_FILES)}"
            problems.append(Problem("missing", self.source.display(directory), "", "", reason))
            return {}
        if doc.error:
            problems.append(Problem("invalid", shown, "", "", doc.error))
            return {}
        if len(doc.files_found) > 1:
            problems.append(Problem("ambiguous", self.source.display(directory), "", ", ".join(doc.files_found),
                                    f"holds several Kustomization files ({', '.join(doc.files_found)}); kustomize refuses that"))
        inherited: dict[str, str] = {}
        for field_name, reference, expect in _local_references(doc.data):
            target = self._target(doc, shown, field_name, reference, expect, problems)
            if target is None or field_name.split("[")[0] not in ("resources", "bases", "components"):
                continue
            if target.is_dir():
                inherited.update(self._labels(target, problems, seen))
            elif field_name.startswith("resources["):
                inherited.update(self._file_labels(target))
        return {**inherited, **doc.own_labels()}

    def _file_labels(self, path: Path) -> dict[str, str]:
        """The llm-d labels of the first model-server pod template a resource file holds.

        Some guides (wide-ep-lws at 7edda66) label their workloads in the resource YAML instead of
        the Kustomization, so reading only Kustomizations would call them unlabelled.
        """
        cached = self._files.get(path)
        if cached is not None:
            return cached
        found: dict[str, str] = {}
        for document in self.documents(path):  # an unreadable file adds no labels; kustomize reports it when it renders
            if not isinstance(document, dict):
                continue
            for pod in pod_templates(document):
                labels = {str(k): str(v) for k, v in pod.labels.items() if str(k).startswith("llm-d.ai/")}
                if VARIANT_LABEL in labels or VENDOR_LABEL in labels:
                    found = labels
                    break
            if found:
                break
        self._files[path] = found
        return found

    def _target(self, doc: Kustomization, shown: str, field_name: str, reference: str, expect: str,
                problems: list[Problem]) -> Path | None:
        target = Path(os.path.normpath(doc.directory / reference))
        real = os.path.realpath(target)
        if real != self._root and not real.startswith(self._root + os.sep):
            problems.append(Problem("escapes", shown, field_name, reference,
                                    f"{reference} points outside the llm-d source ({real})"))
            return None
        if not os.path.exists(target):
            problems.append(Problem("missing", shown, field_name, reference,
                                    f"{reference} does not exist ({self.source.display(target)})"))
            return None
        if expect == "dir" and not target.is_dir():
            problems.append(Problem("missing", shown, field_name, reference, f"{reference} is not a directory"))
            return None
        if expect == "file" and target.is_dir():
            problems.append(Problem("missing", shown, field_name, reference, f"{reference} is a directory, not a file"))
            return None
        return target


def _local_references(data: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(field, reference, expected kind) for every local path a Kustomization names."""
    for key, expect in (("resources", "any"), ("bases", "dir"), ("components", "dir"), ("crds", "file"),
                        ("configurations", "file"), ("generators", "any"), ("transformers", "any"),
                        ("validators", "any")):
        yield from _strings(data.get(key), key, expect)
    for key in ("patches", "patchesJson6902", "replacements"):
        entries = data.get(key)
        if isinstance(entries, list):
            for i, entry in enumerate(entries):
                if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                    yield from _checked(f"{key}[{i}].path", entry["path"], "file")
    yield from _strings(data.get("patchesStrategicMerge"), "patchesStrategicMerge", "file")
    openapi = data.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        yield from _checked("openapi.path", openapi["path"], "file")
    for key in ("configMapGenerator", "secretGenerator"):
        generators = data.get(key)
        if not isinstance(generators, list):
            continue
        for i, generator in enumerate(generators):
            if not isinstance(generator, dict):
                continue
            for sub in ("files", "envs"):
                for j, item in enumerate(generator.get(sub) or []):
                    if isinstance(item, str):
                        yield from _checked(f"{key}[{i}].{sub}[{j}]", item.split("=", 1)[-1], "file")
            if isinstance(generator.get("env"), str):
                yield from _checked(f"{key}[{i}].env", generator["env"], "file")


def _strings(entries: Any, key: str, expect: str) -> Iterator[tuple[str, str, str]]:
    if isinstance(entries, list):
        for i, entry in enumerate(entries):
            if isinstance(entry, str):
                yield from _checked(f"{key}[{i}]", entry, expect)


def _checked(field_name: str, reference: str, expect: str) -> Iterator[tuple[str, str, str]]:
    # Inline patches (a YAML document in a string) and remote bases are not local files.
    if reference and "\n" not in reference and not is_remote(reference):
        yield field_name, reference, expect
