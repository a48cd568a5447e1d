"""Built-in hardware `google-tpu`: its profile is llm_d_lens/hardware/profiles/google-tpu.json."""

from llm_d_lens.hardware.providers import bundled_loader

load_profiles = bundled_loader("google-tpu")
