"""The one way Lens runs kubectl, helm and kustomize.

Every domain shells out through a :class:`Runner`, so the dangerous details are decided once:
argument lists only (never a shell, so a model name like ``a; rm -rf /`` stays one literal
argument), a timeout on every call (a hung API server must not hang Lens), kubeconfig and context
passed the same way to every tool, secrets kept out of logs and error messages
(:mod:`.redaction`), and failures turned into coded errors (:mod:`.errors`) the CLI and API
already know how to render. Tests script the answers with the recording fake,
``llm_d_lens.testing.fake_runner.FakeRunner``, which goes through the same preparation.

Nothing is imported here: every CLI command declares ``--timeout`` with :data:`DEFAULT_TIMEOUT`, and
one that reads a snapshot or the demo never runs a tool, so it never pays for the protocol, the
errors, the redaction rules or the process runner (subprocess, selectors, logging, tempfile). Each
name is imported from its module when first named (PEP 562).
"""

from __future__ import annotations

#: Seconds a call may take unless the runner or the call says otherwise.
DEFAULT_TIMEOUT: float = 60.0

TYPE_CHECKING = False  # typing itself is a slow import
if TYPE_CHECKING:
    from llm_d_lens.runner.errors import (
        CommandError,
        CommandFailed,
        CommandNotFound,
        CommandOutputInvalid,
        CommandOutputTooLarge,
        CommandTimedOut,
        InvalidCommand,
    )
    from llm_d_lens.runner.process import CommandRunner, RunnerBase
    from llm_d_lens.runner.protocol import CommandResult, CommandStream, RecordedCall, Runner
    from llm_d_lens.runner.redaction import format_command, redact

__all__ = [
    "DEFAULT_TIMEOUT",
    "CommandError",
    "CommandFailed",
    "CommandNotFound",
    "CommandOutputInvalid",
    "CommandOutputTooLarge",
    "CommandResult",
    "CommandRunner",
    "CommandStream",
    "CommandTimedOut",
    "InvalidCommand",
    "RecordedCall",
    "Runner",
    "RunnerBase",
    "format_command",
    "redact",
]

#: each public name -> the module that defines it
_HOMES = {
    **dict.fromkeys(("CommandError", "CommandFailed", "CommandNotFound", "CommandOutputInvalid", "CommandOutputTooLarge",
                     "CommandTimedOut", "InvalidCommand"), "errors"),
    **dict.fromkeys(("CommandResult", "CommandStream", "RecordedCall", "Runner"), "protocol"),
    **dict.fromkeys(("format_command", "redact"), "redaction"),
    **dict.fromkeys(("CommandRunner", "RunnerBase"), "process"),
}


def __getattr__(name: str) -> object:
    """Each public name on first use (PEP 562), from its own module."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
