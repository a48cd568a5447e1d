"""docs/cli.md is what the commands generate: a new option or command without a doc update fails here."""

from __future__ import annotations

import re

import pytest
import typer

from llm_d_lens.cli.app import build_app
from llm_d_lens.cli.docs import DOC, render


def test_the_cli_reference_is_current():
    if not DOC.exists():
        pytest.skip(f"{DOC} is absent (an installed wheel carries no docs)")
    assert DOC.read_text(encoding="utf-8") == render(), \
        "docs/cli.md is out of date: run `.venv/bin/python -m llm_d_lens.cli.docs --write`"


def test_every_leaf_command_has_a_section_and_every_option_a_row():
    text = render()
    sections = set(re.findall(r"^## `(lens [^`]+)`", text, flags=re.M))
    root = typer.main.get_command(build_app())
    for group_name, group in root.commands.items():
        if group.hidden:
            continue  # an alias: listed under "Aliases", not as a section of its own
        leaves = {n: c for n, c in (getattr(group, "commands", None) or {}).items() if not c.hidden}
        names = [f"lens {group_name} {n}" for n in leaves] if leaves else [f"lens {group_name}"]
        for name in names:
            assert name in sections, name
    deploy_render = text.split("## `lens deploy render`")[1].split("\n## ")[0]
    for flag in ("`--output-file`", "`--force`", "`--output`, `-o`", "`--pci-allow`"):
        assert flag in deploy_render
    assert "| 2 | usage error" in text and "`LENS_LLM_D_ROOT`" in text
