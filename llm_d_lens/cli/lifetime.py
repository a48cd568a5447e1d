"""How the ``lens`` command ends: output flushed, then the process exits without tearing itself down.

A one-shot command such as ``lens cluster inspect`` on a 5,000-node snapshot holds millions of
parsed objects at the end; freeing them one by one, and then the interpreter's own teardown, only
delay the shell prompt (the operating system takes the memory back at once). So the console
script runs :func:`llm_d_lens.cli.app.main`, flushes stdout and stderr and leaves with ``os._exit``
and main's exit code; what asked to be kept (:func:`keep_until_exit`) is never freed.

Only the console script does this. ``main()`` called in-process (tests, ``python -m
llm_d_lens.cli``) returns as before, and :func:`keep_until_exit` then keeps nothing, so a server
or a test frees everything as usual. Lens registers no ``atexit`` hooks and starts no non-daemon
threads that outlive a command, so skipping the teardown loses nothing.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any, NoReturn

_kept: list[Any] = []
_exiting = False


def keep_until_exit(value: Any) -> None:
    """Leave ``value`` alive until the process exits, when the exit frees nothing; else do nothing.

    What is kept was built with the collector paused, so it all sits in the youngest generation,
    and the next collection would walk every object of it; ``gc.freeze`` moves it out of the
    collector's sight instead (it holds no reference cycles to find).
    """
    if _exiting:
        _kept.append(value)
        gc.freeze()


def console() -> NoReturn:
    """The ``lens`` console script: :func:`llm_d_lens.cli.app.main`, then a flushed exit without teardown."""
    global _exiting
    _exiting = True
    from llm_d_lens.cli.app import main

    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        # a closed pipe (``lens ... | head``): the interpreter's own exit reports it as it always has
        _exiting = False
        _kept.clear()
        sys.exit(code)
    os._exit(code)
