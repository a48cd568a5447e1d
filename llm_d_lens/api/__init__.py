"""The Lens HTTP API (``lens serve``)."""
