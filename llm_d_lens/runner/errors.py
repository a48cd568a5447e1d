"""The coded errors a command can end in; the CLI and the API render them like any LensError."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.runner.redaction import _redact, _scrub, _trim, format_command


class InvalidCommand(LensError, TypeError):
    """A caller built the command wrong (a str instead of a list, a non-str item).

    It is a :class:`TypeError` too because it is a programming error, and a str argv is exactly
    the mistake that would otherwise invite a shell back in.
    """

    code = "COMMAND_INVALID"
    http_status = 500


class CommandError(LensError):
    """Base for every failure to run a tool; ``command`` is the redacted rendering, safe to show."""

    code = "COMMAND_ERROR"
    http_status = 502

    def __init__(
        self,
        message: str,
        *,
        argv: Sequence[str],
        code: str | None = None,
        details: dict[str, Any] | None = None,
    ):
        #: The argv as run, unredacted: for programmatic checks, never for display.
        self.argv: tuple[str, ...] = tuple(argv)
        self.command = format_command(self.argv)
        super().__init__(message, code=code, details={"command": self.command, **(details or {})})


class CommandNotFound(CommandError):
    """The tool is not installed (or a pinned path is wrong): an install problem, not a cluster one."""

    code = "COMMAND_NOT_FOUND"
    http_status = 503  # through the API: the server lacks a tool, which its operator has to install

    def __init__(self, argv: Sequence[str], *, pinned: str | None = None):
        binary = argv[0]
        if pinned is not None:
            where = f"is pinned to {pinned}, which is not an executable file"
        else:
            where = "was not found on PATH; install it, or add the directory holding it to PATH"
        command = format_command(argv)
        super().__init__(f"`{binary}` {where} (needed to run `{command}`)", argv=argv, details={"binary": binary})
        self.binary = binary


class CommandFailed(CommandError):
    """The tool ran and exited non-zero; its stderr is usually the only useful explanation."""

    code = "COMMAND_FAILED"

    def __init__(
        self,
        argv: Sequence[str],
        returncode: int,
        stdout: str,
        stderr: str,
        *,
        secrets: Sequence[str] = (),
    ):
        shown = _trim(_scrub(stderr.strip(), [*_redact(argv)[1], *secrets]))
        command = format_command(argv)
        exit_ = _describe_exit(returncode)
        message = f"`{command}` {exit_}: {shown}" if shown else f"`{command}` {exit_} and printed nothing on stderr"
        super().__init__(message, argv=argv, details={"returncode": returncode, "stderr": shown})
        self.returncode = returncode
        #: Raw output, unredacted: callers match on it (e.g. "NotFound"), never show it whole.
        self.stdout = stdout
        self.stderr = stderr


class CommandTimedOut(CommandError):
    """The tool outlived its timeout and was killed; usually an unreachable API server."""

    code = "COMMAND_TIMEOUT"
    http_status = 504

    def __init__(self, argv: Sequence[str], timeout: float):
        command = format_command(argv)
        super().__init__(
            f"`{command}` did not finish within {timeout:g} s and was killed",
            argv=argv,
            details={"timeout_seconds": timeout},
        )
        self.timeout = timeout


class CommandOutputInvalid(CommandError):
    """The tool succeeded but printed something Lens cannot read (e.g. a warning instead of JSON)."""

    code = "COMMAND_OUTPUT_INVALID"

    def __init__(self, argv: Sequence[str], reason: str):
        # The output itself is not quoted: `kubectl get secret -o yaml` would leak it.
        super().__init__(f"`{format_command(argv)}` did not print valid JSON ({reason})", argv=argv)


class CommandOutputTooLarge(CommandError):
    """The tool printed one line longer than the caller's bound: refused unread, not held in memory.

    A watch reads one JSON event a line; a 200 MB line would otherwise be buffered whole before
    anything could look at it.
    """

    code = "COMMAND_OUTPUT_TOO_LARGE"

    def __init__(self, argv: Sequence[str], limit: int):
        super().__init__(f"`{format_command(argv)}` printed a line longer than {limit} bytes; it was refused "
                         "unread and the command stopped", argv=argv, details={"max_line_bytes": limit})
        self.limit = limit


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"failed with exit code {returncode}"
