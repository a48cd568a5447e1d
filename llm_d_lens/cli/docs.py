"""docs/cli.md, generated from the command tree so the reference cannot drift from the commands.

``python -m llm_d_lens.generate`` rewrites it (with every other generated file); its check fails
while the file differs from what the app would generate. Every command gets its usage, options (value in plain words,
default, help), output formats and the environment variables its help names.
"""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.cli.app import build_app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_ENV = re.compile(r"\b(?:LENS_[A-Z0-9_]+|LLM_D_ROOT)\b")

HEADER = """# `lens` command reference

Generated from the commands themselves by `python -m llm_d_lens.generate`; a test fails
while this file is out of date, so what it says is what the commands do.

## Habits shared by every command

- `-o/--output` is the output **format**: `table` (fits 80 columns), `wide` (every column), `json`,
  `yaml`; commands whose result is a document (manifests, a scenario) take `yaml` or `json`.
  List commands also take `name`: one name a line, plain (`demo`, not kubectl's `cluster/demo`),
  as `lens hardware show`, `--cluster`, `--guide` or `--model` take it. Commands that print one line for a
  shell (`profiles flags`, `profiles compose-file`) default to `text`, that line as it is.
- JSON and YAML keys are snake_case on every command and endpoint; Kubernetes names and label
  keys inside values stay as Kubernetes spells them.
- A command that writes a file takes `--output-file FILE` and never replaces an existing file
  without `--force`.
- `-h` is `--help`. `lens --version` prints the version; `lens version -o json` adds Python,
  kubectl, helm and kustomize. Shell completion is click's: `eval "$(_LENS_COMPLETE=bash_source lens)"`
  in `~/.bashrc` (`zsh_source`, `fish_source` for those shells).
- Slow steps (preflight waits, installs, live cluster reads, renders at a `--revision`, planning)
  show what they wait for on stderr, only on a terminal and only for output meant for people (a
  table, or a render's YAML manifests; never `-o json` or `--report`); `LENS_NO_PROGRESS=1` turns
  that off.

### Exit codes

| code | meaning |
|---:|---|
| 0 | done |
| 1 | refused or failed: one `error: CODE: message` line on stderr, never a traceback |
| 2 | usage error: an unknown option or a bad value, with click's message |
"""


def _default(param: Any) -> str:
    default = param.default
    if param.required:  # no default (click 8.2+ holds a sentinel object there)
        return ""
    if default is None or default is False or default == [] or default == () or callable(default) or param.is_flag:
        return ""
    if isinstance(default, enum.Enum):
        default = default.value
    if isinstance(default, (list, tuple)):
        default = ", ".join(str(d) for d in default)
    return f"`{default}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _argument(param: Any) -> str:
    name = (param.metavar or param.name or "").upper()
    return name + ("..." if param.nargs != 1 else "")


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    subs = getattr(command, "commands", None)
    if subs is None:
        return [(path, command)]
    found: list[tuple[tuple[str, ...], Any]] = []
    if path and getattr(command, "invoke_without_command", False):
        found.append((path, command))  # a group that does something itself (`lens preflight`)
    for name in sorted(subs):
        if not getattr(subs[name], "hidden", False):  # an alias: listed once, under "Aliases"
            found += _commands(subs[name], (*path, name))
    return found


def _aliases(command: Any, path: tuple[str, ...] = ()) -> list[str]:
    """One line per hidden alias: its name and its help, which says what it is the same as."""
    lines: list[str] = []
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        if getattr(sub, "hidden", False):
            lines.append(f"- `{' '.join(('lens', *path, name))}`: {(sub.help or '').strip()}")
        else:
            lines += _aliases(sub, (*path, name))
    return lines


def _section(path: tuple[str, ...], command: Any, ctx: Any) -> tuple[list[str], set[str]]:
    name = " ".join(("lens", *path))
    arguments = " ".join(_argument(p) for p in command.params if p.param_type_name == "argument")
    lines = [f"## `{name}`", "", f"    {name} [OPTIONS]{' ' + arguments if arguments else ''}", ""]
    help_text = (command.help or "").strip()
    if help_text:
        lines += [" ".join(paragraph.split()) + "\n" for paragraph in help_text.split("\n\n")]
    rows = []
    formats = ""
    env: set[str] = set(_ENV.findall(help_text))
    for param in command.params:
        if param.param_type_name == "argument":
            rows.append(f"| `{_argument(param)}` (argument) | | | {_cell(getattr(param, 'help', '') or '')} |")
            continue
        flags = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        value = _cell(f"`{param.metavar}`") if param.metavar else ""
        help_cell = ("**required.** " if param.required else "") + _cell(getattr(param, "help", "") or "")
        env |= set(_ENV.findall(help_cell))
        rows.append(f"| {flags} | {value} | {_default(param)} | {help_cell} |")
        if "--output" in param.opts:
            formats = param.metavar.replace("|", ", ")
    if rows:
        lines += ["| option | value | default | meaning |", "|---|---|---|---|", *rows, ""]
    if formats:
        lines += [f"Output formats: {formats}.", ""]
    if env:
        lines += [f"Environment: {', '.join(f'`{e}`' for e in sorted(env))}.", ""]
    return lines, env


def render() -> str:
    """The whole reference, from the app as `lens` builds it (every group loaded)."""
    root = commands.to_click(build_app())
    ctx = root.context_class(root, **root.context_settings)
    body: list[str] = []
    every_env: set[str] = set()
    for path, command in _commands(root):
        lines, env = _section(path, command, ctx)
        body += lines
        every_env |= env
    env_lines = ["### Environment variables named by some command", "",
                 *(f"- `{name}`" for name in sorted(every_env)), ""]
    alias_lines = ["### Aliases", "", "Other names that match the API's paths; `lens --help` does not list them.", "",
                   *_aliases(root), ""]
    return "\n".join([HEADER, *env_lines, *alias_lines, *body]).rstrip() + "\n"
