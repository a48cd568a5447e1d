"""Stopping a server a test started: politely first, then for certain, never leaving it behind."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL and reap."""
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
