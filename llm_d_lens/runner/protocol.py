"""What domains type against: a :class:`Runner`, its results, its streams and the calls it records."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from llm_d_lens.runner import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT  # declared once, beside the package's names
from llm_d_lens.runner.errors import CommandFailed, CommandOutputInvalid
from llm_d_lens.runner.redaction import format_command


@dataclass(frozen=True)
class CommandResult:
    """What a finished command said; ``argv`` is as run (after kubeconfig/context injection)."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def command(self) -> str:
        """The redacted command line, for messages."""
        return format_command(self.argv)

    def json(self) -> Any:
        """stdout parsed as JSON; a typed error naming the command if the tool printed something else."""
        from llm_d_lens.jsonread import JsonRefused, loads

        try:
            return loads(self.stdout)
        except json.JSONDecodeError as exc:
            raise CommandOutputInvalid(self.argv, str(exc)) from None
        except JsonRefused as exc:
            raise CommandOutputInvalid(self.argv, f"holds values Lens does not read: {exc}") from None

    def check(self) -> CommandResult:
        """Raise :class:`CommandFailed` now for a result obtained with ``check=False``."""
        if not self.ok:
            raise CommandFailed(self.argv, self.returncode, self.stdout, self.stderr)
        return self


@runtime_checkable
class Runner(Protocol):
    """What domains depend on, so tests can hand them a :class:`FakeRunner`."""

    def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult: ...

    async def arun(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult: ...

    def stream(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        idle_timeout: float | None = None,
        max_line: int | None = None,
    ) -> CommandStream: ...

    def which(self, binary: str) -> str | None: ...


class CommandStream:
    """A running command whose stdout is read line by line while it runs (``kubectl get --raw ...?watch=1``).

    Iterate it for the lines (without their newline); the iteration ends when the tool exits 0 and
    raises :class:`CommandFailed` when it exits non-zero, :class:`CommandTimedOut` when it printed
    nothing for ``idle_timeout`` seconds. :meth:`close` may be called from any thread: it stops
    the tool (a watch never ends on its own) and ends the iteration without an error, which is how
    a server shuts its watches down. With ``max_line`` set, a line longer than that many bytes
    stops the tool and raises :class:`CommandOutputTooLarge` before it is held whole.
    """

    def __init__(self, call: RecordedCall):
        self.call = call
        self.argv = call.argv
        self.closed = False
        #: the longest line (in bytes, without its newline) the reader accepts; None: no bound
        self.max_line: int | None = None

    def __iter__(self) -> Iterator[str]:
        raise NotImplementedError

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> CommandStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class RecordedCall:
    """One call as the runner prepared it; :class:`FakeRunner` keeps these for assertions."""

    argv: tuple[str, ...]  # as run: after kubeconfig/context injection
    requested: tuple[str, ...]  # as the caller passed it
    input: str | None
    env: Mapping[str, str] | None  # the per-call env only, not the inherited environment
    cwd: str | None
    timeout: float
    check: bool
