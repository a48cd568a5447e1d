"""Every file Lens generates, from its sources only, and one command to write them or check them all.

``python -m llm_d_lens.generate`` rewrites each generated file; ``--check`` rewrites nothing and
lists every stale file at once (exit 1), which ``generate/test_generate.py`` runs in ``make test``.
Each entry renders the file's whole text from what is committed (the profile models, the commands,
the profiles' PromQL, the planning test data), so a generated file can never be edited by hand
and still pass. Runs from a checkout: an installed wheel carries no docs or manifests.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Generated:
    """One generated file: where it is (relative to the checkout) and its text from the current one."""

    path: str
    render: Callable[[str], str]  # the file's current text (empty when absent) -> what it must be
    source: str  # what it is generated from, for the report


def _schema(_: str) -> str:
    from llm_d_lens.hardware.schema import generate_schema, render_schema

    return render_schema(generate_schema())


def _cli_reference(_: str) -> str:
    from llm_d_lens.cli.docs import render

    return render()


def _prometheus_rule(_: str) -> str:
    from llm_d_lens.cli.app import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["telemetry", "rules", "--kind", "prometheusrule", "--namespace", "monitoring"])
    if code != 0:
        raise RuntimeError(f"lens telemetry rules exited {code}")
    return printed.getvalue()


def _between(current: str, begin: str, end: str, table: str) -> str:
    start, stop = current.index(begin) + len(begin), current.index(end)
    return current[:start] + "\n" + table + "\n" + current[stop:]


def _planning_tables(current: str) -> str:
    from llm_d_lens.generate import checkpoints as c

    current = _between(current, c.BEGIN, c.END, c.render_table())
    return _between(current, c.CALIBRATION_BEGIN, c.CALIBRATION_END, c.render_calibration_table())


GENERATED: tuple[Generated, ...] = (
    Generated("llm_d_lens/hardware/schema.json", _schema, "the profile models (hardware/models.py)"),
    Generated("docs/cli.md", _cli_reference, "the lens commands (cli/docs.py)"),
    Generated("manifests/monitoring/prometheusrule.yaml", _prometheus_rule, "lens telemetry rules, from the profiles"),
    Generated("docs/planning.md", _planning_tables, "the checkpoint table (planning/testdata/checkpoints) and the "
                                                    "calibration table (planning/calibration.json)"),
)


def stale(repo: Path = REPO) -> list[str]:
    """Every generated file whose text is not what its sources give, with what to run."""
    found = []
    for entry in GENERATED:
        path = repo / entry.path
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if entry.render(current) != current:
            found.append(f"{entry.path}: stale (generated from {entry.source})")
    return found


def write(repo: Path = REPO) -> list[str]:
    """Rewrite every stale generated file; the ones rewritten."""
    written = []
    for entry in GENERATED:
        path = repo / entry.path
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        text = entry.render(current)
        if text != current:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(entry.path)
    return written
