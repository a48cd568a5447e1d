"""What a slow command is doing, on stderr, only for a person at a terminal.

A preflight wait (up to minutes), a helm install or a live cluster read used to be silent. A Rich
spinner on stderr says what is awaited and how long is left; it is drawn only when stderr is a
terminal and the result is a table (never for ``-o json``/``yaml``, never in a pipe or a log), so
nothing a program reads changes. ``LENS_NO_PROGRESS=1`` turns it off.
"""

from __future__ import annotations
from llm_d_lens import settings

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


class Progress:
    """One running step; ``update`` replaces its line. Silent when progress is not shown."""

    def __init__(self, status: Any = None):
        self._status = status

    @property
    def shown(self) -> bool:
        return self._status is not None

    def update(self, message: str) -> None:
        if self._status is not None:
            self._status.update(message)


def wanted(stream: IO[str] | None = None, *, for_people: bool = True) -> bool:
    """Whether to draw progress: a terminal on ``stream`` (stderr), a table result, not turned off."""
    stream = sys.stderr if stream is None else stream
    if not for_people or settings.flag("LENS_NO_PROGRESS"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextmanager
def progress(message: str, *, for_people: bool = True, stream: IO[str] | None = None) -> Iterator[Progress]:
    """Show ``message`` with a spinner on stderr while the block runs (see :func:`wanted`)."""
    stream = sys.stderr if stream is None else stream
    if not wanted(stream, for_people=for_people):
        yield Progress()
        return
    from rich.console import Console

    console = Console(file=stream, force_terminal=True)
    with console.status(message, spinner="dots") as status:
        yield Progress(status)
