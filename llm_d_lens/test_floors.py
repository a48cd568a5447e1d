"""Every import of Lens points down its floors (kernel < contract < domains < serving < assembly < testing).

The check reads every import statement, those inside functions included, from the source; a
deliberate violation in a throwaway package shows it catches each kind of break.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from llm_d_lens.testing.floors import FLOORS, floor_of, imports, problems

PACKAGE = Path(__file__).resolve().parent
#: the console calls domain services, never another folder's routes
FORBIDDEN = {"console": (".api",)}


def test_lens_keeps_its_floors():
    assert problems(PACKAGE, forbidden=FORBIDDEN) == []


def test_the_check_sees_imports_inside_functions_and_under_type_checking():
    seen = {(i.module, i.target) for i in imports(PACKAGE)}
    # cli/app.py imports each domain's CLI only inside build_app (by name), and the root version lazily
    assert ("llm_d_lens.cli.app", "llm_d_lens.terminal.output") in seen
    assert any(m == "llm_d_lens.cli.lifetime" and t == "llm_d_lens.cli.app" for m, t in seen)  # inside console()


def write(root: Path, files: dict[str, str]) -> Path:
    package = root / "llm_d_lens"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for folder in {p.parent for p in package.rglob("*.py")}:
        (folder / "__init__.py").touch()
    return package


def test_a_kernel_module_importing_a_domain_inside_a_function_is_reported(tmp_path):
    package = write(tmp_path, {
        "errors.py": "def render():\n    from llm_d_lens.cluster.service import inspect\n",
        "cluster/service.py": "from llm_d_lens.errors import render\ndef inspect():\n    pass\n",
    })
    assert problems(package) == ["llm_d_lens.errors:2 imports llm_d_lens.cluster.service: from the kernel floor "
                                 "up to the domains floor"]


def test_a_circle_between_two_domain_folders_is_reported_once(tmp_path):
    package = write(tmp_path, {
        "cluster/a.py": "import llm_d_lens.planning.b\n",
        "planning/b.py": "def f():\n    from ..cluster import a\n",  # relative, inside a function
    })
    assert problems(package) == ["import circle across folders: cluster -> planning -> cluster"]


def test_an_unplaced_folder_a_crowded_root_and_a_forbidden_route_import_are_each_reported(tmp_path):
    package = write(tmp_path, {
        "gadgets/x.py": "",
        **{f"m{i}.py": "" for i in range(6)},
        "console/data.py": "from llm_d_lens.cluster.api import overview\n",
        "cluster/api.py": "overview = None\n",
    })
    found = problems(package, floors=(*FLOORS, ("extra", (*(f"m{i}" for i in range(6)),))), forbidden=FORBIDDEN)
    assert "llm_d_lens.gadgets.x: on no floor (add its folder to FLOORS)" in found
    assert "llm_d_lens: 7 modules at the package root, at most 6" in found
    assert ("llm_d_lens.console.data:1 imports llm_d_lens.cluster.api: console may not import another folder's "
            "api modules") in found


@pytest.mark.parametrize(("module", "floor"), [("llm_d_lens", "kernel"), ("llm_d_lens.runner.process", "kernel"),
                                               ("llm_d_lens.hardware.models", "contract"),
                                               ("llm_d_lens.monitoring.accelerator.service", "domains"),
                                               ("llm_d_lens.cli.app", "assembly")])
def test_modules_sit_on_the_floor_their_folder_names(module, floor):
    index = floor_of(module)
    assert index is not None and FLOORS[index][0] == floor
