"""How the ``lens`` command ends: output flushed, then the process exits without tearing itself down.

The console script runs :func:`llm_d_lens.cli.app.main`, flushes stdout and stderr and leaves with
``os._exit`` and main's exit code; what a command asked to keep
(:func:`llm_d_lens.terminal.lifetime.keep_until_exit`) is never freed. Only the console script does
this: ``main()`` called in-process (tests, ``python -m llm_d_lens.cli``) returns as before and
keeps nothing. Lens registers no ``atexit`` hooks and starts no non-daemon threads that outlive a
command, so skipping the teardown loses nothing.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from llm_d_lens.terminal import lifetime


def console() -> NoReturn:
    """The ``lens`` console script: :func:`llm_d_lens.cli.app.main`, then a flushed exit without teardown."""
    lifetime.exit_without_teardown()
    from llm_d_lens.cli.app import main

    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        # a closed pipe (``lens ... | head``): the interpreter's own exit reports it as it always has
        lifetime.exit_without_teardown(False)
        sys.exit(code)
    os._exit(code)
