"""Running real processes: the shared preparation every runner goes through, and :class:`CommandRunner`.

:class:`RunnerBase` decides everything but starting the process (argv checks, kubeconfig and
context injection, timeouts, error translation, logging without secrets), so the recording fake
in ``llm_d_lens/testing/fake_runner.py`` cannot drift from the real thing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llm_d_lens.runner.errors import (
    CommandError,
    CommandFailed,
    CommandNotFound,
    CommandOutputTooLarge,
    CommandTimedOut,
    InvalidCommand,
)
from llm_d_lens.runner.protocol import (
    DEFAULT_TIMEOUT,
    CommandResult,
    CommandStream,
    RecordedCall,
)
from llm_d_lens.runner.redaction import _CLUSTER_FLAGS, _SECRET_KEY, format_command

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("llm_d_lens.runner")



class RunnerBase:
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
        max_line: int | None = None,
    ) -> CommandStream:
        """Start a long-running command and read its output as it comes (see :class:`CommandStream`).

        There is no overall timeout (a watch runs until stopped); ``idle_timeout`` bounds the
        silence instead, so a connection that hangs without closing is noticed, and ``max_line``
        the memory one line may take.
        """
        call = self._prepare(argv, input=None, env=env, cwd=cwd,
                             timeout=float("inf") if idle_timeout is None else idle_timeout, check=True)
        executable = self._resolve(call)
        with self._translate_errors(call):
            stream = self._open_stream(call, executable)
        stream.max_line = max_line
        return stream

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


class CommandRunner(RunnerBase):
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
                    scan = len(pending)  # what is pending holds no newline: look in the new chunk only
                    pending += chunk
                    start = 0
                    while (end := pending.find(b"\n", scan)) >= 0:
                        if self.max_line is not None and end - start > self.max_line:
                            raise CommandOutputTooLarge(self.argv, self.max_line)
                        yield pending[start:end].decode("utf-8", errors="replace")
                        start = scan = end + 1
                    del pending[:start]
                    if self.max_line is not None and len(pending) > self.max_line:
                        raise CommandOutputTooLarge(self.argv, self.max_line)  # never buffered past the bound
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
