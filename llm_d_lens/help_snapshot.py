"""``lens --help`` as the Typer app prints it on a pipe, shipped with Lens so no run has to import Typer for it.

Why: the root help is a pure function of Lens's command table (``cli.py``), the Typer and Rich
versions that lay it out, and the output's shape; yet printing it imports Typer, click, Rich and
pydantic, over ten times bare Python's start-up. ``make startup-snapshots`` runs the real
``lens --help`` in a clean process and keeps its exit code, stdout and stderr here, with what
produced them: the content of every Lens module that run imported and the Typer and Rich
distributions it used. :func:`replay` prints them again only when all of that is what is
installed now and the output is shaped the same (not a terminal, UTF-8, none of the variables
Typer, click or Rich read for width and colour). Anything else runs the command, as always; the
replay of ``result_cache.py`` still serves later runs of other shapes. A test checks the file is
current, so a change to the command table shows up as a stale file, never as a wrong help.

Only the standard library (and ``result_cache``, also standard library only) is imported here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

FORMAT = 1
PACKAGE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOT = os.path.join(PACKAGE, "help_snapshot.json")
HELP = (["--help"], ["-h"])
#: the distributions that lay the help out
TOOLS = ("typer", "rich")
#: variables that change the help's width, colour or renderer (Typer's, click's and Rich's)
SHAPERS = ("COLUMNS", "LINES", "TERMINAL_WIDTH", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "NO_COLOR", "CLICOLOR",
           "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES", "TYPER_USE_RICH",
           "_TYPER_FORCE_DISABLE_TERMINAL", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION")


def _tool_folders(path: Sequence[str]) -> list[str]:
    """The dist-info folder names (name and version) of :data:`TOOLS`, in ``path`` order."""
    found = []
    for entry_dir in path:
        try:
            names = sorted(os.listdir(entry_dir or "."))
        except OSError:
            continue
        found += [n for n in names if n.endswith(".dist-info") and n.split("-")[0].lower() in TOOLS]
    return found


def _sums(relative_paths: Sequence[str]) -> dict[str, int] | None:
    from llm_d_lens.result_cache import content_sums

    return content_sums(PACKAGE, relative_paths)


def shaped_as_recorded(env: Mapping[str, str], stdout: Any) -> bool:
    """Whether the help would be laid out as it was recorded: a pipe, UTF-8, no shaping variable."""
    try:
        if stdout.isatty():
            return False
    except (AttributeError, ValueError, OSError):
        return False
    encoding = (getattr(stdout, "encoding", None) or "").lower().replace("-", "")
    return encoding == "utf8" and not any(name in env for name in SHAPERS) and \
        not any(name.startswith("_") and name.endswith("_COMPLETE") for name in env)


def replay(args: Sequence[str], env: Mapping[str, str]) -> int | None:
    """Print the recorded ``lens --help`` and return its exit code; None when it may not apply."""
    if list(args) not in HELP or not shaped_as_recorded(env, sys.stdout):
        return None
    try:
        with open(SNAPSHOT, encoding="utf-8") as handle:
            stored = json.load(handle)
        if stored["format"] != FORMAT or stored["tools"] != _tool_folders(sys.path):
            return None
        if _sums(list(stored["inputs"])) != stored["inputs"]:
            return None
        out, err, code = stored["stdout"], stored["stderr"], stored["code"]
        if not (isinstance(out, str) and isinstance(err, str) and type(code) is int):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


#: run in a clean child: the real command, then which Lens modules it imported
_PROBE = """
import json, os, sys
from llm_d_lens import cli
code = cli._main(sys.argv[1:])
sys.stdout.flush()
modules = sorted(os.path.relpath(m.__file__, os.path.dirname(cli.__file__)) for n, m in list(sys.modules.items())
                 if n.split('.')[0] == 'llm_d_lens' and getattr(m, '__file__', None))
print(json.dumps({"code": code, "modules": modules}), file=sys.stderr)
"""


def record() -> dict[str, Any]:
    """Run ``lens --help`` (and ``-h``) as a user's pipe gets it, and what it was made from."""
    import subprocess

    env = {k: v for k, v in os.environ.items()
           if k not in SHAPERS and not k.startswith(("LENS_", "LLM_D_")) and not k.endswith("_COMPLETE")}
    env.update(PYTHONIOENCODING="utf-8", LENS_RESULT_CACHE="0")
    runs = []
    for args in HELP:
        done = subprocess.run([sys.executable, "-P", "-c", _PROBE, *args], capture_output=True, text=True, env=env,
                              timeout=120, check=True)
        *err_lines, last = done.stderr.splitlines(keepends=True)
        runs.append((done.stdout, "".join(err_lines), json.loads(last)))
    (out, err, probe), (out_h, err_h, probe_h) = runs
    if (out, err, probe) != (out_h, err_h, probe_h):
        raise SystemExit("`lens --help` and `lens -h` differ: record each on its own")
    return {"format": FORMAT, "tools": _tool_folders(sys.path), "inputs": _sums(probe["modules"]),
            "stdout": out, "stderr": err, "code": probe["code"]}


def main(argv: list[str] | None = None) -> int:
    """``--write``: replace :data:`SNAPSHOT`; without it, print what would be written."""
    from llm_d_lens.result_cache import write_or_print

    return write_or_print(SNAPSHOT, record(), sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
