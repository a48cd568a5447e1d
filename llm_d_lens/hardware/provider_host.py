"""Every hook of a third-party provider is called through here: in a worker process of its distribution.

A provider is live code, called while Lens serves (a guide method on ``lens driver status``, a
telemetry provider's ``derive`` on each refresh), not only when it loads. Called in Lens's own
process, one that calls ``os._exit``, segfaults (``ctypes``), holds the GIL (a catastrophic regex
runs in C and never lets go) or loops for ever would end or freeze the server. So each third-party
distribution gets one long-lived worker (``provider_worker.py``, its own session, a 4 GiB
address-space limit) in which all its providers are built and called; Lens's own providers stay
in-process. A worker, not a process per call: one round trip to a running worker costs about 0.3 ms,
starting an interpreter and rebuilding the provider for every call 150-500 ms, some 500 times more
(``bench/provider_calls.py`` measures both).

What crosses is plain data. Lens's live objects a hook is offered (a runner, a clock, a cluster
view) go by reference: the worker calls back for a command or a sleep, and Lens runs it, so time
Lens spends on the hook's behalf is never the hook's. A hook's answer is checked on return by the
domain that asked (``plain.from_plain`` against the contract's type). Each call has a deadline
(``LENS_PROVIDER_TIMEOUT`` seconds of the hook's own time between two messages, default 30).

A worker that dies (exit, signal, the memory limit), misses its deadline or answers with something
that is not one bounded JSON line is ended with its whole process group, and its distribution is
*broken* for the rest of this process: every further call is refused at once with the same coded
reason, listeners (the registries, so ``/readyz`` and ``lens hardware doctor`` name it) are told
once, and every other hardware carries on. A hook that merely raises keeps its worker.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import inspect
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llm_d_lens import settings
from llm_d_lens.hardware.entry_points import EntryPoint
from llm_d_lens.hardware.isolation import STARTUP_ALLOWANCE_SECONDS, GuardedFailure, dist_meta

DEFAULT_CALL_TIMEOUT_SECONDS = 30.0
#: the longest answer line a worker may send (a status of thousands of nodes is well under 1 MiB)
MAX_ANSWER_BYTES = 16 * 1024 * 1024


def call_timeout_from_env(env: Mapping[str, str] | None = None) -> float:
    """``LENS_PROVIDER_TIMEOUT``: seconds a provider's hook may compute before it answers (default 30)."""
    raw = settings.text("LENS_PROVIDER_TIMEOUT", env)
    if raw is None:
        return DEFAULT_CALL_TIMEOUT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < 3600:
        raise settings.SettingInvalid(f"LENS_PROVIDER_TIMEOUT={raw[:40]}: give the seconds a provider's hook may take, "
                                      "more than 0 and less than 3600",
                                      details={"variable": "LENS_PROVIDER_TIMEOUT", "value": raw[:40]})
    return value


class HookFailed(GuardedFailure):
    """A hook that raised (``kind`` raised) or answered what is not plain data (answer); the worker lives on."""


class WorkerBroken(GuardedFailure):
    """The distribution's worker died, hung or broke the protocol (``kind`` crashed | timeout | answer)."""


def host_key(ep: EntryPoint) -> tuple[str, str]:
    """(key, label) of the distribution ``ep`` comes from: one worker per key."""
    name, version = dist_meta(ep)
    if name:
        from llm_d_lens.hardware.settings import normalize_dist

        return normalize_dist(name), f"{name} {version}"
    top = ep.value.partition(":")[0].strip().partition(".")[0]
    return f"module:{top}", "an unknown distribution"


class ProviderHost:
    """One distribution's worker: started on first use, one call at a time."""

    def __init__(self, key: str, label: str):
        self.key, self.label = key, label
        self.broken: WorkerBroken | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_child = self._from_child = -1
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._next_id = 0
        self._listeners: list[Callable[[WorkerBroken], None]] = []

    # -- life --------------------------------------------------------------------------------

    def _start(self) -> None:
        child_read, to_child = os.pipe()
        from_child, child_write = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "llm_d_lens.hardware.provider_worker", str(child_read), str(child_write)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(child_read, child_write), start_new_session=True)
        except BaseException:
            for fd in (to_child, from_child):
                os.close(fd)
            raise
        finally:
            os.close(child_read)
            os.close(child_write)
        self._to_child, self._from_child = to_child, from_child

    def close(self) -> None:
        """End the worker and everything in its process group."""
        proc, self._proc = self._proc, None
        for fd in (self._to_child, self._from_child):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._to_child = self._from_child = -1
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()

    def on_broken(self, listener: Callable[[WorkerBroken], None]) -> None:
        with self._lock:
            self._listeners.append(listener)
            broken = self.broken
        if broken is not None:
            listener(broken)

    def _break(self, message: str, kind: str) -> WorkerBroken:
        failure = WorkerBroken(message, kind)
        self.broken = failure
        self.close()
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(failure)
        return failure

    # -- exchanges ---------------------------------------------------------------------------

    def build(self, handle: str, ep: EntryPoint, hooks: Sequence[str], *, timeout: float) -> dict[str, Any]:
        """Build ``ep``'s provider in the worker; its class name and hooks, or :class:`GuardedFailure`."""
        request = {"op": "build", "handle": handle, "path": list(sys.path), "hooks": list(hooks),
                   "entry": {"name": ep.name, "value": ep.value, "group": ep.group}}
        return self._exchange(request, "being built", timeout, None, "LENS_PLUGINS_TIMEOUT")

    def call(self, handle: str, method: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, timeout: float,
             answer: Callable[[dict[str, Any]], Any] | None = None, return_args: Sequence[int] = ()) -> dict[str, Any]:
        """Call a hook; its reply (``value``, and ``args`` when asked) or :class:`GuardedFailure`.

        ``args`` and ``kwargs`` are already encoded (:class:`Encoder`); ``answer`` serves the
        worker's callbacks to Lens's live objects.
        """
        request = {"op": "call", "handle": handle, "method": method, "args": list(args), "kwargs": dict(kwargs),
                   "return_args": list(return_args)}
        return self._exchange(request, f"in {method}()", timeout, answer, "LENS_PROVIDER_TIMEOUT")

    def _exchange(self, request: dict[str, Any], doing: str, timeout: float,
                  answer: Callable[[dict[str, Any]], Any] | None, setting: str) -> dict[str, Any]:
        with self._lock:
            if self.broken is not None:
                raise WorkerBroken(f"not called: its worker was ended earlier ({self.broken})", self.broken.kind)
            self._next_id += 1
            request["id"] = call_id = self._next_id
            try:
                if self._proc is None:
                    self._start()
                    self._receive("while starting", STARTUP_ALLOWANCE_SECONDS, "an interpreter's start")  # its ready line
                self._send(request)
                while True:
                    reply = self._receive(doing, timeout, setting)
                    if reply.get("id") != call_id:
                        continue  # not this call's: ignored
                    if "callback" not in reply:
                        break
                    self._send(self._serve_callback(reply["callback"], answer))
            except WorkerBroken:
                raise
            except BaseException:  # a real Ctrl-C of the user's, mid-call: end the worker, let it through
                self._break(f"interrupted {doing}", "interrupted")
                raise
        if not reply.get("ok"):
            error = str(reply.get("error") or "failed")
            kind = reply.get("kind") if reply.get("kind") in ("import", "raised", "answer") else "raised"
            raise HookFailed(error, kind)
        return reply

    @staticmethod
    def _serve_callback(callback: Any, answer: Callable[[dict[str, Any]], Any] | None) -> dict[str, Any]:
        if answer is None or not isinstance(callback, dict):
            return {"error": "nothing to call back here"}
        try:
            return {"answer": answer(callback)}
        except Exception as exc:  # noqa: BLE001 - a refused or failed callback is the hook's to handle
            return {"error": f"{type(exc).__name__}: {exc}"}

    def _send(self, message: Any) -> None:
        data = memoryview((json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode())
        try:
            while data:
                data = data[os.write(self._to_child, data):]
        except OSError:  # the worker is gone: the read says how
            pass

    def _receive(self, doing: str, timeout: float, setting: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        end = self._buffer.find(b"\n")
        with selectors.DefaultSelector() as selector:
            selector.register(self._from_child, selectors.EVENT_READ)
            while end < 0:
                if len(self._buffer) > MAX_ANSWER_BYTES:
                    raise self._break(f"answered with a line of more than {MAX_ANSWER_BYTES} bytes {doing}; "
                                      "its worker was ended", "answer")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._break(f"did not answer within {timeout:g} s {doing} ({setting}; a hang, or a loop "
                                      "that holds the interpreter); its worker was ended", "timeout")
                if not selector.select(remaining):
                    continue
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise self._break(f"{self._how_it_ended()} {doing}; its worker was ended", "crashed")
                found = chunk.find(b"\n")  # only the new bytes are searched: a long line costs its length once
                end = len(self._buffer) + found if found >= 0 else -1
                self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        try:
            from llm_d_lens.jsonread import loads

            reply = loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise self._break(f"answered with what is not one JSON object {doing}; its worker was ended", "answer")
        return reply

    def _how_it_ended(self) -> str:
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed its answers and went on"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"ended the process with exit code {code}"


# -- the hosts of this process -------------------------------------------------------------------

_hosts: dict[str, ProviderHost] = {}
_hosts_lock = threading.Lock()


def host_for(ep: EntryPoint) -> ProviderHost:
    key, label = host_key(ep)
    with _hosts_lock:
        host = _hosts.get(key)
        if host is None:
            host = _hosts[key] = ProviderHost(key, label)
        return host


def close_all() -> None:
    """End every worker and forget them (at exit; and between tests)."""
    with _hosts_lock:
        hosts = list(_hosts.values())
        _hosts.clear()
    for host in hosts:
        host.close()


atexit.register(close_all)


# -- Lens's side of a call -----------------------------------------------------------------------

def _field_names(value: Any) -> list[str] | None:
    if isinstance(value, type):
        return None
    if dataclasses.is_dataclass(value):
        return [f.name for f in dataclasses.fields(value)]
    fields = getattr(type(value), "__struct_fields__", None)  # msgspec
    if isinstance(fields, tuple):
        return list(fields)
    fields = getattr(type(value), "model_fields", None)  # pydantic
    if isinstance(fields, dict):
        return list(fields)
    return None


class Encoder:
    """Turns a call's arguments into what crosses: plain data, with Lens's live objects by reference."""

    def __init__(self) -> None:
        self.live: list[Any] = []

    def __call__(self, value: Any, depth: int = 0) -> Any:
        from llm_d_lens.hardware.models import HardwareProfile
        from llm_d_lens.hardware.plain import PlainRefused, to_plain

        if depth > 40:
            raise PlainRefused("an argument nested deeper than 40")
        if value is None or isinstance(value, (bool, int, float, str)):
            return to_plain(value)
        if isinstance(value, HardwareProfile):
            return {"__lens__": "profile", "payload": to_plain(value)}
        if isinstance(value, Mapping):
            items = {str(k): self(v, depth + 1) for k, v in value.items()}
            return {"__lens__": "map", "items": items} if "__lens__" in items else items
        if isinstance(value, (list, tuple)):
            return [self(v, depth + 1) for v in value]
        if callable(getattr(value, "arun", None)):
            return {"__lens__": "runner", "ref": self._ref(value)}
        if callable(getattr(value, "sleep", None)) and callable(getattr(value, "monotonic", None)):
            return {"__lens__": "clock", "ref": self._ref(value)}
        if hasattr(value, "runner") and not dataclasses.is_dataclass(value):
            cluster_id = getattr(value, "cluster_id", None) or getattr(value.runner, "context", None)
            return {"__lens__": "view", "runner": self(value.runner, depth + 1),
                    "cluster_id": cluster_id if isinstance(cluster_id, str) else None}
        names = _field_names(value)
        if names is not None:  # a dataclass or a contract model: an object of its fields, on the worker's side too
            return {"__lens__": "object", "fields": {name: self(getattr(value, name), depth + 1) for name in names}}
        raise PlainRefused(f"a {type(value).__name__} cannot be handed to a provider in another process")

    def _ref(self, value: Any) -> int:
        self.live.append(value)
        return len(self.live) - 1

    async def answer(self, callback: dict[str, Any]) -> Any:
        """Run what the worker asked of a live object; only these few operations are served."""
        target = self.live[int(callback["ref"])]
        op = callback.get("op")
        if op == "run" and callable(getattr(target, "arun", None)):
            timeout = callback.get("timeout")
            result = await target.arun([str(a) for a in callback["argv"]], input=callback.get("input"),
                                       env=callback.get("env") or None,
                                       timeout=float(timeout) if isinstance(timeout, (int, float)) else None, check=False)
            return {"argv": list(result.argv), "returncode": result.returncode, "stdout": result.stdout,
                    "stderr": result.stderr, "duration_seconds": result.duration_seconds}
        if op == "which" and callable(getattr(target, "which", None)):
            return target.which(str(callback["binary"]))
        if op == "monotonic" and callable(getattr(target, "monotonic", None)):
            return target.monotonic()
        if op == "sleep" and callable(getattr(target, "sleep", None)):
            await target.sleep(min(float(callback["seconds"]), 3600.0))
            return None
        raise ValueError(f"Lens does not serve {op!r} here")


def _remote_method(provider: RemoteProvider, name: str, described: dict[str, Any]) -> Callable[..., Any]:
    """A hook as Lens sees it: a function with the provider's own signature (so Lens offers what it asks
    for), a coroutine function when the provider's is one, whose body is the call to the worker."""
    if described.get("async"):
        async def method(*args: Any, **kwargs: Any) -> Any:
            return await provider.acall(name, args, kwargs)
    else:
        def method(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return provider.call(name, args, kwargs).get("value")
    params = []
    for pname, kind in described.get("params", []):
        with contextlib.suppress(KeyError, ValueError, TypeError):
            params.append(inspect.Parameter(str(pname), inspect._ParameterKind[str(kind)]))
    try:
        method.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    except ValueError:  # an order Python would not build: offer nothing by keyword
        method.__signature__ = inspect.Signature([])  # type: ignore[attr-defined]
    method.__name__ = method.__qualname__ = name
    return method


class RemoteProvider:
    """A third-party provider living in its distribution's worker; only its described hooks exist here."""

    def __init__(self, host: ProviderHost, handle: str, described: dict[str, Any]):
        self.host, self.handle = host, handle
        self.class_name = str(described.get("class") or "provider")
        self._hooks = {name: _remote_method(self, name, spec) for name, spec in (described.get("hooks") or {}).items()
                       if isinstance(spec, dict) and name != "profile"}
        self._has_profile = "profile" in (described.get("hooks") or {})

    @classmethod
    def build(cls, ep: EntryPoint, hooks: Sequence[str], *, timeout: float) -> RemoteProvider:
        host = host_for(ep)
        handle = f"{ep.group}:{ep.name}"
        return cls(host, handle, host.build(handle, ep, hooks, timeout=timeout))

    def __getattr__(self, name: str) -> Any:
        hooks = self.__dict__.get("_hooks", {})
        if name in hooks:
            return hooks[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"{self.class_name} (in the worker of {self.host.label})"

    def profile(self) -> Any:
        """The registered profile the provider's own ``profile()`` names (called in its worker, its id checked)."""
        if not self._has_profile:
            raise AttributeError("profile")
        value = self.call("profile", []).get("value")
        profile_id = value.get("id") if isinstance(value, dict) else None
        if not isinstance(profile_id, str):
            return value
        from llm_d_lens.hardware.registry import get_profile

        return get_profile(profile_id)

    def call(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None, *,
             return_args: Sequence[int] = ()) -> dict[str, Any]:
        """A call with plain arguments only (no callbacks), from synchronous code."""
        encode = Encoder()
        return self.host.call(self.handle, method, [encode(a) for a in args], {k: encode(v) for k, v in (kwargs or {}).items()},
                              timeout=call_timeout_from_env(), return_args=return_args)

    async def acall(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """A call from async code: the wait runs on a thread, callbacks on this event loop. Returns the plain value."""
        import asyncio  # only a server awaits a provider: a command that reads profiles never pays for it

        encode = Encoder()
        encoded_args, encoded_kwargs = [encode(a) for a in args], {k: encode(v) for k, v in kwargs.items()}
        loop = asyncio.get_running_loop()

        def answer(callback: dict[str, Any]) -> Any:
            return asyncio.run_coroutine_threadsafe(encode.answer(callback), loop).result()

        reply = await asyncio.to_thread(self.host.call, self.handle, method, encoded_args, encoded_kwargs,
                                        timeout=call_timeout_from_env(), answer=answer)
        return reply.get("value")


def provider_name(provider: Any) -> str:
    """The provider's own class name, wherever it lives."""
    return provider.class_name if isinstance(provider, RemoteProvider) else type(provider).__name__
