"""The ``lens`` console script exits with main's code, its output complete, without freeing the parsed cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.terminal import lifetime as kept

LENS = Path(sys.executable).with_name("lens")
needs_script = pytest.mark.skipif(not LENS.exists(), reason=f"no installed lens console script beside {sys.executable}")


def run_lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LENS), *args], capture_output=True, text=True, timeout=300)


def run_console(argv: list[str], setup: str, report: str) -> subprocess.CompletedProcess[str]:
    """The console script's own function in a fresh interpreter, running ``setup`` first; ``report`` (an
    expression) is written to stderr at the exit, which the script takes with ``os._exit``."""
    probe = (
        "import os, sys\n"
        "from llm_d_lens.cli import lifetime\n"
        f"{setup}"
        "real_exit = os._exit\n"
        "def report(code):\n"
        f"    sys.stderr.write({report} + '\\n'); sys.stderr.flush(); real_exit(code)\n"
        "os._exit = report\n"
        f"sys.argv = ['lens', *{argv!r}]\n"
        "lifetime.console()\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)


@needs_script
def test_the_console_script_prints_everything_main_prints_and_exits_with_its_code(capsys: pytest.CaptureFixture[str]) -> None:
    from llm_d_lens.cli.app import main

    assert main(["cluster", "inspect", "--demo", "-o", "json"]) == 0
    expected = capsys.readouterr().out
    done = run_lens("cluster", "inspect", "--demo", "-o", "json")
    assert done.returncode == 0 and done.stdout == expected  # every buffered byte flushed before the exit
    assert len(expected) > 8192  # more than one buffer's worth: a missing flush would lose its tail


@needs_script
@pytest.mark.parametrize(("args", "code", "stderr"), [
    (("cluster", "inspect", "--snapshot", "/nonexistent/lens-cluster.json"), 1, "error: CLUSTER_SNAPSHOT_NOT_FOUND"),
    (("cluster", "inspect", "--no-such-option"), 2, "No such option"),
    (("--version",), 0, ""),
])
def test_exit_codes_and_errors_are_mains(args: tuple[str, ...], code: int, stderr: str) -> None:
    done = run_lens(*args)
    assert done.returncode == code, done.stderr
    assert stderr in done.stderr and "Traceback" not in done.stderr


def test_the_parsed_cluster_is_kept_for_the_exit_only_in_the_console_script() -> None:
    """In-process callers (tests, the server) free it as before; the console script leaves it to the exit."""
    done = run_console(["cluster", "inspect", "--demo", "-o", "json"],
                       "from llm_d_lens.terminal import lifetime as kept\n",
                       "f'kept={[type(v).__name__ for v in kept._kept]}'")
    assert done.returncode == 0, done.stderr
    assert "kept=['ClusterObjects']" in done.stderr
    from llm_d_lens.cli.app import main

    assert main(["cluster", "inspect", "--demo"]) == 0
    assert kept._kept == []


CTRL_C_AT_IMPORT = """
import importlib.abc, os, signal, sys

class CtrlC(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == {module!r}:  # the terminal's SIGINT, exactly while Lens imports this module
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["lens", "hardware", "list"]
from llm_d_lens.cli.lifetime import console
console()
"""


@pytest.mark.parametrize("module", ["llm_d_lens.settings", "click", "llm_d_lens.hardware.registry"],
                         ids=["while-lens-imports", "while-the-command-layer-loads", "inside-the-command"])
def test_ctrl_c_at_start_up_exits_130_without_a_traceback(module: str) -> None:
    """Ctrl-C in the first 0.05-0.3 s (Lens still importing) printed a KeyboardInterrupt traceback."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CTRL_C_AT_IMPORT.format(module=module)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""


def test_the_collector_is_paused_while_lens_starts_and_runs_again_for_the_command() -> None:
    """Start-up's objects live as long as the process: the script pauses the collector until the
    command runs, then freezes them out of its sight and turns it back on (a server needs it)."""
    done = run_console(["hardware", "list", "-o", "name"],
                       "import gc\n"
                       "import llm_d_lens.hardware.registry as registry\n"
                       "seen = {}\n"
                       "real_registry = registry.get_registry\n"
                       "def spy(*args, **kwargs):\n"
                       "    seen.setdefault('enabled', gc.isenabled()); seen.setdefault('frozen', gc.get_freeze_count() > 0)\n"
                       "    return real_registry(*args, **kwargs)\n"
                       "registry.get_registry = spy\n"
                       "print('before', gc.isenabled(), file=sys.stderr)\n",
                       "f'seen={seen} after={gc.isenabled()}'")
    assert done.returncode == 0, done.stderr
    assert "before True" in done.stderr
    assert "seen={'enabled': True, 'frozen': True} after=True" in done.stderr


def test_the_collector_is_left_alone_when_main_runs_in_process() -> None:
    import gc

    from llm_d_lens.cli.app import main

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    assert main(["hardware", "list", "-o", "name"]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # nothing paused, nothing frozen
