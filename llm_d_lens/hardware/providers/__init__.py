"""Built-in hardware providers and the ``load_profiles`` callables the entry points name."""

from __future__ import annotations

import json
from collections.abc import Callable
import os
from typing import Any


def bundled_loader(profile_id: str) -> Callable[[], list[dict[str, Any]]]:
    """A ``load_profiles`` that returns the bundled JSON of one built-in profile."""

    def load_profiles() -> list[dict[str, Any]]:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "profiles", f"{profile_id}.json")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        return [json.loads(text)]

    load_profiles.__qualname__ = f"load_profiles[{profile_id}]"
    return load_profiles
