"""The worker process a third-party distribution's providers live in (the other side of ``provider_host.py``).

Run as ``python -m llm_d_lens.hardware.provider_worker IN OUT``: it reads one JSON request a line
from descriptor ``IN`` and answers one JSON line each on ``OUT``; its own stdin, stdout and stderr
go to ``/dev/null``, so nothing a provider prints reaches Lens or the terminal. Requests:

- ``{"op": "build", "handle", "entry": {name, value, group}, "path", "hooks"}``: import the entry
  point, build the provider (a class is instantiated without arguments) and answer which of
  ``hooks`` it has, with each one's parameters, so Lens can offer it what its signature asks for.
- ``{"op": "call", "id", "handle", "method", "args", "kwargs", "return_args"}``: call a hook (a
  coroutine is run to its end on this worker's event loop) and answer its result as plain data
  (``plain.py``), or what it raised. While it runs, the hook may call back into Lens through the
  stand-ins it was handed for Lens's live objects: a runner (``arun``, ``run``, ``which``: Lens runs
  the command) and a clock (``monotonic``, ``sleep``); each is one ``{"id", "callback"}`` line
  answered by one ``{"id", "answer"}`` line.

Whatever the provider does to this process (``os._exit``, a segfault, a hang, the memory limit)
ends or stalls only this process; Lens sees no answer and says so, naming the distribution.
End of input (Lens went away) ends the worker.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import types
from typing import Any

#: bytes of address space the worker may map
MEMORY_LIMIT = 4 * 1024 ** 3


class _Channel:
    def __init__(self, read_fd: int, write_fd: int):
        self._reader = os.fdopen(read_fd, "rb", buffering=65536)
        self._write_fd = write_fd

    def receive(self) -> Any:
        line = self._reader.readline()
        if not line:  # Lens closed its end
            os._exit(0)
        return json.loads(line)

    def send(self, message: Any) -> None:
        data = (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view):]


class _Worker:
    def __init__(self, channel: _Channel):
        self.channel = channel
        self.providers: dict[str, Any] = {}
        self.profiles: dict[str, Any] = {}
        self.loop = asyncio.new_event_loop()
        self.call_id: Any = None

    # -- Lens's live objects, by reference -----------------------------------------------------

    def ask(self, ref: int, op: str, **fields: Any) -> Any:
        self.channel.send({"id": self.call_id, "callback": {"ref": ref, "op": op, **fields}})
        reply = self.channel.receive()
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply.get("answer")

    def decode(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.decode(item) for item in value]
        if not isinstance(value, dict):
            return value
        kind = value.get("__lens__")
        if kind is None:
            return {k: self.decode(v) for k, v in value.items()}
        if kind == "map":
            return {k: self.decode(v) for k, v in value["items"].items()}
        if kind == "object":
            return types.SimpleNamespace(**{k: self.decode(v) for k, v in value["fields"].items()})
        if kind == "runner":
            return _Runner(self, value["ref"])
        if kind == "clock":
            return _Clock(self, value["ref"])
        if kind == "view":
            return types.SimpleNamespace(runner=self.decode(value["runner"]), cluster_id=value.get("cluster_id"))
        if kind == "profile":
            return self.profile(value["payload"])
        raise ValueError(f"unknown reference {kind!r}")

    def profile(self, payload: dict[str, Any]) -> Any:
        key = json.dumps(payload, sort_keys=True)
        if key not in self.profiles:
            from llm_d_lens.hardware.loader import validate_payload

            self.profiles[key] = validate_payload(payload, "lens")
        return self.profiles[key]

    # -- requests --------------------------------------------------------------------------------

    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        from llm_d_lens.hardware.entry_points import EntryPoint

        sys.path[:] = request["path"]
        entry = request["entry"]
        try:
            target = EntryPoint(name=entry["name"], value=entry["value"], group=entry["group"]).load()
            provider = target() if isinstance(target, type) else target
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt of its own, anything
            return {"ok": False, "error": _what(exc), "kind": "import"}
        self.providers[request["handle"]] = provider
        hooks = {}
        for name in request["hooks"]:
            try:
                method = getattr(provider, name, None)
                if not callable(method):
                    continue
                hooks[name] = _parameters(method)
            except BaseException:  # noqa: BLE001 - a property that raises: no such hook
                continue
        return {"ok": True, "class": type(provider).__name__, "hooks": hooks}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        from llm_d_lens.hardware.plain import PlainRefused, to_plain

        self.call_id = request["id"]
        args = self.decode(request["args"])
        kwargs = self.decode(request["kwargs"])
        try:
            method = getattr(self.providers[request["handle"]], request["method"])
            result = method(*args, **kwargs)
            if inspect.isawaitable(result):
                result = self.loop.run_until_complete(_awaited(result))
        except BaseException as exc:  # noqa: BLE001 - what it raised is its answer
            return {"ok": False, "error": _what(exc), "kind": "raised"}
        try:
            reply: dict[str, Any] = {"ok": True, "value": to_plain(result)}
            if request.get("return_args"):
                reply["args"] = {str(i): to_plain(_namespaces(args[i]), f"argument {i}") for i in request["return_args"]}
        except PlainRefused as exc:
            return {"ok": False, "error": f"returned what is not plain data: {exc}", "kind": "answer"}
        except BaseException as exc:  # noqa: BLE001 - a __getattr__ or property of its own that raises
            return {"ok": False, "error": f"returned what could not be read: {_what(exc)}", "kind": "answer"}
        return reply

    def serve(self) -> None:
        self.channel.send({"id": 0, "ready": True})
        while True:
            request = self.channel.receive()
            op = request.get("op")
            reply = self.build(request) if op == "build" else self.call(request)
            self.channel.send({"id": request.get("id"), **reply})


class _Runner:
    """Lens's runner, seen from here: the command runs in Lens, its result comes back."""

    def __init__(self, worker: _Worker, ref: int):
        self._worker, self._ref = worker, ref

    def run(self, argv: Any, *, input: str | None = None, env: Any = None, cwd: Any = None, timeout: float | None = None,
            check: bool = True) -> Any:
        from llm_d_lens.runner.errors import CommandFailed
        from llm_d_lens.runner.protocol import CommandResult

        answer = self._worker.ask(self._ref, "run", argv=[str(a) for a in argv], input=input,
                                  env=dict(env) if env else None, timeout=timeout)
        result = CommandResult(tuple(answer["argv"]), answer["returncode"], answer["stdout"], answer["stderr"],
                               answer["duration_seconds"])
        if check and not result.ok:
            raise CommandFailed(result.argv, result.returncode, result.stdout, result.stderr)
        return result

    async def arun(self, argv: Any, **options: Any) -> Any:
        return self.run(argv, **options)

    def which(self, binary: str) -> str | None:
        return self._worker.ask(self._ref, "which", binary=str(binary))


class _Clock:
    def __init__(self, worker: _Worker, ref: int):
        self._worker, self._ref = worker, ref

    def monotonic(self) -> float:
        return float(self._worker.ask(self._ref, "monotonic"))

    async def sleep(self, seconds: float) -> None:
        self._worker.ask(self._ref, "sleep", seconds=float(seconds))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _namespaces(value: Any) -> Any:
    if isinstance(value, types.SimpleNamespace):
        return {k: _namespaces(v) for k, v in vars(value).items() if not isinstance(v, (_Runner, _Clock))}
    if isinstance(value, list):
        return [_namespaces(v) for v in value]
    return value


def _parameters(method: Any) -> dict[str, Any]:
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return {"params": [], "varkw": False, "async": inspect.iscoroutinefunction(method)}
    return {"params": [[p.name, p.kind.name] for p in parameters], "async": inspect.iscoroutinefunction(method),
            "varkw": any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)}


def _what(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a __str__ that raises
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main(argv: list[str]) -> int:
    read_fd, write_fd = int(argv[0]), int(argv[1])
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):  # pragma: no cover - a platform without the limit
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # whatever a provider prints or reads goes nowhere
        os.dup2(devnull, fd)
    _Worker(_Channel(read_fd, write_fd)).serve()
    return 0


if __name__ == "__main__":
    main(sys.argv[1:])
    os._exit(0)  # no interpreter shutdown: a provider's atexit or thread cannot hold the worker
