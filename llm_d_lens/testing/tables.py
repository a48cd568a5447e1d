"""Render a Rich table at a fixed width and check a person can read it (tests of every table use this).

"Readable" means: no line wider than the terminal, no ellipsis, every header whole and distinct,
and numeric columns right-aligned, so ``allocat…`` twice or a cut ``NVI…`` cannot come back.
"""

from __future__ import annotations

import io
import re
from typing import Any


def render(renderable: Any, width: int) -> str:
    """The text ``renderable`` prints on a terminal ``width`` columns wide (no colour codes)."""
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False, soft_wrap=False).print(renderable)
    return buffer.getvalue()


def header_cells(text: str, first: str) -> list[str]:
    """The header cells of the table whose header row starts with ``first``, each stripped."""
    line = next(line for line in text.splitlines() if line.lstrip("┃│ ").startswith(first))
    return [cell.strip() for cell in line.strip().strip("┃│").split("┃" if "┃" in line else "│")]


def body_rows(text: str, first_cell: str) -> list[list[str]]:
    """Body rows (cells unstripped, padding kept) whose first cell is ``first_cell``."""
    rows = []
    for line in text.splitlines():
        if "│" not in line:
            continue
        cells = line.strip().strip("│").split("│")
        if cells and cells[0].strip() == first_cell:
            rows.append(cells)
    return rows


def assert_readable(text: str, width: int, headers: list[str], *, first: str) -> None:
    """Fail with what is wrong: a long line, an ellipsis, a header cut, merged or repeated."""
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, f"lines wider than {width}: {too_long[:2]}"
    assert "…" not in text, f"an ellipsis at width {width}:\n{text}"
    shown = header_cells(text, first)
    assert shown == headers, f"headers at width {width}: {shown} != {headers}"
    assert len(set(shown)) == len(shown), f"headers repeat: {shown}"


def assert_right_aligned(cell: str) -> None:
    """A numeric cell's value touches the right padding (one space), with any slack on the left."""
    assert cell.endswith(cell.strip() + " "), repr(cell)


def commands_offering(choice: str) -> list[str]:
    """Every visible command (a leaf, or a group that runs itself) whose ``--output`` offers ``choice``.

    Hidden aliases are left out: they run the same command, checked under its own name.
    """
    from llm_d_lens.terminal import commands
    from llm_d_lens.cli.app import build_app

    found: list[str] = []

    def walk(command: Any, path: list[str]) -> None:
        if command.hidden:
            return
        output = [p for p in command.params if "--output" in getattr(p, "opts", ())]
        if output and choice in (output[0].metavar or "").split("|"):
            found.append(" ".join(path))
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(commands.to_click(build_app()), [])
    return found


CAMEL = re.compile(r"^[a-z]+[A-Z]")
#: keys whose values are Kubernetes' or a label set's own, kept as Kubernetes spells them
KUBERNETES_VALUES = {"labels", "objects", "items", "selector", "node_labels", "node_label_selector", "annotations",
                     "requests", "limits", "capacity", "allocatable", "metadata", "spec", "status_object",
                     "options", "values"}  # a chart's own values too


def camel_keys(document: Any, path: str = "") -> list[str]:
    """Every camelCase key of a JSON document, by path, outside the values Kubernetes spells."""
    found: list[str] = []
    if isinstance(document, dict):
        for key, value in document.items():
            if CAMEL.match(str(key)):
                found.append(f"{path}.{key}")
            if key not in KUBERNETES_VALUES:
                found += camel_keys(value, f"{path}.{key}")
    elif isinstance(document, list):
        for i, item in enumerate(document[:50]):
            found += camel_keys(item, f"{path}[{i}]")
    return found
