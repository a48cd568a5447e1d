"""Kubernetes objects as plain JSON: the few readers every domain needs, written once."""
