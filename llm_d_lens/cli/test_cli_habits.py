"""The root ``lens`` command's habits: --version, `lens version`, -h, completion, plain-word metavars, -o the format."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys

import pytest
from llm_d_lens.terminal import commands
from llm_d_lens.cli.app import GROUPS, build_app, main
from llm_d_lens.testing.fake_runner import FakeRunner
from llm_d_lens.cli.version import NOT_INSTALLED, UNKNOWN, versions


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_flag_prints_the_installed_distribution_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"lens {importlib.metadata.version('llm-d-lens')}"


def test_version_flag_imports_no_command_group():
    probe = ("import sys\nfrom llm_d_lens.cli.app import main\nmain(['--version'])\n"
             f"print(sorted(m for m in {sorted(m for m, _ in GROUPS.values())!r} if m in sys.modules), file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_version_json_names_lens_python_and_each_tool(capsys):
    code, out, _ = run(capsys, "version", "-o", "json")
    report = json.loads(out)
    assert code == 0
    assert list(report) == ["lens", "python", "kubectl", "helm", "kustomize", "settings"]
    assert report["python"] == platform.python_version()
    for tool in ("kubectl", "helm", "kustomize"):
        if shutil.which(tool) is None:
            assert report[tool] == NOT_INSTALLED
        else:
            assert report[tool] != NOT_INSTALLED and report[tool]


def test_versions_reads_each_tool_answer_and_says_which_are_absent_or_unreadable():
    fake = FakeRunner().missing("helm")
    fake.reply(["kubectl", "version", "--client", "-o", "json"],
               json_body={"clientVersion": {"gitVersion": "v1.33.1"}, "kustomizeVersion": "v5.6.0"})
    fake.reply(["kustomize", "version"], stderr="boom", returncode=1)
    report = versions(fake)
    assert report["kubectl"] == "v1.33.1"
    assert report["helm"] == NOT_INSTALLED
    assert report["kustomize"] == UNKNOWN
    assert not fake.called_with(["helm"])  # an absent tool is not run


def test_versions_finds_helm_and_kustomize_in_their_text_answers():
    fake = FakeRunner().missing("kubectl")
    fake.reply(["helm", "version", "--short"], stdout="v3.17.2+gcc0bbbd\n")
    fake.reply(["kustomize", "version"], stdout="v5.6.0\n")
    report = versions(fake)
    assert (report["kubectl"], report["helm"], report["kustomize"]) == (NOT_INSTALLED, "v3.17.2+gcc0bbbd", "v5.6.0")


@pytest.mark.parametrize("args", [[], ["hardware"], ["hardware", "list"], ["deploy", "render"]])
def test_dash_h_is_help(capsys, args):
    code_long, long_help, _ = run(capsys, *args, "--help")
    code_short, short_help, _ = run(capsys, *args, "-h")
    assert code_long == code_short == 0
    assert short_help == long_help and "Usage: lens" in short_help


def test_help_names_values_in_words_not_python_types(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for args in (["deploy", "render"], ["evaluate", "config"], ["hardware", "list"], []):
        code, out, _ = run(capsys, *args, "--help")
        assert code == 0
        for python_name in ("<str>", "<bool>", "<int", "<list[", "<path>", "<float>"):
            assert python_name not in out, (args, python_name)
    code, out, _ = run(capsys, "deploy", "render", "--help")
    assert "TEXT" in out and "INTEGER" in out and "keep|profile" in out


def test_every_option_of_every_command_has_a_plain_metavar():
    command = commands.to_click(build_app())
    seen = 0

    def walk(cmd):
        nonlocal seen
        for param in cmd.params:
            if param.param_type_name == "option":
                seen += 1
                assert param.metavar is not None and "<" not in param.metavar and "[" not in param.metavar, \
                    (cmd.name, param.name, param.metavar)
                if param.is_flag:
                    assert param.metavar == ""
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(command)
    assert seen > 50


def test_shell_completion_is_clicks_own():
    """click's completion protocol: the script a shell sources, and the answers it asks for."""
    lens = os.path.join(os.path.dirname(sys.executable), "lens")
    if not os.path.exists(lens):
        pytest.skip(f"no lens script beside {sys.executable}: install the package (make venv)")
    env = {**os.environ, "_LENS_COMPLETE": "bash_complete", "COMP_WORDS": "lens hardware li", "COMP_CWORD": "2"}
    result = subprocess.run([lens], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["plain,list"]
    options = subprocess.run([lens], env={**env, "COMP_WORDS": "lens deploy render --hard", "COMP_CWORD": "3"},
                             capture_output=True, text=True, timeout=60)
    assert options.stdout.split() == ["plain,--hardware"], options.stderr
    # the script `eval "$(_LENS_COMPLETE=bash_source lens)"` installs
    script = subprocess.run([lens], env={**os.environ, "_LENS_COMPLETE": "bash_source"}, capture_output=True,
                            text=True, timeout=60)
    assert "_lens_completion()" in script.stdout and "_LENS_COMPLETE" in script.stdout


def _options(command, path=()):
    for param in command.params:
        if param.param_type_name == "option":
            yield " ".join(path), param
    for name, sub in getattr(command, "commands", {}).items():
        yield from _options(sub, (*path, name))


def test_dash_o_is_the_output_format_on_every_command_and_files_have_one_option_name():
    command = commands.to_click(build_app())
    formats, files = [], []
    for where, param in _options(command):
        if "-o" in param.opts or "--output" in param.opts:
            assert set(param.opts) == {"-o", "--output"}, (where, param.opts)
            choices = set(param.metavar.split("|"))
            assert choices <= {"table", "wide", "json", "yaml", "name", "text"} and "json" in choices, (where, choices)
            formats.append(where)
        assert "--out" not in param.opts, where
        if any("file" in opt for opt in param.opts) and param.name not in ("kubeconfig",):
            files.append((where, tuple(param.opts)))
    assert {"evaluate config", "deploy render", "hardware list", "cluster inspect", "version"} <= set(formats)
    writers = {where for where, opts in files if opts == ("--output-file",)}
    assert {"evaluate config", "deploy render", "cluster snapshot", "telemetry dashboard"} <= writers


def _required_commands():
    import click

    found = []

    def walk(group: click.Group, path: list[str]) -> None:
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                walk(command, [*path, name])
            elif any(p.required for p in command.params):
                found.append([*path, name])
    for name in GROUPS:
        walk(commands.to_click(build_app(name)), [])
    return sorted({tuple(p) for p in found})


def test_every_required_option_and_argument_left_out_is_a_usage_error_naming_it(capsys):
    """click 8.2+ took the command layer's explicit default=None as a value: `lens plan discover` ran with
    hardware=None and ended in an AttributeError traceback; `lens hardware validate` checked no file."""
    required = _required_commands()
    assert ("plan", "discover") in required and ("hardware", "validate") in required
    for path in required:
        code, out, err = run(capsys, *path)
        assert code == 2 and "Missing" in err and "Traceback" not in err, (path, err)
