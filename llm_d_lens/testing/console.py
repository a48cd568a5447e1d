"""A real ``lens serve`` for tests and benchmarks, and how Debian's Chromium is launched headless here.

The flags keep Chromium from reaching for the network on its own (background updates, sync,
component downloads): on a closed machine those fail noisily, and a test of "no request leaves the
server's origin" must only see the page's own requests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from llm_d_lens.testing.processes import stop
from llm_d_lens.testing.prometheus import free_port

CHROMIUM = os.environ.get("LENS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@contextmanager
def lens_serve(env: dict[str, str], *args: str) -> Iterator[str]:
    """A real ``lens serve`` on 127.0.0.1 with ``env`` on top of a clean server environment; yields its URL."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LENS_", "LLM_D_"))}
    process = subprocess.Popen([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", str(port), *args],
                               env={**clean, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"lens serve exited with {process.returncode}: {process.stderr.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("lens serve did not answer /healthz within 30 s") from None
                time.sleep(0.1)
        yield url
    finally:
        stop(process)


@contextmanager
def serve_in_process() -> Iterator[str]:
    """The real app under a real uvicorn in a thread of this process (so a test can hand it a recording runner);
    the environment is the caller's (set it first). Yields its URL."""
    import threading

    import uvicorn

    from llm_d_lens.api.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the in-process server did not start within 30 s")
            time.sleep(0.05)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
