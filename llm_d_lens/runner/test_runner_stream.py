"""Streaming commands (``Runner.stream``): lines as the tool prints them, stopped from another thread.

The real runner is tested against real processes (the Python interpreter standing in for kubectl);
the FakeRunner's streams are tested for the same contract, since the watch tests lean on them.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from llm_d_lens.runner import CommandFailed, CommandNotFound, CommandRunner, CommandTimedOut
from llm_d_lens.testing.fake_runner import FakeRunner

PY = sys.executable


def py(code: str) -> list[str]:
    return [PY, "-c", code]


def test_lines_arrive_while_the_tool_still_runs() -> None:
    # the second line is printed only after the first was read: a buffered reader would hang here
    code = ("import sys, time\nprint('first', flush=True)\nsys.stdin.close()\ntime.sleep(0.3)\n"
            "print('second')\nprint('no newline at the end', end='')")
    seen: list[tuple[str, float]] = []
    started = time.monotonic()
    with CommandRunner().stream(py(code), idle_timeout=10) as lines:
        for line in lines:
            seen.append((line, time.monotonic() - started))
    assert [line for line, _ in seen] == ["first", "second", "no newline at the end"]
    assert seen[0][1] < seen[1][1] - 0.2, "the first line was held back until the tool printed more"


def test_a_failing_tool_raises_command_failed_with_its_stderr_after_its_lines() -> None:
    code = "import sys; print('ok', flush=True); sys.stderr.write('Error from server (Gone): too old resource version'); sys.exit(1)"
    lines = []
    with pytest.raises(CommandFailed) as caught, CommandRunner().stream(py(code)) as stream:
        for line in stream:
            lines.append(line)
    assert lines == ["ok"]
    assert caught.value.returncode == 1 and "too old resource version" in caught.value.stderr


def test_close_from_another_thread_stops_the_tool_and_ends_the_iteration_quietly(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    code = f"import time, pathlib\nprint('watching', flush=True)\ntime.sleep(1.5)\npathlib.Path({str(marker)!r}).write_text('x')"
    stream = CommandRunner().stream(py(code))
    got: list[str] = []

    def read() -> None:
        for line in stream:
            got.append(line)

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    stream.close()
    reader.join(5)
    assert not reader.is_alive() and got == ["watching"]
    time.sleep(1.7)
    assert not marker.exists(), "the closed stream's tool kept running"


def test_silence_past_the_idle_timeout_is_a_timeout_and_kills_the_tool(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    code = f"import time, pathlib\ntime.sleep(1.0)\npathlib.Path({str(marker)!r}).write_text('x')"
    with pytest.raises(CommandTimedOut), CommandRunner().stream(py(code), idle_timeout=0.2) as stream:
        list(stream)
    time.sleep(1.2)
    assert not marker.exists()


def test_a_missing_tool_is_command_not_found_when_the_stream_opens() -> None:
    with pytest.raises(CommandNotFound):
        CommandRunner().stream(["lens-no-such-tool-xyz", "get"])


def test_the_fake_streams_scripted_lines_records_the_call_and_exits_as_scripted() -> None:
    runner = FakeRunner(context="prod")
    runner.stream_reply(["kubectl", "get", "--raw", ...], [{"type": "ADDED"}, "plain"], returncode=1, stderr="gone")
    with pytest.raises(CommandFailed) as caught, runner.stream(["kubectl", "get", "--raw", "/api/v1/nodes"]) as stream:
        assert next(iter(stream)) == '{"type": "ADDED"}'
        list(stream)
    assert caught.value.stderr == "gone"
    assert runner.argvs() == [["kubectl", "--context", "prod", "get", "--raw", "/api/v1/nodes"]]
    assert runner.calls[0].timeout == float("inf")  # no overall timeout: a watch runs until it is stopped


def test_the_fake_stream_runs_a_generator_lazily_and_stops_at_close() -> None:
    produced: list[int] = []

    def lines():
        for n in range(5):
            produced.append(n)
            yield str(n)

    runner = FakeRunner().stream_reply(["tail", ...], lines())
    stream = runner.stream(["tail", "-f", "events.log"])
    read = []
    for line in stream:
        read.append(line)
        if line == "1":
            stream.close()
    assert read == ["0", "1"] and produced == [0, 1, 2]  # the generator ran one line ahead, then stopped


def test_a_line_longer_than_max_line_is_refused_before_it_is_held_whole(tmp_path: Path) -> None:
    # 8 MiB without a newline, then a marker the tool writes only if it was not stopped
    marker = tmp_path / "survived"
    code = ("import sys, time, pathlib\nprint('short', flush=True)\nchunk = b'x' * (1 << 20)\n"
            "for _ in range(8):\n    sys.stdout.buffer.write(chunk); sys.stdout.buffer.flush()\n"
            f"time.sleep(1.0)\npathlib.Path({str(marker)!r}).write_text('x')")
    from llm_d_lens.runner import CommandOutputTooLarge

    got: list[str] = []
    with pytest.raises(CommandOutputTooLarge) as caught, CommandRunner().stream(py(code), max_line=256 * 1024) as stream:
        for line in stream:
            got.append(line)
    assert got == ["short"]
    assert caught.value.code == "COMMAND_OUTPUT_TOO_LARGE" and caught.value.details["max_line_bytes"] == 256 * 1024
    time.sleep(1.2)
    assert not marker.exists(), "the tool printing the oversized line kept running"


def test_a_complete_line_over_the_bound_is_refused_too_and_one_at_the_bound_passes() -> None:
    from llm_d_lens.runner import CommandOutputTooLarge

    code = "import sys\nsys.stdout.write('a' * 1000 + '\\n' + 'b' * 1001 + '\\n')"
    got: list[str] = []
    with pytest.raises(CommandOutputTooLarge), CommandRunner().stream(py(code), max_line=1000) as stream:
        for line in stream:
            got.append(line)
    assert got == ["a" * 1000]


def test_the_fake_stream_refuses_an_oversized_line_like_the_real_one() -> None:
    from llm_d_lens.runner import CommandOutputTooLarge

    runner = FakeRunner().stream_reply(["kubectl", "get", "--raw", "/w"], ["ok", "x" * 65])
    got: list[str] = []
    with pytest.raises(CommandOutputTooLarge), runner.stream(["kubectl", "get", "--raw", "/w"], max_line=64) as stream:
        for line in stream:
            got.append(line)
    assert got == ["ok"]
