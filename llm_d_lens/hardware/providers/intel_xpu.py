"""Built-in hardware `intel-xpu`: its profile is llm_d_lens/hardware/profiles/intel-xpu.json."""

from llm_d_lens.hardware.providers import bundled_loader

load_profiles = bundled_loader("intel-xpu")
