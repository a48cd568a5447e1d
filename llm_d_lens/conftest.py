"""Suite-wide test support: every call any test makes through the recording FakeRunner is logged.

The log feeds ``llm_d_lens/incluster/test_suite_calls.py``, which is moved to the end of the run so
it sees every call the other tests made and checks each against the RBAC roles in ``manifests/``.
Logging changes nothing else: the fake records and answers exactly as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from llm_d_lens.runner import RecordedCall
from llm_d_lens.testing.fake_runner import FakeRunner

#: (the test that made it, argv as the caller gave it, stdin)
SUITE_CALLS: list[tuple[str, tuple[str, ...], str | None]] = []
AUDIT = "llm_d_lens/incluster/test_suite_calls.py"


@pytest.fixture(autouse=True, scope="session")
def _log_fake_runner_calls() -> Iterator[None]:
    original = FakeRunner._record

    def record(self: FakeRunner, call: RecordedCall) -> None:
        SUITE_CALLS.append((os.environ.get("PYTEST_CURRENT_TEST", ""), call.requested, call.input))
        original(self, call)

    FakeRunner._record = record  # type: ignore[method-assign]
    yield
    FakeRunner._record = original  # type: ignore[method-assign]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The audit runs last; every other test keeps its place (the sort is stable)."""
    items.sort(key=lambda item: item.nodeid.startswith(AUDIT))


@pytest.fixture(autouse=True)
def _environment_left_as_found() -> Iterator[None]:
    """A test that changes ``LENS_*`` variables without monkeypatch would change every later test: it is an error.

    (monkeypatch's own changes are undone before this runs, fixtures tear down in reverse.)
    """
    before = {k: v for k, v in os.environ.items() if k.startswith("LENS_")}
    yield
    after = {k: v for k, v in os.environ.items() if k.startswith("LENS_")}
    if after != before:
        for name in set(after) - set(before):
            del os.environ[name]
        os.environ.update(before)
        changed = sorted(set(before.items()) ^ set(after.items()))
        pytest.fail(f"the test left the environment changed: {changed}; use monkeypatch", pytrace=False)
