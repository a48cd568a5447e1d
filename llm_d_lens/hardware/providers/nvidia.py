"""Built-in hardware `nvidia`: its profile is llm_d_lens/hardware/profiles/nvidia.json."""

from llm_d_lens.hardware.providers import bundled_loader

load_profiles = bundled_loader("nvidia")
