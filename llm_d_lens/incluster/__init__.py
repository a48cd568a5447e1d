"""Lens running inside the cluster it inspects: what its kubectl/helm calls need from RBAC.

The manifests live in the top-level ``manifests/`` folder; this package holds the knowledge the
tests use to prove those manifests grant exactly what the code calls, and nothing more.
"""
