"""`lens serve` really serves the API over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

from llm_d_lens.testing.prometheus import free_port


def test_lens_serve_answers_healthz_and_capabilities():
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline and health is None:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1) as r:
                    health = json.load(r)
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                time.sleep(0.1)
        assert health == {"status": "ok", "version": "0.1.0"}
        with urllib.request.urlopen(f"{base}/api/v1/hardware/capabilities", timeout=5) as r:
            body = json.load(r)
        assert len(body["profiles"]) == 6
        try:
            urllib.request.urlopen(f"{base}/api/v1/hardware/unknown-thing", timeout=5)
        except urllib.error.HTTPError as error:
            assert error.code == 404 and error.headers["content-type"] == "application/problem+json"
        else:
            raise AssertionError("an unknown hardware must be a 404")
    finally:
        process.terminate()
        process.wait(10)
