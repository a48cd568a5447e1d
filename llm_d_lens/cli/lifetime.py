"""How the ``lens`` command ends: output flushed, then the process exits without tearing itself down.

The console script runs :func:`llm_d_lens.cli.app.main`, flushes stdout and stderr and leaves with
``os._exit`` and main's exit code; what a command asked to keep
(:func:`llm_d_lens.terminal.lifetime.keep_until_exit`) is never freed. Only the console script does
this: ``main()`` called in-process (tests, ``python -m llm_d_lens.cli``) returns as before and
keeps nothing. Lens registers no ``atexit`` hooks and starts no non-daemon threads that outlive a
command, so skipping the teardown loses nothing.
"""

from __future__ import annotations

# nothing slow here: the console script imports this module before Ctrl-C is handled (typing only when checking)
import os
import signal
import sys
TYPE_CHECKING = False  # typing itself is a slow import

if TYPE_CHECKING:
    from typing import NoReturn


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C before a command runs: nothing to clean up yet, so end at once, as a shell reports Ctrl-C."""
    os._exit(INTERRUPTED)


#: 128 + SIGINT: what a shell reports for a command ended by Ctrl-C
INTERRUPTED = 130


def console() -> NoReturn:
    """The ``lens`` console script: :func:`llm_d_lens.cli.app.main`, then a flushed exit without teardown.

    The cyclic collector is paused from the first line until the command runs
    (:func:`llm_d_lens.terminal.lifetime.command_starts`): start-up's objects live as long as the
    process. Ctrl-C is handled from the first line: while Lens imports (the first tenths of a second) it ends
    the process with 130 at once, since nothing needs cleaning up yet; once the command layer is
    loaded, Ctrl-C is a ``KeyboardInterrupt`` again, so a command's ``finally`` blocks (a worker
    stopped, a half-written file removed) run, and one that reaches here is 130 too, never a traceback.
    """
    from llm_d_lens.terminal import lifetime

    lifetime.pause_collector_while_starting()
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when started ignoring it (nohup)
        signal.signal(signal.SIGINT, _interrupted_while_starting)
        from llm_d_lens.cli.app import main

        signal.signal(signal.SIGINT, signal.default_int_handler)
    else:
        from llm_d_lens.cli.app import main

    lifetime.exit_without_teardown()
    try:
        code = main()
    except KeyboardInterrupt:  # between the command layer's own handling and here
        code = INTERRUPTED
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        # a closed pipe (``lens ... | head``): the interpreter's own exit reports it as it always has
        lifetime.exit_without_teardown(False)
        sys.exit(code)
    os._exit(code)
