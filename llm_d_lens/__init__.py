"""Lens: the hardware layer for llm-d.

An accelerator is one declarative profile (JSON checked against ``hardware/schema.json``) plus an
entry point. Every domain reads those profiles through the registry and resolver; no core code
branches on a vendor name.
"""

__version__ = "0.1.0"
