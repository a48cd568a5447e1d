"""The floors of Lens and the check that every import points down (for tests, and for a plugin's own).

Every module of the package sits on one floor; a module imports only from its own floor or one
below. Each ``import`` statement counts wherever it is written: at the top, inside a function, or
under ``if TYPE_CHECKING``, because an import circle closes just as well through a function body.
Within a floor, folders may import each other, but never in a circle. Test modules (``test_*.py``,
``conftest.py``) exercise the assembled product and are not held to the floors.

Read from the source with :mod:`ast` (nothing is imported), so a broken module is still checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: bottom up: floor -> the top-level names (modules or folders) of the package on it;
#: "" is the package's own ``__init__``
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kernel", ("", "errors", "files", "jsonread", "yamlread", "limits", "settings", "runner", "k8s", "prometheus", "terminal", "web")),
    ("contract", ("hardware",)),
    ("domains", ("cluster", "deploy", "monitoring", "evaluate", "planning", "incluster")),
    ("serving", ("serving",)),
    ("assembly", ("cli", "api", "console", "generate")),
    ("testing", ("testing",)),
)
#: the most modules the package root may hold (its ``__init__`` included)
ROOT_MODULES = 6


@dataclass(frozen=True)
class Import:
    module: str  # dotted, the importer
    target: str  # dotted, the deepest module of the package the statement names
    line: int


def modules(package: Path) -> dict[str, Path]:
    """Every non-test module of the package, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py":
            continue
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(package: Path) -> list[Import]:
    """Every import of a module of the package by a module of it, each statement wherever it stands."""
    known = modules(package)
    top = package.name
    found: list[Import] = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = set()
            for target in _targets(node, name, is_package):
                if target == top or target.startswith(top + "."):
                    while target not in known and "." in target:
                        target = target.rsplit(".", 1)[0]
                    targets.add(target)
            # ``from pkg import mod`` names both the package and the module: the module is what it reads
            deepest = {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
            found += [Import(name, target, node.lineno) for target in sorted(deepest)]
    return found


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join([*base, node.module] if node.module else base)
    else:
        origin = node.module or ""
    return [f"{origin}.{alias.name}" for alias in node.names] + [origin]


def floor_of(module: str, floors: Sequence[tuple[str, Sequence[str]]] = FLOORS) -> int | None:
    """The index of the floor ``module`` sits on; None for a top-level name no floor lists."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else ""
    for index, (_, names) in enumerate(floors):
        if head in names:
            return index
    return None


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def problems(package: Path, floors: Sequence[tuple[str, Sequence[str]]] = FLOORS,
             forbidden: Mapping[str, Iterable[str]] | None = None) -> list[str]:
    """Every way the package breaks its floors, all at once (an empty list: none).

    ``forbidden`` maps a folder to dotted-name suffixes it may not import (``console`` may not
    import a domain's ``api`` routes, only its services).
    """
    found: list[str] = []
    known = modules(package)
    for name in known:
        if floor_of(name, floors) is None:
            found.append(f"{name}: on no floor (add its folder to FLOORS)")
    roots = [n for n in known if n.count(".") == 1 and known[n].name != "__init__.py"] + [package.name]
    if len(roots) > ROOT_MODULES:
        found.append(f"{package.name}: {len(roots)} modules at the package root, at most {ROOT_MODULES}")
    edges: dict[str, set[str]] = {}
    for imp in imports(package):
        low, high = floor_of(imp.module, floors), floor_of(imp.target, floors)
        if low is None or high is None:
            continue
        if high > low:
            found.append(f"{imp.module}:{imp.line} imports {imp.target}: from the {floors[low][0]} floor up to "
                         f"the {floors[high][0]} floor")
        elif high == low and folder_of(imp.module) != folder_of(imp.target):
            edges.setdefault(folder_of(imp.module), set()).add(folder_of(imp.target))
        for suffix in (forbidden or {}).get(folder_of(imp.module), ()):
            if imp.target.endswith(suffix) and folder_of(imp.target) != folder_of(imp.module):
                found.append(f"{imp.module}:{imp.line} imports {imp.target}: {folder_of(imp.module)} may not "
                             f"import another folder's {suffix.strip('.')} modules")
    found += [f"import circle across folders: {' -> '.join(cycle)}" for cycle in _cycles(edges)]
    return found


def _cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of folders (Tarjan), each closed on its first folder."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group) + [sorted(group)[0]])

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups
