"""The hostile-file catalogue: every command that reads a file a user names, fed each hostile file.

Non-UTF-8 bytes, 5,000 levels of nesting (YAML flow, JSON objects, block indentation) and a YAML
alias bomb, handed to each file-reading option in-process: each is a coded error (exit 1) naming
the file, never a traceback (an uncaught exception fails the test), and read no further than the
refusal needs. Several of these were tracebacks (``UnicodeDecodeError``, ``RecursionError``) in
``lens driver plan``, ``lens evaluate config --from-manifest``, ``lens telemetry devices --cluster``
and every ``--profile-dir`` command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.cli.app import main

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))

FILES = {
    "non-utf8": b"name: \xff\xfe\xc3(\n",
    "deep-flow": b"[" * 5000 + b"]" * 5000,
    "deep-json": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "deep-block": "".join("  " * i + "a:\n" for i in range(1200)).encode(),
    "alias-bomb": BOMB.encode(),
}

#: (argv with FILE or DIR, the error code, whether the file is YAML read through the alias bounds)
COMMANDS = {
    "driver plan": (["driver", "plan", "FILE"], "CLAIMS_INVALID"),
    "evaluate config --from-manifest": (["evaluate", "config", "--from-manifest", "FILE"], "MANIFEST_INVALID"),
    "telemetry devices --cluster": (["telemetry", "devices", "--cluster", "FILE", "--snapshot", "FILE"], "CLUSTER_OBJECTS_INVALID"),
    "cluster list --clusters": (["cluster", "list", "--clusters", "FILE"], "CLUSTERS_FILE_INVALID"),
    "cluster inspect --snapshot": (["cluster", "inspect", "--snapshot", "FILE"], "CLUSTER_SNAPSHOT_INVALID"),
    "plan --prices": (["plan", "--model", "llama-3.1-8b", "--demo", "--prices", "FILE"], "PLANNING_PRICE_INVALID"),
    "profiles flags": (["profiles", "flags", "--profile-dir", "DIR", "evil"], "WORKLOAD_PROFILE_INVALID"),
    "profiles compose-file": (["profiles", "compose-file", "--profile-dir", "DIR", "evil"], "WORKLOAD_PROFILE_INVALID"),
    "evaluate config --profile": (["evaluate", "config", "--profile-dir", "DIR", "--profile", "evil"], "WORKLOAD_PROFILE_INVALID"),
    "evaluate coverage --profile": (["evaluate", "coverage", "--prometheus", "http://127.0.0.1:9", "--profile-dir", "DIR",
                                     "--profile", "evil"], "WORKLOAD_PROFILE_INVALID"),
}
#: JSON readers: YAML's alias bomb is only text they refuse as not JSON
JSON_ONLY = {"telemetry devices --cluster", "cluster inspect --snapshot"}


def _argv(template: list[str], file: Path) -> list[str]:
    return [str(file) if part == "FILE" else str(file.parent) if part == "DIR" else part for part in template]


@pytest.mark.parametrize("kind", sorted(FILES))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_hostile_file_is_a_coded_error_naming_it(tmp_path, capsys, command, kind):
    template, code = COMMANDS[command]
    file = tmp_path / "evil.yaml"
    file.write_bytes(FILES[kind])
    assert main(_argv(template, file)) == 1
    out, err = capsys.readouterr()
    assert f"error: {code}: " in err and str(file.name) in err, err
    assert "Traceback" not in err
    if kind == "non-utf8" and command not in JSON_ONLY:
        assert "is not UTF-8 text (byte 6 is b'\\xff')" in err
    if kind in ("deep-flow", "deep-json") and command not in JSON_ONLY:
        assert "nests deeper than 100 levels" in err
    if kind == "alias-bomb" and command not in JSON_ONLY:
        assert "once its aliases are expanded" in err


@pytest.mark.parametrize("kind", sorted(FILES))
def test_profiles_validate_and_list_report_a_hostile_profile_and_carry_on(tmp_path, capsys, kind):
    file = tmp_path / "evil.yaml"
    file.write_bytes(FILES[kind])
    assert main(["profiles", "validate", "--profile-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "✗ evil" in out + err and "✓ default" in out + err
    assert main(["profiles", "list", "--profile-dir", str(tmp_path), "-o", "json"]) == 0


def test_a_manifest_on_stdin_that_is_not_utf8_is_a_coded_error(monkeypatch, capsys):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FILES["non-utf8"]), encoding="utf-8"))
    assert main(["evaluate", "config", "--from-manifest", "-"]) == 1
    assert "error: MANIFEST_INVALID: stdin: is not UTF-8 text" in capsys.readouterr().err
