"""Built-in hardware `amd`: its profile is llm_d_lens/hardware/profiles/amd.json."""

from llm_d_lens.hardware.providers import bundled_loader

load_profiles = bundled_loader("amd")
