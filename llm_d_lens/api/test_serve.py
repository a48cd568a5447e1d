"""`lens serve` really serves the API over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

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


def _get(port: int, path: str, host: str) -> tuple[int, str, dict]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        body = response.read()
        return response.status, response.getheader("content-type", ""), json.loads(body) if body.startswith(b"{") else {}
    finally:
        connection.close()


def _serving(*args: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", str(port), *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
            return process, port
        except (urllib.error.URLError, ConnectionError):
            assert process.poll() is None
            time.sleep(0.1)
    process.kill()
    raise AssertionError("lens serve did not start")


def test_a_foreign_host_header_is_refused_before_routing_dns_rebinding():
    """It answered any Host: a page whose name was rebound to 127.0.0.1 read the console and the API."""
    process, port = _serving()
    try:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST"):
            assert _get(port, "/api/v1/hardware/capabilities", host)[0] == 200, host
        for host in (f"evil.example:{port}", "127.0.0.1.evil.example", "\x1b[2Jevil"):
            status, kind, body = _get(port, "/", host)
            assert status == 400 and kind == "application/problem+json" and body["code"] == "HOST_NOT_ALLOWED", host
            assert "\x1b" not in json.dumps(body, ensure_ascii=False)
        assert _get(port, "/api/v1/hardware/capabilities", f"evil.example:{port}")[0] == 400
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_allowed_host_names_the_hosts_the_server_answers_to():
    process, port = _serving("--allowed-host", "lens.example.com", "--allowed-host", "*.lens.internal")
    try:
        assert _get(port, "/api/v1/hardware/capabilities", "lens.example.com")[0] == 200
        assert _get(port, "/api/v1/hardware/capabilities", f"a.b.lens.internal:{port}")[0] == 200
        for host in ("lens.internal.evil", "evil.example", f"127.0.0.1:{port}"):  # the given names replace the default
            assert _get(port, "/api/v1/hardware/capabilities", host)[0] == 400, host
        assert _get(port, "/readyz", "10.1.2.3:8080")[0] in (200, 503)  # a kubelet's probe by the pod's address
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_port_no_socket_can_have_is_a_usage_error_not_a_traceback():
    # 99999 reached socket.bind before, which raised OverflowError with Python's traceback
    done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", "99999"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "Invalid value for '--port': 99999 is not in the range 0<=x<=65535." in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("variable", "code"), [("LENS_CLUSTER_WATCH", "SETTING_INVALID"),
                                                ("LENS_WATCH_MAX_EVENT_BYTES", "SERVER_NOT_CONFIGURED")])
def test_a_bad_watch_setting_is_refused_before_the_server_starts(variable, code):
    # read first by the app's start-up, it was uvicorn's traceback and "Application startup failed"
    env = {**os.environ, variable: "garbage"}
    done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {code}: {variable}=") and "Traceback" not in done.stderr
    assert "Uvicorn running" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_port_in_use_is_one_coded_line_before_anything_starts():
    # uvicorn logged "[Errno 98] ... address already in use" after the app's start-up and exited 3
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "serve", "--port", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"error: SERVE_ADDRESS_UNUSABLE: --host 127.0.0.1 --port {port}: Address already in use\n"
