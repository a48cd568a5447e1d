"""The one way Lens runs kubectl, helm and kustomize.

Every domain shells out through a :class:`Runner`, so the dangerous details are decided once:
argument lists only (never a shell, so a model name like ``a; rm -rf /`` stays one literal
argument), a timeout on every call (a hung API server must not hang Lens), kubeconfig and context
passed the same way to every tool, secrets kept out of logs and error messages, and failures turned
into :class:`~llm_d_lens.errors.LensError` subclasses the CLI and API already know how to render.

:class:`FakeRunner` goes through the same code path minus the process, so domain tests script
kubectl's answers without a cluster and still meet the errors the real runner would raise.

Only the standard library is imported here: every CLI command pays for this module at startup.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any, Protocol, Union, runtime_checkable

from llm_d_lens.errors import LensError

__all__ = [
    "DEFAULT_TIMEOUT",
    "CommandError",
    "CommandFailed",
    "CommandNotFound",
    "CommandOutputInvalid",
    "CommandResult",
    "CommandRunner",
    "CommandStream",
    "CommandTimedOut",
    "FakeReply",
    "FakeRunner",
    "InvalidCommand",
    "RecordedCall",
    "Runner",
    "format_command",
    "redact",
]

log = logging.getLogger("llm_d_lens.runner")

#: Seconds a call may take unless the runner or the call says otherwise.
DEFAULT_TIMEOUT: float = 60.0
REDACTED = "***"
#: Characters of stderr an error message quotes; kubectl's point is in the first or last lines.
_STDERR_LIMIT = 2000

# Flags whose next argument (or ``=value``) is itself a secret.
_SECRET_FLAGS = frozenset(
    {
        "--token",
        "--password",
        "--client-key",
        "--client-secret",
        "--docker-password",
        "--registry-password",
        "--passphrase",
        "--api-key",
        "--auth-token",
        "--bearer-token",
        "--access-token",
    }
)
# Flags whose value is a comma-separated list of key=value assignments (helm's --set family).
_ASSIGNMENT_FLAGS = frozenset({"--set", "--set-string", "--set-json", "--set-literal", "--from-literal"})
# ``kubectl create secret --from-literal`` values are secret whatever their key is called.
_ALWAYS_SECRET_FLAGS = frozenset({"--from-literal"})
_SECRET_KEY = re.compile(r"password|passwd|passphrase|token|secret|credential|key|auth", re.IGNORECASE)
_UNESCAPED_COMMA = re.compile(r"(?<!\\),")
# What a reader can copy without quoting; ``*`` is allowed so ``--token ***`` stays readable.
_PLAIN_WORD = re.compile(r"[\w@%+=:,./*-]+")

# The global flags each cluster tool spells for "which kubeconfig" and "which context".
_CLUSTER_FLAGS: dict[str, tuple[str, str]] = {
    "kubectl": ("--kubeconfig", "--context"),
    "helm": ("--kubeconfig", "--kube-context"),
}


# --------------------------------------------------------------------------------------------
# Errors


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


# --------------------------------------------------------------------------------------------
# Redaction


def redact(argv: Sequence[str]) -> list[str]:
    """The argv with secret values replaced by ``***``, item for item, for logs and messages.

    Redaction errs on the side of hiding: a log line that hides a harmless value costs nothing,
    one that shows a token costs a rotation.
    """
    return _redact(argv)[0]


def format_command(argv: Sequence[str]) -> str:
    """The redacted argv as one line a human can read (and mostly paste), quoting only when needed."""
    return " ".join(item if _PLAIN_WORD.fullmatch(item) else shlex.quote(item) for item in redact(argv))


def _redact(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Redacted argv plus the secret values removed, so stderr can be scrubbed of them too."""
    shown: list[str] = []
    secrets: list[str] = []
    value_of: str | None = None  # the flag whose value the current item is
    for item in argv:
        if value_of is not None:
            shown.append(_redact_flag_value(value_of, item, secrets))
            value_of = None
        elif item.startswith("-") and item != "--":
            flag, eq, value = item.partition("=")
            if eq:
                shown.append(f"{flag}={_redact_flag_value(flag, value, secrets)}")
            else:
                shown.append(item)
                if flag in _SECRET_FLAGS or flag in _ASSIGNMENT_FLAGS:
                    value_of = flag
        else:
            shown.append(_redact_assignments(item, secrets, everything=False))
    return shown, secrets


def _redact_flag_value(flag: str, value: str, secrets: list[str]) -> str:
    if flag in _ASSIGNMENT_FLAGS:
        return _redact_assignments(value, secrets, everything=flag in _ALWAYS_SECRET_FLAGS)
    if flag in _SECRET_FLAGS or _SECRET_KEY.search(flag):
        secrets.append(value)
        return REDACTED
    return value


def _redact_assignments(text: str, secrets: list[str], *, everything: bool) -> str:
    """Hide the values of ``key=value`` items (comma-separated, as helm's --set) with secret keys."""
    if "=" not in text:
        return text
    shown: list[str] = []
    hiding = False
    for part in _UNESCAPED_COMMA.split(text):
        key, eq, value = part.partition("=")
        if eq:
            hiding = everything or bool(_SECRET_KEY.search(key))
            shown.append(f"{key}={REDACTED}" if hiding else part)
            if hiding:
                secrets.append(value)
        elif hiding:
            secrets.append(part)  # a secret value that itself contained a comma
        else:
            shown.append(part)
    return ",".join(shown)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """Tools echo what they were given ("invalid token abc"): remove those values from their output."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _trim(text: str, limit: int = _STDERR_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters trimmed] …\n{text[-half:]}"


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"failed with exit code {returncode}"


# --------------------------------------------------------------------------------------------
# Results and the protocol domains type against


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
    ) -> CommandStream: ...

    def which(self, binary: str) -> str | None: ...


class CommandStream:
    """A running command whose stdout is read line by line while it runs (``kubectl get --raw ...?watch=1``).

    Iterate it for the lines (without their newline); the iteration ends when the tool exits 0 and
    raises :class:`CommandFailed` when it exits non-zero, :class:`CommandTimedOut` when it printed
    nothing for ``idle_timeout`` seconds. :meth:`close` may be called from any thread: it stops
    the tool (a watch never ends on its own) and ends the iteration without an error, which is how
    a server shuts its watches down.
    """

    def __init__(self, call: RecordedCall):
        self.call = call
        self.argv = call.argv
        self.closed = False

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


# --------------------------------------------------------------------------------------------
# The runners


class _RunnerBase:
    """Everything but starting the process, shared so the fake cannot drift from the real thing."""

    def __init__(
        self,
        *,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        binaries: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ):
        self.kubeconfig = os.fspath(kubeconfig) if kubeconfig is not None else None
        self.context = context
        self.timeout = _valid_timeout(timeout)
        self.env: dict[str, str] = dict(env or {})
        self.binaries: dict[str, str] = dict(binaries or {})

    def which(self, binary: str) -> str | None:
        """Where ``binary`` would be run from, or None: lets `lens doctor` check tools up front."""
        return shutil.which(self.binaries.get(binary, binary))

    def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult:
        """Run to completion; raises :class:`CommandFailed` on a non-zero exit unless ``check=False``."""
        call = self._prepare(argv, input=input, env=env, cwd=cwd, timeout=timeout, check=check)
        executable = self._resolve(call)
        started = time.monotonic()
        with self._translate_errors(call):
            returncode, stdout, stderr = self._execute(call, executable)
        return self._finish(call, returncode, stdout, stderr, time.monotonic() - started)

    async def arun(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult:
        """:meth:`run` for the API's event loop; the process is killed on timeout or cancellation."""
        call = self._prepare(argv, input=input, env=env, cwd=cwd, timeout=timeout, check=check)
        executable = self._resolve(call)
        started = time.monotonic()
        with self._translate_errors(call):
            returncode, stdout, stderr = await self._aexecute(call, executable)
        return self._finish(call, returncode, stdout, stderr, time.monotonic() - started)

    def stream(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        idle_timeout: float | None = None,
    ) -> CommandStream:
        """Start a long-running command and read its output as it comes (see :class:`CommandStream`).

        There is no overall timeout (a watch runs until stopped); ``idle_timeout`` bounds the
        silence instead, so a connection that hangs without closing is noticed.
        """
        call = self._prepare(argv, input=None, env=env, cwd=cwd,
                             timeout=float("inf") if idle_timeout is None else idle_timeout, check=True)
        executable = self._resolve(call)
        with self._translate_errors(call):
            return self._open_stream(call, executable)

    # -- the part subclasses provide

    def _open_stream(self, call: RecordedCall, executable: str) -> CommandStream:
        raise NotImplementedError

    def _execute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        raise NotImplementedError

    async def _aexecute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        raise NotImplementedError

    def _record(self, call: RecordedCall) -> None:
        """Hook for the fake; the real runner keeps nothing."""

    # -- shared steps

    def _prepare(
        self,
        argv: Sequence[str],
        *,
        input: str | None,
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        timeout: float | None,
        check: bool,
    ) -> RecordedCall:
        requested = _valid_argv(argv)
        if input is not None and not isinstance(input, str):
            raise InvalidCommand(f"input for `{format_command(requested)}` must be str, not {type(input).__name__}")
        call = RecordedCall(
            argv=self._inject_cluster_flags(requested),
            requested=requested,
            input=input,
            env=dict(env) if env is not None else None,
            cwd=os.fspath(cwd) if cwd is not None else None,
            timeout=_valid_timeout(self.timeout if timeout is None else timeout),
            check=check,
        )
        self._record(call)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("running `%s`%s", format_command(call.argv), _describe_call(call))
        return call

    def _inject_cluster_flags(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """Put kubeconfig/context right after the tool name, where they can't land after a ``--``."""
        flags = _CLUSTER_FLAGS.get(os.path.basename(argv[0]))
        if flags is None:
            return argv
        given = {item.partition("=")[0] for item in _before_double_dash(argv[1:]) if item.startswith("--")}
        kubeconfig_flag, context_flag = flags
        extra: list[str] = []
        if self.kubeconfig and kubeconfig_flag not in given:
            extra += [kubeconfig_flag, self.kubeconfig]
        if self.context and context_flag not in given:
            extra += [context_flag, self.context]
        return (argv[0], *extra, *argv[1:])

    def _resolve(self, call: RecordedCall) -> str:
        executable = self.which(call.argv[0])
        if executable is None:
            raise CommandNotFound(call.argv, pinned=self.binaries.get(call.argv[0]))
        return executable

    @contextlib.contextmanager
    def _translate_errors(self, call: RecordedCall) -> Iterator[None]:
        """OS-level failures become the typed errors the edges render (also for the fake's ``raises=``)."""
        try:
            yield
        except (subprocess.TimeoutExpired, TimeoutError):
            log.debug("`%s` timed out after %gs and was killed", format_command(call.argv), call.timeout)
            raise CommandTimedOut(call.argv, call.timeout) from None
        except (FileNotFoundError, PermissionError) as exc:
            if call.cwd is not None and not os.path.isdir(call.cwd):
                raise CommandError(
                    f"cannot run `{format_command(call.argv)}`: working directory {call.cwd} does not exist",
                    argv=call.argv,
                    code="COMMAND_CWD_NOT_FOUND",
                ) from exc
            raise CommandNotFound(call.argv, pinned=self.binaries.get(call.argv[0])) from exc

    def _finish(self, call: RecordedCall, returncode: int, stdout: str, stderr: str, duration: float) -> CommandResult:
        result = CommandResult(call.argv, returncode, stdout, stderr, duration)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("`%s` exited with %d after %.3fs", result.command, returncode, duration)
        if call.check and returncode != 0:
            raise CommandFailed(call.argv, returncode, stdout, stderr, secrets=self._env_secrets(call))
        return result

    def _env_secrets(self, call: RecordedCall) -> list[str]:
        env = {**self.env, **(call.env or {})}
        return [value for key, value in env.items() if _SECRET_KEY.search(key)]

    def _environment(self, call: RecordedCall) -> dict[str, str] | None:
        """Extra variables go on top of the inherited environment: dropping PATH or HOME breaks kubectl."""
        if not self.env and call.env is None:
            return None
        return {**os.environ, **self.env, **(call.env or {})}


class CommandRunner(_RunnerBase):
    """Runs real processes.

    ``kubeconfig``/``context`` are injected into every kubectl and helm argv (unless the argv
    already names its own); ``binaries`` pins tool paths, e.g. ``{"kubectl": "/opt/k8s/kubectl"}``;
    ``env`` is added to every call's environment; ``timeout`` is the default per call.
    """

    def _execute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        completed = subprocess.run(
            [executable, *call.argv[1:]],
            input=call.input,
            # No stdin means EOF, not the terminal: a tool that prompts must fail, not hang.
            stdin=subprocess.DEVNULL if call.input is None else None,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            cwd=call.cwd,
            env=self._environment(call),
            timeout=call.timeout,
            shell=False,
            check=False,
        )
        return completed.returncode, completed.stdout, completed.stderr

    async def _aexecute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        import asyncio  # here, not at the top: a synchronous command (deploy render) never pays for it

        process = await asyncio.create_subprocess_exec(
            executable,
            *call.argv[1:],
            stdin=subprocess.DEVNULL if call.input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=call.cwd,
            env=self._environment(call),
        )
        stdin = call.input.encode("utf-8") if call.input is not None else None
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(stdin), call.timeout)
        except BaseException:  # timeout or cancellation: never leave the tool running behind us
            await _kill(process)
            raise
        assert process.returncode is not None
        return process.returncode, _decode(stdout), _decode(stderr)


    def _open_stream(self, call: RecordedCall, executable: str) -> CommandStream:
        stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty stderr can never block the tool
        try:
            process = subprocess.Popen(
                [executable, *call.argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                cwd=call.cwd, env=self._environment(call), shell=False)
        except BaseException:
            stderr.close()
            raise
        return _ProcessStream(call, process, stderr, self._env_secrets(call))


class _ProcessStream(CommandStream):
    def __init__(self, call: RecordedCall, process: subprocess.Popen[bytes], stderr: Any, secrets: list[str]):
        super().__init__(call)
        self._process = process
        self._stderr = stderr
        self._secrets = secrets
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[str]:
        stdout = self._process.stdout
        assert stdout is not None
        idle = None if self.call.timeout == float("inf") else self.call.timeout
        pending = bytearray()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(stdout, selectors.EVENT_READ)
                while True:
                    if not selector.select(idle):
                        self._stop()
                        if self.closed:
                            return
                        raise CommandTimedOut(self.argv, self.call.timeout)
                    chunk = os.read(stdout.fileno(), 1 << 16)
                    if not chunk:
                        break
                    pending += chunk
                    start = 0
                    while (end := pending.find(b"\n", start)) >= 0:
                        yield pending[start:end].decode("utf-8", errors="replace")
                        start = end + 1
                    del pending[:start]
            if pending:
                yield pending.decode("utf-8", errors="replace")
            returncode = self._process.wait()
            if returncode != 0 and not self.closed:
                self._stderr.seek(0)
                text = _decode(self._stderr.read())
                raise CommandFailed(self.argv, returncode, "", text, secrets=self._secrets)
        finally:
            self._stop()
            stdout.close()
            self._stderr.close()

    def close(self) -> None:
        self.closed = True
        self._stop()

    def _stop(self) -> None:
        with self._lock:
            if self._process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
            self._process.wait()


async def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------------------------
# The fake


Pattern = Union[Sequence[Union[str, EllipsisType]], Callable[[list[str]], bool]]

_NO_JSON: Any = object()


@dataclass(frozen=True)
class FakeReply:
    """One scripted answer; ``json_body`` is dumped to stdout, ``raises`` is raised instead.

    ``raises`` may be an OS-level exception (``FileNotFoundError``, ``TimeoutError``): it is
    translated exactly as the real runner translates it, into CommandNotFound / CommandTimedOut.
    """

    stdout: str = ""
    stderr: str = ""
    returncode: int = 0
    json_body: Any = field(default=_NO_JSON, repr=False)
    raises: BaseException | None = None
    #: for :meth:`FakeRunner.stream`: what the tool prints, line by line (a dict is one JSON line);
    #: a generator runs as the stream is read, so a test can look at the state between lines
    lines: Iterable[Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.json_body is not _NO_JSON:
            if self.stdout:
                raise ValueError("give a fake reply stdout or json_body, not both")
            object.__setattr__(self, "stdout", json.dumps(self.json_body))


@dataclass
class _Script:
    pattern: Pattern
    replies: list[FakeReply]
    used: int = 0

    def next_reply(self) -> FakeReply:
        """Queued replies are consumed in order and the last one repeats, like a resource settling."""
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply


class FakeRunner(_RunnerBase):
    """A :class:`Runner` for tests: scripted replies matched on the caller's argv, every call recorded.

    Patterns are an exact argv list, a prefix (a list ending with ``...``), or a predicate on the
    argv list. When several match, an exact pattern beats a prefix, a longer prefix beats a shorter
    one, and predicates come last; so a broad ``["kubectl", ...]`` never shadows a specific reply.
    An unmatched call fails the test loudly unless ``default`` was given.
    """

    def __init__(
        self,
        *,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        binaries: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        default: FakeReply | None = None,
    ):
        super().__init__(kubeconfig=kubeconfig, context=context, binaries=binaries, timeout=timeout, env=env)
        self.calls: list[RecordedCall] = []
        self.default = default
        self._scripts: list[_Script] = []
        self._missing: set[str] = set()

    def reply(
        self,
        pattern: Pattern,
        *,
        stdout: str = "",
        stderr: str = "",
        returncode: int = 0,
        json_body: Any = _NO_JSON,
        raises: BaseException | None = None,
    ) -> FakeRunner:
        """Script an answer; scripting the same pattern again queues another answer behind it."""
        pattern = _valid_pattern(pattern)
        reply = FakeReply(stdout=stdout, stderr=stderr, returncode=returncode, json_body=json_body, raises=raises)
        for script in self._scripts:
            if script.pattern == pattern:
                script.replies.append(reply)
                return self
        self._scripts.append(_Script(pattern, [reply]))
        return self

    def stream_reply(
        self,
        pattern: Pattern,
        lines: Iterable[Any],
        *,
        stderr: str = "",
        returncode: int = 0,
        raises: BaseException | None = None,
    ) -> FakeRunner:
        """Script a streamed answer (:meth:`stream`): the lines, then an exit with ``returncode``.

        Queued like :meth:`reply`; every streamed reply is read once, so script as many as the
        test will open.
        """
        pattern = _valid_pattern(pattern)
        reply = FakeReply(stderr=stderr, returncode=returncode, raises=raises, lines=lines)
        for script in self._scripts:
            if script.pattern == pattern:
                script.replies.append(reply)
                return self
        self._scripts.append(_Script(pattern, [reply]))
        return self

    def missing(self, *binaries: str) -> FakeRunner:
        """Make these tools absent, so calls raise CommandNotFound as on a machine without them."""
        self._missing.update(binaries)
        return self

    def which(self, binary: str) -> str | None:
        if binary in self._missing or os.path.basename(binary) in self._missing:
            return None
        return self.binaries.get(binary, f"/fake/bin/{os.path.basename(binary)}")

    def argvs(self) -> list[list[str]]:
        """Every call's argv as run (after injection), in order."""
        return [list(call.argv) for call in self.calls]

    def called_with(self, prefix: Sequence[str | EllipsisType]) -> bool:
        """Whether any call started with ``prefix``, as the caller passed it or as it was run."""
        wanted = tuple(item for item in prefix if item is not Ellipsis)
        return any(
            argv[: len(wanted)] == wanted for call in self.calls for argv in (call.requested, call.argv)
        )

    def _record(self, call: RecordedCall) -> None:
        self.calls.append(call)

    def _execute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        reply = self._match(list(call.requested))
        if reply.raises is not None:
            raise reply.raises
        return reply.returncode, reply.stdout, reply.stderr

    async def _aexecute(self, call: RecordedCall, executable: str) -> tuple[int, str, str]:
        import asyncio

        await asyncio.sleep(0)  # yield like a real process would, so ordering bugs still surface
        return self._execute(call, executable)

    def _open_stream(self, call: RecordedCall, executable: str) -> CommandStream:
        reply = self._match(list(call.requested))
        if reply.raises is not None:
            raise reply.raises
        if reply.lines is None:
            raise AssertionError(f"FakeRunner: {list(call.requested)!r} was scripted with reply(), not stream_reply()")
        return _FakeStream(call, reply, self._env_secrets(call))


    def _match(self, argv: list[str]) -> FakeReply:
        matching = [(rank, i, s) for i, s in enumerate(self._scripts) if (rank := _match_rank(s.pattern, argv))]
        if matching:
            return min(matching, key=lambda m: (m[0], m[1]))[2].next_reply()
        if self.default is not None:
            return self.default
        scripted = "\n".join(f"  {_describe_pattern(s.pattern)}" for s in self._scripts) or "  (none)"
        raise AssertionError(f"FakeRunner has no reply for {argv!r}\nscripted patterns:\n{scripted}")


class _FakeStream(CommandStream):
    """The scripted lines as a stream; an exhausted script ends like the tool exiting with its returncode."""

    def __init__(self, call: RecordedCall, reply: FakeReply, secrets: list[str]):
        super().__init__(call)
        self._reply = reply
        self._secrets = secrets

    def __iter__(self) -> Iterator[str]:
        for line in self._reply.lines or ():
            if self.closed:
                return
            if isinstance(line, BaseException):
                raise line  # e.g. CommandTimedOut, as the real stream raises after a silence
            yield line if isinstance(line, str) else json.dumps(line)
        if self._reply.returncode != 0 and not self.closed:
            raise CommandFailed(self.argv, self._reply.returncode, "", self._reply.stderr, secrets=self._secrets)


def _match_rank(pattern: Pattern, argv: list[str]) -> tuple[int, int] | None:
    """How specifically ``pattern`` matches (lower is more specific), or None if it does not."""
    if callable(pattern):
        return (2, 0) if pattern(argv) else None
    items = list(pattern)
    if items and items[-1] is Ellipsis:
        head = items[:-1]
        return (1, -len(head)) if argv[: len(head)] == head else None
    return (0, 0) if argv == items else None


def _valid_pattern(pattern: Pattern) -> Pattern:
    if callable(pattern):
        return pattern
    if isinstance(pattern, (str, bytes)) or not isinstance(pattern, Sequence):
        raise TypeError(f"a fake pattern is a list of str (optionally ending with ...) or a predicate, not {pattern!r}")
    items = list(pattern)
    for position, item in enumerate(items):
        if item is Ellipsis and position != len(items) - 1:
            raise ValueError(f"... may only end a fake pattern: {_describe_pattern(items)}")
        if item is not Ellipsis and not isinstance(item, str):
            raise TypeError(f"fake pattern items must be str, got {item!r}")
    return items


def _describe_pattern(pattern: Pattern) -> str:
    if callable(pattern):
        return f"{getattr(pattern, '__qualname__', repr(pattern))} (predicate)"
    return "[" + ", ".join("..." if item is Ellipsis else repr(item) for item in pattern) + "]"


# --------------------------------------------------------------------------------------------
# Validation helpers


def _valid_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, (str, bytes)):
        raise InvalidCommand(
            f"a command is a list of arguments, never a string (got {argv!r}): Lens does not use a shell"
        )
    try:
        items = list(argv)
    except TypeError:
        raise InvalidCommand(f"a command is a list of arguments, not {type(argv).__name__}") from None
    if not items:
        raise InvalidCommand("a command needs at least the program to run")
    checked: list[str] = []
    for item in items:
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if not isinstance(item, str):
            raise InvalidCommand(f"command arguments must be str, got {item!r} ({type(item).__name__})")
        checked.append(item)
    return tuple(checked)


def _valid_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"a command timeout is a positive number of seconds, not {timeout!r}")
    return float(timeout)


def _before_double_dash(args: Sequence[str]) -> Iterator[str]:
    for item in args:
        if item == "--":
            return
        yield item


def _describe_call(call: RecordedCall) -> str:
    """Log what shaped the call without the values: env and stdin may hold secrets (a Secret manifest)."""
    parts = [f"timeout {call.timeout:g}s"]
    if call.cwd is not None:
        parts.append(f"cwd {call.cwd}")
    if call.env:
        parts.append("env " + ", ".join(sorted(call.env)))
    if call.input is not None:
        parts.append(f"{len(call.input)} characters on stdin")
    return " (" + "; ".join(parts) + ")"
