"""The hardware tests' plugin factory, for pages that show a plugin's profile."""

from llm_d_lens.hardware.conftest import _forget_registry, fresh_registry, plugins  # noqa: F401
