"""Run a command with stderr on a pseudo-terminal, as a person at a shell would, for progress tests.

Progress is drawn only when stderr is a terminal; a pipe (``capture_output``) never is, so the
terminal case needs a real pty. stdout stays a pipe, as in ``lens ... > file`` at a terminal.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TtyRun:
    returncode: int
    stdout: str
    stderr: str  # what the terminal received, escape sequences included


def run_with_terminal_stderr(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> TtyRun:
    """``argv`` run to completion with stderr on a fresh pty (80 columns); everything it wrote, decoded."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        process = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                                   env=None if env is None else dict(env))
    finally:
        os.close(slave)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read() if process.stdout else b""), daemon=True)
    reader.start()  # a large stdout must not block the command while its terminal is read
    received = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            process.kill()
            raise TimeoutError(f"{argv[0]} wrote nothing to its terminal for {timeout} s")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    process.wait(timeout)
    reader.join(timeout)
    return TtyRun(process.returncode, b"".join(out).decode(), received.decode(errors="replace"))
