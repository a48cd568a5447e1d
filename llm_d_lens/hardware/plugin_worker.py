"""The child process that imports third-party profile plugins, so none of them can hurt Lens.

``python -m llm_d_lens.hardware.plugin_worker FD`` reads a JSON request on stdin (``sys.path`` and
a list of entry points) and writes one JSON line per event to file descriptor ``FD``:
``{"start": i}`` before entry point ``i`` is touched, then ``{"done": i, ...}`` with either its
payloads (as JSON) or a failure. Whatever a plugin does (``sys.exit()``, ``KeyboardInterrupt``,
printing, returning a cycle) is caught here and turned into a record; a plugin that hangs or kills
the process is noticed by the parent (``isolation.py``), which knows which ``start`` had no ``done``.

Each plugin's stdout and stderr (the file descriptors, not just ``sys.stdout``) go to a scratch
file while it loads, so nothing it prints can reach the user's terminal or ``-o json``.
Deliberately imports nothing from Lens: a plugin pays for what it imports itself.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from typing import Any

from llm_d_lens.hardware.entry_points import EntryPoint

#: how much of a plugin's stray output a failure record quotes
OUTPUT_QUOTE = 200

_interrupted = False


def _on_sigint(signum: int, frame: Any) -> None:
    """A real Ctrl-C: remembered, so a plugin raising KeyboardInterrupt itself is told apart."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _load(entry: dict[str, str]) -> dict[str, Any]:
    """Load one entry point and call it; the record says what came back or what went wrong."""
    ep = EntryPoint(name=entry["name"], value=entry["value"], group=entry["group"])
    stage = "import"
    try:
        target = ep.load()
        if not callable(target):
            return {"kind": "not-callable", "error": f"{ep.value} is not callable; it must be a load_profiles() "
                                                     "returning a list of profiles"}
        stage = "call"
        payloads = target()
        stage = "payload"
        text = json.dumps(payloads, allow_nan=False)
    except KeyboardInterrupt:
        if _interrupted:
            raise
        return {"kind": stage, "error": _describe(ep, stage, KeyboardInterrupt())}
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are a plugin's failure here
        return {"kind": stage, "error": _describe(ep, stage, exc)}
    return {"payloads": json.loads(text)}


def _describe(ep: EntryPoint, stage: str, exc: BaseException) -> str:
    what = f"{type(exc).__name__}: {exc}".rstrip(": ") if str(exc) else type(exc).__name__
    if stage == "import":
        return f"import of {ep.value} failed: {what}"
    if stage == "call":
        return f"{ep.value}() failed: {what}"
    return f"{ep.value}() returned something that is not JSON ({what})"


class _Captured:
    """Points fds 1 and 2 at a scratch file for one plugin's load, then puts them back."""

    def __enter__(self) -> _Captured:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)

    def text(self) -> str:
        self.file.seek(0)
        data = self.file.read(OUTPUT_QUOTE + 1)
        self.file.close()
        return data.decode("utf-8", "replace")


def main(argv: list[str]) -> int:
    records = os.fdopen(int(argv[0]), "w", buffering=1, encoding="utf-8")
    request = json.loads(sys.stdin.read())
    sys.path[:] = request["path"]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # started ignoring Ctrl-C (nohup, a background job): keep to it
        signal.signal(signal.SIGINT, _on_sigint)

    def emit(record: dict[str, Any]) -> None:
        records.write(json.dumps(record) + "\n")
        records.flush()

    try:
        for index, entry in enumerate(request["entry_points"]):
            emit({"start": index})
            with _Captured() as captured:
                result = _load(entry)
            output = captured.text()
            if output and "error" not in result:
                quoted = output[:OUTPUT_QUOTE].strip()
                result = {"kind": "output", "error": f"wrote to stdout/stderr while loading (a plugin must stay "
                                                     f"silent, or it would corrupt -o json): {quoted!r}"}
            emit({"done": index, **result})
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # a plugin's leftover threads or atexit hooks must not keep this process alive
