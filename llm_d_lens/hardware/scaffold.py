"""``lens hardware new ID``: an installable external plugin package, filled from a few flags.

What it writes is what ``docs/add-hardware.md`` describes and ``examples/nimbus-lens`` shows: a
``pyproject.toml`` with a ``[build-system]``, a name, a version, the entry points and package
data; the profile JSON (checked against the contract before anything is written); optionally a
provider stub; tests that use Lens's contract kit; a README. It never writes into an existing
directory that has anything in it.
"""

from __future__ import annotations

import json
import re
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
    }


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

[project.entry-points."llm_d_lens.hardware.profiles"]
{req.profile_id} = "{req.package}:load_profiles"

{provider}
[tool.setuptools]
packages = ["{req.package}"]

[tool.setuptools.package-data]
{req.package} = ["profiles/*.json"]
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

Run after ``pip install .``:  python -m pytest -p llm_d_lens.testing.contract tests
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
python -m pytest -p llm_d_lens.testing.contract tests
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

    if not ID_PATTERN.match(req.profile_id):
        raise ScaffoldRefused(f"ID {req.profile_id!r}: use lower-case letters, digits and '-' (it becomes the "
                              "profile id and the entry-point name)", details={"value": req.profile_id})
    if req.request_model == "dra" and not req.device_class:
        raise ScaffoldRefused("--request-model dra needs --device-class (the DRA DeviceClass your driver publishes)")
    if req.request_model == "extended-resource" and not req.resource_name:
        raise ScaffoldRefused("--request-model extended-resource needs --resource-name (for example vendor.com/npu)")
    try:
        validate_payload(profile_payload(req), "the profile lens hardware new would write")
    except ProfileInvalid as exc:
        raise ScaffoldRefused(exc.message, details=exc.details) from None
    target = req.directory
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldRefused(f"--dir {target}: exists and is not an empty directory; Lens never writes into it",
                              details={"value": str(target)})


def write(req: ScaffoldRequest) -> list[Path]:
    """Check, then write every file; returns the paths written."""
    check(req)
    written = []
    for relative, text in files_for(req).items():
        path = req.directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
