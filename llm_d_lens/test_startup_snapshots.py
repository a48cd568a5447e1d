"""What ships for a fast first run is current: recorded again now, it is what the checkout holds.

``make startup-snapshots`` rewrites both. A stale file is never used wrongly (each checks what it
was made from before it answers); it only sends every first run back through Typer and pydantic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens import help_snapshot
from llm_d_lens.hardware import snapshot


@pytest.mark.parametrize(("module", "shipped"), [("llm_d_lens.hardware.snapshot", snapshot.BUNDLED),
                                                 ("llm_d_lens.help_snapshot", help_snapshot.SNAPSHOT)], ids=["registry", "help"])
def test_the_shipped_file_is_current(module, shipped):
    done = subprocess.run([sys.executable, "-P", "-m", module], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(Path(shipped).read_text()), \
        f"{os.path.relpath(shipped)} is stale (its code, profiles, command table or Typer/Rich changed): run `make startup-snapshots`"
