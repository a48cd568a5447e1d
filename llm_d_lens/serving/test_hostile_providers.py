"""``lens serve --demo`` with every hostile provider kind pip-installed: it lives, and /readyz names each.

Each kind is a real plugin project (``pyproject.toml``, setuptools), built into a wheel and installed
with pip into a throwaway virtual environment, whose Python then runs ``lens serve --demo``. Some
providers attack while they are built (exit, segfault, a GIL-holding regex, a hang), some in a later
call, while the server serves (``GET /api/v1/drivers/status`` calls the provider's own
``driver_status``). Every call is a problem+json 502 ``PROVIDER_FAILED``; ``/healthz`` stays 200;
``/readyz`` is 503 and names every distribution whose worker died or hung; a hook that merely raised
(``sys.exit``, a ``BaseException``) keeps its worker and answers the same coded refusal again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from llm_d_lens.testing.pip_install import throwaway_venv, venv_install
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.testing.prometheus import free_port

PRELUDE = "import ctypes, os, re, sys, time\n\n\nclass Boom(BaseException):\n    pass\n\n\n"
#: profile id -> (when it attacks: build | call, the attack)
KINDS = {
    "exitinit": ("build", "os._exit(7)"),
    "segvimport": ("import", "ctypes.string_at(0)"),
    "gilinit": ("build", "re.match(r'(a*)*b', 'a' * 64)"),
    "hanginit": ("build", "time.sleep(600)"),
    "exitcall": ("call", "os._exit(7)"),
    "segvcall": ("call", "ctypes.string_at(0)"),
    "hangcall": ("call", "time.sleep(600)"),
    "gilcall": ("call", "re.match(r'(a*)*b', 'a' * 64)"),
    "hugecall": ("call", "return ['x' * (20 * 1024 * 1024)]"),
    "sysexitcall": ("raises", "sys.exit(3)"),
    "basecall": ("raises", "raise Boom('not an Exception')"),
}
SAYS = {"exitinit": "exit code 7", "segvimport": "SIGSEGV", "gilinit": "did not answer within 2 s",
        "hanginit": "did not answer within 2 s", "exitcall": "exit code 7 in driver_status()",
        "segvcall": "SIGSEGV in driver_status()", "hangcall": "did not answer within 2 s in driver_status()",
        "gilcall": "did not answer within 2 s in driver_status()", "hugecall": "more than 16777216 bytes",
        "sysexitcall": "SystemExit: 3", "basecall": "Boom: not an Exception"}


def project(root: Path, pid: str) -> Path:
    when, attack = KINDS[pid]
    folder = root / f"{pid}-lens"
    package = folder / f"{pid}_lens"
    package.mkdir(parents=True)
    (package / "profile.json").write_text(json.dumps([minimal_profile(pid)]))
    (package / "__init__.py").write_text("import json, pathlib\n\n\ndef load_profiles():\n"
                                         "    return json.loads((pathlib.Path(__file__).parent / 'profile.json').read_text())\n")
    source = [PRELUDE]  # the provider in a module of its own: its profile loads as any plugin's
    if when == "import":
        source.append(f"{attack}\n\n\n")
    source.append("class Provider:\n")
    if when == "build":
        source.append(f"    def __init__(self):\n        {attack}\n\n")
    body = attack if when in ("call", "raises") else "return []"
    source.append(f"    async def driver_status(self, access_mode, *, cluster_id):\n        {body}\n")
    (package / "provider.py").write_text("".join(source))
    (folder / "pyproject.toml").write_text(f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{pid}-lens"
version = "1.0.0"

[project.entry-points."llm_d_lens.hardware.profiles"]
{pid} = "{pid}_lens:load_profiles"

[project.entry-points."llm_d_lens.hardware.providers"]
{pid} = "{pid}_lens.provider:Provider"

[tool.setuptools]
packages = ["{pid}_lens"]

[tool.setuptools.package-data]
"{pid}_lens" = ["profile.json"]
''')
    return folder


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        assert error.headers["content-type"] == "application/problem+json", error.headers["content-type"]
        return error.code, json.load(error)


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    python = throwaway_venv(root / "venv")
    venv_install([project(root / "projects", pid) for pid in KINDS], python)
    return python


def test_serve_demo_lives_with_every_hostile_provider_and_readyz_names_each(venv_python: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LENS_PLUGINS_TIMEOUT="2", LENS_PROVIDER_TIMEOUT="2", LENS_CLUSTER_WATCH="0", LENS_CACHE_DIR=str(tmp_path))
    process = subprocess.Popen([str(venv_python), "-m", "llm_d_lens.cli", "serve", "--demo", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if get(f"{base}/healthz")[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "the server never answered /healthz"
                time.sleep(0.2)
        called = [pid for pid, (when, _) in KINDS.items() if when in ("call", "raises")]
        with ThreadPoolExecutor(len(called)) as pool:  # one worker per distribution: the calls run side by side
            answers = dict(zip(called, pool.map(lambda pid: get(f"{base}/api/v1/drivers/status?hardware={pid}"), called)))
        for pid, (status, body) in answers.items():
            assert status == 502 and body["code"] == "PROVIDER_FAILED", (pid, status, body)
            assert f"of '{pid}'" in body["detail"] and SAYS[pid] in body["detail"], (pid, body["detail"])
        for pid in ("sysexitcall", "basecall"):  # its worker lives: the same coded answer again
            status, body = get(f"{base}/api/v1/drivers/status?hardware={pid}")
            assert status == 502 and SAYS[pid] in body["detail"] and "not called" not in body["detail"]
        assert get(f"{base}/healthz")[0] == 200
        status, ready = get(f"{base}/readyz")
        assert status == 503 and ready["code"] == "NOT_READY"
        named = {p["name"]: p for p in ready["problems"] if p["kind"] == "provider"}
        for pid, (when, _) in KINDS.items():
            if when == "raises":
                assert pid not in named
                continue
            assert pid in named, (pid, sorted(named))
            assert named[pid]["distribution"] == f"{pid}-lens 1.0.0" and SAYS[pid] in named[pid]["reason"], named[pid]
        status, nvidia = get(f"{base}/api/v1/hardware/nvidia")
        assert status == 200 and nvidia["id"] == "nvidia", "every other hardware carries on"
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
