"""Evaluate: llm-d-benchmark configuration, workload profiles and telemetry coverage checks."""
