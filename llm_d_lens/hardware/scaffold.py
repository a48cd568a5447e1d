"""``lens hardware new ID``: an installable external plugin package, filled from a few flags.

What it writes is what ``docs/add-hardware.md`` describes and ``examples/nimbus-lens`` shows: a
``pyproject.toml`` with a ``[build-system]``, a name, a version, the entry points and package
data; the profile JSON (checked against the contract before anything is written); optionally a
provider stub; tests that use Lens's contract kit; a README. It never writes into an existing
directory that has anything in it, never through a symlink, and all or nothing (see :func:`write`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_d_lens.hardware.errors import ProfileInvalid, ScaffoldRefused

ID_PATTERN = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


@dataclass(frozen=True)
class ScaffoldRequest:
    profile_id: str
    vendor: str
    display_name: str
    request_model: str  # "extended-resource" | "dra"
    resource_name: str | None
    device_class: str | None
    node_label: tuple[str, str]
    provider: bool
    directory: Path

    @property
    def package(self) -> str:
        return self.profile_id.replace("-", "_") + "_lens"

    @property
    def distribution(self) -> str:
        return f"{self.profile_id}-lens"


def profile_payload(req: ScaffoldRequest) -> dict[str, Any]:
    """The profile the flags describe: the guide's minimal template, one access mode."""
    key, value = req.node_label
    dra = req.request_model == "dra"
    mode = "dra" if dra else "plugin"
    deployment: dict[str, Any] = {
        "overlay_root": "guides/{guide}/modelserver/{variant}/{model_server}",
        "arch": req.profile_id,
        "node_selector": {key: value},
    }
    if dra:
        deployment.update(device_class=req.device_class, claim_request_name="accelerator")
    else:
        deployment["resource_name"] = req.resource_name
    return {
        "id": req.profile_id,
        "display_name": req.display_name,
        "vendor": req.vendor,
        "accelerator_keys": [f"{req.profile_id}-accelerator"],
        "benchmark_profile": None,
        "upstream_variant": req.profile_id,
        "upstream_vendor": req.vendor,
        "request_model": req.request_model,
        "device_classes": [req.device_class] if dra else [],
        "resource_prefixes": [] if dra else [req.resource_name],
        "node_label_selector": {key: value},
        "access_modes": [mode],
        "deployment": deployment,
        "presence": {"node_label_selector": {key: value}, "timeout_seconds": 60},
        # the console's tab: the vendor as given, the device kind from the resource or class name (npu, gpu...)
        "ui": {"icon": "Chip", "labels": {"vendor": req.vendor.title(), "metric_group": _device_kind(req)}},
    }


def _device_kind(req: ScaffoldRequest) -> str:
    """``vendor.com/npu`` -> ``NPU``, ``npu.vendor.com`` -> ``NPU``; ``Accelerator`` when neither says."""
    name = req.device_class.split(".", 1)[0] if req.request_model == "dra" and req.device_class else (
        (req.resource_name or "").rsplit("/", 1)[-1])
    word = re.sub(r"[^a-z0-9]", "", name.lower())
    return word.upper() if 2 <= len(word) <= 4 else "Accelerator"


def pip_path(directory: Path) -> str:
    """The folder as pip reads a path, never as a package name: ``acme-lens`` -> ``./acme-lens``."""
    text = directory.as_posix()
    return text if directory.is_absolute() or text.startswith(("./", "../")) else f"./{text}"


def _pyproject(req: ScaffoldRequest) -> str:
    provider = (f'[project.entry-points."llm_d_lens.hardware.providers"]\n'
                f'{req.profile_id} = "{req.package}.provider:Provider"\n') if req.provider else (
        '# A provider is optional (only for behaviour a profile cannot declare); to add one, write\n'
        f'# {req.package}/provider.py and declare it here (entry-point name = profile id):\n'
        '# [project.entry-points."llm_d_lens.hardware.providers"]\n'
        f'# {req.profile_id} = "{req.package}.provider:Provider"\n')
    return f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{req.distribution}"
version = "0.1.0"
description = "Lens hardware plugin: {req.display_name}"
requires-python = ">=3.11"
dependencies = ["llm-d-lens"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points."llm_d_lens.hardware.profiles"]
{req.profile_id} = "{req.package}:load_profiles"

{provider}
[tool.setuptools]
# the profiles folder holds data only; listed as a package of its own so setuptools ships it
packages = ["{req.package}", "{req.package}.profiles"]

[tool.setuptools.package-data]
"{req.package}.profiles" = ["*.json"]

[tool.pytest.ini_options]
testpaths = ["tests"]
'''


def _init(req: ScaffoldRequest) -> str:
    return f'''"""Lens hardware plugin for {req.display_name}: ``load_profiles`` returns the packaged profile."""

import json
from importlib.resources import files


def load_profiles() -> list[dict]:
    text = files("{req.package}").joinpath("profiles", "{req.profile_id}.json").read_text(encoding="utf-8")
    return [json.loads(text)]
'''


def _provider(req: ScaffoldRequest) -> str:
    return f'''"""The {req.display_name} provider: only what the profile cannot declare.

Every method of the guide's interface is optional: Lens does presence, status and install from the
profile. Override only what is real for your hardware, for example the optional install hook:

    async def extra_install_options(self, target, view):
        return {{"someChartValue": "derived from the cluster"}}
"""

from llm_d_lens.hardware.providers.base import ProfileProvider


class Provider(ProfileProvider):
    profile_id = "{req.profile_id}"
'''


def _tests(req: ScaffoldRequest) -> str:
    return f'''"""The plugin's own tests: Lens's contract kit checks the installed distribution.

Run after ``pip install .``: ``pytest`` (Lens registers its contract kit as a pytest plugin, so the
``lens_contract`` fixture is there without any option).
"""


def test_{req.package}_honours_the_lens_contract(lens_contract):
    lens_contract.assert_ok("{req.distribution}")
'''


def _readme(req: ScaffoldRequest) -> str:
    return f'''# {req.distribution}

A Lens hardware plugin for {req.display_name}, made by `lens hardware new`.

* `{req.package}/profiles/{req.profile_id}.json`: the profile. Check it with
  `lens hardware validate {req.package}/profiles/{req.profile_id}.json`.
* `pyproject.toml`: the entry points Lens discovers (entry-point name = profile id).
* `tests/`: the contract kit's checks.

```sh
pip install .
lens hardware show {req.profile_id}
pytest
```
'''


def files_for(req: ScaffoldRequest) -> dict[str, str]:
    files = {
        "pyproject.toml": _pyproject(req),
        "README.md": _readme(req),
        f"{req.package}/__init__.py": _init(req),
        f"{req.package}/profiles/{req.profile_id}.json": json.dumps(profile_payload(req), indent=2) + "\n",
        "tests/test_contract.py": _tests(req),
    }
    if req.provider:
        files[f"{req.package}/provider.py"] = _provider(req)
    return files


def check(req: ScaffoldRequest) -> None:
    """Refuse bad flags before touching the disk, naming the flag and the value."""
    from llm_d_lens.hardware.loader import validate_payload

    if not ID_PATTERN.fullmatch(req.profile_id):
        raise ScaffoldRefused(f"ID {req.profile_id!r}: use lower-case letters, digits and '-' (it becomes the "
                              "profile id and the entry-point name)", details={"value": req.profile_id})
    if req.request_model == "dra" and not req.device_class:
        raise ScaffoldRefused("--request-model dra needs --device-class (the DRA DeviceClass your driver publishes)")
    if req.request_model == "extended-resource" and not req.resource_name:
        raise ScaffoldRefused("--request-model extended-resource needs --resource-name (for example vendor.com/npu)")
    try:
        profile = validate_payload(profile_payload(req), "the profile lens hardware new would write")
    except ProfileInvalid as exc:
        raise ScaffoldRefused(exc.message, details=exc.details) from None
    _refuse_owned_identity(profile)
    target = req.directory
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldRefused(f"--dir {target}: exists and is not an empty directory; Lens never writes into it",
                              details={"value": str(target)})


def _refuse_owned_identity(profile: Any) -> None:
    """A new hardware must not take an id, alias, device class, resource prefix or label pair a registered
    profile owns: installed, it would lose the registration conflict (or shadow the other)."""
    from llm_d_lens.errors import LensError
    from llm_d_lens.hardware.conflicts import all_clashes
    from llm_d_lens.hardware.discovery import DiscoveredProfile, canonical
    from llm_d_lens.hardware.registry import get_registry

    try:
        registry = get_registry()
    except LensError:
        return  # the installed set cannot be read; validate and doctor say why
    where = ", ".join(str(o) for o in registry.origins(profile.id)) if profile.id in registry.ids() else None
    if where is not None:
        raise ScaffoldRefused(f"ID {profile.id!r} is registered already ({where}); choose another id",
                              details={"field": "id", "value": profile.id, "owner": profile.id})
    others = [DiscoveredProfile(p, canonical(p.to_data()), registry.origins(p.id)) for p in registry.profiles()]
    clashes = all_clashes(DiscoveredProfile(profile, canonical(profile.to_data()), []), others)
    if clashes:
        first = clashes[0]
        value = list(first.value) if isinstance(first.value, tuple) else first.value
        owner = first.first.profile.id
        raise ScaffoldRefused(
            f"{first.field} {value!r} belongs to the registered profile {owner!r} "
            f"({', '.join(str(o) for o in first.first.origins)}); give this hardware its own "
            "(--resource-name, --device-class, --vendor or the ID)",
            details={"field": first.field, "value": value, "owner": owner,
                     "all": [{"field": c.field, "owner": c.first.profile.id} for c in clashes]})


def write(req: ScaffoldRequest) -> list[Path]:
    """Check, then write every file, all or nothing; returns the paths written.

    The package is built in a fresh private folder (``mkdtemp``) whose files are created
    exclusively and never through a symlink (``O_EXCL | O_NOFOLLOW``), each written whole and
    synced; then it is published by rename: the folder itself when ``--dir`` does not exist (one
    step), else each top-level entry into the empty ``--dir``, refusing a name that appeared there
    meanwhile. A rename replaces a name, never what a symlink at it points to. Any failure (a
    read-only or full disk, a name planted while writing) removes everything this call made and
    is a coded :class:`ScaffoldRefused`.
    """
    check(req)
    target = req.directory
    if target.is_symlink():
        raise ScaffoldRefused(f"--dir {target}: is a symlink; give the folder itself", details={"value": str(target)})
    files = files_for(req)
    existing = target.is_dir()
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial",
                                        dir=target if existing else target.parent))
    except OSError as exc:
        raise _cannot_write(target, exc) from None
    published: list[Path] = []
    try:
        for relative, text in files.items():
            _create(staging, relative, text.encode())
        umask = os.umask(0)
        os.umask(umask)
        for folder in sorted({p for relative in files for p in Path(relative).parents if p != Path(".")}):
            os.chmod(staging / folder, 0o777 & ~umask)
        if existing:
            for entry in sorted(os.listdir(staging)):
                destination = target / entry
                if os.path.lexists(destination):
                    raise ScaffoldRefused(f"--dir {target}: {entry} appeared there while the package was written; "
                                          "nothing was written", details={"value": str(destination)})
                os.rename(staging / entry, destination)
                published.append(destination)
            os.rmdir(staging)
        else:
            os.chmod(staging, 0o777 & ~umask)
            try:
                os.rename(staging, target)  # fails if --dir appeared meanwhile and is not empty
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                    raise ScaffoldRefused(f"--dir {target}: appeared while the package was written and is not an "
                                          "empty folder; nothing was written", details={"value": str(target)}) from None
                raise
            published.append(target)
        _sync(target)
        _sync(target.parent)
    except BaseException as exc:  # a full disk, a planted name, Ctrl-C: take back everything this call made
        for path in published:
            _remove(path)
        _remove(staging)
        if isinstance(exc, OSError):
            raise _cannot_write(target, exc) from None
        raise
    return [target / relative for relative in files]


def _create(root: Path, relative: str, payload: bytes) -> None:
    """``root/relative``, created exclusively, never through a symlink, written whole and synced."""
    path = root / relative
    for folder in reversed(Path(relative).parents):
        if folder != Path("."):
            with contextlib.suppress(FileExistsError):
                os.mkdir(root / folder, 0o700)
            if os.path.islink(root / folder):
                raise FileExistsError(errno.EEXIST, "a symlink is in the way", str(root / folder))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    handle = os.open(path, flags, 0o666)
    try:
        view = memoryview(payload)
        while view:  # a short write (a size limit reached) is an error, not a shorter file
            written = os.write(handle, view)
            if written <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            view = view[written:]
        os.fsync(handle)
    finally:
        os.close(handle)


def _cannot_write(target: Path, exc: OSError) -> ScaffoldRefused:
    why = exc.strerror or str(exc)
    return ScaffoldRefused(f"--dir {target}: cannot be written ({why}); nothing was left behind",
                           details={"value": str(target), "problem": why})


def _remove(path: Path) -> None:
    """Remove ``path`` (a folder with what is in it), never following a symlink; best effort."""
    with contextlib.suppress(OSError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)


def _sync(directory: Path) -> None:
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
