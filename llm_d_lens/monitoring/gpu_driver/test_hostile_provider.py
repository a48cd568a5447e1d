"""A provider that misbehaves in a LATER call (a guide hook called while Lens serves), not while it loads.

Each attack ran in Lens's own process before: ``os._exit`` or a segfault (``ctypes``) in
``driver_status`` ended the server, a catastrophic regex (which runs in C and never releases the
GIL) or a busy loop froze it, a ``BaseException`` of its own escaped every handler. Now every hook
of a third-party provider runs in its distribution's worker: each attack is a coded
``PROVIDER_FAILED`` naming the hardware and the provider, a dead or hung worker is named in the
registry's failures (what ``/readyz`` and ``doctor`` list), and every other hardware carries on.
This test process is the proof of the crashes: were the hook called in it, the run would end here.
"""

from __future__ import annotations

import threading
import time

import pytest

from llm_d_lens.hardware.conftest import _forget_registry, fresh_registry, plugins  # noqa: F401
from llm_d_lens.monitoring.gpu_driver.errors import ProviderFailed
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.monitoring.gpu_driver.service import provider_for
from llm_d_lens.testing.fake_runner import FakeReply, FakeRunner
from llm_d_lens.testing.plugins import minimal_profile

HEADER = "import ctypes, os, re, sys, time\n\n\nclass Boom(BaseException):\n    pass\n\n\nclass Provider:\n"
#: attack -> driver_status's body
ATTACKS = {
    "exits": "os._exit(7)",
    "segfaults": "ctypes.string_at(0)",
    "hangs": "time.sleep(600)",
    "holds the GIL": "re.match(r'(a*)*b', 'a' * 64)",  # exponential backtracking inside the C matcher
    "busy loop": "while True:\n            pass",
    "sys.exit": "sys.exit(3)",
    "raises BaseException": "raise Boom('not an Exception')",
    "answers a socket": "import socket\n        return socket.socket()",
    "answers the wrong shape": "return {'state': 'fine'}",
    "answers a state outside the contract": ("from llm_d_lens.monitoring.gpu_driver.status import ModeStatus\n"
                                             "        return [ModeStatus('evil', 'plugin', True, 'splendid')]"),
    "answers 20 MiB": "return ['x' * (20 * 1024 * 1024)]",
    "allocates without end": "return [bytearray(8 * 1024 ** 3)]",
}
#: attack -> (what the coded error says, whether the worker is ended: the hardware then listed as failed)
SAYS = {
    "exits": ("ended the process with exit code 7 in driver_status()", True),
    "segfaults": ("was killed by SIGSEGV in driver_status()", True),
    "hangs": ("did not answer within 1 s in driver_status() (LENS_PROVIDER_TIMEOUT", True),
    "holds the GIL": ("did not answer within 1 s in driver_status()", True),
    "busy loop": ("did not answer within 1 s in driver_status()", True),
    "sys.exit": ("failed in driver_status(): SystemExit: 3", False),
    "raises BaseException": ("failed in driver_status(): Boom: not an Exception", False),
    "answers a socket": ("driver_status() returned what is not plain data: $: a socket is not plain data", False),
    "answers the wrong shape": ("driver_status() answered what its contract does not allow: $[0]: ModeStatus's field "
                                "'hardware' is missing", False),
    "answers a state outside the contract": ("answered what its contract does not allow: $[0].state: 'splendid' is not one of",
                                             False),
    "answers 20 MiB": ("answered with a line of more than 16777216 bytes in driver_status()", True),
    "allocates without end": ("failed in driver_status(): MemoryError", False),
}


def install(plugins, attack: str) -> None:  # noqa: F811
    source = HEADER + f"    async def driver_status(self, access_mode, *, cluster_id):\n        {ATTACKS[attack]}\n"
    plugins.make("evil-lens", profiles={"evil": [minimal_profile("evil")]}, module_source=source,
                 provider_entry_points={"evil": "evil_lens_lens:Provider"})


async def status(registry, key: str):
    return await provider_for(registry, key).driver_status(view=ClusterView(FakeRunner()))


@pytest.mark.parametrize("attack", ATTACKS)
async def test_each_attack_in_a_later_call_is_a_coded_failure_and_lens_carries_on(attack, plugins, fresh_registry,  # noqa: F811
                                                                                monkeypatch):
    monkeypatch.setenv("LENS_PROVIDER_TIMEOUT", "1")
    install(plugins, attack)
    registry = fresh_registry()
    assert registry.provider_status("evil")["status"] in ("not-loaded", "serving")
    ticks = []
    stop = threading.Event()
    ticker = threading.Thread(target=lambda: [ticks.append(1) or time.sleep(0.01) for _ in iter(stop.is_set, True)])
    ticker.start()
    try:
        with pytest.raises(ProviderFailed) as caught:
            await status(registry, "evil")
    finally:
        stop.set()
        ticker.join()
    says, ended = SAYS[attack]
    message = caught.value.message
    assert message.startswith("provider Provider of 'evil'") and says in message, message
    assert len(ticks) > 1, "this process kept running Python while the hook ran (no GIL held here)"
    listed = [f for f in registry.failures if f.profile_id == "evil"]
    if ended:
        [failure] = listed
        assert failure.kind == "provider" and failure.distribution == "evil-lens 1.0.0" and says in failure.reason
        assert registry.provider_status("evil")["status"] == "failed"
        with pytest.raises(ProviderFailed, match="not called: its worker was ended earlier"):  # at once, not again
            await status(registry, "evil")
    else:
        assert not listed, "a hook that raised or answered amiss keeps its worker"
        with pytest.raises(ProviderFailed):
            await status(registry, "evil")  # the same answer again: the worker lives
    runner = FakeRunner(default=FakeReply(stdout='{"kind": "List", "items": []}'))
    assert await provider_for(registry, "nvidia").driver_status(view=ClusterView(runner)), "every other hardware carries on"


async def test_a_hook_runs_lens_commands_through_the_runner_it_was_handed(plugins, fresh_registry):  # noqa: F811
    """What crosses is plain data; the runner goes by reference: the command runs in Lens, on Lens's runner."""
    source = ("class Provider:\n    async def driver_status(self, access_mode, *, cluster_id, runner):\n"
              "        from llm_d_lens.monitoring.gpu_driver.status import ModeStatus\n"
              "        nodes = (await runner.arun(['kubectl', 'get', 'nodes', '-o', 'json'])).json()['items']\n"
              "        return [ModeStatus('acme', 'plugin', True, 'ready', hardware_nodes=[n['metadata']['name'] for n in nodes],"
              " note=str(cluster_id))]\n")
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]}, module_source=source,
                 provider_entry_points={"acme": "acme_lens_lens:Provider"})
    registry = fresh_registry()
    runner = FakeRunner(context="lab-east")
    runner.reply(["kubectl", "get", "nodes", "-o", "json"], json_body={"kind": "List", "items": [{"metadata": {"name": "n1"}}]})
    [mode] = await provider_for(registry, "acme").driver_status(view=ClusterView(runner))
    assert (mode.state, mode.hardware_nodes, mode.note) == ("ready", ["n1"], "lab-east")
    assert [c.requested[:3] for c in runner.calls] == [("kubectl", "get", "nodes")]
