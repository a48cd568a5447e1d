"""Lens hardware plugin for the Nimbus NPU (a fictional vendor): everything a vendor ships.

The profile is package data; ``load_profiles`` returns it. Nothing here registers itself: Lens
finds the three entry points in pyproject.toml.
"""

import json
from importlib.resources import files


def load_profiles() -> list[dict]:
    text = files("nimbus_lens").joinpath("profiles", "nimbus-npu.json").read_text(encoding="utf-8")
    return [json.loads(text)]
