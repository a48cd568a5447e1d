"""What a one-shot command leaves for the process exit to drop, instead of freeing it object by object.

A command such as ``lens cluster inspect`` on a 5,000-node snapshot holds millions of parsed
objects at the end; freeing them one by one, and then the interpreter's own teardown, only delay
the shell prompt (the operating system takes the memory back at once). The ``lens`` console script
(``llm_d_lens/cli/lifetime.py``) calls :func:`exit_without_teardown` first; then a command's edge
may hand :func:`keep_until_exit` to a service as its ``keep`` callback. Anywhere else (tests, a
server, ``python -m llm_d_lens.cli``) it keeps nothing, and everything is freed as usual.
"""

from __future__ import annotations

import gc

TYPE_CHECKING = False  # typing itself is a slow import: the lens script imports this module first
if TYPE_CHECKING:
    from typing import Any

_kept: list[Any] = []
_exiting = False
_starting = False


def pause_collector_while_starting() -> None:
    """The ``lens`` script's start: the cyclic collector is paused until the command runs.

    Start-up imports modules and builds the command line: a few hundred thousand objects that live
    as long as the process and hold no garbage, over which the collector ran some thirty passes
    (a few ms of every command). :func:`command_starts` freezes them out of its sight and turns it
    back on, so a command (a server too) runs with the collector as usual.
    """
    global _starting
    _starting = True
    gc.disable()


def command_starts() -> None:
    """The command's own code begins: what start-up built is frozen and the collector runs again.

    Does nothing unless :func:`pause_collector_while_starting` paused it (tests, ``python -m``).
    """
    global _starting
    if _starting:
        _starting = False
        gc.freeze()
        gc.enable()


def exit_without_teardown(on: bool = True) -> None:
    """The process will end with ``os._exit``: from now on, what is handed to :func:`keep_until_exit` is kept."""
    global _exiting
    _exiting = on
    if not on:
        _kept.clear()


def keep_until_exit(value: Any) -> None:
    """Leave ``value`` alive until the process exits, when the exit frees nothing; else do nothing.

    What is kept was built with the collector paused, so it all sits in the youngest generation,
    and the next collection would walk every object of it; ``gc.freeze`` moves it out of the
    collector's sight instead (it holds no reference cycles to find).
    """
    if _exiting:
        _kept.append(value)
        gc.freeze()
