"""Third-party profile plugins are loaded in a child process, bounded in time, and cached.

Why a process: a plugin's import can do anything (``sys.exit()``, raise ``KeyboardInterrupt``,
hang, print to stdout, kill the interpreter) and ``load_profiles()`` can return anything. In
here none of that can stop Lens: the child (``plugin_worker.py``) reports one record per entry
point, and what it cannot report (a hang, a crash) this side infers from the last ``start`` seen.
A hanging plugin is reported once it exceeds ``LENS_PLUGINS_TIMEOUT`` seconds; the child is then
killed and a new one loads the remaining entry points.

One child per distribution, each with its own record pipe: the records a child writes are read
only for that distribution's own entry points, so a plugin that writes loader records (``done``
for another index, a forged ``start``) can at most misreport its own distribution's profiles,
never disable another's. Each child is the leader of its own process group, and the group is
killed once the child has ended, so what a plugin spawns at import does not outlive the load.

Why a cache: spawning an interpreter on every command would make the common case (nothing
installed or changed since the last run) slower than loading in-process. The outcome, which is
plain JSON (payloads or failure reasons), is stored under ``LENS_CACHE_DIR`` (default
``$XDG_CACHE_HOME/llm-d-lens``), keyed by the content of what a load reads: every loaded distribution's metadata and the files
of the plugin's package wherever the import system finds it (``site-packages``, a folder on
``PYTHONPATH``, or an editable install's own project folder); reinstalling, upgrading or editing a
plugin changes the key. A load that timed out or was interrupted (Ctrl-C, a kill from outside, the
OOM killer) is never kept: it says something of that moment, not of the plugin, and is tried again
on the next run; a crash of the plugin's own (an exit code, a segfault) is kept like any outcome. ``lens hardware
doctor`` never reads the cache. Payloads are still validated in this process on every run.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from llm_d_lens import __version__, settings
from llm_d_lens.hardware.entry_points import EntryPoint

if TYPE_CHECKING:  # a run with no third-party plugin spawns no child and hashes no plugin file
    import subprocess

DEFAULT_TIMEOUT_SECONDS = 5.0
#: an interpreter has to start before the first plugin's clock runs
STARTUP_ALLOWANCE_SECONDS = 15.0
CACHE_FORMAT = 3  # 2: keyed on file content, found through the import system; 3: loaded per distribution
#: how much of a provider's stray output a failure quotes
OUTPUT_QUOTE = 200
#: the longest record a loader may send (1,000 profiles of a few KiB each are well under it)
MAX_RECORD_BYTES = 64 * 1024 * 1024
#: how often a silent loader is checked for having ended while a process it spawned keeps the pipe open
EXIT_CHECK_SECONDS = 0.5


class Outcome(msgspec.Struct, frozen=True):
    """What loading one entry point gave: its payloads, or why it failed (``kind`` says how)."""

    payloads: Any = None
    error: str | None = None
    kind: str | None = None  # import | call | payload | not-callable | output | timeout | crashed | interrupted

    def to_dict(self) -> dict[str, Any]:
        return {"payloads": self.payloads, "error": self.error, "kind": self.kind}


def timeout_from_env(env: Mapping[str, str] | None = None) -> float:
    """``LENS_PLUGINS_TIMEOUT``: seconds one plugin may take to load (default 5); anything but 0 < n < 3600 is refused."""
    raw = settings.text("LENS_PLUGINS_TIMEOUT", env)
    if raw is None:
        return DEFAULT_TIMEOUT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < 3600:  # also false for NaN
        raise settings.SettingInvalid(f"LENS_PLUGINS_TIMEOUT={raw[:40]}: give the seconds one plugin may take to load, "
                                      "more than 0 and less than 3600", details={"variable": "LENS_PLUGINS_TIMEOUT",
                                                                                "value": raw[:40]})
    return value


def _entry(ep: EntryPoint) -> dict[str, str]:
    """What the worker needs of ``ep``, and ``dist``: which distribution's child loads it."""
    name, _version = dist_meta(ep)
    location = ep.dist.path if ep.dist is not None else ""
    return {"name": ep.name, "value": ep.value, "group": ep.group, "dist": f"{name}\0{location}"}


_dist_meta: dict[int, tuple[str, str]] = {}


def dist_meta(ep: EntryPoint) -> tuple[str, str]:
    """(name, version) of the entry point's distribution, ``("", "")`` if unknown; memoised per discovery."""
    dist = ep.dist
    if dist is None:
        return "", ""
    key = id(dist)
    if key not in _dist_meta:
        _dist_meta[key] = (dist.name or "", dist.version or "")
    return _dist_meta[key]


def forget_dist_meta() -> None:
    _dist_meta.clear()


#: what a failed load says of the moment, not of the plugin: never kept, tried again on the next run.
#: A crash (an exit code, a segfault) is the plugin's own doing and is kept like any outcome: its
#: files unchanged, it would crash again
TRANSIENT = frozenset({"timeout", "interrupted"})
#: exit codes of a loader ended from outside (Ctrl-C, kill, the OOM killer's SIGKILL), not by the plugin
_FROM_OUTSIDE = frozenset({130, -signal.SIGINT, -signal.SIGTERM, -signal.SIGHUP, -signal.SIGKILL})


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _dist_stamp(ep: EntryPoint) -> list[Any]:
    """The content of what loading ``ep`` reads: its distribution's metadata and its package's files."""
    dist = ep.dist
    if dist is None:
        return ["", "", ""]
    name, version = dist_meta(ep)
    location = dist.path
    metadata = [_file_digest(os.path.join(location, meta)) for meta in ("entry_points.txt", "METADATA", "RECORD")]
    top = ep.value.partition(":")[0].strip().partition(".")[0]
    return [name, version, location, metadata, package_digest(top)]


def package_digest(top: str) -> str:
    """A digest of every file of the importable package (or module) ``top``, wherever it is imported from.

    Found the way ``import`` finds it (``importlib.util.find_spec``, which asks the import system's
    finders without running the package), so a plugin on ``PYTHONPATH``, in ``site-packages`` or
    installed in development mode (``pip install -e``, whose finder maps the name to the project's
    own folder, which is on no ``sys.path`` entry) is keyed on the files it loads from. Content,
    not timestamps: an edit that keeps the size and the second still changes the key.
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError, AttributeError):  # a broken finder or package: the load reports it
        return ""
    if spec is None:
        return ""
    roots = list(spec.submodule_search_locations or ()) or ([spec.origin] if spec.origin else [])
    from hashlib import sha256  # only a run with third-party plugins hashes them (OpenSSL's start is not free)

    digest = sha256()
    for root in roots:
        if os.path.isfile(root):
            digest.update(f"{root}\0{_file_digest(root)}\0".encode())
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for file in sorted(files):
                path = os.path.join(folder, file)
                digest.update(f"{path}\0{_file_digest(path)}\0".encode())
    return digest.hexdigest()


def _file_digest(path: str) -> str | None:
    try:
        from hashlib import sha256

        with open(path, "rb") as handle:
            return sha256(handle.read()).hexdigest()
    except OSError:
        return None


def cache_key(eps: Sequence[EntryPoint]) -> str:
    from hashlib import sha256

    digest = sha256()
    digest.update(json.dumps([CACHE_FORMAT, __version__, sys.executable, sys.version]).encode())
    for ep in eps:
        digest.update(json.dumps([_entry(ep), _dist_stamp(ep)], default=str).encode())
    return digest.hexdigest()[:32]


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    chosen = settings.text("LENS_CACHE_DIR", env)
    if chosen:
        return Path(chosen)
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llm-d-lens"


def _read_cache(path: Path, count: int) -> list[Outcome] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        outcomes = [Outcome(item["payloads"], item["error"], item["kind"]) for item in data["outcomes"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return outcomes if len(outcomes) == count else None


def _write_cache(path: Path, outcomes: list[Outcome]) -> None:
    """Best effort: a read-only or full disk only costs the next run a reload."""
    try:
        import tempfile  # a write follows a fresh load only: a command served from the cache never imports it

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".plugins-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"format": CACHE_FORMAT, "outcomes": [o.to_dict() for o in outcomes]}, handle)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        pass


def load_entry_points(eps: Sequence[EntryPoint], *, timeout: float | None = None, use_cache: bool = True,
                      env: Mapping[str, str] | None = None) -> list[Outcome]:
    """One outcome per entry point, in order; from the cache when nothing installed changed."""
    if not eps:
        return []
    timeout = timeout_from_env(env) if timeout is None else timeout
    path = cache_dir(env) / f"plugins-{cache_key(eps)}.json"
    if use_cache:
        cached = _read_cache(path, len(eps))
        if cached is not None:
            return cached
    outcomes = run_isolated([_entry(ep) for ep in eps], timeout=timeout)
    if not any(o.kind in TRANSIENT for o in outcomes):  # a busy machine or a signal says nothing of the plugin
        _write_cache(path, outcomes)
    return outcomes


def run_isolated(entries: list[dict[str, str]], *, timeout: float) -> list[Outcome]:
    """Load ``entries`` in child processes, one distribution (``dist``) per child, in order.

    A hang or crash costs one entry, never the rest; a child's records count only for its own
    distribution's entries.
    """
    outcomes: dict[int, Outcome] = {}
    by_dist: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        by_dist.setdefault(entry.get("dist", ""), []).append(index)
    groups = list(by_dist.values())
    if len(groups) == 1:
        answers = [_run_distribution([entries[i] for i in groups[0]], timeout)]
    else:  # a few distributions at a time: most of a load is an interpreter starting
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(len(groups), PARALLEL_LOADS), thread_name_prefix="lens-plugins") as pool:
            futures = [pool.submit(_run_distribution, [entries[i] for i in indices], timeout) for indices in groups]
            try:
                answers = [future.result() for future in futures]
            except BaseException:  # a real Ctrl-C (in this, the main thread): end every loader, then let it through
                for future in futures:
                    future.cancel()
                with _live_lock:
                    for proc in list(_live):
                        _kill_group(proc)
                raise
    for indices, answer in zip(groups, answers):
        for local, outcome in enumerate(answer):
            outcomes[indices[local]] = outcome
    return [outcomes[i] for i in range(len(entries))]


#: distributions loaded at once (each in its own child)
PARALLEL_LOADS = max(2, min(4, os.cpu_count() or 2))
#: the loaders running now, so a Ctrl-C in the main thread can end those its pool threads started
_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()


def _run_distribution(entries: list[dict[str, str]], timeout: float) -> list[Outcome]:
    """Load one distribution's ``entries``; a hang or crash costs one entry, and a new child loads the rest."""
    outcomes: dict[int, Outcome] = {}
    pending = list(range(len(entries)))
    while pending:
        batch = pending
        results, stuck = _one_child([entries[i] for i in batch], timeout)
        for local, outcome in results.items():
            outcomes[batch[local]] = outcome
        if stuck is None:  # the child ended on its own: anything unreported crashed with it
            for local in range(len(batch)):
                outcomes.setdefault(batch[local], Outcome(error="the loading process ended before this plugin "
                                                                "was reached; it is tried again on the next run",
                                                          kind="interrupted"))
            break
        local, outcome = stuck
        outcomes[batch[local]] = outcome
        pending = batch[local + 1:]
    return [outcomes[i] for i in range(len(entries))]


def _one_child(entries: list[dict[str, str]], timeout: float) -> tuple[dict[int, Outcome], tuple[int, Outcome] | None]:
    """Run one worker; returns what it reported and, if it hung or died mid-plugin, that plugin."""
    import subprocess
    import tempfile

    read_fd, write_fd = os.pipe()
    request = json.dumps({"path": list(sys.path), "entry_points": [
        {key: entry[key] for key in ("name", "value", "group")} for entry in entries]})
    with tempfile.TemporaryFile() as stray:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "llm_d_lens.hardware.plugin_worker", str(write_fd)],
                stdin=subprocess.PIPE, stdout=stray, stderr=stray, pass_fds=(write_fd,), start_new_session=True,
            )
        finally:
            os.close(write_fd)
        with _live_lock:
            _live.add(proc)
        try:
            assert proc.stdin is not None
            proc.stdin.write(request.encode())
            proc.stdin.close()
        except OSError:
            pass
        try:
            return _collect(proc, read_fd, len(entries), timeout)
        except BaseException:  # a real Ctrl-C of the user's: stop the child too, then let it through
            _kill_group(proc)
            proc.wait()
            raise
        finally:
            with _live_lock:
                _kill_group(proc)  # what the plugins spawned; the group outlives its ended (unreaped) leader
                _live.discard(proc)
            proc.wait()
            os.close(read_fd)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group. Safe while the child is unreaped: its pid, hence the group's id, is still its own."""
    if proc.returncode is not None:  # reaped: the id may name someone else's group by now
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _ended(proc: subprocess.Popen[bytes]) -> int:
    """Wait for the child to exit, end what is left of its group, then reap it; its exit code."""
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
    except ChildProcessError:
        pass
    _kill_group(proc)
    return proc.wait()


def _collect(proc: subprocess.Popen[bytes], read_fd: int, count: int, timeout: float
             ) -> tuple[dict[int, Outcome], tuple[int, Outcome] | None]:
    """Read the child's records until it ends; what it reported and, if it hung or died mid-plugin, that plugin.

    A record counts only for an index of this child's own; the clock restarts only on progress (a
    plugin started or finished for the first time), so a plugin writing records cannot hold it off.
    """
    results: dict[int, Outcome] = {}
    current: int | None = None
    started: set[int] = set()
    deadline = time.monotonic() + STARTUP_ALLOWANCE_SECONDS + timeout
    buffer = bytearray()
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)

    def stuck(outcome: Outcome) -> tuple[dict[int, Outcome], tuple[int, Outcome] | None]:
        _kill_group(proc)
        proc.wait()
        index = current if current is not None else len(results)
        if index >= count or index in results:  # all reported; something else held the pipe open
            return results, None
        return results, (index, outcome)

    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return stuck(Outcome(error=f"did not finish loading within {timeout:g} s (LENS_PLUGINS_TIMEOUT); "
                                           "skipped", kind="timeout"))
            if not selector.select(min(remaining, EXIT_CHECK_SECONDS)):
                if _has_exited(proc) and not selector.select(0):  # ended, but a process it spawned holds the pipe
                    chunk = b""
                else:
                    continue
            else:
                chunk = os.read(read_fd, 1 << 20)
            if not chunk:  # the child closed its end (or ended): it finished or died
                code = _ended(proc)
                if current is not None and current not in results:
                    if code in _FROM_OUTSIDE:  # killed or interrupted from outside: not the plugin's doing
                        return results, (current, Outcome(error=f"loading was interrupted (exit code {code}); it is "
                                                                "tried again on the next run", kind="interrupted"))
                    if code < 0:  # a signal the plugin's own code raised: a segfault, an abort, a bus error
                        return results, (current, Outcome(error=f"the loading process was killed by {_signal_name(-code)} "
                                                                "while loading this plugin", kind="crashed"))
                    return results, (current, Outcome(error=f"the loading process died (exit code {code}) while "
                                                            "loading this plugin", kind="crashed"))
                return results, None
            searched = len(buffer)
            buffer += chunk
            if buffer.find(b"\n", searched) < 0:
                if len(buffer) > MAX_RECORD_BYTES:
                    return stuck(Outcome(error=f"sent a record of more than {MAX_RECORD_BYTES} bytes (a payload that "
                                               "large is refused unread)", kind="payload"))
                continue
            *lines, rest = bytes(buffer).split(b"\n")
            buffer = bytearray(rest)
            for line in lines:
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # not the worker's: a plugin wrote to a descriptor it should not know
                    continue
                if not isinstance(record, dict):
                    continue
                start, done = record.get("start"), record.get("done")
                progress = False
                # only this child's own entries (all of one distribution): an index out of range is no one's
                if type(start) is int and 0 <= start < count:
                    current = start
                    progress = start not in started
                    started.add(start)
                elif type(done) is int and 0 <= done < count:
                    error, kind = record.get("error"), record.get("kind")
                    progress = done not in results
                    results[done] = Outcome(record.get("payloads"), error if isinstance(error, str) or error is None
                                            else str(error)[:OUTPUT_QUOTE],
                                            kind if isinstance(kind, str) or kind is None else "payload")
                if progress:
                    deadline = time.monotonic() + timeout
    finally:
        selector.close()


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without reaping it (its group id stays its own)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def call_guarded(fn: Any, *, timeout: float) -> Any:
    """Run ``fn()`` (the import or construction of one of Lens's own providers) so that nothing it does escapes.

    Lens's own providers are live objects and load in this process, on first use (a third-party
    provider never does: ``provider_host.py`` builds and calls it in a worker). Any ``BaseException``
    but a real Ctrl-C, a hang past ``timeout`` (the call is left behind on a daemon thread) and
    output on ``sys.stdout``/``sys.stderr`` become a :class:`GuardedFailure` naming what went wrong.
    """
    import contextlib
    import io
    import threading

    box: dict[str, Any] = {}
    printed = io.StringIO()

    def run() -> None:
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt of its own, anything
            box["error"] = exc

    worker = threading.Thread(target=run, name="lens-provider-load", daemon=True)
    worker.start()
    worker.join(timeout)  # a real Ctrl-C raises KeyboardInterrupt here, in the main thread, and goes on up
    if worker.is_alive():
        raise GuardedFailure(f"did not finish loading within {timeout:g} s (LENS_PLUGINS_TIMEOUT)", "timeout")
    if "error" in box:
        exc = box["error"]
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise GuardedFailure(what, "import")
    text = printed.getvalue()
    if text:
        raise GuardedFailure(f"wrote to stdout/stderr while loading (a plugin must stay silent): {text[:OUTPUT_QUOTE].strip()!r}",
                             "output")
    return box["value"]



class GuardedFailure(Exception):
    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind
