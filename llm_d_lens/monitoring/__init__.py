"""Monitoring: accelerator telemetry and the drivers that make devices visible."""
