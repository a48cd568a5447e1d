"""``benchmark_options`` to command-line flags, by convention rather than by a list of flags.

Nothing here knows which flags the benchmark script accepts, so a profile can set any flag it
supports without a change to Lens: ``num_prompts: 64`` becomes ``--num-prompts 64``, ``true`` a bare
flag, and ``null`` (or ``false``) leaves the flag out, which is how a profile drops a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def to_flags(options: Mapping[str, Any]) -> list[str]:
    """An argv fragment, in the profile's key order; each value is one argument, never shell text."""
    argv: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag_name(key))
        else:
            argv += [flag_name(key), _render(value)]
    return argv


def _render(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
