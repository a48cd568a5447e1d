"""Deploy: find the upstream llm-d overlay for a hardware, render it, fit its request shape."""
