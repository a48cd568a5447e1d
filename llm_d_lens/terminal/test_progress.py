"""Progress goes to stderr only for a person at a terminal, and says what is awaited and the time left."""

from __future__ import annotations

import asyncio
import io

import pytest

from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
from llm_d_lens.monitoring.gpu_driver.preflight_cli import WaitClock
from llm_d_lens.terminal.progress import Progress, progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _progress_on(monkeypatch):
    monkeypatch.delenv("LENS_NO_PROGRESS", raising=False)


def test_a_terminal_sees_the_step():
    stream = Terminal()
    with progress("reading the cluster's nodes", stream=stream) as shown:
        assert shown.shown
        shown.update("still reading")
    assert "reading the cluster" in stream.getvalue() or "still reading" in stream.getvalue()


@pytest.mark.parametrize("case", ["pipe", "json", "turned off"])
def test_nothing_is_drawn_in_a_pipe_for_json_or_when_turned_off(case, monkeypatch):
    stream = io.StringIO() if case == "pipe" else Terminal()
    if case == "turned off":
        monkeypatch.setenv("LENS_NO_PROGRESS", "1")
    with progress("waiting", stream=stream, for_people=case != "json") as shown:
        shown.update("still waiting")
        assert not shown.shown
    assert stream.getvalue() == ""


class Recorder(Progress):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def update(self, message: str) -> None:
        self.lines.append(message)


def test_the_preflight_line_names_the_labels_and_counts_down():
    clock, shown = FakeClock(start=1000.0), Recorder()
    waiting = WaitClock(clock, shown, ("amd", "feature.node.kubernetes.io/amd-gpu=true", 120.0))

    async def a_wait() -> None:  # as presence.ensure_presence uses its clock: read the start, then poll
        waiting.monotonic()
        for _ in range(3):
            await waiting.sleep(5)

    asyncio.run(a_wait())
    assert clock.sleeps == [5, 5, 5]  # the real clock still does the sleeping
    assert shown.lines == [f"preflight amd: waiting for a node labelled feature.node.kubernetes.io/amd-gpu=true "
                           f"({left}s of 120s left)" for left in (120, 115, 110)]
