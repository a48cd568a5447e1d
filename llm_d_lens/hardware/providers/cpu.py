"""Built-in hardware `cpu`: its profile is llm_d_lens/hardware/profiles/cpu.json."""

from llm_d_lens.hardware.providers import bundled_loader

load_profiles = bundled_loader("cpu")
