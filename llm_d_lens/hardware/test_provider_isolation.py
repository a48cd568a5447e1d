"""Providers that end the process while they are built: tried in a child first, never loaded here.

An attack plugin's provider called ``os._exit(7)`` in ``__init__`` and ended ``lens serve --demo``
at start-up; another segfaulted and killed it. Each must be a coded failure naming it, with this
process (the server, ``lens hardware doctor``) carrying on. This very test process is the proof:
were either provider built in it, the test run would end here.
"""

from __future__ import annotations

import time

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.hardware.errors import PluginLoadFailed

HOSTILE = {
    "exits": "import os\nclass Provider:\n    def __init__(self):\n        os._exit(7)\n",
    "segfaults": "import ctypes\nclass Provider:\n    def __init__(self):\n        ctypes.string_at(0)\n",
    "exits at import": "import os\nos._exit(3)\nclass Provider: ...\n",
    "hangs": "import time\nclass Provider:\n    def __init__(self):\n        time.sleep(60)\n",
}
SAYS = {"exits": "exit code 7", "segfaults": "SIGSEGV", "exits at import": "exit code 3", "hangs": "did not answer within 1 s"}


def install(plugins, kind: str) -> None:
    """The profile loads as any plugin's; the provider, in a module of its own, is the hostile part."""
    plugins.make("evil-lens", profiles={"evil": [minimal_profile("evil")]},
                 provider_entry_points={"evil": "evil_provider_mod:Provider"})
    (plugins.root / "evil_provider_mod.py").write_text(HOSTILE[kind])
    plugins.modules.append("evil_provider_mod")


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_provider_that_ends_its_process_is_a_coded_failure_and_this_process_goes_on(
        kind, plugins, fresh_registry, monkeypatch) -> None:
    monkeypatch.setenv("LENS_PLUGINS_TIMEOUT", "1")
    install(plugins, kind)
    registry = fresh_registry()
    started = time.monotonic()
    with pytest.raises(PluginLoadFailed) as caught:
        registry.provider("evil")
    assert time.monotonic() - started < 20
    assert SAYS[kind] in caught.value.message and "'evil'" in caught.value.message
    [failure] = [f for f in registry.failures if f.profile_id == "evil"]
    assert failure.kind == "provider" and SAYS[kind] in failure.reason
    assert registry.provider("amd") is not None, "the other profiles' providers still load"


def test_doctor_names_the_crashing_provider_and_exits_1(plugins, fresh_registry, capsys) -> None:
    install(plugins, "segfaults")
    fresh_registry()
    assert main(["hardware", "doctor"]) == 1
    out = capsys.readouterr().out
    assert "evil" in out and "SIGSEGV" in out


def test_readiness_names_it_while_the_server_lives(plugins, fresh_registry) -> None:
    from llm_d_lens.serving.readiness import problems

    install(plugins, "exits")
    fresh_registry()
    found = [p for p in problems() if p.get("profile_id") == "evil"]
    assert found and found[0]["kind"] == "provider" and "exit code 7" in found[0]["reason"]


def test_a_well_behaved_provider_is_built_once_in_its_worker_and_never_in_this_process(plugins, fresh_registry,
                                                                                        tmp_path, monkeypatch) -> None:
    import os
    import sys

    built = tmp_path / "built"
    monkeypatch.setenv("GOOD_BUILT_FILE", str(built))
    plugins.make("good-lens", profiles={"good": [minimal_profile("good")]},
                 provider_entry_points={"good": "good_lens_lens:Provider"},
                 module_source="import os\nclass Provider:\n    def __init__(self):\n"
                               "        open(os.environ['GOOD_BUILT_FILE'], 'a').write(f'{os.getpid()}\\n')\n")
    registry = fresh_registry()
    provider = registry.provider("good")
    assert registry.provider("good") is provider
    [pid] = built.read_text().split()
    assert int(pid) != os.getpid() and "good_lens_lens" not in sys.modules
    assert registry.provider_status("good")["status"] == "serving"
    assert registry.provider_status("good")["provider"] == "Provider"
