"""Test helpers shared by every domain's tests (real servers started on 127.0.0.1)."""
