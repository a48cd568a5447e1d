"""The recording fake: scripted replies matched on the caller's argv, every call recorded (for tests).

It goes through the same :class:`~llm_d_lens.runner.process.RunnerBase` as the real runner minus
the process, so a domain test scripts kubectl's answers without a cluster and still meets the errors
the real runner would raise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any, Union

from llm_d_lens.runner.errors import CommandFailed, CommandOutputTooLarge
from llm_d_lens.runner.process import RunnerBase
from llm_d_lens.runner.protocol import DEFAULT_TIMEOUT, CommandStream, RecordedCall

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


class FakeRunner(RunnerBase):
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
            text = line if isinstance(line, str) else json.dumps(line)
            if self.max_line is not None and len(text.encode("utf-8", "surrogatepass")) > self.max_line:
                raise CommandOutputTooLarge(self.argv, self.max_line)  # as the real reader refuses it
            yield text
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
