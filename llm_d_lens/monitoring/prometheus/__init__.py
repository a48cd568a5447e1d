"""Talking to Prometheus: an HTTP client, safe PromQL building blocks, and exposition snapshots."""
