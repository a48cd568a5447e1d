"""The one way Lens runs kubectl, helm and kustomize.

Every domain shells out through a :class:`Runner`, so the dangerous details are decided once:
argument lists only (never a shell, so a model name like ``a; rm -rf /`` stays one literal
argument), a timeout on every call (a hung API server must not hang Lens), kubeconfig and context
passed the same way to every tool, secrets kept out of logs and error messages
(:mod:`.redaction`), and failures turned into coded errors (:mod:`.errors`) the CLI and API
already know how to render. Tests script the answers with the recording fake,
``llm_d_lens.testing.fake_runner.FakeRunner``, which goes through the same preparation.

Only the standard library is imported here: every CLI command pays for this package at startup, so
the process runner itself (subprocess, selectors, logging, tempfile) is imported when first named:
a command that reads a snapshot or the demo never starts a process and never pays for it.
"""

from __future__ import annotations

from llm_d_lens.runner.errors import (
    CommandError,
    CommandFailed,
    CommandNotFound,
    CommandOutputInvalid,
    CommandOutputTooLarge,
    CommandTimedOut,
    InvalidCommand,
)
from llm_d_lens.runner.protocol import (
    DEFAULT_TIMEOUT,
    CommandResult,
    CommandStream,
    RecordedCall,
    Runner,
)
from llm_d_lens.runner.redaction import format_command, redact

TYPE_CHECKING = False  # typing itself is a slow import
if TYPE_CHECKING:
    from llm_d_lens.runner.process import CommandRunner, RunnerBase

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


def __getattr__(name: str) -> object:
    """``CommandRunner`` and ``RunnerBase`` on first use (PEP 562)."""
    if name in ("CommandRunner", "RunnerBase"):
        from llm_d_lens.runner import process

        return getattr(process, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
