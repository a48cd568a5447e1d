"""Asking a Prometheus server: the HTTP client, its coded errors, and PromQL that keeps values literal.

Shared by every domain that reads Prometheus (telemetry, profiling, evaluation coverage), so a
query fails the same way, with the same codes, wherever it is sent from.
"""
