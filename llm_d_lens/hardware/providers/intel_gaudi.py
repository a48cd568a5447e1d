"""Built-in hardware `intel-gaudi`: its profile is llm_d_lens/hardware/profiles/intel-gaudi.json."""

from llm_d_lens.hardware.providers import bundled_loader

load_profiles = bundled_loader("intel-gaudi")
