"""Finding and loading workload profiles on a search path.

The built-in directory comes first, then each ``--profile-dir`` in the order given; a profile in a
later directory overrides one of the same name earlier on the path, so an environment can replace
the shipped ``default``. The file stem is the profile name. Selection is always an explicit
argument, never an environment variable: a value left set in a shell must not change a later run.

Tooling that drives its own deployment runs ``lens profiles list|compose-file|flags|validate`` (or
``python -m llm_d_lens.cli profiles ...``) rather than re-implementing parsing and path resolution.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from llm_d_lens.evaluate.errors import Issue, ProfileDirMissing, WorkloadProfileInvalid, WorkloadProfileNotFound
from llm_d_lens.evaluate.workload import WorkloadProfile, check, pydantic_issues

DEFAULT_PROFILE = "default"
#: Only ``.yaml`` files are profiles, so a ``docker-compose.yml`` kept beside them is never taken for one.
SUFFIX = ".yaml"


def builtin_dir() -> Path:
    return Path(str(files("llm_d_lens.evaluate").joinpath("workload_profiles")))


@dataclass(frozen=True)
class ProfileFile:
    """One profile file on the search path, and the files of the same name it overrides."""

    name: str
    path: Path
    builtin: bool
    overrides: tuple[Path, ...] = ()


@dataclass(frozen=True)
class LoadedProfile:
    name: str
    path: Path
    profile: WorkloadProfile

    @property
    def directory(self) -> Path:
        return self.path.parent

    def compose_path(self) -> Path | None:
        """The compose file as an absolute path, or None for an externally deployed stack."""
        compose = self.profile.deployment.compose_file
        return None if compose is None else (self.directory / compose).resolve()


@dataclass
class SearchPath:
    directories: list[Path] = field(default_factory=list)

    @classmethod
    def of(cls, profile_dirs: Iterable[str | Path] = ()) -> SearchPath:
        """The built-in directory, then each given directory; a missing directory is an error."""
        dirs = [builtin_dir()]
        for raw in profile_dirs:
            path = Path(raw).expanduser()
            if not path.is_dir():
                raise ProfileDirMissing(f"--profile-dir {raw}: no such directory")
            dirs.append(path.resolve())
        return cls(dirs)

    def files(self) -> list[ProfileFile]:
        """Every profile file on the path, in search order (overridden ones included)."""
        found = []
        for index, directory in enumerate(self.directories):
            for path in sorted(p for p in directory.iterdir() if p.suffix == SUFFIX and p.is_file()):
                found.append(ProfileFile(path.stem, path, builtin=index == 0))
        return found

    def effective(self) -> dict[str, ProfileFile]:
        """Name -> the file that wins: the last one on the path."""
        chosen: dict[str, ProfileFile] = {}
        for entry in self.files():
            earlier = chosen.get(entry.name)
            overridden = (*earlier.overrides, earlier.path) if earlier else ()
            chosen[entry.name] = ProfileFile(entry.name, entry.path, entry.builtin, overridden)
        return dict(sorted(chosen.items()))

    def find(self, name: str) -> ProfileFile:
        effective = self.effective()
        if name not in effective:
            raise WorkloadProfileNotFound(name, list(effective), [str(d) for d in self.directories])
        return effective[name]

    def load(self, name: str | None = None, registry: Any | None = None) -> LoadedProfile:
        """The named profile (``default`` when None), validated; unknown names fail at once."""
        return load_file(self.find(name or DEFAULT_PROFILE).path, registry)


def load_file(path: Path, registry: Any | None = None) -> LoadedProfile:
    """One profile file, fully validated; raises :class:`WorkloadProfileInvalid` with every issue."""
    from pydantic import ValidationError

    name = path.stem
    data, issues = _read_yaml(path)
    if issues:
        raise WorkloadProfileInvalid(name, str(path), issues)
    try:
        profile = WorkloadProfile.model_validate(data)
    except ValidationError as exc:
        raise WorkloadProfileInvalid(name, str(path), pydantic_issues(exc.errors())) from None
    issues = check(profile, path.parent, registry if registry is not None else _registry())
    if issues:
        raise WorkloadProfileInvalid(name, str(path), issues)
    return LoadedProfile(name, path.resolve(), profile)


def _registry() -> Any:
    from llm_d_lens.hardware.registry import get_registry

    return get_registry()


def _read_yaml(path: Path) -> tuple[Any, list[Issue]]:
    import yaml

    from llm_d_lens import yamlread

    from llm_d_lens import files as textread
    from llm_d_lens.errors import clip

    try:
        text = textread.read_text(path, limit=yamlread.MAX_BYTES)
    except textread.TextUnreadable as exc:
        return None, [Issue("", exc.problem)]
    try:
        data = yamlread.load(text)
    except yamlread.DuplicateKey as exc:
        return None, [Issue(exc.path, "appears twice; the second value would silently replace the first")]
    except yaml.YAMLError as exc:
        return None, [Issue("", f"is not valid YAML: {clip(str(exc), 1000)}")]
    if not isinstance(data, dict):
        return None, [Issue("", "must be a mapping of keys to values")]
    return data, []


# -- what the commands report -------------------------------------------------------------------


def validate_all(search: SearchPath, registry: Any | None = None) -> list[dict[str, Any]]:
    """Every profile file on the path checked, each with all its issues: nothing stops at the first."""
    results = []
    for entry in search.files():
        try:
            load_file(entry.path, registry)
        except WorkloadProfileInvalid as exc:
            results.append({"name": entry.name, "path": str(entry.path), "valid": False,
                            "issues": [i.to_dict() for i in exc.issues]})
        else:
            results.append({"name": entry.name, "path": str(entry.path), "valid": True, "issues": []})
    return results


def listing(search: SearchPath) -> list[dict[str, Any]]:
    """The selectable profiles with their description; an invalid one is listed, marked invalid."""
    rows = []
    for name, entry in search.effective().items():
        row: dict[str, Any] = {"name": name, "path": str(entry.path), "builtin": entry.builtin,
                               "overrides": [str(p) for p in entry.overrides]}
        try:
            loaded = load_file(entry.path)
        except WorkloadProfileInvalid as exc:
            row |= {"valid": False, "description": None, "problems": len(exc.issues)}
        else:
            row |= {"valid": True, "description": loaded.profile.description,
                    "deployment": "external" if loaded.compose_path() is None else "compose"}
        rows.append(row)
    return rows
