"""Which profile payloads the contract's check has already passed, kept across runs.

Checking a payload (``loader.validate_payload``: the walk over every value, the model, the rules
with their regular expressions and the backtracking analysis of each pattern a profile carries)
was a fifth of ``lens hardware list``, repeated on every run for profiles that had not changed. A
verdict depends on nothing but the payload and the code that checks it, so it is cached keyed on
both: each passed payload is stored as the digest of its canonical JSON text, in a file whose name
is the digest of Lens's version and of the source of every module the check runs
(:data:`CHECKING_SOURCES`, held equal to the loader's real imports by ``test_verdicts.py``). An
edit of a profile changes its digest; an edit of the checking code (an editable install of Lens
included) changes the file. Only a pass is stored: a refused payload is checked in full on every
run, so each of its problems is reported every time, and nothing transient is ever kept, because
checking has no transient outcome. ``lens hardware doctor`` (``use_cache=False``) checks everything.

A hit still turns the payload into the model (``HardwareProfile.decode``, compiled msgspec): only
the rules and the value walk, whose verdict is stored, are skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from llm_d_lens import __version__
from llm_d_lens.hardware.digest import blake2b
from llm_d_lens.hardware.isolation import cache_dir

FORMAT = 1
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # llm_d_lens/
#: every file whose content a check's verdict depends on, relative to the package: the modules
#: ``validate_payload`` and ``validate_network_payload`` import (all the way down) and the schema
CHECKING_SOURCES = (
    "errors.py", "jsonread.py", "settings/__init__.py",
    "hardware/benchmark_profiles.py", "hardware/entry_points.py", "hardware/errors.py", "hardware/guide_forms.py",
    "hardware/k8s_names.py", "hardware/loader.py", "hardware/models.py", "hardware/quantities.py", "hardware/regex_safety.py",
    "hardware/rules.py", "hardware/schema.py", "hardware/telemetry_providers.py", "hardware/schema.json",
)


def checker_digest(package: str = _PACKAGE) -> str:
    """The digest of Lens's version and of every checking source's bytes (a missing file counts as missing)."""
    digest = blake2b(f"{FORMAT}\0{__version__}\0".encode(), digest_size=16)
    for name in CHECKING_SOURCES:
        try:
            with open(os.path.join(package, name), "rb") as handle:
                content = handle.read()
        except OSError:
            content = b"\0missing"
        digest.update(f"{name}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def payload_digest(canonical_text: str) -> str:
    return blake2b(canonical_text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class Verdicts:
    """The passes stored for this checking code; ``enabled=False`` reads none and stores none."""

    __slots__ = ("path", "passed", "added")

    def __init__(self, path: str | None, passed: set[str]) -> None:
        self.path, self.passed, self.added = path, passed, False

    @classmethod
    def load(cls, *, enabled: bool = True, env: Mapping[str, str] | None = None) -> Verdicts:
        if not enabled:
            return cls(None, set())
        path = os.path.join(cache_dir(env), f"checked-{checker_digest()}.json")
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            passed = {item for item in data["passed"] if isinstance(item, str)} if data.get("format") == FORMAT else set()
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            passed = set()  # none yet, or unreadable: every payload is checked, and the file written anew
        return cls(path, passed)

    def has_passed(self, canonical_text: str) -> bool:
        return self.path is not None and payload_digest(canonical_text) in self.passed

    def record_pass(self, canonical_text: str) -> None:
        if self.path is not None:
            digest = payload_digest(canonical_text)
            if digest not in self.passed:
                self.passed.add(digest)
                self.added = True

    def save(self) -> None:
        """Best effort, written whole and renamed into place: a read-only or full disk costs the next run a check."""
        if self.path is None or not self.added:
            return
        folder = os.path.dirname(self.path)
        # a fresh name opened exclusively (what mkstemp does, without importing tempfile, shutil and
        # random on the first run after an install): a planted file or symlink there is never followed
        tmp = os.path.join(folder, f".checked-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"format": FORMAT, "passed": sorted(self.passed)}, handle)
            os.replace(tmp, self.path)
            self.added = False
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
