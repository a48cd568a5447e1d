"""docs/cli.md covers every command and option (that it is current is llm_d_lens/generate's check)."""

from __future__ import annotations

import re

from llm_d_lens.terminal import commands
from llm_d_lens.cli.app import build_app
from llm_d_lens.cli.docs import render


def test_every_leaf_command_has_a_section_and_every_option_a_row():
    text = render()
    sections = set(re.findall(r"^## `(lens [^`]+)`", text, flags=re.M))
    root = commands.to_click(build_app())
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
