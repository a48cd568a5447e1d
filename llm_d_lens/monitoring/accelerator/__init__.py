"""Accelerator telemetry: vendor exporter metrics onto common names and units."""
