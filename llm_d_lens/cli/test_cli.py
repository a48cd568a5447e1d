"""The ``lens`` entry point: an argument that is not UTF-8 is a usage error, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LENS = Path(sys.executable).with_name("lens")


@pytest.mark.parametrize("argv", [
    [b"telemetry", b"pods", b"--namespace", b"\xff"],
    [b"hardware", b"resolve", b"--label", b"llm-d.ai/accelerator-vendor=\xc3"],
    [b"cluster", b"inspect", b"--snapshot", b"/tmp/\xfe\xfe.json"],
])
def test_an_argument_that_is_not_utf8_is_refused_naming_it(argv):
    if not LENS.exists():
        pytest.skip(f"no lens console script beside {sys.executable}")
    result = subprocess.run([bytes(LENS), *argv], capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert stderr.startswith("error: ARGUMENT_INVALID: argument ") and "is not valid UTF-8 text" in stderr
    bad = next(a for a in argv if not a.isascii())
    assert repr(bad)[2:-1] in stderr


def test_an_error_quoting_a_huge_value_is_printed_bounded(capsys):
    from llm_d_lens.cli.app import main

    code = main(["hardware", "resolve", "--key", "q" * 1_000_000])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ACCELERATOR_NOT_REGISTERED")
    assert len(err) < 10_000 and "more characters]" in err
