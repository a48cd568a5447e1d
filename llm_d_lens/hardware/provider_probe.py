"""The child process a third-party provider is first built in, so that what it does to a process
(``os._exit``, a segfault, a runaway allocation) happens to this one, not to Lens.

Run as ``python -m llm_d_lens.hardware.provider_probe FD`` with a JSON request on stdin (the
parent's ``sys.path`` and the entry point). It imports the entry point and builds the provider
under a memory limit, then writes one line to descriptor ``FD``: ``{"nonce": ..., "built": true}``,
or ``"built": false`` when it raised (an ordinary failure, which the parent's own guarded load
reports as before). No line means the provider ended the process: the parent then never loads it.
The nonce (from stdin) only tells this line from anything else written to the descriptor.

This guards against a provider that crashes, not one that means harm: code that runs in a child
first can tell it is in one and behave there. A provider that crashes only later, in a method
call, still runs in the server's process.
"""

from __future__ import annotations

import json
import os
import sys

#: bytes of address space the child may map while building a provider
MEMORY_LIMIT = 4 * 1024 ** 3


def main(argv: list[str]) -> int:
    out = int(argv[0])
    request = json.loads(sys.stdin.read())
    nonce = request.pop("nonce")
    sys.path[:] = request["path"]
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):  # pragma: no cover - a platform without the limit
        pass
    from importlib.metadata import EntryPoint

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # whatever it prints goes nowhere: the parent's guarded load judges output
    os.dup2(devnull, 2)
    ep = EntryPoint(name=request["name"], value=request["value"], group=request["group"])
    try:
        target = ep.load()
        if isinstance(target, type):
            target()
        built = True
    except BaseException:  # noqa: BLE001 - an ordinary failure: reported by the parent's own load
        built = False
    os.write(out, (json.dumps({"nonce": nonce, "built": built}) + "\n").encode())
    os._exit(0)  # no interpreter shutdown: a provider's atexit or thread cannot change the verdict


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
