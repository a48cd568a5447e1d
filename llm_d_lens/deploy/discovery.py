"""Which overlays an llm-d source holds, found from each profile's ``deployment.overlay_root``.

Nothing here lists hardware, variants or model servers: the profiles say where to look
(``guides/{guide}/modelserver/{variant}/{model_server}``, with ``*`` for an extra level such as a
hardware generation), and every Kustomization file below a matched directory is an overlay, its
sub-path kept as the overlay name (``base``, ``v7``, ``lmcache-connector/cpu/<platform>``).
Directories at the ``{variant}`` position that no profile owns are reported as unsupported, not
skipped silently.

Discovery only walks directories; reading the Kustomization files (labels, problems) is left to
:class:`~llm_d_lens.deploy.kustomization.KustomizationReader`, so scanning a large checkout costs
about as much as listing it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from llm_d_lens.deploy.kustomization import KUSTOMIZATION_FILES
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.registry import Registry, get_registry
from llm_d_lens.hardware.resolution import Resolver

#: ``guides/recipes`` holds the bases, components and gateways the guides share; it is no guide.
RECIPES = "recipes"
#: How many directory levels ``{guide}`` may span (``multimodal-serving/aggregation`` is two).
MAX_GUIDE_DEPTH = 3
_PLACEHOLDER = re.compile(r"{(guide|variant|model_server)}")
_KUSTOMIZATION_NAMES = frozenset(KUSTOMIZATION_FILES)


@dataclass(frozen=True)
class Overlay:
    """One deployable directory: a Kustomization under a profile's overlay root."""

    guide: str
    hardware: str  # profile id
    variant_dir: str  # the directory at the {variant} position
    model_server: str | None
    name: str  # "." for the matched directory itself, else its sub-path, e.g. "base", "v7"
    path: str  # relative to the source root
    files: tuple[str, ...]  # the Kustomization file names it holds
    template: str  # the overlay_root template that found it
    directory: str = field(compare=False, repr=False)
    server_dir: str | None = None  # the directory at {model_server} when it is not the engine's name

    def to_dict(self) -> dict[str, Any]:
        return {"guide": self.guide, "hardware": self.hardware, "variant_dir": self.variant_dir,
                "model_server": self.model_server, "model_server_dir": self.server_dir or self.model_server,
                "overlay": self.name, "path": self.path, "kustomization": self.files[0], "template": self.template}

    @property
    def sub_name(self) -> str:
        """The name below the model-server directory (``base`` of ``vllm-deepseek-v4/base``)."""
        if self.server_dir and self.name != self.server_dir and self.name.startswith(self.server_dir + "/"):
            return self.name[len(self.server_dir) + 1:]
        return "." if self.server_dir and self.name == self.server_dir else self.name


@dataclass(frozen=True)
class UnsupportedDir:
    """A directory at the {variant} position that no registered profile owns."""

    guide: str
    name: str
    path: str
    directory: str = field(compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"guide": self.guide, "variant_dir": self.name, "path": self.path}


class Skipped(msgspec.Struct, frozen=True):
    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


class Catalog(msgspec.Struct):
    source: LlmdSource
    overlays: list[Overlay]
    unsupported: list[UnsupportedDir]
    skipped: list[Skipped]

    def guides(self) -> list[str]:
        return sorted({o.guide for o in self.overlays} | {u.guide for u in self.unsupported})

    def for_hardware(self, profile_id: str, guide: str | None = None) -> list[Overlay]:
        return [o for o in self.overlays if o.hardware == profile_id and (guide is None or o.guide == guide)]


# -- templates ------------------------------------------------------------------------------


class _Segment(msgspec.Struct, frozen=True):
    literal: str | None = None  # an exact directory name
    pattern: re.Pattern[str] | None = None  # one directory level, with named captures
    guide: bool = False  # {guide}: one or more levels


def _compile(template: str, fixed: Mapping[str, str]) -> list[_Segment]:
    """Segments of ``template`` with the ``fixed`` placeholders filled in (a guide may hold '/')."""
    return list(_compiled(template, tuple(sorted(fixed.items()))))


@functools.lru_cache(maxsize=256)
def _compiled(template: str, fixed: tuple[tuple[str, str], ...]) -> tuple[_Segment, ...]:
    for name, value in fixed:
        template = template.replace("{" + name + "}", value)
    segments: list[_Segment] = []
    for raw in template.split("/"):
        if raw == "{guide}":
            segments.append(_Segment(guide=True))
        elif raw == "*":
            segments.append(_Segment(pattern=re.compile(r"(?P<_wildcard>.+)")))
        elif not _PLACEHOLDER.search(raw):
            segments.append(_Segment(literal=raw))
        else:
            parts = _PLACEHOLDER.split(raw)  # literal, name, literal, name, ...
            # a * beside a placeholder ({variant}-* for a generation such as <variant>-v6) is a level of the overlay's name, as * alone is
            lazy = "?" if "*" in raw else ""
            regex = "".join(re.escape(p).replace(r"\*", r"(?P<_wildcard>[^/]+)") if i % 2 == 0 else f"(?P<{p}>.+{lazy})"
                            for i, p in enumerate(parts))
            segments.append(_Segment(pattern=re.compile(regex)))
    return tuple(segments)


def _split_at_variant(template: str) -> tuple[str, str]:
    """(prefix up to and including the {variant} segment, the rest); no {variant}: (template, "")."""
    segments = template.split("/")
    for i, segment in enumerate(segments):
        if "{variant}" in segment:
            return "/".join(segments[: i + 1]), "/".join(segments[i + 1:])
    return template, ""


class _Match(msgspec.Struct, frozen=True):
    directory: str
    real: str  # the directory with every symlink resolved, for containment and cycle checks
    parts: tuple[str, ...]  # path parts relative to the source root
    captures: tuple[tuple[str, str], ...]
    wildcards: tuple[str, ...]


# -- the walk -------------------------------------------------------------------------------

_Subdir = tuple[str, str, str]  # name, path, real path


class _Walker:
    """Directory listings of one discovery run, each taken once, symlinks kept inside the source.

    Paths are plain strings and real paths are carried down the walk, so only a symlink costs a
    ``realpath``: discovery should cost about what listing the directories costs.
    """

    def __init__(self, source: LlmdSource):
        self.source = source
        self.real_root = os.path.realpath(source.root)
        self._listings: dict[str, tuple[list[_Subdir], tuple[str, ...]]] = {}
        self.skipped: dict[str, Skipped] = {}

    def start(self) -> _Match:
        return _Match(str(self.source.root), self.real_root, (), (), ())

    def listing(self, directory: str, real: str) -> tuple[list[_Subdir], tuple[str, ...]]:
        """(sub-directories, Kustomization file names) of ``directory``."""
        cached = self._listings.get(directory)
        if cached is not None:
            return cached
        subdirs: list[_Subdir] = []
        files: list[str] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    name = entry.name
                    if name[0] == ".":
                        continue
                    if name in _KUSTOMIZATION_NAMES:
                        if not entry.is_symlink() or self._inside(entry.path) is not None:
                            files.append(name)
                        else:
                            self._skip(entry.path, "a symlink pointing outside the llm-d source")
                    elif entry.is_dir():  # follows a link, so a link to a file is dropped here
                        if not entry.is_symlink():
                            subdirs.append((name, entry.path, real + os.sep + name))
                            continue
                        target = self._inside(entry.path)
                        if target is None:
                            self._skip(entry.path, "a symlink pointing outside the llm-d source")
                        elif real == target or real.startswith(target + os.sep):
                            # it leads back up: everything beside it would be listed again beneath it,
                            # other hardware's overlays under this one's directory
                            self._skip(entry.path, "a symlink loop (it points at a directory that contains it)")
                        else:
                            subdirs.append((name, entry.path, target))
                    elif entry.is_symlink() and self._inside(entry.path) is None:
                        self._skip(entry.path, "a symlink pointing outside the llm-d source")
        except OSError as exc:
            self._skip(directory, f"cannot be listed ({exc.strerror})")
        result = (subdirs, tuple(n for n in KUSTOMIZATION_FILES if n in files) if files else ())
        self._listings[directory] = result
        return result

    def _inside(self, path: str) -> str | None:
        """The real path of ``path`` when it lies inside the source, else None."""
        real = os.path.realpath(path)
        return real if real == self.real_root or real.startswith(self.real_root + os.sep) else None

    def _skip(self, path: str, reason: str) -> None:
        shown = self.source.display(path)
        self.skipped.setdefault(shown, Skipped(shown, reason))

    def match(self, segments: list[_Segment], start: _Match) -> Iterator[_Match]:
        """Every directory below ``start`` that the segments reach."""
        yield from self._match(segments, 0, start)

    def _child(self, at: _Match, subdir: _Subdir, captures: tuple[tuple[str, str], ...] = (),
               wildcard: str | None = None) -> _Match:
        name, path, real = subdir
        return _Match(path, real, (*at.parts, name), (*at.captures, *captures),
                      (*at.wildcards, wildcard) if wildcard is not None else at.wildcards)

    def _literal(self, at: _Match, name: str) -> _Subdir | None:
        path = at.directory + os.sep + name
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return None
        if stat.S_ISLNK(mode):
            target = self._inside(path)
            if target is None:
                self._skip(path, "a symlink pointing outside the llm-d source")
            return (name, path, target) if target is not None and os.path.isdir(target) else None
        return (name, path, at.real + os.sep + name) if stat.S_ISDIR(mode) else None

    def _match(self, segments: list[_Segment], index: int, at: _Match) -> Iterator[_Match]:
        if index == len(segments):
            yield at
            return
        segment = segments[index]
        if segment.literal is not None:
            found = self._literal(at, segment.literal)
            if found is not None:
                yield from self._match(segments, index + 1, self._child(at, found))
            return
        if segment.guide:
            yield from self._match_guide(segments, index, at)
            return
        assert segment.pattern is not None
        for subdir in self.listing(at.directory, at.real)[0]:
            matched = segment.pattern.fullmatch(subdir[0])
            if matched is None:
                continue
            groups = matched.groupdict()
            wildcard = groups.pop("_wildcard", None)
            yield from self._match(segments, index + 1, self._child(at, subdir, tuple(groups.items()), wildcard))

    def _match_guide(self, segments: list[_Segment], index: int, at: _Match) -> Iterator[_Match]:
        """{guide} spans levels: the shallowest directories from which the rest matches."""
        frontier: list[tuple[_Match, tuple[str, ...]]] = [(at, ())]
        for _depth in range(MAX_GUIDE_DEPTH):
            deeper: list[tuple[_Match, tuple[str, ...]]] = []
            for parent, names in frontier:
                for subdir in self.listing(parent.directory, parent.real)[0]:
                    if not names and subdir[0] == RECIPES:
                        continue  # the guides' shared recipe library, never a guide
                    guide = (*names, subdir[0])
                    child = self._child(parent, subdir)
                    found = list(self._match(segments, index + 1, _Match(
                        child.directory, child.real, child.parts, (*at.captures, ("guide", "/".join(guide))), at.wildcards)))
                    if found:
                        yield from found
                    else:
                        deeper.append((child, guide))
            frontier = deeper

    def kustomizations(self, top: _Match) -> Iterator[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """(directory, parts below ``top``, file names) of every Kustomization at or below ``top``."""
        stack: list[tuple[str, tuple[str, ...], str]] = [(top.directory, (), top.real)]
        links: list[tuple[str, tuple[str, ...], str]] = []  # walked after the real tree, so it wins
        visited: set[str] = set()
        while stack or links:
            directory, parts, real = stack.pop() if stack else links.pop(0)
            if real in visited:  # reached again through a link: a cycle, or a second name for it
                continue
            visited.add(real)
            subdirs, files = self.listing(directory, real)
            if files:
                yield directory, parts, files
            for name, path, child_real in reversed(subdirs):
                if child_real != real + os.sep + name:
                    links.append((path, (*parts, name), child_real))
                else:
                    stack.append((path, (*parts, name), child_real))


# -- discovery ------------------------------------------------------------------------------


def templates_of(profile: HardwareProfile) -> list[str]:
    """The overlay root templates of a profile, in the order they claim directories."""
    return [profile.deployment.overlay_root, *profile.deployment.extra_overlay_roots]


def discover(
    source: LlmdSource,
    registry: Registry | None = None,
    *,
    guide: str | None = None,
    profiles: Iterable[HardwareProfile] | None = None,
) -> Catalog:
    """Every overlay of ``profiles`` (default: all registered) in ``source``, optionally one guide's."""
    registry = registry or get_registry()
    chosen = list(profiles) if profiles is not None else registry.profiles()
    report_unsupported = profiles is None
    walker = _Walker(source)
    fixed = {"guide": guide} if guide is not None else {}
    start = walker.start()
    prefix_matches: dict[str, list[_Match]] = {}

    def variant_dirs(prefix: str) -> list[_Match]:
        if prefix not in prefix_matches:
            prefix_matches[prefix] = list(walker.match(_compile(prefix, fixed), start))
        return prefix_matches[prefix]

    overlays: list[Overlay] = []
    for profile in chosen:
        claimed: set[str] = set()
        own_dirs = set(profile.overlay_dirs)
        for template in templates_of(profile):
            prefix, suffix = _split_at_variant(template)
            if prefix == template and "{variant}" not in template:
                roots = list(walker.match(_compile(template, fixed), start))
            else:
                roots = [m for m in variant_dirs(prefix) if dict(m.captures).get("variant") in own_dirs]
                if suffix:
                    roots = [found for m in roots for found in walker.match(_compile(suffix, fixed), m)]
            for root in roots:
                overlays.extend(_overlays_below(walker, root, profile, template, fixed, claimed))
    unsupported: list[UnsupportedDir] = []
    overlay_paths = [o.path + "/" for o in overlays]
    if report_unsupported:
        resolver = Resolver(registry)
        seen: set[str] = set()
        for matches in prefix_matches.values():
            for m in matches:
                captures = dict(m.captures)
                name = captures.get("variant", "")
                if (not resolver.match_overlay_dir(name).supported and m.real not in seen
                        and not any(p.startswith("/".join(m.parts) + "/") for p in overlay_paths)):  # owned via another template
                    seen.add(m.real)
                    unsupported.append(UnsupportedDir(captures.get("guide", guide or ""), name, "/".join(m.parts), m.directory))
    overlays.sort(key=lambda o: (o.guide, o.hardware, o.model_server or "", o.name))
    unsupported.sort(key=lambda u: (u.guide, u.name))
    return Catalog(source, overlays, unsupported, sorted(walker.skipped.values(), key=lambda s: s.path))


def _overlays_below(walker: _Walker, root: _Match, profile: HardwareProfile, template: str,
                    fixed: Mapping[str, str], claimed: set[str]) -> Iterator[Overlay]:
    captures = dict(root.captures)
    for directory, parts, files in walker.kustomizations(root):
        if directory in claimed:
            continue
        claimed.add(directory)
        name = "/".join((*root.wildcards, *parts)) or "."
        yield Overlay(
            guide=captures.get("guide", fixed.get("guide", "")),
            hardware=profile.id,
            variant_dir=captures.get("variant", profile.upstream_variant),
            model_server=captures.get("model_server"),
            name=name,
            path="/".join((*root.parts, *parts)),
            files=files,
            template=template,
            directory=directory,
        )


def kustomizations_below(source: LlmdSource, directory: str) -> list[tuple[str, str]]:
    """(directory, path relative to the source) of every Kustomization at or below ``directory``."""
    walker = _Walker(source)
    top = _Match(directory, os.path.realpath(directory), (), (), ())
    return [(found, source.display(found)) for found, _, _ in walker.kustomizations(top)]


def with_engines(overlays: Iterable[Overlay], engine_of: Callable[[str], str | None]) -> list[Overlay]:
    """Overlays named by the engine they run: ``vllm-deepseek-v4/base`` is overlay ``vllm-deepseek-v4/base`` of vllm.

    ``engine_of`` reads an overlay directory's engine; where it finds none, the directory name stays
    the model server.
    """
    overlays = list(overlays)
    engines = {o.path: engine_of(o.directory) for o in overlays}
    # an overlay that shows no engine itself (a Component, a broken one) runs its siblings' engine
    siblings: dict[tuple[str, str, str | None], set[str]] = {}
    for o in overlays:
        if engines[o.path]:
            siblings.setdefault((o.guide, o.hardware, o.model_server), set()).add(str(engines[o.path]))
    renamed = []
    for overlay in overlays:
        engine = engines[overlay.path]
        if not engine:
            known = siblings.get((overlay.guide, overlay.hardware, overlay.model_server), set())
            engine = next(iter(known)) if len(known) == 1 else None
        if not engine or engine == overlay.model_server:
            renamed.append(overlay)
            continue
        name = overlay.name
        if overlay.model_server:
            name = overlay.model_server if name == "." else f"{overlay.model_server}/{name}"
        renamed.append(dataclasses.replace(overlay, model_server=engine, name=name, server_dir=overlay.model_server))
    renamed.sort(key=lambda o: (o.guide, o.hardware, o.model_server or "", o.name))
    return renamed
