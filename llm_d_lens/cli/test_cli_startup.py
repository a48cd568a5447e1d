"""``lens --help`` lists every group from ``cli.GROUPS`` without importing one of them, nor Rich or pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from llm_d_lens.cli.app import GROUPS, build_app

PROBE = """
import json, sys
from llm_d_lens.cli.app import GROUPS, main
code = main(["--help"])
loaded = sorted(module for module, _ in GROUPS.values() if module in sys.modules)
heavy = sorted(name for name in ("typer", "pydantic", "rich", "jsonschema", "yaml") if name in sys.modules)
print(json.dumps({"code": code, "loaded": loaded, "heavy": heavy}), file=sys.stderr)
"""


def test_the_root_help_names_every_group_with_its_help_line_and_imports_none():
    env = {**os.environ, "COLUMNS": "250"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": [], "heavy": []}, done.stderr
    lines = done.stdout.splitlines()
    for name, (_, help_text) in GROUPS.items():
        assert any(line.split()[:1] == [name] and help_text in line for line in lines), (name, done.stdout)


def test_the_full_app_still_holds_every_command_of_every_group():
    """What docs/cli.md is generated from: each group with its real commands, not a placeholder."""
    from llm_d_lens.terminal import commands
    command = commands.to_click(build_app())
    lazy = commands.to_click(build_app(lazy=True))
    for name in GROUPS:
        real, placeholder = command.commands[name], lazy.commands[name]  # type: ignore[attr-defined]
        assert real.commands or real.params, name  # a group of commands, or one that runs itself (preflight)
        assert not (placeholder.commands or placeholder.params), name
