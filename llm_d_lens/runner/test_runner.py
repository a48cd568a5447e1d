"""The runner against real processes, and the FakeRunner every domain's tests will lean on.

Real-process tests use only the Python running the tests and coreutils, so they pass on any
Debian machine without kubectl or helm: a tiny script stands in for kubectl and reports the
exact argv it received. Async tests use ``asyncio.run`` so they need no pytest plugin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_d_lens.errors import LensError
from llm_d_lens.runner import DEFAULT_TIMEOUT, CommandError, CommandFailed, CommandNotFound, CommandOutputInvalid, CommandResult, CommandRunner, CommandTimedOut, InvalidCommand, Runner, format_command, redact
from llm_d_lens.testing.fake_runner import FakeReply, FakeRunner

PY = sys.executable
PRINT_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"
MISSING = "lens-test-no-such-binary-7f3a"


def py(code: str, *args: str) -> list[str]:
    return [PY, "-c", code, *args]


@pytest.fixture
def argv_printer(tmp_path: Path) -> str:
    """An executable that prints the argv it received as JSON: a stand-in for kubectl/helm."""
    script = tmp_path / "print-argv"
    script.write_text(f"#!{PY}\n{PRINT_ARGV}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def sleeper(marker: Path, delay: float = 0.6) -> list[str]:
    """A process that, if it survives ``delay`` seconds, leaves a marker file behind."""
    return py(f"import time, pathlib; time.sleep({delay}); pathlib.Path({str(marker)!r}).write_text('alive')")


# --------------------------------------------------------------------------------------------
# The real runner: output, exit codes, stdin, env, cwd


def test_run_captures_stdout_stderr_and_returncode() -> None:
    result = CommandRunner().run(py("import sys; print('out'); print('err', file=sys.stderr)"))
    assert result.returncode == 0 and result.ok
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert result.duration_seconds >= 0
    assert result.argv == (PY, "-c", "import sys; print('out'); print('err', file=sys.stderr)")


def test_nonzero_exit_raises_command_failed_that_names_command_and_quotes_stderr() -> None:
    argv = py("import sys; print('partial'); sys.stderr.write('Error: nodes is forbidden\\n'); sys.exit(3)")
    with pytest.raises(CommandFailed) as caught:
        CommandRunner().run(argv)
    err = caught.value
    assert isinstance(err, LensError)
    assert err.code == "COMMAND_FAILED"
    assert err.returncode == 3
    assert err.argv == tuple(argv)
    assert err.stdout == "partial\n"
    assert err.stderr == "Error: nodes is forbidden\n"
    assert "exit code 3" in err.message
    assert "Error: nodes is forbidden" in err.message
    assert err.message.startswith(f"`{format_command(argv)}`")
    assert err.to_problem()["details"]["returncode"] == 3


def test_command_failed_message_names_a_plain_command_readably() -> None:
    err = CommandFailed(["kubectl", "get", "nodes", "-o", "json"], 1, "", "connection refused")
    assert err.message == "`kubectl get nodes -o json` failed with exit code 1: connection refused"


def test_check_false_returns_the_failed_result_instead_of_raising() -> None:
    result = CommandRunner().run(["/bin/false"], check=False)
    assert result.returncode == 1 and not result.ok
    with pytest.raises(CommandFailed):
        result.check()


def test_long_stderr_is_trimmed_in_the_message_but_kept_whole_on_the_error() -> None:
    argv = py("import sys; sys.stderr.write('HEAD' + 'x' * 20000 + 'TAIL'); sys.exit(1)")
    with pytest.raises(CommandFailed) as caught:
        CommandRunner().run(argv)
    assert len(caught.value.message) < 3000
    assert "HEAD" in caught.value.message and "TAIL" in caught.value.message
    assert "characters trimmed" in caught.value.message
    assert len(caught.value.stderr) == 20008


def test_empty_stderr_is_said_plainly() -> None:
    with pytest.raises(CommandFailed, match="printed nothing on stderr"):
        CommandRunner().run(["/bin/false"])


def test_input_is_fed_on_stdin() -> None:
    fed = CommandRunner().run(py("import sys; print(sys.stdin.read().upper())"), input="apiVersion: v1\n")
    assert fed.stdout == "APIVERSION: V1\n\n"


@contextlib.contextmanager
def own_stdin(data: bytes) -> Iterator[None]:
    """Give this process a stdin with data on it, as a terminal would, to see if children inherit it."""
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)


def test_no_input_means_eof_not_lens_own_stdin() -> None:
    argv = py("import sys; print(repr(sys.stdin.read()))")
    with own_stdin(b"typed at the terminal"):
        sync = CommandRunner().run(argv, timeout=5)
    with own_stdin(b"typed at the terminal"):
        async_ = asyncio.run(CommandRunner().arun(argv, timeout=5))
    assert sync.stdout == "''\n"
    assert async_.stdout == "''\n"


def test_env_is_added_on_top_of_the_inherited_environment() -> None:
    runner = CommandRunner(env={"LENS_RUNNER_BASE": "base"})
    out = runner.run(["/usr/bin/env"], env={"LENS_RUNNER_CALL": "call"}).stdout.splitlines()
    assert "LENS_RUNNER_BASE=base" in out
    assert "LENS_RUNNER_CALL=call" in out
    assert any(line.startswith("PATH=") for line in out)


def test_cwd_is_per_call(tmp_path: Path) -> None:
    result = CommandRunner().run(py("import os; print(os.getcwd())"), cwd=tmp_path)
    assert Path(result.stdout.strip()).resolve() == tmp_path.resolve()


def test_missing_cwd_is_not_reported_as_a_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        CommandRunner().run(["/bin/echo"], cwd=tmp_path / "nope")
    assert not isinstance(caught.value, CommandNotFound)
    assert caught.value.code == "COMMAND_CWD_NOT_FOUND"


# --------------------------------------------------------------------------------------------
# Missing binaries, which(), timeouts


def test_missing_binary_raises_command_not_found() -> None:
    with pytest.raises(CommandNotFound) as caught:
        CommandRunner().run([MISSING, "version"])
    assert caught.value.code == "COMMAND_NOT_FOUND"
    assert caught.value.binary == MISSING
    assert f"`{MISSING}` was not found on PATH" in caught.value.message
    assert f"`{MISSING} version`" in caught.value.message


def test_missing_binary_raises_command_not_found_async() -> None:
    with pytest.raises(CommandNotFound):
        asyncio.run(CommandRunner().arun([MISSING]))


def test_a_wrongly_pinned_binary_says_where_it_was_pinned(tmp_path: Path) -> None:
    pinned = str(tmp_path / "kubectl")
    with pytest.raises(CommandNotFound, match=f"pinned to {pinned}"):
        CommandRunner(binaries={"kubectl": pinned}).run(["kubectl", "version"])


def test_which_follows_pins_and_path(argv_printer: str, tmp_path: Path) -> None:
    runner = CommandRunner(binaries={"kubectl": argv_printer, "helm": str(tmp_path / "absent")})
    assert runner.which("kubectl") == argv_printer
    assert runner.which("helm") is None
    assert runner.which(MISSING) is None
    assert runner.which("env") is not None


def test_sync_timeout_raises_and_kills_the_process(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    started = time.monotonic()
    with pytest.raises(CommandTimedOut) as caught:
        CommandRunner().run(sleeper(marker), timeout=0.2)
    assert time.monotonic() - started < 0.6
    assert caught.value.code == "COMMAND_TIMEOUT"
    assert caught.value.timeout == 0.2
    assert "did not finish within 0.2 s" in caught.value.message
    time.sleep(0.8)
    assert not marker.exists(), "the timed-out process kept running"


def test_async_timeout_raises_and_kills_the_process(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    started = time.monotonic()
    with pytest.raises(CommandTimedOut):
        asyncio.run(CommandRunner().arun(sleeper(marker), timeout=0.2))
    assert time.monotonic() - started < 0.6
    time.sleep(0.8)
    assert not marker.exists(), "the timed-out process kept running"


def test_cancelling_arun_kills_the_process(tmp_path: Path) -> None:
    marker = tmp_path / "survived"

    async def cancel_soon() -> None:
        task = asyncio.create_task(CommandRunner().arun(sleeper(marker)))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    time.sleep(0.8)
    assert not marker.exists(), "the cancelled process kept running"


def test_runner_default_timeout_applies_and_is_validated(tmp_path: Path) -> None:
    assert CommandRunner().timeout == DEFAULT_TIMEOUT
    with pytest.raises(CommandTimedOut):
        CommandRunner(timeout=0.2).run(sleeper(tmp_path / "m"))
    with pytest.raises(ValueError):
        CommandRunner(timeout=0)
    with pytest.raises(ValueError):
        CommandRunner().run(["/bin/echo"], timeout=-1)


# --------------------------------------------------------------------------------------------
# Async


def test_arun_captures_output_input_and_failures() -> None:
    runner = CommandRunner()
    result = asyncio.run(runner.arun(py("import sys; sys.stdout.write(sys.stdin.read()[::-1])"), input="abc"))
    assert result.stdout == "cba"
    assert result.returncode == 0
    with pytest.raises(CommandFailed, match="async boom"):
        asyncio.run(runner.arun(py("import sys; sys.exit('async boom')")))
    failed = asyncio.run(runner.arun(["/bin/false"], check=False))
    assert failed.returncode == 1


def test_arun_runs_concurrently() -> None:
    async def three() -> list[CommandResult]:
        runner = CommandRunner()
        return await asyncio.gather(*(runner.arun(py("import time; time.sleep(0.3)")) for _ in range(3)))

    started = time.monotonic()
    results = asyncio.run(three())
    assert [r.returncode for r in results] == [0, 0, 0]
    assert time.monotonic() - started < 0.85


# --------------------------------------------------------------------------------------------
# Argv handling: no shell, injection


SHELL_BAIT = ["a; rm -rf /", "$(id)", "`id`", "it's \"quoted\"", "two words", "*", "> /tmp/lens-x", "", "a\nb"]


def test_shell_metacharacters_arrive_as_one_literal_argument_each() -> None:
    result = CommandRunner().run(py(PRINT_ARGV, *SHELL_BAIT))
    assert json.loads(result.stdout) == SHELL_BAIT


def test_shell_metacharacters_arrive_literally_async() -> None:
    result = asyncio.run(CommandRunner().arun(py(PRINT_ARGV, *SHELL_BAIT)))
    assert json.loads(result.stdout) == SHELL_BAIT


@pytest.mark.parametrize("argv", ["kubectl get nodes", b"kubectl", [], ["kubectl", 3], None])
def test_anything_but_a_list_of_str_is_refused(argv: object) -> None:
    with pytest.raises(InvalidCommand) as caught:
        CommandRunner().run(argv)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, LensError)
    assert caught.value.code == "COMMAND_INVALID"


def test_str_argv_is_refused_async_and_by_the_fake() -> None:
    with pytest.raises(InvalidCommand):
        asyncio.run(CommandRunner().arun("kubectl get nodes"))  # type: ignore[arg-type]
    with pytest.raises(InvalidCommand):
        FakeRunner(default=FakeReply()).run("kubectl get nodes")  # type: ignore[arg-type]


def test_path_arguments_are_accepted(tmp_path: Path) -> None:
    result = CommandRunner().run([PY, "-c", PRINT_ARGV, tmp_path])  # type: ignore[list-item]
    assert json.loads(result.stdout) == [str(tmp_path)]


def test_kubectl_gets_kubeconfig_and_context_as_the_process_sees_them(argv_printer: str) -> None:
    runner = CommandRunner(kubeconfig="/etc/kc.yaml", context="prod", binaries={"kubectl": argv_printer})
    result = runner.run(["kubectl", "get", "nodes", "-o", "json"])
    assert result.json() == ["--kubeconfig", "/etc/kc.yaml", "--context", "prod", "get", "nodes", "-o", "json"]
    assert result.argv == ("kubectl", "--kubeconfig", "/etc/kc.yaml", "--context", "prod", "get", "nodes", "-o", "json")


def test_helm_gets_kube_context_spelled_the_helm_way(argv_printer: str) -> None:
    runner = CommandRunner(kubeconfig=Path("/etc/kc.yaml"), context="prod", binaries={"helm": argv_printer})
    received = asyncio.run(runner.arun(["helm", "list", "-A"])).json()
    assert received == ["--kubeconfig", "/etc/kc.yaml", "--kube-context", "prod", "list", "-A"]


def test_injection_respects_flags_the_caller_already_gave(argv_printer: str) -> None:
    runner = CommandRunner(kubeconfig="/etc/kc.yaml", context="prod", binaries={"kubectl": argv_printer})
    received = runner.run(["kubectl", "--context=staging", "get", "pods"]).json()
    assert received == ["--kubeconfig", "/etc/kc.yaml", "--context=staging", "get", "pods"]


def test_injection_goes_before_a_double_dash_and_ignores_what_follows_it(argv_printer: str) -> None:
    runner = CommandRunner(context="prod", binaries={"kubectl": argv_printer})
    received = runner.run(["kubectl", "exec", "pod", "--", "tool", "--context", "x"]).json()
    assert received == ["--context", "prod", "exec", "pod", "--", "tool", "--context", "x"]


def test_other_binaries_are_not_touched() -> None:
    runner = CommandRunner(kubeconfig="/etc/kc.yaml", context="prod")
    assert json.loads(runner.run(py(PRINT_ARGV, "build", ".")).stdout) == ["build", "."]


def test_no_injection_without_configuration(argv_printer: str) -> None:
    runner = CommandRunner(binaries={"kubectl": argv_printer})
    assert runner.run(["kubectl", "version"]).json() == ["version"]


# --------------------------------------------------------------------------------------------
# Redaction


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["kubectl", "--token", "s3cr3t", "get"], ["kubectl", "--token", "***", "get"]),
        (["kubectl", "--token=s3cr3t"], ["kubectl", "--token=***"]),
        (["helm", "registry", "login", "--password", "pw1"], ["helm", "registry", "login", "--password", "***"]),
        (["kubectl", "--client-key", "/k.pem"], ["kubectl", "--client-key", "***"]),
        (
            ["helm", "install", "--set", "image.tag=v1,auth.password=hunter2"],
            ["helm", "install", "--set", "image.tag=v1,auth.password=***"],
        ),
        (["helm", "install", "--set-string=hf.apiKey=abc"], ["helm", "install", "--set-string=hf.apiKey=***"]),
        (["helm", "install", "--set", "db.secret=a,b,replicas=2"], ["helm", "install", "--set", "db.secret=***,replicas=2"]),
        (["helm", "install", "--set", "replicas=2"], ["helm", "install", "--set", "replicas=2"]),
        (["env", "HF_TOKEN=hf_abc", "FOO=bar", "cmd"], ["env", "HF_TOKEN=***", "FOO=bar", "cmd"]),
        (
            ["kubectl", "create", "secret", "generic", "s", "--from-literal=user=admin"],
            ["kubectl", "create", "secret", "generic", "s", "--from-literal=user=***"],
        ),
        (["kubectl", "get", "nodes", "-o", "json"], ["kubectl", "get", "nodes", "-o", "json"]),
        (["kubectl", "--kubeconfig", "/etc/kc.yaml", "-l", "app=web"], ["kubectl", "--kubeconfig", "/etc/kc.yaml", "-l", "app=web"]),
    ],
)
def test_redact(argv: list[str], expected: list[str]) -> None:
    original = list(argv)
    assert redact(argv) == expected
    assert argv == original, "redact must not modify its input"


def test_format_command_quotes_only_what_needs_it() -> None:
    assert format_command(["kubectl", "get", "nodes", "-o", "json"]) == "kubectl get nodes -o json"
    assert format_command(["kubectl", "--token", "t", "a b"]) == "kubectl --token *** 'a b'"


def test_secrets_never_reach_the_log_or_the_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_d_lens.runner")
    argv = py("import sys; sys.stderr.write('rejected ' + sys.argv[2]); sys.exit(2)", "--password", "hunter2")
    argv += ["API_TOKEN=tok-12345", "--set", "auth.secret=sauce"]
    with pytest.raises(CommandFailed) as caught:
        CommandRunner().run(argv, env={"HF_TOKEN": "hf-env-value"}, input="kind: Secret\ndata: {x: c2VjcmV0}")
    logged = caplog.text
    assert "--password ***" in logged, "the call should have been logged, redacted"
    assert "HF_TOKEN" in logged, "env keys are logged"
    shown = caught.value.message + json.dumps(caught.value.to_problem())
    for secret in ("hunter2", "tok-12345", "sauce", "hf-env-value", "c2VjcmV0"):
        assert secret not in logged
        assert secret not in shown
    assert "rejected ***" in caught.value.message, "stderr echoing a secret is scrubbed, not dropped"


def test_env_secrets_echoed_on_stderr_are_scrubbed() -> None:
    argv = py("import os, sys; sys.stderr.write('bad ' + os.environ['HF_TOKEN']); sys.exit(1)")
    with pytest.raises(CommandFailed) as caught:
        CommandRunner().run(argv, env={"HF_TOKEN": "hf-live-999"})
    assert "hf-live-999" not in caught.value.message
    assert "bad ***" in caught.value.message
    assert caught.value.stderr == "bad hf-live-999", "raw stderr stays available to code"


def test_timeouts_and_completions_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_d_lens.runner")
    CommandRunner().run(["/bin/echo", "hi"])
    messages = [r.getMessage() for r in caplog.records if r.name == "llm_d_lens.runner"]
    assert any(m.startswith("running `/bin/echo hi`") for m in messages)
    assert any("exited with 0" in m for m in messages)


# --------------------------------------------------------------------------------------------
# CommandResult


def test_json_parses_stdout() -> None:
    result = CommandRunner().run(py("print('{\"items\": [1, 2]}')"))
    assert result.json() == {"items": [1, 2]}


def test_json_on_bad_output_is_a_typed_error_naming_the_command() -> None:
    result = CommandResult(["kubectl", "get", "nodes", "-o", "json"], 0, "Warning: deprecated\n{}", "", 0.1)
    with pytest.raises(CommandOutputInvalid) as caught:
        result.json()
    assert caught.value.code == "COMMAND_OUTPUT_INVALID"
    assert "`kubectl get nodes -o json` did not print valid JSON" in caught.value.message
    assert "Warning" not in caught.value.message, "output is not quoted: it may be a Secret"


def test_result_is_frozen() -> None:
    result = CommandResult(("a",), 0, "", "", 0.0)
    with pytest.raises(AttributeError):
        result.returncode = 1  # type: ignore[misc]


def test_both_runners_satisfy_the_protocol() -> None:
    assert isinstance(CommandRunner(), Runner)
    assert isinstance(FakeRunner(), Runner)


# --------------------------------------------------------------------------------------------
# FakeRunner


def test_fake_exact_pattern_matches_only_that_argv() -> None:
    fake = FakeRunner().reply(["kubectl", "get", "nodes"], stdout="n1\n")
    assert fake.run(["kubectl", "get", "nodes"]).stdout == "n1\n"
    with pytest.raises(AssertionError):
        fake.run(["kubectl", "get", "nodes", "-o", "json"])


def test_fake_prefix_pattern_matches_longer_argv() -> None:
    fake = FakeRunner().reply(["kubectl", "get", ...], json_body={"items": []})
    assert fake.run(["kubectl", "get", "pods", "-A"]).json() == {"items": []}
    assert fake.run(["kubectl", "get"]).json() == {"items": []}
    with pytest.raises(AssertionError):
        fake.run(["kubectl", "apply", "-f", "-"])


def test_fake_predicate_pattern() -> None:
    fake = FakeRunner().reply(lambda argv: "--dry-run=server" in argv, stdout="dry")
    assert fake.run(["kubectl", "apply", "--dry-run=server", "-f", "-"], input="x").stdout == "dry"
    with pytest.raises(AssertionError):
        fake.run(["kubectl", "apply", "-f", "-"], input="x")


def test_fake_more_specific_patterns_win_regardless_of_order() -> None:
    fake = FakeRunner()
    fake.reply(lambda argv: True, stdout="predicate")
    fake.reply(["kubectl", ...], stdout="broad")
    fake.reply(["kubectl", "get", ...], stdout="narrow")
    fake.reply(["kubectl", "get", "nodes"], stdout="exact")
    assert fake.run(["kubectl", "get", "nodes"]).stdout == "exact"
    assert fake.run(["kubectl", "get", "pods"]).stdout == "narrow"
    assert fake.run(["kubectl", "version"]).stdout == "broad"
    assert fake.run(["helm", "version"]).stdout == "predicate"


def test_fake_queued_replies_are_consumed_in_order_and_the_last_repeats() -> None:
    fake = FakeRunner()
    pods = ["kubectl", "get", "pod", "p", "-o", "json"]
    for phase in ("Pending", "Running"):
        fake.reply(pods, json_body={"status": {"phase": phase}})
    phases = [fake.run(pods).json()["status"]["phase"] for _ in range(3)]
    assert phases == ["Pending", "Running", "Running"]


def test_fake_records_calls_after_injection() -> None:
    fake = FakeRunner(kubeconfig="/kc", context="prod", timeout=30, default=FakeReply())
    fake.run(["kubectl", "apply", "-f", "-"], input="kind: Namespace", env={"A": "1"}, cwd="/repo")
    fake.run(["helm", "list"], timeout=5)
    fake.run(["kustomize", "build", "."])
    assert fake.argvs() == [
        ["kubectl", "--kubeconfig", "/kc", "--context", "prod", "apply", "-f", "-"],
        ["helm", "--kubeconfig", "/kc", "--kube-context", "prod", "list"],
        ["kustomize", "build", "."],
    ]
    first = fake.calls[0]
    assert first.requested == ("kubectl", "apply", "-f", "-")
    assert first.input == "kind: Namespace"
    assert first.env == {"A": "1"}
    assert first.cwd == "/repo"
    assert first.timeout == 30
    assert fake.calls[1].timeout == 5
    assert fake.called_with(["kubectl", "apply"])
    assert fake.called_with(["kubectl", "--kubeconfig", "/kc", "--context", "prod", "apply", ...])
    assert not fake.called_with(["kubectl", "delete"])


def test_fake_unmatched_call_fails_loudly_listing_argv_and_patterns() -> None:
    def is_helm(argv: list[str]) -> bool:
        return argv[0] == "helm"

    fake = FakeRunner().reply(["kubectl", "get", "nodes"]).reply(["kubectl", "get", ...]).reply(is_helm)
    with pytest.raises(AssertionError) as caught:
        fake.run(["kustomize", "build", "overlays/prod"])
    text = str(caught.value)
    assert "['kustomize', 'build', 'overlays/prod']" in text
    assert "['kubectl', 'get', 'nodes']" in text
    assert "['kubectl', 'get', ...]" in text
    assert "is_helm (predicate)" in text
    assert len(fake.calls) == 1, "the failed call is still recorded"


def test_fake_default_reply_answers_unmatched_calls() -> None:
    fake = FakeRunner(default=FakeReply(stdout="fallback"))
    fake.reply(["kubectl", "version"], stdout="v1.30")
    assert fake.run(["kubectl", "version"]).stdout == "v1.30"
    assert fake.run(["anything", "else"]).stdout == "fallback"


def test_fake_nonzero_exit_raises_command_failed_like_the_real_runner() -> None:
    not_found = 'Error from server (NotFound): namespaces "x" not found'
    fake = FakeRunner().reply(["kubectl", "get", "ns", "x"], stderr=not_found, returncode=1)
    with pytest.raises(CommandFailed) as caught:
        fake.run(["kubectl", "get", "ns", "x"])
    assert caught.value.returncode == 1
    assert "NotFound" in caught.value.message
    assert caught.value.message == CommandFailed(["kubectl", "get", "ns", "x"], 1, "", caught.value.stderr).message
    assert fake.run(["kubectl", "get", "ns", "x"], check=False).returncode == 1


def test_fake_missing_binary_raises_exactly_what_the_real_runner_raises(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeRunner().missing("helm")
    with pytest.raises(CommandNotFound) as fake_error:
        fake.run(["helm", "version"])
    assert fake.which("helm") is None
    assert fake.which("kubectl") is not None
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no helm on it
    with pytest.raises(CommandNotFound) as real_error:
        CommandRunner().run(["helm", "version"])
    assert fake_error.value.message == real_error.value.message
    assert fake_error.value.to_problem() == real_error.value.to_problem()


def test_fake_raises_os_errors_as_the_real_runner_would_translate_them() -> None:
    fake = FakeRunner()
    fake.reply(["kubectl", "wait", ...], raises=TimeoutError())
    fake.reply(["helm", ...], raises=FileNotFoundError())
    fake.reply(["kustomize", ...], raises=LensError("custom", code="CUSTOM"))
    with pytest.raises(CommandTimedOut) as timed_out:
        fake.run(["kubectl", "wait", "--for=condition=Ready", "pod/p"], timeout=7)
    assert timed_out.value.timeout == 7
    with pytest.raises(CommandNotFound):
        fake.run(["helm", "list"])
    with pytest.raises(LensError) as custom:
        fake.run(["kustomize", "build"])
    assert custom.value.code == "CUSTOM"


def test_fake_works_async() -> None:
    fake = FakeRunner(context="prod")
    fake.reply(["kubectl", "get", "nodes", "-o", "json"], json_body={"items": [{"metadata": {"name": "n1"}}]})
    fake.reply(["kubectl", "delete", ...], stderr="forbidden", returncode=1)

    async def scenario() -> list[str]:
        nodes = (await fake.arun(["kubectl", "get", "nodes", "-o", "json"])).json()
        with pytest.raises(CommandFailed, match="forbidden"):
            await fake.arun(["kubectl", "delete", "ns", "x"])
        return [item["metadata"]["name"] for item in nodes["items"]]

    assert asyncio.run(scenario()) == ["n1"]
    assert fake.argvs()[1] == ["kubectl", "--context", "prod", "delete", "ns", "x"]


def test_fake_rejects_malformed_patterns_and_replies() -> None:
    fake = FakeRunner()
    with pytest.raises(ValueError):
        fake.reply(["kubectl", ..., "nodes"])
    with pytest.raises(TypeError):
        fake.reply("kubectl get nodes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        fake.reply(["kubectl"], stdout="x", json_body={})


def test_fake_json_body_none_is_json_null() -> None:
    fake = FakeRunner().reply(["x"], json_body=None)
    assert fake.run(["x"]).stdout == "null"


def test_fake_logs_redacted_like_the_real_runner(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_d_lens.runner")
    FakeRunner(default=FakeReply()).run(["helm", "install", "--set", "hf.token=hf_secret"])
    assert "hf.token=***" in caplog.text
    assert "hf_secret" not in caplog.text


def test_the_module_imports_only_the_standard_library() -> None:
    import subprocess

    code = (
        "import sys; before = set(sys.modules); import llm_d_lens.runner; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names and m.split('.')[0] != 'llm_d_lens'))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "[]"
