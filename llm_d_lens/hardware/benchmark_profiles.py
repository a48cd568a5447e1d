"""The llm-d-benchmark accelerator profiles Lens knows, so a profile naming another one is flagged.

The guide: ``benchmark_profile`` "must be a value llm-d-benchmark already supports". Lens cannot
ask llm-d-benchmark, so it carries the list as data (``benchmark_profiles.json``: the names,
the file they were read from and its revision). A name outside it is a warning, not an error: a
newer llm-d-benchmark may know it. ``LENS_BENCHMARK_PROFILES`` (comma-separated) adds names for
such a release without a new Lens.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache

import msgspec

from llm_d_lens import settings

ENV = "LENS_BENCHMARK_PROFILES"


class KnownProfiles(msgspec.Struct, frozen=True):
    names: frozenset[str]
    source: str
    revision: str
    added: frozenset[str] = frozenset()  # the names LENS_BENCHMARK_PROFILES added

    def nearest(self, name: str) -> list[str]:
        """Up to three known names close to ``name``, closest first."""
        import difflib  # asked only when a name is unknown

        return difflib.get_close_matches(name, sorted(self.names), n=3, cutoff=0.5)

    def describe(self) -> str:
        extra = f", plus {ENV}: {', '.join(sorted(self.added))}" if self.added else ""
        return f"{self.source} at {self.revision}{extra}"


@lru_cache(maxsize=1)
def _bundled() -> tuple[frozenset[str], str, str]:
    with open(os.path.join(os.path.dirname(__file__), "benchmark_profiles.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    return frozenset(data["profiles"]), data["source"], data["revision"]


def known_profiles(environ: Mapping[str, str] | None = None) -> KnownProfiles:
    """The bundled list, plus the names ``LENS_BENCHMARK_PROFILES`` adds."""
    names, source, revision = _bundled()
    added = frozenset(part.strip() for part in (settings.text(ENV, environ) or "").split(",") if part.strip())
    return KnownProfiles(names | added, source, revision, added - names)
