"""Installing a plugin project the way a user does, into a throwaway place (for tests).

``pip install --no-deps --no-build-isolation --target DIR PROJECT`` builds a real wheel with
the project's own ``[build-system]`` and leaves real ``dist-info`` with real entry points in
``DIR``; putting ``DIR`` on ``sys.path`` (or ``PYTHONPATH``) is then exactly an installed plugin.
The project is copied first, so a build never writes into the source tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def pip_install(project: Path, target: Path, scratch: Path) -> Path:
    """Install ``project`` into ``target``; returns the copy that was built (with its tests)."""
    copy = scratch / project.name
    shutil.rmtree(copy, ignore_errors=True)  # a reinstall builds the project as it is now
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--upgrade", "--no-deps", "--no-build-isolation",
            "--no-index", "--disable-pip-version-check", "--target", str(target), str(copy)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=dict(os.environ, PIP_NO_INPUT="1"))
    if result.returncode != 0:
        raise AssertionError(f"pip install {project} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return copy


def env_with(target: Path, **extra: str) -> dict[str, str]:
    """This interpreter's environment with ``target`` first on the import path."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), *sys.path]), **extra)


def throwaway_venv(where: Path) -> Path:
    """A new virtual environment that sees this interpreter's packages (Lens among them); its python.

    The host's ``site-packages`` is added as a site directory (its own ``.pth`` files run, so an
    editable Lens stays importable); what is installed into the new environment comes first.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    site = next(where.glob("lib/python*/site-packages"))
    hosts = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "zz-host-site.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in hosts))
    return where / "bin" / "python"


def editable_install(project: Path, python: Path) -> None:
    """``pip install -e PROJECT`` into the environment of ``python``, as a plugin author does while developing."""
    _pip_into(python, ["-e", str(project)])


def venv_install(projects: list[Path], python: Path) -> None:
    """``pip install PROJECT...`` (real wheels, built once each) into the environment of ``python``, in one pip run."""
    _pip_into(python, [str(p) for p in projects])


def _pip_into(python: Path, what: list[str]) -> None:
    argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
            "--no-build-isolation", "--no-index", "--disable-pip-version-check", *what]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=dict(os.environ, PIP_NO_INPUT="1"))
    if result.returncode != 0:
        raise AssertionError(f"pip install {' '.join(what)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
