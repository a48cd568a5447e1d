"""Built-in hardware providers and the ``load_profiles`` callables the entry points name."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.resources import files
from typing import Any


def bundled_loader(profile_id: str) -> Callable[[], list[dict[str, Any]]]:
    """A ``load_profiles`` that returns the bundled JSON of one built-in profile."""

    def load_profiles() -> list[dict[str, Any]]:
        text = files("llm_d_lens.hardware").joinpath("profiles").joinpath(f"{profile_id}.json").read_text(encoding="utf-8")
        return [json.loads(text)]

    load_profiles.__qualname__ = f"load_profiles[{profile_id}]"
    return load_profiles
